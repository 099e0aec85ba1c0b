//! Making things beneath a directory: directories, exclusive files, renames and
//! the atomic replace of a file, each through a parent resolved without links.

use std::ffi::CStr;
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

use super::{Resolver, open_beneath, parent_beneath, plain_name};

/// The fd to use with `*at` calls: the resolved parent, or `dir` itself.
fn at<'a>(dir: BorrowedFd<'a>, parent: &'a Option<OwnedFd>) -> BorrowedFd<'a> {
    parent.as_ref().map_or(dir, |f| f.as_fd())
}

/// `mkdir rel` beneath `dir` with `mode` (before the umask): its parent is
/// resolved without following links; an existing entry is `EEXIST`.
pub fn mkdir_beneath(dir: impl AsFd, rel: &CStr, mode: u32, resolver: Resolver) -> io::Result<()> {
    let dir = dir.as_fd();
    let (parent, name) = parent_beneath(dir, rel, resolver)?;
    // SAFETY: valid fd and name.
    if unsafe { libc::mkdirat(at(dir, &parent).as_raw_fd(), name.as_ptr(), mode as libc::mode_t) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `mkdir -p rel` beneath `dir`: every missing component made with `mode`, one
/// `mkdirat` each from a parent resolved without following links. An existing
/// entry at a name is left as it is (the next component then fails to resolve
/// through it unless it is a real directory).
pub fn mkdir_all_beneath(dir: impl AsFd, rel: &CStr, mode: u32, resolver: Resolver) -> io::Result<()> {
    let dir = dir.as_fd();
    super::check_plain(rel)?;
    let bytes = rel.to_bytes();
    let ends = bytes.iter().enumerate().filter(|&(_, &b)| b == b'/').map(|(i, _)| i).chain([bytes.len()]);
    for end in ends {
        let prefix = std::ffi::CString::new(&bytes[..end]).expect("a part of a C string has no NUL");
        match mkdir_beneath(dir, &prefix, mode, resolver) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Create the file `rel` beneath `dir` for writing, `O_CREAT | O_EXCL | O_NOFOLLOW`
/// with `mode` (before the umask): never an existing file, never through a link.
pub fn create_excl(dir: impl AsFd, rel: &CStr, mode: u32, resolver: Resolver) -> io::Result<OwnedFd> {
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
    open_beneath(dir, rel, flags, mode, resolver)
}

/// `renameat` of `from` to `to`, both beneath `dir` with their parents resolved
/// without following links. Like rename(2) it replaces what is at `to` (a link
/// there is replaced, not followed).
pub fn rename_beneath(dir: impl AsFd, from: &CStr, to: &CStr, resolver: Resolver) -> io::Result<()> {
    let dir = dir.as_fd();
    let (from_parent, from_name) = parent_beneath(dir, from, resolver)?;
    let (to_parent, to_name) = parent_beneath(dir, to, resolver)?;
    let (from_at, to_at) = (at(dir, &from_parent).as_raw_fd(), at(dir, &to_parent).as_raw_fd());
    // SAFETY: valid fds and names.
    if unsafe { libc::renameat(from_at, from_name.as_ptr(), to_at, to_name.as_ptr()) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

static TMP_SEQ: AtomicU64 = AtomicU64::new(0);

/// Prefix of the temporary files [`write_replacing`] creates (a crash may leave one behind).
pub const TMP_PREFIX: &str = ".tmp-";

/// Write `bytes` as the file `name` in `dir` atomically: a fresh temporary file
/// (`O_CREAT | O_EXCL | O_NOFOLLOW`, mode 0644), fsync, `renameat` over `name`,
/// fsync of the directory. A link planted at either name is never written through.
pub fn write_replacing(dir: impl AsFd, name: &str, bytes: &[u8]) -> io::Result<()> {
    let dir = dir.as_fd();
    let target = plain_name(name)?;
    let seq = TMP_SEQ.fetch_add(1, Ordering::Relaxed);
    let tmp = plain_name(&format!("{TMP_PREFIX}{}-{seq}-{name}", std::process::id()))?;
    let mut f = std::fs::File::from(create_excl(dir, &tmp, 0o644, Resolver::Auto)?);
    let written = f
        .write_all(bytes)
        .and_then(|()| f.sync_all())
        .and_then(|()| rename_beneath(dir, &tmp, &target, Resolver::Auto));
    if written.is_err() {
        // SAFETY: valid fd and name; a failed unlink leaves a temporary file behind.
        unsafe { libc::unlinkat(dir.as_raw_fd(), tmp.as_ptr(), 0) };
        return written;
    }
    // SAFETY: dir is an open fd; a failed fsync of the directory only weakens durability.
    unsafe { libc::fsync(dir.as_raw_fd()) };
    Ok(())
}
