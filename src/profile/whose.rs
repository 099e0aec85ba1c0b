//! Which samples of a profiled window are the cell's: the workers', not fsbench's own
//! supervising thread's; and, in a `+kthreads` profile's system-wide session, the kernel
//! threads' (shared by the on-CPU fold in [`super::record`] and the off-CPU one in
//! [`super::offcpu`]).

use std::collections::BTreeSet;

/// Which samples are the cell's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Whose<'a> {
    /// The workers, in a session attached to fsbench and inherited by what it starts.
    Workers {
        /// fsbench's own process id: its samples are the supervisor's, not the workload's...
        pid: u32,
        /// ...except when the workload runs in-process (one steps copy): then its threads
        /// (the cell's and untar's gunzip thread) are the workload...
        own_process: bool,
        /// ...or, when the workload names its threads (the op mix's `ops-N`), those
        /// threads only (not the supervising thread), merged under the name without its number.
        threads: Option<&'static str>,
    },
    /// The kernel threads of a system-wide session: these process ids (read from /proc
    /// around the window), each merged under its kind ([`kthread_root`]).
    KernelThreads(&'a BTreeSet<u32>),
}

impl Whose<'_> {
    /// The root frame of a stack of process `pid`'s thread `comm`, or `None` when the
    /// stack is not the cell's.
    pub fn root(&self, pid: u32, comm: &str) -> Option<String> {
        match *self {
            // A workload that names its worker threads: those threads alone, in fsbench or
            // in its worker processes (`processes`), whose main threads only supervise
            // (start the workers, wait, send their figures back).
            Whose::Workers { threads: Some(prefix), .. } => {
                comm.starts_with(prefix).then(|| prefix.trim_end_matches('-').to_string())
            }
            Whose::Workers { pid: own, own_process, threads: None } => {
                (pid != own || own_process).then(|| comm.to_string())
            }
            Whose::KernelThreads(pids) => pids.contains(&pid).then(|| kthread_root(comm)),
        }
    }

    /// Whether a switch-out in `state` (sched_switch's `prev_state`: `S`, `D`, `I`, …)
    /// is time the cell waited. A worker's every sleep is; a kernel thread asleep in `S`
    /// or `I` waits for work (a kworker's idle loop, jbd2 between commits, for the whole
    /// window), so only its uninterruptible waits (`D`: I/O, locks) are the filesystem's.
    pub fn counts_wait(&self, state: &str) -> bool {
        match self {
            Whose::Workers { .. } => true,
            Whose::KernelThreads(_) => state.starts_with('D'),
        }
    }
}

/// A kernel thread's root frame: its kind in brackets, as `ps` shows kernel threads,
/// without the instance (device, CPU, pool) that differs between cells and arms:
/// `[jbd2]` for `jbd2/loop3-8`, `[kworker]` for `kworker/u4:2-loop3`, `[loop]` for `loop3`.
pub fn kthread_root(comm: &str) -> String {
    let kind = match comm.split_once('/') {
        // The part before the slash is the kind (`jbd2`, `kworker`, `ksoftirqd`).
        Some((kind, _)) => kind,
        // Else the instance is a number at the end (`loop3`, `kswapd0`, `kdamond.0`).
        None => comm.trim_end_matches(|c: char| c.is_ascii_digit()).trim_end_matches(['.', '-', '_']),
    };
    format!("[{}]", if kind.is_empty() { comm } else { kind })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_threads_merge_in_fsbench_and_in_its_worker_processes() {
        let w = Whose::Workers { pid: 100, own_process: true, threads: Some("ops-") };
        assert_eq!(w.root(100, "ops-3").as_deref(), Some("ops"));
        assert_eq!(w.root(100, "fsbench"), None);
        assert_eq!(w.root(4242, "ops-17").as_deref(), Some("ops"));
        // A worker process's main thread supervises: it is not the workload.
        assert_eq!(w.root(4242, "fsbench-ops"), None);
    }

    #[test]
    fn unnamed_workers_are_the_child_processes_or_fsbench_itself() {
        // lat_fs, fio: the workload runs in child processes, fsbench only supervises.
        let w = Whose::Workers { pid: 100, own_process: false, threads: None };
        assert_eq!(w.root(100, "fsbench"), None);
        assert_eq!(w.root(4242, "lat_fs").as_deref(), Some("lat_fs"));
        // One steps copy: fsbench's own threads are the workload.
        let w = Whose::Workers { pid: 100, own_process: true, threads: None };
        assert_eq!(w.root(100, "fsbench").as_deref(), Some("fsbench"));
        assert_eq!(w.root(4242, "gzip").as_deref(), Some("gzip"));
    }

    #[test]
    fn kernel_threads_merge_by_kind_and_only_their_uninterruptible_waits_count() {
        let pids: BTreeSet<u32> = [40, 41, 42, 43].into();
        let k = Whose::KernelThreads(&pids);
        assert_eq!(k.root(40, "jbd2/loop3-8").as_deref(), Some("[jbd2]"));
        assert_eq!(k.root(41, "kworker/u4:2-loop3").as_deref(), Some("[kworker]"));
        assert_eq!(k.root(42, "loop12").as_deref(), Some("[loop]"));
        assert_eq!(k.root(43, "rcu_sched").as_deref(), Some("[rcu_sched]"));
        assert_eq!(k.root(43, "kdamond.0").as_deref(), Some("[kdamond]"));
        assert_eq!(k.root(43, "ksoftirqd/1").as_deref(), Some("[ksoftirqd]"));
        // Not a kernel thread of the set: a user process, the idle task (pid 0).
        assert_eq!(k.root(4242, "lat_fs"), None);
        assert_eq!(k.root(0, "swapper/1"), None);
        assert!(k.counts_wait("D") && !k.counts_wait("S") && !k.counts_wait("I"));
        let w = Whose::Workers { pid: 100, own_process: false, threads: None };
        assert!(w.counts_wait("S") && w.counts_wait("D"));
    }
}
