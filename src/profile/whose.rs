//! Which samples of a profiled window are the cell's: the workers', not fsbench's own
//! supervising thread's (shared by the on-CPU fold in [`super::record`] and the off-CPU one
//! in [`super::offcpu`]).

/// Which samples are the cell's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Whose {
    /// fsbench's own process id: its samples are the supervisor's, not the workload's...
    pub pid: u32,
    /// ...except when the workload runs in-process (one steps copy): then its threads (the
    /// cell's and untar's gunzip thread) are the workload...
    pub own_process: bool,
    /// ...or, when the workload names its threads (the op mix's `ops-N`), those threads
    /// only (not the supervising thread), merged under the name without its number.
    pub threads: Option<&'static str>,
}

impl Whose {
    /// The root frame of a stack of process `pid`'s thread `comm`, or `None` when the
    /// stack is not the cell's.
    pub fn root(&self, pid: u32, comm: &str) -> Option<String> {
        if pid != self.pid {
            // The op mix's worker processes (`processes`) name their threads alike.
            if let Some(prefix) = self.threads
                && comm.starts_with(prefix)
            {
                return Some(prefix.trim_end_matches('-').to_string());
            }
            return Some(comm.to_string());
        }
        match (self.own_process, self.threads) {
            (false, _) => None,
            (true, None) => Some(comm.to_string()),
            (true, Some(prefix)) => comm.starts_with(prefix).then(|| prefix.trim_end_matches('-').to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_threads_merge_in_fsbench_and_in_its_worker_processes() {
        let w = Whose { pid: 100, own_process: true, threads: Some("ops-") };
        assert_eq!(w.root(100, "ops-3").as_deref(), Some("ops"));
        assert_eq!(w.root(100, "fsbench"), None);
        assert_eq!(w.root(4242, "ops-17").as_deref(), Some("ops"));
        assert_eq!(w.root(4242, "kworker/0:1").as_deref(), Some("kworker/0:1"));
    }
}
