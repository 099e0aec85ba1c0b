//! Scenario bundles: pack, verify and run, treating every bundle as untrusted input.

use crate::cli::{BundlePackArgs, BundleRunArgs, BundleVerifyArgs};

/// `fsbench bundle pack`.
pub fn cli_pack(_args: &BundlePackArgs) -> anyhow::Result<i32> {
    anyhow::bail!("bundles are not built yet (issue 7)")
}

/// `fsbench bundle verify`.
pub fn cli_verify(_args: &BundleVerifyArgs) -> anyhow::Result<i32> {
    anyhow::bail!("bundles are not built yet (issue 7)")
}

/// `fsbench bundle run`.
pub fn cli_run(_args: &BundleRunArgs) -> anyhow::Result<i32> {
    anyhow::bail!("bundles are not built yet (issue 7)")
}
