//! Plain data passed between the stages: cells, what provisioning built, what
//! the workloads measured, and the per-cell result that the store writes.
//!
//! Every stage talks through these types only, so they are deliberately dumb:
//! no methods with side effects, all serde, all stable field names (they are
//! the on-disk result format, see `schemas/result.schema.json`).

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Version of the on-disk result format (`run.json` and cell files).
///
/// Bumped only when a reader of the previous version would misread a file. Optional
/// fields added inside the measurements (kernel `counters`, `timeline`, `latency_dist`)
/// are not such a change: those structs ignore unknown fields, so version-1 readers load
/// the files and skip what they do not know, and files without them load here.
pub const RESULT_SCHEMA_VERSION: u32 = 1;

/// Version of every command's JSON document (`crate::output`, `crate::report::json`).
pub const OUTPUT_SCHEMA_VERSION: u32 = 1;

/// What a run measured, as `run.json`'s `workload` says it: `"lat_fs"` or `"steps"`.
/// Any other value is refused when the file is read (serde names the value and the two valid ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
pub enum WorkloadKind {
    /// lat_fs loops per task over a timed window (seed 000).
    #[default]
    #[serde(rename = "lat_fs")]
    LatFs,
    /// Steps timed as time(1) does, every iteration kept (seed 002).
    #[serde(rename = "steps")]
    Steps,
}

impl WorkloadKind {
    /// The name as `run.json` and the scenario's `workload.kind` spell it.
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::LatFs => "lat_fs",
            WorkloadKind::Steps => "steps",
        }
    }
}

impl fmt::Display for WorkloadKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How the filesystems of one cell are laid out across tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
pub enum Layout {
    /// One filesystem (superblock) per task, mounted at `<mnt>/<task>`.
    M,
    /// One shared filesystem with a directory per task.
    S,
}

/// Whether disk quota is switched on while the cell runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum QuotaMode {
    /// Quota accounting off (`qoff` in the seed).
    Off,
    /// Quota accounting and enforcement on (`qon` in the seed).
    On,
}

/// How quota is implemented on the filesystem when a cell asks for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "lowercase")]
pub enum QuotaImpl {
    /// Quota files (`aquota.user`, `aquota.group`) made by `quotacheck -cug`, as the seed did.
    #[default]
    Files,
    /// The ext4 `quota` feature (hidden quota inodes, `mkfs -O quota`).
    Feature,
}

/// One of the four lmbench lat_fs loops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LatfsTest {
    /// `open(O_WRONLY)`; `close`.
    OpenClose,
    /// `open(O_CREAT)`; `close`; `unlink`.
    CreateUnlink,
    /// `fchown(uid)`; `fchown(uid+1)`.
    Chown,
    /// `pwrite(4096 @ 40960)`; `ftruncate(8192)`.
    WriteTruncate,
}

impl LatfsTest {
    /// All tests in the seed's order.
    pub const ALL: [LatfsTest; 4] =
        [LatfsTest::OpenClose, LatfsTest::CreateUnlink, LatfsTest::Chown, LatfsTest::WriteTruncate];

    /// The name used in scenario files and result files (`open_close`).
    pub fn name(self) -> &'static str {
        match self {
            LatfsTest::OpenClose => "open_close",
            LatfsTest::CreateUnlink => "create_unlink",
            LatfsTest::Chown => "chown",
            LatfsTest::WriteTruncate => "write_truncate",
        }
    }
}

impl fmt::Display for LatfsTest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for LatfsTest {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        LatfsTest::ALL.into_iter().find(|t| t.name() == s).ok_or_else(|| format!("unknown lat_fs test `{s}`"))
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Layout::M => "M",
            Layout::S => "S",
        })
    }
}

impl fmt::Display for QuotaMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            QuotaMode::Off => "off",
            QuotaMode::On => "on",
        })
    }
}

impl QuotaMode {
    /// The seed's short name: `qoff` / `qon`.
    pub fn seed_name(self) -> &'static str {
        match self {
            QuotaMode::Off => "qoff",
            QuotaMode::On => "qon",
        }
    }
}

/// One point of the matrix: the axis values that identify a cell.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CellParams {
    /// Filesystem type as given to `mkfs.<fs>` and mount(2).
    pub fs: String,
    /// Layout M (superblock per task) or S (shared superblock).
    pub layout: Layout,
    /// Quota off or on.
    pub quota: QuotaMode,
    /// Number of parallel tasks.
    pub tasks: u32,
    /// The lat_fs test, for lat_fs workloads; `None` for step workloads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<LatfsTest>,
}

impl CellParams {
    /// Stable identifier, used as the cell's file name: `ext4-S-qoff-t2-chown`.
    pub fn id(&self) -> String {
        let mut id = format!("{}-{}-{}-t{}", self.fs, self.layout, self.quota.seed_name(), self.tasks);
        if let Some(t) = self.test {
            id.push('-');
            id.push_str(t.name());
        }
        id
    }
}

/// What happened to a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CellStatus {
    /// Provisioned, ran and measured.
    Ok,
    /// Could not run on this host; `reason` and `remedy` say why.
    Skipped,
    /// Started but failed; `reason` holds the error.
    Failed,
    /// Measured, but every repetition was disturbed by other processes and the rerun
    /// budget ran out: the samples are kept, none is fit for statistics.
    Disturbed,
}

/// Why a cell cannot run here and what would fix it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SkipReason {
    /// What is missing, in the kernel's or tool's own words where possible.
    pub reason: String,
    /// What the user can do about it (`apt-get install xfsprogs`), if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remedy: Option<String>,
}

/// One filesystem as provisioning built it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FilesystemInfo {
    /// Filesystem type.
    pub fs: String,
    /// Loop device (`/dev/loop3`), or `None` on backing `dir`.
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

/// Per-task sample of one lat_fs repetition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TaskSample {
    /// Task number, from 0.
    pub task: u32,
    /// Iterations of the loop completed in the timed window.
    pub iterations: u64,
    /// Length of the timed window in nanoseconds.
    pub window_ns: u64,
    /// User CPU time of the worker in microseconds (rusage from wait4).
    pub user_us: u64,
    /// System CPU time of the worker in microseconds (rusage from wait4).
    pub sys_us: u64,
}

impl TaskSample {
    /// Loops per millisecond of this task: lmbench's per-worker `loops`.
    pub fn loops_per_ms(&self) -> f64 {
        if self.window_ns == 0 {
            return 0.0;
        }
        self.iterations as f64 / (self.window_ns as f64 / 1e6)
    }
}

/// How much other processes used the CPUs during one measured window (see `host::cpu`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Disturbance {
    /// Wall time of the window in µs (a lat_fs repetition from spawn to reap, or one step).
    pub wall_us: u64,
    /// The run's own CPU time in the window: fsbench and every process under it
    /// (workers, copies, exec'd commands), with their reaped children, µs.
    pub own_cpu_us: u64,
    /// Kernel threads and interrupts (writeback, loop workers, journal threads:
    /// mostly work the run's own I/O caused), µs. Recorded, not a disturbance.
    #[serde(default)]
    pub kernel_cpu_us: u64,
    /// CPU time of other processes: /proc/stat process time minus `own_cpu_us`
    /// and the kernel threads' time, µs.
    pub foreign_cpu_us: u64,
    /// Steal time of all CPUs (a virtual machine's CPUs given to others), µs.
    pub steal_us: u64,
    /// `(foreign_cpu_us + steal_us) / wall_us`, in CPUs.
    pub share: f64,
    /// `share` exceeded the threshold: the sample is kept but left out of the statistics.
    pub disturbed: bool,
}

/// One repetition of a lat_fs cell: all tasks timed together.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LatfsRepetition {
    /// Per-task samples.
    pub tasks: Vec<TaskSample>,
    /// Sum over tasks of loops per millisecond (the seed's `total_loops`).
    pub total_loops_per_ms: f64,
    /// Mean latency of one loop iteration in microseconds, averaged over tasks.
    pub latency_us: f64,
    /// Other processes' CPU use during the repetition; absent when not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbance: Option<Disturbance>,
    /// Kernel counters over the repetition (start barrier to the last result), when monitored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<Counters>,
    /// Latency of every timed iteration, merged over tasks (`latency = "histogram"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_dist: Option<LatencyDist>,
    /// The round (`workload.rounds`) this repetition ran in, from 0; absent in round 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub round: u32,
}

impl LatfsRepetition {
    /// Whether this repetition counts in statistics (it was not disturbed).
    pub fn counts(&self) -> bool {
        !self.disturbance.as_ref().is_some_and(|d| d.disturbed)
    }
}

/// The samples a cell's statistics are over, from its repetitions and a value of each
/// (`None`: the repetition has none, e.g. no histogram).
///
/// Undisturbed repetitions only. With one round, each repetition's value. With several
/// rounds (`workload.rounds`), the mean of each round's values, in round order: the
/// repetitions of one round share a provisioned filesystem and a stretch of the machine's
/// time, so they vary less than rounds do, and an interval over them would claim more
/// than the data shows (multi-level repetition, Kalibera and Jones 2013). A round
/// without a counted value gives no sample.
pub fn round_samples(reps: &[LatfsRepetition], value: impl Fn(&LatfsRepetition) -> Option<f64>) -> Vec<f64> {
    let counted = || reps.iter().filter(|r| r.counts()).filter_map(|r| value(r).map(|v| (r.round, v)));
    let first = reps.first().map_or(0, |r| r.round);
    if reps.iter().all(|r| r.round == first) {
        return counted().map(|(_, v)| v).collect();
    }
    let mut by_round: std::collections::BTreeMap<u32, (f64, usize)> = Default::default();
    for (round, v) in counted() {
        let e = by_round.entry(round).or_default();
        e.0 += v;
        e.1 += 1;
    }
    by_round.values().map(|(sum, n)| sum / *n as f64).collect()
}

/// Why a lat_fs cell stopped repeating.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// A fixed number of repetitions, all done.
    Fixed,
    /// The 95% CI half-width of the mean reached the target (`repetitions.ci`).
    CiTarget,
    /// `repetitions.max` undisturbed repetitions without reaching the CI target.
    MaxRepetitions,
    /// Disturbed repetitions used up `max_reruns` before enough undisturbed ones were taken.
    RerunBudget,
}

/// Descriptive statistics over repetitions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Summary {
    /// Number of samples.
    pub n: usize,
    /// Median.
    pub median: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (n-1).
    pub stddev: f64,
    /// Minimum.
    pub min: f64,
    /// Maximum.
    pub max: f64,
    /// Lower bound of the 95% confidence interval of the mean (Student's t).
    pub ci95_low: f64,
    /// Upper bound of the 95% confidence interval of the mean (Student's t).
    pub ci95_high: f64,
    /// Coefficient of variation (stddev / mean).
    pub cv: f64,
}

/// Everything a lat_fs cell measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LatfsResult {
    /// Every repetition, in order, disturbed ones included (marked).
    pub repetitions: Vec<LatfsRepetition>,
    /// Statistics of `total_loops_per_ms` over the undisturbed repetitions (over the
    /// rounds' means with several rounds: [`round_samples`]).
    pub total_loops: Summary,
    /// Statistics of `latency_us`, over the same samples as `total_loops`.
    pub latency_us: Summary,
    /// Why the cell stopped repeating (in its last round); absent in results of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<StopReason>,
    /// Repetitions run again because they were disturbed (over all rounds).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reruns: u32,
    /// CPU each task was pinned to (`[workload] pin = "spread"`), by task; empty when not pinned.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pinned_cpus: Vec<u32>,
    /// Latency of every timed iteration, merged over tasks and repetitions (`latency = "histogram"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_dist: Option<LatencyDist>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl LatfsResult {
    /// Rounds stored (`workload.rounds`): one more than the last repetition's round.
    pub fn rounds_done(&self) -> u32 {
        self.repetitions.iter().map(|r| r.round + 1).max().unwrap_or(0)
    }

    /// [`round_samples`] of this result's repetitions.
    pub fn samples(&self, value: impl Fn(&LatfsRepetition) -> Option<f64>) -> Vec<f64> {
        round_samples(&self.repetitions, value)
    }
}

/// The timing of one step, as time(1) reports it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StepTiming {
    /// The command the step stands for, as the seed printed it (`tar zxf linux-2.5.63.tar.gz`).
    pub label: String,
    /// The op name (`untar`).
    pub op: String,
    /// User CPU microseconds (process, all threads; plus children for `exec`).
    pub user_us: u64,
    /// System CPU microseconds.
    pub system_us: u64,
    /// Elapsed wall-clock microseconds from a monotonic clock.
    pub elapsed_us: u64,
    /// Maximum resident set size in KiB (of the process, or the child for `exec`).
    #[serde(default)]
    pub max_rss_kib: u64,
    /// Other processes' CPU use during the step; a disturbed step is left out of the statistics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbance: Option<Disturbance>,
    /// Entries the step removed (`rm_rf`) or created (`untar`); absent for other ops and older results.
    /// Tells a steady iteration (one whose `rm_rf` removed the tree) from the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entries: Option<u64>,
    /// When the step started, in milliseconds on the clock of [`StepsResult::timeline`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_ms: Option<u64>,
    /// Kernel counters over the step, when monitored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<Counters>,
}

impl StepTiming {
    /// Whether this step's timing counts in statistics (it was not disturbed).
    pub fn counts(&self) -> bool {
        !self.disturbance.as_ref().is_some_and(|d| d.disturbed)
    }
}

impl StepTiming {
    /// CPU percentage as GNU time computes it: (user+system)/elapsed in whole
    /// milliseconds, truncated; `None` when elapsed rounds to 0 ms (time prints `?%`).
    pub fn cpu_percent(&self) -> Option<u64> {
        let v = self.elapsed_us / 1000;
        let u = self.user_us / 1000 + self.system_us / 1000;
        (v > 0).then(|| u * 100 / v)
    }

    /// The measurement in GNU time's default format, without the command:
    /// `0.02user 1.71system 0:02.16elapsed 80%CPU`. Values truncate as time(1) does.
    pub fn time_format(&self) -> String {
        fn secs(us: u64) -> String {
            format!("{}.{:02}", us / 1_000_000, (us % 1_000_000) / 10_000)
        }
        let e = self.elapsed_us;
        let (es, ecs) = (e / 1_000_000, (e % 1_000_000) / 10_000);
        let elapsed = if es >= 3600 {
            format!("{}:{:02}:{:02}", es / 3600, (es % 3600) / 60, es % 60)
        } else {
            format!("{}:{:02}.{:02}", es / 60, es % 60, ecs)
        };
        let cpu = match self.cpu_percent() {
            Some(p) => format!("{p}%"),
            None => "?%".into(),
        };
        format!("{}user {}system {}elapsed {}CPU", secs(self.user_us), secs(self.system_us), elapsed, cpu)
    }

    /// One line as seed 002 printed it: `<label> <time_format>`.
    pub fn seed_line(&self) -> String {
        format!("{} {}", self.label, self.time_format())
    }
}

/// Everything a steps cell measured: `iterations[i][j]` is step j of iteration i.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StepsResult {
    /// Every iteration, every step, in order. With `tasks = N > 1`, the aggregate of the
    /// copies: per step, the slowest copy's elapsed time and the CPU times summed.
    pub iterations: Vec<Vec<StepTiming>>,
    /// Dirty memory and device activity sampled across all iterations, when monitored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Timeline>,
    /// With `tasks = N > 1`: each copy of the step sequence as it ran, at the same time.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub copies: Vec<StepsCopy>,
}

/// What the kernel counted over one window (a lat_fs repetition or a step): deltas of
/// `/sys/block/<dev>/stat` per device, of `/proc/vmstat`, and of `/proc/stat`'s `ctxt`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Counters {
    /// Length of the window in microseconds (monotonic clock).
    pub window_us: u64,
    /// One entry per block device of the cell (none on tmpfs or a plain directory).
    #[serde(default)]
    pub devices: Vec<DeviceCounters>,
    /// Memory-management counters, system-wide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vm: Option<VmCounters>,
    /// Context switches, system-wide (`ctxt` of /proc/stat).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_switches: Option<u64>,
    /// Highest `Dirty` of /proc/meminfo seen in the window, KiB (steps only: sampled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_dirty_kib: Option<u64>,
    /// Highest `Writeback` of /proc/meminfo seen in the window, KiB (steps only: sampled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_writeback_kib: Option<u64>,
    /// Most requests in flight on the devices at one sample (steps only: sampled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_in_flight: Option<u64>,
}

/// Deltas of one block device's `stat` file over a window (Documentation/block/stat.rst).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DeviceCounters {
    /// Kernel name of the device (`loop3`).
    pub device: String,
    /// Read requests completed.
    pub read_ios: u64,
    /// Read requests merged into others.
    pub read_merges: u64,
    /// 512-byte sectors read.
    pub read_sectors: u64,
    /// Milliseconds spent reading (summed over requests).
    pub read_ticks_ms: u64,
    /// Write requests completed.
    pub write_ios: u64,
    /// Write requests merged into others.
    pub write_merges: u64,
    /// 512-byte sectors written.
    pub write_sectors: u64,
    /// Milliseconds spent writing (summed over requests).
    pub write_ticks_ms: u64,
    /// Requests in flight when the window closed (a gauge, not a delta).
    pub in_flight: u64,
    /// Milliseconds with at least one request in flight (iostat's %util numerator).
    pub io_ticks_ms: u64,
    /// Weighted milliseconds of requests in flight (queue depth times time).
    pub time_in_queue_ms: u64,
    /// Discard requests completed (kernels from 4.18).
    #[serde(default)]
    pub discard_ios: u64,
    /// 512-byte sectors discarded.
    #[serde(default)]
    pub discard_sectors: u64,
    /// Flush requests completed (kernels from 5.5).
    #[serde(default)]
    pub flush_ios: u64,
}

/// Deltas of `/proc/vmstat` over a window, system-wide.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct VmCounters {
    /// KiB read from block devices.
    pub pgpgin: u64,
    /// KiB written to block devices.
    pub pgpgout: u64,
    /// Pages swapped in.
    pub pswpin: u64,
    /// Pages swapped out.
    pub pswpout: u64,
    /// Pages dirtied.
    pub nr_dirtied: u64,
    /// Pages written back.
    pub nr_written: u64,
    /// Page faults.
    pub pgfault: u64,
    /// Major page faults (needed I/O).
    pub pgmajfault: u64,
    /// Direct-reclaim stalls, all zones.
    pub allocstall: u64,
    /// Pages scanned by kswapd.
    pub pgscan_kswapd: u64,
    /// Pages scanned by direct reclaim.
    pub pgscan_direct: u64,
    /// Pages reclaimed by kswapd.
    pub pgsteal_kswapd: u64,
    /// Pages reclaimed by direct reclaim.
    pub pgsteal_direct: u64,
}

/// A time series of dirty memory and device activity across a steps cell.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Timeline {
    /// Sampling interval in milliseconds (doubles when a long run is thinned).
    pub interval_ms: u64,
    /// Kernel names of the devices summed in `in_flight` and the sector counts.
    #[serde(default)]
    pub devices: Vec<String>,
    /// Samples in time order (plus one at each step boundary).
    pub samples: Vec<TimelineSample>,
}

/// One sample of a [`Timeline`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TimelineSample {
    /// Milliseconds since the timeline started.
    pub t_ms: u64,
    /// `Dirty` of /proc/meminfo, KiB.
    pub dirty_kib: u64,
    /// `Writeback` of /proc/meminfo, KiB.
    pub writeback_kib: u64,
    /// Requests in flight, summed over the devices.
    pub in_flight: u64,
    /// Sectors read since boot, summed over the devices (throughput: difference of neighbours).
    pub read_sectors: u64,
    /// Sectors written since boot, summed over the devices.
    pub write_sectors: u64,
}

/// A latency distribution: percentiles and the non-empty buckets of a log-linear histogram.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LatencyDist {
    /// Operations (loop iterations) timed.
    pub count: u64,
    /// Shortest, nanoseconds.
    pub min_ns: u64,
    /// Mean, nanoseconds.
    pub mean_ns: f64,
    /// Median, nanoseconds.
    pub p50_ns: u64,
    /// 90th percentile, nanoseconds.
    pub p90_ns: u64,
    /// 99th percentile, nanoseconds.
    pub p99_ns: u64,
    /// 99.9th percentile, nanoseconds.
    pub p999_ns: u64,
    /// Longest, nanoseconds.
    pub max_ns: u64,
    /// Significant decimal digits of the histogram (bucket width is at most 10^-digits of a value).
    pub significant_digits: u8,
    /// `[value_ns, count]` of every non-empty bucket, ascending: enough to merge and to draw a CDF.
    pub buckets: Vec<[u64; 2]>,
}

/// One of the concurrent copies of a steps cell (`tasks = N`), timed like time(1) in its own process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StepsCopy {
    /// Task number, from 0.
    pub task: u32,
    /// When the copy's first step started, µs since the Unix epoch (wall clock: comparable across copies).
    pub started_unix_us: u64,
    /// When the copy's last step finished, µs since the Unix epoch.
    pub finished_unix_us: u64,
    /// The copy's iterations, as [`StepsResult::iterations`] of a single copy.
    pub iterations: Vec<Vec<StepTiming>>,
}

impl StepsResult {
    /// The aggregate of concurrent copies: per (iteration, step) the slowest elapsed, the summed
    /// CPU and entries, the largest RSS, and the most disturbed copy's disturbance (the step
    /// is disturbed when any copy's was); over the iterations every copy completed.
    pub fn aggregate(copies: Vec<StepsCopy>) -> StepsResult {
        let n = copies.iter().map(|c| c.iterations.len()).min().unwrap_or(0);
        let iterations = (0..n)
            .map(|i| {
                let width = copies.iter().map(|c| c.iterations[i].len()).min().unwrap_or(0);
                (0..width)
                    .map(|j| {
                        let all: Vec<&StepTiming> = copies.iter().map(|c| &c.iterations[i][j]).collect();
                        let sum = |f: fn(&StepTiming) -> u64| all.iter().map(|t| f(t)).sum::<u64>();
                        StepTiming {
                            label: all[0].label.clone(),
                            op: all[0].op.clone(),
                            user_us: sum(|t| t.user_us),
                            system_us: sum(|t| t.system_us),
                            elapsed_us: all.iter().map(|t| t.elapsed_us).max().unwrap_or(0),
                            max_rss_kib: all.iter().map(|t| t.max_rss_kib).max().unwrap_or(0),
                            entries: all.iter().map(|t| t.entries).sum(),
                            disturbance: all.iter().filter_map(|t| t.disturbance.clone()).max_by(|a, b| {
                                (a.disturbed, a.share)
                                    .partial_cmp(&(b.disturbed, b.share))
                                    .unwrap_or(std::cmp::Ordering::Equal)
                            }),
                            ..StepTiming::default()
                        }
                    })
                    .collect()
            })
            .collect();
        StepsResult { iterations, copies, ..StepsResult::default() }
    }
}

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
    /// ok, skipped or failed.
    pub status: CellStatus,
    /// For skipped and failed cells: why, and what to do about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip: Option<SkipReason>,
    /// For failed cells: the error.
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
    /// Start, RFC 3339 UTC.
    pub started: String,
    /// End, RFC 3339 UTC.
    pub finished: String,
}

/// Whether `label` can name a run: 1 to 64 of A-Z a-z 0-9 . _ - + (labels become column
/// names such as `BASE-ext2-M-qoff` in space-separated seed tables and directory names).
pub fn is_valid_label(label: &str) -> bool {
    !label.is_empty() && label.len() <= 64 && label.chars().all(|c| c.is_ascii_alphanumeric() || "._-+".contains(c))
}

/// Filesystem types people benchmark, for telling a typo from a name (`etx4` is not one).
pub const KNOWN_FS_TYPES: &[&str] = &[
    "ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "nilfs2", "jfs", "reiserfs", "vfat", "exfat", "ntfs3", "bcachefs",
    "tmpfs",
];

/// What [`is_valid_label`] allows, for error messages.
pub const LABEL_RULE: &str = "1 to 64 characters from A-Z a-z 0-9 . _ - +";

#[cfg(test)]
mod tests {
    use super::*;

    fn timing(user_us: u64, system_us: u64, elapsed_us: u64) -> StepTiming {
        StepTiming {
            label: "tar zxf linux-2.5.63.tar.gz".into(),
            op: "untar".into(),
            user_us,
            system_us,
            elapsed_us,
            max_rss_kib: 0,
            ..StepTiming::default()
        }
    }

    #[test]
    fn the_aggregate_of_copies_is_the_slowest_the_sum_and_the_most_disturbed() {
        let disturbed = |share: f64, disturbed: bool| Some(Disturbance { share, disturbed, ..Disturbance::default() });
        let copy = |task: u32, elapsed_us: u64, d: Option<Disturbance>| StepsCopy {
            task,
            started_unix_us: 0,
            finished_unix_us: 0,
            iterations: vec![vec![StepTiming { disturbance: d, entries: Some(3), ..timing(10, 20, elapsed_us) }]],
        };
        let r = StepsResult::aggregate(vec![
            copy(0, 500, disturbed(0.1, false)),
            copy(1, 900, disturbed(0.6, true)),
            copy(2, 700, None),
        ]);
        let t = &r.iterations[0][0];
        assert_eq!((t.user_us, t.system_us, t.elapsed_us, t.entries), (30, 60, 900, Some(9)));
        assert_eq!(t.disturbance, disturbed(0.6, true));
        let r = StepsResult::aggregate(vec![copy(0, 1, None), copy(1, 1, None)]);
        assert_eq!(r.iterations[0][0].disturbance, None);
    }

    #[test]
    fn time_format_matches_seed_002() {
        // From the seed: "tar zxf linux-2.5.63.tar.gz 4.83user 5.86system 0:14.09elapsed 75%CPU"
        let t = timing(4_830_000, 5_860_000, 14_090_000);
        assert_eq!(t.seed_line(), "tar zxf linux-2.5.63.tar.gz 4.83user 5.86system 0:14.09elapsed 75%CPU");
        assert_eq!(timing(0, 30_000, 960_000).time_format(), "0.00user 0.03system 0:00.96elapsed 3%CPU");
    }

    #[test]
    fn time_format_truncates_and_switches_to_hours() {
        assert_eq!(timing(19_999, 0, 65_999_999).time_format(), "0.01user 0.00system 1:05.99elapsed 0%CPU");
        assert_eq!(timing(0, 0, 3_723_000_000).time_format(), "0.00user 0.00system 1:02:03elapsed 0%CPU");
        assert_eq!(timing(1, 1, 999).time_format(), "0.00user 0.00system 0:00.00elapsed ?%CPU");
    }

    #[test]
    fn cell_id_is_stable() {
        let p = CellParams {
            fs: "ext4".into(),
            layout: Layout::S,
            quota: QuotaMode::Off,
            tasks: 2,
            test: Some(LatfsTest::Chown),
        };
        assert_eq!(p.id(), "ext4-S-qoff-t2-chown");
    }

    fn rep(round: u32, loops: f64, disturbed: bool) -> LatfsRepetition {
        let disturbance = disturbed.then(|| Disturbance { disturbed: true, ..Disturbance::default() });
        LatfsRepetition { round, total_loops_per_ms: loops, disturbance, ..LatfsRepetition::default() }
    }

    #[test]
    fn statistics_are_over_repetitions_in_one_round_and_over_round_means_in_several() {
        let loops = |r: &LatfsRepetition| Some(r.total_loops_per_ms);
        // One round: every undisturbed repetition, in order.
        let one = [rep(0, 10.0, false), rep(0, 99.0, true), rep(0, 12.0, false)];
        assert_eq!(round_samples(&one, loops), vec![10.0, 12.0]);
        // Three rounds: one sample per round, its undisturbed repetitions' mean; a round whose
        // repetitions were all disturbed gives none.
        let three = [
            rep(0, 10.0, false),
            rep(0, 14.0, false),
            rep(1, 20.0, false),
            rep(1, 500.0, true),
            rep(2, 7.0, true),
            rep(3, 30.0, false),
            rep(3, 33.0, false),
            rep(3, 36.0, false),
        ];
        assert_eq!(round_samples(&three, loops), vec![12.0, 20.0, 33.0]);
        // A value a repetition lacks (no histogram) is no sample.
        assert!(round_samples(&three, |_| None).is_empty());
        let r = LatfsResult { repetitions: three.to_vec(), ..LatfsResult::default() };
        assert_eq!(r.rounds_done(), 4);
        assert_eq!(LatfsResult::default().rounds_done(), 0);
    }
}
