//! Drives one run: for each cell, check, provision, run the workload, store the result.
//!
//! The runner owns no measurement and no formatting: it moves plain data from
//! one stage to the next and makes sure that whatever happens to a cell (skip,
//! failure, Ctrl-C) its result file says so and its filesystems are gone.

use std::collections::BTreeSet;
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
    /// Ids of cells already stored (and not failed).
    pub done: BTreeSet<String>,
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

/// If `dir` is a finished run with every planned cell stored, the number of cells stored.
/// Checked before [`open_resumed`], which marks the run in progress again.
pub fn resume_is_complete(dir: &Path) -> anyhow::Result<Option<usize>> {
    refuse_imported(dir)?;
    let Ok(run) = results::load_run(dir) else { return Ok(None) };
    let stored: BTreeSet<&str> =
        run.cells.iter().filter(|c| c.status != CellStatus::Failed).map(|c| c.id.as_str()).collect();
    let complete =
        run.meta.finished.is_some() && run.meta.planned_cells.iter().all(|p| stored.contains(p.id().as_str()));
    Ok(complete.then_some(stored.len()))
}

/// Another lab's run came with a bundle: only `bundle run`, which applies the bundle's checks, reruns it.
fn refuse_imported(dir: &Path) -> anyhow::Result<()> {
    if dir.join(results::IMPORTED_MARKER).exists() {
        return Err(exit::InputError::anyhow(format!(
            "{} was imported from a bundle: rerun it with `fsbench bundle run`, which applies the bundle's checks",
            dir.display()
        )));
    }
    Ok(())
}

/// Re-open an interrupted run: its scenario text (with overrides) and planned cells are in run.json.
pub fn open_resumed(dir: &Path) -> anyhow::Result<(Scenario, Vec<Cell>, Resumed)> {
    refuse_imported(dir)?;
    let (writer, meta, done) = RunWriter::resume(dir)
        .map_err(|e| exit::InputError::anyhow(format!("cannot resume {}: {e}", dir.display())))?;
    let base = Path::new(&meta.scenario_origin)
        .parent()
        .filter(|p| p.is_dir())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let s = crate::scenario::parse_overridden(&meta.scenario_text, &meta.scenario_origin, &base, &[])?;
    let cells =
        meta.planned_cells.iter().enumerate().map(|(index, params)| Cell { index, params: params.clone() }).collect();
    Ok((s, cells, Resumed { writer, done }))
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
    let workroot = &req.workroot;
    // Stale cleanup trusts what it finds here: refuse a root another user could write (exit 2).
    provision::prepare_work_root(workroot).map_err(|e| match e {
        provision::ProvisionError::UnsafeWorkDir { .. } => exit::InputError::anyhow(e.to_string()),
        e => anyhow::Error::new(e).context("cannot prepare the work directory"),
    })?;
    for cleaned in provision::cleanup_stale(workroot).context("cannot clean up after an earlier killed run")? {
        eprintln!("fsbench: cleaned up after an earlier run: {cleaned}");
    }
    let cells = req.cells;
    let (mut writer, done) = match req.target {
        RunTarget::Resumed(r) => (r.writer, r.done),
        RunTarget::New { out, label, shard } => {
            let planned: Vec<CellParams> = cells.iter().map(|c| c.params.clone()).collect();
            let writer = RunWriter::create_shard(&out, scenario, label.as_deref(), &planned, shard)
                .with_context(|| format!("cannot create a run directory under {}", out.display()))?;
            (writer, Default::default())
        }
    };
    let run_id = writer.dir().file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "run".into());
    let workdir = workroot.join(&run_id);
    std::fs::create_dir_all(&workdir).with_context(|| format!("cannot create {}", workdir.display()))?;
    // Its mode, not the umask's: provisioning refuses a group- or world-writable run directory.
    std::fs::set_permissions(&workdir, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .with_context(|| format!("cannot set the mode of {}", workdir.display()))?;

    let private = workdir.join("dir");
    if matches!(&scenario.backing, Backing::Dir { path } if path.as_os_str().is_empty()) {
        std::fs::create_dir_all(&private).with_context(|| format!("cannot create {}", private.display()))?;
    }
    let mut ctx = RunContext {
        scenario,
        backing: provision::workroot::resolve_backing(&scenario.backing, &private),
        workdir: workdir.clone(),
        allow_device: req.allow_device.as_deref(),
        exe: std::env::current_exe().context("cannot find the fsbench executable for worker processes")?,
        archive: None,
        untrusted_archives: req.untrusted_archives,
    };
    let todo: Vec<&Cell> = cells.iter().filter(|c| !done.contains(&c.id())).collect();
    if !done.is_empty() {
        eprintln!(
            "fsbench: resuming {}: {} of {} cells done, {} to run",
            writer.dir().display(),
            done.len(),
            cells.len(),
            todo.len()
        );
    }

    let progress = Progress::new(todo.len(), req.quiet);
    let (mut failed, mut skipped, mut measured) = (0usize, 0usize, 0usize);
    for cell in &todo {
        if interrupted() {
            break;
        }
        progress.start(cell);
        let result = run_cell(&mut ctx, cell, &|what| progress.phase(cell, what));
        // A cell that saw Ctrl-C did not finish: keep no partial measurement of it.
        if interrupted() && result.status != CellStatus::Ok {
            break;
        }
        match result.status {
            CellStatus::Failed => failed += 1,
            CellStatus::Skipped => skipped += 1,
            CellStatus::Ok => measured += 1,
        }
        writer.write_cell(&result).context("cannot store a cell result")?;
        progress.finish(cell, &result);
    }
    progress.done();
    let was_interrupted = interrupted();
    let dir = writer.dir().to_path_buf();
    writer.finish(was_interrupted).context("cannot finish run.json")?;
    let _ = std::fs::remove_dir(&private);
    let _ = std::fs::remove_dir(&workdir);
    Ok(RunOutcome { dir, measured, failed, skipped, previously_done: done.len(), interrupted: was_interrupted })
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
    r.filesystems = provisioned.filesystems().to_vec();
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

    let outcome = match (&s.workload, latfs_spec) {
        (Workload::Latfs(_), Some(spec)) => {
            let test = p.test.expect("lat_fs cells have a test");
            let run = latfs::LatfsRun { test, spec: &spec, task_dirs: provisioned.task_dirs(), exe: &ctx.exe };
            latfs::run_observed(&run, &|i, n| phase(&format!("repetition {i}/{n}")))
                .map(|res| r.latfs = Some(res))
                .map_err(anyhow::Error::new)
        }
        (Workload::Steps(spec), _) => run_steps(ctx, spec, provisioned.root(), phase).map(|res| r.steps = Some(res)),
        _ => unreachable!("lat_fs spec exists for lat_fs workloads"),
    };
    // Tear down before reporting the workload's error, so nothing stays mounted either way.
    let teardown = provisioned.teardown();
    outcome?;
    teardown.context("teardown failed")?;
    Ok(())
}

fn run_steps(
    ctx: &mut RunContext,
    spec: &crate::scenario::StepsSpec,
    target: &Path,
    phase: &Phase,
) -> anyhow::Result<crate::model::StepsResult> {
    let archive_dir = match &ctx.scenario.archive {
        Some(a) => Some(stage_archive(ctx, a, target)?),
        None => None,
    };
    let cancel = || interrupted();
    // A generated fixture comes from our own generator; a real archive is trusted only
    // when it is the user's own, not when it arrived in a bundle.
    let from_bundle = ctx.untrusted_archives
        && matches!(ctx.scenario.archive.as_ref().map(|a| &a.source), Some(crate::scenario::ArchiveSource::Path(_)));
    let trust = if from_bundle { Trust::Untrusted(UnpackLimits::default()) } else { Trust::Fixture };
    let run = steps::StepsRun {
        spec,
        target,
        archive_dir: archive_dir.as_deref().unwrap_or(target),
        cancel: &cancel,
        trust: &trust,
    };
    steps::run_observed(&run, &|i, n, label| phase(&format!("iteration {i}/{n}: {label}"))).map_err(anyhow::Error::new)
}

/// Resolve the scenario's archive (generating it once per run into the cache) and
/// put it where the steps expect it: on the filesystem under test when `on_target`.
fn stage_archive(ctx: &mut RunContext, a: &ArchiveSpec, target: &Path) -> anyhow::Result<PathBuf> {
    let source = match &ctx.archive {
        Some(p) => p.clone(),
        None => {
            let cache = crate::fixture::cache_dir();
            std::fs::create_dir_all(&cache)
                .with_context(|| format!("cannot create fixture cache {}", cache.display()))?;
            eprintln!("fsbench: preparing archive {} (cached in {})", a.file_name, cache.display());
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
        let dir = ctx.workdir.join("archive");
        std::fs::create_dir_all(&dir)?;
        let dest = dir.join(&a.file_name);
        if !dest.exists() {
            std::fs::copy(&source, &dest).with_context(|| format!("cannot copy {}", source.display()))?;
        }
        Ok(dir)
    }
}

/// Progress: a bar with ETA on a terminal, one line per cell otherwise (unless --quiet).
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    lines: bool,
    total: usize,
    started: Instant,
    done: std::cell::Cell<usize>,
}

impl Progress {
    fn new(total: usize, quiet: bool) -> Progress {
        let tty = std::io::stderr().is_terminal();
        let bar = (tty && !quiet).then(|| {
            let bar = indicatif::ProgressBar::new(total as u64);
            bar.set_style(
                indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} cells, ETA {eta}  {msg}")
                    .expect("valid template"),
            );
            bar
        });
        Progress { bar, lines: !tty && !quiet, total, started: Instant::now(), done: 0.into() }
    }

    fn start(&self, cell: &Cell) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!("{}: provisioning", cell.id()));
        }
    }

    /// What the cell is doing now, shown after its id on the bar (a log would only fill up).
    fn phase(&self, cell: &Cell, what: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!("{}: {what}", cell.id()));
        }
    }

    fn finish(&self, cell: &Cell, r: &CellResult) {
        self.done.set(self.done.get() + 1);
        let what = match (r.status, &r.latfs, &r.steps) {
            (CellStatus::Ok, Some(l), _) => {
                format!("ok, {:.1} loops/ms (cv {:.1}%)", l.total_loops.median, l.total_loops.cv * 100.0)
            }
            (CellStatus::Ok, _, Some(st)) => format!("ok, {} iterations", st.iterations.len()),
            (CellStatus::Ok, _, _) => "ok".into(),
            (CellStatus::Skipped, _, _) => {
                format!("skipped: {}", r.skip.as_ref().map(|s| s.reason.as_str()).unwrap_or(""))
            }
            (CellStatus::Failed, _, _) => format!("FAILED: {}", r.error.as_deref().unwrap_or("")),
        };
        let line = format!("[{}/{}] {}: {what}", self.done.get(), self.total, cell.id());
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
            eprintln!(
                "fsbench: {} in {}",
                crate::text::cells(self.done.get()),
                crate::text::human_duration(self.started.elapsed())
            );
        }
    }
}
