//! Declared op mixes (`[workload] kind = "ops"`): filesets and groups of worker threads
//! running ordered loops of file operations (or weighted transactions), in-process —
//! filebench's personalities and postmark without their code: a workload is data.
//!
//! One repetition ([`run`]): build the filesets beneath the cell's directory (untimed;
//! `build`), start every worker, open the window at a start gate, stop on the
//! duration, the loop count or the first worker done, and merge the workers' per-op
//! accounts. Every path is a name fsbench generated (`%08d`), opened relative to a
//! directory fd it made, and no link is ever followed (`sys`).

mod account;
pub mod answers;
mod build;
mod error;
mod fileset;
mod gate;
mod layout;
mod outcome;
mod pace;
mod procs;
#[cfg(test)]
mod procs_tests;
/// The declared op mix: its types live with the other kinds' specs in the scenario.
pub use crate::scenario::ops_spec as spec;
mod replay;
mod shm;
mod sys;
#[cfg(test)]
mod tests;
mod wire;
mod worker;

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

pub use crate::scenario::op_kinds::OP_NAMES;
pub use error::OpsError;
pub use layout::{Layout, MAX_ENTRIES, size_histogram};
pub use spec::OpsSpec;

use crate::scenario::loadfile_spec::Call;
use account::Account;
use gate::Control;
use outcome::{Ended, WorkerOut};
use procs::Procs;
use replay::Client;
use spec::Op;
use spec::{Flow, ThreadGroup};
use worker::Worker;

use crate::model::{ClientFigures, FilesetRecord, LoadfileFigures, OpsRepetition};

/// The worker threads' names: this prefix and the worker's number (`ops-3`): a profile keeps them, not the supervisor.
pub const WORKER_THREAD_PREFIX: &str = "ops-";

pub use crate::scenario::ops_spec::MAX_CHUNK;

/// What one repetition built and measured.
pub struct Window {
    /// The filesets as built (or reused) before the window.
    pub filesets: Vec<FilesetRecord>,
    /// The window's figures (`disturbance`, `counters` and `round` left to the caller).
    pub repetition: OpsRepetition,
}

/// Seed of fileset `i`'s layout.
pub fn fileset_seed(seed: u64, i: usize) -> u64 {
    seed ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// Run repetition `index` of `spec` in `cell_dir`. `cancel` is polled while building and
/// during the window (a signal): the workers stop and the error is [`OpsError::Interrupted`].
pub fn run(cell_dir: &Path, spec: &OpsSpec, index: u32, cancel: &dyn Fn() -> bool) -> Result<Window, OpsError> {
    let cell = crate::beneath::open_dir(cell_dir).map_err(|e| OpsError::Build {
        fileset: String::new(),
        what: "open",
        path: cell_dir.display().to_string(),
        source: e,
    })?;
    let cell_fd = std::os::fd::AsRawFd::as_raw_fd(&cell);
    let limit = sys::raise_nofile(u64::MAX);
    let mut states = Vec::new();
    let mut records = Vec::new();
    for (i, f) in spec.filesets.iter().enumerate() {
        let dirs_so_far: u64 = records.iter().map(|r: &FilesetRecord| r.dirs).sum();
        let b =
            build::build(cell_dir, cell_fd, f, fileset_seed(spec.seed, i), cancel, limit.saturating_sub(dirs_so_far))?;
        records.push(b.record);
        states.push(b.state);
    }
    let fds_per_worker: u64 = spec
        .groups
        .iter()
        .map(|g| match &g.flow {
            // The handle table at its fullest, plus Find's directory fd.
            Flow::Loadfile(lf) => g.workers() as u64 * (replay::peak_handles(lf) as u64 + 2),
            _ => g.workers() as u64 * (spec::MAX_SLOTS as u64 + 1),
        })
        .sum();
    let need = records.iter().map(|r| r.dirs).sum::<u64>() + fds_per_worker + 64;
    if need > limit {
        return Err(OpsError::TooManyDirs { need, limit });
    }
    let order = kinds_in_order(spec);
    let wbuf = build::pattern(write_chunk(spec));
    let rbuf_len = read_chunk(spec);
    let ctl = Control::new(spec.stop.warmup.is_some())
        .map_err(|e| OpsError::Worker { worker: "-".into(), message: format!("mapping the control words: {e}") })?;
    let (stop, warming) = (&ctl.stop, &ctl.warming);
    // Each group's first worker number, in the groups' order (names of the directories
    // workers make, seeds).
    let firsts: Vec<u32> = spec
        .groups
        .iter()
        .scan(0u32, |n, g| {
            let first = *n;
            *n += g.workers();
            Some(first)
        })
        .collect();
    let kit = Kit { seed: spec.seed, index, states: &states, wbuf: &wbuf, rbuf_len };
    let make = |g, name, n| kit.worker(g, name, n);
    let mut outs: Vec<Result<WorkerOut, OpsError>> = Vec::new();
    // Worker processes first: forked before this window starts any thread.
    let mut procs = Procs::new(Instant::now());
    'fork: for (g, &first) in spec.groups.iter().zip(&firsts) {
        let Some(p_count) = g.processes else { continue };
        for p in 0..p_count {
            let workers =
                (0..g.threads).map(|t| make(g, format!("{}#{p}.{t}", g.name), first + p * g.threads + t)).collect();
            if let Err(e) = procs.fork(format!("{}#{p}", g.name), workers, &ctl, spec.stop) {
                outs.push(Err(e));
                stop.store(true, Ordering::Relaxed);
                ctl.call_off();
                break 'fork;
            }
        }
    }
    let forked_ok = outs.is_empty();
    let mut t0 = Instant::now();
    let mut interrupted = false;
    std::thread::scope(|scope| {
        let mut handles = Vec::new();
        let mut client = 0u32;
        'spawn: for (g, &first) in spec.groups.iter().zip(&firsts) {
            if g.processes.is_some() || !forked_ok {
                continue;
            }
            for t in 0..g.threads {
                let n = first + t;
                let w = make(g, format!("{}#{t}", g.name), n);
                let (ctl, limits) = (&ctl, spec.stop);
                let replay = match &g.flow {
                    Flow::Loadfile(lf) => {
                        client += 1;
                        Some(Client { number: client, loadfile: lf, cell: cell_fd, cell_dir, wbuf: &wbuf })
                    }
                    _ => None,
                };
                let h = std::thread::Builder::new()
                    .name(format!("{WORKER_THREAD_PREFIX}{n}"))
                    .stack_size(256 << 10)
                    .spawn_scoped(scope, move || {
                        let r = match replay {
                            Some(c) => c.run(&ctl.stop, &ctl.warming, limits, || ctl.arrive_and_wait()),
                            None => w.run(&ctl.stop, &ctl.warming, limits, || ctl.arrive_and_wait()),
                        };
                        ctl.finished();
                        r
                    });
                match h {
                    Ok(h) => handles.push(h),
                    Err(e) => {
                        outs.push(Err(OpsError::Worker { worker: format!("{}#{t}", g.name), message: e.to_string() }));
                        stop.store(true, Ordering::Relaxed);
                        ctl.call_off();
                        break 'spawn;
                    }
                }
            }
        }
        let spawned = handles.len() + procs.workers();
        // A worker process that died before its workers arrived never will.
        ctl.open_when(spawned, &mut || {
            procs.poll(Duration::ZERO);
            procs.failed()
        });
        t0 = Instant::now();
        // With a warm-up, the window (and its duration) starts when the warm-up ends.
        let mut warm_end = spec.stop.warmup.map(|w| t0 + w);
        let mut deadline = if warm_end.is_some() { None } else { spec.stop.duration.map(|d| t0 + d) };
        let mut kill_at = None;
        loop {
            let wait = warm_end.map_or(Duration::from_millis(20), |e| {
                e.saturating_duration_since(Instant::now()).min(Duration::from_millis(20))
            });
            let done = if procs.is_empty() {
                ctl.all_finished(spawned, wait)
            } else {
                procs.poll(wait);
                procs.all_done() && handles.iter().all(|h| h.is_finished())
            };
            if done {
                break;
            }
            if procs.failed() {
                stop.store(true, Ordering::Relaxed);
            }
            if cancel() {
                interrupted = true;
                stop.store(true, Ordering::Relaxed);
            }
            let now = Instant::now();
            if interrupted {
                // Stopped workers end within an op; a process stuck past this is killed.
                if now >= *kill_at.get_or_insert(now + KILL_GRACE) {
                    procs.kill_all();
                }
            }
            if let Some(e) = warm_end
                && now >= e
            {
                warming.store(false, Ordering::Relaxed);
                t0 = now;
                deadline = spec.stop.duration.map(|d| now + d);
                warm_end = None;
            }
            if deadline.is_some_and(|d| now >= d) {
                stop.store(true, Ordering::Relaxed);
            }
        }
        if let Some(e) = warm_end {
            // Every worker stopped within the warm-up: an empty window.
            t0 = e;
        }
        for h in handles {
            outs.push(h.join().unwrap_or_else(|_| {
                Err(OpsError::Worker { worker: "?".into(), message: "worker thread panicked".into() })
            }));
        }
    });
    let mut pids: Vec<u32> = Vec::new();
    for (pid, o) in procs.finish() {
        if o.is_ok() && !pids.contains(&pid) {
            pids.push(pid);
        }
        outs.push(o);
    }
    if interrupted {
        return Err(OpsError::Interrupted);
    }
    let mut done = Vec::new();
    for o in outs {
        done.push(o?);
    }
    let mut repetition = summarize(spec, index, &order, t0, &done);
    repetition.processes = spec.groups.iter().any(|g| g.processes.is_some()).then_some(pids.len() as u32);
    Ok(Window { filesets: records, repetition })
}

/// What every worker of a window is made from.
struct Kit<'a> {
    seed: u64,
    index: u32,
    states: &'a [fileset::FilesetState],
    wbuf: &'a [u8],
    rbuf_len: usize,
}

impl<'a> Kit<'a> {
    /// Worker `n` (over all groups), of group `g`, called `name`.
    fn worker(&self, g: &'a ThreadGroup, name: String, n: u32) -> Worker<'a> {
        Worker {
            name,
            index: n,
            flow: &g.flow,
            sets: self.states,
            wbuf: self.wbuf,
            rbuf_len: self.rbuf_len,
            used: used_kinds(&g.flow),
            seed: self.seed.wrapping_add((n as u64 + 1).wrapping_mul(1_000_003)).wrapping_add(self.index as u64),
        }
    }
}

/// How long an interrupted window waits for its worker processes before killing them.
const KILL_GRACE: Duration = Duration::from_secs(10);

/// The op kinds `flow` runs (account indexes), each once.
fn used_kinds(flow: &Flow) -> Vec<usize> {
    let mut u: Vec<usize> = flow.ops().iter().map(|o| o.kind()).collect();
    u.sort_unstable();
    u.dedup();
    u
}

fn summarize(spec: &OpsSpec, index: u32, order: &[usize], t0: Instant, done: &[WorkerOut]) -> OpsRepetition {
    let mut acct = Account::new(&[]);
    for o in done {
        acct.merge(&o.account);
    }
    let end = done.iter().map(|o| o.end).max().unwrap_or(t0);
    let secs = end.saturating_duration_since(t0).as_secs_f64();
    let (ops, total) = acct.stats(order, secs);
    let stop = stop_reason(spec.stop.first_done, done);

    OpsRepetition {
        index,
        elapsed_s: secs,
        warmup_s: spec.stop.warmup.map(|w| w.as_secs_f64()),
        threads: done.len() as u32,
        loops: acct.loops,
        stop: stop.to_string(),
        ops,
        total,
        loop_latency: crate::monitor::latency::dist(&acct.loop_hist),
        cpu_user_s: done.iter().map(|o| o.cpu_us.0).sum::<u64>() as f64 / 1e6,
        cpu_sys_s: done.iter().map(|o| o.cpu_us.1).sum::<u64>() as f64 / 1e6,
        processes: None,
        loadfile: loadfile_figures(done, secs),
        pace: pace::figures(done.iter().filter_map(|o| o.pace.as_ref())),
        disturbance: None,
        counters: None,
        round: 0,
    }
}

/// Why the workers of a window stopped: everyone at one worker's end under `first_done`,
/// a worker out of files, every worker at one of its counts (the count most reached), or
/// the stop flag (the duration).
fn stop_reason(first_done: bool, done: &[WorkerOut]) -> &'static str {
    let any = |e: Ended| done.iter().any(|o| o.ended == e);
    if first_done && done.iter().any(|o| o.ended.counted() || o.ended == Ended::OutOfFiles) {
        "first_done"
    } else if any(Ended::OutOfFiles) {
        "out_of_files"
    } else if !done.is_empty() && done.iter().all(|o| o.ended.counted()) {
        let n = |e: Ended| done.iter().filter(|o| o.ended == e).count();
        // On a tie, the last maximum: loops before ops before bytes.
        [Ended::Bytes, Ended::Ops, Ended::Loops].into_iter().max_by_key(|&e| n(e)).map_or("loops", Ended::name)
    } else {
        "duration"
    }
}

/// Op kinds in the order they first appear in the groups' flows (a loadfile's kinds in
/// the order dbench's summary lists them).
pub fn kinds_in_order(spec: &OpsSpec) -> Vec<usize> {
    let mut order = Vec::new();
    for g in &spec.groups {
        let kinds: Vec<usize> = match &g.flow {
            Flow::Loadfile(lf) => {
                let mut k: Vec<usize> = lf.ops.iter().map(|o| o.call.kind()).collect();
                k.sort_unstable();
                k
            }
            f => f.ops().iter().map(|o| o.kind()).collect(),
        };
        for k in kinds {
            if !order.contains(&k) {
                order.push(k);
            }
        }
    }
    order
}

/// The loadfile clients' figures (none without a loadfile group).
fn loadfile_figures(done: &[WorkerOut], secs: f64) -> Option<LoadfileFigures> {
    let mut f = LoadfileFigures::default();
    let per_s = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
    let mut bytes = 0u64;
    for (o, r) in done.iter().filter_map(|o| o.replay.map(|r| (o, r))) {
        f.ops += r.ops;
        f.expected_errors += r.expected_errors;
        f.status_mismatches += r.mismatches;
        f.unknown_handles += r.unknown_handles;
        bytes += r.bytes;
        f.clients.push(ClientFigures {
            client: r.client,
            ops: r.ops,
            ops_per_s: per_s(r.ops),
            bytes: r.bytes,
            passes: o.account.loops,
        });
    }
    if f.clients.is_empty() {
        return None;
    }
    f.clients.sort_by_key(|c| c.client);
    f.throughput_mb_s = per_s(bytes) / 1e6;
    Some(f)
}

fn write_chunk(spec: &OpsSpec) -> usize {
    let mut n: u64 = 64 << 10;
    for g in &spec.groups {
        if let Flow::Loadfile(lf) = &g.flow {
            for o in &lf.ops {
                if let Call::Read { size, .. } | Call::Write { size, .. } = o.call {
                    n = n.max(size);
                }
            }
        }
        for op in g.flow.ops() {
            n = n.max(match op {
                Op::WriteWhole { io_size, .. } => *io_size,
                Op::Append { len, .. } => len.max(),
                _ => 0,
            });
        }
    }
    n.min(MAX_CHUNK) as usize
}

fn read_chunk(spec: &OpsSpec) -> usize {
    let mut n: u64 = 64 << 10;
    for g in &spec.groups {
        for op in g.flow.ops() {
            if let Op::Read { io_size, .. } = op {
                n = n.max(*io_size);
            }
        }
    }
    n.min(MAX_CHUNK) as usize
}
