//! Intervals of a comparison of two separate runs that carry the spread between runs:
//! the calibrated interval ([`calibrated_change`]) and the prediction interval of a
//! candidate against a history ([`history_change`]). Both are on the log scale: the
//! statistic is the ratio of geometric means, the change `exp(d) − 1`.

use super::distributions::t_quantile_975;
use super::ratio::Change;

/// One side of a calibrated comparison: its samples and the rounds they came from.
#[derive(Debug, Clone, Copy)]
pub struct RunSide<'a> {
    /// The samples (a round-one cell's repetitions, or a multi-round cell's round means).
    pub samples: &'a [f64],
    /// Rounds the samples span (1: they are repetitions of one provisioning).
    pub rounds: u32,
}

/// The calibrated variances one comparison needs (log scale), each with its degrees of freedom.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BetweenRunSpread {
    /// Between repetitions of one round, and its degrees of freedom.
    pub repetition: (f64, usize),
    /// Between rounds of one run (provisioning).
    pub round: (f64, usize),
    /// Between runs.
    pub run: (f64, usize),
}

/// Whether `x` has a logarithm: finite and above zero (NaN is not).
fn positive(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

/// Sample mean and variance (`n − 1`) of `v`.
fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = if v.len() > 1 { v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0) } else { 0.0 };
    (m, var)
}

/// The relative change of `candidate` against `baseline`, two separate runs, with a 95%
/// interval that carries the calibrated spread between runs. `None` when a side is empty
/// or has a value that is not positive (no logarithm).
///
/// On the log scale, `d = mean ln c − mean ln b`, and under the nested model (stated in
/// [`crate::stats::variance_components`]) the variance of each side's mean is its
/// within-run part plus what one run cannot show:
/// - within-run part: `s²/n` of the side's log samples; with one sample, the calibrated
///   `σ²_rep` (one repetition of one round);
/// - plus `σ²_round` when the side ran one round (its repetitions share one provisioning);
/// - plus `σ²_run`.
///
/// So `Var(d) = w_b + w_c + 2 σ²_run (+ σ²_round per one-round side)`, and the interval is
/// `exp(d ± t·sqrt(Var(d))) − 1`, t Student's 97.5% quantile at the Welch–Satterthwaite
/// degrees of freedom of those terms (each sample variance with `n − 1`, each calibrated
/// variance with its level's degrees of freedom). A zero calibrated variance contributes
/// nothing; a variance with no degrees of freedom makes the interval unbounded.
pub fn calibrated_change(baseline: RunSide, candidate: RunSide, spread: &BetweenRunSpread) -> Option<Change> {
    if baseline.samples.is_empty() || candidate.samples.is_empty() {
        return None;
    }
    if !baseline.samples.iter().chain(candidate.samples).all(|x| positive(*x)) {
        return None;
    }
    let logs = |s: &[f64]| s.iter().map(|x| x.ln()).collect::<Vec<_>>();
    let (lb, lc) = (logs(baseline.samples), logs(candidate.samples));
    let ((mb, vb), (mc, vc)) = (mean_var(&lb), mean_var(&lc));
    let d = mc - mb;
    // (variance term, degrees of freedom)
    let mut terms: Vec<(f64, f64)> = Vec::new();
    for (side, logs, var) in [(baseline, &lb, vb), (candidate, &lc, vc)] {
        if logs.len() > 1 {
            terms.push((var / logs.len() as f64, (logs.len() - 1) as f64));
        } else {
            terms.push((spread.repetition.0, spread.repetition.1 as f64));
        }
        if side.rounds < 2 {
            terms.push((spread.round.0, spread.round.1 as f64));
        }
        terms.push((spread.run.0, spread.run.1 as f64));
    }
    let total: f64 = terms.iter().map(|(v, _)| v).sum();
    let point = d.exp_m1();
    if total == 0.0 {
        return Some(Change { mean: point, ci_low: point, ci_high: point });
    }
    let denom: f64 = terms.iter().filter(|(v, _)| *v > 0.0).map(|(v, df)| v * v / df).sum();
    let df = if denom > 0.0 { total * total / denom } else { f64::INFINITY };
    let half = t_quantile_975(df) * total.sqrt();
    Some(Change { mean: point, ci_low: (d - half).exp_m1(), ci_high: (d + half).exp_m1() })
}

/// The candidate's change against a history of runs' means, with a 95% prediction
/// interval: `d = ln c − mean ln h`, `d ± t(N−1) · s · sqrt(1 + 1/N)`, s the sample
/// standard deviation of the history's log means and N their number; the change is
/// `exp(d) − 1` and its ends likewise. `None` with fewer than two history means or a value
/// that is not positive.
///
/// The interval says where a new run of the same build would fall, given the spread the
/// history's runs show between them: the candidate's own noise is in that spread.
pub fn history_change(history_means: &[f64], candidate_mean: f64) -> Option<Change> {
    history_change_floored(history_means, candidate_mean, None)
}

/// [`history_change`] with the spread of one run's log mean never taken below `floor`
/// (a variance with its degrees of freedom, e.g. a calibration's): where the floor is the
/// larger, `s² = floor` and `t` is at the floor's degrees of freedom (none: unbounded).
///
/// A history made in one burst shows the spread of minutes, not of the days a gate spans;
/// a calibrated spread between runs bounds it from below.
pub fn history_change_floored(
    history_means: &[f64],
    candidate_mean: f64,
    floor: Option<(f64, usize)>,
) -> Option<Change> {
    if history_means.len() < 2 || !history_means.iter().chain([&candidate_mean]).all(|x| positive(*x)) {
        return None;
    }
    let logs: Vec<f64> = history_means.iter().map(|x| x.ln()).collect();
    let (m, mut var) = mean_var(&logs);
    let n = logs.len() as f64;
    let mut df = n - 1.0;
    if let Some((fv, fdf)) = floor.filter(|(fv, _)| *fv > var) {
        (var, df) = (fv, fdf as f64);
    }
    let d = candidate_mean.ln() - m;
    let t = if df > 0.0 { t_quantile_975(df) } else { f64::INFINITY };
    let half = t * var.sqrt() * (1.0 + 1.0 / n).sqrt();
    Some(Change { mean: d.exp_m1(), ci_low: (d - half).exp_m1(), ci_high: (d + half).exp_m1() })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: BetweenRunSpread = BetweenRunSpread { repetition: (0.0, 10), round: (0.0, 10), run: (0.0, 10) };

    #[test]
    fn the_calibrated_interval_adds_twice_the_run_variance() {
        // Baseline ln values 0 ± 0.01, candidate ln(0.9) ± 0.01, 4 each, one round.
        let b: Vec<f64> = [0.01, -0.01, 0.01, -0.01].iter().map(|x: &f64| x.exp()).collect();
        let c: Vec<f64> = b.iter().map(|x| x * 0.9).collect();
        let side = |s| RunSide { samples: s, rounds: 1 };
        let spread = BetweenRunSpread { repetition: (1e-4, 20), round: (0.0, 0), run: (0.0025, 8) };
        let ch = calibrated_change(side(&b), side(&c), &spread).unwrap();
        assert!((ch.mean - (-0.1)).abs() < 1e-12, "{ch:?}");
        // Var(d) = 2 × (s²/4) + 2 × 0.0025, s² = 4 × 1e-4 / 3.
        let w = 1e-4 * 4.0 / 3.0 / 4.0;
        let total = 2.0 * w + 2.0 * 0.0025;
        let df = total * total / (2.0 * w * w / 3.0 + 2.0 * 0.0025f64.powi(2) / 8.0);
        let half = t_quantile_975(df) * total.sqrt();
        let d = 0.9f64.ln();
        assert!((ch.ci_low - ((d - half).exp() - 1.0)).abs() < 1e-12, "{ch:?}");
        assert!((ch.ci_high - ((d + half).exp() - 1.0)).abs() < 1e-12, "{ch:?}");
        // Without between-run spread the interval is the within-run one only: narrower.
        let within = calibrated_change(side(&b), side(&c), &NONE).unwrap();
        assert!(within.ci_high - within.ci_low < (ch.ci_high - ch.ci_low) / 5.0, "{within:?} {ch:?}");
        // A one-round side adds σ²_round; a multi-round side does not.
        let with_round = BetweenRunSpread { round: (0.0025, 8), ..spread };
        let one = calibrated_change(side(&b), side(&c), &with_round).unwrap();
        let many =
            calibrated_change(RunSide { samples: &b, rounds: 4 }, RunSide { samples: &c, rounds: 4 }, &with_round)
                .unwrap();
        assert!(one.ci_high - one.ci_low > many.ci_high - many.ci_low);
        assert_eq!(many, ch);
    }

    #[test]
    fn single_samples_use_the_calibrated_repetition_variance_and_bad_values_give_none() {
        let spread = BetweenRunSpread { repetition: (1e-4, 20), round: (1e-4, 6), run: (1e-4, 4) };
        let one = |s| RunSide { samples: s, rounds: 1 };
        let ch = calibrated_change(one(&[100.0]), one(&[100.0]), &spread).unwrap();
        assert!(ch.ci_low < 0.0 && ch.ci_high > 0.0 && ch.ci_high.is_finite(), "{ch:?}");
        assert!(calibrated_change(one(&[0.0, 1.0]), one(&[1.0, 1.0]), &spread).is_none());
        assert!(calibrated_change(one(&[]), one(&[1.0]), &spread).is_none());
        // A calibrated level with variance but no degrees of freedom bounds nothing.
        let unknown = BetweenRunSpread { run: (1e-4, 0), ..spread };
        let ch = calibrated_change(one(&[100.0, 101.0]), one(&[100.0, 99.0]), &unknown).unwrap();
        assert!(ch.ci_low == -1.0 && ch.ci_high == f64::INFINITY, "{ch:?}");
    }

    #[test]
    fn the_history_interval_is_a_prediction_interval() {
        // ln means 0, 0.02, −0.02, 0.01, −0.01 → mean 0, s² = 0.001/4.
        let h: Vec<f64> = [0.0f64, 0.02, -0.02, 0.01, -0.01].iter().map(|x| x.exp()).collect();
        let ch = history_change(&h, 0.9).unwrap();
        let half = t_quantile_975(4.0) * (0.001f64 / 4.0).sqrt() * (1.2f64).sqrt();
        let d = 0.9f64.ln();
        assert!((ch.mean + 0.1).abs() < 1e-12);
        assert!((ch.ci_low - (d - half).exp_m1()).abs() < 1e-12 && (ch.ci_high - (d + half).exp_m1()).abs() < 1e-12);
        assert!(history_change(&h[..1], 1.0).is_none() && history_change(&h, 0.0).is_none());
        // A floor above the history's own spread takes its place, at the floor's degrees of freedom.
        let floored = history_change_floored(&h, 0.9, Some((0.01, 5))).unwrap();
        let half = t_quantile_975(5.0) * 0.1 * (1.2f64).sqrt();
        assert!((floored.ci_low - (d - half).exp_m1()).abs() < 1e-12, "{floored:?}");
        assert_eq!(
            history_change_floored(&h, 0.9, Some((1e-9, 5))),
            Some(ch),
            "a floor below the spread changes nothing"
        );
    }
}
