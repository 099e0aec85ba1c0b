//! `fsbench calibrate`: A/A runs of one scenario on this host, the variance at each level
//! stored as `<results>/<scenario>/calibration.json`, and per cell the rounds × repetitions
//! that decide the threshold within a time budget.

use std::path::PathBuf;

use clap::Args;

use super::scenario_options::ScenarioOptions;
use crate::calibration::{self, budget::plan_cell};
use crate::exit::{self, InputError};
use crate::runner::{self, RunRequest, RunTarget};

/// `fsbench calibrate`.
#[derive(Debug, Clone, Args)]
pub struct CalibrateArgs {
    /// Scenario file.
    pub scenario: PathBuf,
    #[command(flatten)]
    pub scenario_options: ScenarioOptions,
    /// A/A runs of the same build (at least 2; each lat_fs run makes at least 2 rounds).
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub runs: u32,
    /// Time one run of the scenario may take, for the rounds × repetitions advice (`10m`, `90s`).
    #[arg(long, default_value = "10m", value_name = "DURATION")]
    pub budget: String,
    /// Results root: the runs go to `<results>/<scenario>/<run-id>/` (tagged `calibration=...`),
    /// the calibration to `<results>/<scenario>/calibration.json`.
    #[arg(long, default_value = "results", value_name = "DIR")]
    pub results: PathBuf,
    /// Where fsbench mounts its tmpfs and filesystems (as `run --workdir`).
    #[arg(long, value_name = "DIR")]
    pub workdir: Option<PathBuf>,
    /// No progress display.
    #[arg(long, short)]
    pub quiet: bool,
}

/// `fsbench calibrate`: exit 0 when the calibration was stored, 1 when the runs gave
/// nothing to calibrate, 2 on bad input.
pub fn calibrate(args: &CalibrateArgs) -> anyhow::Result<i32> {
    crate::signals::install();
    super::checks::check_output_dir("--results", &args.results)?;
    if args.runs < 2 {
        return Err(InputError::anyhow("--runs: at least 2 runs are needed to see the spread between runs"));
    }
    let budget = crate::scenario::units::parse_duration(&args.budget)
        .map_err(|e| InputError::anyhow(format!("--budget: {e}")))?
        .as_secs_f64();
    let mut overrides = args.scenario_options.overrides()?;
    let first = crate::scenario::load_named(Some(&args.scenario), &overrides)?;
    // Every level must show: a lat_fs run with one round has no round level.
    if crate::workload::kind::of(&first.workload).rounds().is_some_and(|n| n < 2) {
        overrides.push("workload.rounds=2".into());
    }
    let scenario = crate::scenario::load_named(Some(&args.scenario), &overrides)?;
    if scenario.compare.is_some() {
        // A paired run decides within itself; the spread between runs is what unpaired gates lack.
        return Err(crate::exit::InputError::anyhow(format!(
            "{}: a paired scenario (`[compare] arms`) needs no calibration: `fsbench gate RUN` judges its pairs \
             within the run. Calibrate the scenario without `[compare]` for unpaired gates.",
            args.scenario.display()
        )));
    }
    let warmup = crate::workload::kind::of(&scenario.workload).warmup().as_secs_f64();
    let plan = crate::plan::plan_for(&scenario, &args.scenario_options.only)?;
    let date = crate::results::now_rfc3339();
    let mut runs = Vec::new();
    for i in 1..=args.runs {
        let tag = format!("{}-{i}of{}", date.replace(':', ""), args.runs);
        let tags = crate::model::run_tags::parse_tags(&[format!("calibration={tag}")])
            .map_err(|e| InputError::anyhow(format!("--meta {e}")))?;
        eprintln!("fsbench: calibrate: run {i} of {}", args.runs);
        let outcome = runner::run(RunRequest {
            scenario: &scenario,
            cells: plan.cells.clone(),
            target: RunTarget::New { out: args.results.clone(), label: Some("calibration".into()), shard: None, tags },
            workroot: args.workdir.clone().unwrap_or_else(crate::provision::workroot::default_workdir),
            allow_device: None,
            quiet: args.quiet,
            untrusted_archives: false,
            environment: Some(super::measure::preflight()),
            order: runner::CellOrder::Plan,
        })?;
        if outcome.interrupted {
            eprintln!("fsbench: calibrate: interrupted; nothing stored");
            return Ok(exit::INTERRUPTED);
        }
        runs.push(crate::results::load_run(&outcome.dir)?);
    }
    let cal = calibration::estimate::estimate(&runs, warmup, date);
    if cal.cells.is_empty() {
        eprintln!(
            "fsbench: calibrate: no cell has undisturbed repetitions in two runs: nothing to calibrate (on a busy \
             machine every repetition may be disturbed: see the runs' notes; a quieter machine, or \
             `--set workload.disturbance=off` to measure through it)"
        );
        return Ok(exit::FAILURE);
    }
    let path = calibration::store::write(&args.results, &cal)?;
    print!("{}", render(&cal, &scenario.gate, budget));
    eprintln!("fsbench: calibration of {} stored in {}", crate::text::cell_count(cal.cells.len()), path.display());
    Ok(exit::SUCCESS)
}

/// Per cell: the standard deviation at each level and what decides the threshold in the budget.
fn render(cal: &calibration::Calibration, gate: &crate::scenario::GateSpec, budget: f64) -> String {
    let share = budget / cal.cells.len() as f64;
    let sd = |v: f64| format!("{:.1}%", v.sqrt().exp_m1() * 100.0);
    let mut t = comfy_table::Table::new();
    t.load_style(comfy_table::presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(comfy_table::ContentArrangement::Dynamic)
        .set_width(super::print::output_width())
        .set_header(["cell", "sd rep", "sd round", "sd run", "threshold", "rounds × reps", "time/run", "±95%"]);
    // Names are read whole; the numbers give way first.
    if let Some(col) = t.column_mut(0) {
        col.set_constraint(comfy_table::ColumnConstraint::ContentWidth);
    }
    for c in &cal.cells {
        let threshold = gate.threshold_for(&c.key);
        let p = plan_cell(c, threshold, share);
        let plan = match (p.rounds, p.repetitions) {
            (Some(r), Some(k)) => format!("{r} × {k}"),
            (None, Some(k)) => format!("1 × {k}"),
            _ => "none decides".into(),
        };
        let time = if p.seconds.is_finite() {
            format!("{:.0} s{}", p.seconds, if p.fits { "" } else { " (over)" })
        } else {
            "-".into()
        };
        t.add_row([
            c.name.clone(),
            sd(c.levels.repetition.variance),
            if c.levels.round.df == 0 { "-".into() } else { sd(c.levels.round.variance) },
            sd(c.levels.run.variance),
            format!("{:.1}%", threshold * 100.0),
            plan,
            time,
            format!("{:.1}%", p.half_width * 100.0),
        ]);
    }
    format!(
        "{t}\n{}\n",
        crate::text::wrap(
            &format!(
                "sd: standard deviation at each level (log scale, as a percentage); rounds × reps: what two runs \
                 need for a 95% interval narrower than the threshold (Kalibera & Jones: reps per round \
                 sqrt(c_round·σ²_rep / (c_rep·σ²_round))), within {:.0} s per cell of the {:.0} s budget (`over`: beyond it); steps \
                 run one round, so their iterations per run are shown",
                share, budget
            ),
            super::print::output_width() as usize,
            ""
        )
    )
}
