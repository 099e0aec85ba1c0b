//! The system calls of the ops, on a directory fd and a plain name fsbench made up:
//! nothing resolves a path of more than one component, and nothing follows a link.

use std::ffi::CStr;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

/// A file or directory name `%08d` (or a worker's own directory name) as a C string on the stack.
pub struct Name {
    buf: [u8; 24],
    /// Bytes before the NUL.
    len: u8,
}

/// A reading of the monotonic clock (`CLOCK_MONOTONIC`, as [`std::time::Instant`]) in
/// nanoseconds: the ops' timers. Taking the difference of two is a subtraction, where
/// `Instant::elapsed` normalises two timespecs, a cost paid twice per op.
#[derive(Clone, Copy)]
pub struct Tick(u64);

impl Tick {
    /// Now.
    #[inline]
    pub fn now() -> Tick {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: a valid timespec to fill; CLOCK_MONOTONIC always exists (vDSO, no system call).
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        Tick((ts.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(ts.tv_nsec as u64))
    }

    /// The time since `self`.
    #[inline]
    pub fn elapsed(self) -> std::time::Duration {
        Tick::now() - self
    }
}

impl std::ops::Sub for Tick {
    type Output = std::time::Duration;
    #[inline]
    fn sub(self, earlier: Tick) -> std::time::Duration {
        std::time::Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

impl Name {
    /// `%08d` of `serial`. Every op names its entry with this, outside the timed call but
    /// inside the engine's cost per op: the digits are written by hand, not by `fmt`.
    #[inline]
    pub fn serial(serial: u32) -> Name {
        if serial >= 100_000_000 {
            return Name::fmt(format_args!("{serial:08}"));
        }
        const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
            2021222324252627282930313233343536373839\
            4041424344454647484950515253545556575859\
            6061626364656667686970717273747576777879\
            8081828384858687888990919293949596979899";
        let mut buf = [0u8; 24];
        let mut n = serial as usize;
        for i in (0..4).rev() {
            let d = n % 100 * 2;
            buf[i * 2] = PAIRS[d];
            buf[i * 2 + 1] = PAIRS[d + 1];
            n /= 100;
        }
        Name { buf, len: 8 }
    }

    /// The name of directory `n` made by worker `worker` (`w3.17`): never a `%08d` name.
    pub fn worker_dir(worker: u32, n: u32) -> Name {
        Name::fmt(format_args!("w{worker}.{n}"))
    }

    fn fmt(args: std::fmt::Arguments<'_>) -> Name {
        use std::io::Write;
        let mut buf = [0u8; 24];
        let mut w = &mut buf[..23];
        w.write_fmt(args).expect("a name fits in 23 bytes");
        let len = 23 - w.len();
        Name { buf, len: len as u8 }
    }

    /// The name as a C string.
    #[inline]
    pub fn as_cstr(&self) -> &CStr {
        let len = self.len as usize;
        debug_assert!(self.buf[len] == 0 && !self.buf[..len].contains(&0));
        // SAFETY: `buf[..len]` are the name's digits and letters (no NUL) and `buf[len]` is 0.
        unsafe { CStr::from_bytes_with_nul_unchecked(&self.buf[..=len]) }
    }
}

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 { Err(io::Error::last_os_error()) } else { Ok(r) }
}

/// openat(2) `name` in `dir`, never following a link; `O_CLOEXEC | O_NOFOLLOW` are added.
pub fn openat(dir: RawFd, name: &CStr, flags: i32, mode: u32) -> io::Result<OwnedFd> {
    // SAFETY: a valid C string; the kernel returns a new fd or -1.
    let fd = check(unsafe {
        libc::openat(dir, name.as_ptr(), flags | libc::O_CLOEXEC | libc::O_NOFOLLOW, mode as libc::c_uint)
    })?;
    // SAFETY: a fresh fd owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// pread(2) until `len` bytes or the end of the file, in `chunk`-sized calls; bytes read.
pub fn read_from_start(fd: RawFd, buf: &mut [u8], len: u64, chunk: usize) -> io::Result<u64> {
    let chunk = chunk.min(buf.len()).max(1);
    let mut off: u64 = 0;
    while off < len {
        let want = chunk.min((len - off).min(usize::MAX as u64) as usize);
        // SAFETY: buf has at least `want` bytes.
        let n = unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), want, off as libc::off_t) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            break;
        }
        off += n as u64;
    }
    Ok(off)
}

/// pwrite(2) `len` bytes from offset 0 in `chunk`-sized calls (from `buf`, reused).
pub fn write_from_start(fd: RawFd, buf: &[u8], len: u64, chunk: usize) -> io::Result<u64> {
    let chunk = chunk.min(buf.len()).max(1);
    let mut off: u64 = 0;
    while off < len {
        let want = chunk.min((len - off).min(usize::MAX as u64) as usize);
        // SAFETY: buf has at least `want` bytes.
        let n = unsafe { libc::pwrite(fd, buf.as_ptr().cast(), want, off as libc::off_t) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        off += n as u64;
    }
    Ok(off)
}

/// lseek(2) to the end, then write(2) `len(size)` bytes in `chunk`-sized calls, as
/// filebench's append; `size` is the file's size the seek found.
pub fn append(fd: RawFd, buf: &[u8], len: impl FnOnce(u64) -> u64, chunk: usize) -> io::Result<u64> {
    // SAFETY: plain syscall on an fd we hold.
    let end = unsafe { libc::lseek(fd, 0, libc::SEEK_END) };
    if end < 0 {
        return Err(io::Error::last_os_error());
    }
    let len = len(end as u64);
    let chunk = chunk.min(buf.len()).max(1);
    let mut done: u64 = 0;
    while done < len {
        let want = chunk.min((len - done).min(usize::MAX as u64) as usize);
        // SAFETY: buf has at least `want` bytes.
        let n = unsafe { libc::write(fd, buf.as_ptr().cast(), want) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        done += n as u64;
    }
    Ok(done)
}

/// fsync(2) or fdatasync(2).
pub fn sync(fd: RawFd, data_only: bool) -> io::Result<()> {
    // SAFETY: plain syscalls on an fd we hold.
    check(unsafe { if data_only { libc::fdatasync(fd) } else { libc::fsync(fd) } }).map(drop)
}

/// fstatat(2) without following a final link.
pub fn stat_at(dir: RawFd, name: &CStr) -> io::Result<libc::stat> {
    // SAFETY: st is plain data filled by the kernel; name is a valid C string.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    check(unsafe { libc::fstatat(dir, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) })?;
    Ok(st)
}

/// unlinkat(2) of a file (`dir_entry` false) or a directory.
pub fn unlink_at(dir: RawFd, name: &CStr, directory: bool) -> io::Result<()> {
    let flags = if directory { libc::AT_REMOVEDIR } else { 0 };
    // SAFETY: a valid C string.
    check(unsafe { libc::unlinkat(dir, name.as_ptr(), flags) }).map(drop)
}

/// renameat(2).
pub fn rename_at(from_dir: RawFd, from: &CStr, to_dir: RawFd, to: &CStr) -> io::Result<()> {
    // SAFETY: valid C strings.
    check(unsafe { libc::renameat(from_dir, from.as_ptr(), to_dir, to.as_ptr()) }).map(drop)
}

/// linkat(2) without following a link.
pub fn link_at(from_dir: RawFd, from: &CStr, to_dir: RawFd, to: &CStr) -> io::Result<()> {
    // SAFETY: valid C strings; flags 0: the source link itself, never its target.
    check(unsafe { libc::linkat(from_dir, from.as_ptr(), to_dir, to.as_ptr(), 0) }).map(drop)
}

/// symlinkat(2): a link whose text is `target` (a plain name; fsbench never follows it).
pub fn symlink_at(target: &CStr, dir: RawFd, name: &CStr) -> io::Result<()> {
    // SAFETY: valid C strings.
    check(unsafe { libc::symlinkat(target.as_ptr(), dir, name.as_ptr()) }).map(drop)
}

/// mkdirat(2).
pub fn mkdir_at(dir: RawFd, name: &CStr, mode: u32) -> io::Result<()> {
    // SAFETY: a valid C string.
    check(unsafe { libc::mkdirat(dir, name.as_ptr(), mode as libc::mode_t) }).map(drop)
}

/// Open directory `dir` itself for reading and read every entry (getdents64); entries seen.
pub fn read_dir(dir: RawFd, buf: &mut [u8]) -> io::Result<u64> {
    let fd = openat(dir, c".", libc::O_RDONLY | libc::O_DIRECTORY, 0)?;
    let raw = std::os::fd::AsRawFd::as_raw_fd(&fd);
    let mut entries = 0u64;
    loop {
        // SAFETY: buf is writable for its length; getdents64 fills at most that.
        let n = unsafe { libc::syscall(libc::SYS_getdents64, raw, buf.as_mut_ptr(), buf.len()) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n == 0 {
            break;
        }
        let mut off = 0usize;
        while off + 19 <= n as usize {
            // d_reclen is the u16 at offset 16 of struct linux_dirent64.
            let reclen = u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize;
            if reclen == 0 {
                break;
            }
            entries += 1;
            off += reclen;
        }
    }
    Ok(entries)
}

/// ftruncate(2).
pub fn truncate(fd: RawFd, size: u64) -> io::Result<()> {
    // SAFETY: plain syscall on an fd we hold.
    check(unsafe { libc::ftruncate(fd, size as libc::off_t) }).map(drop)
}

/// fchmodat(2) (the entry is known not to be a link).
pub fn chmod_at(dir: RawFd, name: &CStr, mode: u32) -> io::Result<()> {
    // SAFETY: a valid C string.
    check(unsafe { libc::fchmodat(dir, name.as_ptr(), mode as libc::mode_t, 0) }).map(drop)
}

/// fchownat(2) without following a link.
pub fn chown_at(dir: RawFd, name: &CStr, uid: u32, gid: u32) -> io::Result<()> {
    // SAFETY: a valid C string.
    check(unsafe { libc::fchownat(dir, name.as_ptr(), uid, gid, libc::AT_SYMLINK_NOFOLLOW) }).map(drop)
}

/// User and system CPU time of the calling thread, microseconds.
pub fn thread_cpu_us() -> (u64, u64) {
    // SAFETY: ru is plain data filled by the kernel.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    (crate::host::cpu::timeval_us(ru.ru_utime), crate::host::cpu::timeval_us(ru.ru_stime))
}

/// Raise the soft limit of open files to at least `want` (up to the hard limit); the
/// limit in effect afterwards.
pub fn raise_nofile(want: u64) -> u64 {
    // SAFETY: rl is plain data.
    let mut rl: libc::rlimit = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } < 0 {
        return 1024;
    }
    if rl.rlim_cur < want && rl.rlim_cur < rl.rlim_max {
        let new = libc::rlimit { rlim_cur: want.min(rl.rlim_max), rlim_max: rl.rlim_max };
        // SAFETY: a valid rlimit.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &new) } == 0 {
            return new.rlim_cur;
        }
    }
    rl.rlim_cur
}

/// `name` as a C string if it is one plain file name (the fileset's directory).
pub use crate::beneath::plain_name as plain;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serial_names_are_eight_digits_as_printf_writes_them() {
        for n in [0, 1, 7, 42, 1000, 12_345_678, 99_999_999, 100_000_000, 123_456_789, u32::MAX] {
            assert_eq!(Name::serial(n).as_cstr().to_str().unwrap(), format!("{n:08}"));
        }
        assert_eq!(Name::worker_dir(3, 17).as_cstr().to_str().unwrap(), "w3.17");
    }
}
