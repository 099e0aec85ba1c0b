//! Reports: seed-style tables, time(1)-style lines, plots, comparisons.

use crate::cli::{CompareArgs, ReportArgs};

/// `fsbench report`.
pub fn cli_report(_args: &ReportArgs) -> anyhow::Result<i32> {
    anyhow::bail!("reports are not built yet (issue 6)")
}

/// `fsbench compare`.
pub fn cli_compare(_args: &CompareArgs) -> anyhow::Result<i32> {
    anyhow::bail!("compare is not built yet (issue 6)")
}
