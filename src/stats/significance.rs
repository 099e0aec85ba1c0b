//! Significance of a difference: Welch's two-sample t-test, and the Holm–Bonferroni
//! correction for a family of such tests.

use schemars::JsonSchema;
use serde::Serialize;

use super::distributions::student_t_two_sided_p;

/// Result of Welch's two-sample t-test.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
pub struct Welch {
    /// t statistic (b - a).
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
}

/// Welch's t-test of two samples (unequal variances): `t = (b̄ - ā) / sqrt(v_a + v_b)`
/// with `v = s²/n`, Welch–Satterthwaite degrees of freedom and a two-sided p-value;
/// `None` when either has fewer than two values or both have zero variance (no
/// spread to test against).
pub fn welch(a: &[f64], b: &[f64]) -> Option<Welch> {
    let (na, nb) = (a.len() as f64, b.len() as f64);
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
    let var = |x: &[f64], m: f64| x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (x.len() as f64 - 1.0);
    let (ma, mb) = (mean(a), mean(b));
    let (va, vb) = (var(a, ma) / na, var(b, mb) / nb);
    if va + vb == 0.0 {
        return None;
    }
    let t = (mb - ma) / (va + vb).sqrt();
    let df = (va + vb).powi(2) / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    Some(Welch { t, df, p: student_t_two_sided_p(t, df) })
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Welch's t-test examples with R's `t.test(x, y)` results, as published with the
    /// Rosetta Code task "Welch's t-test" (the first is also Wikipedia's example 1).
    #[test]
    fn welch_matches_published_r_results() {
        let d1 = [27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4];
        let d2 = [27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4];
        // R: t = -2.45535639828601, df = 24.9885292902309, p = 0.021378001462867 (x - y; ours is b - a).
        let w = welch(&d2, &d1).unwrap();
        assert!((w.t - -2.455_356_398_286_01).abs() < 1e-9, "{w:?}");
        assert!((w.df - 24.988_529_290_230_9).abs() < 1e-9, "{w:?}");
        assert!((w.p - 0.021_378_001_462_867).abs() < 1e-12, "{w:?}");
        let d7 = [30.02, 29.99, 30.11, 29.97, 30.01, 29.99];
        let d8 = [29.89, 29.93, 29.72, 29.98, 30.02, 29.98];
        assert!((welch(&d7, &d8).unwrap().p - 0.090_773_324_285_671).abs() < 1e-12);
        // Very unequal variances and sizes: df ≈ 2.
        let (x, y) = ([3.0, 4.0, 1.0, 2.1], [490.2, 340.0, 433.9]);
        let w = welch(&x, &y).unwrap();
        assert!((w.p - 0.010_751_561_149_784_5).abs() < 1e-12, "{w:?}");
        assert!((w.t - 9.5595).abs() < 1e-4 && (w.df - 2.0009).abs() < 1e-4, "{w:?}");
    }

    #[test]
    fn welch_needs_two_samples_and_spread() {
        assert!(welch(&[1.0], &[2.0, 3.0]).is_none());
        assert!(welch(&[1.0, 1.0], &[2.0, 2.0]).is_none());
        let w = welch(&[10.0, 10.1, 9.9, 10.0], &[20.0, 20.2, 19.8, 20.1]).unwrap();
        assert!(w.p < 1e-6);
        let w = welch(&[10.0, 12.0, 8.0], &[10.5, 11.5, 8.5]).unwrap();
        assert!(w.p > 0.5);
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
}
