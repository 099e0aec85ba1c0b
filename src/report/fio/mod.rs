//! The fio report: one table per run label, a row per cell (IOPS, bandwidth,
//! completion latency, fio's CPU), and with several runs a ratio column of each
//! label's median IOPS to the first label's, cell by cell; two charts over every
//! label's cells (median IOPS, median p99 completion latency: [`charts`]) and the
//! kernel counters the monitors recorded per repetition.

use super::json::{FioReportJson, FioRow, ReportJson};
use super::markup::Markup;
use super::monitors::{self, CellCounters};
use super::plot::fio::{FioBar, FioChart, plot_fio, svg_fio};
use super::plot::{PlotError, PlotImage};
use super::{CompareOptions, WorkloadReport};
use crate::catalogue::Metric;
use crate::model::FioMetric;
use crate::model::{CellResult, FioResult, OUTPUT_SCHEMA_VERSION};
use crate::results::LoadedRun;
use crate::stats::positive_mean_interval;

/// A fio report of `runs`.
pub(super) struct FioReport<'a> {
    runs: &'a [(&'a str, &'a LoadedRun)],
    rows: Vec<FioRow>,
    charts: Vec<FioChart>,
    counters: Vec<CellCounters>,
}

/// Captions of the two charts in the HTML page, in [`charts`]' order.
const CAPTIONS: [&str; 2] = [
    "fio: median IOPS per cell (reads plus writes of all jobs) over the undisturbed repetitions, one colour per run label; whiskers: 95% confidence interval of the mean IOPS",
    "fio: median p99 completion latency per cell over the undisturbed repetitions, one colour per run label; whiskers: lowest to highest p99 of those repetitions",
];

/// A bar's length and its whisker.
type BarValue = (f64, Option<(f64, f64)>);

/// The report's charts of the measured cells of `runs`: median IOPS with the 95%
/// confidence interval of the mean as whiskers, and median p99 completion latency
/// with the repetitions' min..max; cells in first-seen order, one colour per label.
/// Empty when no cell has fio figures.
fn charts(runs: &[(&str, &LoadedRun)]) -> Vec<FioChart> {
    let measured: Vec<(&str, &CellResult, &FioResult)> = runs
        .iter()
        .flat_map(|(label, run)| {
            run.cells.iter().filter_map(move |c| c.fio.as_ref().filter(|f| f.iops.n > 0).map(|f| (*label, c, f)))
        })
        .collect();
    if measured.is_empty() {
        return Vec::new();
    }
    let mut cells: Vec<String> = Vec::new();
    for (_, c, _) in &measured {
        if !cells.contains(&c.id) {
            cells.push(c.id.clone());
        }
    }
    let labels: Vec<String> = runs.iter().map(|(l, _)| l.to_string()).collect();
    let bars = |get: &dyn Fn(&FioResult) -> BarValue| -> Vec<FioBar> {
        measured
            .iter()
            .map(|(label, c, f)| {
                let (value, whisker) = get(f);
                FioBar { label: label.to_string(), cell: c.id.clone(), value, whisker }
            })
            .collect()
    };
    // A whisker needs two repetitions: one gives no interval (and a CI of NaN width).
    let spread = |s: &crate::model::Summary, lo: f64, hi: f64| (s.n > 1).then_some((lo, hi));
    // IOPS are positive: their mean's interval is cut at zero.
    let iops_ci = |s: &crate::model::Summary| positive_mean_interval(s);
    vec![
        FioChart {
            stem: "fio-iops".into(),
            title: "fio: IOPS per cell".into(),
            value_desc: "median IOPS over undisturbed repetitions (reads + writes, all jobs)".into(),
            whisker_desc: "95% confidence interval of the mean IOPS".into(),
            labels: labels.clone(),
            cells: cells.clone(),
            bars: bars(&|f| (f.iops.median, iops_ci(&f.iops))),
        },
        FioChart {
            stem: "fio-clat-p99".into(),
            title: "fio: p99 completion latency per cell".into(),
            value_desc: "median p99 completion latency over undisturbed repetitions, µs (all jobs' I/O)".into(),
            whisker_desc: "lowest to highest p99 of those repetitions".into(),
            labels,
            cells,
            bars: bars(&|f| (f.clat_p99_us.median, spread(&f.clat_p99_us, f.clat_p99_us.min, f.clat_p99_us.max))),
        },
    ]
}

fn median_of(f: &FioResult, get: impl Fn(&crate::model::FioRepetition) -> f64) -> f64 {
    let v: Vec<f64> = f.repetitions.iter().filter(|x| x.counts()).map(get).collect();
    crate::stats::median(&v)
}

fn row(label: &str, cell: &CellResult, f: &FioResult, paired: bool) -> FioRow {
    // The catalogue's samples of the metric (the one home of which repetitions count).
    let q = crate::catalogue::samples(cell, Metric::Fio(FioMetric::Iops)).into_iter().next();
    let iops_samples =
        q.map(|q| (q.samples, crate::verdict::rounds_between_runs(paired, q.rounds))).unwrap_or_default();
    let counted = f.repetitions.iter().filter(|x| x.counts()).count().max(1) as f64;
    let cpu = |g: fn(&crate::model::FioJobStats) -> f64| {
        f.repetitions.iter().filter(|x| x.counts()).map(|x| g(&x.total)).sum::<f64>() / counted
    };
    FioRow {
        label: label.to_string(),
        cell: cell.id.clone(),
        fio_version: f.fio_version.clone(),
        n: f.iops.n,
        iops: f.iops.median,
        // A positive quantity: the interval's part at or above zero (one repetition: its value twice).
        iops_ci95: positive_mean_interval(&f.iops).unwrap_or((f.iops.ci95_low, f.iops.ci95_high)),
        bw_mib_s: f.bw_bytes.median / (1024.0 * 1024.0),
        clat_mean_us: f.clat_mean_us.median,
        clat_p99_us: f.clat_p99_us.median,
        clat_p50_p90_p99_9_us: (
            median_of(f, |x| x.total.all.clat_ns.p50 / 1e3),
            median_of(f, |x| x.total.all.clat_ns.p90 / 1e3),
            median_of(f, |x| x.total.all.clat_ns.p99_9 / 1e3),
        ),
        cpu_usr_sys: (cpu(|t| t.usr_cpu), cpu(|t| t.sys_cpu)),
        iops_ratio: None,
        iops_ratio_of_means: None,
        iops_samples,
    }
}

/// Holm–Bonferroni over the tested fio ratios of a comparison (as lat_fs corrects per table).
fn holm(rows: &mut [FioRow]) {
    let raw: Vec<Option<f64>> =
        rows.iter().map(|r| r.iops_ratio_of_means.as_ref().and_then(|x| x.p_adjusted)).collect();
    for (r, adj) in rows.iter_mut().zip(crate::stats::holm_adjust(&raw)) {
        if let Some(x) = r.iops_ratio_of_means.as_mut() {
            x.p_adjusted = adj;
            x.significant = adj.is_some_and(|p| p < super::compare::ALPHA);
        }
    }
}

impl<'a> FioReport<'a> {
    /// The rows of `runs`; with `compare`, each label's IOPS ratio to the first label's.
    pub(super) fn build(runs: &'a [(&'a str, &'a LoadedRun)], compare: Option<&CompareOptions>) -> Self {
        let mut rows: Vec<FioRow> = runs
            .iter()
            .flat_map(|(label, run)| {
                let paired = super::paired::is_paired(run);
                run.cells
                    .iter()
                    .filter_map(move |c| c.fio.as_ref().filter(|f| f.iops.n > 0).map(|f| row(label, c, f, paired)))
            })
            .collect();
        if compare.is_some() && runs.len() > 1 {
            let first = runs[0].0;
            let base: Vec<(String, f64, (Vec<f64>, u32))> = rows
                .iter()
                .filter(|r| r.label == first)
                .map(|r| (r.cell.clone(), r.iops, r.iops_samples.clone()))
                .collect();
            for r in rows.iter_mut().filter(|r| r.label != first) {
                let Some((_, b, (bs, br))) = base.iter().find(|(c, _, _)| *c == r.cell) else { continue };
                r.iops_ratio = (*b > 0.0).then(|| r.iops / b);
                // Two labels are two separate runs: their rounds decide whether it is tested.
                r.iops_ratio_of_means =
                    super::compare::ratio_of_samples(bs, &r.iops_samples.0, Some((*br, r.iops_samples.1)));
            }
            holm(&mut rows);
        }
        FioReport { runs, rows, charts: charts(runs), counters: monitors::fio_counters(runs) }
    }

    fn header(&self) -> Vec<String> {
        let mut h: Vec<String> = [
            "cell",
            "n",
            "IOPS",
            "IOPS 95% CI",
            "MiB/s",
            "clat mean µs",
            "p50 µs",
            "p90 µs",
            "p99 µs",
            "p99.9 µs",
            "usr%",
            "sys%",
        ]
        .into_iter()
        .map(String::from)
        .collect();
        if self.rows.iter().any(|r| r.iops_ratio.is_some() || r.iops_ratio_of_means.is_some()) {
            h.push("IOPS ratio".into());
        }
        h
    }

    fn table_rows(&self, label: &str, with_ratio: bool) -> Vec<Vec<String>> {
        self.rows
            .iter()
            .filter(|r| r.label == label)
            .map(|r| {
                let (p50, p90, p999) = r.clat_p50_p90_p99_9_us;
                let mut v = vec![
                    r.cell.clone(),
                    r.n.to_string(),
                    format!("{:.0}", r.iops),
                    // One repetition has no interval.
                    if r.n > 1 { format!("{:.0}..{:.0}", r.iops_ci95.0, r.iops_ci95.1) } else { "-".into() },
                    format!("{:.2}", r.bw_mib_s),
                    format!("{:.1}", r.clat_mean_us),
                    format!("{p50:.1}"),
                    format!("{p90:.1}"),
                    format!("{:.1}", r.clat_p99_us),
                    format!("{p999:.1}"),
                    format!("{:.1}", r.cpu_usr_sys.0),
                    format!("{:.1}", r.cpu_usr_sys.1),
                ];
                if with_ratio {
                    v.push(match (&r.iops_ratio_of_means, r.iops_ratio) {
                        (Some(x), _) => x.display(),
                        (None, Some(x)) => format!("{x:.3}"),
                        (None, None) => "-".into(),
                    });
                }
                v
            })
            .collect()
    }

    /// The tables, then `figures` (SVGs of [`charts`], HTML only) and the kernel counters.
    fn write_tables(&self, m: &mut dyn Markup, figures: &[String]) {
        let header = self.header();
        let with_ratio = header.len() > 12;
        m.paragraph(
            "fio per cell: medians over the undisturbed repetitions; IOPS and bandwidth are reads plus writes of all jobs, latency is completion latency over all jobs' I/O (percentiles from fio's merged histograms).",
        );
        for (label, _) in self.runs {
            m.heading(2, &format!("{label} fio"));
            let rows = self.table_rows(label, with_ratio);
            m.table(
                &header,
                &rows.into_iter().map(|r| r.into_iter().map(|c| m.literal(&c)).collect()).collect::<Vec<_>>(),
            );
        }
        if with_ratio {
            let tested =
                self.rows.iter().filter_map(|r| r.iops_ratio_of_means.as_ref()).filter(|r| r.untested.is_none());
            let legend = format!(
                "IOPS ratio = mean IOPS / mean IOPS of {} for the same cell (the gate's change of means plus 1), [..] its 95% CI (Fieller's interval); * significant (Welch's t-test on the undisturbed repetitions, Holm–Bonferroni-corrected over the {} tested fio ratios, alpha {}), no mark: tested, not significant; {}",
                self.runs.first().map(|(l, _)| *l).unwrap_or("run"),
                tested.count(),
                super::compare::ALPHA,
                super::compare::untested_legend("repetitions")
            );
            m.paragraph(&m.literal(&legend));
            let within_run = self
                .rows
                .iter()
                .filter_map(|r| r.iops_ratio_of_means.as_ref())
                .filter(|r| r.untested == Some(super::compare::Untested::WithinRunOnly))
                .count();
            if within_run > 0 {
                m.paragraph(&format!("?: {}", crate::verdict::within_run_remedies(within_run)));
            }
        }
        for (svg, caption) in figures.iter().zip(CAPTIONS) {
            m.figure(svg, caption);
        }
        monitors::write_counters(m, &self.counters);
    }
}

impl WorkloadReport for FioReport<'_> {
    fn write(&self, m: &mut dyn Markup, _long: bool) {
        self.write_tables(m, &[]);
    }

    fn write_html(&self, m: &mut dyn Markup) -> Result<(), PlotError> {
        let figures = self.charts.iter().map(svg_fio).collect::<Result<Vec<_>, _>>()?;
        self.write_tables(m, &figures);
        Ok(())
    }

    fn csv(&self) -> String {
        use super::format::{csv_num, csv_record};
        let mut head: Vec<String> = "label,cell,fio_version,n,iops,iops_ci95_low,iops_ci95_high,bw_mib_s,clat_mean_us,clat_p50_us,clat_p90_us,clat_p99_us,clat_p99_9_us,usr_cpu,sys_cpu,iops_ratio"
            .split(',')
            .map(String::from)
            .collect();
        // Counter columns only when some cell recorded counters, as lat_fs's CSV.
        let with_counters = !self.counters.is_empty();
        if with_counters {
            head.extend(monitors::COUNTER_CSV_HEADERS.map(String::from));
        }
        let mut out = csv_record(&head);
        for r in &self.rows {
            let (p50, p90, p999) = r.clat_p50_p90_p99_9_us;
            let nums = [
                r.iops,
                r.iops_ci95.0,
                r.iops_ci95.1,
                r.bw_mib_s,
                r.clat_mean_us,
                p50,
                p90,
                r.clat_p99_us,
                p999,
                r.cpu_usr_sys.0,
                r.cpu_usr_sys.1,
            ];
            let mut fields = vec![r.label.clone(), r.cell.clone(), r.fio_version.clone(), r.n.to_string()];
            fields.extend(nums.iter().map(|x| csv_num(Some(*x))));
            fields.push(csv_num(r.iops_ratio));
            if with_counters {
                let c = self.counters.iter().find(|c| c.label == r.label && c.id == r.cell);
                fields.extend(monitors::counters_csv(c));
            }
            out.push_str(&csv_record(&fields));
        }
        out
    }

    fn json(self: Box<Self>, warnings: &[String]) -> ReportJson {
        let runs = self.runs;
        ReportJson::Fio(FioReportJson {
            schema: OUTPUT_SCHEMA_VERSION,
            scenario: super::scenario_name(runs).to_string(),
            runs: super::json_runs(runs),
            warnings: warnings.to_vec(),
            rows: self.rows,
            counters: self.counters,
            not_measured: super::not_measured::not_measured(runs),
            problems: super::all_problems(runs),
            // Filled in by the report's dispatch, which reads every run's pairs.
            paired: Vec::new(),
        })
    }

    fn plots(&self) -> Result<Vec<PlotImage>, PlotError> {
        self.charts.iter().map(plot_fio).collect()
    }

    /// The text report, then with `image_prefix` the charts' PNG names (`./fio-iops.png`),
    /// as lat_fs's seed text names its plots.
    fn seed_text(&self, image_prefix: Option<&str>) -> String {
        let mut m: Box<dyn Markup> = Box::new(super::markup::Plain::default());
        self.write_tables(&mut *m, &[]);
        let mut out = m.finish();
        if let Some(prefix) = image_prefix {
            for c in &self.charts {
                out.push_str(&format!("{prefix}{}.png\n", c.stem));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;
