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

/// Why a cell cannot run on this host, or `None` when it can.
pub fn host_check(s: &crate::scenario::Scenario, p: &crate::model::CellParams, _allow_device: Option<&std::path::Path>) -> Option<crate::model::SkipReason> {
    // Placeholder until the provisioning stage lands: only the root check.
    let _ = p;
    if matches!(s.backing, crate::scenario::Backing::TmpfsLoop { .. }) && !nix::unistd::geteuid().is_root() {
        return Some(crate::model::SkipReason { reason: "needs root to mount tmpfs and attach loop devices".into(), remedy: Some("run as root, or use `--set backing.kind=dir`".into()) });
    }
    None
}
