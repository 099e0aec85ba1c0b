//! Descriptive statistics of one set of repetitions: median, mean, spread and the
//! Student's t confidence interval of the mean.

use super::distributions::t_quantile_975;
use crate::model::Summary;

/// Median of `samples` (the mean of the middle two for an even count); 0 for none.
pub fn median(samples: &[f64]) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    median_of_sorted(&sorted)
}

fn median_of_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => sorted[n / 2],
        _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// Summarise samples: median, mean, sample stddev, min, max, 95% CI of the mean, CV.
///
/// The interval is `mean ± t(n-1) s / sqrt(n)`, with t Student's 97.5% quantile. An
/// empty slice gives a zeroed summary with `n = 0`; one sample gives a zero-width
/// interval (there is no spread to estimate).
pub fn summarize(samples: &[f64]) -> Summary {
    let n = samples.len();
    if n == 0 {
        return Summary::default();
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let mean = samples.iter().sum::<f64>() / n as f64;
    let stddev =
        if n > 1 { (samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt() } else { 0.0 };
    let half = if n > 1 { t_quantile_975((n - 1) as f64) * stddev / (n as f64).sqrt() } else { 0.0 };
    Summary {
        n,
        median: median_of_sorted(&sorted),
        mean,
        stddev,
        min: sorted[0],
        max: sorted[n - 1],
        ci95_low: mean - half,
        ci95_high: mean + half,
        cv: if mean != 0.0 { stddev / mean.abs() } else { 0.0 },
    }
}

/// The 95% interval of the mean of a positive quantity (a time, a rate, a count), as reports
/// state it: `None` from fewer than two samples (one sample has no spread to bound the mean
/// with: no interval, not a zero-width one), otherwise Student's t interval cut at zero,
/// since the mean of positive values is never below it.
pub fn positive_mean_interval(s: &Summary) -> Option<(f64, f64)> {
    (s.n > 1 && s.ci95_low.is_finite() && s.ci95_high.is_finite()).then(|| (s.ci95_low.max(0.0), s.ci95_high.max(0.0)))
}

/// Relative half-width of the 95% CI of the mean (`(ci95_high - ci95_low) / 2 / |mean|`);
/// infinite with fewer than two samples or a zero mean.
pub fn relative_half_width(s: &Summary) -> f64 {
    if s.n < 2 || s.mean == 0.0 {
        return f64::INFINITY;
    }
    (s.ci95_high - s.ci95_low) / 2.0 / s.mean.abs()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_positive_mean_has_no_interval_from_one_sample_and_none_below_zero() {
        assert_eq!(positive_mean_interval(&summarize(&[17.07])), None);
        // n = 2, far apart: Student's t(1) reaches far below zero; the mean of IOPS does not.
        let (lo, hi) = positive_mean_interval(&summarize(&[1000.0, 35000.0])).unwrap();
        assert!(lo == 0.0 && hi > 35000.0, "{lo} {hi}");
        let s = summarize(&[99.0, 100.0, 101.0]);
        assert_eq!(positive_mean_interval(&s), Some((s.ci95_low, s.ci95_high)));
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
    fn median_of_odd_even_and_no_samples() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
    }

    #[test]
    fn the_relative_half_width_is_t_s_over_root_n_over_the_mean() {
        // t(2) * s / sqrt(3) / mean, for samples with s = 1.
        let s = summarize(&[1000.0, 1001.0, 999.0]);
        assert!((relative_half_width(&s) - 4.303 / 3f64.sqrt() / 1000.0).abs() < 1e-6);
        assert_eq!(relative_half_width(&summarize(&[5.0])), f64::INFINITY);
    }
}
