//! `fsbench bundle pack|verify|run`: scenarios shared between labs, treated as untrusted input.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use super::scenario_options::ScenarioOptions;
use crate::bundle::{
    Allowed, BundleError, Preflight, check_allowed, check_memory, import_results, manifest::SCENARIO_FILE, open_bundle,
    pack, preflight,
};
use crate::exit::{self, InputError};
use crate::runner::{RunRequest, RunTarget};

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
    /// Print JSON (`schemas/bundle-verify.schema.json`) instead of the summary; the exit code is the same.
    #[arg(long)]
    pub json: bool,
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
    /// Allow the bundle's `[[kernels]]` (kernel images of this machine) to boot in qemu.
    #[arg(long)]
    pub allow_kernels: bool,
    /// Allow the bundle's `[sysctl]`: only writeback and cache knobs (vm.dirty_*, vm.swappiness, ...)
    /// within ranges; any other key is refused even with this flag.
    #[arg(long)]
    pub allow_sysctl: bool,
    /// Allow RAM-backed images, guest memory and fixture beyond half of this host's MemAvailable.
    #[arg(long)]
    pub allow_size: bool,
    #[command(flatten)]
    pub scenario_options: ScenarioOptions,
    #[command(flatten)]
    pub options: super::run_options::RunOptions,
}

/// `fsbench bundle pack`.
pub fn pack(args: &BundlePackArgs) -> anyhow::Result<i32> {
    super::checks::check_output_file("--output", &args.output)?;
    let packed =
        pack::pack(&args.scenario, args.with_results.as_deref(), &args.output).map_err(BundleError::into_anyhow)?;
    for n in &packed.notes {
        eprintln!("note: {n}");
    }
    for w in &packed.warnings {
        eprintln!("warning: {w}");
    }
    let m = &packed.manifest;
    println!("{}: {} files, {} bytes of contents", args.output.display(), m.files.len() + 1, m.total_bytes());
    for f in &m.files {
        println!("  {}  {:>10}  {}", &f.sha256[..16], f.size, f.path);
    }
    Ok(exit::SUCCESS)
}

/// A bundle named on the command line that is not there is a usage error, not an I/O failure.
fn require_file(bundle: &Path) -> anyhow::Result<()> {
    if !bundle.is_file() {
        return Err(InputError::anyhow(format!("{}: no such bundle file", bundle.display())));
    }
    Ok(())
}

/// `fsbench bundle verify`.
pub fn verify(args: &BundleVerifyArgs) -> anyhow::Result<i32> {
    require_file(&args.bundle)?;
    let ob = open_bundle(&args.bundle, None).map_err(BundleError::into_anyhow)?;
    let origin = format!("{}:{SCENARIO_FILE}", args.bundle.display());
    let s = ob.scenario(&origin, &[]).map_err(BundleError::into_anyhow)?;
    let pf = preflight(&ob, &s);
    if args.json {
        print!("{}", super::output::to_json(&super::output::BundleVerifyJson::of(&args.bundle, &ob, &s, &pf)));
    } else {
        print!("{}", crate::bundle::render::verify_text(&args.bundle, &ob, &s, &pf));
    }
    refuse_if_any(&args.bundle, &pf)?;
    Ok(exit::SUCCESS)
}

/// A bundle with anything refused is bad input (exit 2), said on stderr line by line.
fn refuse_if_any(bundle: &Path, pf: &Preflight) -> anyhow::Result<()> {
    if pf.refused.is_empty() {
        return Ok(());
    }
    Err(InputError::anyhow(format!("{}: the bundle cannot run here:\n  {}", bundle.display(), pf.refused.join("\n  "))))
}

/// The bundle's scenario as it will run (with `--set`), after everything `verify` checks
/// and the `--allow-*` flags: refused (exit 2) unless all it asks for is allowed.
fn allowed_scenario(
    args: &BundleRunArgs,
    ob: &crate::bundle::OpenBundle,
) -> anyhow::Result<(crate::scenario::Scenario, Preflight)> {
    let origin = format!("{}:{SCENARIO_FILE}", args.bundle.display());
    let overrides = args.scenario_options.overrides()?;
    let scenario = ob.scenario(&origin, &overrides).map_err(BundleError::into_anyhow)?;
    // Everything verify checks, checked again on the scenario as it will run (with --set).
    let pf = preflight(ob, &scenario);
    refuse_if_any(&args.bundle, &pf)?;
    let allowed = Allowed {
        exec: args.allow_exec,
        device: args.allow_device.as_deref(),
        kernels: args.allow_kernels,
        sysctl: args.allow_sysctl,
        size: args.allow_size,
    };
    check_allowed(&scenario, &overrides, allowed).map_err(BundleError::into_anyhow)?;
    // After the allow-list: fio only parses the job here, it runs nothing.
    crate::workload::fio::parse_only(&scenario)?;
    if !scenario.kernels.is_empty() && args.options.label.is_some() {
        return Err(InputError::anyhow(
            "--label names a host run; under [[kernels]] each run is labelled with its kernel's label",
        ));
    }
    if scenario.compare.as_ref().is_some_and(|c| c.arms == crate::scenario::KERNEL_ARMS) {
        return Err(InputError::anyhow(
            "the bundle's [compare] pairs kernels (arms = \"kernel\"), which `bundle run` does not do yet: \
             run its scenario with `fsbench run SCENARIO --kernel A=… --kernel B=… --paired`",
        ));
    }
    Ok((scenario, pf))
}

/// `fsbench bundle run`: every check first, then the bundle's scenario through the ordinary runner.
pub fn run(args: &BundleRunArgs) -> anyhow::Result<i32> {
    crate::signals::install();
    args.options.check()?;
    require_file(&args.bundle)?;
    // Unpacked in the work directory when one is named (checked ours), never in /tmp behind its back.
    let under = match &args.options.workdir {
        Some(w) => Some(crate::provision::workroot::prepare_work_root(w)?),
        None => None,
    };
    let ob = open_bundle(&args.bundle, under.as_deref()).map_err(BundleError::into_anyhow)?;
    let (scenario, pf) = allowed_scenario(args, &ob)?;
    let plan = crate::plan::plan_for(&scenario, &args.scenario_options.only)?;
    // Before anything is allocated (the import included): the cells that will run, not the whole matrix.
    let need = crate::bundle::budget::need(&scenario, &plan.cells, pf.memory.fixture);
    check_memory(&need, args.allow_size).map_err(BundleError::into_anyhow)?;
    // The count enforced: a fio cell runs in a memory cgroup of its counted size.
    let scenario = crate::bundle::budget::with_fio_memory_limit(scenario, &need);
    if let Some(dest) = import_results(&ob, &args.bundle, &args.options.out).map_err(BundleError::into_anyhow)? {
        eprintln!("fsbench: the bundle's results are in {} (for fsbench compare)", dest.display());
    }
    if !args.options.quiet {
        eprintln!("fsbench: running bundle {} from {}", args.bundle.display(), ob.dir.path().display());
    }
    if !scenario.kernels.is_empty() {
        // Allowed above: the same guests `fsbench run` boots for [[kernels]].
        let run = super::measure::KernelRun {
            scenario: &scenario,
            kernels: &scenario.kernels,
            only: &args.scenario_options.only,
            options: &args.options,
            allow_device: args.allow_device.is_some(),
        };
        let code = super::measure::run_under_kernels(&run, crate::runner::CellOrder::Plan)?;
        drop(ob);
        return Ok(code);
    }
    // `ob` (the private directory holding the bundle's archive) lives until the run is over.
    let outcome = crate::runner::run(RunRequest {
        scenario: &scenario,
        cells: plan.cells,
        target: RunTarget::New {
            out: args.options.out.clone(),
            label: args.options.label.clone(),
            shard: None,
            tags: Default::default(),
        },
        workroot: args.options.workroot(),
        allow_device: args.allow_device.clone(),
        quiet: args.options.quiet,
        // The bundle's own archive is as untrusted as the bundle.
        untrusted_archives: true,
        environment: Some(super::measure::preflight()),
        order: crate::runner::CellOrder::Plan,
    })?;
    drop(ob);
    Ok(super::measure::finish_run(&outcome, &args.options))
}
