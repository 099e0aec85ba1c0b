//! A [`StepJudge`] that runs each step as one pair group through the runner's pair
//! machinery in memory ([`run_pair_group_in_memory`]: ABBA order, void pairs rerun, the
//! sequential stop), every member measured by a [`CellExecutor`]. The simulation drives it
//! with a scripted executor; the step's measure is read the way the real bisection reads a
//! stored kernel-paired run ([`measure_of`]).

use super::search::StepJudge;
use super::step::StepMeasure;
use crate::model::CellResult;
use crate::plan::{Cell, PairGroup};
use crate::runner::CellExecutor;
use crate::runner::pairs::{PairGroupOutcome, PairRules, run_pair_group_in_memory};
use crate::stats::paired::{alpha_per_look, paired_change};

/// Each step one in-memory pair group of two of `cells` (one cell per candidate).
pub struct PairJudge<'a> {
    /// Measures every member.
    pub exec: &'a mut dyn CellExecutor,
    /// One cell per candidate, in order (its `kernel` the candidate's label).
    pub cells: &'a [Cell],
    /// Pair bounds, seed, threshold, direction and rerun budget of every step.
    pub rules: PairRules,
    /// A member's value, or why it voids its pair.
    pub value: &'a dyn Fn(&CellResult) -> Result<crate::workload::kind::Member, String>,
    /// Whether a signal asked to stop.
    pub stop: &'a dyn Fn() -> bool,
}

impl StepJudge for PairJudge<'_> {
    fn judge(&mut self, baseline: usize, candidate: usize) -> anyhow::Result<Option<StepMeasure>> {
        let group = PairGroup { key: "bisect".into(), members: vec![&self.cells[baseline], &self.cells[candidate]] };
        let out = run_pair_group_in_memory(self.exec, &group, &self.rules, self.value, self.stop)?;
        if out.stop == crate::model::pairing::PairStop::Interrupted {
            return Ok(None);
        }
        Ok(Some(measure_of(&out, &self.rules)))
    }
}

/// What a two-arm pair group's outcome says as a step: the paired change at the level of
/// the rules' looks, judged at their threshold.
pub fn measure_of(out: &PairGroupOutcome, rules: &PairRules) -> StepMeasure {
    let alpha = alpha_per_look(rules.min_pairs, rules.max_pairs);
    let baseline: Vec<f64> = out.pairs.iter().map(|p| p.values[0]).collect();
    let candidate: Vec<f64> = out.pairs.iter().map(|p| p.values[1]).collect();
    let change = paired_change(&baseline, &candidate, alpha);
    let counts = (out.pairs.len() as u32, out.dropped.len() as u32);
    let mut m = StepMeasure::judge(out.stop, change, alpha, counts, (rules.threshold, rules.direction));
    if out.stop_reason.is_some() {
        m.reason.clone_from(&out.stop_reason);
    }
    m
}
