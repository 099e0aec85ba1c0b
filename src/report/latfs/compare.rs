//! Comparing lat_fs runs: ratios to the first label, and Welch's t-test on the
//! repetitions (whether runs may be compared at all: `report::compatible`).

use schemars::JsonSchema;
use serde::Serialize;

use super::tables::{LatfsTable, Point};

/// Significance level of the Welch test.
pub const ALPHA: f64 = 0.05;

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

/// Welch's t-test of two samples; `None` when either has fewer than two values
/// or both have zero variance (no spread to test against).
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

/// Two-sided p-value of Student's t: I_{df/(df+t²)}(df/2, 1/2).
pub fn student_t_two_sided_p(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return 0.0;
    }
    reg_inc_beta(df / 2.0, 0.5, df / (df + t * t))
}

/// Regularized incomplete beta function I_x(a, b) (Numerical Recipes' continued
/// fraction with Lentz's method; accurate to ~1e-10 for the ranges used here).
pub fn reg_inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    // The continued fraction converges fast for x < (a+1)/(a+b+2); use symmetry otherwise.
    if x < (a + 1.0) / (a + b + 2.0) {
        ln_front.exp() * beta_cf(a, b, x) / a
    } else {
        1.0 - ln_front.exp() * beta_cf(b, a, 1.0 - x) / b
    }
}

fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..300 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-14 {
            break;
        }
    }
    h
}

/// ln Γ(x) by the Lanczos approximation (g = 7, n = 9), x > 0.
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection keeps the approximation in its accurate range.
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut s = G[0];
    for (i, g) in G.iter().enumerate().skip(1) {
        s += g / (x + i as f64);
    }
    let t = x + 7.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + s.ln()
}

/// One ratio cell: a label's median over the reference label's median, same configuration.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Ratio {
    /// median(label) / median(reference).
    pub ratio: f64,
    /// Lower end of the 95% CI of mean(label) / mean(reference) (Fieller's, as the gate computes it).
    #[schemars(with = "Option<f64>")]
    pub ci_low: f64,
    /// Upper end of that interval; both ends are infinite with fewer than 2 repetitions on a side
    /// (`null` in JSON).
    #[schemars(with = "Option<f64>")]
    pub ci_high: f64,
    /// Welch's test on the repetitions, when both sides have at least two.
    pub welch: Option<Welch>,
    /// Welch's p after the Holm–Bonferroni correction over the comparisons of its table.
    pub p_adjusted: Option<f64>,
    /// `p_adjusted < ALPHA`.
    pub significant: bool,
}

impl Ratio {
    /// `1.2134* [1.1900, 1.2400]` (significant after correction), `1.2134 [...]` (not),
    /// `1.2134?` (untestable: fewer than 2 repetitions or no spread).
    pub fn display(&self) -> String {
        let mark = match (&self.welch, self.significant) {
            (None, _) => "?",
            (Some(_), true) => "*",
            (Some(_), false) => "",
        };
        let f = crate::report::format::fmt4;
        if self.ci_low.is_finite() && self.ci_high.is_finite() {
            format!("{}{mark} [{}, {}]", f(self.ratio), f(self.ci_low), f(self.ci_high))
        } else {
            format!("{}{mark}", f(self.ratio))
        }
    }
}

/// Compare two points of one configuration, as a family of one comparison
/// (a table of them is corrected by [`ratio_table`]).
pub fn ratio(reference: &Point, other: &Point) -> Option<Ratio> {
    if reference.summary.median == 0.0 {
        return None;
    }
    let welch = welch(&reference.samples, &other.samples);
    let change = crate::stats::relative_change(&reference.samples, &other.samples);
    let (ci_low, ci_high) = match change {
        Some(c) => (1.0 + c.ci_low, 1.0 + c.ci_high),
        None => (f64::NEG_INFINITY, f64::INFINITY),
    };
    let p_adjusted = welch.map(|w| w.p);
    Some(Ratio {
        ratio: other.summary.median / reference.summary.median,
        ci_low,
        ci_high,
        welch,
        p_adjusted,
        significant: p_adjusted.is_some_and(|p| p < ALPHA),
    })
}

/// The ratio table under a merged table: for each non-reference column, the
/// matching reference column (same quota) and the ratio per task count.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct RatioTable {
    /// `V3/BASE-ext2-M-qoff`, one per non-reference column that has a reference.
    pub columns: Vec<String>,
    /// Task counts (rows).
    pub tasks: Vec<u32>,
    /// `values[row][col]`.
    pub values: Vec<Vec<Option<Ratio>>>,
    /// Comparisons with a p-value in this table: the `m` of the Holm–Bonferroni correction.
    pub comparisons: usize,
    /// For each ratio column, the (reference, other) column indices in the lat_fs table.
    #[serde(skip)]
    pub pairs: Vec<(usize, usize)>,
}

impl RatioTable {
    /// The ratio of lat_fs table column `col` at row `row`, when that column has a reference.
    pub fn for_column(&self, row: usize, col: usize) -> Option<&Ratio> {
        let k = self.pairs.iter().position(|(_, c)| *c == col)?;
        self.values.get(row)?.get(k)?.as_ref()
    }

    /// The sentence under the table that says how significance was decided.
    pub fn correction_note(&self) -> String {
        format!(
            "* = significant at alpha {ALPHA} after Holm–Bonferroni correction over the {} comparison{} in this table; [..] = 95% CI of the ratio of means",
            self.comparisons,
            if self.comparisons == 1 { "" } else { "s" }
        )
    }
}

/// Ratios of every label's columns to the first label's, significance corrected
/// with Holm–Bonferroni over the comparisons of the table.
pub fn ratio_table(t: &LatfsTable, reference_label: &str) -> RatioTable {
    let mut pairs = Vec::new();
    let mut columns = Vec::new();
    for (ci, c) in t.columns.iter().enumerate() {
        if c.label == reference_label {
            continue;
        }
        if let Some(ri) = t.columns.iter().position(|r| r.label == reference_label && r.quota == c.quota) {
            pairs.push((ri, ci));
            columns.push(format!("{}/{}-{}-{}-{}", c.label, reference_label, t.fs, t.layout, c.quota.seed_name()));
        }
    }
    let mut values: Vec<Vec<Option<Ratio>>> = t
        .values
        .iter()
        .map(|row| {
            pairs
                .iter()
                .map(|(ri, ci)| match (&row[*ri], &row[*ci]) {
                    (Some(r), Some(o)) => ratio(r, o),
                    _ => None,
                })
                .collect()
        })
        .collect();
    let raw: Vec<Option<f64>> =
        values.iter().flatten().map(|r| r.as_ref().and_then(|r| r.welch.map(|w| w.p))).collect();
    let adjusted = crate::stats::holm_adjust(&raw);
    let comparisons = raw.iter().filter(|p| p.is_some()).count();
    for (r, adj) in values.iter_mut().flatten().zip(adjusted) {
        if let Some(r) = r {
            r.p_adjusted = adj;
            r.significant = adj.is_some_and(|p| p < ALPHA);
        }
    }
    RatioTable { columns, tasks: t.tasks.clone(), values, comparisons, pairs }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p_values_match_t_tables() {
        // At the tabulated 97.5% quantile the two-sided p is 0.05.
        for df in [1.0, 2.0, 4.0, 10.0, 30.0] {
            let q = crate::stats::t_quantile_975(df);
            let p = student_t_two_sided_p(q, df);
            assert!((p - 0.05).abs() < 5e-4, "df {df}: p {p}");
        }
        assert!((student_t_two_sided_p(0.0, 5.0) - 1.0).abs() < 1e-12);
        assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-10);
    }

    #[test]
    fn welch_known_example() {
        // Two clearly different small samples with unequal spread.
        let a = [19.8, 20.4, 19.6, 17.8, 18.5, 18.9];
        let b = [28.2, 26.6, 20.1, 23.3, 25.2, 22.1];
        let w = welch(&a, &b).unwrap();
        let m = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
        assert!(w.t > 0.0 && (m(&b) - m(&a)) > 0.0);
        // The p-value is consistent with the critical value for its df.
        let crit = crate::stats::t_quantile_975(w.df);
        assert_eq!(w.p < ALPHA, w.t.abs() > crit, "t {} df {} p {} crit {crit}", w.t, w.df, w.p);
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
}
