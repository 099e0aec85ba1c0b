//! The command line: the only layer that knows clap, prints command output and
//! decides exit codes.
//!
//! One file per command holds its clap arguments and its handler. A handler turns
//! arguments into plain requests, loads a scenario at most once, calls the stages
//! below, prints, and returns an exit code. Handlers never call each other; what
//! two of them share lives here ([`ScenarioOptions`], output-path checks).

pub mod bundle;
pub mod completions;
pub mod doctor;
pub mod fixture;
pub mod gate;
pub mod man;
pub mod output;
pub mod plan;
pub mod report;
pub mod run;
pub mod scenario;
pub mod shard;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};

use crate::exit::{self, InputError};

/// `0.1.0 (1933cbd0a1b2 2026-12-02)`: the version, the commit built and the build date.
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

/// Options that change a scenario before it is expanded (run, plan, validate, bundle run).
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
    /// Keys are axis names (fs, layout, quota, tasks, test). A value without a key
    /// is one more value of the key before it: `--only fs=xfs,btrfs,tasks=1` keeps
    /// xfs and btrfs cells with 1 task (`fs=xfs,fs=btrfs` says the same). Repeated
    /// `--only` options combine with AND.
    #[arg(long, value_name = "AXIS=VALUE[,VALUE..][,AXIS=..]")]
    pub only: Vec<String>,
    /// Unpack this real .tar.gz instead of the scenario's archive (`--set archive.path=FILE`,
    /// relative to the current directory; a generated archive's settings are dropped).
    #[arg(long, value_name = "FILE")]
    pub archive: Option<PathBuf>,
}

impl ScenarioOptions {
    /// The `--set` overrides, with `--archive FILE` as `archive.path=<absolute FILE>` last.
    pub fn overrides(&self) -> anyhow::Result<Vec<String>> {
        let mut out = self.set.clone();
        if let Some(a) = &self.archive {
            let abs =
                std::path::absolute(a).map_err(|e| InputError::anyhow(format!("--archive {}: {e}", a.display())))?;
            // A TOML string: quotes and backslashes in the path stay part of it.
            out.push(format!("archive.path={}", toml_edit::Value::from(abs.to_string_lossy().as_ref())));
        }
        Ok(out)
    }
}

/// The width tables are laid out for: the terminal's, or 100 columns when output is piped
/// (a log, a mail, a PR comment), so nothing depends on how wide the writer's terminal was.
pub fn output_width() -> u16 {
    use std::io::IsTerminal as _;
    let tty = std::io::stdout().is_terminal();
    let cols = if tty { comfy_table::Table::new().width() } else { None };
    cols.unwrap_or(100).clamp(40, 1000)
}

/// Where run names (`@LABEL`, `latest`, `SCENARIO@LABEL`) are looked up (report, compare, gate).
#[derive(Debug, Clone, Args)]
pub struct RunLookup {
    /// The results root that `SCENARIO@LABEL` and `latest` look in (`run --out`'s default).
    #[arg(long, value_name = "DIR", default_value = "results")]
    pub results: std::path::PathBuf,
}

/// Resolve run names given together to run directories, saying which run a name chose.
/// A name that matches nothing is bad input (exit 2).
pub fn resolve_runs(specs: &[&str], lookup: &RunLookup) -> anyhow::Result<Vec<std::path::PathBuf>> {
    let resolved = crate::results::find::resolve_runs(specs, &lookup.results)
        .map_err(|e| InputError::anyhow(crate::text::escape_control(&e.to_string())))?;
    Ok(resolved
        .into_iter()
        .map(|r| {
            if let Some(n) = &r.note {
                eprintln!("fsbench: {}", crate::text::escape_control(n));
            }
            r.dir
        })
        .collect())
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
    if is_input_error(e) {
        // Input errors are already formatted for the user (file:line:col, key, hint).
        eprintln!("error: {e}");
        return exit::USAGE;
    }
    eprintln!("error: {}", exit::error_chain(e));
    if crate::signals::interrupted() { exit::INTERRUPTED } else { exit::FAILURE }
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
        Command::Doctor(args) => doctor::doctor(&args),
        Command::Fixture(fixture::FixtureCommand::KernelTree(args)) => fixture::kernel_tree(&args),
        Command::Report(args) => report::report(&args),
        Command::Compare(args) => report::compare(&args),
        Command::Gate(args) => gate::gate(&args),
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
    if first == crate::workload::steps_tasks::WORKER_SUBCOMMAND {
        return Some(match crate::workload::steps_tasks::worker_main() {
            crate::workload::steps_tasks::WorkerEnd::Replied => exit::SUCCESS,
            crate::workload::steps_tasks::WorkerEnd::BadInput => exit::USAGE,
        });
    }
    None
}

/// Check an output file option before any work: a file path in an existing directory.
/// Failing late would waste the work and report a usage error as a failure.
pub fn check_output_file(opt: &str, path: &Path) -> anyhow::Result<()> {
    let parent = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if path.is_dir() || !parent.is_dir() {
        return Err(InputError::anyhow(format!("{opt} {}: not a file path in an existing directory", path.display())));
    }
    Ok(())
}

/// Check an output directory option before any work: a directory, or a path that can become one.
pub fn check_output_dir(opt: &str, path: &Path) -> anyhow::Result<()> {
    if let Some(existing) = path.ancestors().find(|a| a.exists())
        && !existing.is_dir()
    {
        return Err(InputError::anyhow(format!("{opt} {}: {} is not a directory", path.display(), existing.display())));
    }
    Ok(())
}

/// Check a `--label`: labels become column names and directory names.
pub fn check_label(what: &str, label: &str) -> anyhow::Result<()> {
    if crate::model::is_valid_label(label) {
        return Ok(());
    }
    Err(InputError::anyhow(format!("{what} `{label}`: use {}", crate::model::LABEL_RULE)))
}

/// How long `run` watches the other processes before it starts.
const PREFLIGHT_SAMPLE: std::time::Duration = std::time::Duration::from_millis(300);

/// The environment preflight of `run` and `bundle run`: sample it, and warn before
/// starting when the machine is visibly busy.
pub fn preflight() -> crate::host::environment::Environment {
    let env = crate::host::environment::Environment::sample(PREFLIGHT_SAMPLE);
    let busy = env.busy_reasons();
    if !busy.is_empty() {
        eprintln!(
            "fsbench: warning: this machine is busy ({}); disturbed repetitions will be rerun or left out, \
             and numbers may not compare with a quiet run (see `fsbench doctor`)",
            busy.join("; ")
        );
    }
    if let Some(c) = env.cpu_steadiness.as_ref().filter(|c| c.cv > crate::host::environment::STEADY_CV) {
        eprintln!(
            "fsbench: note: the same CPU work took {:.1}% more or less time from one {:.0} ms window to the next \
             (a shared host or changing clocks): repetitions cannot agree better than that here",
            c.cv * 100.0,
            c.window_ms
        );
    }
    env
}

/// Print a finished run (its tables and where it is) and decide the exit code.
/// `run` and `bundle run` both end here.
pub fn finish_run(o: &crate::runner::RunOutcome) -> i32 {
    match crate::results::load_run(&o.dir) {
        Ok(run) => print!("{}", crate::report::render_run(&run, crate::report::Format::Table)),
        Err(e) => eprintln!("fsbench: cannot read back {}: {e}", o.dir.display()),
    }
    eprintln!(
        "fsbench: results in {}{}",
        o.dir.display(),
        match (o.failed, o.skipped) {
            (0, 0) => String::new(),
            (f, s) => format!(" ({f} failed, {s} skipped)"),
        }
    );
    if o.interrupted {
        eprintln!("fsbench: interrupted; finish it with `fsbench run --resume {}`", o.dir.display());
        return exit::INTERRUPTED;
    }
    if o.measured == 0 && o.skipped > 0 && o.previously_done == 0 {
        // Skips are normal in a run that measured something; a run that measured
        // nothing at all must not pass a CI job.
        eprintln!("fsbench: no cell could run on this host, nothing was measured (see the reasons above)");
        return exit::FAILURE;
    }
    if o.failed > 0 { exit::FAILURE } else { exit::SUCCESS }
}

/// `--strict` (run, bundle run): a run that skipped any of its cells fails a CI job
/// (exit 1), even if the rest ran; `skipped` counts them (over every kernel's run).
pub fn strict_policy(code: i32, skipped: usize, strict: bool) -> i32 {
    if strict && code == exit::SUCCESS && skipped > 0 {
        eprintln!("fsbench: --strict: {} skipped (see the reasons above)", crate::text::cell_count(skipped));
        return exit::FAILURE;
    }
    code
}

/// Every cell under each kernel in qemu, one ordinary run directory per kernel, each
/// reported; shared by `run` (--kernel, [[kernels]]) and `bundle run --allow-kernels`.
/// Plain values from both commands' arguments, hence their number.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_under_kernels(
    scenario: &crate::scenario::Scenario,
    kernels: &[crate::scenario::KernelSpec],
    only: &[String],
    order: crate::runner::CellOrder,
    out: &std::path::Path,
    work_root: &std::path::Path,
    quiet: bool,
    allow_device: bool,
    strict: bool,
) -> anyhow::Result<i32> {
    let qemu_bin = crate::qemu::prepare(scenario, kernels, allow_device)?;
    // Validate the plan (and --only) on the host, before any boot.
    let plan = crate::plan::plan_for(scenario, only)?;
    let req = crate::qemu::KernelsRequest { scenario, kernels, only, order, cells: plan.cells.len(), out, quiet };
    let mut worst = exit::SUCCESS;
    // qemu's scratch is journaled under the same work root as a host run's.
    crate::provision::workroot::set_scratch_root(work_root);
    let runs = crate::qemu::run_kernels(&req, &qemu_bin)?;
    for k in &runs {
        let code = match &k.end {
            Ok(crate::qemu::GuestEnd::Interrupted) => exit::INTERRUPTED,
            Ok(crate::qemu::GuestEnd::Exited(code)) => *code,
            Err(e) => {
                eprintln!("fsbench: kernel {}: {e:#}", k.label);
                exit::FAILURE
            }
        };
        if code != exit::SUCCESS && worst != exit::INTERRUPTED && (worst == exit::SUCCESS || k.end.is_ok()) {
            worst = code;
        }
    }
    let mut skipped = 0;
    for k in &runs {
        let Some(dir) = &k.dir else { continue };
        match crate::results::load_run(dir) {
            Ok(run) => {
                skipped += run.cells.iter().filter(|c| c.status == crate::model::CellStatus::Skipped).count();
                println!("== kernel {} ==", k.label);
                print!("{}", crate::report::render_run(&run, crate::report::Format::Table));
            }
            Err(e) => eprintln!("fsbench: cannot read back {}: {e}", dir.display()),
        }
        eprintln!("fsbench: kernel {}: results in {}", k.label, dir.display());
    }
    if crate::signals::interrupted() {
        return Ok(exit::INTERRUPTED);
    }
    Ok(strict_policy(worst, skipped, strict))
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
