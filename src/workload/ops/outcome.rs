//! What a worker of an op mix, or a loadfile client, hands back when it stops: its
//! account, why it stopped, its CPU time, and a client's own replay counts.

use std::time::Instant;

use super::account::Account;

/// Why a worker stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The stop flag was raised (duration, first done, interrupt, another's error).
    Stopped,
    /// It ran its loops.
    Loops,
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
