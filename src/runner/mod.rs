//! Drives one run: for each cell, check, provision, run the workload, store the result.
//!
//! The runner owns no measurement and no report: it moves plain data from one stage to
//! the next and makes sure that whatever happens to a cell (skip, failure, Ctrl-C) its
//! result file says so and its filesystems are gone. What it writes itself is live word
//! of a run in progress, on stderr only: the progress bar or one line per cell
//! ([`progress`]), one line per finished pair group, and notes (resuming, cleaning up, an
//! archive being prepared). Results go to the store; tables, verdicts and every stdout
//! line are the command layer's and the renderers'.
//!
//! Where to read on: [`run`] is the pipeline; [`workdir`] opens and closes a run's
//! directories, [`rounds`] plans and runs the rounds over the cells, [`cell`] measures one
//! cell behind the [`cell::CellExecutor`] seam (its workload run through [`crate::workload::kind`]), [`archive`] stages the scenario's
//! archive, [`resume`] reopens an interrupted run and [`progress`] shows how far it got.
//! [`pairs`] runs one pair group of a `[compare]` scenario and [`paired_run`] all of a
//! run's groups, storing each member as a round of its cell; [`kernel_arms`] is a paired
//! run whose arms are kernels, its members measured by the caller's executor.

mod archive;
mod cell;
mod kernel_arms;
mod paired_run;
#[cfg(test)]
mod paired_steps_tests;
pub mod pairs;
mod profiled;
mod progress;
mod resume;
mod rounds;
#[cfg(test)]
mod tests;
mod workdir;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::model::CellResult;
use crate::plan::Cell;
use crate::results::RunWriter;
use crate::scenario::{Backing, Scenario};

pub use cell::CellExecutor;
pub use kernel_arms::{KernelPairedRequest, kernel_compare, run_kernel_paired};
pub use progress::Phase;
pub use resume::{check_resumable, open_resumed};
pub use rounds::{CellOrder, order_cells};

/// True once SIGINT or SIGTERM has been received.
pub fn interrupted() -> bool {
    crate::signals::interrupted()
}

/// Everything the cells of one run share.
struct RunContext<'a> {
    scenario: &'a Scenario,
    /// The backing with a private `dir` resolved to a directory of this run.
    backing: Backing,
    workdir: PathBuf,
    allow_device: Option<&'a Path>,
    exe: PathBuf,
    /// The archive for untar steps, resolved (generated or found) once per run.
    archive: Option<PathBuf>,
    /// Real archives came with an untrusted scenario (a bundle).
    untrusted_archives: bool,
    /// The profiler and the cells already profiled (`[workload] profile`).
    profiling: profiled::ProfileState,
    /// The cells measured now are members of pairs ([`CellExecutor::pair_members`]).
    pair_members: bool,
}

impl<'a> RunContext<'a> {
    /// What the cells of a run in `workdir` share; the archive is resolved by the first cell that needs it.
    fn new(
        scenario: &'a Scenario,
        workdir: &Path,
        allow_device: Option<&'a Path>,
        untrusted_archives: bool,
    ) -> anyhow::Result<RunContext<'a>> {
        Ok(RunContext {
            scenario,
            backing: crate::provision::workroot::resolve_backing(&scenario.backing, &workdir.join("dir")),
            workdir: workdir.to_path_buf(),
            allow_device,
            exe: std::env::current_exe().context("cannot find the fsbench executable for worker processes")?,
            archive: None,
            untrusted_archives,
            profiling: Default::default(),
            pair_members: false,
        })
    }
}

/// Where the cells' results go: a new run directory, or an interrupted run being finished.
pub enum RunTarget {
    /// A new run directory under `out` (`<out>/<scenario>/<run-id>/`).
    New {
        /// The results root.
        out: PathBuf,
        /// The run's label (`BASE`, `V3`), already checked against the label rule.
        label: Option<String>,
        /// The shard this run is, when the matrix is split.
        shard: Option<crate::results::RunShard>,
        /// `--meta KEY=VALUE` pairs, already validated; recorded in `run.json`.
        tags: crate::model::run_tags::RunTags,
    },
    /// An interrupted run reopened by [`open_resumed`].
    Resumed(Box<Resumed>),
}

/// An interrupted run, reopened: its writer and the cells it already stored.
pub struct Resumed {
    /// Writes the remaining cells into the existing run directory.
    pub writer: RunWriter,
    /// Cells already stored (and not failed), by id; with several rounds, some may have
    /// only their first rounds.
    pub stored: BTreeMap<String, CellResult>,
}

/// One run, as plain values: the loaded scenario, the cells to run and where things go.
pub struct RunRequest<'a> {
    /// The scenario, loaded once by the caller.
    pub scenario: &'a Scenario,
    /// The cells to run (already filtered by `--only` and the shard), in order.
    pub cells: Vec<Cell>,
    /// Where results go.
    pub target: RunTarget,
    /// The work root for mounts (`/tmp/fsbench` by default); checked and cleaned here.
    pub workroot: PathBuf,
    /// The only block device that may be formatted.
    pub allow_device: Option<PathBuf>,
    /// No progress display.
    pub quiet: bool,
    /// Real archives came with an untrusted scenario (a bundle): unpack them as untrusted input.
    pub untrusted_archives: bool,
    /// The environment preflight taken before the run, recorded in `run.json`.
    pub environment: Option<crate::host::environment::Environment>,
    /// The order to run the cells in.
    pub order: CellOrder,
}

/// What a run did, for the caller to report and turn into an exit code.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The run directory.
    pub dir: PathBuf,
    /// Cells measured, failed and skipped in this invocation.
    pub measured: usize,
    /// Cells that failed.
    pub failed: usize,
    /// Cells skipped (with a reason stored in their result).
    pub skipped: usize,
    /// Of `measured`, cells with no statistics (every repetition disturbed): for `--strict`
    /// and the "no cell could run" rule they count as not run.
    pub without_statistics: usize,
    /// Cells a resumed run had stored before this invocation.
    pub previously_done: usize,
    /// A signal stopped the run; `--resume` finishes it.
    pub interrupted: bool,
}

impl RunOutcome {
    /// Cells of this invocation that gave no number: skipped, or measured without
    /// statistics. `--strict` fails on any of them.
    pub fn not_run(&self) -> usize {
        self.skipped + self.without_statistics
    }
}

/// Run the cells of one request: check, provision, measure and store each, then finish run.json.
/// Signals stop it between cells (and inside a workload where it can stop); the outcome says so.
pub fn run(req: RunRequest) -> anyhow::Result<RunOutcome> {
    let scenario = req.scenario;
    workdir::refuse_unconfirmed_device(scenario, req.allow_device.as_deref())?;
    paired_run::refuse_unpairable(scenario, req.order)?;
    let workroot = workdir::prepare_workroot(&req.workroot)?;
    let cells = req.cells;
    let workdir::Opened { mut writer, mut stored, workdir } = workdir::open(req.target, scenario, &cells, &workroot)?;
    let mut ctx = RunContext::new(scenario, &workdir, req.allow_device.as_deref(), req.untrusted_archives)?;
    ctx.profiling = profiled::ProfileState::resumed(&stored);

    let (ran, previously_done) = match &scenario.compare {
        Some(spec) => {
            // A resumed run keeps the seed its run.json recorded (drawn when it started).
            let seed = spec.seed.or(writer.pair_seed()).unwrap_or_else(paired_run::draw_seed);
            writer.record(req.environment, None).context("cannot record the environment in run.json")?;
            if writer.pair_seed() != Some(seed) {
                writer.record_pair_seed(seed).context("cannot record the pair seed in run.json")?;
            }
            if !stored.is_empty() {
                eprintln!(
                    "fsbench: resuming {}: {} of {} cells stored; pair groups go on where they stopped",
                    writer.dir().display(),
                    stored.len(),
                    cells.len()
                );
            }
            let arms = paired_run::arm_values(scenario, spec);
            let run = paired_run::PairedRun { scenario, spec, seed, quiet: req.quiet, arms };
            let mut store = |r: &CellResult| writer.write_cell(r).map(drop).context("cannot store a cell result");
            let paired = paired_run::run_paired(&run, &cells, &mut stored, &mut ctx, &mut store, &interrupted)?;
            (paired.ran, paired.previously_done)
        }
        None => {
            let plan = rounds::RoundPlan::new(rounds::scenario_rounds(scenario), &cells, &stored, req.order);
            if req.environment.is_some() || plan.order.is_some() {
                writer
                    .record(req.environment, plan.order.clone())
                    .context("cannot record the environment in run.json")?;
            }
            if !stored.is_empty() {
                eprintln!(
                    "fsbench: resuming {}: {} of {} cells done, {} to run",
                    writer.dir().display(),
                    plan.previously_done,
                    cells.len(),
                    cells.len() - plan.previously_done
                );
            }
            let progress = progress::Progress::new(plan.cell_runs(), plan.rounds, req.quiet);
            let mut store = |r: &CellResult| writer.write_cell(r).map(drop).context("cannot store a cell result");
            let ran = rounds::run_rounds(&plan.runs_of, &mut stored, &mut ctx, &mut store, &progress, &interrupted)?;
            progress.done();
            (ran, plan.previously_done)
        }
    };
    let tally = rounds::Tally::of(&ran, &stored);

    let _finishing = crate::signals::enter(crate::signals::Activity::Other);
    let was_interrupted = interrupted();
    let dir = writer.dir().to_path_buf();
    writer.finish(was_interrupted).context("cannot finish run.json")?;
    workdir::close(&workdir);
    Ok(RunOutcome {
        dir,
        measured: tally.measured,
        failed: tally.failed,
        skipped: tally.skipped,
        without_statistics: tally.without_statistics,
        previously_done,
        interrupted: was_interrupted,
    })
}
