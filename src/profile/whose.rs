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
        // A workload that names its worker threads: those threads alone, in fsbench or in
        // its worker processes (`processes`), whose main threads only supervise (start the
        // workers, wait, send their figures back).
        if let Some(prefix) = self.threads {
            return comm.starts_with(prefix).then(|| prefix.trim_end_matches('-').to_string());
        }
        (pid != self.pid || self.own_process).then(|| comm.to_string())
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
        // A worker process's main thread supervises: it is not the workload.
        assert_eq!(w.root(4242, "fsbench-ops"), None);
    }

    #[test]
    fn unnamed_workers_are_the_child_processes_or_fsbench_itself() {
        // lat_fs, fio: the workload runs in child processes, fsbench only supervises.
        let w = Whose { pid: 100, own_process: false, threads: None };
        assert_eq!(w.root(100, "fsbench"), None);
        assert_eq!(w.root(4242, "lat_fs").as_deref(), Some("lat_fs"));
        // One steps copy: fsbench's own threads are the workload.
        let w = Whose { pid: 100, own_process: true, threads: None };
        assert_eq!(w.root(100, "fsbench").as_deref(), Some("fsbench"));
        assert_eq!(w.root(4242, "gzip").as_deref(), Some("gzip"));
    }
}
