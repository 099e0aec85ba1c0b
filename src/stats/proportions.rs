//! Whether two shares differ beyond sampling noise: the two-proportion z-test.
//!
//! A profile's share of a function is `k` of `n` samples; two profiles of one cell differ
//! by sampling alone as binomial draws do. The test says nothing about the noise between
//! runs (a second profile of the same build may differ more): callers say so.

use statrs::distribution::{ContinuousCDF, Normal};

/// Two-sided p-value that `k_a/n_a` and `k_b/n_b` come from one proportion (pooled
/// two-proportion z-test); `None` without samples on a side or with no variance at all
/// (both 0% or both 100%).
pub fn two_proportion_p(k_a: u64, n_a: u64, k_b: u64, n_b: u64) -> Option<f64> {
    if n_a == 0 || n_b == 0 || k_a > n_a || k_b > n_b {
        return None;
    }
    let (na, nb) = (n_a as f64, n_b as f64);
    let pooled = (k_a + k_b) as f64 / (na + nb);
    let se = (pooled * (1.0 - pooled) * (1.0 / na + 1.0 / nb)).sqrt();
    if se == 0.0 || !se.is_finite() {
        return None;
    }
    let z = (k_b as f64 / nb - k_a as f64 / na) / se;
    Some(2.0 * (1.0 - Normal::standard().cdf(z.abs())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_a_textbook_two_proportion_test() {
        // 45/100 vs 60/100: z = 2.1228, p = 0.0338 (prop.test without continuity correction).
        let p = two_proportion_p(45, 100, 60, 100).unwrap();
        assert!((p - 0.0338).abs() < 0.0005, "{p}");
        // The same shares from ten times the samples are far beyond noise.
        assert!(two_proportion_p(450, 1000, 600, 1000).unwrap() < 1e-10);
        assert!(two_proportion_p(50, 100, 50, 100).unwrap() > 0.99);
        assert_eq!(two_proportion_p(0, 100, 0, 50), None);
        assert_eq!(two_proportion_p(1, 0, 1, 5), None);
    }
}
