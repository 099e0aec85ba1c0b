//! The JSON documents of `report`, `compare` and `merge` (`--json`), built from the report's
//! own types; versioned by `schema` like every command's document
//! ([`crate::model::OUTPUT_SCHEMA_VERSION`]) and listed with the others' schemas by
//! the command layer's `output::schemas`.

use schemars::JsonSchema;
use serde::Serialize;

/// `fsbench report RUN --json` and `fsbench compare --json` (and every merged run of
/// `fsbench merge --json`): one report, told apart by `workload`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(tag = "workload")]
pub enum ReportJson {
    /// Runs of a lat_fs scenario.
    #[serde(rename = "lat_fs")]
    LatFs(LatfsReportJson),
    /// Runs of a steps scenario.
    #[serde(rename = "steps")]
    Steps(StepsReportJson),
    /// Runs of a fio scenario.
    #[serde(rename = "fio")]
    Fio(FioReportJson),
    /// Runs of an op-mix scenario.
    #[serde(rename = "ops")]
    Ops(OpsReportJson),
}

/// A lat_fs report (`"workload": "lat_fs"`): seed 000's tables whole, with the ratios when comparing.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LatfsReportJson {
    /// Document version ([`OUTPUT_SCHEMA_VERSION`]).
    pub schema: u32,
    /// Scenario name (compared runs share it).
    pub scenario: String,
    /// What the numbers are: `total_loops` (loops per millisecond over all tasks, higher is
    /// better), or with `compare --metric` a latency percentile (`p99`: µs per operation, lower
    /// is better).
    pub metric: String,
    /// The runs, in column order; the first is the reference of the ratios.
    pub runs: Vec<ReportRun>,
    /// What the comparison found different between the runs (scenario texts, mount options, ...).
    pub warnings: Vec<String>,
    /// One table per (fs, layout, test), in the seed's order.
    pub tables: Vec<LatfsTableJson>,
    /// Kernel counters of the cells that recorded them (absent when none did).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub counters: Vec<crate::report::monitors::CellCounters>,
    /// Latency distributions of the cells that recorded them (absent when none did).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub latency: Vec<crate::report::monitors::CellLatency>,
    /// Cells without a number: skipped, failed, disturbed, or planned but never stored.
    pub not_measured: Vec<crate::report::NotMeasured>,
    /// The paired comparisons of each paired run (`[compare] arms`); absent when no run is paired.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paired: Vec<crate::report::paired::PairedRun>,
    /// Result files that could not be read, one line each.
    pub problems: Vec<String>,
}

/// One lat_fs table, with its ratio table when runs are compared.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LatfsTableJson {
    /// The table.
    #[serde(flatten)]
    pub table: crate::report::LatfsTable,
    /// Every other label's columns over the first label's (`compare` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratios: Option<crate::report::compare::RatioTable>,
}

/// A steps report (`"workload": "steps"`): every configuration's iterations, with the
/// side-by-side tables when comparing.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StepsReportJson {
    /// Document version ([`OUTPUT_SCHEMA_VERSION`]).
    pub schema: u32,
    /// Scenario name (compared runs share it).
    pub scenario: String,
    /// The runs, in label order; the first is the reference of the ratios.
    pub runs: Vec<ReportRun>,
    /// What the comparison found different between the runs (scenario texts, mount options, ...).
    pub warnings: Vec<String>,
    /// Every (label, configuration) with all its iterations.
    pub groups: Vec<crate::report::StepsGroup>,
    /// One table per step across the labels (`compare` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison: Option<crate::report::StepsComparison>,
    /// Cells without a number: skipped, failed, or planned but never stored.
    pub not_measured: Vec<crate::report::NotMeasured>,
    /// The paired comparisons of each paired run (`[compare] arms`); absent when no run is paired.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paired: Vec<crate::report::paired::PairedRun>,
    /// Result files that could not be read, one line each.
    pub problems: Vec<String>,
}

/// Where a report's numbers come from: one run.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ReportRun {
    /// Its label in the report's columns (`--label`, `LABEL=` of compare, the host name in a
    /// merge; `run` when it has none).
    pub label: String,
    /// The run directory.
    pub dir: std::path::PathBuf,
    /// Run id (`run.json`).
    pub run_id: String,
    /// sha256 of the scenario text it ran.
    pub scenario_sha256: String,
    /// fsbench version that ran it.
    pub tool_version: String,
    /// The machine.
    pub host: crate::results::HostInfo,
    /// When it started (RFC 3339).
    pub started: String,
    /// When it finished; `null` when it did not.
    pub finished: Option<String>,
    /// Whether a signal stopped it.
    pub interrupted: bool,
}

/// `fsbench report RUN RUN... --json` with several runs: one report each, in the order given.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ReportsJson {
    /// Document version ([`OUTPUT_SCHEMA_VERSION`]).
    pub schema: u32,
    /// One report per run (each as `report.schema.json` describes it).
    pub reports: Vec<ReportJson>,
}

/// `fsbench report SCENARIO_DIR --json`: the runs of a scenario directory, oldest first.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RunListJson {
    /// Document version ([`OUTPUT_SCHEMA_VERSION`]).
    pub schema: u32,
    /// The scenario directory as named on the command line.
    pub dir: std::path::PathBuf,
    /// Every readable run (unreadable ones are warnings on stderr, and the exit code is 2).
    pub runs: Vec<ListedRun>,
}

/// One run of a scenario directory.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ListedRun {
    /// Its directory name, which names it on the command line.
    pub run: String,
    /// Its directory.
    pub dir: std::path::PathBuf,
    /// Its `--label`.
    pub label: Option<String>,
    /// Host name.
    pub host: String,
    /// Kernel release.
    pub kernel: String,
    /// When it started (RFC 3339).
    pub started: String,
    /// When it finished; `null` when it did not.
    pub finished: Option<String>,
    /// `finished`, `interrupted` or `unfinished`.
    pub state: String,
    /// Cells planned.
    pub planned: usize,
    /// Cells measured.
    pub ok: usize,
    /// Cells skipped.
    pub skipped: usize,
    /// Cells failed.
    pub failed: usize,
    /// Cell files that could not be read.
    pub unreadable: usize,
    /// Its `run --meta` pairs, by key; absent when it has none.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub meta: std::collections::BTreeMap<String, String>,
}

/// `fsbench merge --json`: every group of runs merged (the exit code is 1 when any is
/// incomplete, unfinished or has unreadable files, as without `--json`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct MergeJson {
    /// Document version ([`OUTPUT_SCHEMA_VERSION`]).
    pub schema: u32,
    /// One entry per sharded run (run key) or per scenario text of unsharded runs, in the order found.
    pub merged: Vec<MergedGroup>,
}

/// One merged group: how complete its shards are, and its report.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct MergedGroup {
    /// Scenario name.
    pub scenario: String,
    /// Run key the shards share; `null` for unsharded runs.
    pub key: Option<String>,
    /// Number of shards of the run; `null` for unsharded runs.
    pub shards: Option<u32>,
    /// Run directories in the group.
    pub runs: usize,
    /// Shard numbers (from 1) no run directory has.
    pub missing: Vec<u32>,
    /// Shard numbers several run directories claim (the first is used).
    pub duplicated: Vec<DuplicatedShard>,
    /// Every shard there exactly once (always true for unsharded runs).
    pub complete: bool,
    /// Every run finished without being interrupted.
    pub finished: bool,
    /// The merged report: one host as one run, several hosts side by side with ratios to the first.
    pub report: ReportJson,
}

/// A shard number claimed by several run directories.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DuplicatedShard {
    /// Shard number, from 1.
    pub shard: u32,
    /// The directories that claim it; the first is used.
    pub dirs: Vec<std::path::PathBuf>,
}

/// A document as the commands print it: pretty JSON and a newline.
pub fn to_json<T: Serialize>(doc: &T) -> String {
    serde_json::to_string_pretty(doc).expect("output documents serialize") + "\n"
}

/// One cell of one run, as the report shows it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FioRow {
    /// The run's label.
    pub label: String,
    /// Cell id (`ext4-S-qoff-t1-bs=4k`).
    pub cell: String,
    /// fio's version.
    pub fio_version: String,
    /// Repetitions in the statistics (undisturbed).
    pub n: usize,
    /// Median IOPS (read + write, all jobs).
    pub iops: f64,
    /// 95% CI of the mean IOPS, lower and upper bound.
    pub iops_ci95: (f64, f64),
    /// Median bandwidth, MiB/s.
    pub bw_mib_s: f64,
    /// Median of the mean completion latency, µs.
    pub clat_mean_us: f64,
    /// Median p99 completion latency, µs.
    pub clat_p99_us: f64,
    /// Median p50 / p90 / p99.9 completion latency over the repetitions, µs.
    pub clat_p50_p90_p99_9_us: (f64, f64, f64),
    /// fio's user / system CPU summed over jobs, mean over repetitions, percent of one CPU.
    pub cpu_usr_sys: (f64, f64),
    /// This label's median IOPS over the first label's for the same cell (compare only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iops_ratio: Option<f64>,
    /// The ratio of this label's mean IOPS to the first label's for the same cell, with its
    /// 95% interval and Welch's test (Holm–Bonferroni over the comparison's fio ratios), on
    /// the catalogue's `iops` samples, marked as lat_fs ratios are (compare only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iops_ratio_of_means: Option<crate::report::compare::Ratio>,
    /// The catalogue's `iops` samples of the cell (undisturbed repetitions) and the rounds they
    /// span between runs, for the ratio above.
    #[serde(skip)]
    #[schemars(skip)]
    pub iops_samples: (Vec<f64>, u32),
}

/// `fsbench report --json` of a fio run (`"workload": "fio"`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FioReportJson {
    /// Document version ([`OUTPUT_SCHEMA_VERSION`]).
    pub schema: u32,
    /// Scenario name.
    pub scenario: String,
    /// The runs, in label order; the first is the reference of the ratios.
    pub runs: Vec<super::json::ReportRun>,
    /// What the comparison found different between the runs.
    pub warnings: Vec<String>,
    /// A row per (label, cell) that has fio figures.
    pub rows: Vec<FioRow>,
    /// Kernel counters (block devices, context switches) of the cells that recorded them
    /// (absent when none did).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub counters: Vec<crate::report::monitors::CellCounters>,
    /// Cells without a number: skipped, failed, disturbed, or planned but never stored.
    pub not_measured: Vec<crate::report::NotMeasured>,
    /// Result files that could not be read, one line each.
    pub problems: Vec<String>,
    /// The paired comparisons of each paired run (`[compare] arms`); absent when no run is paired.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paired: Vec<crate::report::paired::PairedRun>,
}

/// An op-mix report (`"workload": "ops"`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OpsReportJson {
    /// Document version ([`OUTPUT_SCHEMA_VERSION`]).
    pub schema: u32,
    /// Scenario name.
    pub scenario: String,
    /// The runs, in label order; the first is the reference of the ratios.
    pub runs: Vec<ReportRun>,
    /// What the comparison found different between the runs.
    pub warnings: Vec<String>,
    /// One entry per (label, cell) with op-mix figures.
    pub cells: Vec<OpsCellJson>,
    /// Cells without a number: skipped, failed, disturbed, or planned but never stored.
    pub not_measured: Vec<crate::report::NotMeasured>,
    /// Result files that could not be read, one line each.
    pub problems: Vec<String>,
    /// The paired comparisons of each paired run; absent when no run is paired.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paired: Vec<crate::report::paired::PairedRun>,
}

/// One cell of one run.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OpsCellJson {
    /// Run label.
    pub label: String,
    /// Cell id.
    pub cell: String,
    /// Undisturbed repetitions summed.
    pub n: usize,
    /// Median ops/s over them (all ops but delays).
    pub ops_per_s: f64,
    /// 95% confidence interval of the mean ops/s, cut at zero (a rate is positive);
    /// `null` from one repetition ([`crate::stats::positive_mean_interval`]).
    pub ops_per_s_ci95: Option<(f64, f64)>,
    /// Median p99 latency of all ops, µs.
    pub p99_us: f64,
    /// Median MB/s.
    pub mb_per_s: f64,
    /// Median ops/s divided by the first label's for the same cell, when comparing.
    pub ratio: Option<f64>,
    /// One line per op kind, in the scenario's order, summed over the repetitions.
    pub ops: Vec<OpsLine>,
    /// The dbench loadfile clients' figures over the same repetitions, when a group replays one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loadfile: Option<LoadfileLine>,
    /// The workers' open-loop pace over the same repetitions, under `workload.rate`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pace: Option<PaceLine>,
}

/// A loadfile replay over a cell's undisturbed repetitions.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LoadfileLine {
    /// Clients (per repetition).
    pub clients: usize,
    /// dbench's throughput: ReadX and WriteX bytes per second over the summed windows, MB/s.
    pub throughput_mb_s: f64,
    /// Each client's ops per second over the summed windows, by client number.
    pub client_ops_per_s: Vec<f64>,
    /// Ops performed whose recorded status was an error, summed.
    pub expected_errors: u64,
    /// Ops whose outcome differed from the recorded status, summed.
    pub status_mismatches: u64,
    /// Ops on a handle the client did not hold, summed.
    pub unknown_handles: u64,
}

/// The open-loop pace over a cell's undisturbed repetitions.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PaceLine {
    /// Scheduled starts per second, per worker.
    pub rate_per_s: f64,
    /// What a start is: `loops` or `ops`.
    pub unit: String,
    /// Starts, summed.
    pub starts: u64,
    /// Starts made already behind schedule, summed.
    pub behind: u64,
    /// Lateness of every start: mean, ms.
    pub lateness_mean_ms: f64,
    /// 99th percentile, ms.
    pub lateness_p99_ms: f64,
    /// Largest, ms.
    pub lateness_max_ms: f64,
}

/// One op kind over a cell's undisturbed repetitions.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OpsLine {
    /// The op (`open`), or `total`.
    pub op: String,
    /// Ops completed.
    pub ops: u64,
    /// Ops per second over the windows.
    pub ops_per_s: f64,
    /// MB (10^6 bytes) per second over the windows.
    pub mb_per_s: f64,
    /// Mean time in the op's system calls, ms.
    pub ms_per_op: f64,
    /// Shortest op, ms.
    pub min_ms: f64,
    /// Longest op, ms.
    pub max_ms: f64,
}
