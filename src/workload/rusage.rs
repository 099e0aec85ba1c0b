//! Reaping children with their resource usage, as time(1) and lmbench measure it.

use std::io;

/// What wait4(2) reports about a reaped child.
#[derive(Debug, Clone, Copy)]
pub struct Reaped {
    /// The raw wait status (use libc::WIFEXITED and friends).
    pub status: libc::c_int,
    /// User CPU time of the child (and the descendants it waited for), microseconds.
    pub user_us: u64,
    /// System CPU time, microseconds.
    pub sys_us: u64,
    /// Maximum resident set size in KiB.
    pub max_rss_kib: u64,
}

pub use crate::host::cpu::timeval_us;

/// Block until child `pid` exits and return its status and rusage, retrying on EINTR.
///
/// The caller must own `pid` as an unreaped child and must not wait for it again.
pub fn wait4(pid: libc::pid_t) -> io::Result<Reaped> {
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain old data; zeroed is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: status and ru are valid out-pointers for the duration of the call.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            return Ok(Reaped {
                status,
                user_us: timeval_us(ru.ru_utime),
                sys_us: timeval_us(ru.ru_stime),
                max_rss_kib: ru.ru_maxrss as u64,
            });
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}
