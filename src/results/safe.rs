//! The results root is shared by design (shards on Slurm, Kubernetes, NFS), so the
//! tree under `--out` is written as if another user could have prepared it: every
//! directory fsbench did not create itself is opened with `O_NOFOLLOW` and checked
//! (a directory, not a symlink, owned by the effective uid); files are created
//! relative to a directory fd with `O_CREAT|O_EXCL|O_NOFOLLOW` under a fresh temp
//! name and renamed into place with renameat(2), so no path is followed twice and
//! no existing file is ever truncated through a link.
//!
//! Opening and making beneath a directory fd is [`crate::beneath`]'s; this file adds
//! what is particular to the results tree: the owner checks, the wording of its
//! refusals, and when a run directory may be resumed.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;

use crate::beneath::{self, Resolver, plain_name};

pub use crate::beneath::{TMP_PREFIX, open_dir, open_dir_nofollow, stat};

/// Open `name` inside `dir` as a directory, never through a symlink.
pub fn open_subdir(dir: &OwnedFd, name: &str) -> io::Result<OwnedFd> {
    let c = plain_name(name)?;
    beneath::open_beneath(dir, &c, libc::O_RDONLY | libc::O_DIRECTORY, 0, Resolver::Auto).map_err(|e| {
        // ELOOP (a link) and ENOTDIR (anything else) say the same: not a real directory.
        if matches!(e.raw_os_error(), Some(libc::ELOOP) | Some(libc::ENOTDIR)) {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "`{name}` is a symbolic link or not a directory; fsbench does not follow links in the results tree"
                ),
            )
        } else {
            e
        }
    })
}

/// Refuse a directory fsbench did not create unless it is owned by the effective uid.
pub fn check_owned(fd: &OwnedFd, shown: &Path) -> io::Result<()> {
    let st = stat(fd)?;
    // SAFETY: geteuid cannot fail.
    let euid = unsafe { libc::geteuid() };
    if st.st_uid != euid {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is owned by uid {}, not by uid {euid} that runs fsbench: another user could change what is \
                 written there; use an --out of your own",
                shown.display(),
                st.st_uid
            ),
        ));
    }
    Ok(())
}

/// Create directory `name` in `dir` (mode 0755) or, when it exists, open it and check it
/// is ours and not a link; returns its fd.
pub fn ensure_subdir(dir: &OwnedFd, name: &str, shown: &Path) -> io::Result<OwnedFd> {
    let made = match beneath::mkdir_beneath(dir, &plain_name(name)?, 0o755, Resolver::Auto) {
        Ok(()) => true,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => false,
        Err(e) => return Err(e),
    };
    let fd = open_subdir(dir, name)?;
    if !made {
        check_owned(&fd, shown)?;
    }
    Ok(fd)
}

/// Create directory `name` in `dir`; fails if anything by that name exists.
pub fn create_subdir(dir: &OwnedFd, name: &str) -> io::Result<OwnedFd> {
    beneath::mkdir_beneath(dir, &plain_name(name)?, 0o755, Resolver::Auto)?;
    open_subdir(dir, name)
}

/// Write `bytes` as `name` in `dir` atomically ([`beneath::write_replacing`]: a fresh
/// `O_CREAT|O_EXCL|O_NOFOLLOW` temp file, fsync, renameat over `name`, fsync the directory).
pub fn write_at(dir: &OwnedFd, name: &str, bytes: &[u8]) -> io::Result<()> {
    beneath::write_replacing(dir, name, bytes)
}

/// Whether a run directory may be resumed by this user: the directory, `cells/` and every
/// file in them owned by the effective uid and not writable by group or others (their
/// scenario text is executed, `exec` steps included). Returns the reason when not.
pub fn resumable(run_dir: &Path) -> Result<(), String> {
    let dir = open_dir_nofollow(run_dir).map_err(|e| format!("cannot open {}: {e}", run_dir.display()))?;
    // SAFETY: geteuid cannot fail.
    let euid = unsafe { libc::geteuid() };
    let check = |st: &libc::stat, shown: &Path| -> Result<(), String> {
        if st.st_uid != euid {
            return Err(format!("{} is owned by uid {}, not by you (uid {euid})", shown.display(), st.st_uid));
        }
        if st.st_mode & 0o022 != 0 {
            return Err(format!(
                "{} has mode {:04o}: others could have written it; run `chmod -R go-w {}` if you trust it",
                shown.display(),
                st.st_mode & 0o7777,
                run_dir.display()
            ));
        }
        Ok(())
    };
    let st = stat(&dir).map_err(|e| e.to_string())?;
    check(&st, run_dir)?;
    let mut dirs = vec![(dir, run_dir.to_path_buf())];
    if let Ok(cells) = open_subdir(&dirs[0].0, super::CELLS_DIR) {
        let shown = run_dir.join(super::CELLS_DIR);
        check(&stat(&cells).map_err(|e| e.to_string())?, &shown)?;
        dirs.push((cells, shown));
    }
    for (fd, shown) in &dirs {
        let rd = std::fs::read_dir(format!("/proc/self/fd/{}", fd.as_raw_fd())).map_err(|e| e.to_string())?;
        for entry in rd.flatten() {
            let name = entry.file_name();
            let Ok(m) = entry.metadata() else { continue };
            use std::os::unix::fs::MetadataExt;
            let p = shown.join(&name);
            if m.file_type().is_symlink() {
                return Err(format!("{} is a symbolic link", p.display()));
            }
            if m.uid() != euid {
                return Err(format!("{} is owned by uid {}, not by you (uid {euid})", p.display(), m.uid()));
            }
            if m.mode() & 0o022 != 0 {
                return Err(format!(
                    "{} has mode {:04o}: others could have written it; run `chmod -R go-w {}` if you trust it",
                    p.display(),
                    m.mode() & 0o7777,
                    run_dir.display()
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_symlinked_scenario_directory_was_followed_when_writing_results() {
        let tmp = tempfile::tempdir().unwrap();
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, tmp.path().join("quickstart")).unwrap();
        let root = open_dir(tmp.path()).unwrap();
        let e = ensure_subdir(&root, "quickstart", &tmp.path().join("quickstart")).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        // A real directory of ours is fine.
        let d = ensure_subdir(&root, "real", &tmp.path().join("real")).unwrap();
        write_at(&d, "run.json", b"{}").unwrap();
        assert_eq!(std::fs::read(tmp.path().join("real/run.json")).unwrap(), b"{}");
    }

    #[test]
    fn resume_of_a_run_with_a_world_writable_file_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("cells")).unwrap();
        std::fs::write(tmp.path().join("run.json"), b"{}").unwrap();
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(resumable(tmp.path()), Ok(()));
        let f = tmp.path().join("cells/a.json");
        std::fs::write(&f, b"{}").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o666)).unwrap();
        let e = resumable(tmp.path()).unwrap_err();
        assert!(e.contains("a.json") && e.contains("0666"), "{e}");
    }
}
