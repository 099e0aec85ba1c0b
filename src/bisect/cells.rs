//! A step judged over several cells (`bisect --all-cells`): each cell's paired verdict
//! Holm-adjusted over the cells, then one answer for the step.
//!
//! Each cell's question is the step's: is the candidate worse than the baseline beyond the
//! cell's threshold? Its paired interval at the step's level `1 - α` decides it when it
//! excludes the threshold's ratio, which is the paired t test against that ratio at `α`
//! ([`paired_p_against`]). Those p-values are Holm-adjusted over the cells
//! ([`holm_adjust`]: the chance that any cell's decision is wrong stays at most `α`), and a
//! cell is **decided** when its adjusted p is below `α`: **bad** on the worse side of the
//! threshold, **good** on the better side, else **unknown**. The step is
//!
//! - **skip** when any cell's member failed (the kernel does not boot: every cell fails);
//! - **bad** when any cell is decided bad;
//! - **good** when every cell is decided good;
//! - **unknown** otherwise.
//!
//! Each cell's pair group stopped on its own unadjusted verdict; a cell decided by that
//! stop but not after Holm leaves the step unknown (never a guess): a larger `--min-pairs`
//! gives Holm room.

use super::step::{CellStep, StepMeasure, StepVerdict};
use crate::catalogue::Direction;
use crate::model::pairing::PairStop;
use crate::stats::Change;
use crate::stats::holm_adjust;
use crate::stats::paired::paired_p_against;

/// One cell's measure as its own paired verdict made it, with the rule it was judged by.
pub struct CellInput {
    /// The cell's id.
    pub cell: String,
    /// Its measure ([`StepMeasure::judge`]).
    pub measure: StepMeasure,
    /// Its threshold (a fraction) and which way is better.
    pub rule: (f64, Direction),
}

/// The step's measure from its cells' (at least one; a single cell is its own measure):
/// the verdict as the module says, the ratio, interval and pairs those of the cell that
/// decided it (the bad cell with the smallest adjusted p, else the least decided cell),
/// and every cell in `cells`.
pub fn combine(inputs: Vec<CellInput>) -> StepMeasure {
    if inputs.len() == 1 {
        return inputs.into_iter().next().map(|i| i.measure).expect("one cell");
    }
    let raw: Vec<Option<f64>> = inputs.iter().map(|i| Some(raw_p(&i.measure, i.rule).unwrap_or(1.0))).collect();
    let adjusted = holm_adjust(&raw);
    let mut cells: Vec<CellStep> = inputs
        .into_iter()
        .zip(&adjusted)
        .map(|(i, p)| {
            let p = p.unwrap_or(1.0);
            let mut measure = i.measure;
            measure.verdict = adjusted_verdict(&measure, i.rule, p);
            measure.reason = match measure.verdict {
                StepVerdict::Unknown => Some(format!(
                    "undecided after Holm over the cells (adjusted p {p:.3} at level {:.4}; its own verdict: {})",
                    measure.level, measure.paired_verdict
                )),
                _ => measure.reason,
            };
            let p_holm = raw_p(&measure, i.rule).map(|_| p);
            CellStep { cell: i.cell, threshold: i.rule.0, p_holm, measure }
        })
        .collect();
    let p_of = |c: &CellStep| c.p_holm.unwrap_or(1.0);
    let is = |v: StepVerdict| move |c: &&CellStep| c.measure.verdict == v;
    let (verdict, decider) = if let Some(c) = cells.iter().find(is(StepVerdict::Skip)) {
        (StepVerdict::Skip, c)
    } else if let Some(c) = cells.iter().filter(is(StepVerdict::Bad)).min_by(|a, b| p_of(a).total_cmp(&p_of(b))) {
        (StepVerdict::Bad, c)
    } else {
        let least = cells.iter().max_by(|a, b| p_of(a).total_cmp(&p_of(b))).expect("several cells");
        let all_good = cells.iter().all(|c| c.measure.verdict == StepVerdict::Good);
        (if all_good { StepVerdict::Good } else { StepVerdict::Unknown }, least)
    };
    let mut m = decider.measure.clone();
    m.verdict = verdict;
    m.reason = match verdict {
        StepVerdict::Good => None,
        _ => Some(format!("cell {}: {}", decider.cell, decider.measure.reason.as_deref().unwrap_or(verdict.name()))),
    };
    m.cells = std::mem::take(&mut cells);
    m
}

/// The cell's paired test against its threshold, unadjusted, from its recorded interval.
fn raw_p(m: &StepMeasure, rule: (f64, Direction)) -> Option<f64> {
    let (ratio, low, high) = (m.ratio?, m.ratio_low?, m.ratio_high?);
    let change = Change { mean: ratio - 1.0, ci_low: low - 1.0, ci_high: high - 1.0 };
    paired_p_against(change, 1.0 - m.level, m.pairs as usize, bound(rule))
}

/// The ratio less 1 that the threshold puts on the worse side.
fn bound(rule: (f64, Direction)) -> f64 {
    match rule.1 {
        Direction::HigherIsBetter => -rule.0.abs(),
        Direction::LowerIsBetter => rule.0.abs(),
    }
}

/// The cell's verdict at Holm-adjusted `p`: decided below the step's α, on the side of the
/// threshold its ratio is.
fn adjusted_verdict(m: &StepMeasure, rule: (f64, Direction), p: f64) -> StepVerdict {
    if m.stop == PairStop::MemberFailed {
        return StepVerdict::Skip;
    }
    let Some(ratio) = m.ratio else { return StepVerdict::Unknown };
    if p >= 1.0 - m.level {
        return StepVerdict::Unknown;
    }
    let worse = match rule.1 {
        Direction::HigherIsBetter => ratio - 1.0 < bound(rule),
        Direction::LowerIsBetter => ratio - 1.0 > bound(rule),
    };
    if worse { StepVerdict::Bad } else { StepVerdict::Good }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::paired::change_of_log_ratios;

    const ALPHA: f64 = 0.01;
    const RULE: (f64, Direction) = (0.05, Direction::HigherIsBetter);

    /// A cell whose pairs have log ratios `d`, judged alone at 5%.
    fn cell(name: &str, d: &[f64]) -> CellInput {
        let c = change_of_log_ratios(d, ALPHA);
        let stop = PairStop::MaxPairs;
        CellInput {
            cell: name.into(),
            measure: StepMeasure::judge(stop, c, ALPHA, (d.len() as u32, 0), RULE),
            rule: RULE,
        }
    }

    /// Log ratios around `ln(ratio)` spread by `spread`, `n` of them.
    fn around(ratio: f64, spread: f64, n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| ratio.ln() + spread * if i % 2 == 0 { 1.0 } else { -1.0 } * (1.0 + i as f64 / n as f64))
            .collect()
    }

    #[test]
    fn one_clearly_regressed_cell_makes_the_step_bad_and_says_which() {
        let m = combine(vec![cell("a", &around(1.0, 0.01, 12)), cell("b", &around(0.7, 0.01, 12))]);
        assert_eq!(m.verdict, StepVerdict::Bad);
        assert_eq!(m.cells.len(), 2);
        assert_eq!((m.cells[0].measure.verdict, m.cells[1].measure.verdict), (StepVerdict::Good, StepVerdict::Bad));
        assert!(m.ratio.unwrap() < 0.75, "the step's ratio is the bad cell's: {:?}", m.ratio);
        assert!(m.reason.as_deref().unwrap().starts_with("cell b"), "{:?}", m.reason);
    }

    #[test]
    fn every_cell_decided_not_worse_makes_it_good_and_one_undecided_unknown() {
        let good = combine(vec![cell("a", &around(1.0, 0.01, 12)), cell("b", &around(1.01, 0.01, 12))]);
        assert_eq!(good.verdict, StepVerdict::Good);
        assert!(good.cells.iter().all(|c| c.measure.verdict == StepVerdict::Good && c.p_holm.unwrap() < ALPHA));
        let one_wide = combine(vec![cell("a", &around(1.0, 0.01, 12)), cell("b", &around(0.96, 0.08, 6))]);
        assert_eq!(one_wide.verdict, StepVerdict::Unknown);
        assert!(one_wide.reason.as_deref().unwrap().starts_with("cell b"), "{:?}", one_wide.reason);
    }

    #[test]
    fn a_cell_decided_alone_but_not_after_holm_leaves_the_step_unknown() {
        // Find a regressed spread at which a cell alone is decided bad with p in
        // [α/3, α): decided alone, not once adjusted over three cells.
        let mut found = None;
        for k in 1..400 {
            let d = around(0.85, 0.002 * k as f64, 8);
            let m = cell("x", &d).measure;
            let p = raw_p(&m, RULE).unwrap();
            if m.verdict == StepVerdict::Bad && (ALPHA / 3.0..ALPHA).contains(&p) {
                found = Some(d);
                break;
            }
        }
        let d = found.expect("a borderline spread");
        assert_eq!(cell("x", &d).measure.verdict, StepVerdict::Bad, "decided alone");
        let three = combine(vec![cell("x", &d), cell("y", &d), cell("z", &d)]);
        assert_eq!(three.verdict, StepVerdict::Unknown);
        assert!(three.cells.iter().all(|c| c.measure.paired_verdict == "regressed"));
        assert!(
            three.cells[0].measure.reason.as_deref().unwrap().contains("Holm"),
            "{:?}",
            three.cells[0].measure.reason
        );
    }

    #[test]
    fn a_failed_member_skips_the_step_and_one_cell_is_its_own_measure() {
        let mut failed = cell("b", &[]);
        failed.measure.stop = PairStop::MemberFailed;
        failed.measure.verdict = StepVerdict::Skip;
        let m = combine(vec![cell("a", &around(0.7, 0.01, 12)), failed]);
        assert_eq!(m.verdict, StepVerdict::Skip);
        let alone = cell("a", &around(0.7, 0.01, 12));
        let expect = alone.measure.clone();
        assert_eq!(combine(vec![alone]), expect);
        assert!(expect.cells.is_empty());
    }
}
