//! `fsbench bisect`: which kernel of an ordered list brought a regression, each step a
//! kernel-paired run in qemu (docs/bisect.md).

use std::path::PathBuf;

use clap::Args;

use super::scenario_options::ScenarioOptions;
use crate::bisect::{self, drive, estimate, setup};
use crate::exit::{self, InputError};

/// `fsbench bisect`.
#[derive(Debug, Clone, Args)]
pub struct BisectArgs {
    /// Scenario file (lat_fs or fio): the cell whose paired verdict judges each step.
    pub scenario: PathBuf,
    #[command(flatten)]
    pub scenario_options: ScenarioOptions,
    /// A candidate kernel, in order: the good one first, the bad one last. Repeat it; the
    /// syntax of `run --kernel`.
    #[arg(long = "kernel", value_name = "LABEL=PATH[,modules=DIR][,cmdline=ARGS]")]
    pub kernels: Vec<String>,
    /// A file listing the candidates in order, one `LABEL=PATH[,…]` a line (`#` comments;
    /// paths relative to the file).
    #[arg(long = "kernels", value_name = "FILE", conflicts_with = "kernels")]
    pub kernels_file: Option<PathBuf>,
    /// The cell judged (its id without the kernel, as `plan` lists it), when the scenario
    /// has several; several cells without it (or `--all-cells`) are refused.
    #[arg(long, value_name = "ID")]
    pub cell: Option<String>,
    /// Judge every cell of the scenario (after `--only`): a step is bad when any cell's
    /// Holm-adjusted paired verdict is a regression, good when every cell is decided not
    /// regressed, else unknown.
    #[arg(long, conflicts_with = "cell")]
    pub all_cells: bool,
    /// Fewest pairs a step takes (default 6; the scenario's `[compare]` is replaced).
    #[arg(long, value_name = "N")]
    pub min_pairs: Option<u32>,
    /// Most pairs a step takes: its budget before it is `unknown` (default 192).
    #[arg(long, value_name = "N")]
    pub max_pairs: Option<u32>,
    /// Results root: the bisection goes to `<out>/<scenario>/bisect-<time>/`.
    #[arg(long, default_value = "results", value_name = "DIR")]
    pub out: PathBuf,
    /// Bisect the commits of a git repository instead of a list of images: GOOD and the
    /// first-parent commits of `--range GOOD..BAD`, each built by `--build` when the search
    /// first needs it (docs/bisect.md).
    #[arg(
        long = "git",
        value_name = "TREE",
        conflicts_with_all = ["kernels", "kernels_file"],
        requires_all = ["range", "build"]
    )]
    pub git: Option<PathBuf>,
    /// The commits bisected with `--git`: `GOOD..BAD`, GOOD an ancestor of BAD.
    #[arg(long, value_name = "GOOD..BAD", requires = "git")]
    pub range: Option<String>,
    /// The command building a commit with `--git`, run with `sh -c` in an export of the
    /// commit; it must leave `$FSBENCH_OUT/vmlinuz` (and may leave `$FSBENCH_OUT/modules/`).
    #[arg(long, value_name = "CMD", requires = "git")]
    pub build: Option<String>,
    /// A file the build reads (a kernel `.config`): given as `$FSBENCH_CONFIG`, its content
    /// part of the build cache's key.
    #[arg(long, value_name = "FILE", requires = "git")]
    pub config: Option<PathBuf>,
    /// The build cache (default: `$XDG_CACHE_HOME/fsbench/builds`).
    #[arg(long, value_name = "DIR", requires = "git")]
    pub build_cache: Option<PathBuf>,
    /// Go on with an interrupted bisection (its directory); the candidates come from its log.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["kernels", "kernels_file", "git"])]
    pub resume: Option<PathBuf>,
    /// Only print the estimate (steps, boots, time) and exit.
    #[arg(long)]
    pub estimate: bool,
    /// Where qemu's scratch lives (default: `/tmp/fsbench`).
    #[arg(long, value_name = "DIR")]
    pub workdir: Option<PathBuf>,
    /// No progress display.
    #[arg(long, short)]
    pub quiet: bool,
    /// Print the bisect log as JSON (`schemas/bisect.schema.json`) at the end.
    #[arg(long)]
    pub json: bool,
}

/// `fsbench bisect`.
pub fn bisect(args: &BisectArgs) -> anyhow::Result<i32> {
    crate::signals::install();
    super::checks::check_output_dir("--out", &args.out)?;
    let resumed = args.resume.as_deref().map(drive::open_dir).transpose()?;
    let mut builds = git_builds(args, resumed.as_ref().map(|r| &r.1))?;
    let kernels = match &builds {
        Some(b) => b.kernels.clone(),
        None => candidates(args, resumed.as_ref().map(|r| &r.1))?,
    };
    // Every step pairs with one seed: the resumed log's, else one drawn now and logged.
    let seed = resumed.as_ref().map_or_else(draw_seed, |(_, log)| log.seed);
    let mut set = args.scenario_options.overrides()?;
    set.extend(pair_overrides(args, resumed.as_ref().map(|r| &r.1), seed));
    let s = crate::scenario::load_named(Some(&args.scenario), &set)?;
    let labels: Vec<String> = kernels.iter().map(|k| k.label.clone()).collect();
    let spec = crate::runner::kernel_compare(&s, &labels)?;
    let plan = crate::plan::plan_for(&s, &args.scenario_options.only)?;
    let cell = setup::pick_cell(plan.cells, args.cell.as_deref(), args.all_cells)?;
    let done = resumed.as_ref().map_or(&[][..], |(_, log)| &log.steps[..]);
    let reruns = crate::plan::pair_reruns(&s.workload);
    eprint!(
        "{}",
        estimate::render(&estimate::estimate(
            kernels.len(),
            spec.min_pairs,
            spec.max_pairs,
            reruns,
            cell.len() as u32,
            done
        ))
    );
    if let Some(b) = &builds {
        eprint!("{}", estimate::render_builds(kernels.len(), b.cached(), &b.cache.recorded_seconds()));
    }
    if args.estimate {
        return Ok(exit::SUCCESS);
    }
    // A git range: qemu is checked, then the endpoints built, before the bisection's directory is made.
    if let Some(b) = builds.as_mut() {
        crate::qemu::prepare(&s, &[], false)?;
        if !b.endpoints()? {
            return Ok(exit::INTERRUPTED);
        }
    }
    let (dir, mut log) = match resumed {
        Some(resumed) => same_bisection(resumed, &s, &cell)?,
        None => {
            let mut log = setup::new_log(&s, &cell, &spec, seed, &kernels);
            if let Some(b) = &builds {
                b.annotate(&mut log);
            }
            (drive::create_dir(&args.out, &s.name)?, log)
        }
    };
    bisect_in(args, &s, &cell, &kernels, labels, dir, &mut log, builds.as_mut())
}

/// A resumed bisection, refused unless it judged the same cells of the same scenario.
fn same_bisection(
    resumed: (drive::BisectDir, bisect::log::BisectLog),
    s: &crate::scenario::Scenario,
    cells: &[crate::plan::Cell],
) -> anyhow::Result<(drive::BisectDir, bisect::log::BisectLog)> {
    let (dir, log) = resumed;
    if log.scenario != s.name || log.cell != setup::cells_name(cells) {
        return Err(InputError::anyhow(format!(
            "--resume {}: the bisection judged {} of scenario {}, not {} of {}",
            dir.path.display(),
            crate::text::escape_control(&log.cell),
            crate::text::escape_control(&log.scenario),
            setup::cells_name(cells),
            s.name
        )));
    }
    Ok((dir, log))
}

/// The builds of a git range: `--git`'s, or a resumed log's when it bisected one.
fn git_builds(
    args: &BisectArgs,
    resumed: Option<&bisect::log::BisectLog>,
) -> anyhow::Result<Option<bisect::judge_build::Builds>> {
    use bisect::judge_build::{Builds, GitArgs};
    if let Some(log) = resumed {
        return log.git.as_ref().map(|g| Builds::resume(log, g, args.quiet)).transpose();
    }
    let Some(tree) = &args.git else { return Ok(None) };
    let a = GitArgs {
        tree: tree.clone(),
        range: args.range.clone().unwrap_or_default(),
        build: args.build.clone().unwrap_or_default(),
        config: args.config.clone(),
        cache: args.build_cache.clone(),
    };
    Builds::open(&a, args.quiet).map(Some)
}

/// The candidate kernels: a resumed log's, `--kernels FILE`'s or the `--kernel`s, checked.
fn candidates(
    args: &BisectArgs,
    resumed: Option<&bisect::log::BisectLog>,
) -> anyhow::Result<Vec<crate::scenario::KernelSpec>> {
    let kernels = match (resumed, &args.kernels_file) {
        (Some(log), _) => log.candidates.iter().map(setup::spec).collect(),
        (None, Some(file)) => setup::read_list(file)?,
        (None, None) => args
            .kernels
            .iter()
            .map(|a| crate::qemu::parse_kernel_arg(a).map_err(|e| InputError::anyhow(e.to_string())))
            .collect::<anyhow::Result<Vec<_>>>()?,
    };
    setup::check_candidates(&kernels)?;
    Ok(kernels)
}

/// Run the bisection in `dir` from `log` and print its conclusion; with `builds`, each
/// step's candidates are built when first needed.
#[allow(clippy::too_many_arguments)]
fn bisect_in(
    args: &BisectArgs,
    s: &crate::scenario::Scenario,
    cell: &[crate::plan::Cell],
    kernels: &[crate::scenario::KernelSpec],
    labels: Vec<String>,
    dir: drive::BisectDir,
    log: &mut bisect::log::BisectLog,
    builds: Option<&mut bisect::judge_build::Builds>,
) -> anyhow::Result<i32> {
    // A git range's images are checked as they are built (a candidate not built yet has none).
    let qemu = crate::qemu::prepare(s, if builds.is_some() { &[] } else { kernels }, false)?;
    crate::provision::workroot::set_scratch_root(
        &args.workdir.clone().unwrap_or_else(crate::provision::workroot::default_workdir),
    );
    eprintln!("fsbench: bisection in {}", dir.path.display());
    let members = crate::qemu::member::KernelMembers::new(s, kernels, &qemu, args.quiet);
    let judge = bisect::judge_kernels::KernelJudge {
        scenario: s,
        cell,
        labels,
        members,
        dir: dir.path.clone(),
        quiet: args.quiet,
    };
    let conclusion = match builds {
        Some(builds) => {
            let mut judge = bisect::judge_build::BuildingJudge { builds, inner: judge };
            drive::run(&mut judge, log, &dir, args.quiet)?
        }
        None => drive::run(&mut { judge }, log, &dir, args.quiet)?,
    };
    if args.json {
        print!("{}", super::output::to_json(&*log));
    } else {
        print!("{}", drive::render(log));
    }
    eprintln!("fsbench: bisect log in {}", dir.path.join(bisect::log::LOG_FILE).display());
    Ok(exit_code(&conclusion))
}

/// `--set` overrides that make every step a kernel-paired run with the bisection's pair
/// bounds and seed: the resumed log's, else the options' (6..192 pairs by default). They
/// are applied to the scenario text, so each step's stored run says them too.
fn pair_overrides(args: &BisectArgs, resumed: Option<&bisect::log::BisectLog>, seed: u64) -> Vec<String> {
    let (min, max) = match resumed {
        Some(l) => (l.min_pairs, l.max_pairs),
        None => {
            (args.min_pairs.unwrap_or(bisect::DEFAULT_MIN_PAIRS), args.max_pairs.unwrap_or(bisect::DEFAULT_MAX_PAIRS))
        }
    };
    vec![
        format!("compare.arms=\"{}\"", crate::scenario::KERNEL_ARMS),
        format!("compare.pairs={{ min = {min}, max = {max} }}"),
        format!("compare.seed={seed}"),
    ]
}

/// A seed from the clock, for a new bisection (logged, so a resumed one uses it again).
fn draw_seed() -> u64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    // A TOML integer is signed: the seed is kept below 2^63.
    now.map(|d| d.as_nanos() as u64 >> 1).unwrap_or(1)
}

/// 0 when the bisection concluded (a confirmed culprit, or no regression between the
/// endpoints), 1 when it stopped without one (undecided, skipped, not confirmed), 130 on a signal.
fn exit_code(c: &bisect::search::Conclusion) -> i32 {
    use bisect::search::Conclusion;
    match c {
        Conclusion::Culprit { .. } | Conclusion::NoRegression => exit::SUCCESS,
        Conclusion::Interrupted => exit::INTERRUPTED,
        Conclusion::EndpointsUndecided | Conclusion::EndpointSkipped | Conclusion::Narrowed { .. } => exit::FAILURE,
    }
}
