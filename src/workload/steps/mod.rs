//! Timed step sequences (rm -rf, tar zxf, sync, ...), measured as time(1) does.
//!
//! Each step is timed like `time <cmd>`: user and system CPU from getrusage
//! (RUSAGE_SELF before/after, so every thread of the process counts, including
//! the gzip thread of `untar`; for `exec` only the child's rusage from wait4,
//! as time(1) reports a command),
//! elapsed from a monotonic clock. Every iteration is kept: a filesystem that
//! slows down on the second untar after an rm -rf is a finding.

pub mod answers;
pub mod loop_warnings;
pub mod member;
pub mod tasks;

use std::ffi::CString;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::beneath::{self, Resolver};
use crate::model::{StepTiming, StepsResult};
use crate::monitor::{Sampler, Watch};
use crate::scenario::{Step, StepsSpec};
use crate::workload::rusage::timeval_us;
use crate::workload::untar::{self, Trust, UntarError};

/// One execution of a steps workload on one filesystem.
pub struct StepsRun<'a> {
    /// Iterations and the step list.
    pub spec: &'a StepsSpec,
    /// The filesystem under test: relative step paths resolve here; `exec` runs here.
    pub target: &'a Path,
    /// Where the archive named by `Untar { archive }` is found (== target when on_target).
    pub archive_dir: &'a Path,
    /// Polled between steps and inside rm_rf/untar loops; `true` stops with [`StepsError::Interrupted`].
    pub cancel: &'a dyn Fn() -> bool,
    /// How far the archive is trusted: [`Trust::Own`] for a scenario's own archive
    /// (GNU tar's exact system calls), [`Trust::Untrusted`] for one that came in a bundle.
    pub trust: &'a Trust,
    /// The process at the root of the run (the fsbench that runs the cell): it and
    /// everything under it, the other copies of a cell included, are the run's own
    /// CPU when a step is judged for disturbance ([`crate::host::cpu::Window`]).
    pub run_root: u32,
}

/// Why a steps run stopped.
#[derive(Debug, thiserror::Error)]
pub enum StepsError {
    /// A step failed; `completed` holds every step timed before it.
    #[error("iteration {iteration}, step `{label}`: {source}")]
    Step {
        /// Iteration number, from 1.
        iteration: u32,
        /// The step's label (`tar zxf linux-2.5.63.tar.gz`).
        label: String,
        /// What went wrong.
        source: StepError,
        /// Timings of the steps that did complete (boxed: with its timeline it is large).
        completed: Box<StepsResult>,
    },
    /// The cancel callback asked to stop; `completed` holds what was timed.
    #[error("interrupted in iteration {iteration}")]
    Interrupted {
        /// Iteration number, from 1.
        iteration: u32,
        /// Timings of the steps that did complete (boxed: with its timeline it is large).
        completed: Box<StepsResult>,
    },
}

/// Why one step failed.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// A step path is absolute or contains `..`: steps never touch anything outside the target.
    #[error("path `{0}` is not inside the filesystem under test (must be relative, without `..`)")]
    PathOutsideTarget(String),
    /// A directory on the way to a step path is a symlink (planted by an archive, say).
    #[error("path `{path}` passes through the symlink {link}: steps do not follow links out of the tree")]
    PathThroughSymlink {
        /// The step path as written.
        path: String,
        /// The component that is a symlink.
        link: PathBuf,
    },
    /// rm_rf failed.
    #[error("failed to remove {path}: {source}")]
    Remove { path: PathBuf, source: io::Error },
    /// untar failed.
    #[error(transparent)]
    Untar(#[from] UntarError),
    /// sync/syncfs failed.
    #[error("{op} on {path} failed: {source}")]
    Sync { op: &'static str, path: PathBuf, source: io::Error },
    /// drop_caches needs root.
    #[error("drop_caches needs root (writing /proc/sys/vm/drop_caches): run fsbench as root or remove the step")]
    DropCachesNeedsRoot,
    /// Writing /proc/sys/vm/drop_caches failed.
    #[error("failed to write 3 to /proc/sys/vm/drop_caches: {0}")]
    DropCaches(io::Error),
    /// mkdir failed.
    #[error("failed to create directory {path}: {source}")]
    Mkdir { path: PathBuf, source: io::Error },
    /// The command could not be started or waited for.
    #[error("failed to run `{argv}`: {source}")]
    Spawn { argv: String, source: io::Error },
    /// The command exited unsuccessfully.
    #[error("`{argv}` exited with {status}")]
    ExecFailed { argv: String, status: String },
    /// Stopped by the cancel callback inside a step.
    #[error("interrupted")]
    Interrupted,
}

/// Run every iteration of the step list and time each step.
// The error carries every timing made before the failure; it is returned once per cell, so its size costs nothing.
#[allow(clippy::result_large_err)]
pub fn run(run: &StepsRun) -> Result<StepsResult, StepsError> {
    run_monitored(run, None, &|_, _, _| {})
}

/// [`run`], with `watch`'s kernel counters read around every step (outside its timed
/// part) and a sampler thread recording the timeline across all iterations. The
/// timeline is kept on errors too, with the steps that completed. `starting(iteration,
/// iterations, step label)` is called before each step, for progress displays.
pub fn run_monitored(
    run: &StepsRun,
    watch: Option<&Watch>,
    starting: &dyn Fn(u32, u32, &str),
) -> Result<StepsResult, StepsError> {
    let sampler = watch.map(Watch::sampler);
    let monitor = watch.zip(sampler.as_ref());
    let outcome = run_all(run, monitor, starting);
    let timeline = sampler.map(Sampler::stop);
    match outcome {
        Ok(mut r) => {
            r.timeline = timeline;
            Ok(r)
        }
        Err(mut e) => {
            match &mut e {
                StepsError::Step { completed, .. } | StepsError::Interrupted { completed, .. } => {
                    completed.timeline = timeline
                }
            }
            Err(e)
        }
    }
}

/// Time one step, with its counters when monitored.
fn monitored_step(run: &StepsRun, step: &Step, monitor: Option<(&Watch, &Sampler)>) -> Result<StepTiming, StepError> {
    let Some((watch, sampler)) = monitor else { return time_step(run, step) };
    // The boundary sample's time is at or after start_ms, so the step's peaks include it.
    let start_ms = sampler.now_ms();
    sampler.mark();
    let before = watch.snapshot();
    let mut t = time_step(run, step)?;
    let mut c = before.delta(&watch.snapshot());
    sampler.mark();
    let (dirty, writeback, in_flight) = sampler.peaks_since(start_ms);
    (c.peak_dirty_kib, c.peak_writeback_kib, c.peak_in_flight) = (Some(dirty), Some(writeback), Some(in_flight));
    t.start_ms = Some(start_ms);
    t.counters = Some(c);
    Ok(t)
}

fn run_all(
    run: &StepsRun,
    monitor: Option<(&Watch, &Sampler)>,
    starting: &dyn Fn(u32, u32, &str),
) -> Result<StepsResult, StepsError> {
    let mut result =
        StepsResult { iterations: Vec::with_capacity(run.spec.iterations as usize), ..StepsResult::default() };
    for i in 1..=run.spec.iterations {
        let mut timings = Vec::with_capacity(run.spec.steps.len());
        for step in &run.spec.steps {
            if (run.cancel)() {
                result.iterations.push(timings);
                return Err(StepsError::Interrupted { iteration: i, completed: Box::new(result) });
            }
            starting(i, run.spec.iterations, &step.label());
            match monitored_step(run, step, monitor) {
                Ok(t) => timings.push(t),
                Err(StepError::Interrupted) => {
                    result.iterations.push(timings);
                    return Err(StepsError::Interrupted { iteration: i, completed: Box::new(result) });
                }
                Err(source) => {
                    result.iterations.push(timings);
                    return Err(StepsError::Step {
                        iteration: i,
                        label: step.label(),
                        source,
                        completed: Box::new(result),
                    });
                }
            }
        }
        result.iterations.push(timings);
    }
    Ok(result)
}

/// getrusage as (user µs, system µs, max RSS KiB).
fn rusage(who: i32) -> (u64, u64, u64) {
    // SAFETY: rusage is plain data; getrusage only fails for an invalid `who`.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(who, &mut ru) };
    (timeval_us(ru.ru_utime), timeval_us(ru.ru_stime), ru.ru_maxrss as u64)
}

/// Time one step as `time <cmd>` would.
fn time_step(run: &StepsRun, step: &Step) -> Result<StepTiming, StepError> {
    let window = run.spec.disturbance.map(|t| (t, crate::host::cpu::Window::start(run.run_root)));
    let (u0, s0, _) = rusage(libc::RUSAGE_SELF);
    let t0 = Instant::now();
    let (child, entries) = exec_or_op(run, step)?;
    let elapsed = t0.elapsed();
    // Our CPU first: closing the window scans /proc, which is not the step's work.
    let (u1, s1, self_rss) = rusage(libc::RUSAGE_SELF);
    // One CPU for the copy timing this step; the other copies of a `tasks = N` cell
    // count by the CPU they got (the run's tree), which under-states their need.
    let disturbance = window.and_then(|(t, w)| w.finish(t, 1));
    let (mut user_us, mut system_us) = (u1.saturating_sub(u0), s1.saturating_sub(s0));
    let mut max_rss_kib = self_rss;
    if let Some((cu, cs, crss)) = child {
        // An external command is timed as `time cmd` times it: the child's
        // (and its waited-for descendants') CPU only, not fsbench's own threads.
        (user_us, system_us, max_rss_kib) = (cu, cs, crss);
    }
    Ok(StepTiming {
        label: step.label().into(),
        op: step.op().into(),
        user_us,
        system_us,
        elapsed_us: elapsed.as_micros() as u64,
        max_rss_kib,
        disturbance,
        entries,
        ..StepTiming::default()
    })
}

/// What a step reports besides its timing: for `exec` the child's (user µs, system µs, max RSS KiB);
/// for `rm_rf` and `untar` the entries removed or created.
type Performed = (Option<(u64, u64, u64)>, Option<u64>);

/// Perform the step.
fn exec_or_op(run: &StepsRun, step: &Step) -> Result<Performed, StepError> {
    match step {
        Step::RmRf { path } => {
            inside(run.target, path)?;
            let st = rm_rf_beneath(run.target, path, run.cancel).map_err(|e| match e {
                RmError::Interrupted => StepError::Interrupted,
                RmError::Io { path, source } => StepError::Remove { path, source },
            })?;
            return Ok((None, Some(st.files + st.dirs)));
        }
        Step::Untar { archive } => {
            let a = run.archive_dir.join(archive);
            match untar::unpack_tar_gz_cancellable(&a, run.target, run.trust, run.cancel) {
                Ok(st) => return Ok((None, Some(st.entries))),
                Err(UntarError::Interrupted) => return Err(StepError::Interrupted),
                Err(e) => return Err(e.into()),
            }
        }
        Step::Sync => {
            // SAFETY: sync(2) has no failure mode.
            unsafe { libc::sync() };
        }
        Step::Syncfs => {
            let err = |source| StepError::Sync { op: "syncfs", path: run.target.into(), source };
            let f = std::fs::File::open(run.target).map_err(err)?;
            // SAFETY: f is an open fd.
            if unsafe { libc::syncfs(f.as_raw_fd()) } < 0 {
                return Err(err(io::Error::last_os_error()));
            }
        }
        Step::DropCaches => {
            // SAFETY: geteuid cannot fail.
            if unsafe { libc::geteuid() } != 0 {
                return Err(StepError::DropCachesNeedsRoot);
            }
            // SAFETY: sync(2) has no failure mode.
            unsafe { libc::sync() };
            std::fs::write("/proc/sys/vm/drop_caches", b"3").map_err(StepError::DropCaches)?;
        }
        Step::Mkdir { path } => {
            let p = inside(run.target, path)?;
            mkdir_beneath(run.target, path).map_err(|source| StepError::Mkdir { path: p, source })?;
        }
        Step::Exec { argv } => return exec(run.target, argv, run.cancel).map(|c| (Some(c), None)),
    }
    Ok((None, None))
}

/// Run a command in `dir` and reap it with wait4 to get its rusage (which
/// includes the descendants it waited for, as time(1) reports). It runs in its own
/// process group and dies with fsbench; `cancel` stops the whole group.
fn exec(dir: &Path, argv: &[String], cancel: &dyn Fn() -> bool) -> Result<(u64, u64, u64), StepError> {
    let shown = argv.join(" ");
    let Some((prog, args)) = argv.split_first() else {
        return Err(StepError::Spawn { argv: shown, source: io::Error::other("empty command") });
    };
    let mut cmd = Command::new(prog);
    // stdin from /dev/null: in its own process group a read from the terminal would stop it.
    let child = crate::workload::child::contain(cmd.args(args).current_dir(dir).stdin(std::process::Stdio::null()))
        .spawn()
        .map_err(|source| StepError::Spawn { argv: shown.clone(), source })?;
    let waited = crate::workload::child::wait_or_stop(child.id() as libc::pid_t, cancel)
        .map_err(|source| StepError::Spawn { argv: shown.clone(), source })?;
    let crate::workload::child::Waited::Exited(reaped) = waited else {
        return Err(StepError::Interrupted);
    };
    let status = reaped.status;
    // The child is reaped; `child` must not wait again (Drop does not wait).
    drop(child);
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        let status = if libc::WIFEXITED(status) {
            format!("exit status {}", libc::WEXITSTATUS(status))
        } else {
            format!("signal {}", libc::WTERMSIG(status))
        };
        return Err(StepError::ExecFailed { argv: shown, status });
    }
    Ok((reaped.user_us, reaped.sys_us, reaped.max_rss_kib))
}

/// Resolve a step path inside the target, refusing anything that could leave it.
fn inside(target: &Path, rel: &str) -> Result<PathBuf, StepError> {
    let p = Path::new(rel);
    if p.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) || rel.is_empty() {
        return Err(StepError::PathOutsideTarget(rel.into()));
    }
    // The tree under test was made by an archive; a link it planted must not carry
    // rm_rf or mkdir outside the target. The last component may be a link: rm_rf
    // removes the link itself and mkdir leaves it alone.
    let parts: Vec<Component> = p.components().filter(|c| matches!(c, Component::Normal(_))).collect();
    let mut walked = target.to_path_buf();
    for c in &parts[..parts.len().saturating_sub(1)] {
        walked.push(c);
        if std::fs::symlink_metadata(&walked).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(StepError::PathThroughSymlink { path: rel.into(), link: walked });
        }
    }
    Ok(target.join(p))
}

/// Why an in-process removal failed.
#[derive(Debug, thiserror::Error)]
pub enum RmError {
    /// A syscall failed on this path.
    #[error("failed to remove {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    /// The cancel callback asked to stop.
    #[error("removal interrupted")]
    Interrupted,
}

/// Statistics of a removal.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RmStats {
    /// Non-directories unlinked.
    pub files: u64,
    /// Directories removed.
    pub dirs: u64,
}

/// `rm -rf path`, in-process: openat + getdents + unlinkat, the same system
/// calls GNU rm makes. A missing path is not an error; symlinks are removed,
/// never followed. `cancel` is polled once per directory.
pub fn rm_rf(path: &Path, cancel: &dyn Fn() -> bool) -> Result<RmStats, RmError> {
    let io_err = |source| RmError::Io { path: path.into(), source };
    let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| io_err(io::Error::other("NUL byte in path")))?;
    let mut stats = RmStats::default();
    // Try it as a non-directory first, as rm does when it knows nothing yet.
    // SAFETY: valid C string.
    if unsafe { libc::unlink(c.as_ptr()) } == 0 {
        stats.files += 1;
        return Ok(stats);
    }
    match io::Error::last_os_error().raw_os_error() {
        Some(libc::ENOENT) => return Ok(stats),
        Some(libc::EISDIR) | Some(libc::EPERM) => {}
        _ => return Err(io_err(io::Error::last_os_error())),
    }
    // SAFETY: valid C string.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io_err(io::Error::last_os_error()));
    }
    let mut scratch = PathBuf::from(path);
    remove_contents(fd, &mut scratch, &mut stats, cancel)?;
    // SAFETY: valid C string.
    if unsafe { libc::rmdir(c.as_ptr()) } < 0 {
        return Err(io_err(io::Error::last_os_error()));
    }
    stats.dirs += 1;
    Ok(stats)
}

/// The parent of `rel` beneath the target directory, opened without following any
/// link (a tree made by an archive may have planted one), and the last name.
fn parent_beneath(target: &Path, rel: &str) -> io::Result<(std::os::fd::OwnedFd, CString)> {
    let Some(rel) = plain_rel(rel)? else { return Err(io::Error::from_raw_os_error(libc::EINVAL)) };
    let root = beneath::open_dir(target)?;
    let (parent, name) = beneath::parent_beneath(&root, &rel, Resolver::Auto)?;
    Ok((parent.unwrap_or(root), name))
}

/// `rel` without empty and `.` components, as a C string; `None` when nothing is left.
fn plain_rel(rel: &str) -> io::Result<Option<CString>> {
    let comps: Vec<&str> = rel.split('/').filter(|c| !c.is_empty() && *c != ".").collect();
    if comps.is_empty() {
        return Ok(None);
    }
    CString::new(comps.join("/")).map(Some).map_err(|_| io::Error::other("NUL byte in path"))
}

/// [`rm_rf`] of `rel` inside `target`, every call relative to a directory fd resolved
/// beneath `target` with no link followed: a link planted on the way (`a -> /etc`,
/// then `rm_rf a/b`) fails the step instead of removing `/etc/b`.
pub fn rm_rf_beneath(target: &Path, rel: &str, cancel: &dyn Fn() -> bool) -> Result<RmStats, RmError> {
    let shown = target.join(rel);
    let io_err = |source| RmError::Io { path: shown.clone(), source };
    let (dir, name) = match parent_beneath(target, rel) {
        Ok(x) => x,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(RmStats::default()),
        Err(e) => return Err(io_err(e)),
    };
    let dfd = dir.as_raw_fd();
    let mut stats = RmStats::default();
    // SAFETY: valid fd and name; unlinkat never follows a final link.
    if unsafe { libc::unlinkat(dfd, name.as_ptr(), 0) } == 0 {
        stats.files += 1;
        return Ok(stats);
    }
    match io::Error::last_os_error().raw_os_error() {
        Some(libc::ENOENT) => return Ok(stats),
        Some(libc::EISDIR) | Some(libc::EPERM) => {}
        _ => return Err(io_err(io::Error::last_os_error())),
    }
    // SAFETY: valid fd and name.
    let fd = unsafe {
        libc::openat(dfd, name.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
    };
    if fd < 0 {
        return Err(io_err(io::Error::last_os_error()));
    }
    let mut scratch = shown.clone();
    remove_contents(fd, &mut scratch, &mut stats, cancel)?;
    // SAFETY: valid fd and name.
    if unsafe { libc::unlinkat(dfd, name.as_ptr(), libc::AT_REMOVEDIR) } < 0 {
        return Err(io_err(io::Error::last_os_error()));
    }
    stats.dirs += 1;
    Ok(stats)
}

/// `mkdir -p rel` inside `target`, one `mkdirat` per component from a parent
/// resolved beneath `target`, never following a link.
fn mkdir_beneath(target: &Path, rel: &str) -> io::Result<()> {
    let Some(rel) = plain_rel(rel)? else { return Ok(()) };
    beneath::mkdir_all_beneath(beneath::open_dir(target)?, &rel, 0o777, Resolver::Auto)
}

/// Remove everything inside the directory open as `fd` (consumed).
/// Names are read in full before unlinking so that removal never races the
/// directory stream (some filesystems skip entries otherwise).
fn remove_contents(fd: i32, path: &mut PathBuf, stats: &mut RmStats, cancel: &dyn Fn() -> bool) -> Result<(), RmError> {
    if cancel() {
        // SAFETY: fd is ours.
        unsafe { libc::close(fd) };
        return Err(RmError::Interrupted);
    }
    let err = |path: &Path, source| RmError::Io { path: path.into(), source };
    // SAFETY: fd is an open directory; fdopendir takes ownership.
    let dir = unsafe { libc::fdopendir(fd) };
    if dir.is_null() {
        let e = io::Error::last_os_error();
        // SAFETY: fdopendir failed, fd is still ours.
        unsafe { libc::close(fd) };
        return Err(err(path, e));
    }
    let mut names: Vec<(CString, u8)> = Vec::new();
    loop {
        // SAFETY: dir is a valid DIR*; readdir returns NULL at the end.
        let ent = unsafe { libc::readdir(dir) };
        if ent.is_null() {
            break;
        }
        // SAFETY: d_name is NUL-terminated within the dirent.
        let name = unsafe { std::ffi::CStr::from_ptr((*ent).d_name.as_ptr()) };
        let b = name.to_bytes();
        if b == b"." || b == b".." {
            continue;
        }
        // SAFETY: ent is valid until the next readdir.
        names.push((name.to_owned(), unsafe { (*ent).d_type }));
    }
    // SAFETY: dir is valid.
    let dfd = unsafe { libc::dirfd(dir) };
    let mut result = Ok(());
    for (name, ty) in &names {
        let mut is_dir = *ty == libc::DT_DIR;
        if !is_dir {
            // SAFETY: valid fd and name.
            if unsafe { libc::unlinkat(dfd, name.as_ptr(), 0) } == 0 {
                stats.files += 1;
                continue;
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::ENOENT) => continue,
                Some(libc::EISDIR) | Some(libc::EPERM) if *ty == libc::DT_UNKNOWN => is_dir = true,
                _ => {
                    result = Err(err(&path.join(std::ffi::OsStr::from_bytes(name.to_bytes())), e));
                    break;
                }
            }
        }
        if is_dir {
            path.push(std::ffi::OsStr::from_bytes(name.to_bytes()));
            // SAFETY: valid fd and name.
            let sub = unsafe {
                libc::openat(
                    dfd,
                    name.as_ptr(),
                    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                )
            };
            let r = if sub < 0 {
                Err(err(path, io::Error::last_os_error()))
            } else {
                remove_contents(sub, path, stats, cancel).and_then(|_| {
                    // SAFETY: valid fd and name.
                    if unsafe { libc::unlinkat(dfd, name.as_ptr(), libc::AT_REMOVEDIR) } < 0 {
                        Err(err(path, io::Error::last_os_error()))
                    } else {
                        stats.dirs += 1;
                        Ok(())
                    }
                })
            };
            path.pop();
            if let Err(e) = r {
                result = Err(e);
                break;
            }
        }
    }
    // SAFETY: dir is valid and closed once.
    unsafe { libc::closedir(dir) };
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_paths_must_stay_inside() {
        let t = Path::new("/mnt/x");
        assert_eq!(inside(t, "linux-2.5.63").unwrap(), Path::new("/mnt/x/linux-2.5.63"));
        assert!(inside(t, "../etc").is_err());
        assert!(inside(t, "/etc").is_err());
        assert!(inside(t, "").is_err());
    }

    #[test]
    fn rm_rf_removes_trees_files_and_missing_paths() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("t");
        std::fs::create_dir_all(root.join("a/b/c")).unwrap();
        std::fs::write(root.join("a/f"), b"x").unwrap();
        std::fs::write(root.join("a/b/c/g"), b"y").unwrap();
        std::os::unix::fs::symlink("/etc", root.join("a/l")).unwrap();
        let s = rm_rf(&root, &|| false).unwrap();
        assert_eq!(s, RmStats { files: 3, dirs: 4 });
        assert!(!root.exists());
        assert!(Path::new("/etc").exists());
        assert_eq!(rm_rf(&root, &|| false).unwrap(), RmStats::default());
        std::fs::write(d.path().join("plain"), b"z").unwrap();
        assert_eq!(rm_rf(&d.path().join("plain"), &|| false).unwrap().files, 1);
    }

    #[test]
    fn rm_rf_and_mkdir_beneath_never_follow_a_planted_link() {
        let d = tempfile::tempdir().unwrap();
        let (t, outside) = (d.path().join("t"), d.path().join("outside"));
        std::fs::create_dir_all(t.join("tree/sub")).unwrap();
        std::fs::create_dir_all(outside.join("b")).unwrap();
        std::fs::write(outside.join("b/keep"), b"k").unwrap();
        std::os::unix::fs::symlink(&outside, t.join("a")).unwrap();
        assert!(rm_rf_beneath(&t, "a/b", &|| false).is_err(), "through the link");
        assert!(outside.join("b/keep").exists());
        assert!(mkdir_beneath(&t, "a/new").is_err());
        assert!(!outside.join("new").exists());
        // The link itself is removed, not followed.
        assert_eq!(rm_rf_beneath(&t, "a", &|| false).unwrap().files, 1);
        assert!(outside.join("b/keep").exists());
        mkdir_beneath(&t, "tree/sub/x/y").unwrap();
        assert_eq!(rm_rf_beneath(&t, "tree", &|| false).unwrap(), RmStats { files: 0, dirs: 4 });
        assert_eq!(rm_rf_beneath(&t, "tree", &|| false).unwrap(), RmStats::default());
    }

    #[test]
    fn rm_rf_stops_when_cancelled() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("t/a")).unwrap();
        assert!(matches!(rm_rf(&d.path().join("t"), &|| true), Err(RmError::Interrupted)));
        assert!(d.path().join("t/a").exists());
    }
}
