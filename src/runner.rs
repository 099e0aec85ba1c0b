//! Drives one run: for each cell, check, provision, run the workload, store the result.
//!
//! The runner owns no measurement and no formatting: it moves plain data from
//! one stage to the next and makes sure that whatever happens to a cell (skip,
//! failure, Ctrl-C) its result file says so and its filesystems are gone.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;

use crate::cli::{RunArgs, ScenarioOptions};
use crate::exit;
use crate::model::{CellParams, CellResult, CellStatus, RESULT_SCHEMA_VERSION, SkipReason};
use crate::plan::{self, Cell};
use crate::provision::{self, ProvisionRequest};
use crate::results::{self, RunWriter};
use crate::scenario::{ArchiveSpec, Backing, Scenario, Workload};
use crate::workload::untar::{Trust, UnpackLimits};
use crate::workload::{latfs, steps};

/// Where fsbench mounts its tmpfs and filesystems unless `--workdir` says otherwise
/// (for root; other users get `/tmp/fsbench-<uid>`, see [`default_workdir`]).
pub const DEFAULT_WORKDIR: &str = "/tmp/fsbench";

/// The default work root: private to the user, since stale-run cleanup only trusts
/// a root owned by the effective uid and not writable by others.
pub fn default_workdir() -> PathBuf {
    let uid = nix::unistd::geteuid();
    if uid.is_root() { PathBuf::from(DEFAULT_WORKDIR) } else { PathBuf::from(format!("{DEFAULT_WORKDIR}-{uid}")) }
}

/// True once SIGINT or SIGTERM has been received.
pub fn interrupted() -> bool {
    crate::signals::interrupted()
}

/// Why a cell cannot run on this host, or `None` when it can.
pub fn host_check(s: &Scenario, p: &CellParams, allow_device: Option<&Path>) -> Option<SkipReason> {
    // Before a run exists, a private `dir` backing would live under the default work directory.
    let probe = existing_ancestor(&default_workdir());
    check_cell(s, &resolve_backing(&s.backing, &probe), p, allow_device)
}

/// The nearest existing directory at or above `path`.
fn existing_ancestor(path: &Path) -> PathBuf {
    path.ancestors().find(|a| a.is_dir()).unwrap_or(Path::new("/")).to_path_buf()
}

/// A `dir` backing without a path means a private directory of the run.
fn resolve_backing(b: &Backing, private: &Path) -> Backing {
    match b {
        Backing::Dir { path } if path.as_os_str().is_empty() => Backing::Dir { path: private.to_path_buf() },
        other => other.clone(),
    }
}

fn check_cell(s: &Scenario, backing: &Backing, p: &CellParams, allow_device: Option<&Path>) -> Option<SkipReason> {
    let root = provision::is_root();
    if let Workload::Latfs(_) = &s.workload
        && p.test == Some(crate::model::LatfsTest::Chown)
        && !root
    {
        return Some(SkipReason {
            reason: "the chown loop fchowns to uid+1, which needs root (CAP_CHOWN)".into(),
            remedy: Some("run as root, or leave chown out with --only test=...".into()),
        });
    }
    let uids = match &s.workload {
        Workload::Latfs(l) if l.per_task_uid && root => Some(task_uids(p.tasks)),
        _ => None,
    };
    let fs = s.filesystems.get(&p.fs).cloned().unwrap_or_default();
    let workdir = default_workdir();
    let req = ProvisionRequest { cell: p, fs: &fs, backing, workdir: &workdir, task_uids: uids, allow_device };
    provision::check(&req).err()
}

/// The per-task uids of lmbench's `-U`: uid = gid = (task << 3) + 100.
pub fn task_uids(tasks: u32) -> Vec<u32> {
    (0..tasks).map(|t| (t << 3) + 100).collect()
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

/// `fsbench run`.
pub fn cli_run(args: &RunArgs) -> anyhow::Result<i32> {
    crate::signals::install();
    exit::check_output_dir("--out", &args.out)?;
    if let Some(w) = &args.workdir {
        exit::check_output_dir("--workdir", w)?;
    }
    if let Some(l) = &args.label
        && !crate::results::is_valid_label(l)
    {
        return Err(exit::InputError::anyhow(format!("--label `{l}`: use {}", crate::results::LABEL_RULE)));
    }
    // --kernel or [[kernels]]: the cells run in qemu guests, each a run of its own.
    if let Some(code) = crate::qemu::run_if_requested(args)? {
        return Ok(code);
    }
    // A resumed run keeps the shard it was planned with (its run.json lists its cells).
    let shard = match &args.resume {
        Some(_) if args.shard.is_some() || args.shard_count.is_some() => {
            return Err(exit::InputError::anyhow(
                "--resume continues a run as it was planned: --shard and --shard-count cannot change it",
            ));
        }
        Some(_) => None,
        None => crate::shard::resolve_shard(args.shard.as_deref(), args.shard_count, &|k| std::env::var(k).ok())
            .map_err(|e| exit::InputError::anyhow(e.to_string()))?,
    };
    // Plan first, check what can be checked, and only then create the run directory,
    // so a refused or failed start leaves no half-made run behind.
    if let Some(dir) = &args.resume
        && dir.join(crate::bundle::IMPORTED_MARKER).exists()
    {
        return Err(exit::InputError::anyhow(format!(
            "{} was imported from a bundle: rerun it with `fsbench bundle run`, which applies the bundle's checks",
            dir.display()
        )));
    }
    if let Some(dir) = &args.resume
        && let Ok(run) = results::load_run(dir)
    {
        // Nothing to do: leave the run (and its finish time) exactly as it was. Checked
        // before the writer reopens the run, which marks it in progress.
        let stored: std::collections::BTreeSet<&str> =
            run.cells.iter().filter(|c| c.status != CellStatus::Failed).map(|c| c.id.as_str()).collect();
        if run.meta.finished.is_some() && run.meta.planned_cells.iter().all(|p| stored.contains(p.id().as_str())) {
            eprintln!("fsbench: {} is complete: all {} are stored", dir.display(), plan::cells(stored.len()));
            return Ok(exit::SUCCESS);
        }
    }
    let (scenario, cells, resumed, shard_meta) = match &args.resume {
        Some(dir) => {
            let (s, cells, writer, done) = open_resumed(dir, args)?;
            (s, cells, Some((writer, done)), None)
        }
        None => {
            let s = plan::load_scenario(args.scenario.as_deref(), &args.scenario_options)?;
            let plan = plan::plan_for(&s, &args.scenario_options)?;
            let (cells, shard_meta) = match shard {
                Some(sh) => {
                    let (cells, meta) = crate::shard::shard_plan(&s, plan.cells, sh, &|k| std::env::var(k).ok());
                    eprintln!(
                        "fsbench: shard {sh} (run key {}): {} of {} cells",
                        meta.key,
                        cells.len(),
                        meta.total_cells
                    );
                    (cells, Some(meta))
                }
                None => (plan.cells, None),
            };
            (s, cells, None, shard_meta)
        }
    };
    if let Backing::Device { path } = &scenario.backing
        && args.allow_device.as_deref() != Some(path.as_path())
    {
        return Err(exit::InputError::anyhow(format!(
            "the scenario formats block device {}: pass `--allow-device {}` to confirm (this destroys its data)",
            path.display(),
            path.display()
        )));
    }

    let workroot = args.workdir.clone().unwrap_or_else(default_workdir);
    // Stale cleanup trusts what it finds here: refuse a root another user could write (exit 2).
    provision::prepare_work_root(&workroot).map_err(|e| match e {
        provision::ProvisionError::UnsafeWorkDir { .. } => exit::InputError::anyhow(e.to_string()),
        e => anyhow::Error::new(e).context("cannot prepare the work directory"),
    })?;
    for cleaned in provision::cleanup_stale(&workroot).context("cannot clean up after an earlier killed run")? {
        eprintln!("fsbench: cleaned up after an earlier run: {cleaned}");
    }
    let (mut writer, done) = match resumed {
        Some(r) => r,
        None => {
            let planned: Vec<CellParams> = cells.iter().map(|c| c.params.clone()).collect();
            let writer = RunWriter::create_shard(&args.out, &scenario, args.label.as_deref(), &planned, shard_meta)
                .with_context(|| format!("cannot create a run directory under {}", args.out.display()))?;
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
        scenario: &scenario,
        backing: resolve_backing(&scenario.backing, &private),
        workdir: workdir.clone(),
        allow_device: args.allow_device.as_deref(),
        exe: std::env::current_exe().context("cannot find the fsbench executable for worker processes")?,
        archive: None,
        untrusted_archives: args.untrusted_archives,
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

    let progress = Progress::new(todo.len(), args.quiet);
    let (mut failed, mut skipped, mut measured) = (0usize, 0usize, 0usize);
    for cell in &todo {
        if interrupted() {
            break;
        }
        progress.start(cell);
        let result = run_cell(&mut ctx, cell);
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

    match results::load_run(&dir) {
        Ok(run) => print!("{}", crate::report::render_run(&run, crate::report::Format::Table)),
        Err(e) => eprintln!("fsbench: cannot read back {}: {e}", dir.display()),
    }
    eprintln!(
        "fsbench: results in {}{}",
        dir.display(),
        match (failed, skipped) {
            (0, 0) => String::new(),
            (f, s) => format!(" ({f} failed, {s} skipped)"),
        }
    );
    if was_interrupted {
        eprintln!("fsbench: interrupted; finish it with `fsbench run --resume {}`", dir.display());
        return Ok(exit::INTERRUPTED);
    }
    if measured == 0 && skipped > 0 && done.is_empty() {
        // Skips are normal in a run that measured something; a run that measured
        // nothing at all must not pass a CI job.
        eprintln!("fsbench: no cell could run on this host, nothing was measured (see the reasons above)");
        return Ok(exit::FAILURE);
    }
    Ok(if failed > 0 { exit::FAILURE } else { exit::SUCCESS })
}

/// Re-open an interrupted run: its scenario text (with overrides) and planned cells are in run.json.
fn open_resumed(
    dir: &Path,
    args: &RunArgs,
) -> anyhow::Result<(Scenario, Vec<Cell>, RunWriter, std::collections::BTreeSet<String>)> {
    if !args.scenario_options.set.is_empty() || !args.scenario_options.only.is_empty() || args.label.is_some() {
        return Err(exit::InputError::anyhow(
            "--resume continues a run as it was planned: --set, --only and --label cannot change it",
        ));
    }
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
    let _: &ScenarioOptions = &args.scenario_options;
    Ok((s, cells, writer, done))
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
fn run_cell(ctx: &mut RunContext, cell: &Cell) -> CellResult {
    let started = results::now_rfc3339();
    let p = &cell.params;
    let s = ctx.scenario;
    if let Some(skip) = check_cell(s, &ctx.backing, p, ctx.allow_device) {
        let mut r = new_result(p, CellStatus::Skipped, &started);
        r.skip = Some(skip);
        r.finished = results::now_rfc3339();
        return r;
    }
    let mut r = new_result(p, CellStatus::Ok, &started);
    match run_provisioned(ctx, cell, &mut r) {
        Ok(()) => {}
        Err(e) => {
            r.status = CellStatus::Failed;
            r.error = Some(exit::error_chain(&e));
        }
    }
    r.finished = results::now_rfc3339();
    r
}

fn run_provisioned(ctx: &mut RunContext, cell: &Cell, r: &mut CellResult) -> anyhow::Result<()> {
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
    let uids = latfs_spec.as_ref().filter(|l| l.per_task_uid).map(|_| task_uids(p.tasks));
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

    let outcome = match (&s.workload, latfs_spec) {
        (Workload::Latfs(_), Some(spec)) => {
            let test = p.test.expect("lat_fs cells have a test");
            let run = latfs::LatfsRun { test, spec: &spec, task_dirs: provisioned.task_dirs(), exe: &ctx.exe };
            latfs::run(&run).map(|res| r.latfs = Some(res)).map_err(anyhow::Error::new)
        }
        (Workload::Steps(spec), _) => run_steps(ctx, spec, provisioned.root()).map(|res| r.steps = Some(res)),
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
    steps::run(&run).map_err(anyhow::Error::new)
}

/// Resolve the scenario's archive (generating it once per run into the cache) and
/// put it where the steps expect it: on the filesystem under test when `on_target`.
fn stage_archive(ctx: &mut RunContext, a: &ArchiveSpec, target: &Path) -> anyhow::Result<PathBuf> {
    let source = match &ctx.archive {
        Some(p) => p.clone(),
        None => {
            let cache = cache_dir();
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

/// Where generated fixtures are cached: `$XDG_CACHE_HOME/fsbench` or `~/.cache/fsbench`.
pub fn cache_dir() -> PathBuf {
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME").filter(|x| !x.is_empty()) {
        return PathBuf::from(x).join("fsbench");
    }
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(h) => PathBuf::from(h).join(".cache/fsbench"),
        None => std::env::temp_dir().join("fsbench-cache"),
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
            bar.set_message(cell.id());
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
        match &self.bar {
            Some(bar) => {
                if r.status == CellStatus::Failed {
                    bar.println(format!("{}: {what}", cell.id()));
                }
                bar.inc(1);
            }
            None if self.lines => eprintln!("[{}/{}] {}: {what}", self.done.get(), self.total, cell.id()),
            None => {}
        }
    }

    fn done(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        if self.lines && self.done.get() > 0 {
            eprintln!("fsbench: {} in {}", plan::cells(self.done.get()), plan::human_duration(self.started.elapsed()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_uids_follow_lmbench() {
        assert_eq!(task_uids(4), vec![100, 108, 116, 124]);
    }
}
