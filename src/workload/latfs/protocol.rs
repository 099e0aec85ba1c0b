//! What the parent and a worker say to each other.
//!
//! The parent passes a [`WorkerConfig`] as `--key=value` arguments of the hidden
//! `__latfs-worker` subcommand. The worker answers on its stdout with one line
//! per phase ([`WorkerMessage`]): `ready` after its untimed setup, then
//! `result <iterations> <window_ns> [<value_ns>:<count> ...]` (the histogram's
//! non-empty buckets when latency is histogrammed) or, at any point, `error <errno> <what>`.
//! The start barrier is one byte the parent writes on each worker's stdin.
//! Each line is written with a single write(2); all but a result line with a
//! histogram stay well below PIPE_BUF, and the worker is its pipe's only writer,
//! so the parent never sees half a line or two lines mixed.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use crate::model::LatfsTest;

/// Everything one worker needs to know, passed on its command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerConfig {
    /// Which loop to run.
    pub test: LatfsTest,
    /// Task number, from 0 (names the worker in errors).
    pub task: u32,
    /// The directory the worker chdir()s into and works in.
    pub dir: PathBuf,
    /// The task's uid and gid when the scenario asks for per-task ids (lmbench `-U`).
    pub ids: Option<(u32, u32)>,
    /// Extra quota references to hold open (lmbench `-L`).
    pub quota_refs: u32,
    /// Open O_WRONLY rather than O_RDONLY (lmbench `-w`).
    pub open_for_write: bool,
    /// Untimed warm-up before the window.
    pub warmup: Duration,
    /// Length of the timed window.
    pub duration: Duration,
    /// The CPU to pin the worker to (sched_setaffinity), for `pin = "spread"`.
    pub cpu: Option<u32>,
    /// Time every iteration into a histogram (`latency = "histogram"`).
    pub histogram: bool,
}

/// The uid and gid of task `task` with per-task ids: lmbench `-U`'s spacing from a base no
/// user, group or process of this host holds ([`crate::host::task_uids`]).
pub fn task_ids(task: u32) -> (u32, u32) {
    crate::host::task_uids::task_ids(task)
}

/// A worker command line that could not be understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad lat_fs worker argument `{arg}`: {why}")]
pub struct ArgsError {
    /// The offending argument.
    pub arg: String,
    /// What is wrong with it.
    pub why: String,
}

impl WorkerConfig {
    /// Encode as arguments following `__latfs-worker`.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> =
            vec![format!("--test={}", self.test.name()).into(), format!("--task={}", self.task).into()];
        if let Some((uid, gid)) = self.ids {
            args.push(format!("--uid={uid}").into());
            args.push(format!("--gid={gid}").into());
        }
        args.push(format!("--quota-refs={}", self.quota_refs).into());
        args.push(format!("--write={}", u8::from(self.open_for_write)).into());
        args.push(format!("--warmup-ns={}", self.warmup.as_nanos()).into());
        args.push(format!("--duration-ns={}", self.duration.as_nanos()).into());
        if let Some(cpu) = self.cpu {
            args.push(format!("--cpu={cpu}").into());
        }
        if self.histogram {
            args.push("--histogram=1".into());
        }
        let mut dir = OsString::from("--dir=");
        dir.push(self.dir.as_os_str());
        args.push(dir);
        args
    }

    /// Decode the arguments made by [`WorkerConfig::to_args`].
    pub fn from_args(args: &[String]) -> Result<WorkerConfig, ArgsError> {
        let bad = |arg: &str, why: &str| ArgsError { arg: arg.to_string(), why: why.to_string() };
        let (mut test, mut task, mut dir) = (None, None, None);
        let (mut uid, mut gid) = (None, None);
        let (mut quota_refs, mut write, mut warmup, mut duration) = (0, false, None, None);
        let mut cpu = None;
        let mut histogram = false;
        for arg in args {
            let (key, value) = arg
                .strip_prefix("--")
                .and_then(|a| a.split_once('='))
                .ok_or_else(|| bad(arg, "expected --key=value"))?;
            let num = |v: &str| v.parse::<u64>().map_err(|_| bad(arg, "not a number"));
            let num32 = |v: &str| v.parse::<u32>().map_err(|_| bad(arg, "not a 32-bit number"));
            match key {
                "test" => test = Some(value.parse::<LatfsTest>().map_err(|e| bad(arg, &e))?),
                "task" => task = Some(num32(value)?),
                "uid" => uid = Some(num32(value)?),
                "gid" => gid = Some(num32(value)?),
                "quota-refs" => quota_refs = num32(value)?,
                "write" => write = num(value)? != 0,
                "warmup-ns" => warmup = Some(Duration::from_nanos(num(value)?)),
                "duration-ns" => duration = Some(Duration::from_nanos(num(value)?)),
                "dir" => dir = Some(PathBuf::from(value)),
                "cpu" => cpu = Some(num32(value)?),
                "histogram" => histogram = num(value)? != 0,
                _ => return Err(bad(arg, "unknown key")),
            }
        }
        let missing = |k: &str| bad(k, "missing");
        let ids = match (uid, gid) {
            (Some(u), Some(g)) => Some((u, g)),
            (None, None) => None,
            _ => return Err(bad("--uid/--gid", "give both or neither")),
        };
        Ok(WorkerConfig {
            test: test.ok_or_else(|| missing("--test"))?,
            task: task.ok_or_else(|| missing("--task"))?,
            dir: dir.ok_or_else(|| missing("--dir"))?,
            ids,
            quota_refs,
            open_for_write: write,
            warmup: warmup.ok_or_else(|| missing("--warmup-ns"))?,
            duration: duration.ok_or_else(|| missing("--duration-ns"))?,
            cpu,
            histogram,
        })
    }
}

/// One line from a worker to the parent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkerMessage {
    /// Setup done; waiting for the start byte.
    Ready,
    /// The timed window: iterations completed and its exact length.
    Result {
        /// Iterations of the loop in the window.
        iterations: u64,
        /// Window length in nanoseconds.
        window_ns: u64,
        /// `[value_ns, count]` buckets of the iteration latencies, when histogrammed.
        latency: Option<Vec<[u64; 2]>>,
    },
    /// The worker failed; `errno` is 0 when no system call is to blame.
    Error {
        /// The errno of the failing call, or 0.
        errno: i32,
        /// What failed, in words (`open test: EACCES: Permission denied`).
        what: String,
    },
}

impl fmt::Display for WorkerMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkerMessage::Ready => writeln!(f, "ready"),
            WorkerMessage::Result { iterations, window_ns, latency: None } => {
                writeln!(f, "result {iterations} {window_ns}")
            }
            WorkerMessage::Result { iterations, window_ns, latency: Some(b) } => {
                write!(f, "result {iterations} {window_ns} h")?;
                for [v, c] in b {
                    write!(f, " {v}:{c}")?;
                }
                writeln!(f)
            }
            // A newline inside the message would split it into two lines.
            WorkerMessage::Error { errno, what } => writeln!(f, "error {errno} {}", what.replace('\n', " ")),
        }
    }
}

impl WorkerMessage {
    /// Parse one line (with or without its newline); `None` if it is not a message.
    pub fn parse(line: &str) -> Option<WorkerMessage> {
        let line = line.trim_end_matches('\n');
        let mut words = line.splitn(3, ' ');
        match words.next()? {
            "ready" if words.next().is_none() => Some(WorkerMessage::Ready),
            "result" => {
                let iterations = words.next()?.parse().ok()?;
                let rest = words.next()?;
                let (window, hist) = match rest.split_once(' ') {
                    Some((w, h)) => (w, Some(h.strip_prefix('h')?)),
                    None => (rest, None),
                };
                let window_ns = window.parse().ok()?;
                let latency = match hist {
                    Some(h) => Some(crate::monitor::latency::decode(h)?),
                    None => None,
                };
                Some(WorkerMessage::Result { iterations, window_ns, latency })
            }
            "error" => {
                let errno = words.next()?.parse().ok()?;
                Some(WorkerMessage::Error { errno, what: words.next().unwrap_or("").to_string() })
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> WorkerConfig {
        WorkerConfig {
            test: LatfsTest::WriteTruncate,
            task: 3,
            dir: PathBuf::from("/tmp/x y/3"),
            ids: Some(task_ids(3)),
            quota_refs: 2,
            open_for_write: true,
            warmup: Duration::from_millis(300),
            duration: Duration::from_secs(1),
            cpu: Some(1),
            histogram: false,
        }
    }

    fn strings(args: Vec<OsString>) -> Vec<String> {
        args.into_iter().map(|a| a.into_string().unwrap()).collect()
    }

    #[test]
    fn config_round_trips_through_args() {
        let c = sample();
        assert_eq!(WorkerConfig::from_args(&strings(c.to_args())).unwrap(), c);
        let c = WorkerConfig { ids: None, open_for_write: false, quota_refs: 0, histogram: true, ..sample() };
        assert_eq!(WorkerConfig::from_args(&strings(c.to_args())).unwrap(), c);
    }

    #[test]
    fn task_ids_follow_lmbench_u_spacing_from_a_free_base() {
        let b = crate::host::task_uids::base();
        assert_eq!(task_ids(0), (b, b));
        assert_eq!(task_ids(1), (b + 8, b + 8));
        assert_eq!(task_ids(7), (b + 56, b + 56));
        assert_ne!(b, crate::host::task_uids::LMBENCH_BASE);
    }

    #[test]
    fn bad_args_name_the_argument() {
        let mut args = strings(sample().to_args());
        args.push("--frobnicate=1".into());
        assert_eq!(WorkerConfig::from_args(&args).unwrap_err().arg, "--frobnicate=1");
        let args: Vec<String> = strings(sample().to_args()).into_iter().filter(|a| !a.starts_with("--gid")).collect();
        assert!(WorkerConfig::from_args(&args).is_err());
        let args: Vec<String> = strings(sample().to_args()).into_iter().filter(|a| !a.starts_with("--dir")).collect();
        assert_eq!(WorkerConfig::from_args(&args).unwrap_err().arg, "--dir");
        assert!(WorkerConfig::from_args(&["--test=chmod".into()]).is_err());
    }

    #[test]
    fn messages_round_trip() {
        for m in [
            WorkerMessage::Ready,
            WorkerMessage::Result { iterations: 617_000, window_ns: 1_000_042_123, latency: None },
            WorkerMessage::Result { iterations: 3, window_ns: 9, latency: Some(vec![[1503, 2], [2_001_000, 1]]) },
            WorkerMessage::Result { iterations: 0, window_ns: 9, latency: Some(vec![]) },
            WorkerMessage::Error { errno: 13, what: "open test: EACCES: Permission denied".into() },
        ] {
            assert_eq!(WorkerMessage::parse(&m.to_string()), Some(m));
        }
        let multi = WorkerMessage::Error { errno: 0, what: "a\nb".into() };
        assert_eq!(multi.to_string(), "error 0 a b\n");
        assert_eq!(WorkerMessage::parse("thread 'main' panicked"), None);
        assert_eq!(WorkerMessage::parse("result 12"), None);
        assert_eq!(WorkerMessage::parse("result 12 34 h 5:x"), None);
    }
}
