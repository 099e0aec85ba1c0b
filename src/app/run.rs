//! `fsbench run`: one scenario, on this host or under other kernels in qemu.

use std::path::PathBuf;

use clap::Args;

use super::measure::KernelRun;
use super::run_options::RunOptions;
use super::scenario_options::ScenarioOptions;
use crate::exit::{self, InputError};
use crate::plan;
use crate::qemu;
use crate::runner::{self, RunRequest, RunTarget};
use crate::scenario::{KernelSpec, Scenario};

/// `fsbench run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Scenario file; the embedded quickstart scenario when omitted.
    pub scenario: Option<PathBuf>,
    #[command(flatten)]
    pub scenario_options: ScenarioOptions,
    #[command(flatten)]
    pub options: RunOptions,
    /// Record KEY=VALUE in run.json (a commit, a branch, a lab); may be repeated. Keys are
    /// 1 to 64 of A-Z a-z 0-9 _ . -, values up to 256 printable characters.
    /// `fsbench history --order-by KEY` orders runs by one.
    #[arg(long = "meta", value_name = "KEY=VALUE")]
    pub meta: Vec<String>,
    /// Finish an interrupted run: run only the cells missing from this run directory.
    #[arg(long, value_name = "RUN_DIR", conflicts_with = "scenario")]
    pub resume: Option<PathBuf>,
    /// Allow formatting this block device (never one that is mounted). DESTROYS ITS DATA.
    #[arg(long, value_name = "DEVICE")]
    pub allow_device: Option<PathBuf>,
    /// Run the cells under another kernel in qemu: `LABEL=PATH[,modules=DIR]` (PATH a kernel image).
    /// May be repeated; each cell runs once per kernel.
    #[arg(long = "kernel", value_name = "LABEL=PATH[,modules=DIR]")]
    pub kernels: Vec<String>,
    /// With two or more kernels (`--kernel`, `[[kernels]]`): one paired run whose arms are the
    /// kernels, the first the baseline; every member is one cell in a freshly booted guest.
    #[arg(long)]
    pub paired: bool,
    /// Run only the K-th of N disjoint parts of the matrix (`--shard 3/8`, K from 1).
    /// Without it, the shard comes from Slurm array or Kubernetes indexed Job variables when set.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// Number of shards when the index comes from `JOB_COMPLETION_INDEX` (Kubernetes).
    #[arg(long, value_name = "N")]
    pub shard_count: Option<u32>,
    /// With --resume: let a run recorded on another host run its scenario's `exec` steps here.
    #[arg(long, requires = "resume")]
    pub allow_exec: bool,
    /// Cell order: `plan` (as expanded) or `random` (seeded; recorded in run.json), so drift
    /// over a long run does not line up with one axis.
    #[arg(long, value_enum, default_value_t = OrderArg::Plan)]
    pub order: OrderArg,
    /// Profile every cell: one more repetition (iteration) under `perf record` that never
    /// counts toward the statistics, its workers' stacks stored beside the result
    /// (`--set workload.profile=cpu`).
    #[arg(long, conflicts_with = "resume")]
    pub profile: bool,
    /// Seed of `--order random` (default: from the clock, recorded in run.json).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
}

/// `--order`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OrderArg {
    /// The plan's order.
    Plan,
    /// A seeded random permutation.
    Random,
}

fn cell_order(args: &RunArgs) -> anyhow::Result<runner::CellOrder> {
    match (args.order, args.seed) {
        (OrderArg::Plan, Some(_)) => Err(InputError::anyhow("--seed only applies to --order random")),
        (OrderArg::Plan, None) => Ok(runner::CellOrder::Plan),
        (OrderArg::Random, seed) => {
            let seed = seed.unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(1)
            });
            Ok(runner::CellOrder::Random { seed })
        }
    }
}

/// `fsbench run`.
pub fn run(args: &RunArgs) -> anyhow::Result<i32> {
    crate::signals::install();
    args.options.check()?;
    let tags = crate::model::run_tags::parse_tags(&args.meta).map_err(|e| InputError::anyhow(format!("--meta {e}")))?;
    if let Some(dir) = &args.resume {
        return resume(args, dir);
    }
    let mut overrides = args.scenario_options.overrides()?;
    if args.profile {
        overrides.push("workload.profile=\"cpu\"".into());
    }
    let mut scenario = crate::scenario::load_named(args.scenario.as_deref(), &overrides)?;
    // fio judges a fio job before anything is provisioned (exit 2 at the scenario line).
    crate::workload::fio::parse_only(&scenario)?;
    let mut kernels = kernels_to_run(args, &mut scenario)?;
    let only = super::measure::select_kernels(&args.scenario_options.only, &mut kernels)?;
    if args.paired || scenario.compare.as_ref().is_some_and(|c| c.arms == crate::scenario::KERNEL_ARMS) {
        if !args.paired && !kernels.is_empty() {
            return Err(InputError::anyhow(
                "[compare] arms = \"kernel\" pairs the kernels: add --paired (or run without [compare] for a run per kernel)",
            ));
        }
        if !tags.is_empty() {
            return Err(InputError::anyhow("--meta is not recorded under --paired kernels yet: run without it"));
        }
        return run_kernel_pairs(args, &scenario, &kernels, &only);
    }
    if !kernels.is_empty() {
        if !tags.is_empty() {
            return Err(InputError::anyhow("--meta is not recorded under --kernel/[[kernels]] yet: run without it"));
        }
        return run_in_kernels(args, &scenario, &kernels, &only);
    }
    let order = cell_order(args)?;
    let plan = plan::plan_for(&scenario, &args.scenario_options.only)?;
    let (cells, shard_meta) = shard_cells(args, &scenario, plan.cells)?;
    let fixture = crate::bundle::budget::generated_fixture_bytes(&scenario).unwrap_or(0);
    if let Some(w) = crate::bundle::budget::own_run_warning(&crate::bundle::budget::need(&scenario, &cells, fixture)) {
        eprintln!("fsbench: warning: {w}");
    }
    let outcome = runner::run(RunRequest {
        scenario: &scenario,
        cells,
        target: RunTarget::New {
            out: args.options.out.clone(),
            label: args.options.label.clone(),
            shard: shard_meta,
            tags,
        },
        workroot: args.options.workroot(),
        allow_device: args.allow_device.clone(),
        quiet: args.options.quiet,
        untrusted_archives: false,
        environment: Some(super::measure::preflight()),
        order,
    })?;
    Ok(super::measure::finish_run(&outcome, &args.options))
}

/// The kernels whose guests run the cells: `--kernel`, else the scenario's `[[kernels]]`;
/// none inside a guest, where the scenario's kernels are where we already are (and a
/// kernel-paired run's guest measures one member: its scenario loses the pairing).
fn kernels_to_run(args: &RunArgs, scenario: &mut Scenario) -> anyhow::Result<Vec<KernelSpec>> {
    let in_guest = std::env::var_os(crate::qemu::guest::IN_GUEST_ENV).is_some();
    if in_guest && scenario.compare.as_ref().is_some_and(|c| c.arms == crate::scenario::KERNEL_ARMS) {
        scenario.compare = None;
    }
    Ok(if !args.kernels.is_empty() {
        args.kernels
            .iter()
            .map(|a| qemu::parse_kernel_arg(a).map_err(|e| InputError::anyhow(e.to_string())))
            .collect::<anyhow::Result<_>>()?
    } else if in_guest {
        Vec::new()
    } else {
        scenario.kernels.clone()
    })
}

/// This run's part of the plan's cells under `--shard` (or a job engine's variables), and
/// the shard recorded in run.json; all of them without one.
fn shard_cells(
    args: &RunArgs,
    scenario: &Scenario,
    cells: Vec<plan::Cell>,
) -> anyhow::Result<(Vec<plan::Cell>, Option<crate::results::RunShard>)> {
    let shard = crate::shard::resolve_shard(args.shard.as_deref(), args.shard_count, &|k| std::env::var(k).ok())
        .map_err(|e| InputError::anyhow(e.to_string()))?;
    Ok(match shard {
        Some(sh) => {
            let (cells, meta) = crate::shard::shard_plan(scenario, cells, sh, &|k| std::env::var(k).ok());
            eprintln!("fsbench: shard {sh} (run key {}): {} of {} cells", meta.key, cells.len(), meta.total_cells);
            (cells, Some(meta))
        }
        None => (cells, None),
    })
}

/// `--resume`: finish an interrupted run as it was planned.
fn resume(args: &RunArgs, dir: &std::path::Path) -> anyhow::Result<i32> {
    if !args.kernels.is_empty() || args.paired {
        return Err(InputError::anyhow(
            "--kernel and --paired cannot be combined with --resume: run the kernels again",
        ));
    }
    // A resumed run keeps the shard it was planned with (its run.json lists its cells).
    if args.shard.is_some() || args.shard_count.is_some() {
        return Err(InputError::anyhow(
            "--resume continues a run as it was planned: --shard and --shard-count cannot change it",
        ));
    }
    // Opened once: every check, the load and the writes are on that directory.
    let run = runner::check_resumable(dir)?;
    // Nothing to do: leave the run (and its finish time) exactly as it was.
    if let Some(stored) = run.complete() {
        eprintln!("fsbench: {} is complete: all {} are stored", dir.display(), crate::text::cell_count(stored));
        return Ok(exit::SUCCESS);
    }
    if !args.scenario_options.set.is_empty()
        || args.scenario_options.archive.is_some()
        || !args.scenario_options.only.is_empty()
        || args.options.label.is_some()
        || !args.meta.is_empty()
    {
        return Err(InputError::anyhow(
            "--resume continues a run as it was planned: --set, --archive, --only, --label and --meta cannot change it",
        ));
    }
    let (scenario, cells, resumed) = runner::open_resumed(run, args.allow_exec)?;
    let outcome = runner::run(RunRequest {
        scenario: &scenario,
        cells,
        target: RunTarget::Resumed(Box::new(resumed)),
        workroot: args.options.workroot(),
        allow_device: args.allow_device.clone(),
        quiet: args.options.quiet,
        untrusted_archives: false,
        // The run keeps the environment it started in; the rest runs in plan order.
        environment: None,
        order: runner::CellOrder::Plan,
    })?;
    Ok(super::measure::finish_run(&outcome, &args.options))
}

/// Every cell under each kernel in qemu; one ordinary run directory per kernel.
fn run_in_kernels(args: &RunArgs, scenario: &Scenario, kernels: &[KernelSpec], only: &[String]) -> anyhow::Result<i32> {
    if args.shard.is_some() || args.shard_count.is_some() {
        return Err(InputError::anyhow(
            "--shard cannot be combined with --kernel/[[kernels]] yet: each kernel boots once and runs all its cells",
        ));
    }
    if args.options.label.is_some() {
        return Err(InputError::anyhow(
            "--label names a host run; under --kernel/[[kernels]] each run is labelled with its kernel's label",
        ));
    }
    let run = KernelRun { scenario, kernels, only, options: &args.options, allow_device: args.allow_device.is_some() };
    super::measure::run_under_kernels(&run, cell_order(args)?)
}

/// `--paired` with kernels: one paired run whose arms are the kernels.
fn run_kernel_pairs(
    args: &RunArgs,
    scenario: &Scenario,
    kernels: &[KernelSpec],
    only: &[String],
) -> anyhow::Result<i32> {
    if args.shard.is_some() || args.shard_count.is_some() {
        return Err(InputError::anyhow("--shard cannot be combined with --paired kernels: the pairs run in one place"));
    }
    if args.options.label.is_some() {
        return Err(InputError::anyhow(
            "--label names a host run; a kernel-paired run's arms are named by the kernels' labels",
        ));
    }
    if args.order != OrderArg::Plan || args.seed.is_some() {
        return Err(InputError::anyhow(
            "--order/--seed do not apply to a paired run: the pair schedule orders the kernels, from `compare.seed`",
        ));
    }
    let run = KernelRun { scenario, kernels, only, options: &args.options, allow_device: args.allow_device.is_some() };
    super::measure::run_kernel_pairs(&run)
}
