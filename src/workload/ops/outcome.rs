//! What a worker of an op mix, or a loadfile client, hands back when it stops: its
//! account, why it stopped, its CPU time, and a client's own replay counts.

use std::time::Instant;

use super::account::Account;
use super::pace::Pacer;
use super::spec::Stop;

/// Why a worker stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The stop flag was raised (duration, first done, interrupt, another's error).
    Stopped,
    /// It ran its loops.
    Loops,
    /// It ran its ops (`workload.ops`).
    Ops,
    /// It moved its bytes (`workload.bytes`).
    Bytes,
    /// A create found no free entry, or an open no existing file.
    OutOfFiles,
}

/// What a worker hands back.
pub struct WorkerOut {
    /// Its figures.
    pub account: Account,
    /// Why it stopped.
    pub ended: Ended,
    /// User and system CPU time over its window, µs.
    pub cpu_us: (u64, u64),
    /// When it stopped.
    pub end: Instant,
    /// A loadfile client's own counts.
    pub replay: Option<ReplayOut>,
    /// Its schedule and lateness, under a rate.
    pub pace: Option<Pacer>,
}

impl Ended {
    /// Whether it ran to one of its own counts (loops, ops, bytes): done, for `first_done`.
    pub fn counted(self) -> bool {
        matches!(self, Ended::Loops | Ended::Ops | Ended::Bytes)
    }

    /// The count it ran to, as a repetition's `stop` names it.
    pub fn name(self) -> &'static str {
        match self {
            Ended::Stopped => "duration",
            Ended::Loops => "loops",
            Ended::Ops => "ops",
            Ended::Bytes => "bytes",
            Ended::OutOfFiles => "out_of_files",
        }
    }
}

/// Whether `acct` reached the per-worker op or byte count of `limits`, and which.
pub fn count_reached(acct: &Account, limits: &Stop) -> Option<Ended> {
    if limits.ops.is_some_and(|n| acct.ops >= n) {
        Some(Ended::Ops)
    } else if limits.bytes.is_some_and(|n| acct.bytes >= n) {
        Some(Ended::Bytes)
    } else {
        None
    }
}

/// A client's counts beyond the per-op account.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReplayOut {
    /// Client number.
    pub client: u32,
    /// Ops performed.
    pub ops: u64,
    /// Bytes read and written.
    pub bytes: u64,
    /// Ops performed whose recorded status was an error.
    pub expected_errors: u64,
    /// Ops whose outcome differed from the recorded status.
    pub mismatches: u64,
    /// Ops on a handle the client did not hold.
    pub unknown_handles: u64,
}
