//! The cgroup that children started for a cell join: while a [`CgroupScope`] lives, every
//! child [`super::child::contain`] starts on this thread writes itself into the scope's
//! `cgroup.procs` files between fork and exec, and fails to start if the kernel refuses.
//!
//! Why a scope and not a parameter: every process fsbench starts for a cell (lat_fs
//! workers, steps copies, `exec` children) already goes through `contain`, so a scope
//! around the cell's workload cannot miss one, and a worker is in the group before its
//! first instruction (no window in which it measures outside, as moving it by pid after
//! spawn would leave). Thread-local, because children are started from the thread that
//! runs the cell and a test's scope must not capture another test's children.

use std::cell::RefCell;
use std::fs::OpenOptions;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::PathBuf;

thread_local! {
    /// The open `cgroup.procs` files of the scope in force on this thread.
    static PROCS: RefCell<Vec<OwnedFd>> = const { RefCell::new(Vec::new()) };
}

/// While alive, children started on this thread join the group; dropping it ends that.
#[derive(Debug)]
pub struct CgroupScope {
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Drop for CgroupScope {
    fn drop(&mut self) {
        PROCS.with(|p| p.borrow_mut().clear());
    }
}

/// Open `procs` (one `cgroup.procs` per hierarchy of the cell's group) for the children
/// started on this thread until the scope is dropped. `None` when there is no group.
pub fn enter(procs: &[PathBuf]) -> io::Result<Option<CgroupScope>> {
    if procs.is_empty() {
        return Ok(None);
    }
    let mut fds = Vec::with_capacity(procs.len());
    for p in procs {
        // O_CLOEXEC (std's default): the worker joins before exec and keeps no handle on the group.
        let f = OpenOptions::new()
            .write(true)
            .open(p)
            .map_err(|e| io::Error::new(e.kind(), format!("open {}: {e}", p.display())))?;
        fds.push(OwnedFd::from(f));
    }
    PROCS.with(|p| {
        let mut p = p.borrow_mut();
        if !p.is_empty() {
            return Err(io::Error::other("a cgroup scope is already in force on this thread"));
        }
        *p = fds;
        Ok(())
    })?;
    Ok(Some(CgroupScope { _not_send: std::marker::PhantomData }))
}

/// The descriptors a child started now must write itself into (the parent's side; they
/// stay open while the scope lives, which outlasts the spawn).
pub(super) fn join_fds() -> Vec<RawFd> {
    PROCS.with(|p| p.borrow().iter().map(AsRawFd::as_raw_fd).collect())
}

/// In the child between fork and exec: write `0` (the writing process) into each file.
/// Async-signal-safe: write(2) only, no allocation.
pub(super) fn join_now(fds: &[RawFd]) -> io::Result<()> {
    for &fd in fds {
        // SAFETY: writes one byte from a static buffer to a descriptor the parent keeps open.
        if unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) } != 1 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
