//! What `run.json` holds: the run's provenance, plan, shard and order.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::host::identity::HostInfo;
use crate::model::CellParams;
// Only the docs link to these; the schema's text keeps the bare names.
#[cfg(doc)]
use super::MAX_COUNTED_ENTRIES;
#[cfg(doc)]
use crate::model::RESULT_SCHEMA_VERSION;

/// Contents of `run.json`: what ran, where, when, and what was planned.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunMeta {
    /// Result format version ([`RESULT_SCHEMA_VERSION`]).
    pub schema: u32,
    /// fsbench version that wrote the run.
    pub tool_version: String,
    /// Directory name of the run (`20250101T120000Z-host`).
    pub run_id: String,
    /// Scenario name.
    pub scenario_name: String,
    /// Where the scenario text came from (a path or `<embedded:...>`).
    pub scenario_origin: String,
    /// The scenario text after overrides.
    pub scenario_text: String,
    /// sha256 of `scenario_text`, hex.
    pub scenario_sha256: String,
    /// The real archive (`[archive] path`) the run unpacked: what identifies it where paths
    /// differ. Absent for generated archives (the recipe in the text identifies them) and in
    /// runs written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive: Option<ArchiveFacts>,
    /// `lat_fs` or `steps`.
    pub workload: crate::model::WorkloadKind,
    /// `--label` (e.g. the kernel under test).
    #[serde(default)]
    pub label: Option<String>,
    /// The machine.
    pub host: HostInfo,
    /// Start, RFC 3339 UTC.
    pub started: String,
    /// End, RFC 3339 UTC; `None` while running or after a crash.
    #[serde(default)]
    pub finished: Option<String>,
    /// Every cell the plan contained, in plan order.
    pub planned_cells: Vec<CellParams>,
    /// True when the run stopped early (Ctrl-C, SIGTERM).
    #[serde(default)]
    pub interrupted: bool,
    /// Which part of a sharded run this is (`fsbench run --shard K/N`); absent when unsharded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<RunShard>,
    /// The environment preflight at the start (governor, THP, load, busy neighbours, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<crate::host::environment::Environment>,
    /// The order the cells ran in, when not the plan's (`run --order random --seed N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<RunOrder>,
    /// Set when fsbench did not measure this run in this directory: it was imported from a
    /// bundle or merged from shards. Such a run is never resumed (absent in measured runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub derived: Option<Derived>,
    /// What the user recorded about the run (`run --meta KEY=VALUE`: a commit, a branch),
    /// by key; absent when none was given. `history --order-by KEY` orders runs by one.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub meta: crate::model::run_tags::RunTags,
    /// Seed of the pair order of a paired run (`[compare]`), as every paired cell file
    /// records it too; absent in unpaired runs. `--resume` continues with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pair_seed: Option<u64>,
    /// The kernels of a kernel-paired run (`run --kernel A=… --kernel B=… --paired`), the
    /// baseline first: every member ran in a fresh qemu guest under its arm's kernel. Absent
    /// in other runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernels: Vec<RunKernel>,
}

/// Most kernels a kernel-paired run's `run.json` may list (an arm each).
pub const MAX_RUN_KERNELS: usize = 64;

/// One kernel of a kernel-paired run, as `run.json` records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunKernel {
    /// Its label: the arm's value, in cell ids as `-kernel=LABEL`.
    pub label: String,
    /// The kernel image booted.
    pub image: String,
    /// How qemu ran it: `kvm` or `tcg` (emulated: timings compare only with other TCG runs);
    /// absent when no guest of this kernel started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accel: Option<String>,
}

/// Where a run directory that fsbench did not measure there came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Derived {
    /// `imported` (from a bundle) or `merged` (from shards).
    pub kind: DerivedKind,
    /// What it came from: the bundle file, or the shard run directories.
    #[serde(default)]
    pub from: Vec<String>,
}

/// How a derived run came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DerivedKind {
    /// Copied out of a bundle by `fsbench bundle run`.
    Imported,
    /// Written by `fsbench merge --out` from the shards of a run.
    Merged,
}

impl std::fmt::Display for DerivedKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DerivedKind::Imported => "imported from a bundle",
            DerivedKind::Merged => "merged from shards",
        })
    }
}

/// How the cells of a run were ordered, as recorded in `run.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunOrder {
    /// `plan` or `random`.
    pub kind: String,
    /// Seed of the random order (the same seed and plan give the same order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Cell ids in the order they ran.
    #[serde(default)]
    pub cells: Vec<String>,
}

/// One shard of a sharded run, as recorded in `run.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunShard {
    /// Shard number K, from 1.
    pub index: u32,
    /// Number of shards N.
    pub count: u32,
    /// What the shards of one logical run share (`slurm-<array job id>`, or scenario hash and N).
    pub key: String,
    /// Cells in the whole (unsharded) plan.
    pub total_cells: usize,
    /// Position of each planned cell of this shard in the full expansion, parallel to `planned_cells`.
    pub cell_indices: Vec<usize>,
}

/// A real archive as a run used it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ArchiveFacts {
    /// sha256 of the .tar.gz, hex.
    pub sha256: String,
    /// Size in bytes.
    pub size: u64,
    /// Entries in the tar stream (metadata headers excluded); `None` past [`MAX_COUNTED_ENTRIES`].
    pub entries: Option<u64>,
    /// Its top-level directory (what `{archive.top}` stood for).
    pub top: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{RUN_FILE, load_run};

    #[test]
    fn workload_kind_keeps_its_json_and_an_unknown_one_is_a_load_error() {
        let mut m = RunMeta { workload: crate::model::WorkloadKind::Steps, ..Default::default() };
        let text = serde_json::to_string(&m).unwrap();
        assert!(text.contains(r#""workload":"steps""#), "{text}");
        m.workload = crate::model::WorkloadKind::LatFs;
        assert!(serde_json::to_string(&m).unwrap().contains(r#""workload":"lat_fs""#));
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join(RUN_FILE), text.replace(r#""workload":"steps""#, r#""workload":"iozone""#))
            .unwrap();
        let e = load_run(t.path()).unwrap_err().to_string();
        assert!(e.contains("unknown variant `iozone`") && e.contains("`lat_fs`") && e.contains("`fio`"), "{e}");
    }
}
