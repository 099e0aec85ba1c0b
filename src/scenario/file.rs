//! The scenario file as written: plain serde structs, unknown keys rejected.
//!
//! These mirror the TOML one to one and hold strings where the domain has
//! enums, so that validation (in `validate`) can say which value is wrong,
//! where, and what was probably meant. No flatten, no untagged enums: both
//! would hide unknown keys and lose error positions.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

/// A scenario file (`schema = 1`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "fsbench scenario")]
pub struct ScenarioFile {
    /// Scenario format version; this fsbench reads version 1.
    pub schema: u32,
    /// Short name ([A-Za-z0-9._-]); results go to `results/<name>/`.
    pub name: String,
    /// One line saying what the scenario measures.
    #[serde(default)]
    pub description: Option<String>,
    /// The axes of the matrix: every list is an axis, cells are the cartesian product.
    pub matrix: MatrixFile,
    /// mkfs and mount options per filesystem type (`[filesystems.ext4]`).
    #[serde(default)]
    pub filesystems: BTreeMap<String, FilesystemFile>,
    /// Kernel settings under /proc/sys applied before each cell and restored after it
    /// (`"vm.dirty_ratio" = 10`).
    #[serde(default)]
    pub sysctl: BTreeMap<String, SysctlValue>,
    /// Where the filesystems live.
    pub backing: BackingFile,
    /// The archive that `untar` steps unpack.
    #[serde(default)]
    pub archive: Option<ArchiveFile>,
    /// What runs on the filesystems.
    pub workload: WorkloadFile,
    /// Regression thresholds used by `fsbench gate`.
    #[serde(default)]
    pub gate: Option<GateFile>,
    /// Kernels to run every cell under, each in a qemu virtual machine (`[[kernels]]`).
    /// Without any, cells run on the host kernel.
    #[serde(default)]
    pub kernels: Vec<KernelFile>,
    /// A paired comparison inside one run: the matrix axis whose values are its arms.
    #[serde(default)]
    pub compare: Option<CompareFile>,
}

/// `[compare]`: run the values of one matrix axis as the arms of a paired comparison.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompareFile {
    /// The matrix axis whose values are the arms (`"fs"`, `"quota"`, ...); its first value
    /// is the baseline. Cells that differ only in this axis form a pair group, and `run`
    /// measures their members back to back in balanced ABBA/BAAB order. `"kernel"`: the
    /// arms are the kernels of `run --kernel A=… --kernel B=… --paired` (or `[[kernels]]`),
    /// the first the baseline, every member a cell in a freshly booted qemu guest.
    pub arms: String,
    /// How many pairs each pair group runs: `{ min = 6, max = 32 }` (the default). After
    /// `min` pairs a group stops as soon as its verdict at the gate threshold is decided.
    #[serde(default)]
    pub pairs: Option<PairsFile>,
    /// Seed of the ABBA/BAAB order of the pairs (0 or more); default: drawn when the run
    /// starts. Either way it is recorded in `run.json` and every paired cell file.
    #[serde(default)]
    pub seed: Option<i64>,
}

/// `pairs = { min = 6, max = 32 }`: the sequential bounds of a pair group.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PairsFile {
    /// Pairs always run before the verdict is first looked at (at least 2). Default 6.
    #[serde(default)]
    pub min: Option<i64>,
    /// Most pairs a group runs. Default 32.
    #[serde(default)]
    pub max: Option<i64>,
}

/// `[[kernels]]`: one kernel image to boot in qemu and run every cell under.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KernelFile {
    /// Label of the run made under this kernel (`BASE`, `V3`); used by compare.
    pub label: String,
    /// Kernel image (bzImage, `vmlinuz-V`), relative to the scenario file.
    pub image: String,
    /// Its modules directory (`lib/modules/V`); default: `<root>/lib/modules/V` for `<root>/boot/vmlinuz-V`.
    #[serde(default)]
    pub modules: Option<String>,
    /// Extra kernel command line, appended to fsbench's own (`console=ttyS0 panic=-1 ...`).
    #[serde(default)]
    pub cmdline: Option<String>,
    /// Guest memory (`"1GiB"`). Default 1 GiB.
    #[serde(default)]
    pub memory: Option<String>,
    /// Guest CPUs. Default 2.
    #[serde(default)]
    pub cpus: Option<i64>,
}

/// `[gate]`: how much slowdown `fsbench gate` tolerates before calling it a regression.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GateFile {
    /// Default threshold for every cell, as a percentage (`"5%"`). Default 5%.
    #[serde(default)]
    pub threshold: Option<String>,
    /// Per lat_fs test or step op thresholds: `{ chown = "10%", untar = "3%" }`.
    #[serde(default)]
    pub thresholds: BTreeMap<String, String>,
}

/// `[matrix]`: the axes. Cells are expanded fs > layout > quota > tasks > test (outermost first).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MatrixFile {
    /// Filesystem types, as `mkfs.<fs>` and mount(2) know them (ext2, ext4, xfs, btrfs, f2fs, ...).
    pub fs: Vec<String>,
    /// `M`: one filesystem per task; `S`: one shared filesystem with a directory per task. Default `["S"]`.
    #[serde(default)]
    pub layout: Option<Vec<String>>,
    /// `off` and/or `on`: disk quota while the cell runs. Default `["off"]`.
    #[serde(default)]
    pub quota: Option<Vec<String>>,
    /// Numbers of parallel tasks. Default `[1]`.
    #[serde(default)]
    pub tasks: Option<Vec<i64>>,
    /// lat_fs tests: open_close, create_unlink, chown, write_truncate. Default: all four (lat_fs only).
    #[serde(default)]
    pub test: Option<Vec<String>>,
    /// fio workloads: one axis per fio option, swept over its values (`fio.bs = ["4k", "64k"]`,
    /// `fio.iodepth = [1, 16]`). Each value is set in every job section of the cell's job.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, Vec<FioValueSchema>>")]
    pub fio: BTreeMap<String, Vec<toml::Value>>,
}

/// Schema-only mirror of a fio sweep value: text as fio takes it, or a number.
#[derive(JsonSchema)]
#[allow(dead_code)]
#[serde(untagged)]
enum FioValueSchema {
    /// `"4k"`, `"randwrite"`.
    Text(String),
    /// `16`.
    Number(i64),
}

/// `[filesystems.<fs>]`: how one filesystem type (or a named variant of one) is made and mounted.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FilesystemFile {
    /// Makes this entry a variant: the filesystem type it builds with its own mkfs and mount
    /// options (`[filesystems.ext4-nodelalloc] type = "ext4"`); its name is then a value of `matrix.fs`.
    #[serde(default, rename = "type")]
    pub fs_type: Option<String>,
    /// Extra arguments to `mkfs.<fs>`, e.g. `["-E", "lazy_itable_init=0,lazy_journal_init=0"]`.
    #[serde(default)]
    pub mkfs: Vec<String>,
    /// Mount options, one per element: `["usrquota", "grpquota", "barrier=0", "noload"]`.
    #[serde(default)]
    pub mount: Vec<String>,
    /// Quota implementation for quota-on cells: `files` (quotacheck -cug, as the seed) or `feature` (ext4 `-O quota`).
    #[serde(default)]
    pub quota: Option<String>,
    /// Block queue settings of the device under test (`/sys/block/<dev>/queue/...`), applied
    /// before the cell, read back into the result and restored afterwards.
    #[serde(default)]
    pub queue: Option<QueueFile>,
    /// Limits of a cgroup made for each of this filesystem's cells, holding its workers
    /// (lat_fs workers, steps copies, `exec` children; never fsbench itself): cgroup v2
    /// interface files and their values, `{ "cpu.max" = "50000 100000", "memory.max" = "512M" }`.
    /// Keys: cpu.max, cpu.weight, memory.max, memory.high, pids.max, io.max (`MAJ:MIN` or
    /// `cell` then `rbps=`/`wbps=`/`riops=`/`wiops=`). On a cgroup v1 host they map to the v1 files.
    #[serde(default)]
    pub cgroup: BTreeMap<String, SysctlValue>,
}

/// `queue = { scheduler = "mq-deadline", read_ahead_kb = 128, nr_requests = 64 }`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueueFile {
    /// I/O scheduler (`none`, `mq-deadline`, `bfq`, `kyber`): what the kernel lists in `queue/scheduler`.
    #[serde(default)]
    pub scheduler: Option<String>,
    /// Read-ahead in KiB (`queue/read_ahead_kb`).
    #[serde(default)]
    pub read_ahead_kb: Option<u32>,
    /// Request queue depth (`queue/nr_requests`).
    #[serde(default)]
    pub nr_requests: Option<u32>,
}

/// A `[sysctl]` value: `"vm.dirty_ratio" = 10` or a string as /proc/sys takes it.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SysctlValue {
    /// A number.
    Int(i64),
    /// Text, written as is.
    Text(String),
}

/// `[backing]`: where the filesystems live.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BackingFile {
    /// `tmpfs-loop` (sparse images on a tmpfs, loop devices, mkfs, mount; needs root),
    /// `dir` (an existing directory; nothing formatted; no root needed) or
    /// `device` (a block device that must also be named with `--allow-device`).
    pub kind: String,
    /// Image size for `tmpfs-loop`: one size (`"2GiB"`) or per layout (`{ M = "1GiB", S = "10GiB" }`).
    /// Images are sparse. Default `{ M = "1GiB", S = "10GiB" }` as in the seed.
    #[serde(default)]
    #[schemars(with = "Option<ImageSizeSchema>")]
    pub image_size: Option<toml::Value>,
    /// Directory for `dir`, device node for `device`; relative to the scenario file.
    #[serde(default)]
    pub path: Option<String>,
}

/// Schema-only mirror of `image_size` (a size, or a size per layout).
#[derive(JsonSchema)]
#[allow(dead_code)]
#[serde(untagged)]
enum ImageSizeSchema {
    /// One size for both layouts.
    One(String),
    /// A size per layout.
    PerLayout {
        /// Per task, layout M.
        #[serde(rename = "M")]
        m: Option<String>,
        /// Shared, layout S.
        #[serde(rename = "S")]
        s: Option<String>,
    },
}

/// Schema-only mirror of `workload.repetitions` (a count, or adaptive bounds).
#[derive(JsonSchema)]
#[allow(dead_code)]
#[serde(untagged)]
enum RepetitionsSchema {
    /// A fixed count.
    Count(u32),
    /// Adaptive: at least `min`, at most `max`, stop when the CI half-width is within `ci`.
    Adaptive {
        /// Undisturbed repetitions always taken. Default 3.
        min: Option<u32>,
        /// Most repetitions. Required.
        max: u32,
        /// Target 95% CI half-width of the mean, relative to the mean (`"2%"`).
        ci: Option<String>,
    },
}

/// `[archive]`: the tarball unpacked by `untar` steps.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArchiveFile {
    /// Generate a synthetic tree with this profile (`linux-2.5.63`); cached after the first run.
    #[serde(default)]
    pub generate: Option<String>,
    /// Scale factor of the generated tree (1.0 = the real tree's file count). Default 1.0.
    #[serde(default)]
    pub scale: Option<f64>,
    /// Seed of the generated tree. Default 1.
    #[serde(default)]
    pub seed: Option<u64>,
    /// A real .tar.gz instead of a generated one, relative to the scenario file.
    #[serde(default)]
    pub path: Option<String>,
    /// Copy the archive onto the filesystem under test first, as seed 002 did. Default true.
    #[serde(default)]
    pub on_target: Option<bool>,
    /// The file name steps refer to. Default `<profile>.tar.gz` or the file name of `path`.
    #[serde(default)]
    pub name: Option<String>,
}

/// `[workload]`: `kind = "lat_fs"`, `"steps"` or `"fio"`, with that kind's options.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkloadFile {
    /// `lat_fs` (lmbench's four micro loops), `steps` (a timed sequence, repeated) or
    /// `fio` (a fio job run on the cell's filesystems, see docs/fio.md).
    pub kind: String,
    /// lat_fs: each task runs as uid = gid = base + (task << 3), lmbench -U's spacing from a base no user of the host holds. Default true.
    #[serde(default)]
    pub per_task_uid: Option<bool>,
    /// lat_fs: extra quota references each task holds open. Default 2.
    #[serde(default)]
    pub quota_refs: Option<i64>,
    /// lat_fs: open files O_WRONLY rather than O_RDONLY. Default true.
    #[serde(default)]
    pub open_for_write: Option<bool>,
    /// lat_fs: untimed warm-up before each timed window. Default `"300ms"`. fio: its `ramp_time`
    /// (default none). ops: the workers run this long before the `duration` window, their
    /// figures of it dropped (dbench's warm-up; default none).
    #[serde(default)]
    pub warmup: Option<String>,
    /// lat_fs: length of each timed window. Default `"1s"`. fio: `runtime` with `time_based`
    /// (whole seconds or more; default `"10s"`).
    #[serde(default)]
    pub duration: Option<String>,
    /// lat_fs: repetitions of warm-up + window per cell: a count (default 5), or adaptive
    /// `{ min = 3, max = 20, ci = "2%" }`: at least `min`, then stop once the 95% CI
    /// half-width of the mean is within `ci` of the mean, or at `max`.
    #[serde(default)]
    #[schemars(with = "Option<RepetitionsSchema>")]
    pub repetitions: Option<toml::Value>,
    /// lat_fs: how many times the whole matrix runs (default 1). Each round provisions
    /// every cell afresh and runs its repetitions, in the run's order (`run --order random`:
    /// a new permutation per round), so slow drift of the machine lands inside every cell's
    /// spread instead of between cells or runs. With more than one round, a cell's
    /// statistics (and the gate's and compare's intervals) are over its rounds' means.
    #[serde(default)]
    pub rounds: Option<i64>,
    /// lat_fs: how many disturbed repetitions a cell may run again. Default 3.
    #[serde(default)]
    pub max_reruns: Option<i64>,
    /// Share of one CPU that other processes may take from the run (their CPU time that
    /// did not fit into the CPUs the run left idle, plus steal time) during a lat_fs
    /// repetition or a step before it counts as disturbed (`"25%"`, default), or `"off"`.
    #[serde(default)]
    pub disturbance: Option<String>,
    /// lat_fs: `spread` pins task i to the i-th allowed CPU; `none` (default) leaves placement to the scheduler.
    #[serde(default)]
    pub pin: Option<String>,
    /// lat_fs: `"mean"` (iterations counted, the default) or `"histogram"` (every
    /// iteration timed into a latency histogram: p50/p90/p99/p99.9/max).
    #[serde(default)]
    pub latency: Option<String>,
    /// Read the kernel's block-device, vmstat and dirty-memory counters around every
    /// repetition and step (and sample them every 100 ms during steps). Default true.
    #[serde(default)]
    pub monitors: Option<bool>,
    /// `"cpu"`: each cell runs one more repetition (iteration, for steps) under `perf record`
    /// that never counts toward its statistics, and stores its workers' on-CPU stacks,
    /// kernel and user, as folded stacks beside the result. `"cpu+offcpu"`: also where the
    /// workers were blocked. `"cpu+kthreads"`, `"cpu+offcpu+kthreads"`: also the kernel
    /// threads' stacks (journal commits, the device's flushes, writeback), system-wide.
    /// `"off"` (default): none.
    #[serde(default)]
    pub profile: Option<String>,
    /// steps: how many times the step list runs. Default 1.
    #[serde(default)]
    pub iterations: Option<i64>,
    /// steps: the steps, in order.
    #[serde(default)]
    pub steps: Option<Vec<StepFile>>,
    /// fio: the job, inline, in fio's job file format (`job = """[randwrite]\nrw=randwrite\n..."""`).
    #[serde(default)]
    pub job: Option<String>,
    /// fio: the job as a file, relative to the scenario's directory and beneath it
    /// (no `..`, no symbolic links).
    #[serde(default)]
    pub job_file: Option<String>,
    /// fio: `"tasks"` sets every job section's `numjobs` to the cell's task count, one clone
    /// per task directory; `"job"` (default) leaves `numjobs` to the job.
    #[serde(default)]
    pub numjobs: Option<String>,
    /// ops: the filesets (`[[workload.fileset]]`).
    #[serde(default)]
    pub fileset: Option<Vec<super::ops_file::FilesetFile>>,
    /// ops: the worker groups (`[[workload.group]]`).
    #[serde(default)]
    pub group: Option<Vec<super::ops_file::GroupFile>>,
    /// ops: loops (or transactions) per worker after which it stops.
    #[serde(default)]
    pub loops: Option<i64>,
    /// ops: ops per worker after which it stops (every op but `delay`).
    #[serde(default)]
    pub ops: Option<i64>,
    /// ops: bytes read and written per worker after which it stops (`"1GiB"`).
    #[serde(default)]
    pub bytes: Option<String>,
    /// ops: each worker's open-loop pace: `"100/s"` (loops) or `"500 ops/s"`.
    #[serde(default)]
    pub rate: Option<String>,
    /// ops: stop every worker as soon as one is done (filebench's `mode quit firstdone`).
    #[serde(default)]
    pub first_done: Option<bool>,
    /// ops: factor on every fileset's entries (the shipped personalities are small).
    #[serde(default)]
    pub scale: Option<f64>,
    /// ops: seed of the fileset layouts, sizes and random picks; default 1.
    #[serde(default)]
    pub seed: Option<i64>,
}

/// One step: `{ op = "rm_rf", path = "linux-2.5.63" }`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StepFile {
    /// rm_rf, untar, sync, syncfs, drop_caches, mkdir or exec.
    pub op: String,
    /// rm_rf, mkdir: a path relative to the filesystem under test; `{archive.top}` stands for the
    /// archive's top-level directory.
    #[serde(default)]
    pub path: Option<String>,
    /// untar: the archive's file name (see `[archive]`); default: the scenario's archive.
    #[serde(default)]
    pub archive: Option<String>,
    /// exec: the command and its arguments (no shell). Refused in bundles unless allowed.
    #[serde(default)]
    pub argv: Option<Vec<String>>,
}

/// A scenario shipped inside the binary.
#[derive(Debug, Clone, Copy)]
pub struct EmbeddedScenario {
    /// Its name (also the file stem under `scenarios/`).
    pub name: &'static str,
    /// Its text.
    pub text: &'static str,
}

/// Scenarios embedded in the binary; `quickstart` is what `fsbench run` runs by default.
pub const EMBEDDED: &[EmbeddedScenario] = &[
    EmbeddedScenario { name: "quickstart", text: include_str!("../../scenarios/quickstart.toml") },
    EmbeddedScenario { name: "quota-smp", text: include_str!("../../scenarios/quota-smp.toml") },
    EmbeddedScenario { name: "kernel-untar", text: include_str!("../../scenarios/kernel-untar.toml") },
    EmbeddedScenario { name: "quota-qemu", text: include_str!("../../scenarios/quota-qemu.toml") },
];

/// Find an embedded scenario by name.
pub fn embedded(name: &str) -> Option<&'static EmbeddedScenario> {
    EMBEDDED.iter().find(|e| e.name == name)
}

/// The JSON Schema of scenario files, as checked in under `schemas/scenario.schema.json`.
pub fn scenario_schema_json() -> String {
    let schema = schemars::schema_for!(ScenarioFile);
    let mut text = serde_json::to_string_pretty(&schema).expect("schema serializes");
    text.push('\n');
    text
}
