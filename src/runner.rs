//! Drives one run: for each cell, check, provision, run the workload, store the result.
//!
//! The runner owns no measurement and no formatting: it moves plain data from
//! one stage to the next and makes sure that whatever happens to a cell (skip,
//! failure, Ctrl-C) its result file says so and its filesystems are gone.

use std::collections::{BTreeMap, BTreeSet};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;

use crate::exit;
use crate::model::{CellParams, CellResult, CellStatus, RESULT_SCHEMA_VERSION};
use crate::plan::Cell;
use crate::provision::{self, ProvisionRequest};
use crate::results::{self, RunWriter};
use crate::scenario::{ArchiveSpec, Backing, Scenario, Workload};
use crate::workload::untar::{Trust, UnpackLimits};
use crate::workload::{latfs, steps};

/// True once SIGINT or SIGTERM has been received.
pub fn interrupted() -> bool {
    crate::signals::interrupted()
}

/// Everything the cells of one run share.
struct RunContext<'a> {
    scenario: &'a Scenario,
    /// The backing with a private `dir` resolved to a directory of this run.
    backing: Backing,
    workdir: PathBuf,
    allow_device: Option<&'a Path>,
    exe: PathBuf,
    /// The archive for untar steps, resolved (generated or found) once per run.
    archive: Option<PathBuf>,
    /// Real archives came with an untrusted scenario (a bundle).
    untrusted_archives: bool,
}

/// Where the cells' results go: a new run directory, or an interrupted run being finished.
pub enum RunTarget {
    /// A new run directory under `out` (`<out>/<scenario>/<run-id>/`).
    New {
        /// The results root.
        out: PathBuf,
        /// The run's label (`BASE`, `V3`), already checked against the label rule.
        label: Option<String>,
        /// The shard this run is, when the matrix is split.
        shard: Option<crate::results::RunShard>,
    },
    /// An interrupted run reopened by [`open_resumed`].
    Resumed(Box<Resumed>),
}

/// An interrupted run, reopened: its writer and the cells it already stored.
pub struct Resumed {
    /// Writes the remaining cells into the existing run directory.
    pub writer: RunWriter,
    /// Cells already stored (and not failed), by id; with several rounds, some may have
    /// only their first rounds.
    pub stored: BTreeMap<String, CellResult>,
}

/// One run, as plain values: the loaded scenario, the cells to run and where things go.
pub struct RunRequest<'a> {
    /// The scenario, loaded once by the caller.
    pub scenario: &'a Scenario,
    /// The cells to run (already filtered by `--only` and the shard), in order.
    pub cells: Vec<Cell>,
    /// Where results go.
    pub target: RunTarget,
    /// The work root for mounts (`/tmp/fsbench` by default); checked and cleaned here.
    pub workroot: PathBuf,
    /// The only block device that may be formatted.
    pub allow_device: Option<PathBuf>,
    /// No progress display.
    pub quiet: bool,
    /// Real archives came with an untrusted scenario (a bundle): unpack them as untrusted input.
    pub untrusted_archives: bool,
    /// The environment preflight taken before the run, recorded in `run.json`.
    pub environment: Option<crate::host::environment::Environment>,
    /// The order to run the cells in.
    pub order: CellOrder,
}

/// The order cells run in (`run --order`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CellOrder {
    /// The plan's order (fs outermost ... test innermost).
    #[default]
    Plan,
    /// A random permutation from this seed, so drift over a long run does not line up with one axis.
    Random {
        /// The seed; the same seed and plan give the same order.
        seed: u64,
    },
}

/// The cells in the order they should run, with what to record about it.
pub fn order_cells(cells: Vec<&Cell>, order: CellOrder) -> (Vec<&Cell>, Option<results::RunOrder>) {
    match order {
        CellOrder::Plan => (cells, None),
        CellOrder::Random { seed } => {
            let mut cells = cells;
            crate::fixture::rng::SplitMix64::new(seed).shuffle(&mut cells);
            let ids = cells.iter().map(|c| c.id()).collect();
            (cells, Some(results::RunOrder { kind: "random".into(), seed: Some(seed), cells: ids }))
        }
    }
}

/// What a run did, for the caller to report and turn into an exit code.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The run directory.
    pub dir: PathBuf,
    /// Cells measured, failed and skipped in this invocation.
    pub measured: usize,
    /// Cells that failed.
    pub failed: usize,
    /// Cells skipped (with a reason stored in their result).
    pub skipped: usize,
    /// Cells a resumed run had stored before this invocation.
    pub previously_done: usize,
    /// A signal stopped the run; `--resume` finishes it.
    pub interrupted: bool,
}

/// If `dir` is a finished, uninterrupted run with every planned cell stored, the number of cells stored.
/// Checked before [`open_resumed`], which marks the run in progress again.
pub fn resume_is_complete(dir: &Path) -> anyhow::Result<Option<usize>> {
    refuse_imported(dir)?;
    let Ok(run) = results::load_run(dir) else { return Ok(None) };
    let stored: BTreeSet<&str> =
        run.cells.iter().filter(|c| c.status != CellStatus::Failed).map(|c| c.id.as_str()).collect();
    // An interrupted run may have every cell stored and still miss rounds (`workload.rounds`).
    let complete = run.meta.finished.is_some()
        && !run.meta.interrupted
        && run.meta.planned_cells.iter().all(|p| stored.contains(p.id().as_str()));
    Ok(complete.then_some(stored.len()))
}

/// Another lab's run came with a bundle: only `bundle run`, which applies the bundle's checks, reruns it.
/// And a run directory is executed on resume (its scenario text, `exec` steps included):
/// it must be ours and writable by nobody else.
fn refuse_imported(dir: &Path) -> anyhow::Result<()> {
    if dir.join(results::IMPORTED_MARKER).exists() {
        return Err(exit::InputError::anyhow(format!(
            "{} was imported from a bundle: rerun it with `fsbench bundle run`, which applies the bundle's checks",
            dir.display()
        )));
    }
    results::safe::resumable(dir)
        .map_err(|why| exit::InputError::anyhow(format!("refusing to resume {}: {why}", dir.display())))
}

/// A run recorded on another host is somebody else's scenario: its `exec` steps run only
/// with `--allow-exec`, as a bundle's do.
fn refuse_foreign_exec(dir: &Path, s: &Scenario, recorded_on: &str, allow_exec: bool) -> anyhow::Result<()> {
    let Workload::Steps(spec) = &s.workload else { return Ok(()) };
    let exec: Vec<String> =
        spec.steps.iter().filter(|st| matches!(st, crate::scenario::Step::Exec { .. })).map(|st| st.label()).collect();
    let here = results::HostInfo::detect().hostname;
    if exec.is_empty() || allow_exec || recorded_on == here {
        return Ok(());
    }
    Err(exit::InputError::anyhow(format!(
        "refusing to resume {}: it was recorded on host `{}`, not this one (`{}`), and its scenario runs commands here ({}); read its run.json and pass --allow-exec to allow",
        dir.display(),
        crate::text::escape_control(recorded_on),
        here,
        crate::text::escape_control(&exec.join("; "))
    )))
}

/// Re-open an interrupted run: its scenario text (with overrides) and planned cells are in run.json.
pub fn open_resumed(dir: &Path, allow_exec: bool) -> anyhow::Result<(Scenario, Vec<Cell>, Resumed)> {
    refuse_imported(dir)?;
    let (writer, meta, stored) = RunWriter::resume(dir)
        .map_err(|e| exit::InputError::anyhow(format!("cannot resume {}: {e}", dir.display())))?;
    let base = Path::new(&meta.scenario_origin)
        .parent()
        .filter(|p| p.is_dir())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let s = crate::scenario::parse_overridden(&meta.scenario_text, &meta.scenario_origin, &base, &[])?;
    refuse_foreign_exec(dir, &s, &meta.host.hostname, allow_exec)?;
    let cells =
        meta.planned_cells.iter().enumerate().map(|(index, params)| Cell { index, params: params.clone() }).collect();
    Ok((s, cells, Resumed { writer, stored }))
}

/// Run the cells of one request: check, provision, measure and store each, then finish run.json.
/// Signals stop it between cells (and inside a workload where it can stop); the outcome says so.
pub fn run(req: RunRequest) -> anyhow::Result<RunOutcome> {
    let scenario = req.scenario;
    if let Backing::Device { path } = &scenario.backing
        && req.allow_device.as_deref() != Some(path.as_path())
    {
        return Err(exit::InputError::anyhow(format!(
            "the scenario formats block device {}: pass `--allow-device {}` to confirm (this destroys its data)",
            path.display(),
            path.display()
        )));
    }
    // Stale cleanup trusts what it finds here: refuse a root another user could write (exit 2),
    // and from here on use the path that was checked.
    let workroot = &provision::prepare_work_root(&req.workroot).map_err(|e| match e {
        provision::ProvisionError::UnsafeWorkDir { .. } => exit::InputError::anyhow(e.to_string()),
        e => anyhow::Error::new(e).context("cannot prepare the work directory"),
    })?;
    provision::workroot::set_scratch_root(workroot);
    for cleaned in provision::cleanup_stale(workroot).context("cannot clean up after an earlier killed run")? {
        eprintln!("fsbench: cleaned up after an earlier run: {cleaned}");
    }
    let cells = req.cells;
    let is_new = matches!(req.target, RunTarget::New { .. });
    let (mut writer, mut stored) = match req.target {
        RunTarget::Resumed(r) => (r.writer, r.stored),
        RunTarget::New { out, label, shard } => {
            let planned: Vec<CellParams> = cells.iter().map(|c| c.params.clone()).collect();
            let writer = RunWriter::create_shard(&out, scenario, label.as_deref(), &planned, shard)
                .with_context(|| format!("cannot create a run directory under {}", out.display()))?;
            (writer, Default::default())
        }
    };
    let run_id = writer.dir().file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "run".into());
    let workdir = workroot.join(&run_id);
    let private = workdir.join("dir");
    let setup = (|| -> anyhow::Result<PathBuf> {
        // Private (0700) and checked, then used by the checked, canonical path:
        // workers chdir into their task directories before they switch ids.
        let workdir = provision::workroot::prepare_run_dir(&workdir)
            .map_err(|e| exit::InputError::anyhow(format!("cannot use the run's work directory: {e}")))?;
        // Claimed at once: a SIGKILL from here on leaves nothing stale cleanup misses.
        provision::workroot::claim_run_dir(&workdir)
            .map_err(|e| exit::InputError::anyhow(format!("cannot use the run's work directory: {e}")))?;
        if matches!(&scenario.backing, Backing::Dir { path } if path.as_os_str().is_empty()) {
            std::fs::create_dir_all(workdir.join("dir"))
                .with_context(|| format!("cannot create {}", workdir.join("dir").display()))?;
        }
        Ok(workdir)
    })();
    let (workdir, private) = match setup {
        Ok(w) => (w.clone(), w.join("dir")),
        Err(e) => {
            // A run that could not start leaves no half-made run directory behind.
            if is_new {
                writer.abandon();
            }
            let _ = std::fs::remove_dir(&private);
            provision::workroot::release_run_dir(&workdir);
            return Err(e);
        }
    };
    let mut ctx = RunContext {
        scenario,
        backing: provision::workroot::resolve_backing(&scenario.backing, &private),
        workdir: workdir.clone(),
        allow_device: req.allow_device.as_deref(),
        exe: std::env::current_exe().context("cannot find the fsbench executable for worker processes")?,
        archive: None,
        untrusted_archives: req.untrusted_archives,
    };
    let rounds = scenario_rounds(scenario);
    let previously_done = cells.iter().filter(|c| stored.get(&c.id()).is_some_and(|r| !wants_round(r, rounds))).count();
    let (runs_of, order) = plan_rounds(&cells, &stored, rounds, req.order);
    if req.environment.is_some() || order.is_some() {
        writer.record(req.environment, order).context("cannot record the environment in run.json")?;
    }
    if !stored.is_empty() {
        eprintln!(
            "fsbench: resuming {}: {} of {} cells done, {} to run",
            writer.dir().display(),
            previously_done,
            cells.len(),
            cells.len() - previously_done
        );
    }

    let progress = Progress::new(runs_of.iter().map(Vec::len).sum(), rounds, req.quiet);
    let mut ran: BTreeSet<String> = BTreeSet::new();
    'rounds: for (round, todo) in runs_of.iter().enumerate() {
        let round = round as u32;
        for cell in todo {
            // A cell that failed or was skipped in an earlier round of this invocation has no more rounds.
            if round > 0 && stored.get(&cell.id()).is_some_and(|r| !takes_rounds(r)) {
                continue;
            }
            if interrupted() {
                break 'rounds;
            }
            progress.start(cell, round);
            let result = run_cell(&mut ctx, cell, &|what| progress.phase(cell, round, what));
            // A cell that saw the signal did not finish as planned, whatever its status says
            // (a workload that noticed late may still look `ok`): store nothing for it, so
            // `--resume` runs it again.
            if interrupted() {
                break 'rounds;
            }
            let result = match stored.remove(&cell.id()) {
                Some(earlier) if round > 0 => absorb_round(earlier, result, round),
                _ => result,
            };
            writer.write_cell(&result).context("cannot store a cell result")?;
            progress.finish(cell, round, &result);
            ran.insert(result.id.clone());
            stored.insert(result.id.clone(), result);
        }
    }
    let (mut failed, mut skipped, mut measured) = (0usize, 0usize, 0usize);
    for r in ran.iter().filter_map(|id| stored.get(id)) {
        match r.status {
            CellStatus::Failed => failed += 1,
            CellStatus::Skipped => skipped += 1,
            // A disturbed cell was measured; its samples are kept, marked unfit for statistics.
            CellStatus::Ok | CellStatus::Disturbed => measured += 1,
        }
    }
    progress.done();
    let _finishing = crate::signals::enter(crate::signals::Activity::Other);
    let was_interrupted = interrupted();
    let dir = writer.dir().to_path_buf();
    writer.finish(was_interrupted).context("cannot finish run.json")?;
    // The run's scratch: an archive copy that did not go onto a target, the private dir.
    release_scratch(&workdir);
    let _ = std::fs::remove_dir(&private);
    provision::workroot::release_run_dir(&workdir);
    Ok(RunOutcome { dir, measured, failed, skipped, previously_done, interrupted: was_interrupted })
}

/// The cells each round runs, in order, and what to record of the order: every round runs
/// the cells that still want it (none stored, or measured with fewer rounds), in the run's
/// order (random: a new permutation per round, from the seed and the round).
fn plan_rounds<'c>(
    cells: &'c [Cell],
    stored: &BTreeMap<String, CellResult>,
    rounds: u32,
    order: CellOrder,
) -> (Vec<Vec<&'c Cell>>, Option<results::RunOrder>) {
    let mut runs_of = Vec::new();
    let mut record: Option<results::RunOrder> = None;
    for round in 0..rounds {
        let wanted: Vec<&Cell> = cells
            .iter()
            .filter(|c| stored.get(&c.id()).is_none_or(|r| takes_rounds(r) && rounds_of(r) <= round))
            .collect();
        let shuffled = match order {
            CellOrder::Random { seed } => CellOrder::Random { seed: seed.wrapping_add(round as u64) },
            plan => plan,
        };
        let (todo, o) = order_cells(wanted, shuffled);
        match (&mut record, o) {
            // The record names the run's seed and every cell run, round after round.
            (Some(all), Some(o)) => all.cells.extend(o.cells),
            (None, o) => record = o,
            (Some(_), None) => {}
        }
        runs_of.push(todo);
    }
    (runs_of, record)
}

/// Rounds the scenario asks for (`workload.rounds`; steps cells run one).
fn scenario_rounds(s: &Scenario) -> u32 {
    match &s.workload {
        Workload::Latfs(l) => l.rounds.max(1),
        Workload::Steps(_) => 1,
    }
}

/// Rounds a stored cell has: lat_fs cells count theirs; any other stored cell has its one.
fn rounds_of(r: &CellResult) -> u32 {
    r.latfs.as_ref().map_or(1, |l| l.rounds_done().max(1))
}

/// Whether a stored cell goes on to later rounds: measured ones do; skipped or failed ones stop.
fn takes_rounds(r: &CellResult) -> bool {
    matches!(r.status, CellStatus::Ok | CellStatus::Disturbed) && r.latfs.is_some()
}

/// Whether a stored cell still wants a round of a run of `rounds`.
fn wants_round(r: &CellResult, rounds: u32) -> bool {
    takes_rounds(r) && rounds_of(r) < rounds
}

/// A stored cell with one more round: the measurement absorbed, the status and notes of both.
///
/// A later round that fails (or is skipped) makes the cell so, with its error; the
/// repetitions of the rounds before are kept. Notes a later round adds are appended,
/// except the noise notes, which are said again over all the rounds ([`noise_notes`]).
fn absorb_round(earlier: CellResult, next: CellResult, round: u32) -> CellResult {
    let mut r = earlier;
    r.finished = next.finished;
    // The noise notes are said over all rounds: both sides' give way to those of the whole.
    let stale: Vec<String> = [&r.latfs, &next.latfs].into_iter().flatten().flat_map(noise_notes).collect();
    r.notes.retain(|n| !stale.contains(n));
    // What provisioning says is the same every round.
    for n in next.notes.into_iter().filter(|n| !stale.contains(n)) {
        if !r.notes.contains(&n) {
            r.notes.push(n);
        }
    }
    match next.status {
        CellStatus::Ok | CellStatus::Disturbed => {
            if let (Some(a), Some(b)) = (r.latfs.take(), next.latfs) {
                let l = latfs::absorb_round(a, b, round);
                // The cell is `disturbed` only when no round left a sample.
                r.status = if l.total_loops.n == 0 { CellStatus::Disturbed } else { CellStatus::Ok };
                r.latfs = Some(l);
            }
        }
        other => {
            r.status = other;
            r.skip = next.skip;
            r.error = next.error.map(|e| format!("round {}: {e}", round + 1));
        }
    }
    if let Some(l) = &r.latfs {
        r.notes.extend(noise_notes(l));
    }
    r
}

fn new_result(p: &CellParams, status: CellStatus, started: &str) -> CellResult {
    CellResult {
        schema: RESULT_SCHEMA_VERSION,
        id: p.id(),
        params: p.clone(),
        status,
        skip: None,
        error: None,
        notes: Vec::new(),
        filesystems: Vec::new(),
        latfs: None,
        steps: None,
        started: started.to_string(),
        finished: started.to_string(),
    }
}

/// Run one cell to a result; never returns an error: failures are results too.
/// What a cell is doing now (`repetition 2/5`), for the progress display.
type Phase<'a> = dyn Fn(&str) + 'a;

fn run_cell(ctx: &mut RunContext, cell: &Cell, phase: &Phase) -> CellResult {
    let started = results::now_rfc3339();
    let p = &cell.params;
    let s = ctx.scenario;
    if let Some(skip) = provision::capability::check_cell(s, &ctx.backing, p, ctx.allow_device) {
        let mut r = new_result(p, CellStatus::Skipped, &started);
        r.skip = Some(skip);
        r.finished = results::now_rfc3339();
        return r;
    }
    let mut r = new_result(p, CellStatus::Ok, &started);
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
        Workload::Steps(_) => None,
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

    let outcome = match (&s.workload, latfs_spec) {
        (Workload::Latfs(_), Some(spec)) => {
            let test = p.test.expect("lat_fs cells have a test");
            let run = latfs::LatfsRun { test, spec: &spec, task_dirs: provisioned.task_dirs(), exe: &ctx.exe };
            latfs::run_monitored(&run, watch.as_ref(), &|i, n| phase(&format!("repetition {i}/{n}")))
                .map(|res| note_noise(r, res))
                .map_err(anyhow::Error::new)
        }
        (Workload::Steps(spec), _) => {
            let at = StepsAt { target: provisioned.root(), task_dirs: provisioned.task_dirs(), tasks: p.tasks };
            run_steps(ctx, spec, &at, watch.as_ref(), phase).map(|res| {
                // Said where the numbers are stored, so every report of the cell carries it too.
                r.notes.extend(crate::report::steps::loop_warnings(&res.iterations));
                r.steps = Some(res)
            })
        }
        _ => unreachable!("lat_fs spec exists for lat_fs workloads"),
    };
    drop(measuring);
    // Tear down before reporting the workload's error, so nothing stays mounted either way.
    let teardown = provisioned.teardown();
    outcome?;
    teardown.context("teardown failed")?;
    Ok(())
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
/// a later round replaces these notes exactly ([`absorb_round`]).
fn noise_notes(res: &crate::model::LatfsResult) -> Vec<String> {
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

/// Where a steps cell runs: its filesystem's root, and with `tasks > 1` one directory per copy.
struct StepsAt<'a> {
    target: &'a Path,
    task_dirs: &'a [PathBuf],
    tasks: u32,
}

fn run_steps(
    ctx: &mut RunContext,
    spec: &crate::scenario::StepsSpec,
    at: &StepsAt,
    watch: Option<&crate::monitor::Watch>,
    phase: &Phase,
) -> anyhow::Result<crate::model::StepsResult> {
    // A generated fixture comes from our own generator; a real archive is trusted only
    // when it is the user's own, not when it arrived in a bundle.
    let from_bundle = ctx.untrusted_archives
        && matches!(ctx.scenario.archive.as_ref().map(|a| &a.source), Some(crate::scenario::ArchiveSource::Path(_)));
    let (target, task_dirs) = (at.target, at.task_dirs);
    if at.tasks > 1 {
        // N copies at once, each in its own directory (S) or filesystem (M), each with its
        // own tarball on it when the archive lives on the filesystem under test.
        let mut archive_dirs = Vec::with_capacity(task_dirs.len());
        for d in task_dirs {
            archive_dirs.push(match ctx.scenario.archive.clone() {
                Some(a) => stage_archive(ctx, &a, d)?,
                None => d.clone(),
            });
        }
        let run = crate::workload::steps_tasks::TasksRun {
            spec,
            targets: task_dirs,
            archive_dirs: &archive_dirs,
            untrusted: from_bundle,
            exe: &ctx.exe,
            watch,
        };
        // Each copy is a process of its own; progress says how many run, not their steps.
        phase(&format!("{} copies at once, {} iterations each", at.tasks, spec.iterations));
        return crate::workload::steps_tasks::run(&run).map_err(anyhow::Error::new);
    }
    let archive_dir = match &ctx.scenario.archive {
        Some(a) => Some(stage_archive(ctx, a, target)?),
        None => None,
    };
    let cancel = || interrupted();
    let trust = if from_bundle { Trust::Untrusted(UnpackLimits::default()) } else { Trust::Own };
    let run = steps::StepsRun {
        spec,
        target,
        archive_dir: archive_dir.as_deref().unwrap_or(target),
        cancel: &cancel,
        trust: &trust,
        run_root: std::process::id(),
    };
    steps::run_monitored(&run, watch, &|i, n, label| phase(&format!("iteration {i}/{n}: {label}")))
        .map_err(anyhow::Error::new)
}

/// Resolve the scenario's archive (generating it once per run into the cache) and
/// put it where the steps expect it: on the filesystem under test when `on_target`.
fn stage_archive(ctx: &mut RunContext, a: &ArchiveSpec, target: &Path) -> anyhow::Result<PathBuf> {
    let source = match &ctx.archive {
        Some(p) => p.clone(),
        None => {
            let cache = crate::fixture::cache_dir();
            // A user's own tarball is used where it is: nothing is prepared or cached for it.
            if let crate::scenario::ArchiveSource::Generate { .. } = &a.source {
                std::fs::create_dir_all(&cache)
                    .with_context(|| format!("cannot create fixture cache {}", cache.display()))?;
                eprintln!("fsbench: preparing archive {} (cached in {})", a.file_name, cache.display());
            }
            let p = crate::fixture::cached_archive(&a.source, &cache).context("cannot prepare the archive")?;
            ctx.archive = Some(p.clone());
            p
        }
    };
    if a.on_target {
        // Untimed, before the first iteration: the seed's tarball lived on the filesystem under test.
        let dest = target.join(&a.file_name);
        std::fs::copy(&source, &dest)
            .with_context(|| format!("cannot copy {} onto the filesystem under test", source.display()))?;
        Ok(target.to_path_buf())
    } else {
        // Scratch of this run, under its journaled work directory: removed at the end of
        // the run ([`release_scratch`]) and by stale cleanup after a kill.
        let dir = provision::workroot::journaled_scratch(&ctx.workdir, provision::workroot::ARCHIVE_SCRATCH)?;
        let dest = dir.join(&a.file_name);
        if !dest.exists() {
            std::fs::copy(&source, &dest).with_context(|| format!("cannot copy {}", source.display()))?;
        }
        Ok(dir)
    }
}

/// Remove what the run put in its work directory besides filesystems (they are torn down
/// per cell): the off-target archive copy.
fn release_scratch(workdir: &Path) {
    let archive = workdir.join(provision::workroot::ARCHIVE_SCRATCH);
    if std::fs::symlink_metadata(&archive).is_ok_and(|m| m.is_dir())
        && let Err(e) = std::fs::remove_dir_all(&archive)
    {
        eprintln!("fsbench: cannot remove the archive copy {}: {e}", archive.display());
    }
}

/// Progress: a bar with ETA on a terminal, one line per cell otherwise (unless --quiet).
/// With several rounds, each line says the round and the total counts cell runs.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    lines: bool,
    total: usize,
    rounds: u32,
    started: Instant,
    done: std::cell::Cell<usize>,
}

impl Progress {
    fn new(total: usize, rounds: u32, quiet: bool) -> Progress {
        let tty = std::io::stderr().is_terminal();
        let bar = (tty && !quiet).then(|| {
            let bar = indicatif::ProgressBar::new(total as u64);
            let unit = if rounds > 1 { "cell runs" } else { "cells" };
            bar.set_style(
                indicatif::ProgressStyle::with_template(&format!(
                    "{{bar:30}} {{pos}}/{{len}} {unit}, ETA {{eta}}  {{msg}}"
                ))
                .expect("valid template"),
            );
            bar
        });
        Progress { bar, lines: !tty && !quiet, total, rounds, started: Instant::now(), done: 0.into() }
    }

    /// `round 2/3 ` before a cell's id when there are rounds; nothing otherwise.
    fn round(&self, round: u32) -> String {
        if self.rounds > 1 { format!("round {}/{} ", round + 1, self.rounds) } else { String::new() }
    }

    fn start(&self, cell: &Cell, round: u32) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!("{}{}: provisioning", self.round(round), cell.id()));
        }
    }

    /// What the cell is doing now, shown after its id on the bar (a log would only fill up).
    fn phase(&self, cell: &Cell, round: u32, what: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!("{}{}: {what}", self.round(round), cell.id()));
        }
    }

    fn finish(&self, cell: &Cell, round: u32, r: &CellResult) {
        self.done.set(self.done.get() + 1);
        let what = match (r.status, &r.latfs, &r.steps) {
            (CellStatus::Ok, Some(l), _) => {
                let why = match l.stopped {
                    Some(crate::model::StopReason::CiTarget) => ", CI target reached",
                    Some(crate::model::StopReason::MaxRepetitions) => ", CI target not reached by max",
                    Some(crate::model::StopReason::RerunBudget) => ", rerun budget spent",
                    _ => "",
                };
                let reruns = if l.reruns > 0 { format!(", {} disturbed rerun", l.reruns) } else { String::new() };
                // With rounds, the statistics are over the rounds so far (their means).
                let over = match l.rounds_done() {
                    0 | 1 => format!("{} repetitions", l.total_loops.n),
                    k => format!("{} rounds, {} repetitions", k, l.repetitions.iter().filter(|r| r.counts()).count()),
                };
                format!(
                    "ok, {:.1} loops/ms (cv {:.1}%, {over}{why}{reruns})",
                    l.total_loops.median,
                    l.total_loops.cv * 100.0
                )
            }
            (CellStatus::Ok, _, Some(st)) => format!("ok, {} iterations", st.iterations.len()),
            (CellStatus::Ok, _, _) => "ok".into(),
            (CellStatus::Skipped, _, _) => {
                format!("skipped: {}", r.skip.as_ref().map(|s| s.reason.as_str()).unwrap_or(""))
            }
            (CellStatus::Failed, _, _) => format!("FAILED: {}", r.error.as_deref().unwrap_or("")),
            (CellStatus::Disturbed, _, _) => format!("DISTURBED: {}", r.notes.last().map(String::as_str).unwrap_or("")),
        };
        let line = format!("[{}/{}] {}{}: {what}", self.done.get(), self.total, self.round(round), cell.id());
        match &self.bar {
            // Every cell's result stays on the terminal above the bar, not only failures.
            Some(bar) => {
                bar.println(line);
                bar.inc(1);
            }
            None if self.lines => eprintln!("{line}"),
            None => {}
        }
    }

    fn done(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        // The total stays too: on a terminal the bar that carried it is gone.
        if (self.lines || self.bar.is_some()) && self.done.get() > 0 {
            let what = if self.rounds > 1 {
                format!("{} cell runs ({} rounds)", self.done.get(), self.rounds)
            } else {
                crate::text::cells(self.done.get())
            };
            eprintln!("fsbench: {what} in {}", crate::text::human_duration(self.started.elapsed()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Disturbance, LatfsRepetition, LatfsTest, Layout, QuotaMode};

    fn params() -> CellParams {
        CellParams {
            fs: "ext4".into(),
            layout: Layout::S,
            quota: QuotaMode::Off,
            tasks: 1,
            test: Some(LatfsTest::Chown),
        }
    }

    fn cell(status: CellStatus, loops: &[f64], disturbed: bool) -> CellResult {
        let mut r = new_result(&params(), status, "t0");
        let reps = loops
            .iter()
            .map(|&l| LatfsRepetition {
                total_loops_per_ms: l,
                disturbance: disturbed.then(|| Disturbance { disturbed: true, ..Disturbance::default() }),
                ..LatfsRepetition::default()
            })
            .collect();
        r.latfs = Some(latfs::result(reps));
        r
    }

    #[test]
    fn the_noise_notes_of_rounds_are_one_note_over_all_of_them() {
        let mut first = cell(CellStatus::Ok, &[10.0, 12.0], false);
        let mut noisy = cell(CellStatus::Ok, &[9.0], true);
        let l = first.latfs.as_mut().unwrap();
        l.repetitions.extend(noisy.latfs.take().unwrap().repetitions);
        *l = latfs::result(std::mem::take(&mut l.repetitions));
        first.notes = noise_notes(first.latfs.as_ref().unwrap());
        first.notes.insert(0, "sysctl vm.dirty_ratio = 5 (was 20)".into());
        assert_eq!(
            first.notes[1],
            "1 of 3 repetitions disturbed by other processes (kept, left out of statistics; 0 rerun)"
        );
        let mut second = cell(CellStatus::Disturbed, &[5.0, 6.0], true);
        second.notes = vec!["sysctl vm.dirty_ratio = 5 (was 20)".into()];
        second.notes.extend(noise_notes(second.latfs.as_ref().unwrap()));
        let mut third = cell(CellStatus::Ok, &[11.0], false);
        third.notes = second.notes[..1].to_vec();
        let both = absorb_round(absorb_round(first, second, 1), third, 2);
        assert_eq!(
            both.notes,
            [
                "sysctl vm.dirty_ratio = 5 (was 20)",
                "3 of 6 repetitions disturbed by other processes in rounds 1, 2 (kept, left out of statistics; 0 rerun)"
            ]
        );
        // A cell that no round left a sample says so once.
        let lost =
            absorb_round(cell(CellStatus::Disturbed, &[1.0], true), cell(CellStatus::Disturbed, &[2.0], true), 1);
        assert_eq!(lost.status, CellStatus::Disturbed);
        assert_eq!(lost.notes.len(), 2, "{:?}", lost.notes);
        assert!(lost.notes[1].starts_with("every repetition was disturbed"), "{:?}", lost.notes);
    }

    #[test]
    fn a_later_round_adds_its_repetitions_and_its_failure() {
        let first = cell(CellStatus::Ok, &[10.0, 12.0], false);
        let mut second = cell(CellStatus::Ok, &[20.0, 22.0], false);
        second.notes.push("round 2: 1 of 3 repetitions disturbed".into());
        second.finished = "t2".into();
        let both = absorb_round(first.clone(), second, 1);
        let l = both.latfs.as_ref().unwrap();
        assert_eq!(l.repetitions.iter().map(|r| r.round).collect::<Vec<_>>(), vec![0, 0, 1, 1]);
        // Two rounds: two samples, the rounds' means.
        assert_eq!((l.total_loops.n, l.total_loops.mean), (2, 16.0));
        assert_eq!((both.status, both.finished.as_str(), both.notes.len()), (CellStatus::Ok, "t2", 1));
        // A first round left without samples is rescued by a later one, and the reverse keeps the cell ok.
        let lost = cell(CellStatus::Disturbed, &[5.0], true);
        let rescued = absorb_round(lost, cell(CellStatus::Ok, &[30.0], false), 1);
        assert_eq!(rescued.status, CellStatus::Ok);
        let kept = absorb_round(first.clone(), cell(CellStatus::Disturbed, &[5.0], true), 1);
        assert_eq!((kept.status, kept.latfs.unwrap().total_loops.n), (CellStatus::Ok, 1));
        // A failing round fails the cell with its error, and the earlier repetitions stay.
        let mut failed = new_result(&params(), CellStatus::Failed, "t3");
        failed.error = Some("mount: EIO".into());
        let r = absorb_round(first, failed, 2);
        assert_eq!((r.status, r.error.as_deref()), (CellStatus::Failed, Some("round 3: mount: EIO")));
        assert_eq!(r.latfs.unwrap().repetitions.len(), 2);
    }
}
