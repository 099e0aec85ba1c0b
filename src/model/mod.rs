//! Plain data passed between the stages: cells, what provisioning built, what
//! the workloads measured, and the per-cell result that the store writes.
//!
//! Every stage talks through these types only, so they are deliberately dumb:
//! no methods with side effects, all serde, all stable field names (they are
//! the on-disk result format, see `schemas/result.schema.json`).

mod cell;
mod cell_result;
mod cgroup;
mod disturbance;
mod fio;
mod label;
mod latfs;
mod monitors;
mod ops;
pub mod pairing;
mod profile;
pub mod run_tags;
mod status;
mod steps;
mod summary;
mod untrusted_text;
mod workload_kind;

/// Most repetitions, iterations, steps or tasks a cell file may hold (`results::bounds`
/// checks loaded files against it; a paired steps scenario that could exceed it is refused).
pub const MAX_SAMPLES: usize = 100_000;

pub use cell::{CellParams, LatfsTest, Layout, QuotaImpl, QuotaMode};
pub use cell_result::{CellResult, FilesystemInfo};
pub use cgroup::{CellCgroup, CgroupLimitRecord};
pub use disturbance::Disturbance;
pub use fio::{FIO_METRICS, FioDirection, FioJobStats, FioLatency, FioMetric, FioRepetition, FioResult};
pub use label::{LABEL_RULE, is_valid_label};
pub use latfs::{LatfsRepetition, LatfsResult, StopReason, TaskSample, round_samples};
pub use monitors::{Counters, DeviceCounters, LatencyDist, Timeline, TimelineSample, VmCounters};
pub use ops::{
    ClientFigures, FilesetRecord, LoadfileFigures, OPS_METRICS, OpStat, OpsMetric, OpsRepetition, OpsResult,
    PaceFigures,
};
pub use profile::{CellProfile, ProfileMode, WEIGHT_US_BLOCKED};
pub use status::{CellStatus, SkipReason};
pub use steps::{StepTiming, StepsCopy, StepsResult};
pub use summary::Summary;
pub use untrusted_text::{TextFormat, UntrustedText};
pub use workload_kind::WorkloadKind;

/// Version of the on-disk result format (`run.json` and cell files).
///
/// Bumped only when a reader of the previous version would misread a file. Optional
/// fields added inside the measurements (kernel `counters`, `timeline`, `latency_dist`)
/// are not such a change: those structs ignore unknown fields, so version-1 readers load
/// the files and skip what they do not know, and files without them load here.
pub const RESULT_SCHEMA_VERSION: u32 = 1;

/// Version of every command's JSON document (`app::output`, `crate::report::json`).
pub const OUTPUT_SCHEMA_VERSION: u32 = 1;
