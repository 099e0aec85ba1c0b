//! Whether a directory is ours and safe to trust: the one rule the work root (provision)
//! and the results tree (results) both apply, on an open fd.
//!
//! A directory is opened without following a final link (`O_PATH | O_NOFOLLOW`), its type,
//! owner and mode are read with fstat(2) from that fd, and only then is it opened for
//! reading, from the same fd (`openat(fd, ".")`): what was checked is what is used, and no
//! path is resolved twice. Its ancestors are reached by `..` from the directory itself, so
//! they are the physical parents whatever path named it.
//!
//! The rule says only what is wrong ([`NotOurs`]); each caller words its refusal and its
//! fix, as the user of that command needs them.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::stat;

/// What a directory must be to be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Owned by the effective uid (the results tree: shared on purpose, its mode is the
    /// owner's affair).
    Owned,
    /// Owned by the effective uid and not writable by group or others (the work root,
    /// whose journals stale cleanup obeys; a run directory to resume).
    Private,
    /// An ancestor of a trusted directory: owned by root or the effective uid, and not
    /// writable by group or others unless sticky (like `/tmp`), so nobody else can swap
    /// what lies below it.
    Ancestor,
}

/// Why a directory is not ours, or could not be looked at.
#[derive(Debug)]
pub enum NotOurs {
    /// It could not be opened or inspected.
    Io(io::Error),
    /// It is a symbolic link.
    Link,
    /// It is not a directory.
    NotDirectory,
    /// Its owner is not one the rule accepts.
    Owner {
        /// Its owner.
        uid: u32,
        /// The effective uid running fsbench.
        euid: u32,
        /// Its permission bits (`& 0o7777`).
        mode: u32,
    },
    /// Group or others may write it (and the rule does not accept that).
    Writable {
        /// Its owner.
        uid: u32,
        /// Its permission bits (`& 0o7777`).
        mode: u32,
        /// Whether the sticky bit is set (a shared directory like `/tmp`).
        sticky: bool,
    },
}

impl From<io::Error> for NotOurs {
    fn from(e: io::Error) -> Self {
        NotOurs::Io(e)
    }
}

/// The effective uid of this process.
pub fn euid() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
}

/// The rule's owner and mode checks on `st` (the type is the opener's to check: an entry
/// of a run directory is a file).
pub fn check_stat(st: &libc::stat, rule: Rule) -> Result<(), NotOurs> {
    let euid = euid();
    let mode = st.st_mode & 0o7777;
    let sticky = st.st_mode & libc::S_ISVTX != 0;
    let owner_ok = st.st_uid == euid || (rule == Rule::Ancestor && st.st_uid == 0);
    if !owner_ok {
        return Err(NotOurs::Owner { uid: st.st_uid, euid, mode });
    }
    let writable = st.st_mode & 0o022 != 0;
    let mode_ok = match rule {
        Rule::Owned => true,
        Rule::Private => !writable,
        Rule::Ancestor => !writable || sticky,
    };
    if !mode_ok {
        return Err(NotOurs::Writable { uid: st.st_uid, mode, sticky });
    }
    Ok(())
}

/// The rule on the directory open at `fd`: a directory, with the rule's owner and mode.
pub fn check_fd(fd: impl AsFd, rule: Rule) -> Result<libc::stat, NotOurs> {
    let st = stat(fd)?;
    match st.st_mode & libc::S_IFMT {
        libc::S_IFDIR => {}
        libc::S_IFLNK => return Err(NotOurs::Link),
        _ => return Err(NotOurs::NotDirectory),
    }
    check_stat(&st, rule)?;
    Ok(st)
}

/// Open the directory at `path` (a final symbolic link is not followed, one on the way
/// is: the caller chose the path) if it satisfies `rule`; the fd is open for reading.
pub fn open_ours(path: &Path, rule: Rule) -> Result<OwnedFd, NotOurs> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains NUL"))?;
    // SAFETY: c is a valid C string; open returns a new fd or -1.
    let raw = unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC) };
    if raw < 0 {
        return Err(io::Error::last_os_error().into());
    }
    // SAFETY: a fresh fd owned by nobody else.
    let checked = unsafe { OwnedFd::from_raw_fd(raw) };
    check_fd(&checked, rule)?;
    // SAFETY: valid fd and name; the result is a fresh fd or -1.
    let raw = unsafe {
        libc::openat(checked.as_raw_fd(), c".".as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC)
    };
    if raw < 0 {
        return Err(io::Error::last_os_error().into());
    }
    // SAFETY: a fresh fd owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// Check every ancestor of the directory open at `dir`, walking up by `..` to `/`, against
/// [`Rule::Ancestor`]. The first that fails is returned with its path (as the kernel names
/// it in `/proc/self/fd`, or "a parent directory").
pub fn check_ancestors(dir: &OwnedFd) -> Result<(), (String, NotOurs)> {
    let unnamed = |e: NotOurs| ("a parent directory".to_string(), e);
    let mut cur = stat(dir).map_err(|e| unnamed(e.into()))?;
    let mut fd: Option<OwnedFd> = None;
    loop {
        let at = fd.as_ref().map_or(dir.as_raw_fd(), |f| f.as_raw_fd());
        // SAFETY: valid fd and name; the result is a fresh fd or -1.
        let raw = unsafe { libc::openat(at, c"..".as_ptr(), libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) };
        if raw < 0 {
            return Err(unnamed(io::Error::last_os_error().into()));
        }
        // SAFETY: a fresh fd owned by nobody else.
        let parent = unsafe { OwnedFd::from_raw_fd(raw) };
        let st = stat(&parent).map_err(|e| unnamed(e.into()))?;
        if (st.st_dev, st.st_ino) == (cur.st_dev, cur.st_ino) {
            return Ok(()); // `/`: its own parent
        }
        if let Err(e) = check_stat(&st, Rule::Ancestor) {
            let shown = std::fs::read_link(format!("/proc/self/fd/{}", parent.as_raw_fd()))
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| "a parent directory".into());
            return Err((shown, e));
        }
        cur = st;
        fd = Some(parent);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_link_a_file_and_a_writable_directory_are_not_ours() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("d");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(open_ours(&dir, Rule::Private).is_ok());
        std::os::unix::fs::symlink(&dir, tmp.path().join("link")).unwrap();
        assert!(matches!(open_ours(&tmp.path().join("link"), Rule::Owned), Err(NotOurs::Link)));
        std::fs::write(tmp.path().join("f"), b"").unwrap();
        assert!(matches!(open_ours(&tmp.path().join("f"), Rule::Owned), Err(NotOurs::NotDirectory)));
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
        assert!(open_ours(&dir, Rule::Owned).is_ok(), "the results tree's mode is its owner's affair");
        assert!(matches!(open_ours(&dir, Rule::Private), Err(NotOurs::Writable { mode: 0o1777, sticky: true, .. })));
        assert!(open_ours(&dir, Rule::Ancestor).is_ok(), "a sticky shared directory may be an ancestor");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(matches!(open_ours(&dir, Rule::Ancestor), Err(NotOurs::Writable { sticky: false, .. })));
        assert!(matches!(open_ours(&tmp.path().join("absent"), Rule::Owned), Err(NotOurs::Io(_))));
    }

    #[test]
    fn the_owner_must_be_us_or_for_an_ancestor_root() {
        // SAFETY: plain data.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        st.st_mode = libc::S_IFDIR | 0o755;
        st.st_uid = euid().wrapping_add(1).max(1);
        assert!(matches!(check_stat(&st, Rule::Owned), Err(NotOurs::Owner { .. })));
        assert!(matches!(check_stat(&st, Rule::Ancestor), Err(NotOurs::Owner { .. })));
        st.st_uid = 0;
        assert!(check_stat(&st, Rule::Ancestor).is_ok());
        assert_eq!(check_stat(&st, Rule::Private).is_ok(), euid() == 0);
    }
}
