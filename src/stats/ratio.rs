//! The interval of every comparison: Fieller's interval of the ratio of two means,
//! and the relative change the gate reads from it (the rule is in the module
//! documentation of [`crate::stats`]).

use serde::Serialize;

use super::distributions::t_quantile_975;
use super::summary::summarize;
use crate::model::Summary;

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

/// The relative change of `candidate` against `baseline`: `mean_c / mean_b - 1` with
/// Fieller's interval of the ratio ([`ratio_interval`]) shifted by 1; `None` when either
/// is empty.
///
/// Unbounded with fewer than two samples on a side; the point change when neither side
/// has spread. A baseline mean of zero (a step faster than the clock's microsecond) has
/// no relative change: zero on both sides is no change, anything else an unbounded one.
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
/// means. t is Student's 97.5% quantile at the Welch–Satterthwaite degrees of freedom
/// of `b - ρ̂ a`. When `ā` itself is within noise of zero (`ā² ≤ t² v_a`) the set is
/// unbounded: `(-inf, inf)`.
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

/// [`ratio_interval`] for a ratio of two positive quantities (times, loops per ms,
/// latencies), as `compare` prints it: the part of Fieller's set at or above zero. `None`
/// as for [`ratio_interval`]; otherwise `(low, high)` with `0 <= low`, and `high` infinite
/// when the set is unbounded above.
///
/// - Bounded set reaching below zero (the candidate mean within noise of zero): `[0, high]`.
/// - Baseline mean within noise of zero: the set is every ρ outside the roots of the
///   quadratic, or everything; its positive part is `[r2, inf)` when the lower root is
///   negative, else `[0, inf)` (a union `[0, r1] ∪ [r2, inf)` is stated as `[0, inf)`).
pub fn positive_ratio_interval(a: &Summary, b: &Summary) -> Option<(f64, f64)> {
    let (low, high) = ratio_interval(a, b)?;
    if low.is_finite() && high.is_finite() {
        return Some((low.max(0.0), high.max(0.0)));
    }
    // Unbounded: solve again for the exclusive set's roots.
    let (va, vb) = (a.stddev.powi(2) / a.n as f64, b.stddev.powi(2) / b.n as f64);
    let rho = if a.mean == 0.0 { 0.0 } else { b.mean / a.mean };
    let (wa, wb) = (rho * rho * va, vb);
    let df = (wa + wb).powi(2) / (wa * wa / (a.n as f64 - 1.0) + wb * wb / (b.n as f64 - 1.0));
    let t2 = t_quantile_975(df).powi(2);
    let (qa, qb, qc) = (a.mean * a.mean - t2 * va, a.mean * b.mean, b.mean * b.mean - t2 * vb);
    // qa ρ² - 2 qb ρ + qc ≤ 0 with qa ≤ 0.
    if qa == 0.0 {
        // Linear: ρ ≥ qc / (2 qb) when qb > 0.
        return Some(if qb > 0.0 { ((qc / (2.0 * qb)).max(0.0), f64::INFINITY) } else { (0.0, f64::INFINITY) });
    }
    let disc = qb * qb - qa * qc;
    if disc <= 0.0 || !disc.is_finite() {
        return Some((0.0, f64::INFINITY));
    }
    let root = disc.sqrt();
    // qa < 0: the roots in increasing order.
    let (r1, r2) = ((qb + root) / qa, (qb - root) / qa);
    Some(if r1 < 0.0 && r2 > 0.0 { (r2, f64::INFINITY) } else { (0.0, f64::INFINITY) })
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
        assert!((df - 3.8740).abs() < 1e-4, "{df}");
        let t = t_quantile_975(df);
        // Between the table's t(3) = 3.182 and t(4) = 2.776.
        assert!(t < 3.182 && t > 2.776, "{t}");
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
    fn a_ratio_of_positive_quantities_has_a_positive_or_open_interval() {
        // New users' report: a candidate within noise of zero gave `3.6655 [-5.5200, 13.1029]`.
        let (a, b) = (summarize(&[1.0, 1.1, 0.9]), summarize(&[0.2, 7.7, 0.3]));
        let (lo, hi) = ratio_interval(&a, &b).unwrap();
        assert!(lo < 0.0 && hi.is_finite(), "{lo} {hi}");
        assert_eq!(positive_ratio_interval(&a, &b), Some((0.0, hi)));
        // A baseline within noise of zero: bounded below by the upper root, open above.
        let (a, b) = (summarize(&[0.1, 2.0, 0.2]), summarize(&[5.0, 5.1, 4.9]));
        assert_eq!(ratio_interval(&a, &b), Some((f64::NEG_INFINITY, f64::INFINITY)));
        let (lo, hi) = positive_ratio_interval(&a, &b).unwrap();
        assert!(lo > 0.0 && lo < b.mean / a.mean && hi == f64::INFINITY, "{lo} {hi}");
        // Clearly positive sides: the same interval as ratio_interval.
        let (a, b) = (summarize(&[9.0, 10.0, 11.0]), summarize(&[11.0, 12.0, 13.0]));
        assert_eq!(positive_ratio_interval(&a, &b), ratio_interval(&a, &b));
    }

    #[test]
    fn fieller_covers_the_true_ratio_about_95_percent_of_the_time() {
        // 4000 experiments: 5 samples per side, reference 100 ± 15, candidate 80 ± 10.
        let mut rng = crate::rng::SplitMix64::new(13);
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
    fn the_change_interval_is_the_ratio_interval_less_one() {
        // b: mean 10, var 1 (n 3); c: mean 12, var 1 (n 3).
        let (b, c) = ([9.0, 10.0, 11.0], [11.0, 12.0, 13.0]);
        let ch = relative_change(&b, &c).unwrap();
        let (lo, hi) = ratio_interval(&summarize(&b), &summarize(&c)).unwrap();
        assert!((ch.mean - 0.2).abs() < 1e-12);
        assert!((ch.ci_low - (lo - 1.0)).abs() < 1e-12 && (ch.ci_high - (hi - 1.0)).abs() < 1e-12);
    }

    #[test]
    fn a_zero_baseline_mean_is_no_change_or_an_unbounded_one() {
        let none = Change { mean: 0.0, ci_low: 0.0, ci_high: 0.0 };
        assert_eq!(relative_change(&[0.0, 0.0], &[0.0, 0.0]), Some(none));
        let up = relative_change(&[0.0, 0.0], &[1.0, 1.0]).unwrap();
        assert_eq!((up.mean, up.ci_low, up.ci_high), (f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY));
        assert_eq!(relative_change(&[], &[1.0]), None);
        // No spread on either side: the point change.
        let flat = relative_change(&[2.0, 2.0], &[3.0, 3.0]).unwrap();
        assert_eq!((flat.ci_low, flat.ci_high), (0.5, 0.5));
    }
}
