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
    /// Welch's p after the Holm–Bonferroni correction over the comparisons of its table;
    /// `null` when the comparison is not tested ([`Ratio::untested`]).
    pub p_adjusted: Option<f64>,
    /// `p_adjusted < ALPHA`.
    pub significant: bool,
    /// Why the comparison has no significance test, shown `?` ([`Untested`]); `null` when tested.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub untested: Option<Untested>,
}

/// Why a ratio carries `?` instead of a verdict of Welch's test: every case, in one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Untested {
    /// A side has fewer than 2 samples (repetitions, or rounds' means with `workload.rounds`).
    FewerThanTwoSamples,
    /// Both sides have at least 2 samples, all equal on each side: no spread to test against.
    NoSpread,
    /// Two separate runs with one round on a side: the samples show the spread within a
    /// run only, which cannot decide a difference between runs (the gate's rule,
    /// [`crate::verdict::separate_runs_decidable`]; its verdict there is `inconclusive`).
    WithinRunOnly,
}

impl Untested {
    /// Why, in the words of the legend.
    pub fn why(self) -> &'static str {
        match self {
            Untested::FewerThanTwoSamples => "fewer than 2 samples on a side",
            Untested::NoSpread => "no spread on either side",
            Untested::WithinRunOnly => crate::verdict::WITHIN_RUN_ONLY,
        }
    }

    /// Why a comparison of `a` and `b` (sample sets) has no Welch's test; `None` when it has one.
    pub fn of_samples(a: &[f64], b: &[f64], welch: Option<&Welch>) -> Option<Untested> {
        match welch {
            Some(_) => None,
            None if a.len() < 2 || b.len() < 2 => Some(Untested::FewerThanTwoSamples),
            None => Some(Untested::NoSpread),
        }
    }

    /// [`Untested::WithinRunOnly`] when a comparison of two separate runs spanning these
    /// rounds cannot be decided ([`crate::verdict::separate_runs_decidable`]).
    pub fn between_runs(reference_rounds: u32, other_rounds: u32) -> Option<Untested> {
        (!crate::verdict::separate_runs_decidable(reference_rounds, other_rounds)).then_some(Untested::WithinRunOnly)
    }
}

/// What `?` means, for every legend that shows it: each case [`Untested`] has.
pub fn untested_legend(samples: &str) -> String {
    format!(
        "? not tested, so never significant: fewer than 2 {samples} on a side, or no spread on either side, or two \
         separate runs of which one ran a single round (its {samples} show the spread within one run, not between \
         runs: the gate calls these inconclusive)"
    )
}

impl Ratio {
    /// `1.2134* [1.1900, 1.2400]` (significant after correction), `1.2134 [...]` (not),
    /// `1.2134? [...]` (not tested: [`Untested`]).
    pub fn display(&self) -> String {
        let mark = match (&self.untested, self.significant) {
            (Some(_), _) => "?",
            (None, true) => "*",
            (None, false) => "",
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
/// (a table of them is corrected by [`ratio_table`]); `separate_runs`: the points are of
/// two runs (not two kernels of one kernel-paired run), so the rounds they span decide
/// whether they can be tested ([`Untested::between_runs`]).
pub fn ratio(reference: &Point, other: &Point, separate_runs: bool) -> Option<Ratio> {
    if reference.summary.mean == 0.0 {
        return None;
    }
    let rounds = separate_runs.then_some((reference.rounds, other.rounds));
    // A result file with a summary and no repetitions (typed in, or older) has a ratio, untested.
    let r = ratio_of_samples(&reference.samples, &other.samples, rounds).unwrap_or(Ratio {
        ratio: 0.0,
        ci_low: f64::NEG_INFINITY,
        ci_high: f64::INFINITY,
        welch: None,
        p_adjusted: None,
        significant: false,
        untested: Some(Untested::FewerThanTwoSamples),
    });
    Some(Ratio { ratio: other.summary.mean / reference.summary.mean, ..r })
}

/// The ratio of the means of two sample sets of a positive quantity, with its interval and
/// Welch's test (uncorrected); `rounds`: of two separate runs, the rounds each spans.
/// `None` when a side is empty or the reference mean is zero.
pub fn ratio_of_samples(reference: &[f64], other: &[f64], rounds: Option<(u32, u32)>) -> Option<Ratio> {
    let (a, b) = (crate::stats::summarize(reference), crate::stats::summarize(other));
    if a.n == 0 || b.n == 0 || a.mean == 0.0 {
        return None;
    }
    let welch = crate::stats::welch(reference, other);
    let change = crate::stats::relative_change(reference, other);
    // Its part at or above zero: loops, latencies and IOPS are positive.
    let (ci_low, ci_high) = match (crate::stats::positive_ratio_interval(&a, &b), change) {
        (Some(ci), _) => ci,
        (None, Some(c)) => (1.0 + c.ci_low, 1.0 + c.ci_high),
        (None, None) => (f64::NEG_INFINITY, f64::INFINITY),
    };
    let untested = Untested::of_samples(reference, other, welch.as_ref())
        .or_else(|| rounds.and_then(|(r, o)| Untested::between_runs(r, o)));
    let p_adjusted = welch.filter(|_| untested.is_none()).map(|w| w.p);
    Some(Ratio {
        ratio: b.mean / a.mean,
        ci_low,
        ci_high,
        welch,
        p_adjusted,
        significant: p_adjusted.is_some_and(|p| p < ALPHA),
        untested,
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
        if self.comparisons == 0 {
            return "no comparison in this table was tested (`?`: see the legend); [..] = 95% CI of the ratio of means"
                .into();
        }
        format!(
            "* = significant at alpha {ALPHA} after Holm–Bonferroni correction over the {} tested comparison{} in this table; [..] = 95% CI of the ratio of means",
            self.comparisons,
            if self.comparisons == 1 { "" } else { "s" }
        )
    }

    /// How many ratios of the table are untested because they compare separate runs of one round.
    pub fn within_run_only(&self) -> usize {
        self.values.iter().flatten().flatten().filter(|r| r.untested == Some(Untested::WithinRunOnly)).count()
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
                    // A cell without a result (every repetition disturbed) has no ratio.
                    (Some(r), Some(o)) if !r.all_disturbed && !o.all_disturbed => {
                        ratio(r, o, t.columns[*ri].run != t.columns[*ci].run)
                    }
                    _ => None,
                })
                .collect()
        })
        .collect();
    // Only tested comparisons are in the family: an untested one has no p to correct.
    let raw: Vec<Option<f64>> = values.iter().flatten().map(|r| r.as_ref().and_then(|r| r.p_adjusted)).collect();
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
