//! The two resolvers: `openat2` with no link allowed, and the fd-by-fd walk that
//! gives the same answers on kernels without it.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering};

/// How paths are resolved beneath a directory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Resolver {
    /// `openat2` where the kernel has it (Linux 5.6+), else the fd walk. The
    /// environment variable `FSBENCH_UNTAR_RESOLVER=fd-walk` forces the walk
    /// (for tests of the fallback through the binary).
    #[default]
    Auto,
    /// `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS)`.
    Openat2,
    /// One `openat(O_PATH | O_DIRECTORY | O_NOFOLLOW)` per component, from the
    /// directory's fd down: the pre-5.6 way, same guarantees.
    FdWalk,
}

/// openat2 availability, learned once per process: 0 unknown, 1 present, 2 absent (ENOSYS).
static OPENAT2: AtomicU8 = AtomicU8::new(0);

impl Resolver {
    /// The resolver actually used: `Auto` becomes `Openat2` unless forced or known absent.
    fn effective(self) -> Resolver {
        match self {
            Resolver::Auto => {
                static FORCED: OnceLock<bool> = OnceLock::new();
                let forced =
                    *FORCED.get_or_init(|| std::env::var("FSBENCH_UNTAR_RESOLVER").is_ok_and(|v| v == "fd-walk"));
                if forced || OPENAT2.load(Ordering::Relaxed) == 2 { Resolver::FdWalk } else { Resolver::Openat2 }
            }
            other => other,
        }
    }
}

/// Open `rel` (plain relative components only, else `EINVAL`) beneath `dir`
/// without following any symlink on the way or at the end, as `resolver` says.
/// `flags` are open(2) flags (`O_CLOEXEC` is added); `mode` is used with `O_CREAT`.
pub fn open_beneath(dir: impl AsFd, rel: &CStr, flags: i32, mode: u32, resolver: Resolver) -> io::Result<OwnedFd> {
    super::check_plain(rel)?;
    let root = dir.as_fd().as_raw_fd();
    let flags = flags | libc::O_CLOEXEC;
    if resolver.effective() == Resolver::Openat2 {
        let fd = openat2_beneath(root, rel, flags, mode);
        if fd >= 0 {
            OPENAT2.store(1, Ordering::Relaxed);
            // SAFETY: fd was just returned by the kernel and is ours.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::ENOSYS) {
            return Err(e);
        }
        // A kernel before 5.6 (or a sandbox hiding the call): walk instead, from now on.
        OPENAT2.store(2, Ordering::Relaxed);
    }
    fd_walk(root, rel, flags, mode)
}

/// openat2 beneath `dirfd` following no link at all: the kernel refuses any
/// resolution (`..`, symlinks, magic links) that could leave `dirfd` or land
/// somewhere other than the written path.
fn openat2_beneath(dirfd: RawFd, path: &CStr, flags: i32, mode: u32) -> i32 {
    // SAFETY: open_how is plain data (non-exhaustive, so built from zeroes).
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = flags as u64;
    how.mode = if flags & libc::O_CREAT != 0 { mode as u64 } else { 0 };
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS | libc::RESOLVE_NO_SYMLINKS;
    // SAFETY: how is a valid open_how of the size passed.
    unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dirfd,
            path.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        ) as i32
    }
}

/// The fd-by-fd walk: every directory on the way opened with O_NOFOLLOW|O_DIRECTORY
/// relative to the previous one, the last component with O_NOFOLLOW. Where the
/// kernel's answer for a link differs from openat2's (`ENOTDIR` for a link met
/// with `O_DIRECTORY`, the link itself for `O_PATH`), it is turned into openat2's `ELOOP`
/// (by looking again: if the link is swapped back for a directory meanwhile, `ENOTDIR` stays).
fn fd_walk(root: RawFd, rel: &CStr, flags: i32, mode: u32) -> io::Result<OwnedFd> {
    let bytes = rel.to_bytes();
    let comps: Vec<&[u8]> = bytes.split(|&b| b == b'/').collect();
    let mut cur: Option<OwnedFd> = None;
    let (last, dirs) = comps.split_last().expect("split yields one component at least");
    for c in dirs {
        let name = CString::new(*c).expect("a part of a C string has no NUL");
        let at = cur.as_ref().map_or(root, |f| f.as_raw_fd());
        let dir_flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: valid fd and path.
        let fd = unsafe { libc::openat(at, name.as_ptr(), dir_flags) };
        if fd < 0 {
            return Err(link_is_eloop(at, &name, io::Error::last_os_error()));
        }
        // SAFETY: fresh fd.
        cur = Some(unsafe { OwnedFd::from_raw_fd(fd) });
    }
    let name = CString::new(*last).expect("a part of a C string has no NUL");
    let at = cur.as_ref().map_or(root, |f| f.as_raw_fd());
    let caller_nofollow = flags & libc::O_NOFOLLOW != 0;
    // SAFETY: valid fd and path.
    let fd = unsafe { libc::openat(at, name.as_ptr(), flags | libc::O_NOFOLLOW, mode) };
    if fd < 0 {
        let e = io::Error::last_os_error();
        return Err(if caller_nofollow { e } else { link_is_eloop(at, &name, e) });
    }
    // SAFETY: fresh fd.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    if !caller_nofollow && flags & libc::O_PATH != 0 && super::stat(&fd)?.st_mode & libc::S_IFMT == libc::S_IFLNK {
        // O_PATH|O_NOFOLLOW opens the link itself; openat2 without O_NOFOLLOW refuses it.
        return Err(io::Error::from_raw_os_error(libc::ELOOP));
    }
    Ok(fd)
}

/// `ENOTDIR` from opening `name` in `at` becomes `ELOOP` when `name` is a symlink.
fn link_is_eloop(at: RawFd, name: &CStr, e: io::Error) -> io::Error {
    if e.raw_os_error() != Some(libc::ENOTDIR) {
        return e;
    }
    // SAFETY: st is plain data; fstatat fills it for a valid fd and name.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let is_link = unsafe { libc::fstatat(at, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) } == 0
        && st.st_mode & libc::S_IFMT == libc::S_IFLNK;
    if is_link { io::Error::from_raw_os_error(libc::ELOOP) } else { e }
}
