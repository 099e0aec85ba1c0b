//! The scenario language: TOML text in, a validated [`Scenario`] out.
//!
//! `load` brings the text in (a string, a file, an embedded name, `--set`
//! overrides); `file` holds the plain serde structs that mirror the TOML
//! (unknown keys are errors); `validate` turns them into the domain types
//! below, with units parsed and every value checked. Errors (`error`) report
//! file:line:column and the key, which `diagnose` finds in the text.
//! Parsing never touches the system.

pub mod archive;
pub mod cgroup_limits;
mod diagnose;
pub mod diff;
pub mod error;
pub mod file;
pub mod filebench_import;
pub mod fio_job;
pub mod loadfile_parse;
pub mod loadfile_spec;
pub mod op_kinds;
pub mod ops_file;
pub mod ops_spec;
// A ScenarioError is built at most once per invocation and read field by field by
// callers and tests; boxing it to shrink every Result would buy nothing measurable.
#[allow(clippy::result_large_err)]
pub mod load;
#[allow(clippy::result_large_err)]
pub mod overrides;
pub mod units;
#[allow(clippy::result_large_err)]
pub mod validate;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::model::{LatfsTest, Layout, QuotaImpl, QuotaMode};

pub use error::{ScenarioError, suggest};
pub use fio_job::{FioJob, JobOption};
pub use load::{load, load_named, load_with, parse_overridden, parse_str, parses_on_this_thread};

/// The names of the matrix axes, in the order a cell id spells them (`--only` takes them too).
pub const AXES: &[&str] = &["fs", "layout", "quota", "tasks", "test"];

/// `[compare] arms = "kernel"`: the arms are the kernels of `--kernel`/`[[kernels]]`
/// (`run --paired`), not a matrix axis.
pub const KERNEL_ARMS: &str = "kernel";

/// The current scenario format version (`schema = 1`).
pub const SCENARIO_SCHEMA_VERSION: u32 = 1;

/// A validated scenario, ready to expand into a plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Short name; results go to `results/<name>/`.
    pub name: String,
    /// One line for humans.
    pub description: String,
    /// Where the text came from and the text itself (for provenance).
    pub source: ScenarioSource,
    /// The axes; cells are their cartesian product.
    pub matrix: Matrix,
    /// Per-filesystem mkfs and mount options, keyed by filesystem type.
    pub filesystems: BTreeMap<String, FsSpec>,
    /// Where the filesystems live.
    pub backing: Backing,
    /// The archive used by `untar` steps, if any.
    pub archive: Option<ArchiveSpec>,
    /// What runs on the filesystems.
    pub workload: Workload,
    /// Regression thresholds for `fsbench gate`.
    pub gate: GateSpec,
    /// Kernels to boot in qemu and run every cell under; empty: the host kernel.
    pub kernels: Vec<KernelSpec>,
    /// Read kernel counters around repetitions and steps (`workload.monitors`, default true).
    pub monitors: bool,
    /// What each cell profiles in a separate repetition (`workload.profile`); `None`: nothing.
    pub profile: Option<crate::model::ProfileMode>,
    /// `[compare]`: the axis whose values are paired arms; `None`: no paired comparison.
    pub compare: Option<CompareSpec>,
}

impl Scenario {
    /// The filesystem type behind an `fs` axis value: the variant's `type`, else the value itself.
    pub fn fs_type<'a>(&'a self, name: &'a str) -> &'a str {
        self.filesystems.get(name).map(|f| f.fs_type(name)).unwrap_or(name)
    }
}

/// One kernel to run the cells under, in a qemu virtual machine.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelSpec {
    /// Label of the run made under this kernel.
    pub label: String,
    /// Kernel image.
    pub image: PathBuf,
    /// Modules directory (`.../lib/modules/V`); `None`: derived from the image path.
    pub modules: Option<PathBuf>,
    /// Extra kernel command line.
    pub cmdline: String,
    /// Guest memory in bytes.
    pub memory: u64,
    /// Guest CPUs.
    pub cpus: u32,
}

/// Default guest memory: enough for sparse loop images on a tmpfs and the initramfs.
pub const DEFAULT_GUEST_MEMORY: u64 = 1 << 30;
/// Default guest CPUs: the 2-task cells of the seeds.
pub const DEFAULT_GUEST_CPUS: u32 = 2;

/// Regression thresholds, as fractions (0.05 = 5%).
#[derive(Debug, Clone, PartialEq)]
pub struct GateSpec {
    /// Default threshold for every cell.
    pub threshold: f64,
    /// Per lat_fs test name or step op name.
    pub per_key: BTreeMap<String, f64>,
}

impl Default for GateSpec {
    fn default() -> Self {
        GateSpec { threshold: 0.05, per_key: BTreeMap::new() }
    }
}

impl GateSpec {
    /// The threshold for a lat_fs test or step op.
    pub fn threshold_for(&self, key: &str) -> f64 {
        self.per_key.get(key).copied().unwrap_or(self.threshold)
    }
}

/// `[compare]`: one matrix axis run as the arms of a paired comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompareSpec {
    /// The axis name, one of [`AXES`] with at least two values, or [`KERNEL_ARMS`] (the
    /// kernels of a `run --paired` are the arms).
    pub arms: String,
    /// Pairs always run per pair group before the sequential rule looks (at least 2).
    pub min_pairs: u32,
    /// Most pairs per pair group.
    pub max_pairs: u32,
    /// Seed of the pair order (`compare.seed`); `None`: drawn when the run starts.
    pub seed: Option<u64>,
}

/// Default `compare.pairs.min`.
pub const DEFAULT_MIN_PAIRS: u32 = 6;
/// Default `compare.pairs.max`.
pub const DEFAULT_MAX_PAIRS: u32 = 32;
/// Void pairs a steps or fio pair group may run again: they have no `workload.max_reruns`
/// of their own, so lat_fs's default.
pub const PAIR_RERUNS_WITHOUT_BUDGET: u32 = 3;

/// The scenario text and its origin.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioSource {
    /// File the scenario was read from, or `<embedded:quickstart>`.
    pub origin: String,
    /// Directory relative paths in the scenario are resolved against.
    pub base_dir: PathBuf,
    /// The text after `--set` overrides were applied.
    pub text: String,
}

/// The axes of the matrix. Every list has at least one value.
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    /// Filesystem types (not checked against a fixed list).
    pub fs: Vec<String>,
    /// Layouts.
    pub layout: Vec<Layout>,
    /// Quota off/on.
    pub quota: Vec<QuotaMode>,
    /// Task counts.
    pub tasks: Vec<u32>,
    /// lat_fs tests (empty for step workloads).
    pub test: Vec<LatfsTest>,
    /// fio option sweeps (fio workloads only), by option name in alphabetical order.
    pub fio: Vec<FioAxis>,
}

/// One fio option swept over values (`[matrix] fio.bs = ["4k", "64k"]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FioAxis {
    /// The fio option (`bs`).
    pub option: String,
    /// Its values as fio reads them (`4k`, `16`), in the order written.
    pub values: Vec<String>,
    /// Where each value is written in the scenario: 1-based line and column (0, 0 when unknown).
    pub at: Vec<(usize, usize)>,
}

impl Matrix {
    /// The values of the axis named `axis` (one of [`AXES`]) as cells spell
    /// them, in the order written; `None` for a name that is no axis of this matrix (also
    /// `test` in a steps workload, whose matrix has no such axis).
    pub fn axis_values(&self, axis: &str) -> Option<Vec<String>> {
        Some(match axis {
            "fs" => self.fs.clone(),
            "layout" => self.layout.iter().map(|x| x.to_string()).collect(),
            "quota" => self.quota.iter().map(|x| x.to_string()).collect(),
            "tasks" => self.tasks.iter().map(|x| x.to_string()).collect(),
            "test" if !self.test.is_empty() => self.test.iter().map(|x| x.name().to_string()).collect(),
            _ => match axis.strip_prefix("fio.") {
                Some(o) => self.fio.iter().find(|a| a.option == o)?.values.clone(),
                None => return None,
            },
        })
    }
}

/// How one filesystem type is made and mounted.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FsSpec {
    /// Extra arguments to `mkfs.<fs>` (before the device).
    pub mkfs: Vec<String>,
    /// Mount options (`barrier=0`, `noload`, `usrquota`, ...), passed to mount(2).
    pub mount: Vec<String>,
    /// Quota implementation used when a cell has quota on.
    pub quota: QuotaImpl,
    /// For a variant (`[filesystems.ext4-nodelalloc] type = "ext4"`): the filesystem type it makes;
    /// `None` when the entry's name is the type.
    pub fs_type: Option<String>,
    /// Queue settings of its device and the scenario's `[sysctl]`, applied around each cell.
    pub tunables: Tunables,
}

/// Kernel settings applied before a cell, read back, and restored after it (through the
/// host-wide journal of `provision::host_tunables`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Tunables {
    /// `(key, value)` under the device's `/sys/dev/block/MAJ:MIN/queue/`, in the order applied
    /// (scheduler first).
    pub queue: Vec<(String, String)>,
    /// `(dotted key, value)` under `/proc/sys/`.
    pub sysctl: Vec<(String, String)>,
    /// Limits of the cgroup each cell's workers run in (`[filesystems.X] cgroup`), in key order;
    /// empty: no group is made.
    pub cgroup: Vec<cgroup_limits::CgroupLimit>,
}

impl FsSpec {
    /// The filesystem type given to `mkfs.<type>` and mount(2) for the axis value `name`.
    pub fn fs_type<'a>(&'a self, name: &'a str) -> &'a str {
        self.fs_type.as_deref().unwrap_or(name)
    }
}

/// Where filesystems live.
#[derive(Debug, Clone, PartialEq)]
pub enum Backing {
    /// A tmpfs with sparse image files on loop devices, formatted and mounted by fsbench.
    TmpfsLoop {
        /// Image size in bytes for layout M (per task).
        image_size_m: u64,
        /// Image size in bytes for layout S (shared).
        image_size_s: u64,
    },
    /// An existing directory: nothing formatted or mounted, no root needed.
    Dir {
        /// The directory (absolute, or relative to the scenario file); empty means a
        /// private directory inside the run's work directory.
        path: PathBuf,
    },
    /// An existing block device named on the command line with `--allow-device`.
    Device {
        /// The device node.
        path: PathBuf,
    },
}

impl Backing {
    /// Image size for a layout, for tmpfs-loop backing.
    pub fn image_size(&self, layout: Layout) -> Option<u64> {
        match self {
            Backing::TmpfsLoop { image_size_m, image_size_s } => Some(match layout {
                Layout::M => *image_size_m,
                Layout::S => *image_size_s,
            }),
            _ => None,
        }
    }
}

/// The archive used by `untar` steps.
#[derive(Debug, Clone, PartialEq)]
pub struct ArchiveSpec {
    /// Where it comes from.
    pub source: ArchiveSource,
    /// Copy it onto the filesystem under test before the first iteration, as the seed did.
    pub on_target: bool,
    /// File name the steps refer to (`linux-2.5.63.tar.gz`).
    pub file_name: String,
    /// The top-level directory the archive unpacks (`linux-2.5.63`): the profile of a generated
    /// tree, or read from a real archive's first entry; what `{archive.top}` in a step path means.
    pub top: String,
}

/// Where an archive comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum ArchiveSource {
    /// Generated by `fsbench fixture kernel-tree` with this profile, scale and seed.
    Generate {
        /// Profile name (`linux-2.5.63`).
        profile: String,
        /// Scale factor on file count (1.0 = the real tree).
        scale: f64,
        /// Generator seed.
        seed: u64,
    },
    /// A real tarball on disk.
    Path(PathBuf),
}

/// What runs on the filesystems of a cell.
#[derive(Debug, Clone, PartialEq)]
pub enum Workload {
    /// The lmbench lat_fs loops.
    Latfs(LatfsSpec),
    /// A timed sequence of steps, repeated.
    Steps(StepsSpec),
    /// A fio job, run per repetition on the cell's task directories.
    Fio(FioSpec),
    /// A declared op mix: filesets and worker loops, in-process (`workload::ops`).
    Ops(ops_spec::OpsWorkload),
}

/// Options of the fio workload (see `docs/fio.md`).
#[derive(Debug, Clone, PartialEq)]
pub struct FioSpec {
    /// The job as written, with where it was written.
    pub job: FioJob,
    /// `runtime` of every job section, with `time_based`.
    pub duration: Duration,
    /// `ramp_time` of every job section, when set.
    pub warmup: Option<Duration>,
    /// Runs of fio per cell.
    pub repetitions: u32,
    /// Where `numjobs` comes from.
    pub numjobs: FioNumjobs,
    /// Contention (of one CPU, see `host::cpu::contention_us`) above which a repetition is disturbed; `None`: not checked.
    pub disturbance: Option<f64>,
    /// How many disturbed repetitions may be run again, per cell (`workload.max_reruns`, as lat_fs).
    pub max_reruns: u32,
    /// The cell is a member of a pair (set by the runner, never by a scenario): nothing is
    /// rerun alone (`workload::reruns`).
    pub pair_member: bool,
}

/// `workload.numjobs`: who decides how many clones each job section runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FioNumjobs {
    /// The job's own `numjobs` (fio's default 1).
    #[default]
    Job,
    /// The cell's task count: one clone per task directory.
    Tasks,
}

/// Options of the lat_fs workload, named after lmbench's flags (see `docs/lat_fs.md`).
#[derive(Debug, Clone, PartialEq)]
pub struct LatfsSpec {
    /// Each task runs as uid = gid = base + (task << 3) (lmbench `-U`'s spacing; [`crate::host::task_uids`]).
    pub per_task_uid: bool,
    /// Extra quota references each task holds open (lmbench `-L`).
    pub quota_refs: u32,
    /// Open files O_WRONLY instead of O_RDONLY (lmbench `-w`).
    pub open_for_write: bool,
    /// Untimed warm-up before the timed window.
    pub warmup: Duration,
    /// Length of the timed window.
    pub duration: Duration,
    /// Repetitions of warm-up + window per cell: the fixed count, or the most an adaptive cell runs.
    pub repetitions: u32,
    /// Times the whole matrix runs (`workload.rounds`, default 1), each round provisioning
    /// every cell afresh; with more than one, statistics are over the rounds' means.
    pub rounds: u32,
    /// Adaptive repetitions, disturbance detection and CPU placement.
    pub noise: NoiseSpec,
    /// How iterations are timed: counted over the window, or each one into a histogram.
    pub latency: LatencyMode,
}

/// How a lat_fs cell guards its numbers against a noisy machine.
///
/// `Default` is a bare, fixed-count spec (no stop rule, no disturbance
/// detection, no pinning), as library callers expect; scenarios switch
/// detection on by default (see `validate`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NoiseSpec {
    /// Undisturbed repetitions always taken before the CI target may stop the cell.
    pub min_repetitions: u32,
    /// Stop once the 95% CI half-width of the mean is within this fraction of the mean.
    pub ci_target: Option<f64>,
    /// Contention (of one CPU, see `host::cpu::contention_us`) above which a repetition is disturbed; `None`: not checked.
    pub disturbance: Option<f64>,
    /// How many disturbed repetitions may be run again, per cell.
    pub max_reruns: u32,
    /// Where workers run.
    pub pin: Pin,
    /// The cell is a member of a pair (set by the runner, never by a scenario): a disturbed
    /// repetition is neither rerun nor waited out, since its partner's load decides whether
    /// it counts (`workload::reruns`, `host::pair_load`).
    pub pair_member: bool,
}

/// `[workload] pin`: CPU placement of lat_fs workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pin {
    /// Wherever the scheduler puts them.
    #[default]
    None,
    /// Task i on the i-th allowed CPU (modulo their number), with sched_setaffinity(2).
    Spread,
}

/// How a lat_fs worker times its loop (`workload.latency`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LatencyMode {
    /// Count iterations over the window; one clock read per batch (the reference's way).
    #[default]
    Mean,
    /// Read the clock after every iteration and record its latency in a histogram.
    Histogram,
}

/// Options of the steps workload.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StepsSpec {
    /// How many times the step list runs.
    pub iterations: u32,
    /// Contention (of one CPU, see `host::cpu::contention_us`) above which a step is marked disturbed and left out of statistics.
    pub disturbance: Option<f64>,
    /// The steps, in order.
    pub steps: Vec<Step>,
}

/// One step of a steps workload. Paths are relative to the filesystem under test.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Step {
    /// Remove a tree, in-process (`rm -rf path`). A missing path is not an error.
    RmRf { path: String },
    /// Unpack the scenario archive (or the named one) in-process (`tar zxf archive`).
    Untar { archive: String },
    /// sync(2).
    Sync,
    /// syncfs(2) on the filesystem under test only.
    Syncfs,
    /// Write `3` to /proc/sys/vm/drop_caches (after a sync).
    DropCaches,
    /// Create a directory and its parents.
    Mkdir { path: String },
    /// Run an external command in the filesystem under test; its children's CPU counts.
    Exec { argv: Vec<String> },
}

impl Step {
    /// The op name as written in scenario files.
    pub fn op(&self) -> &'static str {
        match self {
            Step::RmRf { .. } => "rm_rf",
            Step::Untar { .. } => "untar",
            Step::Sync => "sync",
            Step::Syncfs => "syncfs",
            Step::DropCaches => "drop_caches",
            Step::Mkdir { .. } => "mkdir",
            Step::Exec { .. } => "exec",
        }
    }

    /// The shell command the step stands for, as seed 002 printed it.
    pub fn label(&self) -> String {
        match self {
            Step::RmRf { path } => format!("rm -rf {path}"),
            Step::Untar { archive } => format!("tar zxf {archive}"),
            Step::Sync => "sync".into(),
            Step::Syncfs => "syncfs".into(),
            Step::DropCaches => "drop_caches".into(),
            Step::Mkdir { path } => format!("mkdir -p {path}"),
            Step::Exec { argv } => argv.join(" "),
        }
    }
}
