//! Student's t distribution, the one distribution the statistics need: its 97.5%
//! quantile (95% intervals) and its two-sided tail probability (p-values).
//!
//! Both come from `statrs` (regularized incomplete beta and its inverse) rather
//! than from a table or a hand-written series: fractional degrees of freedom
//! (Welch–Satterthwaite gives them) are exact instead of interpolated.

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// 97.5% quantile of Student's t distribution with `df` degrees of freedom (fractional
/// allowed): the critical value of a two-sided 95% interval or test.
///
/// Infinite (an interval that bounds nothing) when `df` is NaN or not positive; the
/// standard normal's quantile when `df` is infinite.
pub fn t_quantile_975(df: f64) -> f64 {
    if df.is_nan() || df <= 0.0 {
        return f64::INFINITY;
    }
    if df.is_infinite() {
        return Normal::standard().inverse_cdf(0.975);
    }
    match StudentsT::new(0.0, 1.0, df) {
        Ok(t) => t.inverse_cdf(0.975),
        Err(_) => f64::INFINITY,
    }
}

/// Two-sided critical value of Student's t with `df` degrees of freedom at level `alpha`:
/// the `1 - alpha/2` quantile ([`t_quantile_975`] is `alpha = 0.05`).
///
/// Infinite when `df` is NaN or not positive, or `alpha` is not in (0, 1).
pub fn t_critical(alpha: f64, df: f64) -> f64 {
    if df.is_nan() || df <= 0.0 || !(alpha > 0.0 && alpha < 1.0) {
        return f64::INFINITY;
    }
    if df.is_infinite() {
        return Normal::standard().inverse_cdf(1.0 - alpha / 2.0);
    }
    match StudentsT::new(0.0, 1.0, df) {
        Ok(t) => t.inverse_cdf(1.0 - alpha / 2.0),
        Err(_) => f64::INFINITY,
    }
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
    fn t_quantiles_match_published_tables() {
        // Two-sided 95% critical values as every t table prints them (3 decimals).
        let table = [(1.0, 12.706), (2.0, 4.303), (5.0, 2.571), (10.0, 2.228), (30.0, 2.042), (120.0, 1.980)];
        for (df, want) in table {
            let q = t_quantile_975(df);
            assert!((q - want).abs() < 5e-4, "df {df}: {q} vs {want}");
        }
        assert!((t_quantile_975(f64::INFINITY) - 1.959_963_984_540_054).abs() < 1e-9);
        // Closed forms: df 1 is Cauchy, tan(0.475 π); df 2 is (2p - 1) / sqrt(2 p (1 - p)).
        assert!((t_quantile_975(1.0) - (0.475 * std::f64::consts::PI).tan()).abs() < 1e-9);
        assert!((t_quantile_975(2.0) - 0.95 / (2.0f64 * 0.975 * 0.025).sqrt()).abs() < 1e-9);
        // Fractional degrees of freedom lie between their neighbours, nearer the larger df
        // than a straight line would put them (the quantile is convex in df).
        let q = t_quantile_975(1.5);
        assert!(q < (t_quantile_975(1.0) + t_quantile_975(2.0)) / 2.0 && q > t_quantile_975(2.0), "{q}");
        assert_eq!(t_quantile_975(0.0), f64::INFINITY);
        // Other levels: t(0.01, 5) = 4.032, t(0.01, 10) = 3.169 in every table.
        assert!((t_critical(0.01, 5.0) - 4.032).abs() < 5e-4 && (t_critical(0.01, 10.0) - 3.169).abs() < 5e-4);
        assert_eq!(t_critical(0.05, 7.0), t_quantile_975(7.0));
        assert_eq!(t_quantile_975(f64::NAN), f64::INFINITY);
    }

    #[test]
    fn two_sided_p_values_match_closed_forms_and_tables() {
        for t in [0.0, 0.3, 1.0, 2.5, 12.706, 100.0] {
            // df 1: 1 - 2 atan(|t|) / π; df 2: 1 - |t| / sqrt(2 + t²).
            let cauchy = 1.0 - 2.0 * f64::atan(t) / std::f64::consts::PI;
            assert!((student_t_two_sided_p(t, 1.0) - cauchy).abs() < 1e-12, "t {t}");
            assert!((student_t_two_sided_p(-t, 2.0) - (1.0 - t / (2.0 + t * t).sqrt())).abs() < 1e-12, "t {t}");
        }
        // At the 97.5% quantile the two-sided p is 0.05, for whole and fractional df.
        for df in [1.0, 2.0, 2.5, 4.0, 10.0, 30.0, 200.0] {
            let p = student_t_two_sided_p(t_quantile_975(df), df);
            assert!((p - 0.05).abs() < 1e-9, "df {df}: p {p}");
        }
        assert_eq!(student_t_two_sided_p(f64::INFINITY, 3.0), 0.0);
        assert!(student_t_two_sided_p(1.0, 0.0).is_nan());
    }
}
