//! Reports: seed-style tables, time(1)-style lines, plots, comparisons.
//!
//! Renderers are pure functions of loaded runs (`render_run`, `render_compare`);
//! `write_plot_dir` writes plots and the seed text; loading and printing is the command layer's. Formats:
//! - `table`: seed 000's layout with aligned columns (splitting a row on
//!   whitespace gives the seed's tab-separated fields); seed 002's lines for steps;
//! - `markdown`, `csv` (long format: one row per measured cell), `json`.
//!
//! The seed-exact, tab-separated text (with its `./<stem>.png` lines) is written
//! as `report.txt` next to the plots by `--plot DIR`.

pub mod compare;
pub mod compare_steps;
pub mod format;
pub mod html;
pub mod json;
pub mod latfs_tables;
mod markup;
pub mod monitor_plot;
pub mod monitors;
pub mod plot;
pub mod runs;
pub mod steps;

use std::path::Path;

use serde::Serialize;

use crate::model::OUTPUT_SCHEMA_VERSION;
use crate::model::{CellStatus, StepTiming};
use crate::results::LoadedRun;
use json::{LatfsReportJson, LatfsTableJson, ReportJson, ReportRun, StepsReportJson};

pub use compare::{CompareError, check_compatible};
pub use compare_steps::{Iterations, StepsComparison};
pub use latfs_tables::{LatfsTable, build_tables};
pub use plot::{PlotError, PlotImage, plot_latfs, plot_steps};
pub use steps::{StepsGroup, build_groups};

pub use format::Format;
use format::{csv_num, csv_record, fmt4};
use markup::{Markdown, Markup, Plain};

/// Render one run in the chosen format.
pub fn render_run(run: &LoadedRun, format: Format) -> String {
    render(&[(run.label(), run)], false, &[], format)
}

/// Render several labelled runs merged into one report, with ratios to the first
/// label and significance marks; refuses incompatible runs (see [`compare`]).
pub fn render_compare(runs: &[(String, LoadedRun)], format: Format) -> Result<String, CompareError> {
    render_compare_with(runs, format, &CompareOptions::default())
}

/// One run as a report document (`fsbench report RUN --json`).
pub fn run_json(run: &LoadedRun) -> ReportJson {
    report_json(&[(run.label(), run)], &[], None)
}

/// Several labelled runs compared as one report document (`fsbench compare --json`), with
/// ratios to the first label; refuses incompatible runs as [`render_compare`] does.
pub fn compare_json(runs: &[(String, LoadedRun)], opts: &CompareOptions) -> Result<ReportJson, CompareError> {
    let warnings = check_compatible(runs)?;
    let refs: Vec<(&str, &LoadedRun)> = runs.iter().map(|(l, r)| (l.as_str(), r)).collect();
    Ok(report_json(&refs, &warnings, Some(opts)))
}

/// The document of a report, or with `compare` of a comparison.
fn report_json(runs: &[(&str, &LoadedRun)], warnings: &[String], compare: Option<&CompareOptions>) -> ReportJson {
    if is_steps(runs) {
        let groups = build_groups(runs);
        let cmp = compare.map(|o| {
            let labels: Vec<String> = runs.iter().map(|(l, _)| l.to_string()).collect();
            compare_steps::compare_steps(&groups, &labels, o.iterations)
        });
        ReportJson::Steps(steps_json(runs, warnings, groups, cmp))
    } else {
        let metric = compare.and_then(|o| o.metric);
        let tables = latfs_tables::build_tables_by(runs, metric);
        ReportJson::LatFs(latfs_json(runs, warnings, tables, compare.is_some(), metric))
    }
}

/// How a comparison chooses its samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CompareOptions {
    /// Steps runs: which iterations of each cell (see [`compare_steps`]).
    pub iterations: Iterations,
    /// lat_fs runs: a latency percentile (`--metric p99`) instead of total loops.
    pub metric: Option<crate::monitor::latency::Percentile>,
}

/// [`render_compare`] with options.
pub fn render_compare_with(
    runs: &[(String, LoadedRun)],
    format: Format,
    opts: &CompareOptions,
) -> Result<String, CompareError> {
    let warnings = check_compatible(runs)?;
    let refs: Vec<(&str, &LoadedRun)> = runs.iter().map(|(l, r)| (l.as_str(), r)).collect();
    if is_steps(&refs) {
        return Ok(render_steps(&refs, &warnings, format, Some(opts.iterations)));
    }
    Ok(render_latfs(&refs, true, &warnings, format, opts.metric))
}

/// The plots of a comparison: for steps, one chart per step with every label on one
/// y axis and one per-iteration chart per configuration; for lat_fs, as [`plots`].
pub fn compare_plots(runs: &[(&str, &LoadedRun)], opts: &CompareOptions) -> Result<Vec<PlotImage>, PlotError> {
    if !is_steps(runs) {
        return plots(runs);
    }
    let groups = build_groups(runs);
    let labels: Vec<String> = runs.iter().map(|(l, _)| l.to_string()).collect();
    let cmp = compare_steps::compare_steps(&groups, &labels, opts.iterations);
    let mut out: Vec<PlotImage> =
        cmp.tables.iter().map(|t| plot::plot_step_compare(&cmp, t)).collect::<Result<_, _>>()?;
    let mut configs: Vec<&str> = Vec::new();
    for g in &groups {
        if !configs.contains(&g.config.as_str()) {
            configs.push(&g.config);
        }
    }
    for c in configs {
        let gs: Vec<&StepsGroup> = groups.iter().filter(|g| g.config == c).collect();
        out.push(plot::plot_iterations_by_label(c, &gs)?);
    }
    out.extend(timeline_plots(&groups, true)?);
    Ok(out)
}

/// Write a comparison's plots and its seed-layout `report.txt` into `dir`; returns the number of plots.
pub fn write_compare_plot_dir(dir: &Path, runs: &[(&str, &LoadedRun)], opts: &CompareOptions) -> anyhow::Result<usize> {
    if !is_steps(runs) {
        return write_plot_dir(dir, runs);
    }
    let images = compare_plots(runs, opts)?;
    plot::write_plots(dir, &images)?;
    let text = compare_steps::seed_lines(&build_groups(runs), opts.iterations);
    crate::results::write_atomic(&dir.join("report.txt"), text.as_bytes())?;
    Ok(images.len())
}

/// What the monitors saw during steps: a timeline per monitored group, and with
/// `overlay` (runs compared) one per configuration with every run on it.
fn timeline_plots(groups: &[StepsGroup], overlay: bool) -> Result<Vec<PlotImage>, PlotError> {
    let timed: Vec<&StepsGroup> = groups.iter().filter(|g| g.timeline.is_some()).collect();
    let mut out = Vec::new();
    for g in &timed {
        out.push(monitor_plot::plot_timeline(format!("{}-{}-timeline", g.label, g.config), &[g])?);
    }
    if overlay {
        let mut configs: Vec<&str> = Vec::new();
        for g in &timed {
            if !configs.contains(&g.config.as_str()) {
                configs.push(&g.config);
            }
        }
        for config in configs {
            let same: Vec<&StepsGroup> = timed.iter().copied().filter(|g| g.config == config).collect();
            if same.len() > 1 {
                out.push(monitor_plot::plot_timeline(format!("{config}-timeline-compare"), &same)?);
            }
        }
    }
    Ok(out)
}

/// One run as a self-contained HTML page (tables, inline SVG plots, provenance).
pub fn render_run_html(run: &LoadedRun) -> Result<String, PlotError> {
    html::render(&[(run.label(), run)], false, &[], None)
}

/// Why an HTML comparison could not be written.
#[derive(Debug, thiserror::Error)]
pub enum HtmlError {
    /// The runs cannot be compared.
    #[error(transparent)]
    Compare(#[from] CompareError),
    /// A plot could not be drawn.
    #[error(transparent)]
    Plot(#[from] PlotError),
}

/// Several labelled runs compared on one HTML page, with the gate's verdicts when there are some.
pub fn render_compare_html(
    runs: &[(String, LoadedRun)],
    verdicts: Option<&html::Verdicts>,
) -> Result<String, HtmlError> {
    let warnings = check_compatible(runs)?;
    let refs: Vec<(&str, &LoadedRun)> = runs.iter().map(|(l, r)| (l.as_str(), r)).collect();
    Ok(html::render(&refs, true, &warnings, verdicts)?)
}

/// The plots of one report or comparison, one per table (lat_fs) or group (steps),
/// plus what the monitors saw: a timeline per monitored steps group (and one overlay
/// per configuration when runs are compared), a latency CDF per lat_fs test histogrammed.
pub fn plots(runs: &[(&str, &LoadedRun)]) -> Result<Vec<PlotImage>, PlotError> {
    if is_steps(runs) {
        let groups = build_groups(runs);
        let mut out: Vec<PlotImage> = groups.iter().map(plot_steps).collect::<Result<_, _>>()?;
        out.extend(timeline_plots(&groups, runs.len() > 1)?);
        Ok(out)
    } else {
        let mut out: Vec<PlotImage> = build_tables(runs).iter().map(plot_latfs).collect::<Result<_, _>>()?;
        let lat = monitors::latfs_latencies(runs);
        for test in crate::model::LatfsTest::ALL {
            let suffix = format!("-{}", test.name());
            let cells: Vec<&monitors::CellLatency> = lat.iter().filter(|c| c.id.ends_with(&suffix)).collect();
            if !cells.is_empty() {
                let title = format!("lat_fs_{test}: latency distribution");
                out.push(monitor_plot::plot_latency_cdf(format!("lat_fs_{test}-latency-cdf"), &title, &cells)?);
            }
        }
        Ok(out)
    }
}

/// Seed-exact text: tab-separated lat_fs tables with `./<stem>.png` lines, or seed 002 lines.
pub fn seed_text(runs: &[(&str, &LoadedRun)], image_prefix: Option<&str>) -> String {
    if is_steps(runs) {
        steps::seed_text(&build_groups(runs))
    } else {
        latfs_tables::seed_text(&build_tables(runs), image_prefix)
    }
}

fn is_steps(runs: &[(&str, &LoadedRun)]) -> bool {
    runs.first().is_some_and(|(_, r)| r.meta.workload == crate::model::WorkloadKind::Steps)
}

fn render(runs: &[(&str, &LoadedRun)], ratios: bool, warnings: &[String], format: Format) -> String {
    if is_steps(runs) {
        render_steps(runs, warnings, format, None)
    } else {
        render_latfs(runs, ratios, warnings, format, None)
    }
}

/// A cell that has no number: skipped, failed, or planned but never stored.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct NotMeasured {
    /// Run label.
    pub label: String,
    /// Cell id.
    pub id: String,
    /// `skipped`, `disturbed` (every repetition), `failed`, or `missing` (planned, no result file).
    pub status: String,
    /// Why, as the cell file or the run says it.
    pub reason: String,
    /// What would let the cell run, when the skip says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remedy: Option<String>,
}

fn not_measured(runs: &[(&str, &LoadedRun)]) -> Vec<NotMeasured> {
    let mut out = Vec::new();
    for (label, run) in runs {
        for c in &run.cells {
            if c.status == CellStatus::Ok {
                continue;
            }
            let (status, reason) = match c.status {
                CellStatus::Skipped => ("skipped", c.skip.as_ref().map(|s| s.reason.clone()).unwrap_or_default()),
                CellStatus::Disturbed => {
                    ("disturbed", c.notes.last().cloned().unwrap_or_else(|| "every repetition was disturbed".into()))
                }
                _ => (
                    "failed",
                    c.error.clone().or_else(|| c.skip.as_ref().map(|s| s.reason.clone())).unwrap_or_default(),
                ),
            };
            out.push(NotMeasured {
                label: label.to_string(),
                id: c.id.clone(),
                status: status.into(),
                reason,
                remedy: c.skip.as_ref().and_then(|s| s.remedy.clone()),
            });
        }
        let stored: std::collections::HashSet<&str> = run.cells.iter().map(|c| c.id.as_str()).collect();
        for p in &run.meta.planned_cells {
            let id = p.id();
            if !stored.contains(id.as_str()) {
                out.push(NotMeasured {
                    label: label.to_string(),
                    id,
                    status: "missing".into(),
                    reason: if run.meta.finished.is_none() || run.meta.interrupted {
                        format!("run did not finish; `fsbench run --resume {}` runs what is missing", run.dir.display())
                    } else {
                        "no result file".into()
                    },
                    remedy: None,
                });
            }
        }
    }
    out
}

fn run_line(label: &str, run: &LoadedRun) -> String {
    let m = &run.meta;
    let end = match (&m.finished, m.interrupted) {
        (Some(f), false) => f.clone(),
        (Some(f), true) => format!("{f} (interrupted)"),
        (None, _) => "unfinished".into(),
    };
    // An unlabelled run is called `run` in columns; "run: run 2026..." would say it twice.
    let who = if m.label.is_none() && label == run.label() { String::new() } else { format!("{label}: ") };
    format!(
        "{who}run {} on {}, Linux {}, {}x {}, {} .. {end}",
        m.run_id, m.host.hostname, m.host.kernel_release, m.host.cpu_count, m.host.cpu_model, m.started
    )
}

/// The ratio table under a compared lat_fs table: header and rows, `-` where there is no ratio.
fn ratio_rows(rt: &compare::RatioTable, show: impl Fn(&compare::Ratio) -> String) -> (Vec<String>, Vec<Vec<String>>) {
    if rt.columns.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let header = std::iter::once("#nr_task".to_string()).chain(rt.columns.iter().cloned()).collect();
    let rows = rt
        .tasks
        .iter()
        .zip(&rt.values)
        .map(|(t, row)| {
            std::iter::once(t.to_string())
                .chain(row.iter().map(|r| r.as_ref().map(&show).unwrap_or_else(|| "-".into())))
                .collect()
        })
        .collect();
    (header, rows)
}

/// Cells without a result and unreadable result files, as indented lines; empty when there are none.
fn text_footer(nm: &[NotMeasured], problems: &[String]) -> String {
    let mut out = String::new();
    if !nm.is_empty() {
        // One entry per distinct reason: 64 quota cells skipped for one kernel limitation
        // are one fact, not 64.
        type Group<'a> = (String, &'a str, &'a str, Option<&'a String>, Vec<&'a str>);
        let mut groups: Vec<Group> = Vec::new();
        for n in nm {
            let key = (n.label.as_str(), n.status.as_str(), n.reason.as_str());
            match groups.iter_mut().find(|g| (g.0.as_str(), g.1, g.2) == key) {
                Some(g) => g.4.push(&n.id),
                None => {
                    groups.push((n.label.clone(), n.status.as_str(), n.reason.as_str(), n.remedy.as_ref(), vec![&n.id]))
                }
            }
        }
        out.push_str(&format!("Cells without a result ({}):\n", nm.len()));
        for (label, status, reason, remedy, ids) in groups {
            let cells = if ids.len() <= 3 {
                ids.join(", ")
            } else {
                format!("{}, ... ({} cells)", ids[..2].join(", "), ids.len())
            };
            out.push_str(&format!("  {label} {status}: {reason}\n    cells: {cells}\n"));
            if let Some(r) = remedy {
                out.push_str(&format!("    remedy: {r}\n"));
            }
        }
        out.push('\n');
    }
    if !problems.is_empty() {
        out.push_str(&format!("Unreadable result files ({}):\n", problems.len()));
        for p in problems {
            out.push_str(&format!("  {p}\n"));
        }
    }
    out
}

fn all_problems(runs: &[(&str, &LoadedRun)]) -> Vec<String> {
    runs.iter().flat_map(|(_, r)| r.problems.iter().cloned()).collect()
}

fn json_runs(runs: &[(&str, &LoadedRun)]) -> Vec<ReportRun> {
    runs.iter()
        .map(|(l, r)| ReportRun {
            label: l.to_string(),
            dir: r.dir.clone(),
            run_id: r.meta.run_id.clone(),
            scenario_sha256: r.meta.scenario_sha256.clone(),
            tool_version: r.meta.tool_version.clone(),
            host: r.meta.host.clone(),
            started: r.meta.started.clone(),
            finished: r.meta.finished.clone(),
            interrupted: r.meta.interrupted,
        })
        .collect()
}

/// The scenario every run shares (a comparison refuses others); empty when there are no runs.
fn scenario_name<'a>(runs: &[(&str, &'a LoadedRun)]) -> &'a str {
    runs.first().map(|(_, r)| r.meta.scenario_name.as_str()).unwrap_or("")
}

/// The notes to show under a run's line, each once: `(note, None)` for one every cell of
/// the run carries (a dir backing measured the host's own filesystem), `(note, Some(cells))`
/// for one only some carry, naming them (at most [`NOTED_CELLS`] of those notes); and how
/// many more of those there are.
fn cell_notes(r: &LoadedRun) -> (Vec<RunNote<'_>>, usize) {
    let mut distinct: Vec<(&str, Vec<&str>)> = Vec::new();
    for c in &r.cells {
        for n in &c.notes {
            match distinct.iter_mut().find(|(d, _)| d == n) {
                Some((_, cells)) => cells.push(&c.id),
                None => distinct.push((n, vec![&c.id])),
            }
        }
    }
    let (mut out, mut some, mut more) = (Vec::new(), 0, 0);
    for (n, cells) in distinct {
        if cells.len() == r.cells.len() {
            out.push((n, None));
        } else if some < NOTED_CELLS {
            some += 1;
            out.push((n, Some(cells)));
        } else {
            more += 1;
        }
    }
    (out, more)
}

/// A note to show under a run's line, and the cells that carry it (`None`: all of them).
type RunNote<'a> = (&'a str, Option<Vec<&'a str>>);

/// Notes of only some cells shown under a run's line; the tables' own lines say the rest.
const NOTED_CELLS: usize = 5;

/// The list under a report's title: one line per run, then the comparison's warnings.
fn run_list(m: &mut dyn Markup, runs: &[(&str, &LoadedRun)], warnings: &[String]) {
    for (l, r) in runs {
        m.item(&run_line(l, r));
        let who = if r.meta.label.is_none() && *l == r.label() { String::new() } else { format!("{l} ") };
        let (notes, more) = cell_notes(r);
        for (n, cells) in notes {
            let note = m.strong("note");
            let text = crate::text::escape_control(n);
            match cells {
                None => m.item(&format!("{who}{note}: {text}")),
                Some(cells) => m.item(&format!("{who}{note} ({}): {text}", crate::text::some_of(&cells, 3))),
            }
        }
        if more > 0 {
            let s = if more == 1 { "" } else { "s" };
            m.item(&format!("{who}… and {more} more note{s} of some cells, in their cell files' `notes`"));
        }
    }
    for w in warnings {
        let label = m.strong("warning:");
        m.item(&format!("{label} {w}"));
    }
}

fn render_latfs(
    runs: &[(&str, &LoadedRun)],
    with_ratios: bool,
    warnings: &[String],
    format: Format,
    metric: Option<crate::monitor::latency::Percentile>,
) -> String {
    let tables = latfs_tables::build_tables_by(runs, metric);
    let reference = runs.first().map(|(l, _)| *l).unwrap_or("run");
    // The terminal report names lmbench's counter for those who know the seed; Markdown keeps the line short.
    let (mut m, long): (Box<dyn Markup>, bool) = match format {
        Format::Table => (Box::new(Plain::default()), true),
        Format::Markdown => (Box::new(Markdown::default()), false),
        Format::Csv => return latfs_csv(runs, &tables, reference, with_ratios),
        Format::Json => {
            return json::to_json(&ReportJson::LatFs(latfs_json(runs, warnings, tables, with_ratios, metric)));
        }
    };
    m.heading(1, &format!("Results for {}", scenario_name(runs)));
    run_list(&mut *m, runs, warnings);
    m.paragraph(&latfs_numbers(runs, metric, long));
    m.paragraph(LAYOUT_LEGEND);
    latfs_body(&mut *m, runs, &tables, with_ratios, reference, &[]);
    m.preformatted(&text_footer(&not_measured(runs), &all_problems(runs)));
    m.finish()
}

/// What the seed's short names in titles and columns mean, said once per report.
const LAYOUT_LEGEND: &str = "mounttype:M (and -M- in columns): one filesystem per task; mounttype:S: one filesystem shared by all tasks; qoff/qon: quota off/on.";

/// What a lat_fs report's numbers are, in one line: the metric and what the median is over
/// (repetitions, or with `workload.rounds` the rounds' means: `model::round_samples`). The
/// terminal's `long` line names lmbench's counter for those who know the seed.
fn latfs_numbers(
    runs: &[(&str, &LoadedRun)],
    metric: Option<crate::monitor::latency::Percentile>,
    long: bool,
) -> String {
    let rounds =
        runs.iter().flat_map(|(_, r)| &r.cells).filter_map(|c| c.latfs.as_ref()).map(|l| l.rounds_done()).max();
    let over = match rounds {
        Some(k) if k > 1 => format!("median over the means of the cell's rounds (up to {k}; `workload.rounds`)"),
        _ => "median over repetitions".into(),
    };
    match (metric, long) {
        (Some(p), _) => format!(
            "Numbers: {} latency of one operation in µs (runs with latency = \"histogram\"), {over}; lower is better.",
            p.name()
        ),
        (None, true) => {
            format!(
                "Numbers: total loops per millisecond over all tasks (lmbench total_loops), {over}; higher is better."
            )
        }
        (None, false) => format!("Numbers: total loops/ms over all tasks, {over}; higher is better."),
    }
}

/// The lat_fs tables (one walk for every markup), each followed by its ratio table when
/// comparing and by `figures[i]` (an SVG plot of table i) when there is one, then the
/// runs' kernel counters and latency distributions when they were recorded.
fn latfs_body(
    m: &mut dyn Markup,
    runs: &[(&str, &LoadedRun)],
    tables: &[LatfsTable],
    with_ratios: bool,
    reference: &str,
    figures: &[String],
) {
    let mut last_section = String::new();
    for (i, t) in tables.iter().enumerate() {
        if t.section() != last_section {
            last_section = t.section();
            m.heading(2, &last_section);
        }
        m.heading(3, &t.title());
        m.table(&t.header(), &t.rows());
        let noisy = t.noisy();
        if !noisy.is_empty() {
            m.note(&format!("noisy repetitions: {}", noisy.join(", ")));
        }
        let disturbed = t.disturbed();
        if !disturbed.is_empty() {
            m.note(&format!(
                "disturbed repetitions (other processes used the CPUs; kept in the cell files, left out of these numbers): {}",
                disturbed.join(", ")
            ));
        }
        if with_ratios {
            let rt = compare::ratio_table(t, reference);
            let (header, rows) = ratio_rows(&rt, |r| m.literal(&r.display()));
            if !rows.is_empty() {
                m.table(&header, &rows);
                m.note(&rt.correction_note());
            }
        }
        if let Some(svg) = figures.get(i) {
            m.figure(svg, &format!("{}: median against tasks, bars from min to max of the repetitions", t.title()));
        }
    }
    if with_ratios {
        let legend = m.literal(&format!(
            "ratio = median / median of {reference}, [..] its 95% CI as a ratio of means (Welch); * significant (Welch's t-test on repetitions, Holm–Bonferroni-corrected per table, alpha {}), no mark: not significant, ? untestable (fewer than 2 repetitions or no spread)",
            compare::ALPHA
        ));
        m.paragraph(&legend);
    }
    let counters = monitors::latfs_counters(runs);
    if !counters.is_empty() {
        m.heading(2, "Kernel counters per repetition (the cell's block devices; context switches system-wide)");
        m.paragraph("MB written, util % and context switches are medians over the repetitions.");
        let (header, rows) = monitors::counters_table(&counters);
        m.table(&header, &rows);
    }
    let latencies = monitors::latfs_latencies(runs);
    if !latencies.is_empty() {
        m.heading(2, "Latency of every operation (merged over tasks and repetitions)");
        let (header, rows) = monitors::latency_table(&latencies);
        m.table(&header, &rows);
    }
}

/// Long-format CSV of lat_fs tables: one record per measured cell, with its counters and percentiles.
fn latfs_csv(runs: &[(&str, &LoadedRun)], tables: &[LatfsTable], reference: &str, with_ratios: bool) -> String {
    let counters = monitors::latfs_counters(runs);
    let latencies = monitors::latfs_latencies(runs);
    let mut head: Vec<String> = [
        "label",
        "fs",
        "layout",
        "quota",
        "test",
        "tasks",
        "column",
        "n",
        "median",
        "mean",
        "stddev",
        "min",
        "max",
        "ci95_low",
        "ci95_high",
        "cv",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if with_ratios {
        head.extend(
            ["ratio", "p_value", "p_holm", "ratio_ci95_low", "ratio_ci95_high", "significant"].map(String::from),
        );
    }
    // Monitor columns only when some cell has them: files from before the monitors keep their shape.
    if !counters.is_empty() {
        head.extend(["write_ios_median", "mb_written_median", "util_percent"].map(String::from));
    }
    if !latencies.is_empty() {
        head.extend(["p50_us", "p90_us", "p99_us", "p99.9_us", "max_us"].map(String::from));
    }
    let mut out = csv_record(&head);
    for t in tables {
        let rt = with_ratios.then(|| compare::ratio_table(t, reference));
        for (ri, tasks) in t.tasks.iter().enumerate() {
            for (ci, col) in t.columns.iter().enumerate() {
                let Some(p) = &t.values[ri][ci] else { continue };
                let s = &p.summary;
                let mut rec = vec![
                    col.label.clone(),
                    t.fs.clone(),
                    t.layout.to_string(),
                    col.quota.to_string(),
                    t.test.to_string(),
                    tasks.to_string(),
                    col.name.clone(),
                    s.n.to_string(),
                    fmt4(s.median),
                    fmt4(s.mean),
                    fmt4(s.stddev),
                    fmt4(s.min),
                    fmt4(s.max),
                    fmt4(s.ci95_low),
                    fmt4(s.ci95_high),
                    fmt4(s.cv),
                ];
                if let Some(rt) = &rt {
                    let r = rt.for_column(ri, ci);
                    rec.push(r.map(|r| fmt4(r.ratio)).unwrap_or_default());
                    rec.push(csv_num(r.and_then(|r| r.welch.map(|w| w.p))));
                    rec.push(csv_num(r.and_then(|r| r.p_adjusted)));
                    rec.push(csv_num(r.map(|r| r.ci_low).filter(|x| x.is_finite())));
                    rec.push(csv_num(r.map(|r| r.ci_high).filter(|x| x.is_finite())));
                    rec.push(r.filter(|r| r.welch.is_some()).map(|r| r.significant.to_string()).unwrap_or_default());
                }
                let id = crate::model::CellParams {
                    fs: t.fs.clone(),
                    layout: t.layout,
                    quota: col.quota,
                    tasks: *tasks,
                    test: Some(t.test),
                }
                .id();
                match counters.iter().find(|c| c.label == col.label && c.id == id) {
                    _ if counters.is_empty() => {}
                    Some(c) => {
                        let ios: Vec<f64> = c.write_ios.iter().map(|v| *v as f64).collect();
                        rec.push(fmt4(crate::stats::summarize(&ios).median));
                        rec.push(fmt4(crate::stats::summarize(&c.mb_written).median));
                        rec.push(csv_num(c.util_percent));
                    }
                    None => rec.extend([String::new(), String::new(), String::new()]),
                }
                match latencies.iter().find(|c| c.label == col.label && c.id == id) {
                    _ if latencies.is_empty() => {}
                    Some(l) => {
                        let d = &l.dist;
                        for ns in [d.p50_ns, d.p90_ns, d.p99_ns, d.p999_ns, d.max_ns] {
                            rec.push(format!("{:.3}", ns as f64 / 1e3));
                        }
                    }
                    None => rec.extend((0..5).map(|_| String::new())),
                }
                out.push_str(&csv_record(&rec));
            }
        }
    }
    out
}

/// The lat_fs report as a document: the tables whole, with ratio tables when comparing.
fn latfs_json(
    runs: &[(&str, &LoadedRun)],
    warnings: &[String],
    tables: Vec<LatfsTable>,
    with_ratios: bool,
    metric: Option<crate::monitor::latency::Percentile>,
) -> LatfsReportJson {
    let reference = runs.first().map(|(l, _)| *l).unwrap_or("run");
    let tables = tables
        .into_iter()
        .map(|t| LatfsTableJson { ratios: with_ratios.then(|| compare::ratio_table(&t, reference)), table: t })
        .collect();
    LatfsReportJson {
        schema: OUTPUT_SCHEMA_VERSION,
        scenario: scenario_name(runs).to_string(),
        metric: metric.map(|p| p.name()).unwrap_or("total_loops").to_string(),
        runs: json_runs(runs),
        warnings: warnings.to_vec(),
        tables,
        counters: monitors::latfs_counters(runs),
        latency: monitors::latfs_latencies(runs),
        not_measured: not_measured(runs),
        problems: all_problems(runs),
    }
}

/// A steps report, or (with `compare`) a steps comparison: the seed's lines of one
/// iteration per cell, then one side-by-side table per step.
fn render_steps(
    runs: &[(&str, &LoadedRun)],
    warnings: &[String],
    format: Format,
    compare: Option<Iterations>,
) -> String {
    let groups = build_groups(runs);
    let cmp = compare.map(|choice| {
        let labels: Vec<String> = runs.iter().map(|(l, _)| l.to_string()).collect();
        compare_steps::compare_steps(&groups, &labels, choice)
    });
    // The terminal report keeps seed 002's time(1) lines, as `--plot`'s report.txt does; Markdown shows tables.
    let (mut m, time_lines): (Box<dyn Markup>, bool) = match format {
        Format::Table => (Box::new(Plain::default()), true),
        Format::Markdown => (Box::new(Markdown::default()), false),
        Format::Csv => return cmp.map(|c| compare_steps::csv(&c)).unwrap_or_else(|| steps_csv(&groups)),
        Format::Json => return json::to_json(&ReportJson::Steps(steps_json(runs, warnings, groups, cmp))),
    };
    m.heading(1, &format!("Results for {}", scenario_name(runs)));
    run_list(&mut *m, runs, warnings);
    if let (Some(cmp), Some(choice)) = (&cmp, compare) {
        m.paragraph(&format!(
            "Seed 002's layout: each cell's time(1) lines of its last `{choice}` iteration, as the seed reported its 5th run. `!` marks a step whose elapsed time changes across iterations, on the iterations concerned."
        ));
        // The blank line ends the seed's block, as the seed's own lines end before its footer.
        m.preformatted(&(compare_steps::seed_lines(&groups, choice) + "\n"));
        let flags: Vec<String> = groups
            .iter()
            .flat_map(|g| g.flags.iter().map(move |f| format!("! {} {}: {}", g.label, g.config, f.describe())))
            .collect();
        if !flags.is_empty() {
            m.preformatted(&(flags.join("\n") + "\n"));
        }
        compare_steps::write_tables(&mut *m, cmp);
    } else if time_lines {
        // The intro explains the `!` marks, which only the seed's layout has; the last newline is
        // the blank line before the footer.
        m.note(
            "Each step timed as time(1) prints it; every iteration kept. `!` marks a step whose elapsed time changes across iterations.",
        );
        m.preformatted(&format!("{}\n", steps::seed_text(&groups)));
        let monitored = |its: &[Vec<StepTiming>]| its.iter().flatten().any(|s| s.counters.is_some());
        for g in &groups {
            if monitored(&g.iterations) {
                step_counters(&mut *m, &format!("{} {}", g.label, g.config), &g.iterations);
            }
            // N copies at once: each read the cell's devices around its own steps.
            for c in g.copies.iter().filter(|c| monitored(&c.iterations)) {
                step_counters(&mut *m, &format!("{} {} task {}", g.label, g.config, c.task), &c.iterations);
                m.note("the cell's devices during this copy's steps: the other copies' I/O is in them too");
            }
        }
    } else {
        steps_body(&mut *m, &groups, &[]);
    }
    m.preformatted(&text_footer(&not_measured(runs), &all_problems(runs)));
    m.finish()
}

/// The devices and dirty memory table of one series of iterations (a cell, or one copy of it).
fn step_counters(m: &mut dyn Markup, title: &str, iterations: &[Vec<StepTiming>]) {
    m.heading(2, &format!("{title}: devices and dirty memory per step"));
    let header: Vec<String> =
        ["iteration", "step", "elapsed"].into_iter().chain(monitors::STEP_HEADERS).map(String::from).collect();
    let rows: Vec<Vec<String>> = iterations
        .iter()
        .enumerate()
        .flat_map(|(i, it)| {
            it.iter().map(move |s| {
                let elapsed = format!("{:.2}s", s.elapsed_us as f64 / 1e6);
                [(i + 1).to_string(), s.label.clone(), elapsed].into_iter().chain(monitors::step_columns(s)).collect()
            })
        })
        .collect();
    m.table(&header, &rows);
}

/// One table per steps group (every iteration, every step) with its flags, then
/// `figures[i]` (an SVG plot of group i) when there is one.
fn steps_body(m: &mut dyn Markup, groups: &[StepsGroup], figures: &[String]) {
    // The monitors' columns only when some step has counters, so unmonitored runs keep their shape.
    let monitored = groups.iter().flat_map(|g| g.iterations.iter().flatten()).any(|s| s.counters.is_some());
    let header: Vec<String> = ["iteration", "step", "user", "system", "elapsed", "CPU"]
        .into_iter()
        .chain(monitors::STEP_HEADERS.into_iter().filter(|_| monitored))
        .map(String::from)
        .collect();
    for (gi, g) in groups.iter().enumerate() {
        let title = format!("{} {}", g.label, g.config);
        m.heading(2, &title);
        let rows: Vec<Vec<String>> = g
            .iterations
            .iter()
            .enumerate()
            .flat_map(|(i, it)| {
                it.iter().map(move |s| {
                    let tf = s.time_format();
                    let f: Vec<&str> = tf.split(' ').collect();
                    // A disturbed step is kept and shown, marked: it is not in any statistic.
                    let label = if s.counts() { s.label.clone() } else { format!("{} (disturbed)", s.label) };
                    let mut row = vec![(i + 1).to_string(), label, f[0].into(), f[1].into(), f[2].into(), f[3].into()];
                    if monitored {
                        row.extend(monitors::step_columns(s));
                    }
                    row
                })
            })
            .collect();
        m.table(&header, &rows);
        let disturbed: Vec<String> = g
            .iterations
            .iter()
            .enumerate()
            .flat_map(|(i, it)| {
                it.iter().filter_map(move |s| {
                    let d = s.disturbance.as_ref().filter(|d| d.disturbed)?;
                    Some(format!("iteration {} {} ({:.2} CPU)", i + 1, s.op, d.share))
                })
            })
            .collect();
        if !disturbed.is_empty() {
            let label = m.strong("disturbed:");
            m.note(&format!(
                "{label} {}: other processes and steal time used more than `workload.disturbance` of a CPU; kept here, left out of comparisons and the gate",
                disturbed.join(", ")
            ));
        }
        for f in &g.flags {
            let flag = m.strong(&f.describe());
            m.note(&flag);
        }
        for w in &g.warnings {
            let label = m.strong("warning:");
            m.note(&format!("{label} {w}"));
        }
        if let Some(svg) = figures.get(gi) {
            m.figure(svg, &format!("{title}: elapsed seconds per step, one bar per iteration"));
        }
    }
}

/// Long-format CSV of steps: one record per step of every iteration.
fn steps_csv(groups: &[StepsGroup]) -> String {
    let head = [
        "label",
        "config",
        "fs",
        "iteration",
        "step",
        "op",
        "label_cmd",
        "user_s",
        "system_s",
        "elapsed_s",
        "cpu_percent",
        "max_rss_kib",
        "flagged",
        "mb_written",
        "write_ios",
        "peak_dirty_mb",
        "util_percent",
    ]
    .map(String::from);
    let mut out = csv_record(&head);
    for g in groups {
        for (i, it) in g.iterations.iter().enumerate() {
            for (j, s) in it.iter().enumerate() {
                let mut rec = vec![
                    g.label.clone(),
                    g.config.clone(),
                    g.fs.clone(),
                    (i + 1).to_string(),
                    (j + 1).to_string(),
                    s.op.clone(),
                    s.label.clone(),
                    format!("{:.6}", s.user_us as f64 / 1e6),
                    format!("{:.6}", s.system_us as f64 / 1e6),
                    format!("{:.6}", s.elapsed_us as f64 / 1e6),
                    s.cpu_percent().map(|p| p.to_string()).unwrap_or_default(),
                    s.max_rss_kib.to_string(),
                    g.flags.iter().any(|f| f.step == j).to_string(),
                ];
                rec.extend(monitors::step_csv(s));
                out.push_str(&csv_record(&rec));
            }
        }
    }
    out
}

/// The steps report as a document: every group with its iterations and flags, and the comparison when comparing.
fn steps_json(
    runs: &[(&str, &LoadedRun)],
    warnings: &[String],
    groups: Vec<StepsGroup>,
    comparison: Option<StepsComparison>,
) -> StepsReportJson {
    StepsReportJson {
        schema: OUTPUT_SCHEMA_VERSION,
        scenario: scenario_name(runs).to_string(),
        runs: json_runs(runs),
        warnings: warnings.to_vec(),
        groups,
        comparison,
        not_measured: not_measured(runs),
        problems: all_problems(runs),
    }
}

/// Write the plots and the seed-exact `report.txt` into `dir`; returns the number of plots.
pub fn write_plot_dir(dir: &Path, runs: &[(&str, &LoadedRun)]) -> anyhow::Result<usize> {
    let images = plots(runs)?;
    plot::write_plots(dir, &images)?;
    let text = seed_text(runs, Some("./"));
    crate::results::write_atomic(&dir.join("report.txt"), text.as_bytes())?;
    Ok(images.len())
}

/// Several rendered runs as one output: one CSV with one header, else joined. (JSON is one
/// [`json::ReportsJson`] document of [`run_json`]s instead.)
pub fn join_outputs(outputs: Vec<String>, format: Format) -> String {
    match format {
        _ if outputs.len() == 1 => outputs.into_iter().next().unwrap_or_default(),
        // One CSV: keep the first header only.
        Format::Csv => outputs
            .iter()
            .enumerate()
            .map(|(i, o)| if i == 0 { o.as_str() } else { o.split_once('\n').map(|x| x.1).unwrap_or("") })
            .collect(),
        _ => outputs.join("\n"),
    }
}
