//! Statistics over repetitions: summaries with Student's t confidence intervals.

use crate::model::Summary;

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

/// Welch's 95% interval of `mean(b) - mean(a)`: (half width, Welch–Satterthwaite df);
/// `None` when a side has fewer than two samples or neither has spread.
pub fn welch_interval(a: &Summary, b: &Summary) -> Option<(f64, f64)> {
    if a.n < 2 || b.n < 2 {
        return None;
    }
    let (va, vb) = (a.stddev.powi(2) / a.n as f64, b.stddev.powi(2) / b.n as f64);
    if va + vb == 0.0 {
        return None;
    }
    let df = (va + vb).powi(2) / (va * va / (a.n as f64 - 1.0) + vb * vb / (b.n as f64 - 1.0));
    Some((t_quantile_975(df) * (va + vb).sqrt(), df))
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn t_quantile_matches_tables() {
        assert_eq!(t_quantile_975(1.0), 12.706);
        assert!((t_quantile_975(40.0) - 2.021).abs() < 2e-3);
        assert!((t_quantile_975(120.0) - 1.980).abs() < 2e-3);
        assert!((t_quantile_975(4.5) - (2.776 + 2.571) / 2.0).abs() < 1e-9);
    }
}
