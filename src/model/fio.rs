//! What a fio cell measured: per repetition, fio's numbers per job and summed over
//! the jobs, and statistics of the cell's headline figures over its repetitions.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Counters, Disturbance, Summary};

/// The figures `gate --metric` and `[gate] thresholds` name for fio cells.
pub const FIO_METRICS: &[&str] = &["iops", "bw", "p99", "clat_mean"];

/// The measurements of one fio cell.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FioResult {
    /// fio's version as its JSON states it (`fio-3.33`).
    pub fio_version: String,
    /// The job file fsbench ran, as composed for this cell (the scenario's job plus what fsbench set).
    pub job: String,
    /// Every repetition, disturbed ones included.
    pub repetitions: Vec<FioRepetition>,
    /// Read plus write IOPS summed over jobs, over the undisturbed repetitions.
    pub iops: Summary,
    /// Read plus write bandwidth summed over jobs, bytes per second, over the undisturbed repetitions.
    pub bw_bytes: Summary,
    /// 99th percentile completion latency over every job's reads and writes, µs.
    pub clat_p99_us: Summary,
    /// Mean completion latency over every job's reads and writes, µs.
    pub clat_mean_us: Summary,
    /// Repetitions run again because they were disturbed (over all rounds).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reruns: u32,
}

/// One run of fio.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FioRepetition {
    /// 0-based repetition number.
    pub index: u32,
    /// The jobs summed: reads, writes and both together, and CPU.
    pub total: FioJobStats,
    /// Each job (and each `numjobs` clone) as fio reported it.
    pub jobs: Vec<FioJobStats>,
    /// Other processes' CPU use during the run; `disturbed` leaves it out of statistics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbance: Option<Disturbance>,
    /// Block-device and vm counters of the cell's filesystems over the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<Counters>,
    /// The member measurement of a paired run this repetition belongs to (the cell's
    /// round), from 0; absent in round 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub round: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl FioResult {
    /// Rounds stored: one more than the last repetition's round (0 with no repetitions).
    pub fn rounds_done(&self) -> u32 {
        self.repetitions.iter().map(|r| r.round + 1).max().unwrap_or(0)
    }
}

impl FioRepetition {
    /// Whether this repetition counts towards statistics (not disturbed).
    pub fn counts(&self) -> bool {
        !self.disturbance.as_ref().is_some_and(|d| d.disturbed)
    }
}

/// One job's figures (or the sum over jobs).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FioJobStats {
    /// fio's job name (`total` for the sum).
    pub name: String,
    /// Reads.
    pub read: FioDirection,
    /// Writes.
    pub write: FioDirection,
    /// Reads and writes together (latency over both, IOPS and bandwidth summed).
    pub all: FioDirection,
    /// User CPU, percent of one CPU over the job's run time (summed over jobs for the total).
    pub usr_cpu: f64,
    /// System CPU, percent of one CPU over the job's run time (summed over jobs for the total).
    pub sys_cpu: f64,
}

/// One direction of I/O of a job.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FioDirection {
    /// I/O operations completed per second.
    pub iops: f64,
    /// Bytes per second.
    pub bw_bytes: f64,
    /// I/O operations completed.
    pub total_ios: u64,
    /// Completion latency, ns: mean and percentiles (all 0 when no I/O completed).
    pub clat_ns: FioLatency,
}

/// Completion latency of a direction, ns.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FioLatency {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p99_9: f64,
}

/// A fio figure that gates and comparisons judge, one value per repetition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FioMetric {
    /// Read plus write IOPS of all jobs (higher is better).
    Iops,
    /// Read plus write bandwidth of all jobs, MiB/s (higher is better).
    Bw,
    /// 99th percentile completion latency over all jobs, µs (lower is better).
    P99,
    /// Mean completion latency over all jobs, µs (lower is better).
    ClatMean,
}

impl FioMetric {
    /// The metric named `name` (one of [`FIO_METRICS`]).
    pub fn parse(name: &str) -> Option<FioMetric> {
        Some(match name {
            "iops" => FioMetric::Iops,
            "bw" => FioMetric::Bw,
            "p99" => FioMetric::P99,
            "clat_mean" => FioMetric::ClatMean,
            _ => return None,
        })
    }

    /// Its name, as `--metric` takes it.
    pub fn name(self) -> &'static str {
        match self {
            FioMetric::Iops => "iops",
            FioMetric::Bw => "bw",
            FioMetric::P99 => "p99",
            FioMetric::ClatMean => "clat_mean",
        }
    }

    /// Unit of its values.
    pub fn unit(self) -> &'static str {
        match self {
            FioMetric::Iops => "IOPS",
            FioMetric::Bw => "MiB/s",
            FioMetric::P99 | FioMetric::ClatMean => "µs",
        }
    }

    /// Its value in one repetition.
    pub fn of(self, r: &FioRepetition) -> f64 {
        let all = &r.total.all;
        match self {
            FioMetric::Iops => all.iops,
            FioMetric::Bw => all.bw_bytes / (1024.0 * 1024.0),
            FioMetric::P99 => all.clat_ns.p99 / 1e3,
            FioMetric::ClatMean => all.clat_ns.mean / 1e3,
        }
    }
}
