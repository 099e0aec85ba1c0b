//! What a forked worker process sends its parent over a pipe when its workers are done:
//! each worker's figures ([`WorkerOut`]) or error, as JSON. Histograms travel as their
//! non-empty buckets (re-recorded, they make the same histogram); a worker's end time as
//! nanoseconds after a reference `Instant` taken before the fork (std's `Instant` is
//! CLOCK_MONOTONIC, one clock for every process, so the parent adds them back to its copy).

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::account::{Account, KindAcc};
use super::error::OpsError;
use super::outcome::{Ended, WorkerOut};
use super::pace::Pacer;
use super::spec::{Rate, RateUnit};
use crate::monitor::latency;
use crate::scenario::op_kinds::{KIND_COUNT, OP_NAMES};

/// The most bytes the parent reads from one worker process (its report is a few KiB per
/// worker; a process of 4096 workers with every op kind stays far below).
pub const MAX_REPORT: usize = 256 << 20;

/// One worker process's report.
#[derive(Serialize, Deserialize)]
pub struct Report {
    /// The process's pid.
    pub pid: u32,
    /// Its workers, in their order.
    pub workers: Vec<Result<Out, Fail>>,
}

/// One worker's figures.
#[derive(Serialize, Deserialize)]
pub struct Out {
    kinds: Vec<Option<Kind>>,
    loops: u64,
    loop_hist: Vec<[u64; 2]>,
    ops: u64,
    bytes: u64,
    ended: String,
    cpu_us: (u64, u64),
    end_ns: u64,
    pace: Option<Pace>,
}

#[derive(Serialize, Deserialize)]
struct Kind {
    count: u64,
    bytes: u64,
    total_ns: u64,
    hist: Vec<[u64; 2]>,
}

#[derive(Serialize, Deserialize)]
struct Pace {
    per_s: f64,
    unit: String,
    starts: u64,
    behind: u64,
    lateness: Vec<[u64; 2]>,
}

/// One worker's error: an op's (with its errno) or any other, as text.
#[derive(Serialize, Deserialize)]
pub enum Fail {
    /// [`OpsError::Op`].
    Op { op: String, worker: String, path: String, errno: Option<i32>, message: String },
    /// Any other error, as its message.
    Other { worker: String, message: String },
}

const ENDED: [Ended; 5] = [Ended::Stopped, Ended::Loops, Ended::Ops, Ended::Bytes, Ended::OutOfFiles];

impl Out {
    /// `o` with its end relative to `base`.
    pub fn of(o: &WorkerOut, base: Instant) -> Out {
        let a = &o.account;
        Out {
            kinds: a
                .kinds
                .iter()
                .map(|k| {
                    k.as_ref().map(|k| Kind {
                        count: k.count,
                        bytes: k.bytes,
                        total_ns: k.total_ns,
                        hist: latency::buckets(&k.hist),
                    })
                })
                .collect(),
            loops: a.loops,
            loop_hist: latency::buckets(&a.loop_hist),
            ops: a.ops,
            bytes: a.bytes,
            ended: o.ended.name().to_string(),
            cpu_us: o.cpu_us,
            end_ns: o.end.saturating_duration_since(base).as_nanos().min(u64::MAX as u128) as u64,
            pace: o.pace.as_ref().map(|p| {
                let (rate, starts, behind, h) = p.parts();
                Pace { per_s: rate.per_s, unit: rate.unit.name().into(), starts, behind, lateness: latency::buckets(h) }
            }),
        }
    }

    /// The figures back, the end at `base` plus what was sent; `None` when malformed.
    pub fn into_worker_out(self, base: Instant) -> Option<WorkerOut> {
        if self.kinds.len() != KIND_COUNT {
            return None;
        }
        let hist = |b: &[[u64; 2]]| {
            let mut h = latency::histogram();
            latency::add_buckets(&mut h, b);
            h
        };
        let mut account = Account::new(&[]);
        for (slot, k) in account.kinds.iter_mut().zip(self.kinds) {
            *slot = k.map(|k| KindAcc { count: k.count, bytes: k.bytes, total_ns: k.total_ns, hist: hist(&k.hist) });
        }
        account.loops = self.loops;
        account.loop_hist = hist(&self.loop_hist);
        account.ops = self.ops;
        account.bytes = self.bytes;
        let pace = match self.pace {
            None => None,
            Some(p) => {
                let unit = [RateUnit::Loops, RateUnit::Ops].into_iter().find(|u| u.name() == p.unit)?;
                Some(Pacer::from_parts(Rate { per_s: p.per_s, unit }, p.starts, p.behind, hist(&p.lateness)))
            }
        };
        Some(WorkerOut {
            account,
            ended: ENDED.into_iter().find(|e| e.name() == self.ended)?,
            cpu_us: self.cpu_us,
            end: base + Duration::from_nanos(self.end_ns),
            replay: None,
            pace,
        })
    }
}

impl Fail {
    /// `e` of worker `worker`, to send.
    pub fn of(e: &OpsError, worker: &str) -> Fail {
        match e {
            OpsError::Op { op, worker, path, source } => Fail::Op {
                op: op.to_string(),
                worker: worker.clone(),
                path: path.clone(),
                errno: source.raw_os_error(),
                message: source.to_string(),
            },
            OpsError::Worker { worker, message } => Fail::Other { worker: worker.clone(), message: message.clone() },
            other => Fail::Other { worker: worker.to_string(), message: other.to_string() },
        }
    }

    /// The error back (an op's with its errno, so it reads as a thread's would).
    pub fn into_error(self) -> OpsError {
        match self {
            Fail::Op { op, worker, path, errno, message } => {
                let source = errno.map_or_else(|| std::io::Error::other(message), std::io::Error::from_raw_os_error);
                match OP_NAMES.iter().find(|n| **n == op) {
                    Some(op) => OpsError::Op { op, worker, path, source },
                    None => OpsError::Worker { worker, message: format!("op `{op}` on {path}: {source}") },
                }
            }
            Fail::Other { worker, message } => OpsError::Worker { worker, message },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_and_errors_come_back_as_they_left() {
        let base = Instant::now();
        let (open, read) = (1, 3);
        let mut account = Account::new(&[open, read]);
        account.record(open, Duration::from_micros(13), 0);
        account.record(read, Duration::from_micros(170), 4096);
        account.record(read, Duration::from_millis(3), 8192);
        account.loop_done(Duration::from_micros(900));
        let mut pace = Pacer::new(Rate { per_s: 1e6, unit: RateUnit::Ops });
        pace.start(&std::sync::atomic::AtomicBool::new(false));
        let o = WorkerOut {
            account,
            ended: Ended::Loops,
            cpu_us: (12, 34),
            end: base + Duration::from_millis(5),
            replay: None,
            pace: Some(pace),
        };
        let text = serde_json::to_string(&Report { pid: 9, workers: vec![Ok(Out::of(&o, base))] }).unwrap();
        let r: Report = serde_json::from_str(&text).unwrap();
        let back = r.workers.into_iter().next().unwrap().ok().unwrap().into_worker_out(base).unwrap();
        assert_eq!((back.ended, back.cpu_us, back.end), (Ended::Loops, (12, 34), o.end));
        let (a, b) = (back.account.stats(&[open, read], 1.0), o.account.stats(&[open, read], 1.0));
        assert_eq!(a, b);
        assert_eq!(latency::dist(&back.account.loop_hist), latency::dist(&o.account.loop_hist));
        assert_eq!(pace::figures([back.pace.as_ref().unwrap()]), pace::figures([o.pace.as_ref().unwrap()]));

        let e = OpsError::Op {
            op: "create",
            worker: "g#1.0".into(),
            path: "set/00000001".into(),
            source: std::io::Error::from_raw_os_error(libc::ENOSPC),
        };
        let back = Fail::of(&e, "g#1.0").into_error();
        assert_eq!(back.to_string(), e.to_string());
        assert!(
            matches!(back, OpsError::Op { op: "create", ref source, .. } if source.raw_os_error() == Some(libc::ENOSPC))
        );
    }

    use super::super::pace;
}
