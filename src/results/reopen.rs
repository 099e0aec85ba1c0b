//! Reopening a run directory to finish it (`run --resume`).
//!
//! A resumed run executes the scenario text stored in its `run.json`, `exec` steps
//! included, so the directory must be this user's alone. It is opened once, without
//! following a final link; every check (ancestors, owners and modes, derived or not)
//! and the load itself are made from that fd, and the writer keeps it: a directory
//! swapped under the same path meanwhile is never read, checked or written.

use std::collections::BTreeSet;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use super::load::load_unescaped;
use super::{DerivedKind, IMPORTED_MARKER, LoadedRun, ResultsError, RunMeta, safe};
use crate::model::CellStatus;

/// Why a run directory cannot be resumed.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    /// The run came from somewhere else (a bundle, a merge): it is not this host's to finish.
    #[error("{dir} was {kind}: {advice}")]
    Derived {
        /// The run directory.
        dir: PathBuf,
        /// How it was derived.
        kind: DerivedKind,
        /// What to do instead.
        advice: &'static str,
    },
    /// The directory, or something in or above it, could have been written by another user.
    #[error("refusing to resume {dir}: {why}")]
    Refused {
        /// The run directory.
        dir: PathBuf,
        /// Why.
        why: String,
    },
    /// The run does not load.
    #[error("cannot resume {dir}: {source}")]
    Load {
        /// The run directory.
        dir: PathBuf,
        /// The load error.
        #[source]
        source: ResultsError,
    },
}

/// A run directory opened once for `--resume`, checked to be ours to execute, and
/// loaded from that same fd (text fields as stored: `run.json` is written back).
#[derive(Debug)]
pub struct ResumableRun {
    pub(super) dir_fd: OwnedFd,
    pub(super) run: LoadedRun,
}

impl ResumableRun {
    /// Open `dir` (its last component not followed if a link), check it and load it.
    ///
    /// Refused: a run imported from a bundle or merged from shards (marked in `run.json`,
    /// or by the marker file of older imports); a directory with an ancestor another user
    /// could change ([`safe::check_ancestors`]); anything in it not owned by this user or
    /// writable by others ([`safe::resumable_at`]).
    pub fn open(dir: &Path) -> Result<ResumableRun, ResumeError> {
        let refused = |why: String| ResumeError::Refused { dir: dir.to_path_buf(), why };
        let dir_fd =
            safe::open_dir_nofollow(dir).map_err(|e| refused(format!("cannot open {}: {e}", dir.display())))?;
        if has_entry(&dir_fd, IMPORTED_MARKER) {
            return Err(derived(dir, DerivedKind::Imported));
        }
        safe::check_ancestors(&dir_fd).map_err(refused)?;
        safe::resumable_at(&dir_fd, dir).map_err(refused)?;
        let run =
            load_unescaped(&dir_fd, dir).map_err(|source| ResumeError::Load { dir: dir.to_path_buf(), source })?;
        if let Some(d) = &run.meta.derived {
            return Err(derived(dir, d.kind));
        }
        Ok(ResumableRun { dir_fd, run })
    }

    /// The run directory as named.
    pub fn dir(&self) -> &Path {
        &self.run.dir
    }

    /// Its `run.json`.
    pub fn meta(&self) -> &RunMeta {
        &self.run.meta
    }

    /// If the run is finished, not interrupted, and has every planned cell stored (not
    /// failed), the number of cells stored: there is nothing to resume.
    pub fn complete(&self) -> Option<usize> {
        let stored: BTreeSet<&str> =
            self.run.cells.iter().filter(|c| c.status != CellStatus::Failed).map(|c| c.id.as_str()).collect();
        let m = &self.run.meta;
        // An interrupted run may have every cell stored and still miss rounds (`workload.rounds`).
        let complete =
            m.finished.is_some() && !m.interrupted && m.planned_cells.iter().all(|p| stored.contains(p.id().as_str()));
        complete.then_some(stored.len())
    }
}

fn derived(dir: &Path, kind: DerivedKind) -> ResumeError {
    let advice = match kind {
        DerivedKind::Imported => "rerun it with `fsbench bundle run`, which applies the bundle's checks",
        DerivedKind::Merged => "a merged run is never resumed; resume the shards that are unfinished and merge again",
    };
    ResumeError::Derived { dir: dir.to_path_buf(), kind, advice }
}

/// Whether `name` exists in the directory open at `dir` (a link counts; it is not followed).
fn has_entry(dir: &OwnedFd, name: &str) -> bool {
    let Ok(c) = crate::beneath::plain_name(name) else { return false };
    // SAFETY: st is plain data; fstatat fills it for a valid fd and name.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    unsafe { libc::fstatat(dir.as_raw_fd(), c.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) == 0 }
}
