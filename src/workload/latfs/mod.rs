//! The lmbench lat_fs loops: N worker processes, a start barrier, a timed window.
//!
//! For each repetition the parent starts one worker per task by re-executing
//! the fsbench binary (`fsbench __latfs-worker ...`; fork() is unsafe in a
//! threaded program). Each worker does its untimed setup in its task
//! directory (ids, quota references, the test file), says `ready`, and waits
//! for a start byte on its stdin. When all are ready the parent releases them
//! together; each warms up, times its loop and reports iterations and window.
//! The parent reaps every worker with wait4(2) for its CPU times.
//!
//! Workers run in their own process group with a parent-death signal
//! ([`crate::workload::child::contain`]): a signal to fsbench alone (`kill <pid>`,
//! `docker stop`) is seen by the parent, which checks the interrupt flag at least
//! every [`crate::signals::POLL`] while it waits and then kills every worker
//! ([`LatfsError::Stopped`]); a SIGKILLed fsbench takes its workers with it. On any
//! failure every other worker is killed and reaped before `run` returns, so
//! nothing outlives the call.

pub mod answers;
pub mod member;
pub mod notes;
mod protocol;
mod worker;

use crate::workload::reruns::Next;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::Signal;

use crate::model::{Counters, LatencyDist, LatfsRepetition, LatfsResult, LatfsTest, StopReason, TaskSample};
use crate::monitor::Watch;
use crate::scenario::{LatfsSpec, Pin};
use crate::stats::summarize;

pub use protocol::{WorkerConfig, WorkerMessage, task_ids};
pub use worker::{TEST_FILE, WorkerEnd, worker_main};

/// The hidden subcommand that runs a worker.
pub const WORKER_SUBCOMMAND: &str = "__latfs-worker";

/// How long a worker may take for its untimed setup (exec, ids, quota references).
const SETUP_TIMEOUT: Duration = Duration::from_secs(60);

/// Slack beyond warm-up + window before a silent worker counts as hung.
const RESULT_SLACK: Duration = Duration::from_secs(60);

/// One lat_fs cell to run: the test, its options, and one directory per task.
pub struct LatfsRun<'a> {
    /// Which loop to run.
    pub test: LatfsTest,
    /// Options: per-task ids, quota references, open mode, warm-up, window, repetitions.
    pub spec: &'a LatfsSpec,
    /// One directory per task; task i works in `task_dirs[i]` (created, writable for its uid).
    pub task_dirs: &'a [PathBuf],
    /// The fsbench binary, re-executed as `fsbench __latfs-worker ...`.
    pub exe: &'a Path,
}

/// Why a lat_fs cell failed; every worker failure names its task.
#[derive(Debug, thiserror::Error)]
pub enum LatfsError {
    /// The run has no task directories.
    #[error("lat_fs needs at least one task directory")]
    NoTasks,
    /// The spec asks for zero repetitions.
    #[error("lat_fs needs at least one repetition")]
    NoRepetitions,
    /// The worker process could not be started.
    #[error("task {task}: failed to start the lat_fs worker {}: {source}", exe.display())]
    Spawn {
        /// Task number.
        task: u32,
        /// The binary we tried to run.
        exe: PathBuf,
        /// The error from spawning it.
        #[source]
        source: io::Error,
    },
    /// The worker reported a failed call (EACCES, ENOSPC, ...).
    #[error("task {task} (in {}): {what}", dir.display())]
    Worker {
        /// Task number.
        task: u32,
        /// The task's directory.
        dir: PathBuf,
        /// The errno of the failed call, if a call failed.
        errno: Option<Errno>,
        /// What failed, with the errno (`create `test`: EACCES: Permission denied`).
        what: String,
    },
    /// The worker died from a signal other than an interrupt.
    #[error("task {task}: the lat_fs worker was killed by signal {signal} ({})", signal_name(*signal))]
    Killed {
        /// Task number.
        task: u32,
        /// The signal number.
        signal: i32,
    },
    /// The worker died from SIGINT or SIGTERM: the run was interrupted.
    #[error("task {task}: the lat_fs worker was interrupted by {}", signal_name(*signal))]
    Interrupted {
        /// Task number.
        task: u32,
        /// SIGINT or SIGTERM.
        signal: i32,
    },
    /// The worker exited without reporting why (a panic, a bad argument, a lost line).
    #[error("task {task}: the lat_fs worker {detail}")]
    Protocol {
        /// Task number.
        task: u32,
        /// What it did instead, with its stderr if any.
        detail: String,
    },
    /// fsbench was interrupted (SIGINT/SIGTERM/SIGHUP) while the workers ran; they were killed.
    #[error("interrupted: the lat_fs workers were stopped before they finished")]
    Stopped,
    /// The worker stayed silent past its deadline.
    #[error("task {task}: no {phase} from the lat_fs worker within {}s", timeout.as_secs())]
    Timeout {
        /// Task number.
        task: u32,
        /// What we were waiting for (`ready`, `result`).
        phase: &'static str,
        /// How long we waited.
        timeout: Duration,
    },
    /// Talking to or waiting for the worker failed.
    #[error("task {task}: {what}: {source}")]
    Io {
        /// Task number.
        task: u32,
        /// What we were doing.
        what: &'static str,
        /// The error.
        #[source]
        source: io::Error,
    },
}

impl LatfsError {
    /// The task the error is about, if any.
    pub fn task(&self) -> Option<u32> {
        match self {
            LatfsError::NoTasks | LatfsError::NoRepetitions | LatfsError::Stopped => None,
            LatfsError::Spawn { task, .. }
            | LatfsError::Worker { task, .. }
            | LatfsError::Killed { task, .. }
            | LatfsError::Interrupted { task, .. }
            | LatfsError::Protocol { task, .. }
            | LatfsError::Timeout { task, .. }
            | LatfsError::Io { task, .. } => Some(*task),
        }
    }

    /// The errno of the worker's failed call, if that is what failed.
    pub fn errno(&self) -> Option<Errno> {
        match self {
            LatfsError::Worker { errno, .. } => *errno,
            _ => None,
        }
    }

    /// Whether the run was interrupted (Ctrl-C or SIGTERM reached the workers).
    pub fn is_interrupted(&self) -> bool {
        matches!(self, LatfsError::Interrupted { .. } | LatfsError::Stopped)
    }
}

fn signal_name(signal: i32) -> &'static str {
    Signal::try_from(signal).map(|s| s.as_str()).unwrap_or("unknown signal")
}

/// Run the repetitions of one lat_fs cell and summarise the undisturbed ones.
///
/// Each repetition is one accounting window ([`crate::host::cpu::Window`]) from
/// spawning the workers to reaping them. A disturbed repetition is kept (marked)
/// and replaced by another by the rerun rule of [`crate::workload::reruns`] (at most
/// `noise.max_reruns` times per cell, after waiting for a quiet moment; a pair's member
/// reruns nothing). The cell stops by [`crate::stats::adaptive_stop`] on the undisturbed
/// samples (a member's: all of them), or when the rerun budget is spent;
/// [`LatfsResult::stopped`] says which.
pub fn run(run: &LatfsRun) -> Result<LatfsResult, LatfsError> {
    run_monitored(run, None, &|_, _| {})
}

/// [`run`], reading `watch`'s kernel counters around each repetition's timed part
/// (from the start barrier to the last result) into [`LatfsRepetition::counters`],
/// and calling `starting(i, n)` before repetition `i` (from 1) of at most `n`, for
/// progress displays.
pub fn run_monitored(
    run: &LatfsRun,
    watch: Option<&Watch>,
    starting: &dyn Fn(u32, u32),
) -> Result<LatfsResult, LatfsError> {
    if run.task_dirs.is_empty() {
        return Err(LatfsError::NoTasks);
    }
    if run.spec.repetitions == 0 {
        return Err(LatfsError::NoRepetitions);
    }
    let noise = &run.spec.noise;
    let cpus = pin_cpus(noise.pin, run.task_dirs.len());
    let mut repetitions = Vec::with_capacity(run.spec.repetitions as usize);
    let mut reruns = crate::workload::reruns::Reruns {
        max: noise.max_reruns,
        done: 0,
        threshold: noise.disturbance,
        needed_cpus: run.task_dirs.len() as u32,
        pair_member: noise.pair_member,
    };
    let stopped = loop {
        if crate::signals::interrupted() {
            return Err(LatfsError::Stopped);
        }
        starting(repetitions.len() as u32 + 1, run.spec.repetitions + noise.max_reruns);
        let window = noise.disturbance.map(|t| (t, crate::host::cpu::Window::start(std::process::id())));
        let (tasks, latency, counters) = run_once(run, &cpus, watch)?;
        let mut rep = repetition(tasks);
        rep.disturbance = window.and_then(|(t, w)| w.finish(t, run.task_dirs.len() as u32));
        rep.counters = counters;
        // Tasks are merged: the cell's latency is every operation of every task.
        rep.latency_dist = latency.map(|l| crate::monitor::latency::merge(&l));
        let disturbed = !rep.counts();
        repetitions.push(rep);
        match reruns.after(disturbed) {
            Next::Counted => {}
            Next::Rerun => continue,
            Next::Spent => break StopReason::RerunBudget,
        }
        // A pair's member counts every repetition (its pair judges the load); a cell alone
        // its undisturbed ones.
        let good: Vec<f64> =
            repetitions.iter().filter(|r| noise.pair_member || r.counts()).map(|r| r.total_loops_per_ms).collect();
        if let Some(why) =
            crate::stats::adaptive_stop(&good, noise.min_repetitions, run.spec.repetitions, noise.ci_target)
        {
            break why;
        }
    };
    let mut r = result(repetitions);
    r.stopped = Some(stopped);
    r.reruns = reruns.done;
    r.pinned_cpus = cpus.into_iter().flatten().collect();
    Ok(r)
}

/// The CPU of each task for `pin`: task i on the i-th CPU this process may run on.
fn pin_cpus(pin: Pin, tasks: usize) -> Vec<Option<u32>> {
    let allowed: Vec<u32> = match (pin, nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0))) {
        (Pin::Spread, Ok(set)) => {
            (0..nix::sched::CpuSet::count()).filter(|&c| set.is_set(c).unwrap_or(false)).map(|c| c as u32).collect()
        }
        _ => Vec::new(),
    };
    if allowed.is_empty() {
        return vec![None; tasks];
    }
    (0..tasks).map(|i| Some(allowed[i % allowed.len()])).collect()
}

/// One repetition from its task samples: total loops per ms and mean latency.
pub fn repetition(tasks: Vec<TaskSample>) -> LatfsRepetition {
    let total_loops_per_ms = tasks.iter().map(TaskSample::loops_per_ms).sum();
    let latency_us = if tasks.is_empty() {
        0.0
    } else {
        tasks
            .iter()
            .map(|t| if t.iterations == 0 { 0.0 } else { t.window_ns as f64 / 1e3 / t.iterations as f64 })
            .sum::<f64>()
            / tasks.len() as f64
    };
    LatfsRepetition { tasks, total_loops_per_ms, latency_us, ..LatfsRepetition::default() }
}

/// A cell's result: every repetition plus statistics over the undisturbed ones
/// (over the rounds' means when they span several rounds: [`crate::model::round_samples`]).
pub fn result(repetitions: Vec<LatfsRepetition>) -> LatfsResult {
    let counted = || repetitions.iter().filter(|r| r.counts());
    let totals = crate::model::round_samples(&repetitions, |r| Some(r.total_loops_per_ms));
    let latencies = crate::model::round_samples(&repetitions, |r| Some(r.latency_us));
    let dists: Vec<&LatencyDist> = counted().filter_map(|r| r.latency_dist.as_ref()).collect();
    let latency_dist = (!dists.is_empty()).then(|| crate::monitor::latency::merge(dists));
    LatfsResult {
        total_loops: summarize(&totals),
        latency_us: summarize(&latencies),
        latency_dist,
        repetitions,
        stopped: None,
        reruns: 0,
        pinned_cpus: Vec::new(),
    }
}

/// `earlier` (the rounds a cell has stored) with round `round` appended: its repetitions
/// tagged with the round, statistics over every round, reruns added up; the stop reason
/// and the pinning are the new round's.
pub fn absorb_round(earlier: LatfsResult, next: LatfsResult, round: u32) -> LatfsResult {
    let mut reps = earlier.repetitions;
    reps.extend(next.repetitions.into_iter().map(|r| LatfsRepetition { round, ..r }));
    let mut r = result(reps);
    r.stopped = next.stopped;
    r.reruns = earlier.reruns + next.reruns;
    r.pinned_cpus = next.pinned_cpus;
    r
}

/// What one repetition brings back: per-task samples, per-task latency
/// distributions (when histogrammed) and the kernel counters of its window.
type Once = (Vec<TaskSample>, Option<Vec<LatencyDist>>, Option<Counters>);

/// Start all workers, release them together, collect their samples.
fn run_once(run: &LatfsRun, cpus: &[Option<u32>], watch: Option<&Watch>) -> Result<Once, LatfsError> {
    let spec = run.spec;
    let mut pool = Pool { workers: Vec::with_capacity(run.task_dirs.len()) };
    for (i, dir) in run.task_dirs.iter().enumerate() {
        let task = i as u32;
        let config = WorkerConfig {
            test: run.test,
            task,
            dir: dir.clone(),
            ids: spec.per_task_uid.then(|| task_ids(task)),
            quota_refs: spec.quota_refs,
            open_for_write: spec.open_for_write,
            warmup: spec.warmup,
            duration: spec.duration,
            cpu: cpus.get(i).copied().flatten(),
            histogram: spec.latency == crate::scenario::LatencyMode::Histogram,
        };
        pool.spawn(run.exe, config)?;
    }
    pool.collect("ready", Instant::now() + SETUP_TIMEOUT)?;
    let before = watch.map(Watch::snapshot);
    pool.release()?;
    let deadline = Instant::now() + spec.warmup + spec.duration + RESULT_SLACK;
    let results = pool.collect("result", deadline)?;
    let counters = watch.zip(before).map(|(w, b)| b.delta(&w.snapshot()));
    let latency: Option<Vec<LatencyDist>> = results
        .iter()
        .map(|m| match m {
            WorkerMessage::Result { latency: Some(b), .. } => {
                let mut h = crate::monitor::latency::histogram();
                crate::monitor::latency::add_buckets(&mut h, b);
                Some(crate::monitor::latency::dist(&h))
            }
            _ => None,
        })
        .collect();
    Ok((pool.reap_all(results)?, latency, counters))
}

/// A started worker and our ends of its pipes.
struct WorkerProc {
    task: u32,
    dir: PathBuf,
    child: Child,
    stdout: BufReader<ChildStdout>,
    stdin: Option<ChildStdin>,
    stderr: Option<ChildStderr>,
    reaped: bool,
}

/// How a reaped worker ended.
struct Reaped {
    status: libc::c_int,
    user_us: u64,
    sys_us: u64,
}

/// All workers of one repetition. Dropping it kills and reaps whatever is
/// still running, so no error path leaves a process or a zombie behind.
struct Pool {
    workers: Vec<WorkerProc>,
}

impl Pool {
    fn spawn(&mut self, exe: &Path, config: WorkerConfig) -> Result<(), LatfsError> {
        let task = config.task;
        let mut cmd = Command::new(exe);
        let mut child = crate::workload::child::contain(&mut cmd)
            .arg(WORKER_SUBCOMMAND)
            .args(config.to_args())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| LatfsError::Spawn { task, exe: exe.to_path_buf(), source })?;
        let stdout = BufReader::new(child.stdout.take().expect("stdout is piped"));
        let (stdin, stderr) = (child.stdin.take(), child.stderr.take());
        self.workers.push(WorkerProc { task, dir: config.dir, child, stdout, stdin, stderr, reaped: false });
        Ok(())
    }

    /// Wait until every worker has sent its next line (`ready` or `result`),
    /// failing on the first worker that reports an error or dies.
    fn collect(&mut self, phase: &'static str, deadline: Instant) -> Result<Vec<WorkerMessage>, LatfsError> {
        let n = self.workers.len();
        let mut got: Vec<Option<WorkerMessage>> = vec![None; n];
        let started = Instant::now();
        while got.iter().any(Option::is_none) {
            if crate::signals::interrupted() {
                // Dropping the pool kills and reaps every worker.
                return Err(LatfsError::Stopped);
            }
            // While waiting for `ready`, the workers that are ready stay watched: one that
            // dies at the barrier fails the run now, not when the slowest setup is done.
            let watched = |i: usize| got[i].is_none() || phase == "ready";
            let pending: Vec<usize> = (0..n).filter(|&i| watched(i)).collect();
            let mut fds: Vec<libc::pollfd> = pending
                .iter()
                .map(|&i| libc::pollfd {
                    fd: self.workers[i].stdout.get_ref().as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                })
                .collect();
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                let late = (0..n).find(|&i| got[i].is_none()).expect("someone is not done");
                let w = &self.workers[late];
                return Err(LatfsError::Timeout { task: w.task, phase, timeout: deadline - started });
            }
            // Wake at least every POLL: a signal to fsbench alone must not wait for the window.
            let ms = left.min(crate::signals::POLL).as_millis() as libc::c_int;
            // SAFETY: `fds` is a valid array of pollfd for the duration of the call.
            let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms.max(1)) };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(LatfsError::Io {
                    task: self.workers[pending[0]].task,
                    what: "poll worker pipes",
                    source: e,
                });
            }
            for (k, &i) in pending.iter().enumerate() {
                if fds[k].revents == 0 {
                    continue;
                }
                let mut line = String::new();
                let w = &mut self.workers[i];
                let read = w.stdout.read_line(&mut line);
                match read {
                    Ok(0) if got[i].is_some() => return Err(self.died(i, "the start")),
                    Ok(0) => return Err(self.died(i, phase)),
                    Err(source) => return Err(LatfsError::Io { task: w.task, what: "read from the worker", source }),
                    Ok(_) => match WorkerMessage::parse(&line) {
                        Some(WorkerMessage::Error { errno, what }) => {
                            let errno = (errno != 0).then(|| Errno::from_raw(errno));
                            return Err(LatfsError::Worker { task: w.task, dir: w.dir.clone(), errno, what });
                        }
                        Some(m @ WorkerMessage::Ready) if phase == "ready" && got[i].is_none() => got[i] = Some(m),
                        Some(m @ WorkerMessage::Result { .. }) if phase == "result" => got[i] = Some(m),
                        _ => {
                            let detail = format!("sent `{}` while we waited for {phase}", line.trim_end());
                            return Err(LatfsError::Protocol { task: w.task, detail });
                        }
                    },
                }
            }
        }
        Ok(got.into_iter().map(|m| m.expect("all collected")).collect())
    }

    /// The start barrier: one byte to every worker, as close together as we can.
    fn release(&mut self) -> Result<(), LatfsError> {
        for i in 0..self.workers.len() {
            let mut stdin = self.workers[i].stdin.take().expect("released once");
            if let Err(e) = stdin.write_all(b"g") {
                drop(stdin);
                if e.kind() == io::ErrorKind::BrokenPipe {
                    return Err(self.died(i, "the start"));
                }
                return Err(LatfsError::Io { task: self.workers[i].task, what: "release the worker", source: e });
            }
        }
        Ok(())
    }

    /// Reap every worker after its result; a non-zero exit still fails the run.
    fn reap_all(&mut self, results: Vec<WorkerMessage>) -> Result<Vec<TaskSample>, LatfsError> {
        let mut samples = Vec::with_capacity(results.len());
        for (i, msg) in results.into_iter().enumerate() {
            let reaped = self.reap(i)?;
            let task = self.workers[i].task;
            if !(libc::WIFEXITED(reaped.status) && libc::WEXITSTATUS(reaped.status) == 0) {
                return Err(self.explain(i, &reaped, "after its result"));
            }
            let WorkerMessage::Result { iterations, window_ns, .. } = msg else { unreachable!("collected results") };
            samples.push(TaskSample { task, iterations, window_ns, user_us: reaped.user_us, sys_us: reaped.sys_us });
        }
        Ok(samples)
    }

    /// The worker's stdout closed before the line we wanted: reap it and say why.
    fn died(&mut self, i: usize, phase: &str) -> LatfsError {
        match self.reap(i) {
            Ok(reaped) => self.explain(i, &reaped, &format!("before {phase}")),
            Err(e) => e,
        }
    }

    /// Turn a worker's wait status (and its stderr) into an error.
    fn explain(&mut self, i: usize, reaped: &Reaped, when: &str) -> LatfsError {
        let w = &mut self.workers[i];
        let task = w.task;
        let status = reaped.status;
        if libc::WIFSIGNALED(status) {
            let signal = libc::WTERMSIG(status);
            return if signal == libc::SIGINT || signal == libc::SIGTERM {
                LatfsError::Interrupted { task, signal }
            } else {
                LatfsError::Killed { task, signal }
            };
        }
        let mut stderr = String::new();
        if let Some(mut e) = w.stderr.take() {
            // The worker has exited, so this read ends at EOF.
            let _ = e.read_to_string(&mut stderr);
        }
        let stderr = stderr.trim();
        let mut detail = format!("exited with status {} {when}", libc::WEXITSTATUS(status));
        if !stderr.is_empty() {
            detail.push_str(": ");
            detail.push_str(stderr);
        }
        LatfsError::Protocol { task, detail }
    }

    /// wait4(2) one worker, for its status and CPU times.
    fn reap(&mut self, i: usize) -> Result<Reaped, LatfsError> {
        let w = &mut self.workers[i];
        let pid = w.child.id() as libc::pid_t;
        let reaped = crate::workload::rusage::wait4(pid);
        // Reaped or ECHILD: either way there is nothing left to reap or kill.
        w.reaped = true;
        let r = reaped.map_err(|source| LatfsError::Io { task: w.task, what: "wait for the worker", source })?;
        Ok(Reaped { status: r.status, user_us: r.user_us, sys_us: r.sys_us })
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        // Kill all first, then reap: the workers die in parallel.
        for w in self.workers.iter_mut().filter(|w| !w.reaped) {
            // The worker leads its own group (`contain`); nothing of its may linger.
            // SAFETY: kill(2) on our unreaped child's group; ESRCH is harmless.
            unsafe { libc::kill(-(w.child.id() as libc::pid_t), libc::SIGKILL) };
            let _ = w.child.kill();
        }
        for i in 0..self.workers.len() {
            if !self.workers[i].reaped {
                let _ = self.reap(i);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(task: u32, iterations: u64, window_ns: u64) -> TaskSample {
        TaskSample { task, iterations, window_ns, user_us: 0, sys_us: 0 }
    }

    #[test]
    fn repetition_sums_loops_and_averages_latency() {
        // 617 loops/ms and 622 loops/ms; latencies 1.6207 µs and 1.6077 µs.
        let r = repetition(vec![sample(0, 617_000, 1_000_000_000), sample(1, 1_244_000, 2_000_000_000)]);
        assert!((r.total_loops_per_ms - 1239.0).abs() < 1e-9);
        let lat = (1e6 / 617_000.0 + 2e6 / 1_244_000.0) / 2.0;
        assert!((r.latency_us - lat).abs() < 1e-9);
    }

    #[test]
    fn result_summarises_repetitions() {
        let reps = vec![
            repetition(vec![sample(0, 600_000, 1_000_000_000)]),
            repetition(vec![sample(0, 620_000, 1_000_000_000)]),
            repetition(vec![sample(0, 640_000, 1_000_000_000)]),
        ];
        let r = result(reps);
        assert_eq!(r.total_loops.n, 3);
        assert!((r.total_loops.median - 620.0).abs() < 1e-9);
        assert!((r.total_loops.cv - 20.0 / 620.0).abs() < 1e-9);
        assert_eq!(r.repetitions.len(), 3);
    }

    #[test]
    fn latency_distributions_merge_over_repetitions() {
        let dist = |v: u64, n: u64| {
            let mut h = crate::monitor::latency::histogram();
            h.record_n(v, n).unwrap();
            crate::monitor::latency::dist(&h)
        };
        let mut a = repetition(vec![sample(0, 900, 1_000_000)]);
        a.latency_dist = Some(dist(1_000, 900));
        let mut b = repetition(vec![sample(0, 100, 1_000_000)]);
        b.latency_dist = Some(dist(10_000, 100));
        let r = result(vec![a, b]);
        let d = r.latency_dist.expect("merged");
        assert_eq!(d.count, 1000);
        assert!(d.p50_ns < 1_010 && d.p99_ns >= 10_000, "{d:?}");
        // Without histograms there is nothing to merge.
        assert!(result(vec![repetition(vec![sample(0, 1, 1)])]).latency_dist.is_none());
    }

    #[test]
    fn errors_name_their_task_and_signal() {
        let e = LatfsError::Killed { task: 1, signal: 9 };
        assert_eq!(e.to_string(), "task 1: the lat_fs worker was killed by signal 9 (SIGKILL)");
        assert_eq!(e.task(), Some(1));
        let e = LatfsError::Interrupted { task: 0, signal: libc::SIGINT };
        assert!(e.is_interrupted());
        assert!(e.to_string().contains("SIGINT"));
    }
}
