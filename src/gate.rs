//! The CI regression gate: baseline vs candidate, per-cell verdicts (the command layer turns them into an exit code).
//!
//! Decision rule (criterion's, made honest about "cannot tell"): for every
//! comparison the gate computes the relative change of the means,
//! `(mean_c - mean_b) / mean_b`, and its 95% confidence interval: Fieller's
//! interval of the ratio of the means, less 1 ([`relative_change`]; the interval,
//! and when it is unbounded, is stated once, in [`crate::stats`]). With a
//! threshold `T` and the metric's direction of "worse" ([`Direction`]), a comparison is
//! - **regressed** when the whole interval lies beyond `T` in the worse
//!   direction (fewer `total_loops`, more `elapsed`);
//! - **improved** when the whole interval lies beyond `T` in the better direction;
//! - **unchanged** when the whole interval lies inside `[-T, +T]`: the data
//!   rule out a change as large as the threshold;
//! - **inconclusive** otherwise: the interval straddles `-T` or `+T`, so the
//!   data cannot tell a change beyond the threshold from noise. An unbounded
//!   interval (e.g. fewer than two samples on a side) is never unchanged: it is
//!   inconclusive;
//! - **missing** when the cell (or step) exists on one side only, or a side has
//!   no samples (skipped, failed or disturbed cell).
//!
//! The rule is [`Verdict::decide`], the one place it is written. A regression
//! fails the gate; what inconclusive and missing do to the exit status is the
//! command layer's policy (`--inconclusive`, `--bisect`).
//!
//! What is compared: lat_fs cells by cell id on `total_loops` (loops/ms, higher
//! is better, one sample per undisturbed repetition); steps cells per (cell id,
//! step index) on `elapsed` in seconds (lower is better, one sample per
//! undisturbed *steady* iteration: every iteration whose `rm_rf` removed
//! something, from the second on when that is not recorded — iteration 1's
//! `rm -rf` of nothing measures no filesystem work; see
//! `report::compare_steps::Iterations`).
//! Threshold: `--threshold` for everything, else the baseline scenario's
//! `[gate]` section (per lat_fs test or step op), else 5%.

use crate::model::TextFormat;
use std::fmt::Write as _;

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use serde::Serialize;

use crate::exit::InputError;
use crate::model::{CellResult, CellStatus, Summary, WorkloadKind};
use crate::results::LoadedRun;
use crate::scenario::GateSpec;
use crate::stats::summarize;
pub use crate::stats::{Change, relative_change};

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
}

/// The metric a gate compares; serialized as its `--metric` name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// lat_fs loops per ms over all tasks (higher is better).
    TotalLoops,
    /// Wall-clock time of a step in seconds (lower is better).
    Elapsed,
    /// A percentile of lat_fs operation latency in µs, from `latency = "histogram"` runs
    /// (lower is better): `--metric p99`.
    Latency(crate::monitor::latency::Percentile),
}

impl Serialize for Metric {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl Metric {
    /// Name as given to `--metric`.
    pub fn name(self) -> &'static str {
        match self {
            Metric::TotalLoops => "total_loops",
            Metric::Elapsed => "elapsed",
            Metric::Latency(p) => p.name(),
        }
    }

    /// Whether a larger value is better.
    pub fn higher_is_better(self) -> bool {
        self.direction() == Direction::HigherIsBetter
    }

    /// Which way is better for this metric.
    pub fn direction(self) -> Direction {
        match self {
            Metric::TotalLoops => Direction::HigherIsBetter,
            Metric::Elapsed | Metric::Latency(_) => Direction::LowerIsBetter,
        }
    }

    /// Unit of the samples as printed.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::TotalLoops => "loops/ms",
            Metric::Elapsed => "s",
            Metric::Latency(_) => "µs",
        }
    }

    /// The metric column: name, unit and which way is worse (`elapsed [s], higher is worse`).
    pub fn described(self) -> String {
        format!("{} [{}], {}", self.name(), self.unit(), self.direction().worse())
    }
}

/// Which way a metric gets better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// More is better (throughput): worse means lower.
    HigherIsBetter,
    /// Less is better (time): worse means higher.
    LowerIsBetter,
}

impl Direction {
    /// The direction of "worse" in words, for reports: `lower is worse`.
    pub fn worse(self) -> &'static str {
        match self {
            Direction::HigherIsBetter => "lower is worse",
            Direction::LowerIsBetter => "higher is worse",
        }
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
    /// The whole interval lies inside ±threshold: no change as large as the threshold.
    Unchanged,
    /// The interval straddles the threshold: the data cannot tell.
    Inconclusive,
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
            Verdict::Inconclusive => "inconclusive",
            Verdict::Missing => "missing",
        }
    }

    /// The verdict for a relative change under `threshold` (a fraction, 0.05 = 5%):
    /// the gate's whole decision rule (see the module documentation).
    pub fn decide(change: Option<Change>, threshold: f64, direction: Direction) -> Verdict {
        let Some(c) = change else { return Verdict::Missing };
        if c.mean.is_nan() || c.ci_low.is_nan() || c.ci_high.is_nan() || !threshold.is_finite() {
            return Verdict::Inconclusive;
        }
        let t = threshold.abs();
        // Bounds may be infinite: comparisons below stay correct, and an infinite
        // end can never be inside ±t, so it is never `unchanged`.
        let (below, above) = (c.ci_high < -t, c.ci_low > t);
        let (worse, better) = match direction {
            Direction::HigherIsBetter => (below, above),
            Direction::LowerIsBetter => (above, below),
        };
        if worse {
            Verdict::Regressed
        } else if better {
            Verdict::Improved
        } else if c.ci_low >= -t && c.ci_high <= t {
            Verdict::Unchanged
        } else {
            Verdict::Inconclusive
        }
    }
}

/// One compared quantity: a lat_fs cell, or one step of a steps cell.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct GateRow {
    /// `ext4-M-qoff-t1-chown` or `ext4-M-qoff-t1#2 untar` for steps.
    pub name: String,
    /// The metric compared, by its `--metric` name (`total_loops`, `elapsed`, `p99`).
    #[schemars(with = "String")]
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
    /// `--allow-missing`: cells without samples on both sides do not fail the gate
    /// (the exit policy is the command's; the report shows them either way).
    pub allow_missing: bool,
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
            let samples = cell.latfs.as_ref().map(|l| l.samples(|r| Some(r.total_loops_per_ms))).unwrap_or_default();
            let key = cell.params.test.map(|t| t.name().to_string()).unwrap_or_default();
            vec![Series { name: cell.id.clone(), key, samples, note: not_ok }]
        }
        Metric::Latency(p) => {
            let samples: Vec<f64> = cell
                .latfs
                .as_ref()
                .map(|l| l.samples(|r| r.latency_dist.as_ref().map(|d| p.of(d) as f64 / 1e3)))
                .unwrap_or_default();
            let key = cell.params.test.map(|t| t.name().to_string()).unwrap_or_default();
            let note = not_ok.or_else(|| {
                (samples.is_empty() && cell.latfs.is_some())
                    .then(|| "no latency histogram: run with `latency = \"histogram\"`".to_string())
            });
            vec![Series { name: cell.id.clone(), key, samples, note }]
        }
        Metric::Elapsed => {
            let Some(st) = &cell.steps else {
                return vec![Series { name: cell.id.clone(), key: String::new(), samples: Vec::new(), note: not_ok }];
            };
            let width = st.iterations.iter().map(Vec::len).max().unwrap_or(0);
            (0..width)
                .map(|j| {
                    let first = st.iterations.iter().find_map(|it| it.get(j));
                    let op = first.map(|t| t.op.escaped(TextFormat::Terminal).into_owned()).unwrap_or_default();
                    Series {
                        name: format!("{}#{j} {op}", cell.id),
                        key: op,
                        samples: crate::report::Iterations::Steady
                            .step_samples(&st.iterations, j)
                            .into_iter()
                            .map(|(_, t)| t.elapsed_us as f64 / 1e6)
                            .collect(),
                        note: not_ok.clone(),
                    }
                })
                .collect()
        }
    }
}

fn metric_for(workload: WorkloadKind, requested: Option<&str>) -> Result<Metric, GateError> {
    let own = match workload {
        WorkloadKind::LatFs => Metric::TotalLoops,
        WorkloadKind::Steps => Metric::Elapsed,
    };
    if own == Metric::TotalLoops
        && let Some(p) = requested.and_then(crate::monitor::latency::Percentile::parse)
    {
        return Ok(Metric::Latency(p));
    }
    let expected = if own == Metric::TotalLoops { "total_loops, or p50, p90, p99, p99.9, max" } else { own.name() };
    match requested {
        Some(m) if m != own.name() => {
            Err(GateError::Metric { metric: m.into(), workload: workload.to_string(), expected })
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
        metric_for(baseline.meta.workload, opts.metric.as_deref()).map_err(|e| InputError::anyhow(e.to_string()))?;
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
    if let Metric::Latency(p) = metric
        && base.iter().chain(&cand).all(|s| s.samples.is_empty())
    {
        return Err(InputError::anyhow(format!(
            "--metric {}: neither run recorded a latency histogram; run with `latency = \"histogram\"` in [workload] \
             (or `--set workload.latency=histogram`), or gate on total_loops",
            p.name()
        )));
    }
    let mut rows = Vec::new();
    let row = |name: &str, key: &str, b: &[f64], c: &[f64], note: Option<String>| {
        let threshold = spec.threshold_for(key);
        let change = relative_change(b, c);
        let mut v = Verdict::decide(change, threshold, metric.direction());
        let note = note
            .or_else(|| {
                (v == Verdict::Inconclusive && !b.is_empty() && b.iter().all(|x| *x == 0.0))
                    .then(|| "the baseline measured 0 (below the clock's resolution): no relative change".to_string())
            })
            .or_else(|| {
                (v == Verdict::Inconclusive && (b.len() < 2 || c.len() < 2))
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

fn num(s: &Summary, metric: Metric) -> String {
    if s.n == 0 { "-".into() } else { format!("{:.4} {}", s.median, metric.unit()) }
}

fn cells_of(r: &GateRow) -> [String; 7] {
    let (change, ci) = match r.change {
        Some(c) => (pct(c.mean), format!("[{}, {}]", pct(c.ci_low), pct(c.ci_high))),
        None => ("-".into(), "-".into()),
    };
    [
        r.name.clone(),
        r.metric.described(),
        num(&r.baseline, r.metric),
        num(&r.candidate, r.metric),
        change,
        ci,
        r.verdict.name().into(),
    ]
}

const HEADER: [&str; 7] =
    ["cell", "metric", "baseline median", "candidate median", "change of means", "95% CI", "verdict"];

fn summary_line(rep: &GateReport) -> String {
    format!(
        "{} regressed, {} improved, {} unchanged, {} inconclusive, {} missing",
        rep.count(Verdict::Regressed),
        rep.count(Verdict::Improved),
        rep.count(Verdict::Unchanged),
        rep.count(Verdict::Inconclusive),
        rep.count(Verdict::Missing)
    )
}

/// What the verdicts mean, one sentence per line, shared by the Markdown and terminal texts.
const RULE: &str = "regressed/improved: the whole 95% CI of the change of means lies beyond the threshold; \
unchanged: the whole CI lies inside ±threshold; inconclusive: the CI straddles the threshold (the data cannot tell)";

/// The verdict table as plain cells (header, one row per comparison) and the summary line,
/// for renderers of other formats (the HTML report).
pub fn table_cells(rep: &GateReport) -> (Vec<String>, Vec<Vec<String>>, String) {
    let header = HEADER.iter().map(|h| h.to_string()).collect();
    let rows = rep.rows.iter().map(|r| cells_of(r).to_vec()).collect();
    (header, rows, summary_line(rep))
}

/// The terminal table, laid out for `width` columns, plus the rule and a summary line.
///
/// Narrower than the other formats' table so that it fits a pipe's 100 columns: what each
/// metric is (unit, which way is worse) is said once under the table instead of on every
/// row, the medians go without their unit, the change and its interval share a column, and
/// the metric column is left out when every row has the same metric.
pub fn render_table(rep: &GateReport, width: u16) -> String {
    let mut metrics: Vec<Metric> = Vec::new();
    for r in &rep.rows {
        if !metrics.contains(&r.metric) {
            metrics.push(r.metric);
        }
    }
    let one_metric = metrics.len() <= 1;
    let mut header = vec!["cell", "metric", "baseline", "candidate", "change [95% CI]", "verdict"];
    if one_metric {
        header.remove(1);
    }
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED)
        .set_content_arrangement(comfy_table::ContentArrangement::Dynamic)
        .set_width(width)
        .set_header(header);
    // Names and verdicts are read whole; the numbers' column gives way first.
    for i in [0, t.column_count() - 1] {
        if let Some(c) = t.column_mut(i) {
            c.set_constraint(comfy_table::ColumnConstraint::ContentWidth);
        }
    }
    for r in &rep.rows {
        let median = |s: &Summary| if s.n == 0 { "-".to_string() } else { format!("{:.4}", s.median) };
        let change = match r.change {
            Some(c) => format!("{} [{}, {}]", pct(c.mean), pct(c.ci_low), pct(c.ci_high)),
            None => "-".into(),
        };
        let mut row =
            vec![r.name.clone(), r.metric.name().to_string(), median(&r.baseline), median(&r.candidate), change];
        row.push(r.verdict.name().into());
        if one_metric {
            row.remove(1);
        }
        t.add_row(row);
    }
    let described: Vec<String> = metrics.iter().map(|m| m.described()).collect();
    let wrap = |text: &str| crate::text::wrap(text, width as usize, "  ");
    // Why a row is missing or cannot be significant: the table has no room for it.
    let notes: String =
        rep.rows.iter().filter_map(|r| r.note.as_ref().map(|n| wrap(&format!("{}: {n}", r.name)) + "\n")).collect();
    format!(
        "{t}\n{notes}{}\n{}\ngate: {}\n",
        wrap(&format!("metric: {}; baseline, candidate: medians; change: of the means", described.join("; "))),
        wrap(RULE),
        summary_line(rep)
    )
}

/// A Markdown summary for a CI job summary or a PR comment.
pub fn render_markdown(rep: &GateReport) -> String {
    let mut s = String::new();
    let status = if rep.count(Verdict::Regressed) > 0 {
        "❌ regression"
    } else if rep.count(Verdict::Inconclusive) > 0 {
        "⚠️ no regression found, some comparisons inconclusive"
    } else {
        "✅ no regression"
    };
    let _ = writeln!(s, "## fsbench gate: {status}\n");
    // Labels, cell names and warnings come from result files: one line of inline text each.
    let esc = crate::report::format::markdown_cell;
    let _ = writeln!(
        s,
        "Baseline {}, candidate {}: {}.\n",
        code_span(&rep.baseline),
        code_span(&rep.candidate),
        summary_line(rep)
    );
    let _ = writeln!(s, "Verdicts: {RULE}.\n");
    let _ = writeln!(s, "| {} | threshold | worse when |", HEADER.join(" | "));
    let _ = writeln!(s, "|{}", "---|".repeat(HEADER.len() + 2));
    for r in &rep.rows {
        let mut c = cells_of(r).map(|x| esc(&x));
        if matches!(r.verdict, Verdict::Regressed | Verdict::Inconclusive) {
            c[6] = format!("**{}**", c[6]);
        }
        let worse = if r.metric.higher_is_better() { "lower" } else { "higher" };
        let _ = writeln!(s, "| {} | {} | {worse} |", c.join(" | "), pct(r.threshold).trim_start_matches('+'));
    }
    for m in metrics_of(rep) {
        let _ = writeln!(s, "\n`{}`: {}.", m.name(), m.direction().worse());
    }
    for w in &rep.warnings {
        let _ = writeln!(s, "\n> warning: {}", esc(w));
    }
    s
}

/// `text` as a Markdown code span: delimited by more backticks than it holds in a row,
/// so a label with a backtick cannot end the span and be read as Markdown (nor a line
/// break in it end the paragraph).
fn code_span(text: &str) -> String {
    let text = text.replace(['\n', '\r'], " ");
    let run = text.split(|c: char| c != '`').map(str::len).max().unwrap_or(0);
    let ticks = "`".repeat(run + 1);
    let pad = if run > 0 { " " } else { "" };
    format!("{ticks}{pad}{text}{pad}{ticks}")
}

/// The metrics of a report's rows, each once, in order of appearance.
fn metrics_of(rep: &GateReport) -> Vec<Metric> {
    let mut out: Vec<Metric> = Vec::new();
    for r in &rep.rows {
        if !out.contains(&r.metric) {
            out.push(r.metric);
        }
    }
    out
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

/// JUnit XML: one `<testcase>` per comparison, `<failure>` when regressed (and when
/// inconclusive if `inconclusive_fails`), `<skipped>` when missing.
pub fn render_junit(rep: &GateReport, inconclusive_fails: bool) -> String {
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let fails = |v: Verdict| v == Verdict::Regressed || (inconclusive_fails && v == Verdict::Inconclusive);
    let (n, f, k) = (rep.rows.len(), rep.rows.iter().filter(|r| fails(r.verdict)).count(), rep.count(Verdict::Missing));
    let _ =
        writeln!(s, "<testsuites name=\"fsbench gate\" tests=\"{n}\" failures=\"{f}\" skipped=\"{k}\" errors=\"0\">");
    let suite = xml_escape(&format!("fsbench gate {} vs {}", rep.baseline, rep.candidate));
    let _ = writeln!(s, "  <testsuite name=\"{suite}\" tests=\"{n}\" failures=\"{f}\" skipped=\"{k}\" errors=\"0\">");
    for r in &rep.rows {
        let c = cells_of(r);
        let detail = format!(
            "{}: baseline median {}, candidate median {}, change {} (95% CI {}), threshold {}: {}{}",
            r.metric.described(),
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
            Verdict::Inconclusive if inconclusive_fails => {
                let _ = writeln!(
                    s,
                    ">\n      <failure message=\"inconclusive\" type=\"inconclusive\">{}</failure>\n    </testcase>",
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

    fn ch(mean: f64, lo: f64, hi: f64) -> Option<Change> {
        Some(Change { mean, ci_low: lo, ci_high: hi })
    }

    #[test]
    fn verdict_table() {
        use Direction::{HigherIsBetter as Up, LowerIsBetter as Down};
        use Verdict::*;
        let inf = f64::INFINITY;
        // (change, direction, expected) at a 5% threshold.
        let table = [
            (ch(-0.10, -0.12, -0.08), Up, Regressed),
            (ch(-0.10, -0.12, -0.08), Down, Improved),
            (ch(0.10, 0.08, 0.12), Down, Regressed),
            (ch(0.10, 0.08, 0.12), Up, Improved),
            (ch(0.01, -0.02, 0.04), Up, Unchanged),
            (ch(0.0, -0.05, 0.05), Up, Unchanged),
            // The seed of this rule: -12.1% [-28.6%, +4.4%] is not "unchanged".
            (ch(-0.121, -0.286, 0.044), Up, Inconclusive),
            (ch(-0.121, -0.286, 0.044), Down, Inconclusive),
            (ch(0.02, -0.01, 0.07), Up, Inconclusive),
            (ch(0.0, -0.06, 0.06), Down, Inconclusive),
            // Beyond the threshold on one end only, yet the whole CI is on the bad side: still straddles.
            (ch(-0.06, -0.08, -0.04), Up, Inconclusive),
            // Non-finite bounds are never unchanged.
            (ch(0.0, -inf, inf), Up, Inconclusive),
            (ch(0.0, f64::NAN, 0.01), Up, Inconclusive),
            (ch(-0.5, -inf, -0.2), Up, Regressed),
            (None, Up, Missing),
        ];
        for (i, (c, d, want)) in table.into_iter().enumerate() {
            assert_eq!(Verdict::decide(c, 0.05, d), want, "row {i}: {c:?} {d:?}");
        }
    }

    #[test]
    fn tight_ten_percent_drop_regresses_and_wide_is_inconclusive() {
        let b = [1000.0, 1001.0, 999.0, 1000.5, 999.5];
        let c = [900.0, 901.0, 899.0, 900.5, 899.5];
        let ch = relative_change(&b, &c).unwrap();
        assert!((ch.mean + 0.1).abs() < 1e-9);
        assert_eq!(Verdict::decide(Some(ch), 0.05, Direction::HigherIsBetter), Verdict::Regressed);
        assert_eq!(Verdict::decide(Some(ch), 0.05, Direction::LowerIsBetter), Verdict::Improved);
        let bw = [1000.0, 1300.0, 700.0, 1150.0, 850.0];
        let cw = [900.0, 1200.0, 600.0, 1050.0, 750.0];
        assert_eq!(Verdict::decide(relative_change(&bw, &cw), 0.05, Direction::HigherIsBetter), Verdict::Inconclusive);
        let same = [1000.0, 1001.0, 999.0, 1000.5, 999.5];
        assert_eq!(Verdict::decide(relative_change(&b, &same), 0.05, Direction::HigherIsBetter), Verdict::Unchanged);
    }

    #[test]
    fn single_samples_are_inconclusive_never_regressed_or_unchanged() {
        let up = Direction::HigherIsBetter;
        assert_eq!(Verdict::decide(relative_change(&[100.0], &[50.0]), 0.05, up), Verdict::Inconclusive);
        assert_eq!(Verdict::decide(relative_change(&[100.0], &[100.0]), 0.05, up), Verdict::Inconclusive);
        assert_eq!(Verdict::decide(relative_change(&[], &[1.0]), 0.05, up), Verdict::Missing);
        // A step faster than the clock's microsecond: no relative change, but not missing either.
        assert_eq!(Verdict::decide(relative_change(&[0.0, 0.0], &[1.0, 1.0]), 0.05, up), Verdict::Inconclusive);
        assert_eq!(Verdict::decide(relative_change(&[0.0], &[0.0]), 0.05, up), Verdict::Inconclusive);
        assert_eq!(Verdict::decide(relative_change(&[0.0, 0.0], &[0.0, 0.0]), 0.05, up), Verdict::Unchanged);
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
