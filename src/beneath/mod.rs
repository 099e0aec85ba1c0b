//! Opening, creating and renaming beneath a directory without following any link.
//!
//! fsbench runs as root over trees that others wrote: an archive from a bundle
//! being extracted, the steps that then run on its tree, a results root shared
//! between users. Every path below such a directory goes through this module:
//! it is resolved from the directory's fd, and no symbolic link is followed, not
//! on the way and not at the end. Paths are plain relative components only; an
//! absolute path, `..`, `.` or an empty component is refused (`EINVAL`) before
//! anything is opened, so a path can only ever name something inside the tree.
//!
//! Two resolvers give the same answers ([`Resolver`]): `openat2` with
//! `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS` where the kernel
//! has it (5.6+), an fd-by-fd walk with `O_NOFOLLOW` elsewhere. A link met on
//! the way is `ELOOP` from either; a link at the end is `ELOOP` too, unless the
//! caller passed `O_NOFOLLOW` itself (then the kernel's own `O_NOFOLLOW` answer:
//! `ENOTDIR` with `O_DIRECTORY`, the link itself with `O_PATH`).
//!
//! On top of the resolver sit the few operations the callers need: `mkdir` and
//! `mkdir -p` beneath, exclusive creation, `renameat`, and the atomic
//! "temporary file, fsync, rename" write of the result store, and [`ours`]: the one
//! rule of a directory fsbench trusts (a directory, not a link, owned by us, not
//! writable by others), which the work root (`provision`) and the results tree
//! (`results::safe`) both apply. What each caller adds stays with it: the archive link
//! policy (`workload::untar`), the wording of each refusal.

mod make;
pub mod ours;
mod resolve;
/// Open the file `name` in `dir` for reading, never through a link: `None` when there is
/// none or it is not a regular file (a FIFO is opened without blocking, then refused).
pub fn open_file(dir: &std::os::fd::OwnedFd, name: &str) -> std::io::Result<Option<std::fs::File>> {
    let c = plain_name(name)?;
    let flags = libc::O_RDONLY | libc::O_NONBLOCK;
    let fd = match open_beneath(dir, &c, flags, 0, Resolver::Auto) {
        Ok(fd) => fd,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a symbolic link; fsbench does not follow links in a run directory",
            ));
        }
        Err(e) => return Err(e),
    };
    let file = std::fs::File::from(fd);
    if !file.metadata()?.file_type().is_file() {
        return Ok(None);
    }
    Ok(Some(file))
}

#[cfg(test)]
mod tests;

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

pub use make::{TMP_PREFIX, create_excl, mkdir_all_beneath, mkdir_beneath, rename_beneath, write_replacing};
pub use resolve::{Resolver, open_beneath};

/// `name` as a C string if it is one plain file name: not empty, no `/`, not `.` or `..`.
pub fn plain_name(name: &str) -> io::Result<CString> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("`{name}` is not a plain file name")));
    }
    CString::new(name).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file name contains NUL"))
}

/// Refuse (`EINVAL`) a path that is not plain relative components (`a/b/c`):
/// empty, absolute, `.`, `..` or an empty component (`a//b`, `a/`).
pub(crate) fn check_plain(rel: &CStr) -> io::Result<()> {
    let bytes = rel.to_bytes();
    if bytes.is_empty() || bytes.split(|&b| b == b'/').any(|c| c.is_empty() || c == b"." || c == b"..") {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    Ok(())
}

/// Open the directory at `path`, following links: the caller chose this path, and
/// what is beneath it is then opened relative to the returned fd.
pub fn open_dir(path: &Path) -> io::Result<OwnedFd> {
    open_path(path, libc::O_RDONLY | libc::O_DIRECTORY)
}

/// Open the directory at `path` itself without following a final symlink.
pub fn open_dir_nofollow(path: &Path) -> io::Result<OwnedFd> {
    open_path(path, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW)
}

fn open_path(path: &Path, flags: i32) -> io::Result<OwnedFd> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains NUL"))?;
    // SAFETY: c is a valid C string; open returns a new fd or -1.
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh fd owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The parent of `rel` opened beneath `dir` (`O_PATH | O_DIRECTORY`, no link followed)
/// and the last name, for `*at` calls. `None` when `rel` is one name: its parent is `dir`.
pub fn parent_beneath(dir: impl AsFd, rel: &CStr, resolver: Resolver) -> io::Result<(Option<OwnedFd>, CString)> {
    check_plain(rel)?;
    let bytes = rel.to_bytes();
    match bytes.iter().rposition(|&b| b == b'/') {
        None => Ok((None, rel.to_owned())),
        Some(i) => {
            let parent = CString::new(&bytes[..i]).expect("a part of a C string has no NUL");
            let name = CString::new(&bytes[i + 1..]).expect("a part of a C string has no NUL");
            let fd = open_beneath(dir, &parent, libc::O_PATH | libc::O_DIRECTORY, 0, resolver)?;
            Ok((Some(fd), name))
        }
    }
}

/// Every name in the directory open at `dir` but `.` and `..` (a name that is not UTF-8
/// is shown lossily, so it matches no name fsbench makes).
pub fn list_names(dir: &std::os::fd::OwnedFd) -> io::Result<Vec<String>> {
    use nix::fcntl::OFlag;
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
    let mut d = nix::dir::Dir::openat(dir, ".", flags, nix::sys::stat::Mode::empty())?;
    let mut names = Vec::new();
    for entry in d.iter() {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name != "." && name != ".." {
            names.push(name);
        }
    }
    Ok(names)
}

/// fstat(2) of an open fd.
pub fn stat(fd: impl AsFd) -> io::Result<libc::stat> {
    // SAFETY: st is plain data; fstat fills it for a valid fd.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd.as_fd().as_raw_fd(), &mut st) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}
