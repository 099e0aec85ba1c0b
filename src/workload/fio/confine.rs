//! fio where it cannot reach anything but the cell: run as root, fio starts in a private
//! mount namespace in which every mount is read-only except the directories it is given
//! (the cell's task directories and its output directory), bind-mounted writable.
//!
//! Why: fsbench reads fio's job-file format and allow-lists a bundle's options, but
//! fio has hundreds of options and adds more; a file it opens for writing through one
//! nobody read (or a name fsbench reads otherwise than fio) now fails with EROFS
//! instead of writing on the host. Between fork and exec, in the child only:
//! `unshare(CLONE_NEWNS)`; `/` made private recursively (nothing propagates back to
//! the host); each writable directory bind-mounted onto itself; every mount of the
//! namespace made read-only recursively (`mount_setattr`, Linux 5.12); the read-only
//! flag cleared again on the bind mounts only. A step that fails stops fio from
//! starting: it never runs unconfined instead. The namespace ends with fio.
//!
//! fio also starts as the first process of a pid namespace of its own
//! (`CLONE_NEWPID`): it sees and can signal none of the host's processes, and when it
//! dies (however: fsbench's SIGKILL reaches it through a parent-death signal) the
//! kernel kills every job process it forked, which a parent-death signal alone does not
//! reach. The child fsbench started stays outside as a small waiter: it ignores
//! SIGINT/SIGTERM/SIGHUP (fio, which handles them, gets them through the process
//! group and stops cleanly), waits for fio and exits with its status (128 + signal
//! when fio was killed).
//!
//! What it does not do: a device node stays writable on a read-only mount (the kernel
//! checks the mount only for files, directories and links), so `/dev` is reachable
//! through a path, which a job cannot name (absolute `filename`s and section names
//! that are paths are refused: `scenario::validate::fio`). Not as a normal user, who
//! cannot unshare a mount namespace: fio then has that user's rights. Not inside a
//! `[[kernels]]` guest: the virtual machine is the confinement there.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

/// `struct mount_attr` of linux/mount.h (the first version, 32 bytes).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;

/// Whether fio started now would be confined: fsbench runs as root, and not as the
/// runner inside a `[[kernels]]` guest, where the virtual machine is the confinement
/// (nothing of the host is mounted there) and the guest's kernel may predate
/// `mount_setattr`.
pub fn applies() -> bool {
    crate::host::is_root() && std::env::var_os(crate::host::IN_GUEST_ENV).is_none()
}

/// Make `cmd` start in a private mount namespace where only `writable` can be written.
/// Call after [`crate::workload::child::contain`], so the child has joined its cell's
/// cgroup and armed its parent-death signal first. A no-op unless [`applies`].
pub fn confine(cmd: &mut Command, writable: &[&Path]) -> io::Result<()> {
    if !applies() {
        return Ok(());
    }
    let cstr = |p: &Path| {
        CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::other(format!("{} contains NUL", p.display())))
    };
    let dirs: Vec<CString> = writable.iter().map(|p| cstr(p)).collect::<io::Result<_>>()?;
    let root = CString::new("/").expect("no NUL");
    // SAFETY: the closure runs between fork and exec and calls only system calls on
    // memory prepared here (no allocation, no lock).
    unsafe {
        cmd.pre_exec(move || {
            if libc::unshare(libc::CLONE_NEWNS) != 0 {
                return Err(io::Error::last_os_error());
            }
            let none = std::ptr::null::<libc::c_char>();
            if libc::mount(none, root.as_ptr(), none, libc::MS_REC | libc::MS_PRIVATE, std::ptr::null()) != 0 {
                return Err(io::Error::last_os_error());
            }
            for d in &dirs {
                if libc::mount(d.as_ptr(), d.as_ptr(), none, libc::MS_BIND | libc::MS_REC, std::ptr::null()) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            let readonly = MountAttr { attr_set: MOUNT_ATTR_RDONLY, attr_clr: 0, propagation: 0, userns_fd: 0 };
            set_attr(&root, &readonly)?;
            let writable = MountAttr { attr_set: 0, attr_clr: MOUNT_ATTR_RDONLY, propagation: 0, userns_fd: 0 };
            for d in &dirs {
                set_attr(d, &writable)?;
            }
            enter_pid_namespace()
        });
    }
    Ok(())
}

/// Between fork and exec: unshare a pid namespace and fork its first process, which
/// returns to exec fio; this process waits for it and exits with its status. Only
/// async-signal-safe system calls, no allocation.
fn enter_pid_namespace() -> io::Result<()> {
    // SAFETY: system calls on plain integers and local arrays; the forked child returns
    // to std's exec path, the waiter never returns.
    unsafe {
        if libc::unshare(libc::CLONE_NEWPID) != 0 {
            return Err(io::Error::last_os_error());
        }
        // Held open by the waiter only: fio sees it at EOF once the waiter is gone.
        let mut alive = [0 as libc::c_int; 2];
        if libc::pipe2(alive.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(io::Error::last_os_error());
        }
        let fio = libc::fork();
        if fio < 0 {
            return Err(io::Error::last_os_error());
        }
        if fio == 0 {
            libc::close(alive[1]);
            crate::workload::child::arm_parent_death()?;
            // The waiter died before the prctl: nobody would kill this namespace.
            let mut p = libc::pollfd { fd: alive[0], events: libc::POLLIN, revents: 0 };
            if libc::poll(&mut p, 1, 0) != 0 {
                return Err(io::Error::other("fio's waiter exited before fio started"));
            }
            return Ok(());
        }
        wait_and_pass_on(fio, alive[1])
    }
}

/// The waiter: every descriptor but `keep` closed (std's exec-error pipe among them, so
/// that the spawn returns now), the stop signals ignored, fio waited for, its status ours.
unsafe fn wait_and_pass_on(fio: libc::pid_t, keep: libc::c_int) -> ! {
    // SAFETY: as in enter_pid_namespace; _exit never returns.
    unsafe {
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::signal(sig, libc::SIG_IGN);
        }
        let k = keep as libc::c_uint;
        let below =
            if k > 3 { libc::syscall(libc::SYS_close_range, 3 as libc::c_uint, k - 1, 0 as libc::c_uint) } else { 0 };
        let above = libc::syscall(libc::SYS_close_range, k + 1, libc::c_uint::MAX, 0 as libc::c_uint);
        if below != 0 || above != 0 {
            // Before Linux 5.9: one by one, as far as the usual limit.
            for fd in (3..4096).filter(|fd| *fd != keep) {
                libc::close(fd);
            }
        }
        let mut status: libc::c_int = 0;
        loop {
            let r = libc::waitpid(fio, &mut status, 0);
            if r == fio {
                break;
            }
            if r < 0 && *libc::__errno_location() != libc::EINTR {
                libc::_exit(127);
            }
        }
        if libc::WIFEXITED(status) {
            libc::_exit(libc::WEXITSTATUS(status));
        }
        libc::_exit(128 + libc::WTERMSIG(status));
    }
}

/// `mount_setattr(AT_FDCWD, path, AT_RECURSIVE, attr)`: async-signal-safe.
fn set_attr(path: &CString, attr: &MountAttr) -> io::Result<()> {
    // SAFETY: a NUL-terminated path and a mount_attr of the size passed, both alive for the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            libc::AT_RECURSIVE as libc::c_uint,
            attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A confined child writes in its writable directory and nowhere else (not even
    /// beside it), and what it wrote is seen outside; its mounts stay in its namespace.
    #[test]
    fn a_confined_child_writes_only_where_it_may() {
        if !applies() {
            eprintln!("skipped: a mount namespace needs root");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let (inside, outside) = (dir.path().join("cell"), dir.path().join("outside"));
        std::fs::create_dir_all(&inside).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let script = format!(
            "echo in > {0}/f && ! echo out > {1}/f 2>/dev/null && ! touch {2}/beside 2>/dev/null",
            inside.display(),
            outside.display(),
            dir.path().display()
        );
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(&script);
        confine(&mut cmd, &[&inside]).unwrap();
        let status = cmd.status().unwrap();
        assert!(status.success(), "{script}");
        assert_eq!(std::fs::read_to_string(inside.join("f")).unwrap(), "in\n");
        assert!(!outside.join("f").exists() && !dir.path().join("beside").exists());
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        assert!(!mounts.contains(&inside.display().to_string()), "{mounts}");
    }
}
