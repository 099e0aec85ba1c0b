//! The bisection simulated: candidates whose members are drawn at a measured noise, with
//! a true step at a random position (or none), bisected two ways:
//!
//! - **paired** — `fsbench bisect`: every step a pair group through the runner's pair
//!   machinery ([`PairJudge`] over the [`CellExecutor`] seam: ABBA, the sequential stop,
//!   the paired verdict at the threshold), endpoints and culprit confirmed;
//! - **plain** — today's `gate --bisect` recipe under `git bisect run`: the good endpoint
//!   measured once, each step one unpaired run of the candidate gated against those
//!   numbers (regressed: bad, unchanged or improved: good, inconclusive: skip), with no
//!   endpoint or culprit confirmation.
//!
//! The noise model (`docs/bisect.md`): each member (one guest boot) is the candidate's true
//! level times a per-pair drift shared by the two members of a pair (`drift_cv`; the plain
//! recipe's runs are minutes apart, so each draws its own) times the member's own spread,
//! whose CV is drawn per bisection between `cv_min` and `cv_max`. A plain run's repetitions
//! spread around its member level by `within_cv`, the spread inside one boot.

use super::judge_pairs::PairJudge;
use super::search::{Conclusion, Search, StepRecord, bisect};
use crate::catalogue::Direction;
use crate::model::{CellParams, CellResult, CellStatus, LatfsRepetition, LatfsTest, Layout, QuotaMode};
use crate::plan::Cell;
use crate::rng::SplitMix64;
use crate::runner::CellExecutor;
use crate::runner::pairs::PairRules;
use crate::verdict::Verdict;
use crate::workload::latfs::member::member_value as latfs_member_value;

/// The measured noise of one member and its pairs.
#[derive(Debug, Clone, Copy)]
pub struct Noise {
    /// Fewest per-member spread (CV) of a bisection.
    pub cv_min: f64,
    /// Most per-member spread (CV).
    pub cv_max: f64,
    /// Spread of the level shared by a pair's members (drift between pairs).
    pub drift_cv: f64,
    /// Spread of the repetitions inside one member (one boot), for the plain recipe.
    pub within_cv: f64,
    /// Repetitions of a plain run.
    pub repetitions: usize,
}

/// This machine's noise (docs/bisect.md): 7–10% per member, 5% drift, 5% inside a boot, 3 repetitions.
pub const MACHINE_NOISE: Noise = Noise { cv_min: 0.07, cv_max: 0.10, drift_cv: 0.05, within_cv: 0.05, repetitions: 3 };

/// What to simulate.
#[derive(Debug, Clone, Copy)]
pub struct SimConfig {
    /// Candidates per bisection.
    pub candidates: usize,
    /// Bisections with a step, and as many without.
    pub bisections: usize,
    /// The true step: the bad candidates' level relative to the good ones (0.9: 10% slower).
    pub step: f64,
    /// The regression threshold (fraction).
    pub threshold: f64,
    /// Fewest pairs per step.
    pub min_pairs: u32,
    /// Most pairs per step (the budget).
    pub max_pairs: u32,
    /// Seed of everything drawn.
    pub seed: u64,
    /// The noise.
    pub noise: Noise,
}

/// The tallies of one way of bisecting over the simulated bisections.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tally {
    /// Bisections with a step whose culprit was named exactly.
    pub exact: usize,
    /// Bisections with a step that named a wrong culprit.
    pub wrong: usize,
    /// Bisections with a step that ended without naming one (stopped, narrowed).
    pub no_answer: usize,
    /// Bisections without a step that said "no regression between the endpoints".
    pub no_regression: usize,
    /// Bisections without a step that named a culprit anyway.
    pub false_culprit: usize,
    /// Guest boots (members) over all bisections, with and without a step.
    pub boots: u64,
}

/// Both ways side by side.
#[derive(Debug, Clone, Copy)]
pub struct SimReport {
    /// The configuration simulated.
    pub config: SimConfig,
    /// `fsbench bisect`.
    pub paired: Tally,
    /// `git bisect run` with `gate --bisect`.
    pub plain: Tally,
}

/// Answers each member of a simulated candidate (the cell's kernel `c<position>`) with one
/// repetition drawn from the noise model; counts the members it measured.
struct SimMembers {
    rng: SplitMix64,
    levels: Vec<f64>,
    cv: f64,
    drift_cv: f64,
    drift: f64,
    calls: u64,
}

impl SimMembers {
    fn position(cell: &Cell) -> usize {
        cell.params.kernel.as_deref().and_then(|k| k.strip_prefix('c')).and_then(|p| p.parse().ok()).unwrap_or(0)
    }
}

impl CellExecutor for SimMembers {
    fn measure(&mut self, cell: &Cell, _phase: &crate::runner::Phase) -> CellResult {
        // Members run back to back in pairs of two: a new pair, a new shared level.
        if self.calls.is_multiple_of(2) {
            self.drift = self.rng.lognormal(self.drift_cv);
        }
        self.calls += 1;
        let v = self.levels[Self::position(cell)] * self.drift * self.rng.lognormal(self.cv);
        let mut r = CellResult::new(&cell.params, CellStatus::Ok, "2026-01-01T00:00:00Z");
        let rep = LatfsRepetition { total_loops_per_ms: v, ..LatfsRepetition::default() };
        r.latfs = Some(crate::workload::latfs::result(vec![rep]));
        r
    }
}

/// One cell per candidate, labelled `c0`, `c1`, … as kernels.
pub fn candidate_cells(n: usize) -> Vec<Cell> {
    (0..n)
        .map(|i| Cell {
            index: i,
            params: CellParams {
                fs: "ext4".into(),
                layout: Layout::S,
                quota: QuotaMode::Off,
                tasks: 1,
                test: Some(LatfsTest::OpenClose),
                fio: Default::default(),
                kernel: Some(format!("c{i}")),
            },
        })
        .collect()
}

/// The true levels: 100 before `first_bad`, `100 · step` from it on.
fn levels(n: usize, first_bad: Option<usize>, step: f64) -> Vec<f64> {
    (0..n).map(|i| if first_bad.is_some_and(|f| i >= f) { 100.0 * step } else { 100.0 }).collect()
}

/// One paired bisection of `levels`; its conclusion and the members it measured.
pub fn paired_once(cfg: &SimConfig, levels: Vec<f64>, cells: &[Cell], rng: &mut SplitMix64) -> (Conclusion, u64) {
    let cv = cfg.noise.cv_min + (cfg.noise.cv_max - cfg.noise.cv_min) * rng.f64();
    let mut exec = SimMembers {
        rng: SplitMix64::new(rng.next_u64()),
        levels,
        cv,
        drift_cv: cfg.noise.drift_cv,
        drift: 1.0,
        calls: 0,
    };
    let rules = PairRules {
        seed: rng.next_u64(),
        min_pairs: cfg.min_pairs,
        max_pairs: cfg.max_pairs,
        threshold: cfg.threshold,
        direction: Direction::HigherIsBetter,
        max_reruns: 0,
    };
    let mut judge =
        PairJudge { exec: &mut exec, cells: vec![cells], rules, value: &latfs_member_value, stop: &|| false };
    let mut record = |_: &StepRecord| Ok(());
    let done: [StepRecord; 0] = [];
    let c = bisect(cells.len(), &mut Search { judge: &mut judge, done: &done, record: &mut record })
        .expect("a simulated bisection cannot fail");
    (c, exec.calls)
}

/// One plain run of a candidate at `level`: one boot's level, then its repetitions.
fn plain_run(level: f64, cv: f64, noise: &Noise, rng: &mut SplitMix64) -> Vec<f64> {
    let boot = level * rng.lognormal(noise.drift_cv) * rng.lognormal(cv);
    (0..noise.repetitions).map(|_| boot * rng.lognormal(noise.within_cv)).collect()
}

/// One plain bisection (`git bisect run` around `gate --bisect`): the culprit it names
/// (`None` when every candidate left was skipped) and the runs it made.
pub fn plain_once(cfg: &SimConfig, levels: &[f64], rng: &mut SplitMix64) -> (Option<usize>, u64) {
    let n = levels.len();
    let cv = cfg.noise.cv_min + (cfg.noise.cv_max - cfg.noise.cv_min) * rng.f64();
    let good_numbers = plain_run(levels[0], cv, &cfg.noise, rng);
    let mut runs = 1;
    let (mut good, mut bad) = (0, n - 1);
    let mut skipped = vec![false; n];
    while let Some(mid) = super::search::midpoint(good, bad, &skipped) {
        let numbers = plain_run(levels[mid], cv, &cfg.noise, rng);
        runs += 1;
        let change = crate::stats::relative_change(&good_numbers, &numbers);
        match Verdict::decide(change, cfg.threshold, Direction::HigherIsBetter) {
            Verdict::Regressed => bad = mid,
            Verdict::Unchanged | Verdict::Improved => good = mid,
            Verdict::Inconclusive | Verdict::Missing => skipped[mid] = true,
        }
    }
    // git names the first bad commit only when nothing between the ends was skipped.
    ((bad - good == 1).then_some(bad), runs)
}

/// Run the simulation: `bisections` with a step at a random position (2..n-1 bad from
/// there) and as many without, each bisected both ways.
pub fn simulate(cfg: &SimConfig) -> SimReport {
    let n = cfg.candidates;
    let cells = candidate_cells(n);
    let mut rng = SplitMix64::new(cfg.seed);
    let (mut paired, mut plain) = (Tally::default(), Tally::default());
    for with_step in [true, false] {
        for _ in 0..cfg.bisections {
            let first_bad = with_step.then(|| 1 + rng.below(n as u64 - 1) as usize);
            let lv = levels(n, first_bad, cfg.step);
            let (c, members) = paired_once(cfg, lv.clone(), &cells, &mut rng);
            paired.boots += members;
            let named = match c {
                Conclusion::Culprit { candidate } => Some(candidate),
                _ => None,
            };
            tally(&mut paired, first_bad, named, matches!(c, Conclusion::NoRegression));
            let (named, runs) = plain_once(cfg, &lv, &mut rng);
            plain.boots += runs;
            tally(&mut plain, first_bad, named, false);
        }
    }
    SimReport { config: *cfg, paired, plain }
}

fn tally(t: &mut Tally, truth: Option<usize>, named: Option<usize>, no_regression: bool) {
    match (truth, named) {
        (Some(f), Some(c)) if f == c => t.exact += 1,
        (Some(_), Some(_)) => t.wrong += 1,
        (Some(_), None) => t.no_answer += 1,
        (None, Some(_)) => t.false_culprit += 1,
        (None, None) if no_regression => t.no_regression += 1,
        (None, None) => {}
    }
}

/// The two ways side by side, as the benchmark prints them.
pub fn render(r: &SimReport) -> String {
    let c = &r.config;
    let pct = |k: usize| format!("{:.1}%", 100.0 * k as f64 / c.bisections.max(1) as f64);
    let boots = |t: &Tally| format!("{:.0}", t.boots as f64 / (2 * c.bisections).max(1) as f64);
    let rows = [
        ("culprit exactly right (true step)", pct(r.paired.exact), pct(r.plain.exact)),
        ("wrong culprit (true step)", pct(r.paired.wrong), pct(r.plain.wrong)),
        ("no culprit named (true step)", pct(r.paired.no_answer), pct(r.plain.no_answer)),
        ("\"no regression\" (no step)", pct(r.paired.no_regression), pct(r.plain.no_regression)),
        ("false culprit (no step)", pct(r.paired.false_culprit), pct(r.plain.false_culprit)),
        ("boots per bisection (mean)", boots(&r.paired), boots(&r.plain)),
    ];
    let mut out = format!(
        "{} bisections with a {:.0}% step and {} without, over {} candidates; member spread {:.0}-{:.0}% CV, \
         pair drift {:.0}%, threshold {:.0}%, {}..{} pairs per step, seed {}\n",
        c.bisections,
        (1.0 - c.step) * 100.0,
        c.bisections,
        c.candidates,
        c.noise.cv_min * 100.0,
        c.noise.cv_max * 100.0,
        c.noise.drift_cv * 100.0,
        c.threshold * 100.0,
        c.min_pairs,
        c.max_pairs,
        c.seed
    );
    out.push_str(&format!("{:<36} {:>16} {:>28}\n", "", "fsbench bisect", "git bisect + gate --bisect"));
    for (what, a, b) in rows {
        out.push_str(&format!("{what:<36} {a:>16} {b:>28}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CI-sized simulation: 100 bisections each way over 64 candidates at this
    /// machine's noise, fixed seed.
    fn small() -> SimConfig {
        SimConfig {
            candidates: 64,
            bisections: 100,
            step: 0.9,
            threshold: 0.05,
            min_pairs: super::super::DEFAULT_MIN_PAIRS,
            max_pairs: super::super::DEFAULT_MAX_PAIRS,
            seed: 36,
            noise: MACHINE_NOISE,
        }
    }

    #[test]
    fn paired_bisection_finds_a_10_percent_step_at_machine_noise_and_plain_does_not() {
        let r = simulate(&small());
        eprintln!("{}", render(&r));
        assert!(r.paired.exact >= 90, "paired exact {} of 100", r.paired.exact);
        assert!(r.paired.no_regression >= 90, "paired no-regression {} of 100", r.paired.no_regression);
        assert!(r.paired.false_culprit <= 1, "paired false culprits {}", r.paired.false_culprit);
        assert!(r.paired.wrong <= 2, "paired wrong culprits {}", r.paired.wrong);
        // Today's recipe on the same noise: one unpaired run per step sends bisections astray.
        assert!(r.plain.exact < r.paired.exact, "plain {} vs paired {}", r.plain.exact, r.paired.exact);
    }

    #[test]
    fn without_noise_both_ways_find_every_step() {
        let quiet = Noise { cv_min: 0.0, cv_max: 0.0, drift_cv: 0.0, within_cv: 0.001, repetitions: 3 };
        let r = simulate(&SimConfig { bisections: 20, candidates: 16, noise: quiet, ..small() });
        assert_eq!((r.paired.exact, r.paired.no_regression), (20, 20));
        assert_eq!(r.plain.exact, 20);
        assert_eq!(r.plain.false_culprit, 20, "git bisect run always names a commit: {:?}", r.plain);
    }
}
