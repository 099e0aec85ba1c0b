//! The bisection itself, pure: over candidates `0..n` (0 the good endpoint, `n-1` the
//! bad one), which paired comparisons to make and what the answers conclude. How a
//! comparison is made is a [`StepJudge`]'s business (kernels in qemu, or a simulation).
//!
//! 1. **Endpoints first**: the bad endpoint against the good one must be a decided
//!    regression; `good` ends the bisection with "no regression between the endpoints",
//!    `unknown` with "the endpoints do not differ decidedly", `skip` with the failure.
//! 2. **Steps**: the candidate nearest the middle of the open range (skipped candidates
//!    left out, as `git bisect skip` does) against the good endpoint: `bad` moves the bad
//!    end down, `good` the good end up, `skip` marks it and takes the next nearest, and
//!    `unknown` (undecided after the step's whole pair budget) stops with the narrowed
//!    range: never a guess.
//! 3. **Culprit**: the first bad candidate against its predecessor (the last good one)
//!    must be decided bad. When the predecessor is the good endpoint itself, the step that
//!    found the culprit bad was that very comparison, and it is not run again.
//!
//! Steps already in the bisect log (a resumed bisection) are taken from it instead of
//! being measured again: the search is deterministic in its answers, so it walks the same
//! path up to where the log ends.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::step::{StepMeasure, StepVerdict};

/// Makes one paired comparison.
pub trait StepJudge {
    /// Candidate `candidate` against `baseline` (indices into the candidate list), paired;
    /// `Ok(None)` when a signal stopped it before it finished.
    fn judge(&mut self, baseline: usize, candidate: usize) -> anyhow::Result<Option<StepMeasure>>;
}

/// Why a step was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepRole {
    /// The bad endpoint against the good one.
    Endpoints,
    /// A candidate inside the range against the good endpoint.
    Midpoint,
    /// The first bad candidate against its predecessor.
    Culprit,
}

/// One finished step, as the bisect log keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StepRecord {
    /// Why it was made.
    pub role: StepRole,
    /// The baseline's position in the candidate list (0 is the good endpoint).
    pub baseline: usize,
    /// The candidate's position.
    pub candidate: usize,
    /// What it measured.
    pub measure: StepMeasure,
    /// Wall time of the step, seconds.
    pub seconds: f64,
    /// When it finished (RFC 3339).
    pub finished: String,
}

/// What a bisection concluded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", tag = "kind", deny_unknown_fields)]
pub enum Conclusion {
    /// `candidate` is the first bad one, confirmed against its predecessor.
    Culprit {
        /// Its position.
        candidate: usize,
    },
    /// The bad endpoint is decided not worse than the good one.
    NoRegression,
    /// The endpoints' comparison stayed undecided.
    EndpointsUndecided,
    /// An endpoint could not be measured (the step's reason says why).
    EndpointSkipped,
    /// The bisection stopped with the regression between `good` and `bad` (positions),
    /// narrowed as far as decided steps allow; `why` says what stopped it.
    Narrowed {
        /// The last candidate known good.
        good: usize,
        /// The first candidate known bad.
        bad: usize,
        /// What stopped the bisection.
        why: String,
    },
    /// A signal stopped the bisection; the finished steps are in the log.
    Interrupted,
}

/// What the search needs from around it: the judge, the steps a resumed bisection had
/// finished, and where each new step goes as soon as it is finished (the bisect log).
pub struct Search<'a> {
    /// Makes the comparisons.
    pub judge: &'a mut dyn StepJudge,
    /// Steps finished before, in order (a resumed bisection's log).
    pub done: &'a [StepRecord],
    /// Called with every new step as it finishes.
    pub record: &'a mut dyn FnMut(&StepRecord) -> anyhow::Result<()>,
}

impl Search<'_> {
    /// One comparison: from the log when it holds it, else measured and recorded.
    fn step(&mut self, role: StepRole, baseline: usize, candidate: usize) -> anyhow::Result<Option<StepMeasure>> {
        let earlier = self.done.iter().find(|s| (s.role, s.baseline, s.candidate) == (role, baseline, candidate));
        if let Some(s) = earlier {
            return Ok(Some(s.measure.clone()));
        }
        let started = std::time::Instant::now();
        let Some(measure) = self.judge.judge(baseline, candidate)? else { return Ok(None) };
        let rec = StepRecord {
            role,
            baseline,
            candidate,
            measure: measure.clone(),
            seconds: started.elapsed().as_secs_f64(),
            finished: crate::results::now_rfc3339(),
        };
        (self.record)(&rec)?;
        Ok(Some(measure))
    }
}

/// Bisect candidates `0..n` (see the module documentation). `n` must be at least 2.
pub fn bisect(n: usize, search: &mut Search) -> anyhow::Result<Conclusion> {
    anyhow::ensure!(n >= 2, "a bisection needs two or more candidates, not {n}");
    let (mut good, mut bad) = (0, n - 1);
    let Some(ends) = search.step(StepRole::Endpoints, good, bad)? else { return Ok(Conclusion::Interrupted) };
    match ends.verdict {
        StepVerdict::Bad => {}
        StepVerdict::Good => return Ok(Conclusion::NoRegression),
        StepVerdict::Unknown => return Ok(Conclusion::EndpointsUndecided),
        StepVerdict::Skip => return Ok(Conclusion::EndpointSkipped),
    }
    let mut skipped = vec![false; n];
    while let Some(mid) = midpoint(good, bad, &skipped) {
        let Some(m) = search.step(StepRole::Midpoint, 0, mid)? else { return Ok(Conclusion::Interrupted) };
        match m.verdict {
            StepVerdict::Bad => bad = mid,
            StepVerdict::Good => good = mid,
            StepVerdict::Skip => skipped[mid] = true,
            StepVerdict::Unknown => {
                let why = format!("the step at position {mid} stayed undecided after {} pairs", m.pairs);
                return Ok(Conclusion::Narrowed { good, bad, why });
            }
        }
    }
    if bad - good > 1 {
        let why = format!("every candidate between positions {good} and {bad} was skipped (it could not be measured)");
        return Ok(Conclusion::Narrowed { good, bad, why });
    }
    if good == 0 {
        // The step that found `bad` bad compared it with the good endpoint: its predecessor.
        return Ok(Conclusion::Culprit { candidate: bad });
    }
    let Some(c) = search.step(StepRole::Culprit, good, bad)? else { return Ok(Conclusion::Interrupted) };
    Ok(match c.verdict {
        StepVerdict::Bad => Conclusion::Culprit { candidate: bad },
        other => {
            let why = format!(
                "position {bad} against its predecessor {good} is {} ({}), not a decided regression: the change may \
                 be spread over several candidates",
                other.name(),
                c.paired_verdict
            );
            Conclusion::Narrowed { good, bad, why }
        }
    })
}

/// The untested, unskipped candidate strictly between `good` and `bad` nearest their
/// middle (the lower one on a tie); `None` when there is none.
pub fn midpoint(good: usize, bad: usize, skipped: &[bool]) -> Option<usize> {
    let middle = (good + bad) as f64 / 2.0;
    (good + 1..bad).filter(|&i| !skipped[i]).min_by(|&a, &b| {
        let (da, db) = ((a as f64 - middle).abs(), (b as f64 - middle).abs());
        da.total_cmp(&db).then(a.cmp(&b))
    })
}

/// Most steps a bisection of `n` candidates takes with no skip: the endpoints, ⌈log2(n-1)⌉
/// midpoints and the culprit's confirmation.
pub fn most_steps(n: usize) -> usize {
    let range = n.saturating_sub(1).max(1);
    let midpoints = usize::BITS - (range - 1).leading_zeros();
    2 + midpoints as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::pairing::PairStop;

    /// Answers from a truth table: candidate `i` is bad from position `first_bad` on;
    /// `unknown` and `skip` candidates answer so whenever they are the candidate.
    struct Truth {
        first_bad: Option<usize>,
        unknown: Vec<usize>,
        skip: Vec<usize>,
        asked: Vec<(usize, usize)>,
        interrupt_at: Option<usize>,
    }

    impl Truth {
        fn new(first_bad: Option<usize>) -> Truth {
            Truth { first_bad, unknown: vec![], skip: vec![], asked: vec![], interrupt_at: None }
        }
    }

    fn measure(v: StepVerdict) -> StepMeasure {
        let stop = match v {
            StepVerdict::Bad => PairStop::Regressed,
            StepVerdict::Good => PairStop::Unchanged,
            StepVerdict::Unknown => PairStop::MaxPairs,
            StepVerdict::Skip => PairStop::MemberFailed,
        };
        StepMeasure {
            verdict: v,
            paired_verdict: "-".into(),
            ratio: None,
            ratio_low: None,
            ratio_high: None,
            level: 0.99,
            pairs: 6,
            dropped: 0,
            stop,
            reason: None,
            run: None,
            cells: Vec::new(),
            profile: None,
        }
    }

    impl StepJudge for Truth {
        fn judge(&mut self, baseline: usize, candidate: usize) -> anyhow::Result<Option<StepMeasure>> {
            if self.interrupt_at == Some(self.asked.len()) {
                return Ok(None);
            }
            self.asked.push((baseline, candidate));
            let bad = |i: usize| self.first_bad.is_some_and(|f| i >= f);
            let v = if self.skip.contains(&candidate) {
                StepVerdict::Skip
            } else if self.unknown.contains(&candidate) {
                StepVerdict::Unknown
            } else if bad(candidate) && !bad(baseline) {
                StepVerdict::Bad
            } else {
                StepVerdict::Good
            };
            Ok(Some(measure(v)))
        }
    }

    fn run(n: usize, t: &mut Truth, done: &[StepRecord]) -> (Conclusion, Vec<StepRecord>) {
        let mut log = Vec::new();
        let mut record = |r: &StepRecord| {
            log.push(r.clone());
            Ok(())
        };
        let c = bisect(n, &mut Search { judge: t, done, record: &mut record }).unwrap();
        (c, log)
    }

    #[test]
    fn every_position_of_a_clean_step_is_found_and_confirmed() {
        for n in [2usize, 3, 4, 5, 8, 16, 17, 64] {
            for first in 1..n {
                let mut t = Truth::new(Some(first));
                let (c, log) = run(n, &mut t, &[]);
                assert_eq!(c, Conclusion::Culprit { candidate: first }, "n {n} first bad {first}");
                assert!(log.len() <= most_steps(n), "n {n}: {} steps > {}", log.len(), most_steps(n));
                assert_eq!(log[0].role, StepRole::Endpoints);
                // The culprit is confirmed against its predecessor, unless that comparison was a step.
                if first > 1 {
                    assert_eq!(t.asked.last(), Some(&(first - 1, first)));
                } else {
                    assert!(t.asked.contains(&(0, 1)));
                }
            }
        }
    }

    #[test]
    fn endpoints_that_do_not_differ_decidedly_stop_before_any_midpoint() {
        let mut t = Truth::new(None);
        assert_eq!(run(16, &mut t, &[]).0, Conclusion::NoRegression);
        assert_eq!(t.asked, [(0, 15)]);
        let mut t = Truth::new(Some(3));
        t.unknown = vec![15];
        assert_eq!(run(16, &mut t, &[]).0, Conclusion::EndpointsUndecided);
        let mut t = Truth::new(Some(3));
        t.skip = vec![15];
        assert_eq!(run(16, &mut t, &[]).0, Conclusion::EndpointSkipped);
    }

    #[test]
    fn an_undecided_step_stops_with_the_narrowed_range_never_a_guess() {
        let mut t = Truth::new(Some(5));
        t.unknown = vec![4];
        let (c, _) = run(16, &mut t, &[]);
        // 0..15: mid 7 bad, then 0..7: mid 3 good (ties go low: 3.5 → 3), then 3..7: mid 5 bad, then 4: unknown.
        match c {
            Conclusion::Narrowed { good, bad, why } => {
                assert_eq!((good, bad), (3, 5));
                assert!(why.contains("position 4"), "{why}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn skipped_candidates_are_stepped_around_like_git_bisect_skip() {
        let mut t = Truth::new(Some(6));
        t.skip = vec![7, 8];
        let (c, log) = run(16, &mut t, &[]);
        assert_eq!(c, Conclusion::Culprit { candidate: 6 });
        assert!(log.iter().any(|s| s.candidate == 7 && s.measure.verdict == StepVerdict::Skip));
        // The culprit's only neighbours skipped: the range is all that can be said.
        let mut t = Truth::new(Some(6));
        t.skip = vec![5, 6];
        match run(16, &mut t, &[]).0 {
            Conclusion::Narrowed { good, bad, why } => {
                assert_eq!((good, bad), (4, 7));
                assert!(why.contains("skipped"), "{why}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_culprit_not_decided_against_its_predecessor_is_not_named() {
        // Bad against the good endpoint from 6 on, but 6 against 5 reads good: a gradual change.
        struct Gradual;
        impl StepJudge for Gradual {
            fn judge(&mut self, b: usize, c: usize) -> anyhow::Result<Option<StepMeasure>> {
                let v = if b == 0 && c >= 6 { StepVerdict::Bad } else { StepVerdict::Good };
                Ok(Some(measure(v)))
            }
        }
        let mut record = |_: &StepRecord| Ok(());
        let c = bisect(16, &mut Search { judge: &mut Gradual, done: &[], record: &mut record }).unwrap();
        assert!(matches!(c, Conclusion::Narrowed { good: 5, bad: 6, .. }), "{c:?}");
    }

    #[test]
    fn an_interrupted_bisection_resumes_from_its_log_without_measuring_a_step_again() {
        let mut first = Truth::new(Some(11));
        first.interrupt_at = Some(3);
        let (c, log) = run(32, &mut first, &[]);
        assert_eq!((c, log.len()), (Conclusion::Interrupted, 3));
        let mut again = Truth::new(Some(11));
        let (c, more) = run(32, &mut again, &log);
        assert_eq!(c, Conclusion::Culprit { candidate: 11 });
        // The resumed search asked only what the log did not hold.
        let logged: Vec<(usize, usize)> = log.iter().map(|s| (s.baseline, s.candidate)).collect();
        assert!(again.asked.iter().all(|a| !logged.contains(a)), "{:?} vs {logged:?}", again.asked);
        assert_eq!(again.asked.len(), more.len());
    }

    #[test]
    fn the_midpoint_is_the_middle_of_what_is_left() {
        assert_eq!(midpoint(0, 15, &[false; 16]), Some(7));
        assert_eq!(midpoint(0, 1, &[false; 2]), None);
        let mut skipped = [false; 16];
        skipped[7] = true;
        assert_eq!(midpoint(0, 15, &skipped), Some(8));
        assert_eq!(most_steps(64), 2 + 6);
        assert_eq!(most_steps(2), 2);
        assert_eq!(most_steps(16), 2 + 4);
    }
}
