//! A [`StepJudge`] whose steps are kernel-paired runs (`run --kernel A=… --kernel B=…
//! --paired`): the runner's [`run_kernel_paired`] with the two kernels as arms, every
//! member a fresh qemu guest ([`KernelMembers`]), ABBA order and the sequential stop. Each
//! step's run is stored under the bisection's directory (`<dir>/<scenario>/<run-id>/`), so
//! `report` and `gate` read it as any paired run, and the step's measure is read back from
//! it through the report's paired join.

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::cells::{CellInput, combine};
use super::search::StepJudge;
use super::step::StepMeasure;
use super::step_profile::StepProfile;
use crate::model::pairing::PairStop;
use crate::plan::Cell;
use crate::qemu::member::KernelMembers;
use crate::runner::{KernelPairedRequest, run_kernel_paired};
use crate::scenario::Scenario;

/// Every step a kernel-paired run of the judged cells.
pub struct KernelJudge<'a> {
    /// The scenario (its `[compare]` says the pair bounds; its `[gate]` the threshold).
    pub scenario: &'a Scenario,
    /// The judged cells (plan cells, without a kernel): one, or all with `--all-cells`.
    pub cell: &'a [Cell],
    /// The candidates' labels, in order.
    pub labels: Vec<String>,
    /// Boots the members (one for the whole bisection: the accelerator is probed once).
    pub members: KernelMembers<'a>,
    /// The bisection's directory: each step's run goes under it.
    pub dir: PathBuf,
    /// No progress display.
    pub quiet: bool,
}

impl StepJudge for KernelJudge<'_> {
    fn judge(&mut self, baseline: usize, candidate: usize) -> anyhow::Result<Option<StepMeasure>> {
        let labels = vec![self.labels[baseline].clone(), self.labels[candidate].clone()];
        let req = KernelPairedRequest {
            scenario: self.scenario,
            cells: self.cell,
            labels: labels.clone(),
            out: self.dir.clone(),
            quiet: self.quiet,
            environment: None,
        };
        let only_these = |m: &KernelMembers| m.recorded().into_iter().filter(|k| labels.contains(&k.label)).collect();
        self.members.start_run();
        let outcome = run_kernel_paired(req, &mut self.members, &only_these)?;
        if outcome.interrupted {
            return Ok(None);
        }
        step_of_run(&self.dir, &outcome.dir).map(Some)
    }
}

/// The measure of a step whose kernel-paired run is stored at `run` under the bisection
/// directory `dir`: [`read_step`], with the run's path relative to `dir`.
pub fn step_of_run(dir: &Path, run: &Path) -> anyhow::Result<StepMeasure> {
    let mut m = read_step(run)?;
    m.run = run.strip_prefix(dir).ok().map(|p| p.display().to_string());
    Ok(m)
}

/// The measure of a stored two-kernel paired run: its one comparison's paired change at
/// the run's level, judged at its threshold; with several cells (`--all-cells`), every
/// comparison's, Holm-adjusted over them ([`super::cells::combine`]); and what its
/// profiles say ([`StepProfile::of_run`]).
pub fn read_step(dir: &Path) -> anyhow::Result<StepMeasure> {
    let run = crate::results::load_run(dir).with_context(|| format!("cannot read the step's run {}", dir.display()))?;
    let paired = crate::report::paired::paired_of("step", &run)
        .with_context(|| format!("{}: the step's run holds no pairs", dir.display()))?;
    if paired.comparisons.is_empty() {
        anyhow::bail!("{}: the step's run holds no paired comparison", dir.display());
    }
    // The metric the pairs were compared on (`paired_of`'s), and so which way is worse:
    // lat_fs loops and fio IOPS fall, step times and op-mix latencies rise.
    let direction = crate::workload::kind::of_kind(run.meta.workload).default_metric().direction();
    let cells = paired.comparisons.iter().map(|c| {
        let stop = c.stop.unwrap_or(PairStop::MaxPairs);
        let rule = (c.threshold, direction);
        let counts = (c.pairs as u32, c.dropped.len() as u32);
        let mut measure = StepMeasure::judge(stop, c.change, 1.0 - paired.level, counts, rule);
        if c.stop_reason.is_some() {
            measure.reason.clone_from(&c.stop_reason);
        }
        CellInput { cell: c.group.clone(), measure, rule }
    });
    let mut m = combine(cells.collect());
    m.profile = Some(StepProfile::of_run(&run));
    Ok(m)
}
