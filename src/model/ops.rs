//! What an op-mix cell measured (`[workload] kind = "ops"`): per repetition, every op
//! kind's count, bytes and latency distribution, the loops the workers ran and their CPU
//! time; the filesets as they were built; statistics of the headline figures.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Counters, Disturbance, LatencyDist, Summary};

/// The figures `gate --metric` and `[gate] thresholds` name for op-mix cells: all ops per
/// second, the 99th percentile of every op's latency (µs), and bytes moved per second.
pub const OPS_METRICS: &[&str] = &["ops", "p99", "mbps"];

/// The measurements of one op-mix cell.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OpsResult {
    /// The filesets as built before the first timed window.
    pub filesets: Vec<FilesetRecord>,
    /// Every repetition, disturbed ones included.
    pub repetitions: Vec<OpsRepetition>,
    /// All ops per second, over the undisturbed repetitions.
    pub ops_per_s: Summary,
    /// 99th percentile of every op's latency, µs, over the undisturbed repetitions.
    pub p99_us: Summary,
    /// Bytes read and written per second / 10^6, over the undisturbed repetitions.
    pub mb_per_s: Summary,
}

impl OpsResult {
    /// Rounds stored: one more than the last repetition's round (0 with no repetitions).
    pub fn rounds_done(&self) -> u32 {
        self.repetitions.iter().map(|r| r.round + 1).max().unwrap_or(0)
    }
}

/// One timed window of every worker.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OpsRepetition {
    /// 0-based repetition number.
    pub index: u32,
    /// Wall time from the start barrier (or the end of the warm-up) to the last worker's
    /// stop, seconds.
    pub elapsed_s: f64,
    /// The warm-up the workers ran before the window (`workload.warmup`), seconds; its
    /// figures are not in any of this repetition's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_s: Option<f64>,
    /// Workers (threads over all groups and their processes).
    pub threads: u32,
    /// Worker processes that ran the groups with `processes` (each a distinct pid that
    /// reported figures); absent when every worker was a thread of fsbench.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes: Option<u32>,
    /// Loops (or mix transactions) completed, over all workers.
    pub loops: u64,
    /// Why the workers stopped: `duration`, `loops`, `ops`, `bytes`, `first_done`, `out_of_files`.
    pub stop: String,
    /// One line per op kind that ran, in the order of first appearance in the scenario.
    pub ops: Vec<OpStat>,
    /// Every op together (`op = "total"`).
    pub total: OpStat,
    /// Latency of a whole loop (or transaction), delays included.
    pub loop_latency: LatencyDist,
    /// User CPU time of the workers, seconds.
    pub cpu_user_s: f64,
    /// System CPU time of the workers, seconds.
    pub cpu_sys_s: f64,
    /// Other processes' CPU use during the window; `disturbed` leaves it out of statistics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbance: Option<Disturbance>,
    /// Block-device and vm counters of the cell's filesystems over the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<Counters>,
    /// The member measurement of a paired run this repetition belongs to, from 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub round: u32,
    /// The dbench loadfile replay's own figures, when a group replays a loadfile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loadfile: Option<LoadfileFigures>,
    /// How far behind their schedule the workers started, under `workload.rate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pace: Option<PaceFigures>,
}

/// The open-loop pace of one window (`workload.rate`), over every worker.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PaceFigures {
    /// Scheduled starts per second, per worker.
    pub rate_per_s: f64,
    /// What a start is: `loops` or `ops`.
    pub unit: String,
    /// Starts made, every worker.
    pub starts: u64,
    /// Starts a worker reached already behind their schedule (it did not sleep).
    pub behind: u64,
    /// Each start's lateness, from its scheduled time to when it began (0 when on time; a
    /// start that slept is late by the sleep's overshoot), nanoseconds.
    pub lateness: LatencyDist,
}

/// What the clients replaying a dbench loadfile did in one window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LoadfileFigures {
    /// dbench's figure: bytes read (ReadX) and written (WriteX) by every client per second
    /// of the window, MB/s (10^6 bytes).
    pub throughput_mb_s: f64,
    /// Loadfile ops performed, every client.
    pub ops: u64,
    /// Ops performed whose recorded status was an error (their failure is expected).
    pub expected_errors: u64,
    /// Ops whose outcome (success or failure) differs from the recorded status.
    pub status_mismatches: u64,
    /// Ops naming a handle the client did not hold open (not performed, not timed).
    pub unknown_handles: u64,
    /// One line per client, by client number.
    pub clients: Vec<ClientFigures>,
}

/// One loadfile client's window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClientFigures {
    /// Client number (its directory is `clients/client<N>`).
    pub client: u32,
    /// Ops performed.
    pub ops: u64,
    /// Ops per second of the window.
    pub ops_per_s: f64,
    /// Bytes read and written.
    pub bytes: u64,
    /// Complete passes over the loadfile.
    pub passes: u64,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl OpsRepetition {
    /// Whether this repetition counts towards statistics (not disturbed).
    pub fn counts(&self) -> bool {
        !self.disturbance.as_ref().is_some_and(|d| d.disturbed)
    }
}

/// One op kind's figures over a window (or all kinds together).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OpStat {
    /// The op as the scenario names it (`open`, `read`, `append`, ...), or `total`.
    pub op: String,
    /// Ops completed.
    pub count: u64,
    /// Bytes read or written by them.
    pub bytes: u64,
    /// count / window.
    pub ops_per_s: f64,
    /// bytes / window / 10^6.
    pub mb_per_s: f64,
    /// Time spent inside the op's system calls, summed over the workers, nanoseconds.
    pub total_ns: u64,
    /// Latency of one op, timed around its system calls only.
    pub latency: LatencyDist,
}

/// A fileset as it was built (or found, when reused).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FilesetRecord {
    /// The fileset's name (its directory beneath the cell's directory).
    pub name: String,
    /// Seed of the layout and size draws.
    pub seed: u64,
    /// Entries (files that exist or may be created).
    pub entries: u64,
    /// Directories made, the fileset's own included.
    pub dirs: u64,
    /// Directories that hold files.
    pub leaf_dirs: u64,
    /// Files that existed when the timed window opened.
    pub preallocated: u64,
    /// Bytes written into them.
    pub bytes: u64,
    /// The entries' declared sizes: `[lower bound, count]` of power-of-two buckets
    /// (`[0, n]` for empty files, `[4096, n]` for 4096..8191), ascending.
    pub size_histogram: Vec<[u64; 2]>,
    /// Taken as a previous repetition left it instead of being rebuilt.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reused: bool,
    /// Seconds the build took (untimed for the workload).
    pub build_s: f64,
}

/// An op-mix figure that gates and comparisons judge, one value per repetition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpsMetric {
    /// All ops per second (higher is better).
    Ops,
    /// 99th percentile latency over all ops, µs (lower is better).
    P99,
    /// Bytes read and written per second / 10^6 (higher is better).
    Mbps,
}

impl OpsMetric {
    /// The metric named `name` (one of [`OPS_METRICS`]).
    pub fn parse(name: &str) -> Option<OpsMetric> {
        Some(match name {
            "ops" => OpsMetric::Ops,
            "p99" => OpsMetric::P99,
            "mbps" => OpsMetric::Mbps,
            _ => return None,
        })
    }

    /// Its name, as `--metric` takes it.
    pub fn name(self) -> &'static str {
        match self {
            OpsMetric::Ops => "ops",
            OpsMetric::P99 => "p99",
            OpsMetric::Mbps => "mbps",
        }
    }

    /// Unit of its values.
    pub fn unit(self) -> &'static str {
        match self {
            OpsMetric::Ops => "ops/s",
            OpsMetric::P99 => "µs",
            OpsMetric::Mbps => "MB/s",
        }
    }

    /// Throughput is better higher, latency lower.
    pub fn higher_is_better(self) -> bool {
        !matches!(self, OpsMetric::P99)
    }

    /// Its value in one repetition.
    pub fn of(self, r: &OpsRepetition) -> f64 {
        match self {
            OpsMetric::Ops => r.total.ops_per_s,
            OpsMetric::P99 => r.total.latency.p99_ns as f64 / 1e3,
            OpsMetric::Mbps => r.total.mb_per_s,
        }
    }
}
