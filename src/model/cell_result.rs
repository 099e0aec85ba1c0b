//! The file one cell's result is stored as, and the filesystems it ran on.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{CellParams, CellStatus, FioResult, LatfsResult, SkipReason, StepsResult};
// Only the docs link to it; the schema's text keeps the bare `[`RESULT_SCHEMA_VERSION`]`.
#[cfg(doc)]
use super::RESULT_SCHEMA_VERSION;

/// The result of one cell, as written to `<run-dir>/cells/<cell-id>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CellResult {
    /// Result format version ([`RESULT_SCHEMA_VERSION`]).
    pub schema: u32,
    /// Cell identifier (`ext4-S-qoff-t2-chown`).
    pub id: String,
    /// Axis values of the cell.
    pub params: CellParams,
    /// ok, skipped, failed or disturbed.
    pub status: CellStatus,
    /// For skipped cells: why, and what to do about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip: Option<SkipReason>,
    /// For failed cells: the error and its causes (`round N: ...` when a later round failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Things a reader of the numbers should know (e.g. per-task uids not applied without root).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The filesystems the cell ran on.
    #[serde(default)]
    pub filesystems: Vec<FilesystemInfo>,
    /// lat_fs measurements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latfs: Option<LatfsResult>,
    /// Step measurements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<StepsResult>,
    /// fio measurements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fio: Option<FioResult>,
    /// Op-mix measurements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ops: Option<super::OpsResult>,
    /// Its part in a pair group, in a paired run (`[compare] arms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairing: Option<super::pairing::CellPairing>,
    /// The cgroup its workers ran in, with the limits read back (`[filesystems.X] cgroup`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<super::CellCgroup>,
    /// Its profile (`[workload] profile`): how it was taken and where it is, or why not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<super::CellProfile>,
    /// Paired runs: the profiles of its later profiled members (`pair` 1, 2, …; the first
    /// is `profile`), each stored as `profiles/<cell-id>.pair<k>.folded`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pair_profiles: Vec<super::CellProfile>,
    /// Start, RFC 3339 UTC.
    pub started: String,
    /// End, RFC 3339 UTC.
    pub finished: String,
}

impl CellResult {
    /// A result of the cell `p` with nothing measured yet, started (and so far finished) at
    /// `started`.
    pub fn new(p: &CellParams, status: CellStatus, started: &str) -> CellResult {
        CellResult {
            schema: super::RESULT_SCHEMA_VERSION,
            id: p.id(),
            params: p.clone(),
            status,
            skip: None,
            error: None,
            notes: Vec::new(),
            filesystems: Vec::new(),
            latfs: None,
            steps: None,
            fio: None,
            ops: None,
            pairing: None,
            cgroup: None,
            profile: None,
            pair_profiles: Vec::new(),
            started: started.to_string(),
            finished: started.to_string(),
        }
    }

    /// Whether the cell measured something a comparison may use, or why not (`failed: …`,
    /// `skipped`, `disturbed`): the one status ladder every workload's member value starts
    /// with. A workload then checks its own samples.
    pub fn usable(&self) -> Result<(), String> {
        self.measured()?;
        match self.status {
            CellStatus::Disturbed => Err("disturbed".into()),
            _ => Ok(()),
        }
    }

    /// Whether the cell measured something at all, or why not (`failed: …`, `skipped`): the
    /// ladder of a pair's member, which is not judged disturbed on its own (its partner's
    /// load decides, `host::pair_load`), so a disturbed cell passes.
    pub fn measured(&self) -> Result<(), String> {
        match self.status {
            CellStatus::Ok | CellStatus::Disturbed => Ok(()),
            CellStatus::Failed => Err(format!("failed: {}", self.error.as_deref().unwrap_or("unknown error"))),
            CellStatus::Skipped => Err("skipped".into()),
        }
    }
}

/// One filesystem as provisioning built it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FilesystemInfo {
    /// Filesystem type.
    pub fs: String,
    /// The block device made and mounted: a loop device (`/dev/loop3`) or the one named
    /// with `--allow-device`; `None` on backing `dir`.
    #[serde(default)]
    pub device: Option<String>,
    /// Backing image file, if any.
    #[serde(default)]
    pub image: Option<String>,
    /// Image size in bytes, if any.
    #[serde(default)]
    pub image_size: Option<u64>,
    /// Where it is mounted (or the directory used on backing `dir`).
    pub mountpoint: String,
    /// Full mkfs command line that was run.
    #[serde(default)]
    pub mkfs_argv: Vec<String>,
    /// Mount options the scenario asked for.
    #[serde(default)]
    pub mount_options_requested: Vec<String>,
    /// Per-mount options in effect, read back from /proc/self/mountinfo.
    #[serde(default)]
    pub mount_options: String,
    /// Superblock options in effect, read back from /proc/self/mountinfo.
    #[serde(default)]
    pub super_options: String,
    /// Filesystem features (e.g. from `dumpe2fs -h`), where known.
    #[serde(default)]
    pub features: Vec<String>,
    /// Quota state read back with quotactl(2): e.g. `user=on group=on`.
    #[serde(default)]
    pub quota_state: Option<String>,
    /// Backing `dir`: the cell ran in an existing directory, so `fs` is that directory's
    /// own filesystem (read back, not the scenario's) and no mkfs or mount option was applied.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub existing_dir: bool,
    /// Block queue settings read back after the scenario set them (`scheduler`, `read_ahead_kb`, `nr_requests`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub queue: std::collections::BTreeMap<String, String>,
}
