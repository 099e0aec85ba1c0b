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

use crate::beneath::ours::{self, NotOurs, Rule};
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

/// Refuse a directory fsbench did not create unless it is owned by the effective uid
/// ([`Rule::Owned`]: the results root is shared on purpose, so its mode is not checked).
pub fn check_owned(fd: &OwnedFd, shown: &Path) -> io::Result<()> {
    match ours::check_fd(fd, Rule::Owned) {
        Ok(_) => Ok(()),
        Err(NotOurs::Io(e)) => Err(e),
        Err(NotOurs::Owner { uid, euid, .. }) => Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is owned by uid {uid}, not by uid {euid} that runs fsbench: another user could change what is \
                 written there; use an --out of your own",
                shown.display(),
            ),
        )),
        Err(NotOurs::Link | NotOurs::NotDirectory | NotOurs::Writable { .. }) => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is not a directory of ours; fsbench does not follow links in the results tree",
                shown.display()
            ),
        )),
    }
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

/// Create directory `name` in `dir`; fails if anything by that name exists. The directory
/// opened is checked to be ours: in a directory others can write, another could have
/// been put in its place between the mkdirat and the open.
pub fn create_subdir(dir: &OwnedFd, name: &str) -> io::Result<OwnedFd> {
    beneath::mkdir_beneath(dir, &plain_name(name)?, 0o755, Resolver::Auto)?;
    let fd = open_subdir(dir, name)?;
    check_owned(&fd, Path::new(name))?;
    Ok(fd)
}

/// Write `bytes` as `name` in `dir` atomically ([`beneath::write_replacing`]: a fresh
/// `O_CREAT|O_EXCL|O_NOFOLLOW` temp file, fsync, renameat over `name`, fsync the directory).
pub fn write_at(dir: &OwnedFd, name: &str, bytes: &[u8]) -> io::Result<()> {
    beneath::write_replacing(dir, name, bytes)
}

/// Remove the temporary files a crashed write left in the directory open at `dir`
/// (names starting with [`TMP_PREFIX`]; a link of that name is removed, not followed).
pub fn remove_temporaries(dir: &OwnedFd) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    for (name, st) in entries_at(dir)? {
        if name.as_bytes().starts_with(TMP_PREFIX.as_bytes()) && st.st_mode & libc::S_IFMT != libc::S_IFDIR {
            let c = std::ffi::CString::new(name.as_bytes()).expect("a directory entry has no NUL");
            // SAFETY: dir is an open directory; c a valid name inside it. A failure leaves the file.
            unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), 0) };
        }
    }
    Ok(())
}

/// Whether the run directory open at `dir` may be resumed by this user: the directory,
/// `cells/` and every entry in them owned by the effective uid, not writable by group or
/// others, and no symbolic link (their scenario text is executed, `exec` steps included).
/// `shown` names the directory in the reason given when not.
pub fn resumable_at(dir: &OwnedFd, shown: &Path) -> Result<(), String> {
    // Each entry is held to the rule of a private directory: ours, and nobody else's to write.
    let check = |st: &libc::stat, p: &Path| -> Result<(), String> {
        match ours::check_stat(st, Rule::Private) {
            Ok(()) => Ok(()),
            Err(NotOurs::Owner { uid, euid, .. }) => {
                Err(format!("{} is owned by uid {uid}, not by you (uid {euid})", p.display()))
            }
            Err(NotOurs::Writable { mode, .. }) => Err(format!(
                "{} has mode {mode:04o}: others could have written it; run `chmod -R go-w {}` if you trust it",
                p.display(),
                shown.display()
            )),
            Err(NotOurs::Io(e)) => Err(format!("{}: {e}", p.display())),
            Err(NotOurs::Link | NotOurs::NotDirectory) => Err(format!("{} is not a directory", p.display())),
        }
    };
    let st = stat(dir).map_err(|e| format!("{}: {e}", shown.display()))?;
    check(&st, shown)?;
    let cells = match open_subdir(dir, super::CELLS_DIR) {
        Ok(fd) => Some(fd),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("{}: {e}", shown.join(super::CELLS_DIR).display())),
    };
    let mut dirs = vec![(dir, shown.to_path_buf())];
    if let Some(cells) = &cells {
        dirs.push((cells, shown.join(super::CELLS_DIR)));
    }
    for (fd, dir_shown) in dirs {
        let listed = entries_at(fd).map_err(|e| format!("{}: {e}", dir_shown.display()))?;
        for (name, st) in listed {
            let p = dir_shown.join(&name);
            if st.st_mode & libc::S_IFMT == libc::S_IFLNK {
                return Err(format!("{} is a symbolic link", p.display()));
            }
            check(&st, &p)?;
        }
    }
    Ok(())
}

/// Every entry of the directory open at `dir` (but `.` and `..`) with its lstat.
fn entries_at(dir: &OwnedFd) -> io::Result<Vec<(std::ffi::OsString, libc::stat)>> {
    use nix::fcntl::OFlag;
    use std::os::unix::ffi::OsStrExt;
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
    let mut listing = nix::dir::Dir::openat(dir, ".", flags, nix::sys::stat::Mode::empty())?;
    let mut out = Vec::new();
    for entry in listing.iter() {
        let entry = entry?;
        let name = entry.file_name();
        if matches!(name.to_bytes(), b"." | b"..") {
            continue;
        }
        // SAFETY: st is plain data; fstatat fills it for a valid fd and name.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstatat(dir.as_raw_fd(), name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) } < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::NotFound {
                continue;
            }
            return Err(e);
        }
        out.push((std::ffi::OsStr::from_bytes(name.to_bytes()).to_os_string(), st));
    }
    Ok(out)
}

/// Whether the run directory at `run_dir` may be resumed by this user ([`resumable_at`]
/// on the directory opened without following a final link).
pub fn resumable(run_dir: &Path) -> Result<(), String> {
    let dir = open_dir_nofollow(run_dir).map_err(|e| format!("cannot open {}: {e}", run_dir.display()))?;
    resumable_at(&dir, run_dir)
}

/// Refuse a run directory (open at `dir`) whose ancestors another user could change:
/// walking up by `..` from the directory itself (so the physical ancestors, whatever
/// path named it), each must be owned by root or the effective uid, and be writable by
/// group or others only with the sticky bit (as `/tmp`): [`Rule::Ancestor`]. Says which
/// ancestor when not.
pub fn check_ancestors(dir: &OwnedFd) -> Result<(), String> {
    ours::check_ancestors(dir).map_err(|(shown, e)| match e {
        NotOurs::Owner { uid, .. } => {
            format!("its ancestor {shown} is owned by uid {uid}: that user could swap the run directory for another")
        }
        NotOurs::Writable { mode, .. } => format!(
            "its ancestor {shown} has mode {mode:04o}: writable by others without the sticky bit, so they could swap \
             the run directory for another; resume from a results root only you can write (or `chmod +t` it)"
        ),
        NotOurs::Io(e) => format!("cannot open a parent directory: {e}"),
        NotOurs::Link | NotOurs::NotDirectory => format!("its ancestor {shown} is not a directory"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_symlinked_scenario_directory_is_refused_when_writing_results() {
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
