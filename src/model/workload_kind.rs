//! Which workload a run measured.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a run measured, as `run.json`'s `workload` says it: `"lat_fs"`, `"steps"`, `"fio"` or `"ops"`.
/// Any other value is refused when the file is read (serde names the value and the valid ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
pub enum WorkloadKind {
    /// lat_fs loops per task over a timed window (seed 000).
    #[default]
    #[serde(rename = "lat_fs")]
    LatFs,
    /// Steps timed as time(1) does, every iteration kept (seed 002).
    #[serde(rename = "steps")]
    Steps,
    /// A fio job per repetition: IOPS, bandwidth and completion latency (docs/fio.md).
    #[serde(rename = "fio")]
    Fio,
    /// A declared op mix: per-op counts, throughput and latency (docs/ops.md).
    #[serde(rename = "ops")]
    Ops,
}

impl WorkloadKind {
    /// The name as `run.json` and the scenario's `workload.kind` spell it.
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::LatFs => "lat_fs",
            WorkloadKind::Steps => "steps",
            WorkloadKind::Fio => "fio",
            WorkloadKind::Ops => "ops",
        }
    }
}

impl fmt::Display for WorkloadKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
