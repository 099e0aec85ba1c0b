//! Child processes that die with fsbench and stop when it is interrupted.
//!
//! A signal may reach the main process alone (`kill <pid>`, `docker stop`, systemd,
//! Kubernetes), and fsbench may be SIGKILLed. So every child it starts for a cell
//! (lat_fs workers, `exec` steps, qemu) gets its own process group, so that fsbench
//! and not the terminal decides when it stops, and a parent-death signal, so that
//! it cannot outlive a SIGKILLed fsbench; with a cell cgroup in force
//! ([`super::child_cgroup`]) it joins that group before exec. Waiting for it polls the interrupt flag
//! through a pidfd, and an interrupt stops the whole group: SIGTERM, a grace
//! period, SIGKILL. It starts with SIGINT, SIGTERM and SIGHUP at their default action
//! ([`crate::signals::reset_in_child`]), so an interrupt sent to the child itself is never lost.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::workload::rusage::{self, Reaped};

/// How long a stopped child gets between SIGTERM and SIGKILL.
pub const GRACE: Duration = Duration::from_millis(500);

/// Start `cmd` in its own process group, killed (SIGKILL) when the spawning thread of
/// fsbench dies. Call it from the thread that lives as long as the child should
/// (the main thread): the kernel's parent-death signal follows the thread.
pub fn contain(cmd: &mut Command) -> &mut Command {
    // SAFETY: getpid is async-signal-safe.
    let parent = unsafe { libc::getpid() };
    // The cell's cgroup, if one is in force on this thread (see `child_cgroup`).
    let cgroup = super::child_cgroup::join_fds();
    cmd.process_group(0);
    // SAFETY: the closure runs between fork and exec and calls only async-signal-safe
    // functions (signal, sigprocmask, write, prctl, getppid); it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            // Before anything else: fsbench's handlers (and any inherited ignore) off, so
            // that an interrupt reaching this child from now on stops it.
            crate::signals::reset_in_child()?;
            // Then: a child that cannot join its cell's group must not run at all.
            super::child_cgroup::join_now(&cgroup)?;
            arm_parent_death()?;
            // The parent may have died before the prctl: then nobody will signal us.
            if libc::getppid() != parent {
                return Err(io::Error::other("fsbench exited before its child started"));
            }
            Ok(())
        })
    }
}

/// Ask the kernel for SIGKILL when our parent dies. Changing credentials (seteuid)
/// clears the setting, so a child that switches ids calls this again afterwards.
pub fn arm_parent_death() -> io::Result<()> {
    // SAFETY: prctl with PR_SET_PDEATHSIG takes a signal number; no pointers.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// How a waited-for child ended.
#[derive(Debug)]
pub enum Waited {
    /// It exited (or died) on its own.
    Exited(Reaped),
    /// `cancel` said stop: its group was stopped and it was reaped.
    Stopped,
}

/// A pidfd for `pid`, readable once it has exited.
pub fn pidfd(pid: libc::pid_t) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this fd to us; nobody else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Wait up to `timeout` for the pidfd to become readable (the child exited).
fn exited_within(fd: &OwnedFd, timeout: Duration) -> io::Result<bool> {
    let mut p = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    let ms = timeout.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
    // SAFETY: one valid pollfd for the duration of the call.
    let r = unsafe { libc::poll(&mut p, 1, ms) };
    if r < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted { Ok(false) } else { Err(e) };
    }
    Ok(r > 0)
}

/// Wait for child `pid` (started with [`contain`]), checking `cancel` every
/// [`crate::signals::POLL`]; when it says stop, [`stop_group`] and reap it.
/// The caller owns `pid` as an unreaped child and must not wait for it again.
pub fn wait_or_stop(pid: libc::pid_t, cancel: &dyn Fn() -> bool) -> io::Result<Waited> {
    let fd = match pidfd(pid) {
        Ok(fd) => fd,
        // Kernels before 5.3 have no pidfd_open: poll the child's state instead.
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => return wait_or_stop_polling(pid, cancel),
        Err(e) => return Err(e),
    };
    loop {
        if cancel() {
            stop_group(pid, &fd);
            rusage::wait4(pid)?;
            return Ok(Waited::Stopped);
        }
        if exited_within(&fd, crate::signals::POLL)? {
            return rusage::wait4(pid).map(Waited::Exited);
        }
    }
}

/// [`wait_or_stop`] without a pidfd: waitid(WNOWAIT) every [`crate::signals::POLL`].
fn wait_or_stop_polling(pid: libc::pid_t, cancel: &dyn Fn() -> bool) -> io::Result<Waited> {
    loop {
        // SAFETY: siginfo is plain data; WNOWAIT leaves the child to be reaped by wait4.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let r = unsafe {
            libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT)
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        // SAFETY: waitid filled `info` for a CLD_* event (or left it zeroed: si_pid 0).
        } else if unsafe { info.si_pid() } == pid {
            return rusage::wait4(pid).map(Waited::Exited);
        }
        if cancel() {
            // SAFETY: signalling our own child's group; errors are harmless.
            unsafe { libc::kill(-pid, libc::SIGTERM) };
            std::thread::sleep(GRACE);
            // SAFETY: as above; the unreaped leader keeps the group id ours.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            rusage::wait4(pid)?;
            return Ok(Waited::Stopped);
        }
        std::thread::sleep(crate::signals::POLL);
    }
}

/// Stop the process group led by `pid`: SIGTERM, up to [`GRACE`] for the leader to
/// exit, then SIGKILL to whatever is left of the group. Does not reap the leader
/// (its zombie keeps the group id from being reused until then).
pub fn stop_group(pid: libc::pid_t, fd: &OwnedFd) {
    // SAFETY: kill(2) with a negative pid signals the group; errors (ESRCH) are harmless.
    unsafe { libc::kill(-pid, libc::SIGTERM) };
    let until = Instant::now() + GRACE;
    while Instant::now() < until {
        if exited_within(fd, until.saturating_duration_since(Instant::now())).unwrap_or(true) {
            break;
        }
    }
    // SAFETY: as above; the leader is at worst a zombie, so -pid still names our group.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
}

#[cfg(test)]
// The children are reaped by pid (waitpid inside `wait_or_stop`), not through `Child::wait`.
#[allow(clippy::zombie_processes)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn contained_child_is_its_own_group_and_exits_normally() {
        let child = contain(Command::new("sh").args(["-c", "exit 3"])).spawn().unwrap();
        let pid = child.id() as libc::pid_t;
        match wait_or_stop(pid, &|| false).unwrap() {
            Waited::Exited(r) => assert_eq!(libc::WEXITSTATUS(r.status), 3),
            Waited::Stopped => panic!("not cancelled"),
        }
    }

    #[test]
    fn without_a_pidfd_the_child_is_still_waited_for_and_stopped() {
        let child = contain(Command::new("sh").args(["-c", "exit 4"])).spawn().unwrap();
        match wait_or_stop_polling(child.id() as libc::pid_t, &|| false).unwrap() {
            Waited::Exited(r) => assert_eq!(libc::WEXITSTATUS(r.status), 4),
            Waited::Stopped => panic!("not cancelled"),
        }
        let child = contain(Command::new("sleep").arg("30")).spawn().unwrap();
        let t0 = Instant::now();
        assert!(matches!(wait_or_stop_polling(child.id() as libc::pid_t, &|| true).unwrap(), Waited::Stopped));
        assert!(t0.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn cancel_stops_the_child_and_its_descendants_promptly() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("grandchild");
        // The grandchild ignores nothing; it must die with its group, not linger.
        let script = format!("sleep 30 & echo $! > {}; wait", marker.display());
        let child = contain(Command::new("sh").args(["-c", &script])).spawn().unwrap();
        let pid = child.id() as libc::pid_t;
        let polls = Cell::new(0);
        let t0 = Instant::now();
        let cancel = || {
            polls.set(polls.get() + 1);
            polls.get() > 3 && marker.exists()
        };
        assert!(matches!(wait_or_stop(pid, &cancel).unwrap(), Waited::Stopped));
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
        let grandchild: i32 = std::fs::read_to_string(&marker).unwrap().trim().parse().unwrap();
        // Reaped by init eventually; it must at least be dead (a zombie or gone).
        let gone = || {
            std::fs::read_to_string(format!("/proc/{grandchild}/stat"))
                .map(|s| s.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
                .unwrap_or(true)
        };
        let t1 = Instant::now();
        while !gone() && t1.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(gone(), "the grandchild {grandchild} outlived its stopped group");
    }
}
