//! The run directory's layout and its making: `<out>/<scenario>/<run-id>/` with `run.json`
//! and `cells/`, created through directory fds.

use std::fs;
use std::path::{Path, PathBuf};

use super::error::io;
use super::{ResultsError, safe};

/// Name of the run metadata file inside a run directory.
pub const RUN_FILE: &str = "run.json";
/// Name of the directory holding one JSON file per cell.
pub const CELLS_DIR: &str = "cells";

/// File in a run directory imported from a bundle; `run --resume` refuses such runs.
pub const IMPORTED_MARKER: &str = "IMPORTED-FROM-BUNDLE";

/// `s` with everything but ASCII letters, digits, `-` and `_` replaced by `_` (`host` when
/// empty): a name from a host or a file that is safe as one path component.
pub(super) fn sanitize(s: &str) -> String {
    let s: String =
        s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    if s.is_empty() { "host".into() } else { s }
}

/// A new, empty run directory `<out_root>/<scenario>/<run_id>/` with its `cells/`,
/// made through directory fds: `--out` is the user's choice, and below it nothing
/// is followed or trusted unchecked (see [`safe`]).
pub(super) struct RunDir {
    /// `<out_root>/<scenario>/`, to remove the run directory again.
    pub(super) parent_fd: std::os::fd::OwnedFd,
    /// The run directory.
    pub(super) dir_fd: std::os::fd::OwnedFd,
    /// Its `cells/`.
    pub(super) cells_fd: std::os::fd::OwnedFd,
    /// Its path.
    pub(super) dir: PathBuf,
    /// Its name: the run id.
    pub(super) run_id: String,
}

impl RunDir {
    /// Make `<out_root>/<scenario>/<base>` (or the first free `<base>-N`) and its `cells/`.
    pub(super) fn make(out_root: &Path, scenario: &str, base: &str) -> Result<RunDir, ResultsError> {
        let (parent_fd, parent) = scenario_dir(out_root, scenario)?;
        let (dir_fd, dir, run_id) = create_unique_dir(&parent_fd, &parent, base)?;
        RunDir::with_cells(parent_fd, dir_fd, dir, run_id)
    }

    /// Make `<out_root>/<scenario>/<run_id>` and its `cells/`, that very name; `Ok(None)`
    /// when a directory of that name is there already (a real directory of this user's,
    /// else an error), which is left as it is.
    pub(super) fn make_named(out_root: &Path, scenario: &str, run_id: &str) -> Result<Option<RunDir>, ResultsError> {
        let (parent_fd, parent) = scenario_dir(out_root, scenario)?;
        let dir = parent.join(run_id);
        match safe::create_subdir(&parent_fd, run_id) {
            Ok(dir_fd) => RunDir::with_cells(parent_fd, dir_fd, dir, run_id.to_string()).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let fd = safe::open_subdir(&parent_fd, run_id).map_err(|e| io(&dir, "open run directory", e))?;
                safe::check_owned(&fd, &dir).map_err(|e| io(&dir, "open run directory", e))?;
                Ok(None)
            }
            Err(e) => Err(io(&dir, "create run directory", e)),
        }
    }

    fn with_cells(
        parent_fd: std::os::fd::OwnedFd,
        dir_fd: std::os::fd::OwnedFd,
        dir: PathBuf,
        run_id: String,
    ) -> Result<RunDir, ResultsError> {
        let cells_fd = match safe::create_subdir(&dir_fd, CELLS_DIR) {
            Ok(fd) => fd,
            Err(e) => {
                remove_half_made(&parent_fd, &run_id);
                return Err(io(&dir.join(CELLS_DIR), "create cells directory", e));
            }
        };
        Ok(RunDir { parent_fd, dir_fd, cells_fd, dir, run_id })
    }
}

/// Write `bytes` as `<out_root>/<scenario>/<name>` (a file beside the runs, such as
/// `calibration.json`) atomically, through the scenario directory's fd: the directory is
/// made or checked to be this user's real directory, and the file is replaced by renameat
/// from a fresh `O_EXCL` temporary, never written through a link. Returns its path.
pub fn write_beside_runs(out_root: &Path, scenario: &str, name: &str, bytes: &[u8]) -> Result<PathBuf, ResultsError> {
    let (dir_fd, dir) = scenario_dir(out_root, scenario)?;
    let path = dir.join(name);
    safe::write_at(&dir_fd, name, bytes).map_err(|e| io(&path, "write", e))?;
    Ok(path)
}

/// `<out_root>/<scenario>/`, made if missing or else checked to be a real directory of
/// this user's, before anything is written in it; its fd and path.
fn scenario_dir(out_root: &Path, scenario: &str) -> Result<(std::os::fd::OwnedFd, PathBuf), ResultsError> {
    let parent = out_root.join(scenario);
    fs::create_dir_all(out_root).map_err(|e| io(out_root, "create results directory", e))?;
    let root_fd = safe::open_dir(out_root).map_err(|e| io(out_root, "open results directory", e))?;
    let parent_fd =
        safe::ensure_subdir(&root_fd, scenario, &parent).map_err(|e| io(&parent, "open results directory", e))?;
    Ok((parent_fd, parent))
}

/// Create `<parent>/<base>` or the first free `<base>-N`; mkdirat fails on an
/// existing directory, so two concurrent runs can never share one.
fn create_unique_dir(
    parent_fd: &std::os::fd::OwnedFd,
    parent: &Path,
    base: &str,
) -> Result<(std::os::fd::OwnedFd, PathBuf, String), ResultsError> {
    for n in 1u32.. {
        let id = if n == 1 { base.to_string() } else { format!("{base}-{n}") };
        let dir = parent.join(&id);
        match safe::create_subdir(parent_fd, &id) {
            Ok(fd) => return Ok((fd, dir, id)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io(&dir, "create run directory", e)),
        }
    }
    unreachable!("u32 run-id suffixes exhausted")
}

/// Remove what a failed start made of run directory `id`: its run.json, its empty
/// cells/ and itself; anything else in it (not ours) stays.
pub(super) fn remove_half_made(parent_fd: &std::os::fd::OwnedFd, id: &str) {
    use std::os::fd::AsRawFd;
    let Ok(dir_fd) = safe::open_subdir(parent_fd, id) else { return };
    let c = |s: &str| std::ffi::CString::new(s).expect("no NUL in fixed names");
    // SAFETY: open directory fds and valid names; failures leave the entry in place.
    unsafe {
        libc::unlinkat(dir_fd.as_raw_fd(), c(RUN_FILE).as_ptr(), 0);
        libc::unlinkat(dir_fd.as_raw_fd(), c(CELLS_DIR).as_ptr(), libc::AT_REMOVEDIR);
        libc::unlinkat(parent_fd.as_raw_fd(), c(id).as_ptr(), libc::AT_REMOVEDIR);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_dirs_do_not_collide() {
        let t = tempfile::tempdir().unwrap();
        let fd = safe::open_dir(t.path()).unwrap();
        let (_, a, ia) = create_unique_dir(&fd, t.path(), "x").unwrap();
        let (_, b, ib) = create_unique_dir(&fd, t.path(), "x").unwrap();
        assert_ne!(a, b);
        assert_eq!((ia.as_str(), ib.as_str()), ("x", "x-2"));
    }
}
