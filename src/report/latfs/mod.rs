//! The lat_fs report: seed 000's tables ([`tables`]), their ratios when runs are
//! compared ([`compare`]), and the kernel counters and latency distributions the
//! monitors recorded, for every format the report has.

pub mod compare;
mod csv;
pub mod tables;

use super::json::{LatfsReportJson, LatfsTableJson, ReportJson};
use super::markup::Markup;
use super::plot::{self, PlotError, PlotImage};
use super::{CompareOptions, WorkloadReport, monitor_plot, monitors};
use crate::model::OUTPUT_SCHEMA_VERSION;
use crate::monitor::latency::Percentile;
use crate::results::LoadedRun;
use tables::LatfsTable;

/// What the seed's short names in titles and columns mean, said once per report.
const LAYOUT_LEGEND: &str = "mounttype:M (and -M- in columns): one filesystem per task; mounttype:S: one filesystem shared by all tasks; qoff/qon: quota off/on.";

/// A lat_fs report of `runs`, its tables built once; with ratios to the first label when comparing.
pub(super) struct LatfsReport<'a> {
    runs: &'a [(&'a str, &'a LoadedRun)],
    tables: Vec<LatfsTable>,
    /// The first label: ratios are to its columns.
    reference: &'a str,
    with_ratios: bool,
    metric: Option<Percentile>,
}

impl<'a> LatfsReport<'a> {
    /// The tables of `runs`, by `compare`'s metric when comparing (total loops otherwise).
    pub(super) fn build(runs: &'a [(&'a str, &'a LoadedRun)], compare: Option<&CompareOptions>) -> Self {
        let metric = compare.and_then(|o| o.metric);
        LatfsReport {
            runs,
            tables: tables::build_tables_by(runs, metric),
            reference: runs.first().map(|(l, _)| *l).unwrap_or("run"),
            with_ratios: compare.is_some(),
            metric,
        }
    }

    /// The tables (one walk for every markup), each followed by its ratio table when
    /// comparing and by `figures[i]` (an SVG plot of table i) when there is one, then the
    /// runs' kernel counters and latency distributions when they were recorded.
    fn write_tables(&self, m: &mut dyn Markup, figures: &[String]) {
        let reference = self.reference;
        let mut last_section = String::new();
        let mut within_run = 0;
        for (i, t) in self.tables.iter().enumerate() {
            if t.section() != last_section {
                last_section = t.section();
                m.heading(2, &last_section);
            }
            m.heading(3, &t.title());
            m.table(&t.header(), &if self.with_ratios { t.compared_rows() } else { t.rows() });
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
            let all_disturbed = t.all_disturbed();
            // Compared, such a cell shows `- (disturbed)`: no number to mark.
            if !all_disturbed.is_empty() && !self.with_ratios {
                m.note(&format!(
                    "{}: every repetition disturbed (the number is over the disturbed repetitions; left out of comparisons and gates): {}",
                    tables::ALL_DISTURBED_MARK,
                    all_disturbed.join(", ")
                ));
            }
            if self.with_ratios {
                let rt = compare::ratio_table(t, reference);
                let (header, rows) = ratio_rows(t, &rt, |r| m.literal(&r.display()));
                if !rows.is_empty() {
                    m.table(&header, &rows);
                    m.note(&rt.correction_note());
                    within_run += rt.within_run_only();
                }
            }
            if let Some(svg) = figures.get(i) {
                m.figure(svg, &format!("{}: median against tasks, bars from min to max of the repetitions", t.title()));
                let empty = t.columns_without_data();
                if !empty.is_empty() {
                    m.note(&format!(
                        "not in the chart, no data (every cell skipped, failed or not measured): {}",
                        empty.join(", ")
                    ));
                }
            }
        }
        if self.with_ratios {
            // The interval is `stats::ratio_interval`'s (through `stats::relative_change`); the marks are Welch's test.
            let legend = m.literal(&format!(
                "ratio = mean / mean of {reference} (the gate's change of means plus 1), [..] its 95% CI (Fieller's interval); * significant (Welch's t-test on the samples: repetitions, or rounds' means with several rounds; Holm–Bonferroni-corrected per table, alpha {}), no mark: tested, not significant; {}; - (reason): a cell without a result (skipped, failed, disturbed: every repetition, missing), no number and no ratio",
                compare::ALPHA,
                compare::untested_legend("samples")
            ));
            m.paragraph(&legend);
            if within_run > 0 {
                m.paragraph(&format!("?: {}", crate::verdict::within_run_remedies(within_run)));
            }
        }
        monitors::write_counters(m, &monitors::latfs_counters(self.runs));
        let latencies = monitors::latfs_latencies(self.runs);
        if !latencies.is_empty() {
            m.heading(2, "Latency of every operation (merged over tasks and repetitions)");
            let (header, rows) = monitors::latency_table(&latencies);
            m.table(&header, &rows);
        }
    }

    /// What the numbers are, in one line: the metric and what the median is over
    /// (repetitions, or with `workload.rounds` the rounds' means: `model::round_samples`). The
    /// terminal's `long` line names lmbench's counter for those who know the seed.
    fn numbers(&self, long: bool) -> String {
        let rounds = self
            .runs
            .iter()
            .flat_map(|(_, r)| &r.cells)
            .filter_map(|c| c.latfs.as_ref())
            .map(|l| l.rounds_done())
            .max();
        let over = match rounds {
            Some(k) if k > 1 => format!("median over the means of the cell's rounds (up to {k}; `workload.rounds`)"),
            _ => "median over repetitions".into(),
        };
        match (self.metric, long) {
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
}

impl WorkloadReport for LatfsReport<'_> {
    fn write(&self, m: &mut dyn Markup, long: bool) {
        m.paragraph(&self.numbers(long));
        m.paragraph(LAYOUT_LEGEND);
        self.write_tables(m, &[]);
    }

    fn write_html(&self, m: &mut dyn Markup) -> Result<(), PlotError> {
        let figures = self.tables.iter().map(plot::svg_latfs).collect::<Result<Vec<_>, _>>()?;
        m.paragraph(&self.numbers(false));
        m.paragraph(LAYOUT_LEGEND);
        self.write_tables(m, &figures);
        Ok(())
    }

    fn csv(&self) -> String {
        csv::latfs_csv(self.runs, &self.tables, self.reference, self.with_ratios)
    }

    fn json(self: Box<Self>, warnings: &[String]) -> ReportJson {
        let reference = self.reference;
        let with_ratios = self.with_ratios;
        let tables = self
            .tables
            .into_iter()
            .map(|t| LatfsTableJson { ratios: with_ratios.then(|| compare::ratio_table(&t, reference)), table: t })
            .collect();
        let runs = self.runs;
        ReportJson::LatFs(LatfsReportJson {
            schema: OUTPUT_SCHEMA_VERSION,
            scenario: super::scenario_name(runs).to_string(),
            metric: self.metric.map(|p| p.name()).unwrap_or("total_loops").to_string(),
            runs: super::json_runs(runs),
            warnings: warnings.to_vec(),
            tables,
            counters: monitors::latfs_counters(runs),
            latency: monitors::latfs_latencies(runs),
            not_measured: super::not_measured::not_measured(runs),
            paired: Vec::new(),
            problems: super::all_problems(runs),
        })
    }

    /// One plot per table, then a latency CDF per test the monitors histogrammed.
    fn plots(&self) -> Result<Vec<PlotImage>, PlotError> {
        let mut out: Vec<PlotImage> = self.tables.iter().map(plot::plot_latfs).collect::<Result<_, _>>()?;
        let lat = monitors::latfs_latencies(self.runs);
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

    fn seed_text(&self, image_prefix: Option<&str>) -> String {
        tables::seed_text(&self.tables, image_prefix)
    }
}

/// The ratio table under a compared lat_fs table: header and rows, `-` where there is no
/// ratio, `- (V3 disturbed)` where a side has no result.
fn ratio_rows(
    t: &LatfsTable,
    rt: &compare::RatioTable,
    show: impl Fn(&compare::Ratio) -> String,
) -> (Vec<String>, Vec<Vec<String>>) {
    if rt.columns.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let header = std::iter::once("#nr_task".to_string()).chain(rt.columns.iter().cloned()).collect();
    let why = |ri: usize, (r, c): (usize, usize)| {
        [r, c].iter().find_map(|&col| t.reason(ri, col).map(|w| format!("- ({} {w})", t.columns[col].label)))
    };
    let rows = rt
        .tasks
        .iter()
        .zip(&rt.values)
        .enumerate()
        .map(|(ri, (tasks, row))| {
            std::iter::once(tasks.to_string())
                .chain(row.iter().zip(&rt.pairs).map(|(r, pair)| match r {
                    Some(r) => show(r),
                    None => why(ri, *pair).unwrap_or_else(|| "-".into()),
                }))
                .collect()
        })
        .collect();
    (header, rows)
}
