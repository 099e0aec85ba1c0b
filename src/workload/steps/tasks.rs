//! `tasks = N` for steps workloads: N copies of the step sequence at once, each in its own
//! directory (layout S) or filesystem (layout M), released together at a barrier.
//!
//! Each copy is a process of its own (`fsbench __steps-worker`), so that it is timed
//! exactly as `time <cmd>` would time it: RUSAGE_SELF inside the copy counts every thread
//! of that copy (the untar decoder thread included) and nothing of the others. Threads
//! would need RUSAGE_THREAD, which misses a step's helper threads and so under-reports
//! `tar zxf`. The aggregate (what the cell's `iterations` hold) is per step the slowest
//! copy's elapsed time and the summed CPU: what `time` around all N copies would print.
//!
//! Protocol, over the worker's stdin and stdout (its protocol pipe, like the lat_fs
//! worker's): the parent writes one JSON line ([`WorkerConfig`]); the worker answers
//! `ready`; once every worker is ready the parent writes one byte to each, as close
//! together as it can (the barrier); each worker runs its copy and answers one JSON line
//! ([`WorkerReply`]) and exits. SIGINT/SIGTERM reach the workers through the process
//! group; a worker stops between steps and reports what it timed as interrupted.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::{StepsError, StepsRun};
use crate::model::{StepTiming, StepsCopy, StepsResult};
use crate::scenario::StepsSpec;
use crate::workload::untar::{Trust, UnpackLimits};

/// The first argument that makes the fsbench binary one copy of a steps cell.
pub const WORKER_SUBCOMMAND: &str = "__steps-worker";

/// What one worker runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkerConfig {
    /// Task number, from 0.
    pub task: u32,
    /// Iterations and steps.
    pub spec: StepsSpec,
    /// The copy's directory on the filesystem under test.
    pub target: PathBuf,
    /// The fsbench that runs the cell: it and all its copies are the run's own CPU.
    pub run_root: u32,
    /// Where its archive is.
    pub archive_dir: PathBuf,
    /// The archive came in a bundle: checked entry by entry.
    pub untrusted: bool,
    /// The cell's devices, read around each of the copy's steps (monitors on).
    pub watch: Option<crate::monitor::Watch>,
}

/// What a worker answers after its copy.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkerReply {
    /// The copy's timings (complete, or up to the failure).
    pub copy: StepsCopy,
    /// Why the copy stopped early, if it did.
    pub error: Option<String>,
    /// Stopped by SIGINT/SIGTERM.
    pub interrupted: bool,
}

/// One execution of N copies.
pub struct TasksRun<'a> {
    /// Iterations and steps.
    pub spec: &'a StepsSpec,
    /// One directory per copy.
    pub targets: &'a [PathBuf],
    /// Where each copy's archive is (same length as `targets`).
    pub archive_dirs: &'a [PathBuf],
    /// Archives from a bundle.
    pub untrusted: bool,
    /// The fsbench binary, re-executed as `fsbench __steps-worker`.
    pub exe: &'a Path,
    /// The cell's devices: each copy reads their counters around its own steps. The
    /// counters are the devices', so in layout S they include the other copies' I/O.
    pub watch: Option<&'a crate::monitor::Watch>,
}

/// Why concurrent copies failed.
#[derive(Debug, thiserror::Error)]
pub enum TasksError {
    /// A worker could not be started or talked to.
    #[error("task {task}: steps worker {}: {source}", exe.display())]
    Worker {
        /// Task number.
        task: u32,
        /// The binary.
        exe: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// A worker answered something that is not the protocol.
    #[error("task {task}: steps worker broke the protocol: {what}")]
    Protocol {
        /// Task number.
        task: u32,
        /// What was wrong.
        what: String,
    },
    /// A copy's step failed.
    #[error("task {task}: {message}")]
    Copy {
        /// Task number.
        task: u32,
        /// The worker's error.
        message: String,
    },
    /// Interrupted by SIGINT/SIGTERM.
    #[error("interrupted")]
    Interrupted,
}

struct Worker {
    task: u32,
    child: Child,
    out: BufReader<std::process::ChildStdout>,
}

/// Start one worker per target, release them together, and aggregate their copies.
pub fn run(run: &TasksRun) -> Result<StepsResult, TasksError> {
    let mut workers: Vec<Worker> = Vec::with_capacity(run.targets.len());
    // Workers are killed and reaped on every early return: none outlives the cell.
    struct Reap<'w>(&'w mut Vec<Worker>);
    impl Drop for Reap<'_> {
        fn drop(&mut self) {
            for w in self.0.iter_mut() {
                if let Ok(None) = w.child.try_wait() {
                    let _ = w.child.kill();
                }
                let _ = w.child.wait();
            }
        }
    }
    let reap = Reap(&mut workers);
    for (k, (target, archive_dir)) in run.targets.iter().zip(run.archive_dirs).enumerate() {
        let task = k as u32;
        let werr = |source| TasksError::Worker { task, exe: run.exe.to_path_buf(), source };
        let mut cmd = Command::new(run.exe);
        // Its own process group with a parent-death signal, as the lat_fs workers: a signal
        // to fsbench alone is forwarded below, and a SIGKILLed fsbench takes its copies along.
        let mut child = crate::workload::child::contain(&mut cmd)
            .arg(WORKER_SUBCOMMAND)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(werr)?;
        let config = WorkerConfig {
            task,
            spec: run.spec.clone(),
            target: target.clone(),
            run_root: std::process::id(),
            archive_dir: archive_dir.clone(),
            untrusted: run.untrusted,
            watch: run.watch.cloned(),
        };
        let mut line = serde_json::to_string(&config).expect("config serializes");
        line.push('\n');
        let stdin = child.stdin.as_mut().expect("piped");
        stdin.write_all(line.as_bytes()).map_err(werr)?;
        let out = BufReader::new(child.stdout.take().expect("piped"));
        reap.0.push(Worker { task, child, out });
    }
    for w in reap.0.iter_mut() {
        let mut line = String::new();
        w.out.read_line(&mut line).map_err(|source| TasksError::Worker {
            task: w.task,
            exe: run.exe.to_path_buf(),
            source,
        })?;
        if line.trim_end() != "ready" {
            return Err(TasksError::Protocol { task: w.task, what: format!("expected `ready`, got {:?}", cut(&line)) });
        }
    }
    // The barrier: every worker is blocked reading this byte.
    for w in reap.0.iter_mut() {
        let stdin = w.child.stdin.as_mut().expect("piped");
        stdin.write_all(b"g").and_then(|()| stdin.flush()).map_err(|source| TasksError::Worker {
            task: w.task,
            exe: run.exe.to_path_buf(),
            source,
        })?;
    }
    let pids: Vec<libc::pid_t> = reap.0.iter().map(|w| w.child.id() as libc::pid_t).collect();
    let mut copies = Vec::with_capacity(reap.0.len());
    let mut first_error = None;
    let mut interrupted = false;
    let mut forwarded = false;
    for w in reap.0.iter_mut() {
        // Wait for the reply, forwarding an interrupt to every copy's group once: each stops at
        // its next entry and replies `interrupted` (SA_RESTART would keep a plain read blocked).
        while !readable(&w.out) {
            if crate::signals::interrupted() && !forwarded {
                forwarded = true;
                for pid in &pids {
                    // SAFETY: kill(2) with a negative pid signals the group the copy leads.
                    unsafe { libc::kill(-pid, libc::SIGTERM) };
                }
            }
        }
        let mut text = String::new();
        // A reply is a few KB per iteration; the cap keeps a broken worker from filling memory.
        (&mut w.out).take(64 << 20).read_to_string(&mut text).map_err(|source| TasksError::Worker {
            task: w.task,
            exe: run.exe.to_path_buf(),
            source,
        })?;
        let reply: WorkerReply = serde_json::from_str(text.trim()).map_err(|e| TasksError::Protocol {
            task: w.task,
            what: format!("unreadable reply ({e}): {:?}", cut(&text)),
        })?;
        interrupted |= reply.interrupted;
        if let (Some(message), None) = (reply.error, &first_error) {
            first_error = Some(TasksError::Copy { task: w.task, message });
        }
        copies.push(reply.copy);
    }
    drop(reap);
    if interrupted {
        return Err(TasksError::Interrupted);
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    Ok(aggregate(copies))
}

/// The aggregate of concurrent copies: per (iteration, step) the slowest elapsed, the summed
/// CPU and entries, the largest RSS, and the most disturbed copy's disturbance (the step
/// is disturbed when any copy's was); over the iterations every copy completed.
fn aggregate(copies: Vec<StepsCopy>) -> StepsResult {
    let n = copies.iter().map(|c| c.iterations.len()).min().unwrap_or(0);
    let iterations = (0..n)
        .map(|i| {
            let width = copies.iter().map(|c| c.iterations[i].len()).min().unwrap_or(0);
            (0..width)
                .map(|j| {
                    let all: Vec<&StepTiming> = copies.iter().map(|c| &c.iterations[i][j]).collect();
                    let sum = |f: fn(&StepTiming) -> u64| all.iter().map(|t| f(t)).sum::<u64>();
                    StepTiming {
                        label: all[0].label.clone(),
                        op: all[0].op.clone(),
                        user_us: sum(|t| t.user_us),
                        system_us: sum(|t| t.system_us),
                        elapsed_us: all.iter().map(|t| t.elapsed_us).max().unwrap_or(0),
                        max_rss_kib: all.iter().map(|t| t.max_rss_kib).max().unwrap_or(0),
                        entries: all.iter().map(|t| t.entries).sum(),
                        disturbance: all.iter().filter_map(|t| t.disturbance.clone()).max_by(|a, b| {
                            (a.disturbed, a.share)
                                .partial_cmp(&(b.disturbed, b.share))
                                .unwrap_or(std::cmp::Ordering::Equal)
                        }),
                        ..StepTiming::default()
                    }
                })
                .collect()
        })
        .collect();
    StepsResult { iterations, copies, ..StepsResult::default() }
}

/// Whether the worker's reply (or its end of file) can be read, after waiting at most
/// [`crate::signals::POLL`]; buffered data counts.
fn readable(out: &BufReader<std::process::ChildStdout>) -> bool {
    use std::os::fd::AsRawFd;
    if !out.buffer().is_empty() {
        return true;
    }
    let mut fd = libc::pollfd { fd: out.get_ref().as_raw_fd(), events: libc::POLLIN, revents: 0 };
    let ms = crate::signals::POLL.as_millis() as libc::c_int;
    // SAFETY: one valid pollfd for the duration of the call.
    let n = unsafe { libc::poll(&mut fd, 1, ms) };
    // Errors (EINTR from our own handler) mean "look again"; POLLHUP is the end of file.
    n > 0
}

fn cut(s: &str) -> String {
    crate::text::first_line_cut(s, 200)
}

fn unix_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

/// How a worker ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerEnd {
    /// Ran its copy (the reply says whether every step succeeded).
    Replied,
    /// stdin was not the protocol.
    BadInput,
}

/// The worker side: read the config, answer `ready`, wait for the barrier byte, run, reply.
pub fn worker_main() -> WorkerEnd {
    crate::signals::install();
    let mut stdin = BufReader::new(std::io::stdin().lock());
    let mut line = String::new();
    if stdin.read_line(&mut line).is_err() {
        return WorkerEnd::BadInput;
    }
    let Ok(config) = serde_json::from_str::<WorkerConfig>(&line) else { return WorkerEnd::BadInput };
    let Some(mut out) = protocol_off_stdout() else { return WorkerEnd::BadInput };
    if out.write_all(b"ready\n").and_then(|()| out.flush()).is_err() {
        return WorkerEnd::BadInput;
    }
    let mut go = [0u8; 1];
    if stdin.read_exact(&mut go).is_err() {
        return WorkerEnd::BadInput;
    }
    let trust = if config.untrusted { Trust::Untrusted(UnpackLimits::default()) } else { Trust::Own };
    let cancel = crate::signals::interrupted;
    let started_unix_us = unix_us();
    let steps = StepsRun {
        spec: &config.spec,
        target: &config.target,
        archive_dir: &config.archive_dir,
        cancel: &cancel,
        trust: &trust,
        run_root: config.run_root,
    };
    // The copy's own timeline is not kept: the counters around its steps are.
    let outcome = super::run_monitored(&steps, config.watch.as_ref(), &|_, _, _| {});
    let finished_unix_us = unix_us();
    let (result, error, interrupted) = match outcome {
        Ok(r) => (r, None, false),
        Err(StepsError::Interrupted { completed, .. }) => (*completed, None, true),
        Err(e @ StepsError::Step { .. }) => {
            let message = e.to_string();
            let StepsError::Step { completed, .. } = e else { unreachable!() };
            (*completed, Some(message), false)
        }
    };
    let reply = WorkerReply {
        copy: StepsCopy { task: config.task, started_unix_us, finished_unix_us, iterations: result.iterations },
        error,
        interrupted,
    };
    let text = serde_json::to_string(&reply).expect("reply serializes");
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.write_all(b"\n")).and_then(|()| out.flush());
    WorkerEnd::Replied
}

/// The protocol pipe, moved off fd 1 (which then points at stderr), so that what an `exec`
/// step's command prints goes to the terminal and never into the reply. `None` when the
/// descriptors cannot be moved.
fn protocol_off_stdout() -> Option<std::fs::File> {
    use std::os::fd::FromRawFd;
    // SAFETY: dup and dup2 on the standard descriptors; nothing else in this process
    // holds fd 1 (stdout is not locked or buffered yet). O_CLOEXEC keeps the pipe from children.
    let proto = unsafe { libc::fcntl(1, libc::F_DUPFD_CLOEXEC, 3) };
    if proto < 0 || unsafe { libc::dup2(2, 1) } < 0 {
        return None;
    }
    // SAFETY: `proto` is a new descriptor this function owns.
    Some(unsafe { std::fs::File::from_raw_fd(proto) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Disturbance;

    fn timing(user_us: u64, system_us: u64, elapsed_us: u64) -> StepTiming {
        StepTiming { op: "untar".into(), user_us, system_us, elapsed_us, ..StepTiming::default() }
    }

    #[test]
    fn the_aggregate_of_copies_is_the_slowest_the_sum_and_the_most_disturbed() {
        let disturbed = |share: f64, disturbed: bool| Some(Disturbance { share, disturbed, ..Disturbance::default() });
        let copy = |task: u32, elapsed_us: u64, d: Option<Disturbance>| StepsCopy {
            task,
            started_unix_us: 0,
            finished_unix_us: 0,
            iterations: vec![vec![StepTiming { disturbance: d, entries: Some(3), ..timing(10, 20, elapsed_us) }]],
        };
        let r = aggregate(vec![
            copy(0, 500, disturbed(0.1, false)),
            copy(1, 900, disturbed(0.6, true)),
            copy(2, 700, None),
        ]);
        let t = &r.iterations[0][0];
        assert_eq!((t.user_us, t.system_us, t.elapsed_us, t.entries), (30, 60, 900, Some(9)));
        assert_eq!(t.disturbance, disturbed(0.6, true));
        let r = aggregate(vec![copy(0, 1, None), copy(1, 1, None)]);
        assert_eq!(r.iterations[0][0].disturbance, None);
    }
}
