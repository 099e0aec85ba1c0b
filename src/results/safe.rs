//! The results root is shared by design (shards on Slurm, Kubernetes, NFS), so the
//! tree under `--out` is written as if another user could have prepared it: every
//! directory fsbench did not create itself is opened with `O_NOFOLLOW` and checked
//! (a directory, not a symlink, owned by the effective uid); files are created
//! relative to a directory fd with `O_CREAT|O_EXCL|O_NOFOLLOW` under a fresh temp
//! name and renamed into place with renameat(2), so no path is followed twice and
//! no existing file is ever truncated through a link.

use std::ffi::CString;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

fn cstr(name: &str) -> io::Result<CString> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("`{name}` is not a plain file name")));
    }
    CString::new(name).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file name contains NUL"))
}

/// Open the directory at `path` (following links: the caller chose this path).
pub fn open_dir(path: &Path) -> io::Result<OwnedFd> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains NUL"))?;
    // SAFETY: c is a valid C string; open returns a new fd or -1.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh fd owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Open `name` inside `dir` as a directory, never through a symlink.
pub fn open_subdir(dir: &OwnedFd, name: &str) -> io::Result<OwnedFd> {
    let c = cstr(name)?;
    // SAFETY: dir is an open directory fd and c a valid C string.
    let fd = unsafe {
        libc::openat(
            dir.as_raw_fd(),
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        let e = io::Error::last_os_error();
        // ELOOP (O_NOFOLLOW on a link) and ENOTDIR say the same: not a real directory.
        if matches!(e.raw_os_error(), Some(libc::ELOOP) | Some(libc::ENOTDIR)) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "`{name}` is a symbolic link or not a directory; fsbench does not follow links in the results tree"
                ),
            ));
        }
        return Err(e);
    }
    // SAFETY: a fresh fd owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// fstat(2) of an open fd.
pub fn stat(fd: &OwnedFd) -> io::Result<libc::stat> {
    // SAFETY: st is plain data; fstat fills it for a valid fd.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
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
    let c = cstr(name)?;
    // SAFETY: dir is an open directory fd and c a valid C string.
    let made = unsafe { libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), 0o755) } == 0;
    if !made {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::AlreadyExists {
            return Err(e);
        }
    }
    let fd = open_subdir(dir, name)?;
    if !made {
        check_owned(&fd, shown)?;
    }
    Ok(fd)
}

/// Create directory `name` in `dir`; fails if anything by that name exists.
pub fn create_subdir(dir: &OwnedFd, name: &str) -> io::Result<OwnedFd> {
    let c = cstr(name)?;
    // SAFETY: as in ensure_subdir.
    if unsafe { libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), 0o755) } != 0 {
        return Err(io::Error::last_os_error());
    }
    open_subdir(dir, name)
}

static TMP_SEQ: AtomicU64 = AtomicU64::new(0);

/// Prefix of the temporary files [`write_at`] creates (removed by `--resume`).
pub const TMP_PREFIX: &str = ".tmp-";

/// Write `bytes` as `name` in `dir` atomically: a fresh temp file (`O_CREAT|O_EXCL|
/// O_NOFOLLOW`, mode 0644), fsync, renameat over `name`, fsync the directory.
pub fn write_at(dir: &OwnedFd, name: &str, bytes: &[u8]) -> io::Result<()> {
    let target = cstr(name)?;
    let seq = TMP_SEQ.fetch_add(1, Ordering::Relaxed);
    let tmp_name = format!("{TMP_PREFIX}{}-{seq}-{name}", std::process::id());
    let tmp = cstr(&tmp_name)?;
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: dir is an open directory fd and tmp a valid C string.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), tmp.as_ptr(), flags, 0o644 as libc::c_uint) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh fd owned by nobody else.
    let mut f = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    let written = f.write_all(bytes).and_then(|()| f.sync_all()).and_then(|()| {
        // SAFETY: both names are valid C strings relative to the same open directory.
        if unsafe { libc::renameat(dir.as_raw_fd(), tmp.as_ptr(), dir.as_raw_fd(), target.as_ptr()) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    });
    if written.is_err() {
        // SAFETY: as above; a failed unlink leaves a temp file that --resume removes.
        unsafe { libc::unlinkat(dir.as_raw_fd(), tmp.as_ptr(), 0) };
        return written;
    }
    // SAFETY: dir is an open fd; a failed fsync of the directory only weakens durability.
    unsafe { libc::fsync(dir.as_raw_fd()) };
    Ok(())
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

/// Open the directory at `path` itself without following a final symlink.
pub fn open_dir_nofollow(path: &Path) -> io::Result<OwnedFd> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains NUL"))?;
    // SAFETY: c is a valid C string.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh fd owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
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
    fn a_planted_link_at_the_result_name_is_replaced_not_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        std::os::unix::fs::symlink(&victim, tmp.path().join("cell.json")).unwrap();
        let d = open_dir(tmp.path()).unwrap();
        write_at(&d, "cell.json", b"new").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious", "the link target was written through");
        assert_eq!(std::fs::read(tmp.path().join("cell.json")).unwrap(), b"new");
        assert!(write_at(&d, "../x", b"").is_err(), "names, not paths");
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
