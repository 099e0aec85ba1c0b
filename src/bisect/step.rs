//! One bisection step: a paired comparison of a candidate kernel against a baseline, and
//! the three-valued answer the search reads from it ([`StepVerdict`]): the candidate is
//! **bad** (the paired verdict is `regressed` at the scenario's threshold), **good**
//! (`unchanged`, `improved`, or an interval wholly on the better side of the threshold: a
//! bisection asks only whether it regressed, not the gate's question of an improvement),
//! **unknown** (the interval straddles the threshold after the step's whole pair budget), or **skip** (a member could not be measured: a kernel that
//! does not boot, as `git bisect skip`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalogue::Direction;
use crate::model::pairing::PairStop;
use crate::stats::Change;
use crate::verdict::Verdict;

/// What a step says of its candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StepVerdict {
    /// Regressed against the baseline beyond the threshold, decided.
    Bad,
    /// Within the threshold (or better), decided.
    Good,
    /// Not decided within the step's pairs.
    Unknown,
    /// A member could not be measured (the kernel does not boot, the guest fails).
    Skip,
}

impl StepVerdict {
    /// Lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            StepVerdict::Bad => "bad",
            StepVerdict::Good => "good",
            StepVerdict::Unknown => "unknown",
            StepVerdict::Skip => "skip",
        }
    }
}

/// What one step measured: its verdict, the paired ratio (candidate over baseline, the
/// ratio of geometric means) with the interval the sequential stop decided at, the pairs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StepMeasure {
    /// The step's answer.
    pub verdict: StepVerdict,
    /// The paired gate verdict it came from (`regressed`, `unchanged`, `improved`,
    /// `inconclusive`, `missing`).
    pub paired_verdict: String,
    /// Candidate over baseline (`null` without a pair).
    pub ratio: Option<f64>,
    /// Lower end of the ratio's interval (`null` when unbounded).
    pub ratio_low: Option<f64>,
    /// Upper end of the ratio's interval (`null` when unbounded).
    pub ratio_high: Option<f64>,
    /// The interval's two-sided level (0.99 with the default 6..32 pairs).
    pub level: f64,
    /// Pairs that counted.
    pub pairs: u32,
    /// Pairs dropped (a member void after its reruns).
    pub dropped: u32,
    /// Why the pair group stopped (`regressed`, `max_pairs`, `member_failed`, …).
    pub stop: PairStop,
    /// Why the step was skipped or undecided, in words.
    pub reason: Option<String>,
    /// The step's paired run directory, relative to the bisection directory (`null` when
    /// the step ran in memory, as in the simulation).
    pub run: Option<String>,
    /// With several judged cells (`--all-cells`): each cell's measure, its verdict the
    /// Holm-adjusted one (the fields above are then the deciding cell's); absent with one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cells: Vec<CellStep>,
    /// What the step's run says of its profiles (a kernel-paired step, docs/bisect.md):
    /// whether its arms were profiled and each judged cell's most changed functions,
    /// candidate against baseline; absent for a step with no stored run (the simulation)
    /// and in logs written before profiles were recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<super::step_profile::StepProfile>,
}

impl StepMeasure {
    /// The measure of a pair group that stopped with `stop` after `pairs` pairs (and
    /// `dropped` dropped), whose paired change at level `1 - alpha` is `change`, judged at
    /// `threshold` in `direction` by the gate's rule ([`Verdict::decide`]).
    pub fn judge(
        stop: PairStop,
        change: Option<Change>,
        alpha: f64,
        counts: (u32, u32),
        rule: (f64, Direction),
    ) -> Self {
        let (pairs, dropped) = counts;
        let paired = Verdict::decide(change, rule.0, rule.1);
        let verdict = match (stop, paired) {
            (PairStop::MemberFailed, _) => StepVerdict::Skip,
            (_, Verdict::Regressed) => StepVerdict::Bad,
            (_, Verdict::Unchanged | Verdict::Improved) => StepVerdict::Good,
            // Inconclusive for the gate, which also asks whether it improved; a bisection
            // asks only whether it regressed, and an interval wholly on the better side of
            // the threshold says it did not.
            (_, Verdict::Inconclusive) if change.is_some_and(|c| not_worse(c, rule.0, rule.1)) => StepVerdict::Good,
            (_, Verdict::Inconclusive | Verdict::Missing) => StepVerdict::Unknown,
        };
        let finite = |x: f64| x.is_finite().then_some(x);
        let reason = match verdict {
            StepVerdict::Unknown => Some(format!("undecided after {pairs} pairs ({})", paired.name())),
            _ => None,
        };
        StepMeasure {
            verdict,
            paired_verdict: paired.name().into(),
            ratio: change.and_then(|c| finite(1.0 + c.mean)),
            ratio_low: change.and_then(|c| finite(1.0 + c.ci_low)),
            ratio_high: change.and_then(|c| finite(1.0 + c.ci_high)),
            level: 1.0 - alpha,
            pairs,
            dropped,
            stop,
            reason,
            run: None,
            cells: Vec::new(),
            profile: None,
        }
    }

    /// Guest boots the step took: two a pair (counted or dropped), over every judged cell.
    pub fn boots(&self) -> u32 {
        match self.cells.as_slice() {
            [] => 2 * (self.pairs + self.dropped),
            cells => cells.iter().map(|c| c.measure.boots()).sum(),
        }
    }

    /// The ratio with its interval, for a log line: `0.903 [0.871, 0.936]`.
    pub fn ratio_text(&self) -> String {
        let f = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.3}"));
        format!("{} [{}, {}]", f(self.ratio), f(self.ratio_low), f(self.ratio_high))
    }
}

/// Whether the whole interval of `c` lies on the better side of `-threshold` (higher is
/// better) or `+threshold` (lower is better): a regression beyond the threshold excluded.
fn not_worse(c: Change, threshold: f64, direction: Direction) -> bool {
    let t = threshold.abs();
    match direction {
        Direction::HigherIsBetter => c.ci_low >= -t,
        Direction::LowerIsBetter => c.ci_high <= t,
    }
}

/// One cell of a step judged over several cells.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CellStep {
    /// The cell's id (as `plan` lists it, without the kernel).
    pub cell: String,
    /// The threshold it was judged at (a fraction).
    pub threshold: f64,
    /// The Holm-adjusted p-value of its paired test against the threshold (`null` with
    /// fewer than two pairs: counted as 1).
    pub p_holm: Option<f64>,
    /// Its measure; `verdict` is the Holm-adjusted one, `paired_verdict` the cell's own.
    pub measure: StepMeasure,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(mean: f64, lo: f64, hi: f64) -> Option<Change> {
        Some(Change { mean, ci_low: lo, ci_high: hi })
    }

    const RULE: (f64, Direction) = (0.05, Direction::HigherIsBetter);

    #[test]
    fn the_paired_verdict_maps_to_bad_good_unknown_and_a_failed_member_to_skip() {
        let j = |stop, c| StepMeasure::judge(stop, c, 0.01, (6, 0), RULE).verdict;
        assert_eq!(j(PairStop::Regressed, change(-0.1, -0.14, -0.06)), StepVerdict::Bad);
        assert_eq!(j(PairStop::Unchanged, change(0.0, -0.03, 0.03)), StepVerdict::Good);
        assert_eq!(j(PairStop::Improved, change(0.1, 0.06, 0.14)), StepVerdict::Good);
        assert_eq!(j(PairStop::MaxPairs, change(-0.05, -0.09, -0.01)), StepVerdict::Unknown);
        // Inconclusive for the gate (it may have improved beyond 5%), but no regression: good.
        assert_eq!(j(PairStop::MaxPairs, change(0.03, -0.02, 0.08)), StepVerdict::Good);
        assert_eq!(j(PairStop::MaxPairs, change(0.0, -0.06, 0.06)), StepVerdict::Unknown);
        assert_eq!(j(PairStop::MaxPairs, None), StepVerdict::Unknown);
        assert_eq!(j(PairStop::MemberFailed, None), StepVerdict::Skip);
        // Lower is better (elapsed): a longer time is the regression.
        let m = StepMeasure::judge(
            PairStop::Regressed,
            change(0.1, 0.06, 0.14),
            0.01,
            (6, 0),
            (0.05, Direction::LowerIsBetter),
        );
        assert_eq!((m.verdict, m.ratio_text().as_str()), (StepVerdict::Bad, "1.100 [1.060, 1.140]"));
    }

    #[test]
    fn an_unbounded_interval_is_recorded_as_null_not_infinity() {
        let m =
            StepMeasure::judge(PairStop::MaxPairs, change(0.0, f64::NEG_INFINITY, f64::INFINITY), 0.01, (1, 0), RULE);
        assert_eq!((m.ratio, m.ratio_low, m.ratio_high), (Some(1.0), None, None));
        assert_eq!(m.reason.as_deref(), Some("undecided after 1 pairs (inconclusive)"));
    }
}
