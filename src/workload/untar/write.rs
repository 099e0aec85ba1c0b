//! Writing one entry with GNU tar's system calls: the file, directory, link or
//! node, then its times, owner and mode; directory attributes after their
//! contents. Relative to the destination's fd: the whole path for the user's own
//! archives, a parent resolved beneath the destination ([`crate::beneath`]) for
//! untrusted ones.

use std::ffi::{CStr, CString};
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::extract::{DelayedDir, Extractor};
use super::{Trust, UntarError};
use crate::beneath;

impl Extractor<'_, '_> {
    pub(super) fn fs_err(&self, op: &'static str, rel: &CStr, source: io::Error) -> UntarError {
        UntarError::Fs { op, path: self.dest.join(std::ffi::OsStr::from_bytes(rel.to_bytes())), source }
    }

    /// open(2) relative to the destination: plain `openat` for the user's own archives,
    /// [`beneath::open_beneath`] (no link followed, never outside) for untrusted ones.
    fn open_rel(&self, rel: &CStr, flags: i32, mode: u32) -> io::Result<OwnedFd> {
        let fd = match self.trust {
            // SAFETY: valid fd and NUL-terminated path.
            Trust::Own => unsafe {
                libc::openat(self.dest_fd.as_raw_fd(), rel.as_ptr(), flags | libc::O_CLOEXEC, mode)
            },
            Trust::Untrusted(l) => return beneath::open_beneath(&self.dest_fd, rel, flags, mode, l.resolver),
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd was just returned by the kernel and is ours.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// The directory fd and final name to use with `*at` calls for `rel`.
    /// The user's own archives use the destination fd and the whole relative path
    /// (as GNU tar uses AT_FDCWD); untrusted archives resolve the parent beneath the root.
    fn parent_of(&self, rel: &CStr) -> io::Result<(Option<OwnedFd>, CString)> {
        match self.trust {
            Trust::Own => Ok((None, rel.to_owned())),
            Trust::Untrusted(l) => beneath::parent_beneath(&self.dest_fd, rel, l.resolver),
        }
    }

    fn dirfd_of(&self, parent: &Option<OwnedFd>) -> RawFd {
        parent.as_ref().map_or(self.dest_fd.as_raw_fd(), |f| f.as_raw_fd())
    }

    /// Make missing parent directories (GNU tar does this for archives that
    /// lack directory entries), with default modes.
    fn make_parents(&self, rel: &CStr) -> io::Result<()> {
        let bytes = rel.to_bytes();
        for (i, &b) in bytes.iter().enumerate() {
            if b == b'/' {
                let p = CString::new(&bytes[..i]).expect("no NUL");
                let (parent, name) = self.parent_of(&p)?;
                // SAFETY: valid fd and path.
                if unsafe { libc::mkdirat(self.dirfd_of(&parent), name.as_ptr(), 0o777) } < 0 {
                    let e = io::Error::last_os_error();
                    if e.raw_os_error() != Some(libc::EEXIST) {
                        return Err(e);
                    }
                }
            }
        }
        Ok(())
    }

    /// Run `op` for a new node; on ENOENT make the parents, on EEXIST remove
    /// the old non-directory node (GNU tar's default overwrite), then retry once.
    fn create_with_retry<T>(&self, rel: &CStr, mut op: impl FnMut() -> io::Result<T>) -> io::Result<T> {
        match op() {
            Ok(v) => Ok(v),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                self.make_parents(rel)?;
                op()
            }
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
                let (parent, name) = self.parent_of(rel)?;
                // SAFETY: valid fd and path; unlinkat never follows a final symlink.
                if unsafe { libc::unlinkat(self.dirfd_of(&parent), name.as_ptr(), 0) } < 0 {
                    return Err(e);
                }
                op()
            }
            Err(e) => Err(e),
        }
    }

    pub(super) fn regular(
        &mut self,
        rel: &CStr,
        data: &mut impl Read,
        mode: u32,
        owner: Option<(u32, u32)>,
        mtime: i64,
        archive: &Path,
    ) -> Result<(), UntarError> {
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOCTTY | libc::O_NONBLOCK;
        let fd = self
            .create_with_retry(rel, || self.open_rel(rel, flags, 0o600))
            .map_err(|e| self.fs_err("create", rel, e))?;
        let mut buf = std::mem::take(&mut self.buf);
        let mut written = 0u64;
        let res = (|| {
            loop {
                // Fill the buffer before writing so a file costs as few writes as possible.
                let mut filled = 0;
                while filled < buf.len() {
                    match data.read(&mut buf[filled..]) {
                        Ok(0) => break,
                        Ok(n) => filled += n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(source) => return Err(UntarError::Read { path: archive.into(), source }),
                    }
                }
                if filled == 0 {
                    return Ok(());
                }
                write_all(fd.as_raw_fd(), &buf[..filled]).map_err(|e| self.fs_err("write", rel, e))?;
                written += filled as u64;
                if filled < buf.len() {
                    return Ok(());
                }
            }
        })();
        self.buf = buf;
        self.stats.bytes += written;
        res?;
        // Same order as GNU tar 1.34: futimens, fchown, fchmod, close.
        let raw = fd.as_raw_fd();
        let times = mtime_times(mtime);
        // SAFETY: raw is an open fd; times is a valid [timespec; 2].
        check(unsafe { libc::futimens(raw, times.as_ptr()) }).map_err(|e| self.fs_err("set mtime of", rel, e))?;
        if let Some((uid, gid)) = owner {
            // SAFETY: raw is an open fd.
            check(unsafe { libc::fchown(raw, uid, gid) }).map_err(|e| self.fs_err("chown", rel, e))?;
        }
        // SAFETY: raw is an open fd.
        check(unsafe { libc::fchmod(raw, mode) }).map_err(|e| self.fs_err("chmod", rel, e))?;
        // SAFETY: we own the fd; close explicitly to see errors (NFS, quota).
        let fd = std::os::fd::IntoRawFd::into_raw_fd(fd);
        check(unsafe { libc::close(fd) }).map_err(|e| self.fs_err("close", rel, e))?;
        Ok(())
    }

    pub(super) fn directory(
        &mut self,
        rel: &CStr,
        mode: u32,
        owner: Option<(u32, u32)>,
        mtime: i64,
    ) -> Result<(), UntarError> {
        // GNU tar creates directories 0700 and fixes the mode once the contents are in.
        let mk = || {
            let (parent, name) = self.parent_of(rel)?;
            // SAFETY: valid fd and path.
            check(unsafe { libc::mkdirat(self.dirfd_of(&parent), name.as_ptr(), 0o700) })
        };
        match mk() {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                self.make_parents(rel).and_then(|_| mk()).map_err(|e| self.fs_err("create directory", rel, e))?
            }
            Err(e) => return Err(self.fs_err("create directory", rel, e)),
        }
        self.delayed.push(DelayedDir { rel: rel.to_owned(), mode, owner, mtime });
        Ok(())
    }

    pub(super) fn symlink(
        &mut self,
        rel: &CStr,
        target: &[u8],
        owner: Option<(u32, u32)>,
        mtime: i64,
    ) -> Result<(), UntarError> {
        let target = CString::new(target).map_err(|_| self.unsafe_entry(rel.to_bytes(), "NUL byte in link target"))?;
        let (parent, name) = self
            .create_with_retry(rel, || {
                let (parent, name) = self.parent_of(rel)?;
                // SAFETY: valid fd and paths.
                check(unsafe { libc::symlinkat(target.as_ptr(), self.dirfd_of(&parent), name.as_ptr()) })?;
                Ok((parent, name))
            })
            .map_err(|e| self.fs_err("create symlink", rel, e))?;
        let dfd = self.dirfd_of(&parent);
        if let Some((uid, gid)) = owner {
            // SAFETY: valid fd and path; does not follow the link.
            check(unsafe { libc::fchownat(dfd, name.as_ptr(), uid, gid, libc::AT_SYMLINK_NOFOLLOW) })
                .map_err(|e| self.fs_err("chown", rel, e))?;
        }
        let times = mtime_times(mtime);
        // SAFETY: valid fd, path and times; does not follow the link.
        check(unsafe { libc::utimensat(dfd, name.as_ptr(), times.as_ptr(), libc::AT_SYMLINK_NOFOLLOW) })
            .map_err(|e| self.fs_err("set mtime of", rel, e))?;
        Ok(())
    }

    pub(super) fn hardlink(&mut self, rel: &CStr, target: &CStr) -> Result<(), UntarError> {
        self.create_with_retry(rel, || {
            let (tparent, tname) = self.parent_of(target)?;
            let (parent, name) = self.parent_of(rel)?;
            // Untrusted: the target's parent was resolved beneath the root and
            // linkat(flags = 0) does not follow a final symlink, so a link can
            // only ever name a node inside the destination.
            // SAFETY: valid fds and paths.
            check(unsafe {
                libc::linkat(self.dirfd_of(&tparent), tname.as_ptr(), self.dirfd_of(&parent), name.as_ptr(), 0)
            })
        })
        .map_err(|e| self.fs_err("create hard link", rel, e))
    }

    pub(super) fn node(
        &mut self,
        rel: &CStr,
        ty: u32,
        mode: u32,
        dev: libc::dev_t,
        owner: Option<(u32, u32)>,
        mtime: i64,
    ) -> Result<(), UntarError> {
        let dfd = self.dest_fd.as_raw_fd();
        self.create_with_retry(rel, || {
            // SAFETY: valid fd and path.
            check(unsafe { libc::mknodat(dfd, rel.as_ptr(), ty | (mode & 0o777), dev) })
        })
        .map_err(|e| self.fs_err("create node", rel, e))?;
        if let Some((uid, gid)) = owner {
            // SAFETY: valid fd and path.
            check(unsafe { libc::fchownat(dfd, rel.as_ptr(), uid, gid, libc::AT_SYMLINK_NOFOLLOW) })
                .map_err(|e| self.fs_err("chown", rel, e))?;
        }
        // SAFETY: valid fd and path.
        check(unsafe { libc::fchmodat(dfd, rel.as_ptr(), mode, 0) }).map_err(|e| self.fs_err("chmod", rel, e))?;
        let times = mtime_times(mtime);
        // SAFETY: valid fd, path and times.
        check(unsafe { libc::utimensat(dfd, rel.as_ptr(), times.as_ptr(), libc::AT_SYMLINK_NOFOLLOW) })
            .map_err(|e| self.fs_err("set mtime of", rel, e))
    }

    /// Directory modes, owners and mtimes, deepest (latest) first, after all contents.
    pub(super) fn apply_delayed(&mut self) -> Result<(), UntarError> {
        let delayed = std::mem::take(&mut self.delayed);
        for d in delayed.iter().rev() {
            let times = mtime_times(d.mtime);
            match self.trust {
                Trust::Own => {
                    let dfd = self.dest_fd.as_raw_fd();
                    // SAFETY: valid fd, path and times.
                    check(unsafe { libc::utimensat(dfd, d.rel.as_ptr(), times.as_ptr(), libc::AT_SYMLINK_NOFOLLOW) })
                        .map_err(|e| self.fs_err("set mtime of", &d.rel, e))?;
                    if let Some((uid, gid)) = d.owner {
                        // SAFETY: valid fd and path.
                        check(unsafe { libc::fchownat(dfd, d.rel.as_ptr(), uid, gid, libc::AT_SYMLINK_NOFOLLOW) })
                            .map_err(|e| self.fs_err("chown", &d.rel, e))?;
                    }
                    // SAFETY: valid fd and path.
                    check(unsafe { libc::fchmodat(dfd, d.rel.as_ptr(), d.mode, 0) })
                        .map_err(|e| self.fs_err("chmod", &d.rel, e))?;
                }
                Trust::Untrusted(_) => {
                    let fd = self
                        .open_rel(&d.rel, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW, 0)
                        .map_err(|e| self.fs_err("open directory", &d.rel, e))?;
                    // SAFETY: open fd and valid times.
                    check(unsafe { libc::futimens(fd.as_raw_fd(), times.as_ptr()) })
                        .map_err(|e| self.fs_err("set mtime of", &d.rel, e))?;
                    // SAFETY: open fd.
                    check(unsafe { libc::fchmod(fd.as_raw_fd(), d.mode) })
                        .map_err(|e| self.fs_err("chmod", &d.rel, e))?;
                }
            }
        }
        Ok(())
    }
}

fn check(rc: i32) -> io::Result<()> {
    if rc < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

fn write_all(fd: RawFd, mut data: &[u8]) -> io::Result<()> {
    while !data.is_empty() {
        // SAFETY: fd is open; data is a valid slice.
        let n = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        data = &data[n as usize..];
    }
    Ok(())
}

/// atime untouched (UTIME_OMIT, as GNU tar does), mtime from the header.
fn mtime_times(mtime: i64) -> [libc::timespec; 2] {
    [
        libc::timespec { tv_sec: 0, tv_nsec: libc::UTIME_OMIT },
        libc::timespec { tv_sec: mtime as libc::time_t, tv_nsec: 0 },
    ]
}
