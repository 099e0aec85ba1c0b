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
    /// Check scenario files without touching the system; exit 2 on the first bad one.
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
    /// Where fsbench mounts its tmpfs and filesystems (default: `/tmp/fsbench`).
    #[arg(long, value_name = "DIR")]
    pub workdir: Option<PathBuf>,
    /// Allow formatting this block device (never one that is mounted). DESTROYS ITS DATA.
    #[arg(long, value_name = "DEVICE")]
    pub allow_device: Option<PathBuf>,
    /// No progress display, only the final tables.
    #[arg(long, short)]
    pub quiet: bool,
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
    eprintln!("error: {e}");
    for cause in e.chain().skip(1) {
        eprintln!("  caused by: {cause}");
    }
    if crate::runner::interrupted() { exit::INTERRUPTED } else { exit::FAILURE }
}

fn is_input_error(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<exit::InputError>().is_some()
            || c.downcast_ref::<crate::scenario::ScenarioError>().is_some()
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
