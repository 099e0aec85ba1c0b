//! Steps runs side by side: per step, a table with a row per filesystem (or variant)
//! and a column per run label, then the ratio of every label to the first.
//!
//! Numbers: elapsed seconds of the step, mean ± sample standard deviation over
//! the chosen iterations of each cell ([`Iterations`]). Ratio: mean(label) /
//! mean(reference) with Fieller's 95% interval of that ratio (the interval rule
//! of [`crate::stats`], the gate's interval shifted by 1), and Welch's t-test for
//! significance at [`super::compare::ALPHA`], without a correction for multiple
//! comparisons, marked like lat_fs ratios (`*` significant, no mark not, `?` untestable).
//!
//! Iteration choice (`--iterations`):
//! - `steady` (default): every iteration whose `rm_rf` step removed something,
//!   i.e. one that measures the loop's steady state rather than a fresh
//!   filesystem. Results without entry counts (older files, typed-in data) use
//!   iterations 2.. instead; a cell with a single iteration keeps it, since there
//!   is nothing else to show.
//! - `all`, `last`, or `N` (iteration N, from 1; seed 002 reported the 5th).
//!
//! The data ([`StepsComparison`]) is built once and written through [`Markup`],
//! so the terminal, Markdown and HTML reports share one walk.

use crate::model::TextFormat;

use schemars::JsonSchema;
use serde::Serialize;

use super::groups::StepsGroup;
use crate::model::StepTiming;
use crate::report::compare::{ALPHA, Untested};
use crate::report::markup::Markup;
use crate::stats::{Welch, positive_ratio_interval, summarize, welch};

pub use crate::catalogue::Iterations;

/// The rounds a steps cell runs: one (`workload.rounds` is lat_fs's).
const STEPS_ROUNDS: u32 = 1;

/// One cell of a step table: a label's elapsed seconds over the chosen iterations.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct StepStat {
    /// Chosen iterations, from 1.
    pub iterations: Vec<usize>,
    /// Elapsed seconds of each chosen iteration.
    pub samples_s: Vec<f64>,
    /// Mean seconds.
    pub mean_s: f64,
    /// Sample standard deviation in seconds (0 for one sample).
    pub sd_s: f64,
}

/// A label's mean over the reference's, with its interval and test.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct StepRatio {
    /// mean(label) / mean(reference).
    pub ratio: f64,
    /// Fieller's 95% interval of the ratio as `[low, high]`, its part at or above zero
    /// ([`crate::stats::positive_ratio_interval`]); `high` is `null` when it is open above.
    /// `None` (`null`) when a side has fewer than two samples, neither has spread, or
    /// nothing bounds it.
    pub ci95: Option<(f64, f64)>,
    /// Welch's test, when both sides have two samples and some spread.
    pub welch: Option<Welch>,
    /// `welch.p < ALPHA`, and the comparison tested (`untested` is `null`).
    pub significant: bool,
    /// Why the comparison has no significance test, shown `?`; `null` when tested.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub untested: Option<Untested>,
}

impl StepRatio {
    /// Ratio of two stats of separate runs; `None` when the reference mean is zero. A steps
    /// cell runs one round (the catalogue's `rounds` of an `elapsed` quantity), so two runs'
    /// iterations show the spread within each run only: never tested between runs
    /// ([`Untested::between_runs`], the gate's rule).
    pub fn of(reference: &StepStat, other: &StepStat) -> Option<Self> {
        if reference.mean_s == 0.0 {
            return None;
        }
        let ratio = other.mean_s / reference.mean_s;
        let (a, b) = (summarize(&reference.samples_s), summarize(&other.samples_s));
        // Open above when the reference mean is within noise of zero: `[low, ∞)`.
        let ci95 = positive_ratio_interval(&a, &b).filter(|(l, h)| *l > 0.0 || h.is_finite());
        let welch = welch(&reference.samples_s, &other.samples_s);
        let untested = Untested::of_samples(&reference.samples_s, &other.samples_s, welch.as_ref())
            .or_else(|| Untested::between_runs(STEPS_ROUNDS, STEPS_ROUNDS));
        let significant = untested.is_none() && welch.is_some_and(|w| w.p < ALPHA);
        Some(Self { ratio, ci95, welch, significant, untested })
    }

    /// `1.0213* [0.9912, 1.0514]`, `1.0213? [..]` when not tested; marks as [`crate::report::compare::Ratio::display`].
    pub fn display(&self) -> String {
        let mark = match (&self.untested, self.significant) {
            (Some(_), _) => "?",
            (None, true) => "*",
            (None, false) => "",
        };
        let ci =
            self.ci95.map(|(l, h)| crate::report::format::interval(l, h)).map(|i| format!(" {i}")).unwrap_or_default();
        format!("{:.4}{mark}{ci}", self.ratio)
    }
}

/// One row: a filesystem (or variant, or configuration) across the labels.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct StepRow {
    /// Configuration name (`ext4`, `ext4-nodelalloc`, `ext4-S-t2`).
    pub config: String,
    /// Per label, in label order; `None` (`null`) where the label has no such cell or step.
    pub values: Vec<Option<StepStat>>,
    /// Per label after the first: the ratio to the first label.
    pub ratios: Vec<Option<StepRatio>>,
}

/// One step's table.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct StepTable {
    /// Step index in the sequence, from 0.
    pub step: usize,
    /// The step as time(1) would name it (`tar zxf linux-2.5.63.tar.gz`).
    pub label: String,
    /// One row per configuration, in first-seen order.
    pub rows: Vec<StepRow>,
}

/// Steps runs compared: one table per step.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct StepsComparison {
    /// Run labels; the first is the reference.
    pub labels: Vec<String>,
    /// The iteration choice.
    pub iterations: Iterations,
    /// One table per step.
    pub tables: Vec<StepTable>,
}

/// Build the comparison of grouped steps cells (see [`super::build_groups`]).
pub fn compare_steps(groups: &[StepsGroup], labels: &[String], choice: Iterations) -> StepsComparison {
    let mut configs: Vec<&str> = Vec::new();
    let mut steps: Vec<(usize, String)> = Vec::new();
    for g in groups {
        if !configs.contains(&g.config.as_str()) {
            configs.push(&g.config);
        }
        for it in &g.iterations {
            for (j, s) in it.iter().enumerate() {
                let label = s.label.escaped(TextFormat::Terminal);
                if !steps.iter().any(|(k, l)| *k == j && *l == label) {
                    steps.push((j, label.into_owned()));
                }
            }
        }
    }
    steps.sort_by_key(|(j, _)| *j);
    let tables = steps
        .into_iter()
        .map(|(j, label)| {
            let rows = configs
                .iter()
                .map(|config| {
                    let values: Vec<Option<StepStat>> = labels
                        .iter()
                        .map(|l| {
                            let g = groups.iter().find(|g| g.label == *l && g.config == *config)?;
                            stat_of(&g.iterations, j, &label, choice)
                        })
                        .collect();
                    let ratios = values
                        .iter()
                        .skip(1)
                        .map(|v| match (&values[0], v) {
                            (Some(r), Some(o)) => StepRatio::of(r, o),
                            _ => None,
                        })
                        .collect();
                    StepRow { config: config.to_string(), values, ratios }
                })
                .collect();
            StepTable { step: j, label, rows }
        })
        .collect();
    StepsComparison { labels: labels.to_vec(), iterations: choice, tables }
}

fn stat_of(iterations: &[Vec<StepTiming>], j: usize, label: &str, choice: Iterations) -> Option<StepStat> {
    let mut its = Vec::new();
    let mut samples = Vec::new();
    for (i, s) in choice.step_samples(iterations, j) {
        if s.label == label {
            its.push(i + 1);
            samples.push(s.elapsed_us as f64 / 1e6);
        }
    }
    if samples.is_empty() {
        return None;
    }
    let s = summarize(&samples);
    Some(StepStat { iterations: its, samples_s: samples, mean_s: s.mean, sd_s: s.stddev })
}

/// `14.090 ± 0.210` (seconds), `14.090` for one sample, `-` for none.
fn show_stat(v: &Option<StepStat>) -> String {
    match v {
        None => "-".into(),
        Some(s) if s.samples_s.len() < 2 => format!("{:.3}", s.mean_s),
        Some(s) => format!("{:.3} ± {:.3}", s.mean_s, s.sd_s),
    }
}

/// What the chosen iterations were, for the paragraph above the tables.
fn iterations_text(cmp: &StepsComparison) -> String {
    let mut chosen: Vec<Vec<usize>> = Vec::new();
    for t in &cmp.tables {
        for r in &t.rows {
            for v in r.values.iter().flatten() {
                if !chosen.contains(&v.iterations) {
                    chosen.push(v.iterations.clone());
                }
            }
        }
    }
    let list = |v: &Vec<usize>| v.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    let which = match chosen.as_slice() {
        [one] if one.len() == 1 => format!("iteration {}", list(one)),
        [one] => format!("iterations {}", list(one)),
        _ => format!("per cell: {}", chosen.iter().map(list).collect::<Vec<_>>().join("; ")),
    };
    format!(
        "Numbers: elapsed seconds per step, mean ± standard deviation over the `{}` iterations less disturbed ones ({which}); lower is better.",
        cmp.iterations
    )
}

/// Write the comparison's tables: one per step, values then ratios, then the legend.
pub fn write_tables(m: &mut dyn Markup, cmp: &StepsComparison) {
    let Some(reference) = cmp.labels.first() else { return };
    m.paragraph(&iterations_text(cmp));
    for t in &cmp.tables {
        m.heading(3, &format!("step {}: {}", t.step + 1, t.label));
        let header: Vec<String> = std::iter::once("fs".to_string())
            .chain(cmp.labels.iter().map(|l| format!("{l} [s]")))
            .chain(cmp.labels.iter().skip(1).map(|l| format!("{l}/{reference}")))
            .collect();
        let rows: Vec<Vec<String>> = t
            .rows
            .iter()
            .map(|r| {
                std::iter::once(r.config.clone())
                    .chain(r.values.iter().map(show_stat))
                    .chain(r.ratios.iter().map(|x| x.as_ref().map(|x| m.literal(&x.display())).unwrap_or("-".into())))
                    .collect()
            })
            .collect();
        m.table(&header, &rows);
    }
    let legend = m.literal(&format!(
        "ratio = mean / mean of {reference} [95% CI; ∞: open above]; * significant (Welch's t-test on the iterations, alpha {ALPHA}), no mark: tested, not significant; {}; -: no such step or cell on a side (cells without a result are listed at the end)",
        crate::report::compare::untested_legend("iterations")
    ));
    m.paragraph(&legend);
    let within_run = cmp
        .tables
        .iter()
        .flat_map(|t| &t.rows)
        .flat_map(|r| r.ratios.iter().flatten())
        .filter(|r| r.untested == Some(Untested::WithinRunOnly))
        .count();
    if within_run > 0 {
        m.paragraph(&format!("?: {}", crate::verdict::within_run_remedies(within_run)));
    }
}

/// Seed 002's layout for a comparison: per label, per configuration, the time(1) lines of one
/// iteration ([`Iterations::representative`]); `!` ends a line whose step is flagged in that iteration.
pub fn seed_lines(groups: &[StepsGroup], choice: Iterations) -> String {
    let mut out = String::new();
    let mut last_label = None;
    for g in groups {
        let Some(i) = choice.representative(&g.iterations) else { continue };
        if last_label != Some(&g.label) {
            out.push_str("---------------------------------------------------------------------\n");
            out.push_str(&format!("{}:\n", g.label));
            last_label = Some(&g.label);
        }
        out.push_str(&format!("{}:\n", g.config));
        for (j, s) in g.iterations[i].iter().enumerate() {
            out.push_str(&s.seed_line());
            if g.flags.iter().any(|f| f.step == j && f.marks(i + 1)) {
                out.push_str(" !");
            }
            out.push('\n');
        }
    }
    out
}

/// Long-format CSV of a comparison: one record per (step, configuration, label).
pub fn csv(cmp: &StepsComparison) -> String {
    use crate::report::format::{csv_num, csv_record};
    let head = [
        "step",
        "label_cmd",
        "config",
        "label",
        "iterations",
        "n",
        "mean_s",
        "sd_s",
        "ratio",
        "ci95_low",
        "ci95_high",
        "p_value",
        "significant",
    ]
    .map(String::from);
    let mut out = csv_record(&head);
    for t in &cmp.tables {
        for r in &t.rows {
            for (k, (label, v)) in cmp.labels.iter().zip(&r.values).enumerate() {
                let Some(v) = v else { continue };
                let ratio = k.checked_sub(1).and_then(|k| r.ratios[k].as_ref());
                out.push_str(&csv_record(&[
                    (t.step + 1).to_string(),
                    t.label.clone(),
                    r.config.clone(),
                    label.clone(),
                    v.iterations.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(" "),
                    v.samples_s.len().to_string(),
                    format!("{:.6}", v.mean_s),
                    format!("{:.6}", v.sd_s),
                    csv_num(ratio.map(|x| x.ratio)),
                    csv_num(ratio.and_then(|x| x.ci95.map(|c| c.0))),
                    csv_num(ratio.and_then(|x| x.ci95.map(|c| c.1)).filter(|h| h.is_finite())),
                    csv_num(ratio.and_then(|x| x.welch.map(|w| w.p))),
                    ratio.filter(|x| x.untested.is_none()).map(|x| x.significant.to_string()).unwrap_or_default(),
                ]));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_has_an_interval_and_a_mark() {
        let s = |v: &[f64]| StepStat {
            iterations: (1..=v.len()).collect(),
            samples_s: v.to_vec(),
            mean_s: summarize(v).mean,
            sd_s: summarize(v).stddev,
        };
        let r = StepRatio::of(&s(&[10.0, 10.2, 9.8, 10.0]), &s(&[15.0, 15.3, 14.7, 15.0])).unwrap();
        // Two separate runs of one round each: Welch's p is tiny, yet the gate cannot decide
        // from within-run spread, so no star (new users' report, item 18).
        assert!((r.ratio - 1.5).abs() < 1e-12 && !r.significant && r.welch.is_some_and(|w| w.p < 0.001));
        assert_eq!(r.untested, Some(Untested::WithinRunOnly));
        let (lo, hi) = r.ci95.unwrap();
        assert!(lo < 1.5 && hi > 1.5 && lo > 1.4 && hi < 1.6, "{lo} {hi}");
        assert!(r.display().starts_with("1.5000? ["), "{}", r.display());
        let one = StepRatio::of(&s(&[2.0]), &s(&[3.0])).unwrap();
        assert_eq!(one.display(), "1.5000?");
    }
}
