//! Matrix expansion: a scenario becomes an ordered list of cells.

use crate::cli::{PlanArgs, ValidateArgs};

/// `fsbench validate`.
pub fn cli_validate(_args: &ValidateArgs) -> anyhow::Result<i32> {
    anyhow::bail!("validate is not wired yet")
}

/// `fsbench plan`.
pub fn cli_plan(_args: &PlanArgs) -> anyhow::Result<i32> {
    anyhow::bail!("plan is not wired yet")
}
