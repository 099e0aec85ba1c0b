//! The command line: clap definitions and dispatch into the library.
//!
//! Arguments are parsed once here into plain structs; each subcommand hands
//! them to the module that owns the stage. Errors become exit codes here and
//! nowhere else (see [`crate::exit`]).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::exit;

/// Filesystem benchmarks described in TOML scenario files.
///
/// A scenario names filesystems with their mkfs and mount options, how they are
/// laid out (loop devices over tmpfs, or an existing directory), task counts and
/// the workload. fsbench expands it into a matrix of cells, builds each cell's
/// filesystems for real, runs and measures the workload, stores self-describing
/// results and renders tables and plots.
///
/// Start with `fsbench run` (the embedded quickstart scenario), `fsbench list`
/// (bundled scenarios) and `fsbench plan FILE` (what a scenario would do).
#[derive(Debug, Parser)]
#[command(name = "fsbench", version, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a scenario: provision each cell, run its workload, store the results.
    ///
    /// Without a scenario file, runs the embedded quickstart scenario.
    /// Results go to `<out>/<scenario>/<run-id>/`, one JSON file per cell,
    /// written as each cell finishes.
    Run(RunArgs),
    /// Check scenario files without touching the system; exit 2 if any is bad.
    Validate(ValidateArgs),
    /// Show the cells a scenario expands to, what each needs, and which would be skipped here.
    Plan(PlanArgs),
    /// Print the JSON Schema of the scenario format (editors use it to complete and validate).
    Schema(SchemaArgs),
    /// List the scenarios bundled in `scenarios/` and embedded in the binary.
    List,
    /// Check what this host can do: root, loop devices, mkfs tools, filesystems, quota.
    Doctor(DoctorArgs),
    /// Generate deterministic fixtures (a synthetic linux-2.5.63 tree as .tar.gz).
    #[command(subcommand)]
    Fixture(FixtureCommand),
    /// Print the results of one or more runs as tables (seed layout), CSV, Markdown or JSON.
    Report(ReportArgs),
    /// Put runs from different kernels, hosts or labs side by side, with ratios and significance.
    Compare(CompareArgs),
    /// Compare a candidate run against a baseline and fail on significant regressions (for CI).
    ///
    /// Exit 0 when no cell regressed, 1 when one did, 2 on bad input.
    Gate(GateArgs),
    /// Pack, verify and run scenario bundles shared between labs.
    #[command(subcommand)]
    Bundle(BundleCommand),
    /// Gather the shards of one sharded run (or runs from many hosts) and check they are complete.
    Merge(MergeArgs),
    /// Generate (and optionally submit) jobs that run a scenario's shards on a job engine.
    #[command(subcommand)]
    Submit(SubmitCommand),
    /// Internal: a lat_fs worker process (started by `fsbench run`, not by users).
    #[command(name = "__latfs-worker", hide = true)]
    LatfsWorker(WorkerArgs),
}

/// Options that change a scenario before it is expanded.
#[derive(Debug, Clone, Args, Default)]
pub struct ScenarioOptions {
    /// Override a scenario value by its dotted TOML path, typed and validated like the file.
    ///
    /// Examples: `--set workload.duration=200ms`, `--set backing.kind=dir`,
    /// `--set 'matrix.tasks=[1,2]'`. May be repeated.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,
    /// Keep only cells whose axis values match: `--only fs=ext4,tasks=1`.
    ///
    /// Keys are axis names (fs, layout, quota, tasks, test); a key may repeat
    /// to allow several values (`--only tasks=1,tasks=2`). Repeated `--only`
    /// options combine with AND.
    #[arg(long, value_name = "AXIS=VALUE[,..]")]
    pub only: Vec<String>,
}

/// `fsbench run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Scenario file; the embedded quickstart scenario when omitted.
    pub scenario: Option<PathBuf>,
    #[command(flatten)]
    pub scenario_options: ScenarioOptions,
    /// Results root: the run goes to `<out>/<scenario>/<run-id>/`.
    #[arg(long, default_value = "results", value_name = "DIR")]
    pub out: PathBuf,
    /// Label for this run, e.g. the kernel under test (`BASE`, `V3`); used by compare.
    #[arg(long, value_name = "NAME")]
    pub label: Option<String>,
    /// Finish an interrupted run: run only the cells missing from this run directory.
    #[arg(long, value_name = "RUN_DIR", conflicts_with = "scenario")]
    pub resume: Option<PathBuf>,
    /// Where fsbench mounts its tmpfs and filesystems (default: `/tmp/fsbench`, or
    /// `/tmp/fsbench-<uid>` for other users). Must be owned by you and not writable by others.
    #[arg(long, value_name = "DIR")]
    pub workdir: Option<PathBuf>,
    /// Allow formatting this block device (never one that is mounted). DESTROYS ITS DATA.
    #[arg(long, value_name = "DEVICE")]
    pub allow_device: Option<PathBuf>,
    /// No progress display, only the final tables.
    #[arg(long, short)]
    pub quiet: bool,
    /// Run the cells under another kernel in qemu: `LABEL=PATH[,modules=DIR]` (PATH a kernel image).
    /// May be repeated; each cell runs once per kernel.
    #[arg(long = "kernel", value_name = "LABEL=PATH[,modules=DIR]")]
    pub kernels: Vec<String>,
    /// Run only the K-th of N disjoint parts of the matrix (`--shard 3/8`, K from 1).
    /// Without it, the shard comes from Slurm array or Kubernetes indexed Job variables when set.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// Number of shards when the index comes from `JOB_COMPLETION_INDEX` (Kubernetes).
    #[arg(long, value_name = "N")]
    pub shard_count: Option<u32>,
    /// Set by `fsbench bundle run`, never from the command line: a real archive that came
    /// with the scenario is unpacked as untrusted input (checked entries, RESOLVE_BENEATH).
    #[arg(skip)]
    pub untrusted_archives: bool,
}

/// `fsbench validate`.
#[derive(Debug, Clone, Args)]
pub struct ValidateArgs {
    /// Scenario files to check.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub scenario_options: ScenarioOptions,
}

/// Output format of `plan`.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum PlanFormat {
    /// A terminal table.
    Table,
    /// JSON, one object per cell.
    Json,
}

/// `fsbench plan`.
#[derive(Debug, Clone, Args)]
pub struct PlanArgs {
    /// Scenario file; the embedded quickstart scenario when omitted.
    pub scenario: Option<PathBuf>,
    #[command(flatten)]
    pub scenario_options: ScenarioOptions,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: PlanFormat,
}

/// `fsbench schema`.
#[derive(Debug, Clone, Args)]
pub struct SchemaArgs {
    /// Which schema: the scenario format or the result format.
    #[arg(value_enum, default_value = "scenario")]
    pub which: SchemaKind,
}

/// The JSON Schemas fsbench can print.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum SchemaKind {
    /// Scenario files (`schemas/scenario.schema.json`).
    Scenario,
    /// Cell result files (`schemas/result.schema.json`).
    Result,
}

/// `fsbench doctor`.
#[derive(Debug, Clone, Args)]
pub struct DoctorArgs {
    /// Also check these filesystem types (default: ext2, ext3, ext4, xfs, btrfs, f2fs, ...).
    #[arg(long, value_delimiter = ',')]
    pub fs: Vec<String>,
}

/// `fsbench fixture ...`.
#[derive(Debug, Clone, Subcommand)]
pub enum FixtureCommand {
    /// A synthetic kernel source tree with the shape of a real one, as a .tar.gz.
    KernelTree(KernelTreeArgs),
}

/// `fsbench fixture kernel-tree`.
#[derive(Debug, Clone, Args)]
pub struct KernelTreeArgs {
    /// The tree to imitate.
    #[arg(long, default_value = "linux-2.5.63")]
    pub profile: String,
    /// Scale factor on the number of files and directories (1.0 = the real tree).
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// Generator seed: the same seed gives byte-identical output.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output file (.tar.gz).
    #[arg(short, long)]
    pub output: PathBuf,
}

/// Output format of reports.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq, Default)]
pub enum ReportFormat {
    /// Terminal tables in the seed's layout.
    #[default]
    Table,
    /// Markdown tables.
    Markdown,
    /// Comma-separated values.
    Csv,
    /// JSON.
    Json,
}

impl From<ReportFormat> for crate::report::Format {
    fn from(f: ReportFormat) -> Self {
        match f {
            ReportFormat::Table => Self::Table,
            ReportFormat::Markdown => Self::Markdown,
            ReportFormat::Csv => Self::Csv,
            ReportFormat::Json => Self::Json,
        }
    }
}

/// `fsbench report`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Run directories (`results/<scenario>/<run-id>`).
    #[arg(required = true)]
    pub runs: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: ReportFormat,
    /// Also write one PNG and one SVG plot per table into this directory.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
}

/// `fsbench compare`.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// Runs to compare, each as `LABEL=RUN_DIR` (or a bare RUN_DIR, labelled by its `--label`).
    /// The first is the reference for ratios.
    #[arg(required = true, num_args = 2..)]
    pub runs: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: ReportFormat,
    /// Also write one PNG and one SVG plot per table into this directory.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
}

/// `fsbench gate`.
#[derive(Debug, Clone, Args)]
pub struct GateArgs {
    /// The reference run directory.
    #[arg(long, value_name = "RUN_DIR")]
    pub baseline: PathBuf,
    /// The run directory under test.
    #[arg(long, value_name = "RUN_DIR")]
    pub candidate: PathBuf,
    /// Slowdown that counts as a regression when significant (`5%`); overrides the scenario's `[gate]`.
    #[arg(long, value_name = "PERCENT")]
    pub threshold: Option<String>,
    /// Metric to compare: `total_loops` (lat_fs) or `elapsed` (steps); default by workload.
    #[arg(long)]
    pub metric: Option<String>,
    /// Also write a Markdown summary here (for a CI job summary or PR comment).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Also write JUnit XML here (one test case per cell).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
}

/// `fsbench bundle ...`.
#[derive(Debug, Clone, Subcommand)]
pub enum BundleCommand {
    /// Pack a scenario, its fixtures (or their recipe) and optionally results into one file.
    Pack(BundlePackArgs),
    /// Check a bundle's format, checksums and scenario, and say what running it would do.
    Verify(BundleVerifyArgs),
    /// Unpack a bundle into a fresh private directory and run its scenario.
    Run(BundleRunArgs),
}

/// `fsbench bundle pack`.
#[derive(Debug, Clone, Args)]
pub struct BundlePackArgs {
    /// The scenario file.
    pub scenario: PathBuf,
    /// Include this run directory's results.
    #[arg(long, value_name = "RUN_DIR")]
    pub with_results: Option<PathBuf>,
    /// Output file (`lab.fsb`).
    #[arg(short, long)]
    pub output: PathBuf,
}

/// `fsbench bundle verify`.
#[derive(Debug, Clone, Args)]
pub struct BundleVerifyArgs {
    /// The bundle file.
    pub bundle: PathBuf,
}

/// `fsbench bundle run`.
#[derive(Debug, Clone, Args)]
pub struct BundleRunArgs {
    /// The bundle file.
    pub bundle: PathBuf,
    /// Allow the bundle's `exec` steps to run commands on this machine.
    #[arg(long)]
    pub allow_exec: bool,
    /// Allow formatting this block device if the bundle asks for it. DESTROYS ITS DATA.
    #[arg(long, value_name = "DEVICE")]
    pub allow_device: Option<PathBuf>,
    #[command(flatten)]
    pub scenario_options: ScenarioOptions,
    /// Results root.
    #[arg(long, default_value = "results", value_name = "DIR")]
    pub out: PathBuf,
    /// Label for this run.
    #[arg(long, value_name = "NAME")]
    pub label: Option<String>,
    /// Work directory for mounts.
    #[arg(long, value_name = "DIR")]
    pub workdir: Option<PathBuf>,
    /// No progress display.
    #[arg(long, short)]
    pub quiet: bool,
}

/// `fsbench merge`.
#[derive(Debug, Clone, Args)]
pub struct MergeArgs {
    /// Run directories, or directories containing run directories (a shared results root).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Output format of the merged report.
    #[arg(long, value_enum, default_value = "table")]
    pub format: ReportFormat,
}

/// `fsbench submit ...`.
#[derive(Debug, Clone, Subcommand)]
pub enum SubmitCommand {
    /// Write (and with --submit, sbatch) a Slurm array job running the shards, plus a dependent merge job.
    Slurm(SubmitSlurmArgs),
    /// Write a Kubernetes indexed Job manifest running the shards.
    K8s(SubmitK8sArgs),
}

/// `fsbench submit slurm`.
#[derive(Debug, Clone, Args)]
pub struct SubmitSlurmArgs {
    /// The scenario file.
    pub scenario: PathBuf,
    /// Number of shards (array tasks).
    #[arg(long)]
    pub shards: u32,
    /// Slurm partition.
    #[arg(long)]
    pub partition: Option<String>,
    /// Shared results root the shards write to.
    #[arg(long, default_value = "results", value_name = "DIR")]
    pub out: PathBuf,
    /// Where to write the sbatch script (default: stdout).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Submit with sbatch after writing.
    #[arg(long)]
    pub submit: bool,
}

/// `fsbench submit k8s`.
#[derive(Debug, Clone, Args)]
pub struct SubmitK8sArgs {
    /// The scenario file.
    pub scenario: PathBuf,
    /// Number of shards (completions).
    #[arg(long)]
    pub shards: u32,
    /// Container image that has fsbench.
    #[arg(long, default_value = "fsbench:latest")]
    pub image: String,
    /// Where to write the manifest (default: stdout).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

/// Internal arguments of a lat_fs worker process.
#[derive(Debug, Clone, Args)]
pub struct WorkerArgs {
    /// Raw arguments, interpreted by the worker.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

/// Parse the command line, run the command, and return the process exit code.
pub fn main() -> i32 {
    // Like every Unix filter: `fsbench plan ... | head` ends quietly instead of panicking.
    // SAFETY: setting a signal disposition to SIG_DFL at startup, before any thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => exit::SUCCESS,
                _ => exit::USAGE,
            };
        }
    };
    if let Command::LatfsWorker(args) = &cli.command {
        return crate::workload::latfs::worker_main(&args.args);
    }
    match dispatch(cli.command) {
        Ok(code) => code,
        Err(e) => report_error(&e),
    }
}

/// Print an error the way users read it (`error: ...` plus causes) and pick the exit code.
pub fn report_error(e: &anyhow::Error) -> i32 {
    if is_input_error(e) {
        // Input errors are already formatted for the user (file:line:col, key, hint).
        eprintln!("error: {e}");
        return exit::USAGE;
    }
    eprintln!("error: {}", exit::error_chain(e));
    if crate::runner::interrupted() { exit::INTERRUPTED } else { exit::FAILURE }
}

fn is_input_error(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<exit::InputError>().is_some() || c.downcast_ref::<crate::scenario::ScenarioError>().is_some()
    })
}

fn dispatch(command: Command) -> anyhow::Result<i32> {
    match command {
        Command::Run(args) => crate::runner::cli_run(&args),
        Command::Validate(args) => crate::plan::cli_validate(&args),
        Command::Plan(args) => crate::plan::cli_plan(&args),
        Command::Schema(args) => crate::scenario::file::cli_schema(&args),
        Command::List => crate::scenario::file::cli_list(),
        Command::Doctor(args) => crate::provision::cli_doctor(&args),
        Command::Fixture(FixtureCommand::KernelTree(args)) => crate::fixture::cli_kernel_tree(&args),
        Command::Report(args) => crate::report::cli_report(&args),
        Command::Compare(args) => crate::report::cli_compare(&args),
        Command::Gate(args) => crate::gate::cli_gate(&args),
        Command::Bundle(BundleCommand::Pack(args)) => crate::bundle::cli_pack(&args),
        Command::Bundle(BundleCommand::Verify(args)) => crate::bundle::cli_verify(&args),
        Command::Bundle(BundleCommand::Run(args)) => crate::bundle::cli_run(&args),
        Command::Merge(args) => crate::shard::cli_merge(&args),
        Command::Submit(SubmitCommand::Slurm(args)) => crate::shard::cli_submit_slurm(&args),
        Command::Submit(SubmitCommand::K8s(args)) => crate::shard::cli_submit_k8s(&args),
        Command::LatfsWorker(_) => unreachable!("handled before dispatch"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
