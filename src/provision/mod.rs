//! Provisioning: real filesystems for a cell (tmpfs, sparse image, loop device,
//! mkfs, mount, quota), each held by an RAII guard and torn down in reverse order.

use crate::cli::DoctorArgs;

/// `fsbench doctor`.
pub fn cli_doctor(_args: &DoctorArgs) -> anyhow::Result<i32> {
    anyhow::bail!("capability detection is not built yet (issue 3)")
}
