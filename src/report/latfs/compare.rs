//! Comparing lat_fs runs: ratios to the first label, and Welch's t-test on the
//! repetitions (whether runs may be compared at all: `report::compatible`).

use schemars::JsonSchema;
use serde::Serialize;

use super::tables::{LatfsTable, Point};
pub use crate::stats::Welch;

/// Significance level of the Welch test.
pub const ALPHA: f64 = 0.05;

/// One ratio cell: a label's mean over the reference label's mean, same configuration: the
/// statistic whose interval is printed and the gate decides on (less 1).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Ratio {
    /// mean(label) / mean(reference).
    pub ratio: f64,
    /// Lower end of the 95% CI of that ratio (Fieller's, as the gate computes it).
    #[schemars(with = "Option<f64>")]
    pub ci_low: f64,
    /// Upper end of that interval, infinite (`null` in JSON) when it is open above; both ends
    /// are infinite with fewer than 2 repetitions on a side. The interval is the part at or
    /// above zero ([`crate::stats::positive_ratio_interval`]).
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
        if self.ci_low.is_finite() && (self.ci_high.is_finite() || self.ci_low > 0.0) {
            format!("{}{mark} {}", f(self.ratio), crate::report::format::interval(self.ci_low, self.ci_high))
        } else {
            format!("{}{mark}", f(self.ratio))
        }
    }
}

/// Compare two points of one configuration, as a family of one comparison
/// (a table of them is corrected by [`ratio_table`]).
pub fn ratio(reference: &Point, other: &Point) -> Option<Ratio> {
    if reference.summary.mean == 0.0 {
        return None;
    }
    let welch = crate::stats::welch(&reference.samples, &other.samples);
    let change = crate::stats::relative_change(&reference.samples, &other.samples);
    let (a, b) = (crate::stats::summarize(&reference.samples), crate::stats::summarize(&other.samples));
    // Its part at or above zero: loops and latencies are positive.
    let (ci_low, ci_high) = match (crate::stats::positive_ratio_interval(&a, &b), change) {
        (Some(ci), _) => ci,
        (None, Some(c)) => (1.0 + c.ci_low, 1.0 + c.ci_high),
        (None, None) => (f64::NEG_INFINITY, f64::INFINITY),
    };
    let p_adjusted = welch.map(|w| w.p);
    Some(Ratio {
        ratio: other.summary.mean / reference.summary.mean,
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
