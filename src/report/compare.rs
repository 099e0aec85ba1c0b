//! Comparing runs: compatibility rules, ratios to the first label, and
//! Welch's t-test on the repetitions.
//!
//! Compatibility rule (what is refused and what only warns):
//! - different scenario names, or different workloads (lat_fs vs steps): refused;
//! - the same label twice: refused (columns would be ambiguous);
//! - different scenario texts or archives: the texts are compared by meaning
//!   ([`crate::scenario::diff`]): every differing key is shown
//!   (`filesystems.ext4.mount: + "nodelalloc"`), archives are matched by sha256,
//!   and the comparison is refused only when the measured quantities differ
//!   (workload kind, the steps, no lat_fs test in common), saying why. Matrix
//!   axes may differ: only the cells both runs have are compared.
//! - per cell present in both runs: differing mount options or mkfs arguments
//!   (device paths removed) are shown.

use schemars::JsonSchema;
use serde::Serialize;

use super::latfs_tables::{LatfsTable, Point};
use crate::results::LoadedRun;
pub use crate::stats::Welch;

/// Significance level of the Welch test.
pub const ALPHA: f64 = 0.05;

/// Why runs cannot be compared.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// Fewer than two runs.
    #[error("compare needs at least two runs, got {0}")]
    TooFew(usize),
    /// Runs of different scenarios.
    #[error("runs are of different scenarios: {0}; compare runs of one scenario (results/<scenario>/...)")]
    ScenarioMismatch(String),
    /// lat_fs against steps.
    #[error("runs have different workloads: {0}")]
    WorkloadMismatch(String),
    /// Two runs with one label.
    #[error("label `{0}` is used twice; give each run its own label as LABEL=RUN_DIR")]
    DuplicateLabel(String),
    /// The scenario texts differ in something that changes what is measured.
    #[error("runs are not comparable: {0}")]
    Incompatible(String),
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
        let f = super::format::fmt4;
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
    let welch = crate::stats::welch(&reference.samples, &other.samples);
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

/// Check that runs may be compared; returns warnings (e.g. differing scenario texts).
pub fn check_compatible(runs: &[(String, LoadedRun)]) -> Result<Vec<String>, CompareError> {
    if runs.len() < 2 {
        return Err(CompareError::TooFew(runs.len()));
    }
    let mut seen = std::collections::HashSet::new();
    for (label, _) in runs {
        if !seen.insert(label.as_str()) {
            return Err(CompareError::DuplicateLabel(label.clone()));
        }
    }
    let (l0, r0) = &runs[0];
    let list = |f: &dyn Fn(&LoadedRun) -> String| {
        runs.iter().map(|(l, r)| format!("{l}: `{}`", f(r))).collect::<Vec<_>>().join(", ")
    };
    if runs.iter().any(|(_, r)| r.meta.scenario_name != r0.meta.scenario_name) {
        return Err(CompareError::ScenarioMismatch(list(&|r| r.meta.scenario_name.clone())));
    }
    if runs.iter().any(|(_, r)| r.meta.workload != r0.meta.workload) {
        return Err(CompareError::WorkloadMismatch(list(&|r| r.meta.workload.clone())));
    }
    let mut warnings = Vec::new();
    for (label, run) in &runs[1..] {
        if run.meta.scenario_sha256 != r0.meta.scenario_sha256 || run.meta.archive != r0.meta.archive {
            warnings.push(format!(
                "scenario texts differ: {l0} (sha256 {}, {}) and {label} (sha256 {}, {})",
                short(&r0.meta.scenario_sha256),
                crate::text::escape_control(&r0.meta.scenario_origin),
                short(&run.meta.scenario_sha256),
                crate::text::escape_control(&run.meta.scenario_origin)
            ));
            let side = |label: &'_ str, r: &LoadedRun| -> (String, String, Option<String>) {
                (label.to_string(), r.meta.scenario_text.clone(), r.meta.archive.as_ref().map(|a| a.sha256.clone()))
            };
            let (a, b) = (side(l0, r0), side(label, run));
            let sides = [&a, &b].map(|(l, t, s)| crate::scenario::diff::Side {
                label: l,
                text: t,
                archive_sha256: s.as_deref(),
            });
            match crate::scenario::diff::compare(&sides[0], &sides[1]) {
                Ok(c) => {
                    for d in &c.differences {
                        warnings.push(format!("{l0} → {label}: {}", crate::text::escape_control(d)));
                    }
                    if let Some(why) = c.refusal {
                        return Err(CompareError::Incompatible(format!(
                            "{l0} and {label} did not measure the same quantities: {}",
                            crate::text::escape_control(&why)
                        )));
                    }
                }
                Err(e) => warnings.push(format!(
                    "could not compare the scenario texts as TOML ({}); only cell parameters were checked",
                    crate::text::escape_control(&e)
                )),
            }
        }
        warnings.extend(cell_differences(l0, r0, label, run));
        if let (Some(e0), Some(e1)) = (&r0.meta.environment, &run.meta.environment) {
            let d = crate::host::environment::Environment::differences(e0, e1);
            if !d.is_empty() {
                warnings.push(format!("environments differ between {l0} and {label}: {}", d.join("; ")));
            }
        }
    }
    Ok(warnings)
}

fn short(s: &str) -> &str {
    &s[..s.len().min(12)]
}

/// Per cell both runs hold: requested mount options and mkfs arguments that differ
/// (shown, not refused: they are conditions of the measurement, not the quantity).
fn cell_differences(l0: &str, r0: &LoadedRun, label: &str, run: &LoadedRun) -> Vec<String> {
    let by_id: std::collections::HashMap<&str, &crate::model::CellResult> =
        r0.cells.iter().map(|c| (c.id.as_str(), c)).collect();
    // Device and image paths differ between runs by nature; they are not parameters.
    let norm = |argv: &[String]| argv.iter().filter(|a| !a.starts_with('/')).cloned().collect::<Vec<_>>();
    let mut out = Vec::new();
    for c in &run.cells {
        let Some(c0) = by_id.get(c.id.as_str()) else { continue };
        for (f0, f1) in c0.filesystems.iter().zip(&c.filesystems) {
            if f0.mount_options_requested != f1.mount_options_requested {
                out.push(crate::text::escape_control(&format!(
                    "cell {}: mount options differ: {l0} {:?}, {label} {:?}",
                    c.id, f0.mount_options_requested, f1.mount_options_requested
                )));
            }
            if norm(&f0.mkfs_argv) != norm(&f1.mkfs_argv) {
                out.push(crate::text::escape_control(&format!(
                    "cell {}: mkfs arguments differ: {l0} {:?}, {label} {:?}",
                    c.id, f0.mkfs_argv, f1.mkfs_argv
                )));
            }
        }
    }
    out
}
