//! Rounds × repetitions that decide a threshold within a time budget, from a calibration
//! (Kalibera & Jones, "Rigorous Benchmarking in Reasonable Time", ISMM 2013).
//!
//! lat_fs: with `σ²_rep`, `σ²_round` the calibrated variances and `c_rep`, `c_round` the
//! seconds a repetition and a round's provisioning cost, the repetitions per round that give
//! the narrowest interval for the time are `k* = sqrt(c_round · σ²_rep / (c_rep · σ²_round))`
//! (rounded, at least 1; when no round variance was seen, the fewest repetitions that
//! decide in two rounds). Then the rounds: the fewest `R ≥ 2` whose gate interval (two runs
//! of `R` rounds, on the rounds' means) has a half-width under the threshold,
//! `t(2R − 2) · sqrt(2 (σ²_round + σ²_rep / k*) / R) ≤ ln(1 + T)`. A run of the cell then
//! costs `R (c_round + k* c_rep)` seconds, set against the budget's share of the cell.
//!
//! steps: cells run one round, so two runs differ by the run level too: the fewest
//! iterations `K` with `t(df_run) · sqrt(2 (σ²_run + σ²_rep / K)) ≤ ln(1 + T)`, or none when
//! the run level alone is too wide (then only paired runs decide).

use super::CellCalibration;
use crate::stats::t_quantile_975;

/// Largest rounds or repetitions a plan proposes.
const MOST: u32 = 1000;

/// What one cell (or step) needs to decide the threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct CellPlan {
    /// Row name.
    pub name: String,
    /// Repetitions per round (lat_fs) or iterations per run (steps); `None`: no plan decides.
    pub repetitions: Option<u32>,
    /// Rounds per run (lat_fs); `None` for steps.
    pub rounds: Option<u32>,
    /// Seconds one run of the cell takes with this plan.
    pub seconds: f64,
    /// Half-width of the gate's 95% interval with this plan, as a fraction (`exp(h) − 1`).
    pub half_width: f64,
    /// Whether `seconds` fits the cell's share of the budget.
    pub fits: bool,
}

fn rounds_needed(c: &CellCalibration, k: u32, limit: f64) -> Option<(u32, f64)> {
    let (rep, round) = (c.levels.repetition.variance, c.levels.round.variance);
    (2..=MOST).find_map(|r| {
        let h = t_quantile_975((2 * r - 2) as f64) * (2.0 * (round + rep / k as f64) / r as f64).sqrt();
        (h <= limit).then_some((r, h))
    })
}

/// The plan of one calibrated quantity at `threshold` (a fraction) with `budget_seconds`
/// for one run of it.
pub fn plan_cell(c: &CellCalibration, threshold: f64, budget_seconds: f64) -> CellPlan {
    let limit = threshold.abs().ln_1p();
    let l = &c.levels;
    let (c_rep, c_round) = (c.repetition_seconds.max(1e-3), c.round_seconds.max(0.0));
    if c.metric == crate::catalogue::Metric::Elapsed.name() {
        let t = t_quantile_975(l.run.df.max(1) as f64);
        let found = (1..=MOST).find_map(|k| {
            let h = t * (2.0 * (l.run.variance + l.repetition.variance / k as f64)).sqrt();
            (h <= limit).then_some((k, h))
        });
        return match found {
            Some((k, h)) => {
                let seconds = k as f64 * c_rep;
                CellPlan {
                    name: c.name.clone(),
                    repetitions: Some(k),
                    rounds: None,
                    seconds,
                    half_width: h.exp_m1(),
                    fits: seconds <= budget_seconds,
                }
            }
            None => {
                let h = t * (2.0 * l.run.variance).sqrt();
                CellPlan {
                    name: c.name.clone(),
                    repetitions: None,
                    rounds: None,
                    seconds: f64::INFINITY,
                    half_width: h.exp_m1(),
                    fits: false,
                }
            }
        };
    }
    let k = if l.round.variance > 0.0 && l.repetition.variance > 0.0 {
        ((c_round * l.repetition.variance / (c_rep * l.round.variance)).sqrt().round() as u32).clamp(1, MOST)
    } else if l.repetition.variance == 0.0 {
        1
    } else {
        // No round variance seen: repetitions are all that narrows; the fewest that decide in two rounds.
        (1..=MOST).find(|&k| rounds_needed(c, k, limit).is_some_and(|(r, _)| r == 2)).unwrap_or(MOST)
    };
    match rounds_needed(c, k, limit) {
        Some((r, h)) => {
            let seconds = r as f64 * (c_round + k as f64 * c_rep);
            CellPlan {
                name: c.name.clone(),
                repetitions: Some(k),
                rounds: Some(r),
                seconds,
                half_width: h.exp_m1(),
                fits: seconds <= budget_seconds,
            }
        }
        None => CellPlan {
            name: c.name.clone(),
            repetitions: None,
            rounds: None,
            seconds: f64::INFINITY,
            half_width: f64::INFINITY,
            fits: false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::variance_components::{LevelVariance, VarianceComponents};

    fn cell(metric: &str, rep: f64, round: f64, run: f64, c_rep: f64, c_round: f64) -> CellCalibration {
        let lv = |variance, df| LevelVariance { variance, n: df + 1, df };
        CellCalibration {
            name: "c".into(),
            metric: metric.into(),
            key: String::new(),
            levels: VarianceComponents { repetition: lv(rep, 40), round: lv(round, 10), run: lv(run, 4), mean: 0.0 },
            repetition_seconds: c_rep,
            round_seconds: c_round,
        }
    }

    #[test]
    fn kalibera_jones_repetitions_and_the_rounds_that_follow() {
        // σ_rep 6%, σ_round 2%, a round costs 4 s, a repetition 1 s: k* = sqrt(4 · 0.0036 / 0.0004) = 6.
        let c = cell("total_loops", 0.0036, 0.0004, 0.0, 1.0, 4.0);
        let p = plan_cell(&c, 0.05, 600.0);
        assert_eq!(p.repetitions, Some(6));
        // Var per round mean 0.0004 + 0.0006 = 0.001; R with t(2R−2)·sqrt(0.002/R) ≤ ln 1.05.
        let r = p.rounds.unwrap();
        let h = |r: u32| t_quantile_975((2 * r - 2) as f64) * (0.002 / r as f64).sqrt();
        assert!(h(r) <= 0.05f64.ln_1p() && h(r - 1) > 0.05f64.ln_1p(), "{p:?}");
        assert!((p.seconds - r as f64 * 10.0).abs() < 1e-9 && p.fits);
        assert!(!plan_cell(&c, 0.05, 10.0).fits);
    }

    #[test]
    fn steps_are_bounded_by_the_run_level() {
        // σ_run 1%: a few iterations decide 5%; σ_run 10%: nothing does.
        let quiet = plan_cell(&cell("elapsed", 0.0025, 0.0, 0.0001, 2.0, 0.0), 0.05, 600.0);
        assert!(quiet.repetitions.is_some() && quiet.rounds.is_none() && quiet.fits, "{quiet:?}");
        let loud = plan_cell(&cell("elapsed", 0.0025, 0.0, 0.01, 2.0, 0.0), 0.05, 600.0);
        assert_eq!((loud.repetitions, loud.fits), (None, false));
    }
}
