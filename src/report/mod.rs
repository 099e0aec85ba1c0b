//! Reports: seed-style tables, time(1)-style lines, plots, comparisons.
//!
//! Renderers are pure functions of loaded runs (`render_run`, [`Comparison::render`]);
//! `write_plot_dir` writes plots and the seed text; loading and printing is the command layer's. Formats:
//! - `table`: seed 000's layout with aligned columns (splitting a row on
//!   whitespace gives the seed's tab-separated fields); seed 002's lines for steps;
//! - `markdown`, `csv` (long format: one row per measured cell), `json`.
//!
//! The seed-exact, tab-separated text (with its `./<stem>.png` lines) is written
//! as `report.txt` next to the plots by `--plot DIR`.
//!
//! This file is the API and the frame every report shares (title, run list, footer);
//! what is under the run list is the workload's: [`latfs`], [`steps`] or [`fio`], chosen once
//! by the runs' workload kind in `by_kind.rs`, the one place a report turns on it.

mod by_kind;
mod compatible;
pub mod email;
pub mod export;
pub mod fio;
pub mod format;
pub mod html;
pub mod json;
pub mod latfs;
pub mod markup;
pub mod monitor_plot;
pub mod monitors;
mod not_measured;
pub mod ops;
pub mod paired;
pub mod plot;
pub mod profile_diff;
pub mod profile_summary;
pub mod profiles;
pub mod runs;
pub mod steps;

use std::path::Path;

use crate::results::LoadedRun;
use json::{ReportJson, ReportRun};

pub use compatible::{CompareError, check_compatible};
pub use latfs::compare;
pub use latfs::tables as latfs_tables;
pub use latfs::tables::{LatfsTable, build_tables};
pub use not_measured::NotMeasured;
pub use plot::{PlotError, PlotImage, plot_latfs, plot_steps};
pub use steps::compare as compare_steps;
pub use steps::compare::{Iterations, StepsComparison};
pub use steps::{StepsGroup, build_groups};

use by_kind::body;
pub use format::Format;
use markup::{Markdown, Markup, Plain};
use not_measured::{not_measured, text_footer};

/// A workload's part of a report: everything under the run list, built once from the runs
/// by [`body`] and then walked by each format.
trait WorkloadReport {
    /// The terminal report (`long`: seed wording and lines) or the Markdown one.
    fn write(&self, m: &mut dyn Markup, long: bool);
    /// The HTML page's part, with inline SVG plots.
    fn write_html(&self, m: &mut dyn Markup) -> Result<(), PlotError>;
    /// Long-format CSV.
    fn csv(&self) -> String;
    /// The report document, with the comparison's `warnings`.
    fn json(self: Box<Self>, warnings: &[String]) -> ReportJson;
    /// The plots `--plot` writes.
    fn plots(&self) -> Result<Vec<PlotImage>, PlotError>;
    /// The seed-exact text `--plot` writes as `report.txt`.
    fn seed_text(&self, image_prefix: Option<&str>) -> String;
}

/// How a comparison chooses its samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CompareOptions {
    /// Steps runs: which iterations of each cell (see [`compare_steps`]).
    pub iterations: Iterations,
    /// lat_fs runs: a latency percentile (`--metric p99`) instead of total loops.
    pub metric: Option<crate::monitor::latency::Percentile>,
}

impl CompareOptions {
    /// The options plots are drawn with: lat_fs plots draw total loops whatever `--metric` says.
    fn for_plots(&self) -> CompareOptions {
        CompareOptions { metric: None, ..*self }
    }
}

/// Labelled runs that passed the compatibility check, with its warnings: a command checks
/// once ([`Comparison::check`]) and renders its text, plots and page from the result.
#[derive(Debug)]
pub struct Comparison<'a> {
    runs: Vec<(&'a str, &'a LoadedRun)>,
    warnings: Vec<String>,
}

impl<'a> Comparison<'a> {
    /// Check that `runs` may be compared ([`check_compatible`]); the first is the reference.
    pub fn check(runs: &'a [(String, LoadedRun)]) -> Result<Comparison<'a>, CompareError> {
        let warnings = check_compatible(runs)?;
        Ok(Comparison { runs: runs.iter().map(|(l, r)| (l.as_str(), r)).collect(), warnings })
    }

    /// Runs the gate has checked already ([`crate::gate::evaluate`], under the names
    /// `baseline` and `candidate`): its warnings are in its own section, not repeated here.
    pub fn checked_by_gate(runs: &'a [(String, LoadedRun)]) -> Comparison<'a> {
        Comparison { runs: runs.iter().map(|(l, r)| (l.as_str(), r)).collect(), warnings: Vec::new() }
    }

    /// What the check warns about (differing scenario texts, mount options, environments).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The labelled runs, the reference first.
    pub fn runs(&self) -> &[(&'a str, &'a LoadedRun)] {
        &self.runs
    }

    /// The comparison in `format`, with ratios to the first label and significance marks.
    pub fn render(&self, format: Format, opts: &CompareOptions) -> String {
        render(&self.runs, &self.warnings, body(&self.runs, Some(opts)), format)
    }

    /// The comparison as a report document (`fsbench compare --json`).
    pub fn json(&self, opts: &CompareOptions) -> ReportJson {
        json_of(&self.runs, body(&self.runs, Some(opts)), &self.warnings)
    }

    /// The comparison as one HTML page, with the gate's verdicts when there are some.
    pub fn html(&self, verdicts: Option<&html::Verdicts>) -> Result<String, PlotError> {
        html::render(&self.runs, &self.warnings, body(&self.runs, Some(&CompareOptions::default())), verdicts)
    }
}

/// Render one run in the chosen format.
pub fn render_run(run: &LoadedRun, format: Format) -> String {
    let runs = [(run.label(), run)];
    render(&runs, &[], body(&runs, None), format)
}

/// Render several labelled runs merged into one report, with ratios to the first
/// label and significance marks; refuses incompatible runs (see [`compare`]).
pub fn render_compare(runs: &[(String, LoadedRun)], format: Format) -> Result<String, CompareError> {
    render_compare_with(runs, format, &CompareOptions::default())
}

/// [`render_compare`] with options.
pub fn render_compare_with(
    runs: &[(String, LoadedRun)],
    format: Format,
    opts: &CompareOptions,
) -> Result<String, CompareError> {
    Ok(Comparison::check(runs)?.render(format, opts))
}

/// One run as a report document (`fsbench report RUN --json`).
pub fn run_json(run: &LoadedRun) -> ReportJson {
    let runs = [(run.label(), run)];
    json_of(&runs, body(&runs, None), &[])
}

/// Several labelled runs compared as one report document (`fsbench compare --json`), with
/// ratios to the first label; refuses incompatible runs as [`render_compare`] does.
pub fn compare_json(runs: &[(String, LoadedRun)], opts: &CompareOptions) -> Result<ReportJson, CompareError> {
    Ok(Comparison::check(runs)?.json(opts))
}

/// One run as a self-contained HTML page (tables, inline SVG plots, provenance).
pub fn render_run_html(run: &LoadedRun) -> Result<String, PlotError> {
    let runs = [(run.label(), run)];
    html::render(&runs, &[], body(&runs, None), None)
}

/// One run as an HTML page with a gate's verdicts on it (`fsbench gate RUN` of a paired run).
pub fn render_run_html_with_verdicts(run: &LoadedRun, verdicts: &html::Verdicts) -> Result<String, PlotError> {
    let runs = [(run.label(), run)];
    html::render(&runs, &[], body(&runs, None), Some(verdicts))
}

/// A checked comparison on one HTML page, with the gate's verdicts when there are some.
pub fn render_compare_html(cmp: &Comparison, verdicts: Option<&html::Verdicts>) -> Result<String, PlotError> {
    cmp.html(verdicts)
}

/// The plots of one report, one per table (lat_fs) or group (steps), plus what the
/// monitors saw: a timeline per monitored steps group (and one overlay per configuration
/// when several runs are given), a latency CDF per lat_fs test histogrammed.
pub fn plots(runs: &[(&str, &LoadedRun)]) -> Result<Vec<PlotImage>, PlotError> {
    body(runs, None).plots()
}

/// The plots of a comparison: for steps, one chart per step with every label on one
/// y axis and one per-iteration chart per configuration; for lat_fs, as [`plots`].
pub fn compare_plots(runs: &[(&str, &LoadedRun)], opts: &CompareOptions) -> Result<Vec<PlotImage>, PlotError> {
    body(runs, Some(&opts.for_plots())).plots()
}

/// Seed-exact text: tab-separated lat_fs tables with `./<stem>.png` lines, or seed 002 lines.
pub fn seed_text(runs: &[(&str, &LoadedRun)], image_prefix: Option<&str>) -> String {
    body(runs, None).seed_text(image_prefix)
}

/// Write the plots and the seed-exact `report.txt` into `dir`; returns the number of plots.
pub fn write_plot_dir(dir: &Path, runs: &[(&str, &LoadedRun)]) -> anyhow::Result<usize> {
    write_plots_and_text(dir, &*body(runs, None))
}

/// Write a comparison's plots and its seed-layout `report.txt` into `dir`; returns the number of plots.
pub fn write_compare_plot_dir(dir: &Path, runs: &[(&str, &LoadedRun)], opts: &CompareOptions) -> anyhow::Result<usize> {
    write_plots_and_text(dir, &*body(runs, Some(&opts.for_plots())))
}

/// Write `body`'s plots and its seed text as `report.txt` into `dir`; returns the number of plots.
fn write_plots_and_text(dir: &Path, body: &dyn WorkloadReport) -> anyhow::Result<usize> {
    let images = body.plots()?;
    plot::write_plots(dir, &images)?;
    let text = body.seed_text(Some("./"));
    crate::results::write_atomic(&dir.join("report.txt"), text.as_bytes())?;
    Ok(images.len())
}

/// The frame of a text report: title, run list, the workload's part, the footer.
fn render(
    runs: &[(&str, &LoadedRun)],
    warnings: &[String],
    body: Box<dyn WorkloadReport + '_>,
    format: Format,
) -> String {
    // The terminal report names lmbench's counter and keeps seed 002's lines; Markdown keeps it short.
    let (mut m, long): (Box<dyn Markup>, bool) = match format {
        Format::Table => (Box::new(Plain::default()), true),
        Format::Markdown => (Box::new(Markdown::default()), false),
        Format::Csv => return with_paired_csv(body.csv(), &paired_runs(runs)),
        Format::Json => return json::to_json(&json_of(runs, body, warnings)),
    };
    m.heading(1, &format!("Results for {}", scenario_name(runs)));
    run_list(&mut *m, runs, warnings);
    body.write(&mut *m, long);
    let paired = paired_runs(runs);
    paired::write_sections(&mut *m, &paired, runs.len() > 1);
    // Every input a paired run (two labs' runs of one bundle): one table of whether they agree.
    if runs.len() > 1 && paired.len() == runs.len() {
        paired::write_agreement(&mut *m, &paired);
    }
    profiles::write(&mut *m, runs, false);
    profile_diff::write(&mut *m, runs, false);
    m.preformatted(&text_footer(&not_measured(runs), &all_problems(runs)));
    m.finish()
}

/// The paired comparisons of every paired run among `runs`, in their order.
fn paired_runs(runs: &[(&str, &LoadedRun)]) -> Vec<paired::PairedRun> {
    runs.iter().filter_map(|(l, r)| paired::paired_of(l, r)).collect()
}

/// The report document of `runs`, with the paired comparisons of its paired runs.
fn json_of(runs: &[(&str, &LoadedRun)], body: Box<dyn WorkloadReport + '_>, warnings: &[String]) -> ReportJson {
    let mut doc = body.json(warnings);
    let paired = paired_runs(runs);
    match &mut doc {
        ReportJson::LatFs(d) => d.paired = paired,
        ReportJson::Steps(d) => d.paired = paired,
        ReportJson::Fio(d) => d.paired = paired,
        ReportJson::Ops(d) => d.paired = paired,
    }
    doc
}

/// The CSV of a report, and after a blank line the paired comparisons' records under
/// their own header when a run is paired (an unpaired run's CSV is one table, as ever).
fn with_paired_csv(csv: String, paired: &[paired::PairedRun]) -> String {
    if paired.is_empty() { csv } else { format!("{csv}\n{}", paired::csv(paired)) }
}

/// A run's line in the run list: who, where, which kernel and CPU, from when to when.
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

/// The unreadable result files of every run.
fn all_problems(runs: &[(&str, &LoadedRun)]) -> Vec<String> {
    runs.iter().flat_map(|(_, r)| r.problems.iter().cloned()).collect()
}

/// The runs as a report document lists them.
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
