//! Drives one run: for each cell, check, provision, run the workload, store the result.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::cli::RunArgs;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// True once SIGINT or SIGTERM has been received.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// `fsbench run`.
pub fn cli_run(_args: &RunArgs) -> anyhow::Result<i32> {
    anyhow::bail!("run is not wired yet")
}
