//! The JSON documents of the commands that print data (`doctor`, `list`, `plan`, `validate`,
//! `gate`, `bundle verify`, `report`, `compare`, `merge` and `run` with `--json`): stable, versioned
//! by `schema` like the result files, and described by
//! the JSON Schemas checked in under `schemas/` (generated from these types; a test keeps
//! them current and validates each command's output against its schema). The documents of
//! `report`, `compare` and `merge` are built by the report and live with it
//! ([`crate::report::json`], re-exported here).
//!
//! Compatibility: fields are only ever added; a change that removes or retypes a field
//! raises [`OUTPUT_SCHEMA_VERSION`].

use schemars::JsonSchema;
use serde::Serialize;

use crate::gate::GateReport;
use crate::model::{CellParams, SkipReason};
use crate::provision::capability::Capability;

pub use crate::model::OUTPUT_SCHEMA_VERSION;
pub use crate::report::json::*;

/// `fsbench doctor --json`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DoctorJson {
    /// Document version ([`OUTPUT_SCHEMA_VERSION`]).
    pub schema: u32,
    /// Every capability checked, in the table's order.
    pub capabilities: Vec<Capability>,
    /// Whether a signal stopped the checks (rows then say `unknown`).
    pub interrupted: bool,
}

/// One scenario of `fsbench list`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ListedScenario {
    /// Its `name`, or `None` when the file does not load.
    pub name: Option<String>,
    /// The file (`scenarios/quota-smp.toml`), or `None` for one embedded in the binary.
    pub file: Option<String>,
    /// Cells it expands to (when it loads).
    pub cells: Option<usize>,
    /// Its `description`.
    pub description: String,
    /// Why it does not load, first line.
    pub error: Option<String>,
}

/// `fsbench list --json`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ListJson {
    /// Document version ([`OUTPUT_SCHEMA_VERSION`]).
    pub schema: u32,
    /// Files in `./scenarios/` first, then embedded scenarios no file shadows.
    pub scenarios: Vec<ListedScenario>,
}

/// One file of `fsbench validate --json`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ValidatedFile {
    /// The file as named on the command line.
    pub file: String,
    /// Whether it is a valid scenario (with `--set` and `--only` applied).
    pub ok: bool,
    /// Its workload kind, when valid.
    pub workload: Option<String>,
    /// Cells it expands to, when valid.
    pub cells: Option<usize>,
    /// The error (file:line:column, key, hint), when not.
    pub error: Option<String>,
}

/// `fsbench validate --json` (the exit code is 2 when any file is bad, as without `--json`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ValidateJson {
    /// Document version ([`OUTPUT_SCHEMA_VERSION`]).
    pub schema: u32,
    /// Every file, in the order given.
    pub files: Vec<ValidatedFile>,
}

/// One cell of `fsbench plan --json`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PlannedCell {
    /// Position in the full expansion (before `--only`), from 0.
    pub index: usize,
    /// Cell id (`ext4-M-qoff-t1-chown`), the name of its result file.
    pub id: String,
    /// Axis values.
    pub params: CellParams,
    /// What the cell needs (root, loop devices, mkfs tools, ...).
    pub needs: Vec<String>,
    /// Why it would be skipped on this host, or `null` when it can run.
    pub skip: Option<SkipReason>,
}

/// `fsbench plan --json`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PlanJson {
    /// Document version ([`OUTPUT_SCHEMA_VERSION`]).
    pub schema: u32,
    /// Scenario name.
    pub scenario: String,
    /// Cells in run order.
    pub cells: Vec<PlannedCell>,
}

/// `fsbench gate --json`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct GateJson {
    /// Document version ([`OUTPUT_SCHEMA_VERSION`]).
    pub schema: u32,
    /// Whether any comparison regressed (the exit code is 1 then; with `--inconclusive fail`
    /// an inconclusive one fails too).
    pub regressed: bool,
    /// Comparisons per verdict.
    pub counts: GateCounts,
    /// Every comparison.
    pub report: GateReport,
    /// The profile changes behind the verdicts: per cell profiled on both sides, its most
    /// grown and shrunk functions beyond the noise (absent when nothing was profiled).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub profile_diffs: Vec<crate::report::profile_summary::ProfileDiffSummary>,
}

/// How many comparisons got each verdict.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct GateCounts {
    /// Significantly worse beyond the threshold.
    pub regressed: usize,
    /// Significantly better beyond the threshold.
    pub improved: usize,
    /// The whole interval inside ±threshold: a change as large as the threshold is ruled out.
    pub unchanged: usize,
    /// The interval straddles the threshold: the data cannot tell.
    pub inconclusive: usize,
    /// On one side only, or without samples.
    pub missing: usize,
}

impl GateJson {
    /// The document of a gate report and the profile diffs behind it.
    pub fn of(report: GateReport, diffs: &[crate::report::profile_diff::CellDiff]) -> GateJson {
        use crate::gate::Verdict;
        let counts = GateCounts {
            regressed: report.count(Verdict::Regressed),
            improved: report.count(Verdict::Improved),
            unchanged: report.count(Verdict::Unchanged),
            inconclusive: report.count(Verdict::Inconclusive),
            missing: report.count(Verdict::Missing),
        };
        let profile_diffs = diffs.iter().filter_map(|d| crate::report::profile_summary::summarize(d).ok()).collect();
        GateJson { schema: OUTPUT_SCHEMA_VERSION, regressed: counts.regressed > 0, counts, report, profile_diffs }
    }
}

/// `fsbench bundle verify --json`: what the bundle holds and what running it would do (the
/// exit code is 2 when anything is refused, as without `--json`). Every string that comes
/// from the bundle has its control characters escaped, as in the text.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BundleVerifyJson {
    /// Document version ([`OUTPUT_SCHEMA_VERSION`]).
    pub schema: u32,
    /// The bundle file as named on the command line.
    pub bundle: String,
    /// Bundle format version (`manifest.json`'s `format`).
    pub format: u32,
    /// fsbench version that packed it.
    pub packed_by: String,
    /// When it was packed (RFC 3339), when recorded.
    pub created: Option<String>,
    /// Files besides `manifest.json`, every one's sha256 checked.
    pub files: usize,
    /// Bytes of those files.
    pub bytes: u64,
    /// Scenario name.
    pub scenario: String,
    /// Workload kind (`lat_fs`, `steps`).
    pub workload: String,
    /// Cells the scenario expands to.
    pub cells: usize,
    /// The matrix's filesystems with their mkfs arguments and mount options.
    pub filesystems: Vec<BundleFilesystem>,
    /// What the filesystems are built on.
    pub backing: BundleBacking,
    /// Whether any cell needs root.
    pub needs_root: bool,
    /// The `exec` steps, as command lines (refused unless `--allow-exec`).
    pub exec_steps: Vec<String>,
    /// The fio job, when the workload is fio.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fio: Option<BundleFioJob>,
    /// The fixture archive, when the scenario has one.
    pub fixture: Option<BundleFixture>,
    /// `[[kernels]]` booted in qemu (refused unless `--allow-kernels`); empty: this machine's kernel.
    pub kernels: Vec<BundleKernel>,
    /// The packed results, when there are any and they load.
    pub results: Option<crate::bundle::PackedRun>,
    /// `[sysctl]` entries (refused unless `--allow-sysctl`; keys off the allow-list are
    /// also in `refused`).
    pub sysctl: Vec<BundleSysctl>,
    /// What one cell can make this host hold in memory, against the budget.
    pub memory: BundleMemory,
    /// Why the bundle cannot run here whatever the flags, one line each; empty when nothing is.
    pub refused: Vec<String>,
    /// The flags `bundle run` needs for what the bundle asks (`--allow-exec`, ...).
    pub flags_needed: Vec<String>,
}

/// One filesystem of a bundle's matrix.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BundleFilesystem {
    /// Its name (`ext4`).
    pub name: String,
    /// Extra mkfs arguments.
    pub mkfs: Vec<String>,
    /// Mount options.
    pub mount: Vec<String>,
}

/// One `[sysctl]` entry of a bundle.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BundleSysctl {
    /// Dotted key (`vm.dirty_ratio`).
    pub key: String,
    /// Value as written to /proc/sys.
    pub value: String,
}

/// The memory budget of a bundle's most demanding cell on this host.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BundleMemory {
    /// RAM-backed image bytes (image size × images of layout M's tasks).
    pub images_bytes: u64,
    /// Largest qemu guest memory.
    pub guest_bytes: u64,
    /// Bytes of file contents the fixture expands to.
    pub fixture_bytes: u64,
    /// The sum checked.
    pub total_bytes: u64,
    /// The cap on this host (50% of MemAvailable); `null` when MemAvailable is unreadable.
    pub cap_bytes: Option<u64>,
    /// Whether `bundle run` needs `--allow-size` here.
    pub over_budget: bool,
    /// fio's buffers and per-job memory of the most demanding fio cell (in the sum).
    pub fio_bytes: u64,
    /// Bytes of files the most demanding fio cell lays out.
    pub fio_files_bytes: u64,
    /// The `memory.max` each fio cell of `bundle run` runs under; `null` for other workloads.
    pub fio_memory_limit_bytes: Option<u64>,
    /// What the cells ask beyond their filesystems or cannot be counted, one line each
    /// (refused unless `--allow-size`).
    pub beyond: Vec<String>,
}

/// A bundle's backing.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BundleBacking {
    /// `tmpfs-loop`, `dir` or `device`.
    pub kind: String,
    /// The directory (`dir`, `null` for a private one) or the device FORMATTED (`device`).
    pub path: Option<String>,
}

/// A bundle's fio job.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BundleFioJob {
    /// The job file inside the bundle (`fixtures/randwrite.fio`); `null` for an inline job.
    pub file: Option<String>,
    /// Every option line of the job and its sweeps, as `name=value` (or `name`), in order.
    pub options: Vec<String>,
    /// The options `bundle run` refuses unless `--allow-exec`, each with the reason.
    pub refused: Vec<String>,
    /// Every section as fio reads its header, in order.
    pub sections: Vec<BundleFioSection>,
}

/// One section of a bundle's fio job.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BundleFioSection {
    /// Its name as fio reads it (the job's name, and its files' names).
    pub name: String,
    /// Whether fio takes it for its global section.
    pub global: bool,
}

/// A bundle's fixture archive.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BundleFixture {
    /// `generated` (a recipe) or `file` (an archive the bundle carries).
    pub kind: String,
    /// Generator profile (`generated`).
    pub profile: Option<String>,
    /// Generator scale (`generated`).
    pub scale: Option<f64>,
    /// Generator seed (`generated`).
    pub seed: Option<u64>,
    /// Path inside the bundle (`file`).
    pub path: Option<String>,
    /// What extracting it would make, from the dry run (`file`; `null` when unreadable).
    pub contents: Option<BundleArchiveContents>,
}

/// What the dry run of a bundled archive found.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BundleArchiveContents {
    /// Regular files.
    pub files: u64,
    /// Directories.
    pub dirs: u64,
    /// Symbolic links.
    pub symlinks: u64,
    /// Hard links.
    pub hardlinks: u64,
    /// Bytes of file contents.
    pub bytes: u64,
    /// Entries extraction would refuse (also listed in `refused`).
    pub refused_entries: usize,
}

/// One `[[kernels]]` entry of a bundle.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BundleKernel {
    /// Label of its run.
    pub label: String,
    /// Kernel image on this machine.
    pub image: String,
}

impl BundleFilesystem {
    /// The filesystems of a scenario's matrix with their mkfs and mount options.
    fn of_matrix(s: &crate::scenario::Scenario) -> Vec<BundleFilesystem> {
        let esc = crate::text::escape_control;
        let all = |v: Option<&Vec<String>>| v.map(|v| v.iter().map(|x| esc(x)).collect()).unwrap_or_default();
        s.matrix
            .fs
            .iter()
            .map(|fs| {
                let spec = s.filesystems.get(fs);
                BundleFilesystem { name: esc(fs), mkfs: all(spec.map(|f| &f.mkfs)), mount: all(spec.map(|f| &f.mount)) }
            })
            .collect()
    }
}

impl BundleBacking {
    /// A scenario's backing as `bundle verify --json` shows it.
    fn of(backing: &crate::scenario::Backing) -> BundleBacking {
        use crate::scenario::Backing;
        let esc = crate::text::escape_control;
        match backing {
            Backing::TmpfsLoop { .. } => BundleBacking { kind: "tmpfs-loop".into(), path: None },
            Backing::Dir { path } => BundleBacking {
                kind: "dir".into(),
                path: (!path.as_os_str().is_empty()).then(|| esc(&path.display().to_string())),
            },
            Backing::Device { path } => {
                BundleBacking { kind: "device".into(), path: Some(esc(&path.display().to_string())) }
            }
        }
    }
}

impl BundleFixture {
    /// A scenario's archive as `bundle verify --json` shows it: its recipe, or its file
    /// (`shown` relative to the bundle) with what the preflight found in it.
    fn of(
        source: &crate::scenario::ArchiveSource,
        pf: &crate::bundle::Preflight,
        shown: &dyn Fn(&std::path::Path) -> String,
    ) -> BundleFixture {
        use crate::scenario::ArchiveSource;
        match source {
            ArchiveSource::Generate { profile, scale, seed } => BundleFixture {
                kind: "generated".into(),
                profile: Some(crate::text::escape_control(profile)),
                scale: Some(*scale),
                seed: Some(*seed),
                path: None,
                contents: None,
            },
            ArchiveSource::Path(path) => BundleFixture {
                kind: "file".into(),
                profile: None,
                scale: None,
                seed: None,
                path: Some(shown(path)),
                contents: pf.archive.as_ref().map(|(_, r)| BundleArchiveContents {
                    files: r.stats.files,
                    dirs: r.stats.dirs,
                    symlinks: r.stats.symlinks,
                    hardlinks: r.stats.hardlinks,
                    bytes: r.stats.bytes,
                    refused_entries: r.refused.len(),
                }),
            },
        }
    }
}

impl BundleMemory {
    /// What the bundle's cells would take, from the preflight's count.
    fn of(pf: &crate::bundle::Preflight) -> BundleMemory {
        BundleMemory {
            images_bytes: pf.memory.images,
            guest_bytes: pf.memory.guest,
            fixture_bytes: pf.memory.fixture,
            total_bytes: pf.memory.total(),
            cap_bytes: pf.mem_available.map(crate::bundle::budget::cap),
            over_budget: pf.over_budget(),
            fio_bytes: pf.memory.fio,
            fio_files_bytes: pf.memory.fio_files,
            fio_memory_limit_bytes: crate::bundle::budget::fio_memory_limit(&pf.memory),
            beyond: pf.memory.beyond.iter().map(|b| crate::text::escape_control(b)).collect(),
        }
    }
}

impl BundleVerifyJson {
    /// The document of a verified bundle, from the checks [`crate::bundle::preflight`] made.
    pub fn of(
        bundle: &std::path::Path,
        ob: &crate::bundle::OpenBundle,
        s: &crate::scenario::Scenario,
        pf: &crate::bundle::Preflight,
    ) -> BundleVerifyJson {
        let esc = crate::text::escape_control;
        let shown = |p: &std::path::Path| esc(&p.strip_prefix(ob.dir.path()).unwrap_or(p).display().to_string());
        let m = &ob.manifest;
        let p = crate::plan::expand(s);
        let backing = BundleBacking::of(&s.backing);
        let fixture = s.archive.as_ref().map(|a| BundleFixture::of(&a.source, pf, &shown));
        BundleVerifyJson {
            schema: OUTPUT_SCHEMA_VERSION,
            bundle: esc(&bundle.display().to_string()),
            format: m.format,
            packed_by: m.tool_version.escaped(crate::model::TextFormat::Terminal).into_owned(),
            created: m.created.as_ref().map(|c| c.escaped(crate::model::TextFormat::Terminal).into_owned()),
            files: m.files.len(),
            bytes: m.total_bytes(),
            scenario: esc(&s.name),
            workload: s.workload.kind().to_string(),
            cells: p.cells.len(),
            filesystems: BundleFilesystem::of_matrix(s),
            backing,
            needs_root: crate::bundle::needs_root(s, &p),
            exec_steps: crate::bundle::exec_steps(s).iter().map(|e| esc(e)).collect(),
            fio: crate::bundle::fio_job::has_job(s).then(|| BundleFioJob {
                file: crate::bundle::fio_job::job_file(s).map(shown),
                options: crate::bundle::fio_job::job_options(s).iter().map(|o| esc(o)).collect(),
                refused: crate::bundle::fio_job::refused_options(s).iter().map(|o| esc(o)).collect(),
                sections: crate::bundle::fio_job::sections(s)
                    .into_iter()
                    .map(|(name, global)| BundleFioSection { name, global })
                    .collect(),
            }),
            fixture,
            kernels: s
                .kernels
                .iter()
                .map(|k| BundleKernel { label: esc(&k.label), image: esc(&k.image.display().to_string()) })
                .collect(),
            // Already escaped by the preflight.
            results: pf.results.clone(),
            sysctl: crate::bundle::asks::requested_sysctls(s)
                .iter()
                .map(|(k, v)| BundleSysctl { key: esc(k), value: esc(v) })
                .collect(),
            memory: BundleMemory::of(pf),
            refused: pf.refused.iter().map(|r| esc(r)).collect(),
            flags_needed: pf.flags_needed(s).iter().map(|f| esc(f)).collect(),
        }
    }
}

/// `fsbench run --json` (and `bundle run --json`): what the run wrote, once it ended.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RunOutcomeJson {
    /// Document version ([`OUTPUT_SCHEMA_VERSION`]).
    pub schema: u32,
    /// The exit code fsbench ends with (0 ok, 1 a cell failed or nothing measured or
    /// `--strict`, 130 interrupted).
    pub exit: i32,
    /// Whether a signal stopped the run (`fsbench run --resume RUN_DIR` finishes a host run).
    pub interrupted: bool,
    /// One entry per run directory written: one for a run on this host or a paired run,
    /// one per kernel for `--kernel` without `--paired`.
    pub runs: Vec<RunWritten>,
}

/// One run directory `fsbench run` wrote.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RunWritten {
    /// The kernel's label, for one run per kernel (`--kernel` without `--paired`).
    pub kernel: Option<String>,
    /// The run directory (`results/<scenario>/<run-id>`), as given to `report`, `gate`, `--resume`.
    pub dir: String,
    /// The run's report, as `fsbench report RUN_DIR --json` prints it; absent when the
    /// directory could not be read back (the error is on stderr).
    pub report: Option<ReportJson>,
}

impl RunWritten {
    /// The run in `dir` (of `kernel`), read back for its report.
    pub fn of(dir: &std::path::Path, kernel: Option<&str>) -> RunWritten {
        RunWritten {
            kernel: kernel.map(str::to_string),
            dir: dir.display().to_string(),
            report: crate::results::load_run(dir).ok().map(|run| crate::report::run_json(&run)),
        }
    }
}

/// The checked-in schemas: `(file under schemas/, schema text)`.
pub fn schemas() -> Vec<(&'static str, String)> {
    fn text<T: JsonSchema>() -> String {
        // What the commands write, not what they would read: a field they leave out when it
        // has nothing to say (`skip_serializing_if`) is not required.
        let schema = schemars::generate::SchemaSettings::draft2020_12()
            .for_serialize()
            .into_generator()
            .into_root_schema_for::<T>();
        serde_json::to_string_pretty(&schema).expect("schema serializes") + "\n"
    }
    vec![
        ("doctor.schema.json", text::<DoctorJson>()),
        ("list.schema.json", text::<ListJson>()),
        ("plan.schema.json", text::<PlanJson>()),
        ("validate.schema.json", text::<ValidateJson>()),
        ("gate.schema.json", text::<GateJson>()),
        ("bundle-verify.schema.json", text::<BundleVerifyJson>()),
        ("report.schema.json", text::<ReportJson>()),
        ("reports.schema.json", text::<ReportsJson>()),
        ("run-list.schema.json", text::<RunListJson>()),
        ("run-outcome.schema.json", text::<RunOutcomeJson>()),
        ("merge.schema.json", text::<MergeJson>()),
        ("bisect.schema.json", text::<crate::bisect::log::BisectLog>()),
    ]
}
