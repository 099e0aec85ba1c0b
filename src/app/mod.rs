//! The command line: the only layer that knows clap, prints command output and
//! decides exit codes.
//!
//! One file per command holds its clap arguments and its handler. A handler turns
//! arguments into plain requests, loads a scenario at most once, calls the stages
//! below, prints, and returns an exit code. Handlers never call each other; what
//! two of them share has a file of its own: [`scenario_options`] (`--set`, `--only`,
//! `--archive`), [`runs`] (finding runs by name), [`checks`] (output paths and labels),
//! [`print`] (table width), [`measure`] (a run's preflight and end, runs under other
//! kernels), [`run_options`] (`--out`, `--label`, `--workdir`, `--quiet`, `--strict` of `run`
//! and `bundle run`) and [`output`] (the `--json` documents).

pub mod bisect;
pub mod bisect_cache;
pub mod bundle;
pub mod calibrate;
pub mod checks;
pub mod completions;
pub mod doctor;
pub mod export;
pub mod fixture;
pub mod gate;
pub mod history;
pub mod import;
pub mod man;
pub mod measure;
pub mod output;
pub mod plan;
pub mod print;
pub mod report;
pub mod run;
pub mod run_options;
pub mod runs;
pub mod scenario;
pub mod scenario_options;
pub mod shard;

// The shared helpers' paths from when they lived in this file.
pub use checks::{check_label, check_output_dir, check_output_file};
pub use measure::{finish_run, preflight};
pub use print::output_width;
pub use runs::{RunLookup, resolve_runs};
pub use scenario_options::ScenarioOptions;

use std::ffi::OsString;

use clap::{Parser, Subcommand};

use crate::exit::{self, InputError};

/// `0.3.0 (1933cbd0a1b2 2026-12-04)`: the version, the commit built and the build date.
pub const VERSION: &str =
    concat!(env!("CARGO_PKG_VERSION"), " (", env!("FSBENCH_COMMIT"), " ", env!("FSBENCH_BUILD_DATE"), ")");

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
#[command(name = "fsbench", version = VERSION, max_term_width = 100)]
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
    Run(run::RunArgs),
    /// Check scenario files without touching the system; exit 2 if any is bad.
    Validate(plan::ValidateArgs),
    /// Show the cells a scenario expands to, what each needs, and which would be skipped here.
    Plan(plan::PlanArgs),
    /// Print the JSON Schema of the scenario format (editors use it to complete and validate).
    Schema(scenario::SchemaArgs),
    /// List the scenarios bundled in `scenarios/` and embedded in the binary.
    List(scenario::ListArgs),
    /// Print the scenario a stored run ran, with its --set and --archive applied.
    ///
    /// `fsbench scenario RUN > again.toml` re-runs it (`fsbench run again.toml`) or packs
    /// it with its results (`fsbench bundle pack again.toml --with-results RUN`).
    Scenario(scenario::ScenarioArgs),
    /// Check what this host can do: root, loop devices, mkfs tools, filesystems, quota.
    Doctor(doctor::DoctorArgs),
    /// Generate deterministic fixtures (a synthetic linux-2.5.63 tree as .tar.gz).
    #[command(subcommand)]
    Fixture(fixture::FixtureCommand),
    /// Print the results of one or more runs as tables (seed layout), CSV, Markdown or JSON.
    Report(report::ReportArgs),
    /// Put runs from different kernels, hosts or labs side by side, with ratios and significance.
    Compare(report::CompareArgs),
    /// Compare a candidate run against a baseline and fail on significant regressions (for CI).
    ///
    /// Exit 0 when no cell regressed, 1 when one did, 2 on bad input; `--inconclusive fail`
    /// also fails on comparisons the data cannot decide, `--bisect` gives `git bisect run` codes.
    Gate(gate::GateArgs),
    /// Measure where a scenario's variance is on this host (repetitions, rounds, runs) by A/A runs.
    ///
    /// Stores `<results>/<scenario>/calibration.json`, which `gate` uses to judge runs of one
    /// round against each other, and prints per cell the rounds × repetitions that decide
    /// the threshold within `--budget`.
    Calibrate(calibrate::CalibrateArgs),
    /// Every run of a scenario as a series per cell and metric, with a sparkline per series.
    ///
    /// In start order or by a `run --meta` key (`--order-by commit`); runs whose scenario
    /// changed what is measured start a new segment instead of joining the series.
    History(history::HistoryArgs),
    /// Runs as the JSON github-action-benchmark or Bencher ingest, for dashboards CI already has.
    ///
    /// Each cell's (and step's) median, as the report prints it, with the 95% interval of the mean.
    Export(export::ExportArgs),
    /// Which kernel of an ordered list brought a regression: each step a paired run in qemu.
    ///
    /// `--kernel GOOD=… --kernel … --kernel BAD=…` (or `--kernels FILE`): the endpoints are
    /// confirmed first, each step judged bad, good or unknown by the paired verdict, the
    /// culprit confirmed against its predecessor; `--resume DIR` goes on after Ctrl-C.
    Bisect(bisect::BisectArgs),
    /// Convert a filebench workload file (`.f`) into an op-mix scenario.
    ///
    /// Filesets, processes and threads of flowops, `run N`: the subset that describes
    /// filebench's personalities; anything else is refused with its line.
    Import(import::ImportArgs),
    /// List or prune `bisect --git`'s build cache (only what fsbench made is removed).
    #[command(subcommand)]
    BisectCache(bisect_cache::BisectCacheCommand),
    /// Pack, verify and run scenario bundles shared between labs.
    #[command(subcommand)]
    Bundle(bundle::BundleCommand),
    /// Gather the shards of one sharded run (or runs from many hosts) and check they are complete.
    Merge(shard::MergeArgs),
    /// Generate (and optionally submit) jobs that run a scenario's shards on a job engine.
    #[command(subcommand)]
    Submit(shard::SubmitCommand),
    /// Print a shell completion script (bash, zsh or fish).
    Completions(completions::CompletionsArgs),
    /// Print the manual page, or write one per command into a directory.
    Man(man::ManArgs),
}

/// Parse the process's command line, run the command, and return the process exit code.
pub fn main() -> i32 {
    // Inside a qemu guest the kernel runs fsbench as init with this one argument
    // (`rdinit=/fsbench -- __guest-init`); it must not go through the CLI. Never returns.
    if std::env::args_os().nth(1).is_some_and(|a| a == "__guest-init") {
        crate::qemu::guest::init_main();
    }
    main_from(std::env::args_os())
}

/// Run the command line `args` (program name first) and return the exit code.
pub fn main_from<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    if let Some(code) = internal(&args) {
        return code;
    }
    // Like every Unix filter: `fsbench plan ... | head` ends quietly instead of panicking.
    // SAFETY: setting a signal disposition to SIG_DFL, before this command starts any thread.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => exit::SUCCESS,
                _ => exit::USAGE,
            };
        }
    };
    match dispatch(cli.command) {
        Ok(code) => code,
        Err(e) => report_error(&e),
    }
}

/// Print an error the way users read it (`error: ...` plus causes) and pick the exit code.
pub fn report_error(e: &anyhow::Error) -> i32 {
    // An error after SIGINT/SIGTERM/SIGHUP is the interruption's (a child the signal also
    // reached failed), whatever its kind: the shell is told 130, never "bad input".
    if crate::signals::interrupted() {
        eprintln!("error: {}", exit::error_chain(e));
        return exit::INTERRUPTED;
    }
    if is_input_error(e) {
        // Input errors are already formatted for the user (file:line:col, key, hint).
        eprintln!("error: {e}");
        return exit::USAGE;
    }
    eprintln!("error: {}", exit::error_chain(e));
    exit::FAILURE
}

fn is_input_error(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<InputError>().is_some() || c.downcast_ref::<crate::scenario::ScenarioError>().is_some()
    })
}

fn dispatch(command: Command) -> anyhow::Result<i32> {
    match command {
        Command::Run(args) => run::run(&args),
        Command::Validate(args) => plan::validate(&args),
        Command::Plan(args) => plan::plan(&args),
        Command::Schema(args) => scenario::schema(&args),
        Command::List(args) => scenario::list(&args),
        Command::Scenario(args) => scenario::scenario(&args),
        Command::Import(args) => import::import_filebench(&args),
        Command::Doctor(args) => doctor::doctor(&args),
        Command::Fixture(fixture::FixtureCommand::KernelTree(args)) => fixture::kernel_tree(&args),
        Command::Report(args) => report::report(&args),
        Command::Compare(args) => report::compare(&args),
        Command::Gate(args) => gate::gate(&args),
        Command::Calibrate(args) => calibrate::calibrate(&args),
        Command::History(args) => history::history(&args),
        Command::Export(args) => export::export(&args),
        Command::Bisect(args) => bisect::bisect(&args),
        Command::BisectCache(bisect_cache::BisectCacheCommand::List(args)) => bisect_cache::list(&args),
        Command::BisectCache(bisect_cache::BisectCacheCommand::Prune(args)) => bisect_cache::prune(&args),
        Command::Bundle(bundle::BundleCommand::Pack(args)) => bundle::pack(&args),
        Command::Bundle(bundle::BundleCommand::Verify(args)) => bundle::verify(&args),
        Command::Bundle(bundle::BundleCommand::Run(args)) => bundle::run(&args),
        Command::Merge(args) => shard::merge(&args),
        Command::Submit(shard::SubmitCommand::Slurm(args)) => shard::submit_slurm(&args),
        Command::Submit(shard::SubmitCommand::K8s(args)) => shard::submit_k8s(&args),
        Command::Completions(args) => completions::completions(&args),
        Command::Man(args) => man::man(&args),
    }
}

/// The worker processes fsbench starts of itself (`__latfs-worker ARGS`, `__steps-worker`):
/// internal entry points, like `__guest-init`, that are not part of the command line users
/// see, complete or read about; `None` for every other command line.
fn internal(args: &[OsString]) -> Option<i32> {
    let first = args.get(1)?;
    if first == crate::workload::latfs::WORKER_SUBCOMMAND {
        let Some(rest) = args[2..].iter().map(|a| a.clone().into_string().ok()).collect::<Option<Vec<_>>>() else {
            return Some(exit::USAGE);
        };
        return Some(match crate::workload::latfs::worker_main(&rest) {
            crate::workload::latfs::WorkerEnd::Measured => exit::SUCCESS,
            crate::workload::latfs::WorkerEnd::Failed => exit::FAILURE,
            crate::workload::latfs::WorkerEnd::BadArguments => exit::USAGE,
        });
    }
    if first == crate::workload::steps::tasks::WORKER_SUBCOMMAND {
        return Some(match crate::workload::steps::tasks::worker_main() {
            crate::workload::steps::tasks::WorkerEnd::Replied => exit::SUCCESS,
            crate::workload::steps::tasks::WorkerEnd::BadInput => exit::USAGE,
        });
    }
    None
}

/// `--strict` (run, bundle run): a run with any cell that gave no number fails a CI job
/// (exit 1), even if the rest ran; `skipped` counts them (skipped, or measured without
/// statistics because every repetition was disturbed; over every kernel's run).
pub fn strict_policy(code: i32, skipped: usize, strict: bool) -> i32 {
    if strict && code == exit::SUCCESS && skipped > 0 {
        eprintln!(
            "fsbench: --strict: {} skipped or without statistics (see the reasons above)",
            crate::text::cell_count(skipped)
        );
        return exit::FAILURE;
    }
    code
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// Runs a command line in this thread; returns its exit code and how many scenarios it parsed.
    fn parses(args: &[&str]) -> (i32, usize) {
        let before = crate::scenario::parses_on_this_thread();
        let code = main_from(args);
        (code, crate::scenario::parses_on_this_thread() - before)
    }

    #[test]
    fn each_command_parses_its_scenario_once() {
        let q = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/quickstart.toml");
        let untar = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/kernel-untar.toml");
        assert_eq!(parses(&["fsbench", "validate", q, "--only", "tasks=1"]), (exit::SUCCESS, 1));
        assert_eq!(parses(&["fsbench", "plan", untar, "--format", "json"]), (exit::SUCCESS, 1));
        // `run` used to parse twice: once only to look for [[kernels]]. Stopped by --only after loading.
        assert_eq!(parses(&["fsbench", "run", q, "--only", "fs=nosuchfs"]), (exit::USAGE, 1));
        let dir = tempfile::tempdir().unwrap();
        let job = dir.path().join("job.yaml");
        let job = job.to_str().unwrap();
        assert_eq!(parses(&["fsbench", "submit", "k8s", q, "--shards", "2", "-o", job]), (exit::SUCCESS, 1));
    }

    #[test]
    fn validate_checks_only_instead_of_ignoring_it() {
        let q = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/quickstart.toml");
        assert_eq!(main_from(["fsbench", "validate", q, "--only", "fs=nosuchfs"]), exit::USAGE);
        assert_eq!(main_from(["fsbench", "validate", q, "--only", "taks=1"]), exit::USAGE);
    }
}
