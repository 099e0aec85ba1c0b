//! The cgroup a cell's workers ran in, as the kernel held its limits.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The cell's cgroup (`[filesystems.X] cgroup`): which hierarchy held it and each limit
/// read back from the kernel after it was written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CellCgroup {
    /// `v2`, `v1`, or `hybrid` when the cell's controllers were split between the two.
    pub hierarchy: String,
    /// The group's name below each hierarchy's root (`fsbench/<run>.<cell-dir>`).
    pub name: String,
    /// One entry per file written, in the order written.
    pub limits: Vec<CgroupLimitRecord>,
}

/// One cgroup file fsbench wrote for a limit, with what the kernel held afterwards.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CgroupLimitRecord {
    /// The scenario's key: a cgroup v2 interface file (`cpu.max`).
    pub key: String,
    /// `v2` or `v1`: the hierarchy of the file's controller.
    pub hierarchy: String,
    /// The file written (`/sys/fs/cgroup/cpu/fsbench/…/cpu.cfs_quota_us`).
    pub file: String,
    /// What fsbench wrote into it.
    pub requested: String,
    /// What the file read afterwards (for per-device files, the device's line); the kernel
    /// rounds some values (memory to whole pages).
    pub in_effect: String,
}
