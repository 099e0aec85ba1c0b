//! One cell, measured: checked against the host, provisioned, its workload run and its
//! filesystems torn down, into a [`CellResult`] whatever happens.
//!
//! [`CellExecutor`] is the seam between the rounds and this real work, so the rounds,
//! resume and interrupts are tested with a scripted executor and no root.

use std::path::Path;

use anyhow::Context;

use super::RunContext;
use super::archive::stage_archive;
use super::progress::Phase;
use crate::exit;
use crate::model::{CellResult, CellStatus};
use crate::plan::Cell;
use crate::provision::{self, ProvisionRequest};
use crate::results;
use crate::workload::kind::CellRun;

/// Measures one cell to a result; never returns an error: failures and skips are results too.
pub trait CellExecutor {
    /// The cell's result, telling `phase` what it is doing as it goes.
    fn measure(&mut self, cell: &Cell, phase: &Phase) -> CellResult;

    /// The cell's skipped result when the host cannot run it, found without touching
    /// anything; `None` when it may run. Paired runs ask before a pair group starts, so
    /// that an arm the host lacks does not void pair after pair.
    fn skip(&mut self, _cell: &Cell) -> Option<CellResult> {
        None
    }

    /// From now on the cells measured are members of pairs (`on`), or cells alone: a
    /// member's workload runs as [`crate::workload::kind::WorkloadAnswers::pair_member`]
    /// says (its disturbance judged with its partner's, nothing rerun alone).
    fn pair_members(&mut self, _on: bool) {}
}

/// The real executor: the host check, provisioning, the workload and the teardown.
impl CellExecutor for RunContext<'_> {
    fn measure(&mut self, cell: &Cell, phase: &Phase) -> CellResult {
        run_cell(self, cell, phase)
    }

    fn pair_members(&mut self, on: bool) {
        self.pair_members = on;
    }

    fn skip(&mut self, cell: &Cell) -> Option<CellResult> {
        let started = results::now_rfc3339();
        let skip = provision::capability::check_cell(self.scenario, &self.backing, &cell.params, self.allow_device)?;
        let mut r = CellResult::new(&cell.params, CellStatus::Skipped, &started);
        r.skip = Some(skip);
        Some(r)
    }
}

/// Run one cell to a result: a skip when the host cannot run it, a failure with the error chain.
fn run_cell(ctx: &mut RunContext, cell: &Cell, phase: &Phase) -> CellResult {
    let started = results::now_rfc3339();
    let p = &cell.params;
    let s = ctx.scenario;
    if let Some(skip) = provision::capability::check_cell(s, &ctx.backing, p, ctx.allow_device) {
        let mut r = CellResult::new(p, CellStatus::Skipped, &started);
        r.skip = Some(skip);
        r.finished = results::now_rfc3339();
        return r;
    }
    let mut r = CellResult::new(p, CellStatus::Ok, &started);
    match run_provisioned(ctx, cell, &mut r, phase) {
        Ok(()) => {}
        // The host cannot give the cell what it asks (a scheduler the kernel lacks): a skip
        // with the kernel's answer and a remedy, as the capability check gives.
        Err(e)
            if matches!(
                e.downcast_ref::<provision::ProvisionError>(),
                Some(provision::ProvisionError::Unsupported(_))
            ) =>
        {
            let Some(provision::ProvisionError::Unsupported(skip)) = e.downcast_ref::<provision::ProvisionError>()
            else {
                unreachable!("matched above")
            };
            r.status = CellStatus::Skipped;
            r.skip = Some(skip.clone());
        }
        Err(e) => {
            r.status = CellStatus::Failed;
            r.error = Some(exit::error_chain(&e));
        }
    }
    r.finished = results::now_rfc3339();
    r
}

/// Provision the cell, run its workload into `r` and tear the filesystems down again.
fn run_provisioned(ctx: &mut RunContext, cell: &Cell, r: &mut CellResult, phase: &Phase) -> anyhow::Result<()> {
    let s = ctx.scenario;
    let p = &cell.params;
    let root = provision::is_root();
    let answers = crate::workload::kind::of(&s.workload);
    let uids = answers.task_uids(p.tasks, root, &mut r.notes);
    let backing = ctx.backing.clone();
    let fs = s.filesystems.get(&p.fs).cloned().unwrap_or_default();
    let req = ProvisionRequest {
        cell: p,
        fs: &fs,
        backing: &backing,
        workdir: &ctx.workdir,
        task_uids: uids,
        allow_device: ctx.allow_device,
    };
    let provisioned = provision::provision(&req).context("provisioning failed")?;
    let measuring = crate::signals::enter(crate::signals::Activity::Measuring);
    r.filesystems = provisioned.filesystems().to_vec();
    // The cell's own block devices, read around every repetition and step (cheap: benches/monitors.rs).
    let watch = s.monitors.then(|| crate::monitor::Watch::for_filesystems(provisioned.filesystems()));
    for f in r.filesystems.iter().filter(|f| f.existing_dir) {
        // The cell keeps its matrix name (ids, resume, compare); the note says what it measured,
        // naming the backing directory (the same for every cell) rather than the cell's scratch.
        let dir = Path::new(&f.mountpoint).parent().unwrap_or(Path::new(&f.mountpoint));
        r.notes.push(format!(
            "backing dir: measured the existing {} filesystem of {}; nothing was formatted or mounted, so mkfs and mount options were not applied",
            f.fs,
            dir.display()
        ));
    }
    r.notes.extend(provisioned.notes().iter().cloned());
    r.cgroup = provisioned.cgroup().cloned();
    // Every child started for the workload joins the cell's cgroup; fsbench itself stays out.
    let in_cgroup = crate::workload::child_cgroup::enter(provisioned.cgroup_procs())
        .context("cannot open the cell's cgroup for its workers")?;

    // A real archive is trusted only when it is the user's own, not when it arrived in a bundle.
    let untrusted_archive = ctx.untrusted_archives
        && matches!(s.archive.as_ref().map(|a| &a.source), Some(crate::scenario::ArchiveSource::Path(_)));
    let (archive_cache, workdir, profiling) = (&mut ctx.archive, &ctx.workdir, &mut ctx.profiling);
    let mut stage_archive = |dir: &Path| {
        s.archive.as_ref().map(|a| stage_archive(archive_cache, workdir, a, dir, untrusted_archive)).transpose()
    };
    let mut at = CellRun {
        params: p,
        target: provisioned.root(),
        task_dirs: provisioned.task_dirs(),
        in_cgroup: in_cgroup.is_some(),
        as_root: root,
        exe: &ctx.exe,
        scratch: ctx.workdir.join(s.workload.kind().name()).join(p.id()),
        watch: watch.as_ref(),
        phase,
        cancel: &super::interrupted,
        stage_archive: &mut stage_archive,
        untrusted_archive,
    };
    // A pair's member runs as one (its disturbance is judged with its partner's).
    let member = ctx.pair_members.then(|| answers.pair_member()).flatten();
    let outcome = member.as_ref().map_or(answers, crate::workload::kind::of).run_cell(&mut at, r);
    if outcome.is_ok() {
        super::profiled::profile_cell(s, profiling, workdir, ctx.pair_members, &mut at, r);
    }
    // What the workload kept there (fio's job file, JSON and stderr) was read into the
    // cell's result, failures included: nothing of it outlives the cell (the kind's
    // directory goes once its last cell's has; a SIGKILL leaves it to stale cleanup).
    let _ = std::fs::remove_dir_all(&at.scratch);
    if let Some(kind_dir) = at.scratch.parent() {
        let _ = std::fs::remove_dir(kind_dir);
    }
    drop(in_cgroup);
    drop(measuring);
    // Tear down before reporting the workload's error, so nothing stays mounted either way.
    let teardown = provisioned.teardown();
    outcome?;
    teardown.context("teardown failed")?;
    Ok(())
}
