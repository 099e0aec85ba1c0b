//! Statistics over repetitions: summaries with Student's t confidence intervals,
//! the relative change of two means with Fieller's interval (gate, compare), the
//! Holm–Bonferroni correction, and the adaptive-repetition stop rule.

use serde::Serialize;

use crate::model::{StopReason, Summary};

/// Two-sided 97.5% quantile of Student's t distribution for `df` degrees of freedom.
///
/// Exact table values up to 30, then the normal approximation with a
/// Cornish-Fisher correction (error below 1e-3 for df > 30).
pub fn t_quantile_975(df: f64) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    if df.is_nan() || df < 1.0 {
        return f64::INFINITY;
    }
    if df <= 30.0 {
        // Linear interpolation between integer degrees of freedom (Welch gives fractions).
        let lo = df.floor() as usize;
        let hi = df.ceil() as usize;
        let (a, b) = (TABLE[lo - 1], TABLE[hi.min(30) - 1]);
        return a + (b - a) * (df - lo as f64);
    }
    let z: f64 = 1.959_964;
    z + (z.powi(3) + z) / (4.0 * df) + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * df * df)
}

/// Summarise samples: median, mean, sample stddev, min, max, 95% CI of the mean, CV.
///
/// An empty slice gives a zeroed summary with `n = 0`; one sample gives a
/// zero-width interval (there is no spread to estimate).
pub fn summarize(samples: &[f64]) -> Summary {
    let n = samples.len();
    if n == 0 {
        return Summary::default();
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let median = if n % 2 == 1 { sorted[n / 2] } else { (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0 };
    let mean = samples.iter().sum::<f64>() / n as f64;
    let stddev =
        if n > 1 { (samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt() } else { 0.0 };
    let half = if n > 1 { t_quantile_975((n - 1) as f64) * stddev / (n as f64).sqrt() } else { 0.0 };
    Summary {
        n,
        median,
        mean,
        stddev,
        min: sorted[0],
        max: sorted[n - 1],
        ci95_low: mean - half,
        ci95_high: mean + half,
        cv: if mean != 0.0 { stddev / mean.abs() } else { 0.0 },
    }
}

/// Relative change of the means with its 95% confidence interval, as fractions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Change {
    /// `(mean_c - mean_b) / mean_b` (infinite, `null` in JSON, when only the baseline's mean is zero).
    #[schemars(with = "Option<f64>")]
    pub mean: f64,
    /// Lower end of the 95% interval (`-inf` with fewer than two samples on a side: `null` in JSON).
    #[schemars(with = "Option<f64>")]
    pub ci_low: f64,
    /// Upper end of the 95% interval (`null` in JSON when unbounded).
    #[schemars(with = "Option<f64>")]
    pub ci_high: f64,
}

/// The relative change of `candidate` against `baseline`; `None` when either is empty.
///
/// A baseline mean of zero (a step faster than the clock's microsecond) has no relative
/// change: zero on both sides is no change, anything else an unbounded one.
pub fn relative_change(baseline: &[f64], candidate: &[f64]) -> Option<Change> {
    if baseline.is_empty() || candidate.is_empty() {
        return None;
    }
    let (b, c) = (summarize(baseline), summarize(candidate));
    if b.mean == 0.0 {
        let nothing = b.stddev == 0.0 && c.mean == 0.0 && c.stddev == 0.0 && b.n > 1 && c.n > 1;
        return Some(if nothing {
            Change { mean: 0.0, ci_low: 0.0, ci_high: 0.0 }
        } else {
            let mean = if c.mean == 0.0 { 0.0 } else { f64::INFINITY.copysign(c.mean) };
            Change { mean, ci_low: f64::NEG_INFINITY, ci_high: f64::INFINITY }
        });
    }
    let mean = (c.mean - b.mean) / b.mean;
    if b.n < 2 || c.n < 2 {
        // One sample says nothing about noise, even when the two agree: the interval is unbounded.
        return Some(Change { mean, ci_low: f64::NEG_INFINITY, ci_high: f64::INFINITY });
    }
    let Some((low, high)) = ratio_interval(&b, &c) else {
        // No spread on either side: identical values repeated.
        return Some(Change { mean, ci_low: mean, ci_high: mean });
    };
    Some(Change { mean, ci_low: low - 1.0, ci_high: high - 1.0 })
}

/// Fieller's 95% interval of the ratio of means `mean(b) / mean(a)`, for independent
/// samples with unequal variances; `None` when a side has fewer than two samples or
/// neither has spread.
///
/// The ratio ρ is in the interval when `mean(b) - ρ mean(a)` is within t of zero:
/// `(b̄ - ρ ā)² ≤ t² (v_b + ρ² v_a)` with `v = s²/n`, a quadratic in ρ. Unlike the
/// difference of means divided by `ā` (which treats the reference mean as exact),
/// it carries the reference's own noise, so it is wider on the side where the
/// reference may be small and it never reaches below zero for two clearly positive
/// means. t has the Welch–Satterthwaite degrees of freedom of `b - ρ̂ a`. When `ā`
/// itself is within noise of zero the set is unbounded: `(-inf, inf)`.
pub fn ratio_interval(a: &Summary, b: &Summary) -> Option<(f64, f64)> {
    if a.n < 2 || b.n < 2 {
        return None;
    }
    let (va, vb) = (a.stddev.powi(2) / a.n as f64, b.stddev.powi(2) / b.n as f64);
    if va + vb == 0.0 {
        return None;
    }
    let rho = if a.mean == 0.0 { 0.0 } else { b.mean / a.mean };
    let (wa, wb) = (rho * rho * va, vb);
    let df = (wa + wb).powi(2) / (wa * wa / (a.n as f64 - 1.0) + wb * wb / (b.n as f64 - 1.0));
    let t2 = t_quantile_975(df).powi(2);
    // (ā² - t² v_a) ρ² - 2 ā b̄ ρ + (b̄² - t² v_b) ≤ 0
    let qa = a.mean * a.mean - t2 * va;
    if qa <= 0.0 {
        return Some((f64::NEG_INFINITY, f64::INFINITY));
    }
    let qb = a.mean * b.mean;
    // With qa > 0 the discriminant is t² (v_a b̄² + v_b qa) > 0.
    let root = (qb * qb - qa * (b.mean * b.mean - t2 * vb)).max(0.0).sqrt();
    Some(((qb - root) / qa, (qb + root) / qa))
}

/// Holm–Bonferroni step-down adjustment of p-values: `adjusted[i]` is compared
/// with alpha directly. `None` entries (untestable comparisons) stay `None` and do
/// not count towards the number of comparisons `m`.
///
/// Sorted ascending, `p_(k)` becomes `max_{j <= k} min(1, (m - j + 1) p_(j))`
/// (k from 1): the family-wise error rate stays at most alpha for any dependence.
pub fn holm_adjust(p: &[Option<f64>]) -> Vec<Option<f64>> {
    let mut idx: Vec<usize> = (0..p.len()).filter(|&i| p[i].is_some()).collect();
    idx.sort_by(|&a, &b| p[a].unwrap_or(1.0).total_cmp(&p[b].unwrap_or(1.0)));
    let m = idx.len();
    let mut out = vec![None; p.len()];
    let mut running = 0.0f64;
    for (k, &i) in idx.iter().enumerate() {
        let raw = p[i].unwrap_or(1.0);
        // NaN p-values (degenerate inputs) count as 1: never significant.
        let raw = if raw.is_nan() { 1.0 } else { raw };
        running = running.max(((m - k) as f64 * raw).min(1.0));
        out[i] = Some(running);
    }
    out
}

/// Relative half-width of the 95% CI of the mean (`(ci95_high - ci95_low) / 2 / |mean|`);
/// infinite with fewer than two samples or a zero mean.
pub fn relative_half_width(s: &Summary) -> f64 {
    if s.n < 2 || s.mean == 0.0 {
        return f64::INFINITY;
    }
    (s.ci95_high - s.ci95_low) / 2.0 / s.mean.abs()
}

/// The adaptive stop rule of a lat_fs cell, given its undisturbed samples so far:
/// `Some(why)` when it should stop, `None` to take another repetition.
///
/// With a CI target it stops once at least `min` (and at least 2) samples give a 95%
/// CI half-width of the mean within `ci_target` of the mean; at `max` samples it stops
/// regardless. Without a target it takes exactly `max`.
pub fn adaptive_stop(samples: &[f64], min: u32, max: u32, ci_target: Option<f64>) -> Option<StopReason> {
    let n = samples.len() as u32;
    if let Some(target) = ci_target
        && n >= min.max(2)
        && relative_half_width(&summarize(samples)) <= target
    {
        return Some(StopReason::CiTarget);
    }
    if n >= max.max(1) {
        return Some(if ci_target.is_some() { StopReason::MaxRepetitions } else { StopReason::Fixed });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fieller_endpoints_solve_the_quadratic_and_cover_the_ratio() {
        let (a, b) = (summarize(&[9.0, 10.0, 11.0]), summarize(&[11.0, 12.0, 13.0]));
        let (lo, hi) = ratio_interval(&a, &b).unwrap();
        // Welch df of b - 1.2 a: v_a = v_b = 1/3, so (1.44/3 + 1/3)² / ((1.44/3)²/2 + (1/3)²/2).
        let df = (1.44f64 / 3.0 + 1.0 / 3.0).powi(2) / ((1.44f64 / 3.0).powi(2) / 2.0 + (1.0f64 / 3.0).powi(2) / 2.0);
        let t = 3.182 + (2.776 - 3.182) * (df - 3.0);
        for rho in [lo, hi] {
            let lhs = (12.0 - rho * 10.0f64).powi(2);
            let rhs = t * t * (1.0 / 3.0 + rho * rho / 3.0);
            assert!((lhs - rhs).abs() < 1e-9, "{rho}: {lhs} vs {rhs}");
        }
        // Wider above than below: the reference's own noise.
        assert!(lo < 1.2 && hi > 1.2 && hi - 1.2 > 1.2 - lo, "{lo} {hi}");
        // The difference-over-mean interval it replaces: 0.2 ± t·sqrt(2/3)/10, symmetric.
        assert!((1.2 - lo) > 0.2 && (1.2 - lo) < 0.25, "{lo}");
    }

    #[test]
    fn a_noisy_small_ratio_stays_above_zero_and_a_noisy_reference_is_unbounded() {
        // A candidate at about a fifth of the reference, three noisy samples each: the
        // difference of means over the reference mean gave [-0.83, 1.19] here; Fieller [0.034, 0.615].
        let (a, b) = (summarize(&[1.0, 1.6, 0.7]), summarize(&[0.12, 0.3, 0.16]));
        let (lo, hi) = ratio_interval(&a, &b).unwrap();
        assert!(lo > 0.0 && lo < b.mean / a.mean && hi > b.mean / a.mean, "{lo} {hi}");
        // A reference whose mean is within noise of zero bounds nothing.
        let (a, b) = (summarize(&[-1.0, 0.5, 1.5]), summarize(&[1.0, 1.1, 0.9]));
        assert_eq!(ratio_interval(&a, &b), Some((f64::NEG_INFINITY, f64::INFINITY)));
        // One sample, or no spread anywhere: no interval.
        assert_eq!(ratio_interval(&summarize(&[1.0]), &b), None);
        assert_eq!(ratio_interval(&summarize(&[1.0, 1.0]), &summarize(&[2.0, 2.0])), None);
    }

    #[test]
    fn fieller_covers_the_true_ratio_about_95_percent_of_the_time() {
        // 4000 experiments: 5 samples per side, reference 100 ± 15, candidate 80 ± 10.
        let mut rng = crate::fixture::rng::SplitMix64::new(13);
        let mut draw = |mean: f64, sd: f64| -> Summary {
            summarize(&(0..5).map(|_| mean + sd * rng.normal()).collect::<Vec<_>>())
        };
        let trials = 4000;
        let covered = (0..trials)
            .filter(|_| {
                let (a, b) = (draw(100.0, 15.0), draw(80.0, 10.0));
                let (lo, hi) = ratio_interval(&a, &b).unwrap();
                lo <= 0.8 && 0.8 <= hi
            })
            .count();
        let rate = covered as f64 / trials as f64;
        // The binomial sd of the rate is 0.35%; Welch's df makes the interval nearly exact.
        assert!((0.93..=0.97).contains(&rate), "coverage {rate}");
    }

    #[test]
    fn summary_of_known_samples() {
        let s = summarize(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!(s.n, 8);
        assert_eq!(s.median, 4.5);
        assert_eq!(s.mean, 5.0);
        assert!((s.stddev - 2.138_089_935).abs() < 1e-6);
        assert_eq!((s.min, s.max), (2.0, 9.0));
        // t(7) = 2.365; half width = 2.365 * 2.138 / sqrt(8) = 1.7877
        assert!((s.ci95_high - 6.7877).abs() < 1e-3, "{}", s.ci95_high);
        assert!((s.cv - 0.4276).abs() < 1e-3);
    }

    #[test]
    fn single_and_empty_samples_do_not_divide_by_zero() {
        let s = summarize(&[3.0]);
        assert_eq!((s.mean, s.stddev, s.ci95_low, s.ci95_high), (3.0, 0.0, 3.0, 3.0));
        assert_eq!(summarize(&[]).n, 0);
    }

    #[test]
    fn holm_matches_a_hand_computed_example() {
        // m = 4 testable: sorted 0.01, 0.02, 0.03, 0.04 -> 0.04, 0.06, 0.06, 0.06.
        let adj = holm_adjust(&[Some(0.03), None, Some(0.01), Some(0.04), Some(0.02)]);
        let want = [Some(0.06), None, Some(0.04), Some(0.06), Some(0.06)];
        for (a, w) in adj.iter().zip(want) {
            match (a, w) {
                (Some(a), Some(w)) => assert!((a - w).abs() < 1e-12, "{adj:?}"),
                (None, None) => {}
                _ => panic!("{adj:?}"),
            }
        }
        // Four comparisons at p = 0.02 each: each alone is significant at 0.05, none after Holm.
        assert!(holm_adjust(&[Some(0.02); 4]).iter().all(|p| p.unwrap() > 0.05));
        // One very small p survives; order and monotonicity hold; capped at 1.
        let adj = holm_adjust(&[Some(0.9), Some(0.0001), Some(0.5)]);
        assert!(adj[1].unwrap() < 0.05 && adj[0].unwrap() == 1.0 && adj[2].unwrap() >= adj[1].unwrap());
        assert_eq!(holm_adjust(&[Some(0.01)]), vec![Some(0.01)]);
        assert!(holm_adjust(&[]).is_empty());
    }

    #[test]
    fn adaptive_stop_rule() {
        use StopReason::*;
        let tight = [1000.0, 1001.0, 999.0, 1000.5];
        let wide = [1000.0, 1300.0, 700.0, 1150.0];
        // Tight samples reach 2% once `min` is met, not before.
        assert_eq!(adaptive_stop(&tight[..2], 3, 20, Some(0.02)), None);
        assert_eq!(adaptive_stop(&tight[..3], 3, 20, Some(0.02)), Some(CiTarget));
        // Wide ones keep going until max.
        assert_eq!(adaptive_stop(&wide, 3, 20, Some(0.02)), None);
        assert_eq!(adaptive_stop(&wide, 3, 4, Some(0.02)), Some(MaxRepetitions));
        // One sample has no spread: never the CI target, even with min = 1.
        assert_eq!(adaptive_stop(&tight[..1], 1, 20, Some(0.5)), None);
        // A fixed count.
        assert_eq!(adaptive_stop(&wide[..3], 0, 4, None), None);
        assert_eq!(adaptive_stop(&wide, 0, 4, None), Some(Fixed));
        // The half-width is relative: t(2) * s / sqrt(3) / mean for the first three tight samples.
        let s = summarize(&tight[..3]);
        assert!((relative_half_width(&s) - 4.303 * 1.0 / 3f64.sqrt() / 1000.0).abs() < 1e-9);
    }

    #[test]
    fn t_quantile_matches_tables() {
        assert_eq!(t_quantile_975(1.0), 12.706);
        assert!((t_quantile_975(40.0) - 2.021).abs() < 2e-3);
        assert!((t_quantile_975(120.0) - 1.980).abs() < 2e-3);
        assert!((t_quantile_975(4.5) - (2.776 + 2.571) / 2.0).abs() < 1e-9);
    }
}
