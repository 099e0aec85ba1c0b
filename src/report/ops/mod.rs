//! The op-mix report: per run label and cell, a table that reads like filebench's
//! summary — op, ops, ops/s, MB/s, ms/op, min–max — over the undisturbed repetitions,
//! its `IO Summary` line, and with several runs a table of each cell's ops/s, p99 and
//! the ratio of its median ops/s to the first label's.

use super::json::{LoadfileLine, OpsCellJson, OpsLine, OpsReportJson, PaceLine, ReportJson};
use super::markup::Markup;
use super::plot::{PlotError, PlotImage};
use super::{CompareOptions, WorkloadReport};
use crate::model::{CellResult, OUTPUT_SCHEMA_VERSION, OpsResult};
use crate::results::LoadedRun;

/// The op-mix report of `runs`.
pub(super) struct OpsReport<'a> {
    runs: &'a [(&'a str, &'a LoadedRun)],
    cells: Vec<OpsCellJson>,
}

/// The lines of `o` over its undisturbed repetitions: counts and times summed, rates over
/// the summed windows.
pub fn lines(o: &OpsResult) -> Vec<OpsLine> {
    let reps: Vec<_> = o.repetitions.iter().filter(|r| r.counts()).collect();
    let secs: f64 = reps.iter().map(|r| r.elapsed_s).sum();
    let mut names: Vec<&str> = Vec::new();
    for r in &reps {
        for s in &r.ops {
            if !names.contains(&s.op.as_str()) {
                names.push(&s.op);
            }
        }
    }
    let line = |name: &str, stats: Vec<&crate::model::OpStat>| {
        let ops: u64 = stats.iter().map(|s| s.count).sum();
        let bytes: u64 = stats.iter().map(|s| s.bytes).sum();
        let ns: u64 = stats.iter().map(|s| s.total_ns).sum();
        let rate = |x: f64| if secs > 0.0 { x / secs } else { 0.0 };
        OpsLine {
            op: name.to_string(),
            ops,
            ops_per_s: rate(ops as f64),
            mb_per_s: rate(bytes as f64 / 1e6),
            ms_per_op: if ops > 0 { ns as f64 / ops as f64 / 1e6 } else { 0.0 },
            min_ms: stats.iter().filter(|s| s.count > 0).map(|s| s.latency.min_ns).min().unwrap_or(0) as f64 / 1e6,
            max_ms: stats.iter().map(|s| s.latency.max_ns).max().unwrap_or(0) as f64 / 1e6,
        }
    };
    let mut out: Vec<OpsLine> = names
        .iter()
        .map(|n| line(n, reps.iter().flat_map(|r| r.ops.iter().filter(|s| s.op == *n)).collect()))
        .collect();
    out.push(line("total", reps.iter().map(|r| &r.total).collect()));
    out
}

fn cell_json(label: &str, c: &CellResult, o: &OpsResult) -> OpsCellJson {
    OpsCellJson {
        label: label.to_string(),
        cell: c.id.clone(),
        n: o.ops_per_s.n,
        ops_per_s: o.ops_per_s.median,
        // A rate is positive: the interval's part at or above zero; none from one repetition.
        ops_per_s_ci95: crate::stats::positive_mean_interval(&o.ops_per_s),
        p99_us: o.p99_us.median,
        mb_per_s: o.mb_per_s.median,
        ratio: None,
        ops: lines(o),
        loadfile: loadfile_line(o),
        pace: pace_line(o),
    }
}

/// The pace of `o`'s undisturbed repetitions: starts summed, lateness over every start.
pub fn pace_line(o: &OpsResult) -> Option<PaceLine> {
    let paces: Vec<_> = o.repetitions.iter().filter(|r| r.counts()).filter_map(|r| r.pace.as_ref()).collect();
    let first = paces.first()?;
    let late = crate::monitor::latency::merge(paces.iter().map(|p| &p.lateness));
    Some(PaceLine {
        rate_per_s: first.rate_per_s,
        unit: first.unit.clone(),
        starts: paces.iter().map(|p| p.starts).sum(),
        behind: paces.iter().map(|p| p.behind).sum(),
        lateness_mean_ms: late.mean_ns / 1e6,
        lateness_p99_ms: late.p99_ns as f64 / 1e6,
        lateness_max_ms: late.max_ns as f64 / 1e6,
    })
}

/// The loadfile figures of `o` over its undisturbed repetitions: bytes and ops summed,
/// rates over the summed windows.
pub fn loadfile_line(o: &OpsResult) -> Option<LoadfileLine> {
    let reps: Vec<_> = o.repetitions.iter().filter(|r| r.counts() && r.loadfile.is_some()).collect();
    let secs: f64 = reps.iter().map(|r| r.elapsed_s).sum();
    let rate = |x: f64| if secs > 0.0 { x / secs } else { 0.0 };
    let first = reps.first()?.loadfile.as_ref()?;
    let mut per_client = vec![0u64; first.clients.len()];
    let (mut bytes, mut expected, mut mismatches, mut unknown) = (0u64, 0, 0, 0);
    for f in reps.iter().filter_map(|r| r.loadfile.as_ref()) {
        for (i, c) in f.clients.iter().enumerate() {
            if let Some(n) = per_client.get_mut(i) {
                *n += c.ops;
            }
            bytes += c.bytes;
        }
        expected += f.expected_errors;
        mismatches += f.status_mismatches;
        unknown += f.unknown_handles;
    }
    Some(LoadfileLine {
        clients: first.clients.len(),
        throughput_mb_s: rate(bytes as f64 / 1e6),
        client_ops_per_s: per_client.iter().map(|&n| rate(n as f64)).collect(),
        expected_errors: expected,
        status_mismatches: mismatches,
        unknown_handles: unknown,
    })
}

impl<'a> OpsReport<'a> {
    /// The cells of `runs`; with `compare`, each label's ops/s ratio to the first label's.
    pub(super) fn build(runs: &'a [(&'a str, &'a LoadedRun)], compare: Option<&CompareOptions>) -> Self {
        let mut cells: Vec<OpsCellJson> = runs
            .iter()
            .flat_map(|(label, run)| {
                run.cells
                    .iter()
                    .filter_map(move |c| c.ops.as_ref().filter(|o| o.ops_per_s.n > 0).map(|o| cell_json(label, c, o)))
            })
            .collect();
        if compare.is_some() && runs.len() > 1 {
            let first = runs[0].0;
            let base: Vec<(String, f64)> =
                cells.iter().filter(|c| c.label == first).map(|c| (c.cell.clone(), c.ops_per_s)).collect();
            for c in cells.iter_mut().filter(|c| c.label != first) {
                c.ratio =
                    base.iter().find(|(id, _)| *id == c.cell).filter(|(_, b)| *b > 0.0).map(|(_, b)| c.ops_per_s / b);
            }
        }
        OpsReport { runs, cells }
    }

    fn write_tables(&self, m: &mut dyn Markup) {
        m.paragraph(
            "ops per cell: every op kind summed over the undisturbed repetitions; ops/s and MB/s over their windows; ms/op is the mean time inside the op's system calls (filebench's summary).",
        );
        let header: Vec<String> = ["op", "ops", "ops/s", "MB/s", "ms/op", "min–max ms"].map(String::from).to_vec();
        for c in &self.cells {
            m.heading(2, &format!("{} {}", c.label, c.cell));
            let rows: Vec<Vec<String>> = c
                .ops
                .iter()
                .map(|l| {
                    vec![
                        l.op.clone(),
                        l.ops.to_string(),
                        format!("{:.1}", l.ops_per_s),
                        format!("{:.1}", l.mb_per_s),
                        format!("{:.3}", l.ms_per_op),
                        format!("{:.3}–{:.3}", l.min_ms, l.max_ms),
                    ]
                })
                .collect();
            m.table(&header, &rows);
            if let Some(t) = c.ops.last() {
                m.paragraph(&format!(
                    "IO Summary: {} ops {:.3} ops/s {:.1} MB/s {:.3} ms/op (median of {} repetitions: {:.1} ops/s, p99 {:.1} µs)",
                    t.ops, t.ops_per_s, t.mb_per_s, t.ms_per_op, c.n, c.ops_per_s, c.p99_us
                ));
            }
            if let Some(p) = &c.pace {
                m.paragraph(&format!(
                    "Pace {} {}/s per worker: {} starts, {} behind schedule; lateness mean {:.3} ms, p99 {:.3} ms, max {:.3} ms",
                    p.rate_per_s,
                    p.unit,
                    p.starts,
                    p.behind,
                    p.lateness_mean_ms,
                    p.lateness_p99_ms,
                    p.lateness_max_ms
                ));
            }
            if let Some(l) = &c.loadfile {
                let per: Vec<String> = l.client_ops_per_s.iter().map(|x| format!("{x:.1}")).collect();
                m.paragraph(&format!(
                    "Throughput {:.2} MB/sec {} clients (dbench's figure: ReadX and WriteX bytes per second); ops/s per client: {}; expected errors {}, status mismatches {}, unknown handles {}",
                    l.throughput_mb_s,
                    l.clients,
                    per.join(", "),
                    l.expected_errors,
                    l.status_mismatches,
                    l.unknown_handles
                ));
            }
        }
        if self.cells.iter().any(|c| c.ratio.is_some()) {
            m.heading(2, "ops/s by label");
            let header: Vec<String> =
                ["label", "cell", "n", "ops/s", "95% CI", "p99 µs", "MB/s", "ratio"].map(String::from).to_vec();
            let rows = self
                .cells
                .iter()
                .map(|c| {
                    vec![
                        c.label.clone(),
                        c.cell.clone(),
                        c.n.to_string(),
                        format!("{:.1}", c.ops_per_s),
                        c.ops_per_s_ci95.map(|(l, h)| format!("{l:.1}..{h:.1}")).unwrap_or_else(|| "-".into()),
                        format!("{:.1}", c.p99_us),
                        format!("{:.1}", c.mb_per_s),
                        c.ratio.map(|x| format!("{x:.3}")).unwrap_or_else(|| "-".into()),
                    ]
                })
                .collect::<Vec<_>>();
            m.table(&header, &rows);
        }
    }
}

impl WorkloadReport for OpsReport<'_> {
    fn write(&self, m: &mut dyn Markup, _long: bool) {
        self.write_tables(m);
    }

    fn write_html(&self, m: &mut dyn Markup) -> Result<(), PlotError> {
        self.write_tables(m);
        Ok(())
    }

    fn csv(&self) -> String {
        use super::format::{csv_num, csv_record};
        let head: Vec<String> =
            "label,cell,op,ops,ops_per_s,mb_per_s,ms_per_op,min_ms,max_ms".split(',').map(String::from).collect();
        let mut out = csv_record(&head);
        for c in &self.cells {
            for l in &c.ops {
                let mut f = vec![c.label.clone(), c.cell.clone(), l.op.clone(), l.ops.to_string()];
                f.extend([l.ops_per_s, l.mb_per_s, l.ms_per_op, l.min_ms, l.max_ms].iter().map(|x| csv_num(Some(*x))));
                out.push_str(&csv_record(&f));
            }
        }
        out
    }

    fn json(self: Box<Self>, warnings: &[String]) -> ReportJson {
        let runs = self.runs;
        ReportJson::Ops(OpsReportJson {
            schema: OUTPUT_SCHEMA_VERSION,
            scenario: super::scenario_name(runs).to_string(),
            runs: super::json_runs(runs),
            warnings: warnings.to_vec(),
            cells: self.cells,
            not_measured: super::not_measured::not_measured(runs),
            problems: super::all_problems(runs),
            paired: Vec::new(),
        })
    }

    fn plots(&self) -> Result<Vec<PlotImage>, PlotError> {
        Ok(Vec::new())
    }

    fn seed_text(&self, _image_prefix: Option<&str>) -> String {
        let mut m: Box<dyn Markup> = Box::new(super::markup::Plain::default());
        self.write_tables(&mut *m);
        m.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Disturbance, LatencyDist, OpStat, OpsRepetition};

    fn stat(op: &str, count: u64, bytes: u64, total_ns: u64, min_ns: u64, max_ns: u64) -> OpStat {
        OpStat {
            op: op.into(),
            count,
            bytes,
            total_ns,
            latency: LatencyDist { count, min_ns, max_ns, ..Default::default() },
            ..Default::default()
        }
    }

    fn rep(open: u64, disturbed: bool) -> OpsRepetition {
        OpsRepetition {
            elapsed_s: 2.0,
            ops: vec![
                stat("open", open, 0, open * 1000, 500, 9000),
                stat("read", open, open * 4096, open * 2000, 800, 5000),
            ],
            total: stat("total", 2 * open, open * 4096, open * 3000, 500, 9000),
            disturbance: disturbed.then(|| Disturbance { disturbed: true, ..Default::default() }),
            ..Default::default()
        }
    }

    #[test]
    fn the_ops_per_s_interval_is_not_below_zero_and_absent_from_one_repetition() {
        // Issue #38 item 13: `-22108..58540` at n = 2; a rate's mean is never below zero.
        let params = crate::model::CellParams {
            fs: "ext4".into(),
            layout: crate::model::Layout::S,
            quota: crate::model::QuotaMode::Off,
            tasks: 1,
            test: None,
            fio: Default::default(),
            kernel: None,
        };
        let cell = CellResult::new(&params, crate::model::CellStatus::Ok, "");
        let o = |v: &[f64]| OpsResult { ops_per_s: crate::stats::summarize(v), ..Default::default() };
        let (lo, hi) = cell_json("a", &cell, &o(&[1000.0, 35000.0])).ops_per_s_ci95.unwrap();
        assert!(lo == 0.0 && hi > 35000.0, "{lo} {hi}");
        assert_eq!(cell_json("a", &cell, &o(&[1000.0])).ops_per_s_ci95, None);
    }

    #[test]
    fn lines_sum_the_undisturbed_repetitions_like_filebench_s_summary() {
        let o = OpsResult {
            repetitions: vec![rep(100, false), rep(300, false), rep(1_000_000, true)],
            ..Default::default()
        };
        let l = lines(&o);
        assert_eq!(l.iter().map(|x| x.op.as_str()).collect::<Vec<_>>(), ["open", "read", "total"]);
        let open = &l[0];
        // 400 opens over 4 s of windows, 1 µs each.
        assert_eq!((open.ops, open.ops_per_s), (400, 100.0));
        assert!((open.ms_per_op - 0.001).abs() < 1e-12);
        assert_eq!((open.min_ms, open.max_ms), (0.0005, 0.009));
        // 400 reads of 4096 bytes over 4 s.
        assert!((l[1].mb_per_s - 400.0 * 4096.0 / 4.0 / 1e6).abs() < 1e-9);
        assert_eq!(l[2].ops, 800);
    }

    #[test]
    fn the_pace_line_sums_starts_and_merges_lateness_over_the_undisturbed_repetitions() {
        let paced = |starts: u64, behind: u64, late_ns: u64, disturbed: bool| {
            let mut h = crate::monitor::latency::histogram();
            h.record_n(late_ns, starts).unwrap();
            OpsRepetition {
                pace: Some(crate::model::PaceFigures {
                    rate_per_s: 100.0,
                    unit: "loops".into(),
                    starts,
                    behind,
                    lateness: crate::monitor::latency::dist(&h),
                }),
                ..rep(10, disturbed)
            }
        };
        assert!(pace_line(&OpsResult { repetitions: vec![rep(10, false)], ..Default::default() }).is_none());
        let o = OpsResult {
            repetitions: vec![
                paced(100, 0, 1_000, false),
                paced(300, 30, 2_000_000, false),
                paced(9, 9, 1 << 40, true),
            ],
            ..Default::default()
        };
        let p = pace_line(&o).unwrap();
        assert_eq!((p.starts, p.behind, p.unit.as_str(), p.rate_per_s), (400, 30, "loops", 100.0));
        // 100 starts 1 µs late and 300 starts 2 ms late: mean 1.5 ms, p99 and max 2 ms (±1%).
        assert!((p.lateness_mean_ms - 1.50025).abs() < 0.02, "{p:?}");
        assert!((p.lateness_max_ms - 2.0).abs() < 0.02 && (p.lateness_p99_ms - 2.0).abs() < 0.02, "{p:?}");
    }
}
