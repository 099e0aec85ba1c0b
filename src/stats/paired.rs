//! Paired comparisons: arm A and arm B measured back to back, one pair at a time.
//!
//! Each pair gives one log ratio `d = ln(candidate / baseline)`; everything below is a
//! statistic of those `d`, so the machine's slow moments, shared by both members of a
//! pair, cancel instead of widening the interval.
//!
//! - **Ratio** ([`paired_change`]): `exp(mean d)`, the ratio of the geometric means of
//!   the two arms, with Student's t interval `exp(mean d ± t(n-1, α) s_d / √n)`. It is
//!   reported as a [`Change`] (ratio less 1), so the gate's verdict rule reads it as it
//!   reads an unpaired interval. Fewer than two pairs bound nothing.
//! - **Robustness check** ([`wilcoxon`]): Wilcoxon's signed-rank test on the `d`, with the
//!   Hodges–Lehmann estimate (median of the Walsh averages) and its distribution-free
//!   interval `[W(C+1), W(M-C)]` (M = n(n+1)/2 sorted Walsh averages, C the test's
//!   two-sided critical value from the exact null distribution). It needs 6 pairs: below
//!   that no rank sum can reach 5% two-sided (the smallest p at n = 5 is 1/16), so it is
//!   `None` and reports say "needs ≥ 6 pairs". Zero differences are dropped (Wilcoxon's
//!   rule) and tied magnitudes get their mean rank; the exact null distribution is used up
//!   to [`EXACT_WILCOXON_MAX`] pairs, the normal approximation above.
//!
//! # Sequential pairs and the error rate
//!
//! A pair group looks at its verdict more than once (after `min` pairs, then as pairs
//! arrive), and every look is another chance for a 95% interval to miss: stopping at the
//! first decided look would call a false `regressed` far more often than 5%. The rule
//! ([`look_schedule`], [`alpha_per_look`]) is a fixed schedule of looks with a Bonferroni
//! split of α = 5% across them:
//! - looks happen at `min` pairs, then each look at 1.5 times the pairs of the one before
//!   (rounded up), and always at `max` (6, 9, 14, 21, 32 for the default 6..32);
//! - every look uses the interval at level `1 - 0.05 / K`, K the number of looks the
//!   schedule has (5 looks: 99% intervals), also the final one;
//! - by Bonferroni's inequality, the chance that *any* look's interval misses the true
//!   ratio is at most 5%, so each verdict a group stops with (`regressed`, `improved` or
//!   `unchanged`, all read from that interval) is wrong with probability at most 5%,
//!   however early it stopped. The price is a wider interval at a fixed count than one
//!   look would need; the gain is stopping as soon as the data decide.
//!
//! The gate on a paired run reads each group at the same level, so it gives the verdict
//! that stopped the group.

use serde::Serialize;

use super::distributions::{student_t_two_sided_p, t_critical};
use super::ratio::Change;
use super::summary::median;

/// Overall two-sided error rate of a paired verdict, split across the looks.
pub const PAIRED_ALPHA: f64 = 0.05;

/// Fewest pairs for which Wilcoxon's test can reach 5% two-sided.
pub const WILCOXON_MIN_PAIRS: usize = 6;

/// Most pairs for which the signed-rank null distribution is computed exactly.
pub const EXACT_WILCOXON_MAX: usize = 100;

/// `ln(candidate / baseline)` of every pair in which both members are positive and finite
/// (a pair with a zero or missing member has no ratio and is left out).
pub fn log_ratios(baseline: &[f64], candidate: &[f64]) -> Vec<f64> {
    baseline
        .iter()
        .zip(candidate)
        .filter(|(b, c)| b.is_finite() && c.is_finite() && **b > 0.0 && **c > 0.0)
        .map(|(b, c)| (c / b).ln())
        .collect()
}

/// The paired change of `candidate` against `baseline` (pair i is `baseline[i]`,
/// `candidate[i]`) at two-sided level `alpha`: the ratio of geometric means less 1 and its
/// t interval, shifted by 1 (see the module documentation); `None` without a single usable
/// pair.
///
/// One pair, or pairs with no spread, give an unbounded interval or the point itself.
pub fn paired_change(baseline: &[f64], candidate: &[f64], alpha: f64) -> Option<Change> {
    change_of_log_ratios(&log_ratios(baseline, candidate), alpha)
}

/// [`paired_change`] from the log ratios themselves.
pub fn change_of_log_ratios(d: &[f64], alpha: f64) -> Option<Change> {
    let n = d.len();
    if n == 0 {
        return None;
    }
    let mean = d.iter().sum::<f64>() / n as f64;
    let point = mean.exp() - 1.0;
    if n < 2 {
        return Some(Change { mean: point, ci_low: f64::NEG_INFINITY, ci_high: f64::INFINITY });
    }
    let sd = (d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
    let half = t_critical(alpha, (n - 1) as f64) * sd / (n as f64).sqrt();
    Some(Change { mean: point, ci_low: (mean - half).exp() - 1.0, ci_high: (mean + half).exp() - 1.0 })
}

/// The two-sided p-value of the paired t test of the mean log ratio against
/// `ln(1 + bound)` (a ratio less 1, as a threshold is), read back from a paired change `c`
/// whose interval [`change_of_log_ratios`] made at level `1 - alpha` from `n` pairs: it is
/// below `alpha` exactly when that interval excludes `bound`, so Holm's adjustment
/// ([`crate::stats::holm_adjust`]) can judge several paired verdicts together. `None`
/// when the interval bounds nothing (fewer than two pairs).
pub fn paired_p_against(c: Change, alpha: f64, n: usize, bound: f64) -> Option<f64> {
    let (mean, high) = ((1.0 + c.mean).ln(), (1.0 + c.ci_high).ln());
    let half = high - mean;
    let crit = t_critical(alpha, n.checked_sub(1)? as f64);
    if n < 2 || !half.is_finite() || !crit.is_finite() || !mean.is_finite() {
        return None;
    }
    let distance = mean - (1.0 + bound).ln();
    if half <= 0.0 {
        // No spread: the interval is the point itself.
        return Some(if distance == 0.0 { 1.0 } else { 0.0 });
    }
    Some(student_t_two_sided_p(distance / (half / crit), (n - 1) as f64))
}

/// Two-sided p of the one-sample t test that the mean of paired differences `d` is 0
/// (`t = mean / (s / √n)`, n-1 degrees of freedom): `None` below two differences; with no
/// spread, 1 for a zero mean and 0 otherwise.
pub fn mean_difference_p(d: &[f64]) -> Option<f64> {
    if d.len() < 2 {
        return None;
    }
    let s = super::summarize(d);
    if s.stddev == 0.0 {
        return Some(if s.mean == 0.0 { 1.0 } else { 0.0 });
    }
    let t = s.mean / (s.stddev / (s.n as f64).sqrt());
    Some(super::student_t_two_sided_p(t, (s.n - 1) as f64))
}

/// Wilcoxon's signed-rank test with the Hodges–Lehmann interval, as ratios less 1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SignedRank {
    /// Pairs with a non-zero log ratio (the test's n).
    pub n: usize,
    /// Sum of the ranks of the positive log ratios (R's `V`).
    pub w_plus: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// Hodges–Lehmann estimate of the ratio, less 1: `exp(median of Walsh averages) - 1`.
    pub hl: f64,
    /// Lower end of its 95% distribution-free interval, less 1.
    pub ci_low: f64,
    /// Upper end, less 1.
    pub ci_high: f64,
}

/// Wilcoxon's signed-rank test and Hodges–Lehmann interval of the log ratios `d` at
/// two-sided level `alpha`; `None` below [`WILCOXON_MIN_PAIRS`] non-zero ratios.
pub fn wilcoxon(d: &[f64], alpha: f64) -> Option<SignedRank> {
    let (w_plus, n) = signed_rank_sum(d);
    if n < WILCOXON_MIN_PAIRS {
        return None;
    }
    let m = n * (n + 1) / 2;
    let walsh = walsh_averages(d);
    let c = critical_value(n, alpha);
    // [W(C+1), W(M-C)], 1-based: the values between which the rank sum stays inside its
    // acceptance region.
    let (low, high) = match c {
        Some(c) => (walsh[c], walsh[m - c - 1]),
        None => (f64::NEG_INFINITY, f64::INFINITY),
    };
    let lower_tail = null_cdf(n, w_plus.min(m as f64 - w_plus));
    Some(SignedRank {
        n,
        w_plus,
        p: (2.0 * lower_tail).min(1.0),
        hl: median(&walsh).exp() - 1.0,
        ci_low: low.exp() - 1.0,
        ci_high: high.exp() - 1.0,
    })
}

/// `W+` (mean ranks for tied magnitudes) and the number of non-zero values.
fn signed_rank_sum(d: &[f64]) -> (f64, usize) {
    let mut nz: Vec<f64> = d.iter().copied().filter(|x| *x != 0.0 && x.is_finite()).collect();
    nz.sort_by(|a, b| a.abs().total_cmp(&b.abs()));
    let mut w_plus = 0.0;
    let mut i = 0;
    while i < nz.len() {
        let mut j = i;
        while j + 1 < nz.len() && nz[j + 1].abs() == nz[i].abs() {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        w_plus += rank * nz[i..=j].iter().filter(|x| **x > 0.0).count() as f64;
        i = j + 1;
    }
    (w_plus, nz.len())
}

/// The sorted Walsh averages `(d_i + d_j) / 2`, `i ≤ j`, of the non-zero values.
fn walsh_averages(d: &[f64]) -> Vec<f64> {
    let nz: Vec<f64> = d.iter().copied().filter(|x| *x != 0.0 && x.is_finite()).collect();
    let mut w = Vec::with_capacity(nz.len() * (nz.len() + 1) / 2);
    for i in 0..nz.len() {
        for j in i..nz.len() {
            w.push((nz[i] + nz[j]) / 2.0);
        }
    }
    w.sort_by(|a, b| a.total_cmp(b));
    w
}

/// `P(W ≤ k)` for each k = 0..=n(n+1)/2 under the null (each rank's sign a fair coin).
fn null_distribution(n: usize) -> Vec<f64> {
    let m = n * (n + 1) / 2;
    let mut p = vec![0.0; m + 1];
    p[0] = 1.0;
    for r in 1..=n {
        // Adding rank r: half the mass stays, half moves up by r.
        for k in (0..=m).rev() {
            let moved = if k >= r { p[k - r] } else { 0.0 };
            p[k] = (p[k] + moved) / 2.0;
        }
    }
    let mut acc = 0.0;
    p.iter()
        .map(|x| {
            acc += x;
            acc
        })
        .collect()
}

/// `P(W ≤ w)` under the null: exact up to [`EXACT_WILCOXON_MAX`], else the normal
/// approximation with continuity correction.
fn null_cdf(n: usize, w: f64) -> f64 {
    if n <= EXACT_WILCOXON_MAX {
        let cdf = null_distribution(n);
        return cdf.get(w.floor().max(0.0) as usize).copied().unwrap_or(1.0);
    }
    let nf = n as f64;
    let mean = nf * (nf + 1.0) / 4.0;
    let sd = (nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0).sqrt();
    use statrs::distribution::{ContinuousCDF, Normal};
    Normal::standard().cdf((w + 0.5 - mean) / sd)
}

/// The two-sided critical value C at level `alpha`: the largest rank sum with
/// `P(W ≤ C) ≤ alpha / 2`; `None` when even `W = 0` is more likely than that.
pub fn critical_value(n: usize, alpha: f64) -> Option<usize> {
    let m = n * (n + 1) / 2;
    if n <= EXACT_WILCOXON_MAX {
        let cdf = null_distribution(n);
        return cdf.iter().take_while(|p| **p <= alpha / 2.0 + 1e-12).count().checked_sub(1);
    }
    (0..=m).take_while(|k| null_cdf(n, *k as f64) <= alpha / 2.0).last()
}

/// The pair counts at which a group with `min..=max` pairs looks at its verdict: `min`,
/// then 1.5 times the previous look (rounded up), then `max`.
pub fn look_schedule(min: u32, max: u32) -> Vec<u32> {
    let (min, max) = (min.max(1), max.max(min.max(1)));
    let mut looks = vec![min];
    let mut n = min;
    while n < max {
        n = ((n as f64 * 1.5).ceil() as u32).max(n + 1).min(max);
        looks.push(n);
    }
    looks
}

/// The two-sided level each look's interval uses: [`PAIRED_ALPHA`] split evenly over the
/// looks of [`look_schedule`] (Bonferroni).
pub fn alpha_per_look(min: u32, max: u32) -> f64 {
    PAIRED_ALPHA / look_schedule(min, max).len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_p_against_a_bound_is_below_alpha_exactly_when_the_interval_excludes_it() {
        let d = [-0.12, -0.08, -0.10, -0.15, -0.05, -0.11, -0.09];
        let alpha = 0.01;
        let c = change_of_log_ratios(&d, alpha).unwrap();
        for bound in [-0.2, -0.15, c.ci_low - 1e-6, c.ci_low + 1e-6, -0.1, c.ci_high - 1e-6, c.ci_high + 1e-6, 0.0] {
            let p = paired_p_against(c, alpha, d.len(), bound).unwrap();
            let excluded = bound < c.ci_low || bound > c.ci_high;
            assert_eq!(p < alpha, excluded, "bound {bound}: p {p}, interval [{}, {}]", c.ci_low, c.ci_high);
        }
        // Against its own point estimate the test cannot reject.
        assert!((paired_p_against(c, alpha, d.len(), c.mean).unwrap() - 1.0).abs() < 1e-9);
        assert_eq!(paired_p_against(change_of_log_ratios(&[-0.1], alpha).unwrap(), alpha, 1, -0.05), None);
        let flat = change_of_log_ratios(&[-0.1; 4], alpha).unwrap();
        assert_eq!(paired_p_against(flat, alpha, 4, -0.05), Some(0.0));
    }

    #[test]
    fn wilcoxon_critical_values_match_the_published_table() {
        // Two-sided 0.05 (one-sided 0.025), as every signed-rank table prints them.
        let table = [(6, 0), (7, 2), (8, 3), (9, 5), (10, 8), (11, 10), (12, 13), (15, 25), (20, 52), (25, 89)];
        for (n, want) in table {
            assert_eq!(critical_value(n, 0.05), Some(want), "n {n}");
        }
        // Below 6 pairs nothing is significant at 5%; two-sided 0.01 starts at n = 8 (C = 0).
        assert_eq!(critical_value(5, 0.05), None);
        assert_eq!(critical_value(7, 0.01), None);
        assert_eq!(critical_value(8, 0.01), Some(0));
        assert_eq!(critical_value(10, 0.01), Some(3));
    }

    #[test]
    fn the_null_distribution_is_exact() {
        // n = 3: rank sums 0,1,2,3,3,4,5,6 over 8 sign patterns.
        let cdf = null_distribution(3);
        let want = [1.0, 2.0, 3.0, 5.0, 6.0, 7.0, 8.0].map(|k| k / 8.0);
        assert_eq!(cdf.len(), want.len());
        for (a, b) in cdf.iter().zip(want) {
            assert!((a - b).abs() < 1e-15);
        }
    }

    #[test]
    // 3.14 is a measurement in the published data, not π.
    #[allow(clippy::approx_constant)]
    fn hodges_lehmann_matches_hollander_and_wolfe() {
        // Hollander & Wolfe's depression-scale pairs (Table 3.1, also R's `wilcox.test`
        // example): V = 40, one-sided p = 0.01953, pseudo-median 0.46. The interval is
        // the 6th and 40th of the 45 sorted Walsh averages (C = 5 at n = 9).
        let x = [1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30];
        let y = [0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29];
        let d: Vec<f64> = x.iter().zip(y).map(|(a, b)| a - b).collect();
        // Feed the differences as log ratios: the statistics are of `d` itself.
        let r = wilcoxon(&d, 0.05).unwrap();
        assert_eq!((r.n, r.w_plus), (9, 40.0));
        assert!((r.p - 2.0 * 0.01953).abs() < 1e-4, "{}", r.p);
        assert!(((r.hl + 1.0).ln() - 0.46).abs() < 1e-9, "{}", r.hl);
        assert!(((r.ci_low + 1.0).ln() - 0.010).abs() < 1e-9 && ((r.ci_high + 1.0).ln() - 0.786).abs() < 1e-9);
        assert_eq!(wilcoxon(&d[..5], 0.05), None, "5 pairs: no check");
    }

    #[test]
    fn ties_get_mean_ranks_and_zeros_are_dropped() {
        assert_eq!(signed_rank_sum(&[0.0, 1.0, -1.0, 2.0]), (1.5 + 3.0, 3));
    }

    #[test]
    fn the_paired_ratio_is_the_ratio_of_geometric_means_with_a_t_interval() {
        let b = [100.0, 110.0, 90.0, 105.0];
        let c = [90.0, 100.0, 80.0, 95.0];
        let d = log_ratios(&b, &c);
        let ch = paired_change(&b, &c, 0.05).unwrap();
        let gb: f64 = b.iter().map(|x: &f64| x.ln()).sum::<f64>() / 4.0;
        let gc: f64 = c.iter().map(|x: &f64| x.ln()).sum::<f64>() / 4.0;
        assert!((ch.mean - ((gc - gb).exp() - 1.0)).abs() < 1e-12);
        let mean = d.iter().sum::<f64>() / 4.0;
        let sd = (d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 3.0).sqrt();
        // t(3) = 3.182 at 95%.
        let half = 3.182 * sd / 2.0;
        assert!((ch.ci_low - ((mean - half).exp() - 1.0)).abs() < 1e-4, "{ch:?}");
        assert!((ch.ci_high - ((mean + half).exp() - 1.0)).abs() < 1e-4, "{ch:?}");
        // A stricter level widens it.
        let strict = paired_change(&b, &c, 0.01).unwrap();
        assert!(strict.ci_low < ch.ci_low && strict.ci_high > ch.ci_high);
        // One pair bounds nothing; a zero member drops its pair; no pair is no change.
        let one = paired_change(&[1.0], &[2.0], 0.05).unwrap();
        assert_eq!((one.mean, one.ci_low, one.ci_high), (1.0, f64::NEG_INFINITY, f64::INFINITY));
        assert_eq!(log_ratios(&[1.0, 0.0], &[2.0, 3.0]).len(), 1);
        assert_eq!(paired_change(&[0.0], &[1.0], 0.05), None);
    }

    #[test]
    fn pairing_cancels_what_both_members_share() {
        // Drift from 100 to 200 shared by both arms; B is 5% slower in every pair.
        let b: Vec<f64> = (0..8).map(|i| 100.0 + 15.0 * i as f64).collect();
        let c: Vec<f64> = b.iter().enumerate().map(|(i, x)| x * 0.95 * (1.0 + 0.002 * (i % 2) as f64)).collect();
        let ch = paired_change(&b, &c, 0.05).unwrap();
        assert!(ch.ci_high < -0.04 && ch.ci_low > -0.06, "{ch:?}");
        // The unpaired interval of the same numbers cannot tell.
        let unpaired = crate::stats::relative_change(&b, &c).unwrap();
        assert!(unpaired.ci_low < -0.2 && unpaired.ci_high > 0.1, "{unpaired:?}");
    }

    #[test]
    fn looks_follow_a_fixed_schedule_and_split_alpha() {
        assert_eq!(look_schedule(6, 32), [6, 9, 14, 21, 32]);
        assert!((alpha_per_look(6, 32) - 0.01).abs() < 1e-15);
        assert_eq!(look_schedule(6, 6), [6]);
        assert_eq!(alpha_per_look(6, 6), 0.05);
        assert_eq!(look_schedule(2, 3), [2, 3]);
    }

    #[test]
    fn repeated_looks_keep_the_false_verdict_rate_under_five_percent() {
        // A/A: 2000 groups of up to 32 pairs with log ratios N(0, 0.07); a group "errs"
        // when any look's interval leaves out the true ratio 1.
        let mut rng = crate::rng::SplitMix64::new(7);
        let (looks, alpha) = (look_schedule(6, 32), alpha_per_look(6, 32));
        let mut naive_errs = 0;
        let mut errs = 0;
        for _ in 0..2000 {
            let d: Vec<f64> = (0..32).map(|_| 0.07 * rng.normal()).collect();
            let misses = |a: f64| {
                looks.iter().any(|&n| {
                    let ch = change_of_log_ratios(&d[..n as usize], a).unwrap();
                    ch.ci_low > 0.0 || ch.ci_high < 0.0
                })
            };
            errs += misses(alpha) as u32;
            naive_errs += misses(0.05) as u32;
        }
        assert!(errs < 100, "split alpha: {errs} of 2000");
        assert!(naive_errs > errs, "95% at every look errs more: {naive_errs}");
    }
}
