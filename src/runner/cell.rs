//! One cell, measured: checked against the host, provisioned, its workload run and its
//! filesystems torn down, into a [`CellResult`] whatever happens.
//!
//! [`CellExecutor`] is the seam between the rounds and this real work, so the rounds,
//! resume and interrupts are tested with a scripted executor and no root.

use std::path::Path;

use anyhow::Context;

use super::RunContext;
use super::progress::Phase;
use super::steps_stage::{StepsAt, run_steps};
use crate::exit;
use crate::model::{CellResult, CellStatus};
use crate::plan::Cell;
use crate::provision::{self, ProvisionRequest};
use crate::results;
use crate::scenario::Workload;
use crate::workload::latfs;

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
}

/// The real executor: the host check, provisioning, the workload and the teardown.
impl CellExecutor for RunContext<'_> {
    fn measure(&mut self, cell: &Cell, phase: &Phase) -> CellResult {
        run_cell(self, cell, phase)
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
    let latfs_spec = match &s.workload {
        Workload::Latfs(l) => {
            let mut l = l.clone();
            if l.per_task_uid && !root {
                l.per_task_uid = false;
                r.notes.push("per_task_uid needs root: tasks ran as the invoking user".into());
            }
            Some(l)
        }
        Workload::Steps(_) | Workload::Fio(_) => None,
    };
    let uids = latfs_spec.as_ref().filter(|l| l.per_task_uid).map(|_| provision::capability::task_uids(p.tasks));
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

    let profiled_latfs = latfs_spec.clone();
    let outcome = match (&s.workload, latfs_spec) {
        (Workload::Latfs(_), Some(spec)) => {
            let test = p.test.expect("lat_fs cells have a test");
            let run = latfs::LatfsRun { test, spec: &spec, task_dirs: provisioned.task_dirs(), exe: &ctx.exe };
            latfs::run_monitored(&run, watch.as_ref(), &|i, n| phase(&format!("repetition {i}/{n}")))
                .map(|res| note_noise(r, res))
                .map_err(anyhow::Error::new)
        }
        (Workload::Steps(spec), _) => {
            let at = StepsAt {
                target: provisioned.root(),
                task_dirs: provisioned.task_dirs(),
                tasks: p.tasks,
                in_cgroup: in_cgroup.is_some(),
            };
            run_steps(ctx, spec, &at, watch.as_ref(), phase).map(|res| {
                // Said where the numbers are stored, so every report of the cell carries it too.
                r.notes.extend(crate::workload::steps_loop::loop_warnings(&res.iterations));
                r.steps = Some(res)
            })
        }
        (Workload::Fio(spec), _) => {
            let run = crate::workload::fio::FioRun {
                spec,
                task_dirs: provisioned.task_dirs(),
                tasks: p.tasks,
                sweeps: &p.fio,
                out_dir: &ctx.workdir.join("fio").join(p.id()),
            };
            crate::workload::fio::run_monitored(&run, watch.as_ref(), &|i, n| phase(&format!("repetition {i}/{n}")))
                .map(|res| note_fio(r, res))
                .map_err(anyhow::Error::new)
        }
        _ => unreachable!("lat_fs spec exists for lat_fs workloads"),
    };
    if outcome.is_ok() {
        super::profiled::profile_cell(ctx, cell, &provisioned, profiled_latfs.as_ref(), in_cgroup.is_some(), r, phase);
    }
    drop(in_cgroup);
    drop(measuring);
    // Tear down before reporting the workload's error, so nothing stays mounted either way.
    let teardown = provisioned.teardown();
    outcome?;
    teardown.context("teardown failed")?;
    Ok(())
}

/// Store a fio result; a cell whose every repetition was disturbed has no statistics.
fn note_fio(r: &mut CellResult, res: crate::model::FioResult) {
    let disturbed = res.repetitions.iter().filter(|x| !x.counts()).count();
    if disturbed > 0 {
        r.notes.push(format!(
            "{disturbed} of {} repetitions disturbed by other processes (kept, left out of statistics)",
            res.repetitions.len()
        ));
    }
    if res.iops.n == 0 && !res.repetitions.is_empty() {
        r.status = CellStatus::Disturbed;
    }
    r.fio = Some(res);
}

/// Store a lat_fs result with what the noise guards did ([`noise_notes`]), and the
/// `disturbed` status when no repetition was fit for statistics.
fn note_noise(r: &mut CellResult, res: crate::model::LatfsResult) {
    r.notes.extend(noise_notes(&res));
    if res.total_loops.n == 0 && !res.repetitions.is_empty() {
        r.status = CellStatus::Disturbed;
    }
    r.latfs = Some(res);
}

/// What the noise guards did to a lat_fs cell, said once over all its rounds: how many
/// repetitions were disturbed, in which rounds, how many were rerun, and that there are
/// no statistics when no repetition was fit for them. A function of the result alone, so
/// a later round replaces these notes exactly ([`super::rounds::absorb_round`]).
pub(super) fn noise_notes(res: &crate::model::LatfsResult) -> Vec<String> {
    let mut notes = Vec::new();
    let disturbed: Vec<&crate::model::LatfsRepetition> = res.repetitions.iter().filter(|x| !x.counts()).collect();
    if !disturbed.is_empty() {
        let mut rounds: Vec<u32> = disturbed.iter().map(|x| x.round + 1).collect();
        rounds.dedup();
        let within = if res.rounds_done() > 1 {
            let list: Vec<String> = rounds.iter().map(u32::to_string).collect();
            format!(" in round{} {}", if list.len() == 1 { "" } else { "s" }, list.join(", "))
        } else {
            String::new()
        };
        notes.push(format!(
            "{} of {} repetitions disturbed by other processes{within} (kept, left out of statistics; {} rerun)",
            disturbed.len(),
            res.repetitions.len(),
            res.reruns
        ));
    }
    if res.total_loops.n == 0 && !res.repetitions.is_empty() {
        notes.push(format!(
            "every repetition was disturbed and the rerun budget ran out ({} rerun): no statistics",
            res.reruns
        ));
    }
    notes
}
