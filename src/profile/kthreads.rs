//! The kernel threads' side of a `+kthreads` profile: a system-wide session beside the
//! workers' one, of which only the kernel threads' stacks are kept. A filesystem's journal
//! commits (`jbd2`), its device's flushes and I/O (`loop` and block-layer workers) and
//! writeback run in kernel threads, on the workers' behalf but in no process of theirs:
//! what `barrier=0` takes away happens there, not in the workers.
//!
//! Which threads are kernel threads is read from /proc (`PF_KTHREAD`) before and after
//! the window: a kernel thread started inside it and gone before its end is not seen.
//! System-wide, they also carry other people's I/O: on a busy host that is in the profile too.

use std::collections::BTreeSet;

use super::WindowRequest;
use super::capability::Recorder;
use super::folded::Folded;
use super::offcpu::OffCpu;
use super::record::{Session, Target};
use super::whose::Whose;

/// A running system-wide session and the kernel threads there were when it started.
pub struct KernelThreads {
    session: Session,
    before: BTreeSet<u32>,
}

impl KernelThreads {
    /// Start sampling every CPU, in a scratch directory inside the window's.
    pub fn start(rec: &Recorder, req: &WindowRequest) -> Result<KernelThreads, String> {
        rec.system_wide.clone().map_err(|why| format!("the kernel threads need a system-wide session: {why}"))?;
        let before = pids()?;
        let session = Session::start(rec, req.frequency_hz, Target::System, &req.scratch.join("kthreads"), req.offcpu)
            .map_err(|why| format!("the kernel threads' session: {why}"))?;
        Ok(KernelThreads { session, before })
    }

    /// Tell perf to stop sampling ([`Session::interrupt`]).
    pub fn interrupt(&mut self) {
        self.session.interrupt();
    }

    /// Stop sampling ([`Session::stop`]).
    pub fn stop(&mut self) -> Result<(), String> {
        self.session.stop().map_err(|why| format!("the kernel threads' session: {why}"))
    }

    /// The kernel threads' on-CPU stacks and (off-CPU sessions) their uninterruptible waits.
    pub fn finish(self, rec: &Recorder) -> Result<(Folded, Option<Result<OffCpu, String>>), String> {
        let mut kernel = self.before;
        kernel.extend(pids()?);
        self.session
            .finish(rec, Whose::KernelThreads(&kernel))
            .map_err(|why| format!("the kernel threads' session: {why}"))
    }
}

fn pids() -> Result<BTreeSet<u32>, String> {
    crate::host::cpu::kernel_thread_pids().map_err(|e| format!("cannot list the kernel threads in /proc: {e}"))
}
