//! lat_fs reports as long-format CSV: one record per measured cell, with its counters and percentiles.

use super::compare;
use super::tables::LatfsTable;
use crate::report::format::{csv_num, csv_record, fmt4};
use crate::report::monitors;
use crate::results::LoadedRun;

/// Long-format CSV of lat_fs tables: one record per measured cell, with its counters and percentiles.
pub(super) fn latfs_csv(
    runs: &[(&str, &LoadedRun)],
    tables: &[LatfsTable],
    reference: &str,
    with_ratios: bool,
) -> String {
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
        head.extend(monitors::COUNTER_CSV_HEADERS.map(String::from));
    }
    if !latencies.is_empty() {
        head.extend(["p50_us", "p90_us", "p99_us", "p99.9_us", "max_us"].map(String::from));
    }
    // Like the monitor columns: only when some cell needs it, so other files keep their shape.
    let any_all_disturbed = tables.iter().any(|t| t.values.iter().flatten().flatten().any(|p| p.all_disturbed));
    if any_all_disturbed {
        head.push("all_disturbed".into());
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
                ];
                // Loops and latencies are positive: the mean's interval is cut at zero, and
                // one repetition has no interval and no cv (empty fields, not a spread of 0).
                let mean_ci = crate::stats::positive_mean_interval(s);
                rec.push(mean_ci.map(|c| fmt4(c.0)).unwrap_or_default());
                rec.push(mean_ci.map(|c| fmt4(c.1)).unwrap_or_default());
                rec.push(if s.n > 1 { fmt4(s.cv) } else { String::new() });
                if let Some(rt) = &rt {
                    let r = rt.for_column(ri, ci);
                    rec.push(r.map(|r| fmt4(r.ratio)).unwrap_or_default());
                    rec.push(csv_num(r.and_then(|r| r.welch.map(|w| w.p))));
                    rec.push(csv_num(r.and_then(|r| r.p_adjusted)));
                    rec.push(csv_num(r.map(|r| r.ci_low).filter(|x| x.is_finite())));
                    rec.push(csv_num(r.map(|r| r.ci_high).filter(|x| x.is_finite())));
                    rec.push(r.filter(|r| r.untested.is_none()).map(|r| r.significant.to_string()).unwrap_or_default());
                }
                let id = crate::model::CellParams {
                    fs: t.fs.clone(),
                    layout: t.layout,
                    quota: col.quota,
                    tasks: *tasks,
                    test: Some(t.test),
                    fio: Default::default(),
                    kernel: col.kernel.clone(),
                }
                .id();
                if !counters.is_empty() {
                    rec.extend(monitors::counters_csv(counters.iter().find(|c| c.label == col.run && c.id == id)));
                }
                match latencies.iter().find(|c| c.label == col.run && c.id == id) {
                    _ if latencies.is_empty() => {}
                    Some(l) => {
                        let d = &l.dist;
                        for ns in [d.p50_ns, d.p90_ns, d.p99_ns, d.p999_ns, d.max_ns] {
                            rec.push(format!("{:.3}", ns as f64 / 1e3));
                        }
                    }
                    None => rec.extend((0..5).map(|_| String::new())),
                }
                if any_all_disturbed {
                    rec.push(if p.all_disturbed { "true".into() } else { String::new() });
                }
                out.push_str(&csv_record(&rec));
            }
        }
    }
    out
}
