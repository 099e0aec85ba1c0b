//! Student's t distribution, the one distribution the statistics need: its 97.5%
//! quantile (95% intervals) and its two-sided tail probability (p-values).
//!
//! The tail probability comes from `statrs` (the regularized incomplete beta)
//! rather than from a hand-written continued fraction.

use statrs::distribution::{ContinuousCDF, StudentsT};

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

/// Two-sided p-value of a t statistic with `df` degrees of freedom: `P(|T| ≥ |t|)`,
/// which is the regularized incomplete beta `I_{df/(df+t²)}(df/2, 1/2)`.
///
/// 0 for an infinite `t`; NaN when `t` or `df` is NaN or `df` is not positive.
pub fn student_t_two_sided_p(t: f64, df: f64) -> f64 {
    if !t.is_finite() && !t.is_nan() {
        return 0.0;
    }
    match StudentsT::new(0.0, 1.0, df) {
        Ok(dist) => 2.0 * dist.cdf(-t.abs()),
        Err(_) => f64::NAN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantile_matches_tables() {
        assert_eq!(t_quantile_975(1.0), 12.706);
        assert!((t_quantile_975(40.0) - 2.021).abs() < 2e-3);
        assert!((t_quantile_975(120.0) - 1.980).abs() < 2e-3);
        assert!((t_quantile_975(4.5) - (2.776 + 2.571) / 2.0).abs() < 1e-9);
    }

    #[test]
    fn two_sided_p_values_match_closed_forms_and_tables() {
        for t in [0.0, 0.3, 1.0, 2.5, 12.706, 100.0] {
            // df 1: 1 - 2 atan(|t|) / π; df 2: 1 - |t| / sqrt(2 + t²).
            let cauchy = 1.0 - 2.0 * f64::atan(t) / std::f64::consts::PI;
            assert!((student_t_two_sided_p(t, 1.0) - cauchy).abs() < 1e-12, "t {t}");
            assert!((student_t_two_sided_p(-t, 2.0) - (1.0 - t / (2.0 + t * t).sqrt())).abs() < 1e-12, "t {t}");
        }
        // At the tabulated 97.5% quantile the two-sided p is 0.05.
        for df in [1.0, 2.0, 4.0, 10.0, 30.0] {
            let p = student_t_two_sided_p(t_quantile_975(df), df);
            assert!((p - 0.05).abs() < 5e-4, "df {df}: p {p}");
        }
        assert_eq!(student_t_two_sided_p(f64::INFINITY, 3.0), 0.0);
        assert!(student_t_two_sided_p(1.0, 0.0).is_nan());
    }
}
