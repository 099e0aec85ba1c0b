//! A [`StepJudge`] that runs each step as one pair group through the runner's pair
//! machinery in memory ([`run_pair_group_in_memory`]: ABBA order, void pairs rerun, the
//! sequential stop), every member measured by a [`CellExecutor`]. The simulation drives it
//! with a scripted executor; the step's measure is read the way the real bisection reads a
//! stored kernel-paired run ([`measure_of`]).

use super::cells::{CellInput, combine};
use super::search::StepJudge;
use super::step::StepMeasure;
use crate::model::{CellParams, CellResult};
use crate::plan::{Cell, PairGroup};
use crate::runner::CellExecutor;
use crate::runner::pairs::{PairGroupOutcome, PairRules, run_pair_group_in_memory};
use crate::stats::paired::{alpha_per_look, paired_change};

/// Each step one in-memory pair group of two candidates per judged cell; with several
/// judged cells, their verdicts Holm-adjusted ([`combine`]).
pub struct PairJudge<'a> {
    /// Measures every member.
    pub exec: &'a mut dyn CellExecutor,
    /// Per judged cell, one cell per candidate, in order (its `kernel` the candidate's label).
    pub cells: Vec<&'a [Cell]>,
    /// Pair bounds, seed, threshold, direction and rerun budget of every step.
    pub rules: PairRules,
    /// A member's value, or why it voids its pair.
    pub value: &'a dyn Fn(&CellResult) -> Result<crate::workload::kind::Member, String>,
    /// Whether a signal asked to stop.
    pub stop: &'a dyn Fn() -> bool,
}

impl StepJudge for PairJudge<'_> {
    fn judge(&mut self, baseline: usize, candidate: usize) -> anyhow::Result<Option<StepMeasure>> {
        let mut inputs = Vec::with_capacity(self.cells.len());
        for cells in &self.cells {
            let members = vec![&cells[baseline], &cells[candidate]];
            let group = PairGroup { key: "bisect".into(), members };
            let out = run_pair_group_in_memory(self.exec, &group, &self.rules, self.value, self.stop)?;
            if out.stop == crate::model::pairing::PairStop::Interrupted {
                return Ok(None);
            }
            let cell = CellParams { kernel: None, ..cells[baseline].params.clone() }.id();
            let rule = (self.rules.threshold, self.rules.direction);
            inputs.push(CellInput { cell, measure: measure_of(&out, &self.rules), rule });
        }
        Ok(Some(combine(inputs)))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bisect::search::{Conclusion, Search, StepRecord, bisect};
    use crate::bisect::simulate::candidate_cells;
    use crate::bisect::step::StepVerdict;
    use crate::catalogue::Direction;
    use crate::model::{CellStatus, LatfsRepetition, LatfsTest};
    use crate::rng::SplitMix64;
    use crate::workload::latfs::member::member_value;

    /// Members of candidate `c<i>`: 100 loops/ms, 2% spread, but open_close from
    /// `first_bad` on 20% slower; chown never changes.
    struct TwoTests {
        rng: SplitMix64,
        first_bad: usize,
    }

    impl CellExecutor for TwoTests {
        fn measure(&mut self, cell: &Cell, _phase: &crate::runner::Phase) -> CellResult {
            let at = cell.params.kernel.as_deref().and_then(|k| k.strip_prefix('c')?.parse::<usize>().ok()).unwrap();
            let slow = cell.params.test == Some(LatfsTest::OpenClose) && at >= self.first_bad;
            let v = 100.0 * if slow { 0.8 } else { 1.0 } * self.rng.lognormal(0.02);
            let mut r = CellResult::new(&cell.params, CellStatus::Ok, "2026-01-01T00:00:00Z");
            let rep = LatfsRepetition { total_loops_per_ms: v, ..LatfsRepetition::default() };
            r.latfs = Some(crate::workload::latfs::result(vec![rep]));
            r
        }
    }

    #[test]
    fn all_cells_find_a_slowdown_in_one_cell_and_say_each_cells_verdict() {
        let open_close = candidate_cells(8);
        let chown: Vec<Cell> = open_close
            .iter()
            .map(|c| Cell { params: CellParams { test: Some(LatfsTest::Chown), ..c.params.clone() }, ..c.clone() })
            .collect();
        let mut exec = TwoTests { rng: SplitMix64::new(36), first_bad: 5 };
        let rules = PairRules {
            seed: 7,
            min_pairs: 6,
            max_pairs: 32,
            threshold: 0.05,
            direction: Direction::HigherIsBetter,
            max_reruns: 0,
        };
        let mut judge = PairJudge {
            exec: &mut exec,
            cells: vec![&chown, &open_close],
            rules,
            value: &member_value,
            stop: &|| false,
        };
        let mut steps: Vec<StepRecord> = Vec::new();
        let mut record = |s: &StepRecord| {
            steps.push(s.clone());
            Ok(())
        };
        let done: [StepRecord; 0] = [];
        let c = bisect(8, &mut Search { judge: &mut judge, done: &done, record: &mut record }).unwrap();
        assert_eq!(c, Conclusion::Culprit { candidate: 5 });
        for s in &steps {
            let cells = &s.measure.cells;
            let names: Vec<&str> = cells.iter().map(|c| c.cell.as_str()).collect();
            assert_eq!(names, ["ext4-S-qoff-t1-chown", "ext4-S-qoff-t1-open_close"], "{s:?}");
            // chown never regressed; the step is open_close's answer.
            assert_eq!(cells[0].measure.verdict, StepVerdict::Good, "{s:?}");
            assert_eq!(s.measure.verdict, cells[1].measure.verdict, "{s:?}");
            assert_eq!(s.measure.verdict == StepVerdict::Bad, s.candidate >= 5 && s.baseline < 5, "{s:?}");
            assert!(cells.iter().all(|c| c.p_holm.is_some_and(|p| p < 1.0 - s.measure.level)), "{s:?}");
        }
    }
}
