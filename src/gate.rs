//! The CI regression gate: baseline vs candidate, per-cell verdicts (the command layer turns them into an exit code).
//!
//! Decision rule (criterion's): for every comparison the gate computes the
//! relative change of the means, `(mean_c - mean_b) / mean_b`, and its 95%
//! confidence interval from Welch's t interval of the difference of means
//! (Welch–Satterthwaite degrees of freedom, Student's t quantile), divided by
//! the baseline mean. A comparison is
//! - **regressed** when the whole interval lies beyond the threshold in the bad
//!   direction (fewer `total_loops`, more `elapsed`);
//! - **improved** when the whole interval lies beyond the threshold in the good
//!   direction;
//! - **unchanged** otherwise, including when either side has fewer than two
//!   samples and the values differ (the interval is then unbounded);
//! - **missing** when the cell (or step) exists on one side only, or a side has
//!   no samples (skipped or failed cell).
//!
//! When both sides have zero spread the interval collapses to the point change.
//! Only a regression fails the gate; missing comparisons are reported (JUnit
//! `<skipped>`) but do not fail it.
//!
//! What is compared: lat_fs cells by cell id on `total_loops` (loops/ms, higher
//! is better, one sample per repetition); steps cells per (cell id, step index)
//! on `elapsed` (lower is better, one sample per iteration).
//! Threshold: `--threshold` for everything, else the baseline scenario's
//! `[gate]` section (per lat_fs test or step op), else 5%.

use std::fmt::Write as _;

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use serde::Serialize;

use crate::exit::InputError;
use crate::model::{CellResult, CellStatus, Summary};
use crate::results::LoadedRun;
use crate::scenario::GateSpec;
use crate::stats::{summarize, t_quantile_975};

/// Why the gate cannot run.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    /// `--metric` names something this workload does not measure.
    #[error("--metric {metric}: the {workload} workload measures `{expected}`")]
    Metric {
        /// Requested metric.
        metric: String,
        /// Workload of the runs.
        workload: String,
        /// The metric it has.
        expected: &'static str,
    },
    /// The workload is unknown to the gate.
    #[error("unknown workload `{0}` in run.json")]
    Workload(String),
}

/// The metric a gate compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// lat_fs loops per ms over all tasks (higher is better).
    TotalLoops,
    /// Wall-clock time of a step in µs (lower is better).
    Elapsed,
}

impl Metric {
    /// Name as given to `--metric`.
    pub fn name(self) -> &'static str {
        match self {
            Metric::TotalLoops => "total_loops",
            Metric::Elapsed => "elapsed",
        }
    }

    /// Whether a larger value is better.
    pub fn higher_is_better(self) -> bool {
        matches!(self, Metric::TotalLoops)
    }
}

/// The verdict on one comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Significantly worse by more than the threshold.
    Regressed,
    /// Significantly better by more than the threshold.
    Improved,
    /// Neither.
    Unchanged,
    /// Present on one side only, or without samples.
    Missing,
}

impl Verdict {
    /// Lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Regressed => "regressed",
            Verdict::Improved => "improved",
            Verdict::Unchanged => "unchanged",
            Verdict::Missing => "missing",
        }
    }
}

/// Relative change of the means with its 95% confidence interval, as fractions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Change {
    /// `(mean_c - mean_b) / mean_b`.
    pub mean: f64,
    /// Lower end of the 95% interval (may be `-inf` with fewer than two samples: `null` in JSON).
    #[schemars(with = "Option<f64>")]
    pub ci_low: f64,
    /// Upper end of the 95% interval (`null` in JSON when unbounded).
    #[schemars(with = "Option<f64>")]
    pub ci_high: f64,
}

/// The relative change of `candidate` against `baseline`; `None` when either is
/// empty or the baseline mean is zero.
pub fn relative_change(baseline: &[f64], candidate: &[f64]) -> Option<Change> {
    if baseline.is_empty() || candidate.is_empty() {
        return None;
    }
    let (b, c) = (summarize(baseline), summarize(candidate));
    if b.mean == 0.0 {
        return None;
    }
    let mean = (c.mean - b.mean) / b.mean;
    let (vb, vc) = (b.stddev.powi(2) / b.n as f64, c.stddev.powi(2) / c.n as f64);
    if vb + vc == 0.0 {
        // No spread on either side: identical values or one sample each.
        if b.n < 2 || c.n < 2 {
            if mean == 0.0 {
                return Some(Change { mean, ci_low: 0.0, ci_high: 0.0 });
            }
            // One sample says nothing about noise: the interval is unbounded.
            return Some(Change { mean, ci_low: f64::NEG_INFINITY, ci_high: f64::INFINITY });
        }
        return Some(Change { mean, ci_low: mean, ci_high: mean });
    }
    if b.n < 2 || c.n < 2 {
        return Some(Change { mean, ci_low: f64::NEG_INFINITY, ci_high: f64::INFINITY });
    }
    // Welch–Satterthwaite degrees of freedom, as in report::compare::welch.
    let df = (vb + vc).powi(2) / (vb * vb / (b.n as f64 - 1.0) + vc * vc / (c.n as f64 - 1.0));
    let half = t_quantile_975(df) * (vb + vc).sqrt() / b.mean.abs();
    Some(Change { mean, ci_low: mean - half, ci_high: mean + half })
}

/// The verdict for a change under `threshold` (a fraction, 0.05 = 5%).
pub fn verdict(change: Option<Change>, threshold: f64, higher_is_better: bool) -> Verdict {
    let Some(c) = change else { return Verdict::Missing };
    let (worse, better) = if higher_is_better {
        (c.ci_high < -threshold, c.ci_low > threshold)
    } else {
        (c.ci_low > threshold, c.ci_high < -threshold)
    };
    if worse {
        Verdict::Regressed
    } else if better {
        Verdict::Improved
    } else {
        Verdict::Unchanged
    }
}

/// One compared quantity: a lat_fs cell, or one step of a steps cell.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct GateRow {
    /// `ext4-M-qoff-t1-chown` or `ext4-M-qoff-t1#2 untar` for steps.
    pub name: String,
    /// The metric compared.
    pub metric: Metric,
    /// The `[gate]` key the threshold came from (lat_fs test or step op).
    pub key: String,
    /// Threshold used, as a fraction.
    pub threshold: f64,
    /// Baseline samples summarised (`n = 0` when missing).
    pub baseline: Summary,
    /// Candidate samples summarised.
    pub candidate: Summary,
    /// The change, when both sides have samples.
    pub change: Option<Change>,
    /// The verdict.
    pub verdict: Verdict,
    /// Why, when not obvious (missing side, too few samples).
    pub note: Option<String>,
}

/// The gate's findings.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct GateReport {
    /// Baseline run directory name.
    pub baseline: String,
    /// Candidate run directory name.
    pub candidate: String,
    /// Every comparison, in the baseline's cell order, then candidate-only ones.
    pub rows: Vec<GateRow>,
    /// Warnings from the compatibility check and threshold lookup.
    pub warnings: Vec<String>,
}

impl GateReport {
    /// Number of rows with this verdict.
    pub fn count(&self, v: Verdict) -> usize {
        self.rows.iter().filter(|r| r.verdict == v).count()
    }
}

/// How to gate.
#[derive(Debug, Clone, PartialEq)]
pub struct GateOptions {
    /// `--threshold` as a fraction; overrides the scenario.
    pub threshold: Option<f64>,
    /// `--metric`, checked against the workload.
    pub metric: Option<String>,
}

/// One side's samples of one comparison, keyed by name.
struct Series {
    name: String,
    key: String,
    samples: Vec<f64>,
    note: Option<String>,
}

fn series_of(cell: &CellResult, metric: Metric) -> Vec<Series> {
    let not_ok = match cell.status {
        CellStatus::Ok => None,
        other => Some(format!(
            "cell is {}",
            serde_json::to_value(other).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
        )),
    };
    match metric {
        Metric::TotalLoops => {
            let samples = cell
                .latfs
                .as_ref()
                .map(|l| l.repetitions.iter().map(|r| r.total_loops_per_ms).collect())
                .unwrap_or_default();
            let key = cell.params.test.map(|t| t.name().to_string()).unwrap_or_default();
            vec![Series { name: cell.id.clone(), key, samples, note: not_ok }]
        }
        Metric::Elapsed => {
            let Some(st) = &cell.steps else {
                return vec![Series { name: cell.id.clone(), key: String::new(), samples: Vec::new(), note: not_ok }];
            };
            let width = st.iterations.iter().map(Vec::len).max().unwrap_or(0);
            (0..width)
                .map(|j| {
                    let first = st.iterations.iter().find_map(|it| it.get(j));
                    let op = first.map(|t| t.op.clone()).unwrap_or_default();
                    Series {
                        name: format!("{}#{j} {op}", cell.id),
                        key: op,
                        samples: st.iterations.iter().filter_map(|it| it.get(j)).map(|t| t.elapsed_us as f64).collect(),
                        note: not_ok.clone(),
                    }
                })
                .collect()
        }
    }
}

fn metric_for(workload: &str, requested: Option<&str>) -> Result<Metric, GateError> {
    let own = match workload {
        "lat_fs" => Metric::TotalLoops,
        "steps" => Metric::Elapsed,
        other => return Err(GateError::Workload(other.into())),
    };
    match requested {
        Some(m) if m != own.name() => {
            Err(GateError::Metric { metric: m.into(), workload: workload.into(), expected: own.name() })
        }
        _ => Ok(own),
    }
}

/// The `[gate]` thresholds of a run's scenario text; default 5% (with a warning) when unreadable.
fn gate_spec_of(run: &LoadedRun, warnings: &mut Vec<String>) -> GateSpec {
    // Validating the whole scenario can fail on another host (an archive path that
    // does not exist here) while its thresholds are still wanted: then only the
    // `[gate]` table is read, with the same types and units as the scenario.
    match crate::scenario::parse_str(&run.meta.scenario_text, &run.meta.scenario_origin) {
        Ok(s) => s.gate,
        Err(first) => match gate_table_only(&run.meta.scenario_text) {
            Ok(spec) => spec,
            Err(why) => {
                warnings.push(format!(
                    "cannot read [gate] thresholds from the baseline's scenario ({first}; {why}); using 5%"
                ));
                GateSpec::default()
            }
        },
    }
}

fn gate_table_only(text: &str) -> Result<GateSpec, String> {
    use crate::scenario::units::parse_percent;
    let t: toml::Table = text.parse().map_err(|e: toml::de::Error| e.message().to_string())?;
    let Some(g) = t.get("gate") else { return Ok(GateSpec::default()) };
    let g: crate::scenario::file::GateFile =
        g.clone().try_into().map_err(|e: toml::de::Error| format!("[gate]: {}", e.message()))?;
    let mut spec = GateSpec::default();
    if let Some(t) = &g.threshold {
        spec.threshold = parse_percent(t).map_err(|e| format!("gate.threshold: {e}"))?;
    }
    for (k, v) in &g.thresholds {
        spec.per_key.insert(k.clone(), parse_percent(v).map_err(|e| format!("gate.thresholds.{k}: {e}"))?);
    }
    Ok(spec)
}

/// Compare two loaded runs.
pub fn evaluate(baseline: &LoadedRun, candidate: &LoadedRun, opts: &GateOptions) -> anyhow::Result<GateReport> {
    let pair = vec![("baseline".to_string(), baseline.clone()), ("candidate".to_string(), candidate.clone())];
    let mut warnings = crate::report::check_compatible(&pair).map_err(|e| InputError::anyhow(e.to_string()))?;
    let metric =
        metric_for(&baseline.meta.workload, opts.metric.as_deref()).map_err(|e| InputError::anyhow(e.to_string()))?;
    let spec = match opts.threshold {
        Some(t) => GateSpec { threshold: t, per_key: Default::default() },
        None => gate_spec_of(baseline, &mut warnings),
    };
    for (side, run) in [("baseline", baseline), ("candidate", candidate)] {
        for p in &run.problems {
            warnings.push(format!("{side}: {p}"));
        }
    }
    let base: Vec<Series> = baseline.cells.iter().flat_map(|c| series_of(c, metric)).collect();
    let cand: Vec<Series> = candidate.cells.iter().flat_map(|c| series_of(c, metric)).collect();
    let mut rows = Vec::new();
    let row = |name: &str, key: &str, b: &[f64], c: &[f64], note: Option<String>| {
        let threshold = spec.threshold_for(key);
        let change = relative_change(b, c);
        let mut v = verdict(change, threshold, metric.higher_is_better());
        let note = note.or_else(|| {
            (v == Verdict::Unchanged && (b.len() < 2 || c.len() < 2) && change.is_some_and(|c| c.mean != 0.0))
                .then(|| "fewer than 2 samples on a side: cannot be significant".to_string())
        });
        if b.is_empty() || c.is_empty() {
            v = Verdict::Missing;
        }
        GateRow {
            name: name.into(),
            metric,
            key: key.into(),
            threshold,
            baseline: summarize(b),
            candidate: summarize(c),
            change,
            verdict: v,
            note,
        }
    };
    for b in &base {
        match cand.iter().find(|c| c.name == b.name) {
            Some(c) => {
                let note = match (&b.note, &c.note) {
                    (Some(n), _) if b.samples.is_empty() => Some(format!("baseline: {n}")),
                    (_, Some(n)) if c.samples.is_empty() => Some(format!("candidate: {n}")),
                    _ if b.samples.is_empty() || c.samples.is_empty() => Some("no samples".into()),
                    _ => None,
                };
                rows.push(row(&b.name, &b.key, &b.samples, &c.samples, note));
            }
            None => rows.push(row(&b.name, &b.key, &b.samples, &[], Some("not in the candidate".into()))),
        }
    }
    for c in cand.iter().filter(|c| !base.iter().any(|b| b.name == c.name)) {
        rows.push(row(&c.name, &c.key, &[], &c.samples, Some("not in the baseline".into())));
    }
    let name = |r: &LoadedRun| r.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(GateReport { baseline: name(baseline), candidate: name(candidate), rows, warnings })
}

fn pct(x: f64) -> String {
    if x.is_infinite() { if x > 0.0 { "+inf".into() } else { "-inf".into() } } else { format!("{:+.1}%", x * 100.0) }
}

fn num(s: &Summary) -> String {
    if s.n == 0 { "-".into() } else { format!("{:.4}", s.median) }
}

fn cells_of(r: &GateRow) -> [String; 7] {
    let (change, ci) = match r.change {
        Some(c) => (pct(c.mean), format!("[{}, {}]", pct(c.ci_low), pct(c.ci_high))),
        None => ("-".into(), "-".into()),
    };
    [r.name.clone(), r.metric.name().into(), num(&r.baseline), num(&r.candidate), change, ci, r.verdict.name().into()]
}

const HEADER: [&str; 7] =
    ["cell", "metric", "baseline median", "candidate median", "change of means", "95% CI", "verdict"];

fn summary_line(rep: &GateReport) -> String {
    format!(
        "{} regressed, {} improved, {} unchanged, {} missing",
        rep.count(Verdict::Regressed),
        rep.count(Verdict::Improved),
        rep.count(Verdict::Unchanged),
        rep.count(Verdict::Missing)
    )
}

/// The verdict table as plain cells (header, one row per comparison) and the summary line,
/// for renderers of other formats (the HTML report).
pub fn table_cells(rep: &GateReport) -> (Vec<String>, Vec<Vec<String>>, String) {
    let header = HEADER.iter().map(|h| h.to_string()).collect();
    let rows = rep.rows.iter().map(|r| cells_of(r).to_vec()).collect();
    (header, rows, summary_line(rep))
}

/// The terminal table plus a summary line.
pub fn render_table(rep: &GateReport) -> String {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED).set_header(HEADER);
    for r in &rep.rows {
        t.add_row(cells_of(r));
    }
    format!("{t}\ngate: {}\n", summary_line(rep))
}

/// A Markdown summary for a CI job summary or a PR comment.
pub fn render_markdown(rep: &GateReport) -> String {
    let mut s = String::new();
    let status = if rep.count(Verdict::Regressed) > 0 { "❌ regression" } else { "✅ no regression" };
    let _ = writeln!(s, "## fsbench gate: {status}\n");
    let _ = writeln!(s, "Baseline `{}`, candidate `{}`: {}.\n", rep.baseline, rep.candidate, summary_line(rep));
    let _ = writeln!(
        s,
        "A cell regresses only when the whole 95% confidence interval of the relative change of means lies beyond its threshold.\n"
    );
    let esc = |x: &str| x.replace('|', "\\|");
    let _ = writeln!(s, "| {} | threshold |", HEADER.join(" | "));
    let _ = writeln!(s, "|{}", "---|".repeat(HEADER.len() + 1));
    for r in &rep.rows {
        let mut c = cells_of(r).map(|x| esc(&x));
        if r.verdict == Verdict::Regressed {
            c[6] = format!("**{}**", c[6]);
        }
        let _ = writeln!(s, "| {} | {} |", c.join(" | "), pct(r.threshold).trim_start_matches('+'));
    }
    for w in &rep.warnings {
        let _ = writeln!(s, "\n> warning: {}", esc(w));
    }
    s
}

fn xml_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            // Control characters are not allowed in XML 1.0.
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r') => o.push('?'),
            c => o.push(c),
        }
    }
    o
}

/// JUnit XML: one `<testcase>` per comparison, `<failure>` when regressed, `<skipped>` when missing.
pub fn render_junit(rep: &GateReport) -> String {
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let (n, f, k) = (rep.rows.len(), rep.count(Verdict::Regressed), rep.count(Verdict::Missing));
    let _ =
        writeln!(s, "<testsuites name=\"fsbench gate\" tests=\"{n}\" failures=\"{f}\" skipped=\"{k}\" errors=\"0\">");
    let suite = xml_escape(&format!("fsbench gate {} vs {}", rep.baseline, rep.candidate));
    let _ = writeln!(s, "  <testsuite name=\"{suite}\" tests=\"{n}\" failures=\"{f}\" skipped=\"{k}\" errors=\"0\">");
    for r in &rep.rows {
        let c = cells_of(r);
        let detail = format!(
            "{}: baseline median {}, candidate median {}, change {} (95% CI {}), threshold {}: {}{}",
            r.metric.name(),
            c[2],
            c[3],
            c[4],
            c[5],
            pct(r.threshold),
            r.verdict.name(),
            r.note.as_ref().map(|n| format!(" ({n})")).unwrap_or_default()
        );
        let _ = write!(
            s,
            "    <testcase classname=\"fsbench.gate.{}\" name=\"{}\"",
            xml_escape(r.metric.name()),
            xml_escape(&r.name)
        );
        match r.verdict {
            Verdict::Regressed => {
                let _ = writeln!(
                    s,
                    ">\n      <failure message=\"regressed\" type=\"regression\">{}</failure>\n    </testcase>",
                    xml_escape(&detail)
                );
            }
            Verdict::Missing => {
                let _ = writeln!(s, ">\n      <skipped message=\"{}\"/>\n    </testcase>", xml_escape(&detail));
            }
            _ => {
                let _ = writeln!(s, ">\n      <system-out>{}</system-out>\n    </testcase>", xml_escape(&detail));
            }
        }
    }
    s.push_str("  </testsuite>\n</testsuites>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tight_ten_percent_drop_regresses_and_wide_does_not() {
        let b = [1000.0, 1001.0, 999.0, 1000.5, 999.5];
        let c = [900.0, 901.0, 899.0, 900.5, 899.5];
        let ch = relative_change(&b, &c).unwrap();
        assert!((ch.mean + 0.1).abs() < 1e-9);
        assert_eq!(verdict(Some(ch), 0.05, true), Verdict::Regressed);
        assert_eq!(verdict(Some(ch), 0.05, false), Verdict::Improved);
        let bw = [1000.0, 1300.0, 700.0, 1150.0, 850.0];
        let cw = [900.0, 1200.0, 600.0, 1050.0, 750.0];
        assert_eq!(verdict(relative_change(&bw, &cw), 0.05, true), Verdict::Unchanged);
    }

    #[test]
    fn interval_matches_hand_computation() {
        // b: mean 10, var 1 (n 3); c: mean 12, var 1 (n 3): se = sqrt(2/3), df = 4, t = 2.776.
        let ch = relative_change(&[9.0, 10.0, 11.0], &[11.0, 12.0, 13.0]).unwrap();
        let half = 2.776 * (2.0f64 / 3.0).sqrt() / 10.0;
        assert!((ch.mean - 0.2).abs() < 1e-12);
        assert!((ch.ci_low - (0.2 - half)).abs() < 1e-9 && (ch.ci_high - (0.2 + half)).abs() < 1e-9);
    }

    #[test]
    fn single_samples_never_regress() {
        let ch = relative_change(&[100.0], &[50.0]);
        assert_eq!(verdict(ch, 0.05, true), Verdict::Unchanged);
        assert_eq!(verdict(relative_change(&[], &[1.0]), 0.05, true), Verdict::Missing);
        assert_eq!(verdict(relative_change(&[0.0, 0.0], &[1.0, 1.0]), 0.05, true), Verdict::Missing);
    }

    #[test]
    fn gate_table_is_read_without_the_rest_of_the_scenario() {
        let spec = gate_table_only(
            "name = 1\n[archive]\npath = \"/nowhere\"\n[gate]\nthreshold = \"3%\"\nthresholds = { untar = \"10%\" }\n",
        )
        .unwrap();
        assert!(
            (spec.threshold_for("sync") - 0.03).abs() < 1e-12 && (spec.threshold_for("untar") - 0.10).abs() < 1e-12
        );
        assert!(gate_table_only("[gate]\nthreshold = \"five\"\n").is_err());
    }

    #[test]
    fn xml_is_escaped() {
        assert_eq!(xml_escape("a<b & \"c\"\u{1}"), "a&lt;b &amp; &quot;c&quot;?");
    }
}
