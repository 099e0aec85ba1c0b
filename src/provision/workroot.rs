//! The work root (`/tmp/fsbench` unless `--workdir` says otherwise) and the
//! directories inside it are trusted by stale cleanup, which unmounts, detaches
//! and deletes what their journals name. So they must be ours: owned by the
//! effective uid, not writable by group or others, and not symlinks. A work
//! root anybody could have pre-created (`/tmp` is world-writable) is refused.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::ProvisionError;
use super::private::check_private_dir;
use crate::beneath::ours::NotOurs;
use crate::scenario::Backing;

/// Create the work root (mode 0700) if it is missing, and refuse it unless it
/// is a real directory owned by the effective uid and not writable by group or
/// others, with every ancestor owned by root or the effective uid and either
/// not writable by others or sticky (like `/tmp`).
pub fn prepare_work_root(path: &Path) -> Result<PathBuf, ProvisionError> {
    check_links_on_the_way(path)?;
    if std::fs::symlink_metadata(path).is_err() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(path)
            .map_err(|e| ProvisionError::io("create work directory", path, e))?;
        // The mode given to mkdir is masked by the umask; say exactly what we mean.
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| ProvisionError::io("chmod 0700", path, e))?;
    }
    let dir = check_private_dir(path, "work directory")?;
    crate::beneath::ours::check_ancestors(&dir).map_err(|(parent, e)| ancestor_refusal(&parent, e, path))?;
    let canon = path.canonicalize().map_err(|e| ProvisionError::io("resolve work directory", path, e))?;
    // The caller uses this path, the one checked, not one that passes through links.
    Ok(canon)
}

/// A symbolic link on the way to the work root is as good as its owner: one another
/// user owns (say in /tmp) could be re-pointed after the checks. Links of root or of
/// the effective uid are followed (and the canonical path is what gets used).
fn check_links_on_the_way(path: &Path) -> Result<(), ProvisionError> {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().map_err(|e| ProvisionError::io("resolve work directory", path, e))?.join(path)
    };
    let euid = nix::unistd::geteuid().as_raw();
    let mut walked = PathBuf::new();
    for c in abs.components() {
        walked.push(c);
        let Ok(m) = std::fs::symlink_metadata(&walked) else { break };
        if m.file_type().is_symlink() && m.uid() != 0 && m.uid() != euid {
            return Err(ProvisionError::UnsafeWorkDir {
                path: path.to_path_buf(),
                reason: format!(
                    "it is reached through the symbolic link {} owned by uid {}, who could re-point it; \
                     pass the real directory to --workdir",
                    walked.display(),
                    m.uid()
                ),
            });
        }
    }
    Ok(())
}

/// An ancestor of the work root must not let anybody else swap what lies below it: the
/// work root's words for what [`crate::beneath::ours::check_ancestors`] found at `parent`.
fn ancestor_refusal(parent: &str, e: NotOurs, root: &Path) -> ProvisionError {
    let (uid, mode) = match e {
        NotOurs::Owner { uid, mode, .. } | NotOurs::Writable { uid, mode, .. } => (uid, mode),
        NotOurs::Io(e) => return ProvisionError::io("inspect work directory parent", Path::new(parent), e),
        NotOurs::Link | NotOurs::NotDirectory => {
            let reason = format!("its parent {parent} is not a directory");
            return ProvisionError::UnsafeWorkDir { path: root.to_path_buf(), reason };
        }
    };
    ProvisionError::UnsafeWorkDir {
        path: root.to_path_buf(),
        reason: format!(
            "its parent {parent} is owned by uid {uid} with mode {mode:04o}, so another user could replace the work \
             directory; pass --workdir with a directory whose parents only root or you can write"
        ),
    }
}

/// Create the per-run directory `dir` (mode 0700) if missing and refuse it
/// unless it is private (see [`check_private_dir`](super::private::check_private_dir)). Returns its canonical path,
/// so that what the journal records is absolute and matches /proc/self/mountinfo.
pub fn prepare_run_dir(dir: &Path) -> Result<PathBuf, ProvisionError> {
    if std::fs::symlink_metadata(dir).is_err() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| ProvisionError::io("create work dir", dir, e))?;
    }
    check_private_dir(dir, "run work directory")?;
    dir.canonicalize().map_err(|e| ProvisionError::io("resolve work dir", dir, e))
}

/// The directory, inside a run's work directory, that holds the off-target archive copy.
pub const ARCHIVE_SCRATCH: &str = "archive";

/// The work root probes use (set by the command that knows `--workdir`; else the default).
static SCRATCH_ROOT: std::sync::Mutex<Option<PathBuf>> = std::sync::Mutex::new(None);

/// Make `root` the work root of this process's probes (the quota probe): set once the
/// command knows its `--workdir`, so that a killed probe is cleaned by the next run there.
pub fn set_scratch_root(root: &Path) {
    *SCRATCH_ROOT.lock().unwrap_or_else(|e| e.into_inner()) = Some(root.to_path_buf());
}

/// A fresh private directory `<work root>/<prefix>XXXXXX` (0700), laid out like a run's
/// work directory so that stale cleanup finds the journals of what is provisioned in it
/// after a SIGKILL; removed when dropped.
pub fn scratch_run_dir(prefix: &str) -> Result<tempfile::TempDir, ProvisionError> {
    let root = SCRATCH_ROOT.lock().unwrap_or_else(|e| e.into_inner()).clone().unwrap_or_else(default_workdir);
    prepare_work_root(&root)?;
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir_in(&root)
        .map_err(|e| ProvisionError::io("create scratch directory", &root, e))?;
    check_private_dir(dir.path(), "scratch directory")?;
    claim_run_dir(dir.path())?;
    Ok(dir)
}

/// Give a run-level directory of the work root (`<root>/<run-id>`, a probe's scratch) a
/// journal naming this process as its owner, so that after a SIGKILL stale cleanup
/// removes the whole directory (archive copy, private `dir` backing, probe files), not
/// only the cells it finds in it. Idempotent.
pub fn claim_run_dir(dir: &Path) -> Result<(), ProvisionError> {
    if std::fs::symlink_metadata(dir.join(super::journal::JOURNAL_FILE)).is_err() {
        super::journal::Journal::create(dir)?;
    }
    Ok(())
}

/// Undo [`claim_run_dir`] at the normal end of a run: remove the journal, then the
/// directory if that emptied it.
pub fn release_run_dir(dir: &Path) {
    let _ = std::fs::remove_file(dir.join(super::journal::JOURNAL_FILE));
    let _ = std::fs::remove_dir(dir);
}

/// Create `<run_workdir>/<name>` (0700) for run-level scratch files (an archive copy) and
/// give it a journal naming this process as its owner: stale cleanup then removes it
/// with the cells of a killed run, exactly as it removes a cell directory.
pub fn journaled_scratch(run_workdir: &Path, name: &str) -> Result<PathBuf, ProvisionError> {
    let dir = run_workdir.join(name);
    if std::fs::symlink_metadata(&dir).is_err() {
        std::fs::DirBuilder::new().mode(0o700).create(&dir).map_err(|e| ProvisionError::io("create", &dir, e))?;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| ProvisionError::io("chmod 0700", &dir, e))?;
    }
    check_private_dir(&dir, "scratch directory")?;
    if std::fs::symlink_metadata(dir.join(super::journal::JOURNAL_FILE)).is_err() {
        super::journal::Journal::create(&dir)?;
    }
    Ok(dir)
}

/// Where fsbench mounts its tmpfs and filesystems unless `--workdir` says otherwise
/// (for root; other users get `/tmp/fsbench-<uid>`, see [`default_workdir`]).
pub const DEFAULT_WORKDIR: &str = "/tmp/fsbench";

/// The default work root: private to the user, since stale-run cleanup only trusts
/// a root owned by the effective uid and not writable by others.
pub fn default_workdir() -> PathBuf {
    let uid = nix::unistd::geteuid();
    if uid.is_root() { PathBuf::from(DEFAULT_WORKDIR) } else { PathBuf::from(format!("{DEFAULT_WORKDIR}-{uid}")) }
}

/// A `dir` backing without a path means a private directory of the run.
pub fn resolve_backing(b: &Backing, private: &Path) -> Backing {
    match b {
        Backing::Dir { path } if path.as_os_str().is_empty() => Backing::Dir { path: private.to_path_buf() },
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_work_root_is_created_private() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("a/fsbench");
        let canon = prepare_work_root(&root).unwrap();
        assert_eq!(canon, root.canonicalize().unwrap());
        assert_eq!(std::fs::metadata(&root).unwrap().mode() & 0o777, 0o700);
        prepare_work_root(&root).unwrap();
    }

    #[test]
    fn a_group_or_world_writable_work_root_is_refused_with_the_fix() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("fsbench");
        std::fs::create_dir(&root).unwrap();
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = prepare_work_root(&root).unwrap_err();
        assert!(matches!(e, ProvisionError::UnsafeWorkDir { .. }), "{e}");
        assert!(e.to_string().contains("chmod go-w"), "{e}");
    }

    #[test]
    fn a_symlinked_work_root_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("real")).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("real"), tmp.path().join("link")).unwrap();
        let e = prepare_work_root(&tmp.path().join("link")).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
    }
}
