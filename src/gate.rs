//! The CI regression gate: baseline vs candidate, per-cell verdicts, exit code.

use crate::cli::GateArgs;

/// `fsbench gate`.
pub fn cli_gate(_args: &GateArgs) -> anyhow::Result<i32> {
    anyhow::bail!("the regression gate is not built yet (issue 7)")
}
