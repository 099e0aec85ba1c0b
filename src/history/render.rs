//! The terminal table (a sparkline per series) and the CSV of a history.

use comfy_table::{CellAlignment, Table};

use super::History;
use super::series::Series;
use crate::report::format::csv_record;
use crate::text::{escape_control, first_line_cut};

/// The eight heights of a sparkline, lowest first.
const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// A sparkline of `values`, one character per value, scaled from their minimum to their
/// maximum; a flat series is a flat line at mid height.
pub fn sparkline(values: &[f64]) -> String {
    let (lo, hi) = values.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| (l.min(v), h.max(v)));
    values
        .iter()
        .map(|&v| {
            if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
                return BARS[3];
            }
            BARS[(((v - lo) / (hi - lo)) * 7.0).round().clamp(0.0, 7.0) as usize]
        })
        .collect()
}

/// Significant figures enough to see a few percent: `1234`, `12.3`, `0.0123`.
fn short_number(x: f64) -> String {
    let a = x.abs();
    if a >= 1000.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// The table: one row per series (cell, metric, points, first, last, last vs first, sparkline
/// of the last points that fit), at most `width` columns; under each segment's table, its
/// series' change points.
pub fn render_table(h: &History, width: usize) -> String {
    let mut out = format!(
        "{} in {}, {} series\n",
        crate::text::plural(h.runs.len(), "run", "runs"),
        escape_control(&h.dir.display().to_string()),
        h.series.len()
    );
    let segments = h.runs.last().map(|r| r.segment + 1).unwrap_or(1);
    let mut rows: Vec<Vec<String>> = h.series.iter().map(figures).collect();
    unambiguous(&mut rows, &h.series);
    // The sparkline takes what the other columns and the spaces between them leave.
    let widest = |i: usize| rows.iter().map(|r| r[i].chars().count()).chain([HEADER[i].len()]).max().unwrap_or(0);
    let fixed: usize = (0..HEADER.len() - 1).map(|i| widest(i) + GAPS[i]).sum();
    let spark_w = width.saturating_sub(fixed).clamp(8, 60);
    for seg in 0..segments {
        if segments > 1 {
            let first = h.runs.iter().find(|r| r.segment == seg).map(|r| r.name()).unwrap_or_default();
            out.push_str(&format!(
                "\nsegment {} (from {}): the scenario changed what is measured\n",
                seg + 1,
                escape_control(&first)
            ));
        }
        let mut t = Table::new();
        t.load_style(comfy_table::presets::NOTHING).set_header(HEADER);
        let mut shifts = String::new();
        for (s, figures) in h.series.iter().zip(&rows).filter(|(s, _)| s.segment == seg) {
            let v = s.values();
            let mut row = figures.clone();
            row.push(sparkline(&v[v.len().saturating_sub(spark_w)..]));
            t.add_row(row);
            if !s.change_points.is_empty() {
                shifts.push_str(&format!("{} {}\n", figures[0], figures[1]));
            }
            for c in &s.change_points {
                shifts.push_str(&shift_line(h, s, c));
            }
        }
        for (i, gap) in GAPS.iter().enumerate() {
            if let Some(c) = t.column_mut(i) {
                c.set_padding((0, *gap as u16));
                if (2..7).contains(&i) {
                    c.set_cell_alignment(CellAlignment::Right);
                }
            }
        }
        // The last column is padded to its width: no line ends in spaces.
        let table: String = t.lines().map(|l| l.trim_end().to_string() + "\n").collect();
        out.push_str(&format!("\n{table}{shifts}"));
    }
    for l in &h.left_out {
        out.push_str(&format!("left out: {}\n", escape_control(l)));
    }
    out
}

/// The table's columns.
const HEADER: [&str; 8] = ["cell", "metric", "runs", "first", "last", "change", "detectable", "trend"];
/// The spaces after each column: two set the sparkline apart.
const GAPS: [usize; 8] = [1, 1, 1, 1, 1, 1, 2, 0];

/// A series' row but its sparkline: cell and metric (cut to 28 and 24 characters; whole where
/// the cut would read like another series', [`unambiguous`]), runs,
/// first, last, last against first, and the smallest step the change-point test would find
/// ([`detectable_text`]).
fn figures(s: &Series) -> Vec<String> {
    let v = s.values();
    let (first, last) = (v.first().copied().unwrap_or(f64::NAN), v.last().copied().unwrap_or(f64::NAN));
    let change = if first != 0.0 { format!("{:+.1}%", (last / first - 1.0) * 100.0) } else { "-".into() };
    vec![
        first_line_cut(&escape_control(&s.cell), 28),
        first_line_cut(&escape_control(&s.metric), 24),
        v.len().to_string(),
        short_number(first),
        short_number(last),
        change,
        detectable_text(s.detectable),
    ]
}

/// Names cut to one text that stand for different series (two cells whose ids differ only
/// past the cut) are shown whole, so no two rows read alike unless their series do.
fn unambiguous(rows: &mut [Vec<String>], series: &[Series]) {
    let full = |s: &Series, col: usize| {
        let name = if col == 0 { &s.cell } else { &s.metric };
        escape_control(name.lines().next().unwrap_or(name))
    };
    for col in [0, 1] {
        let mut seen: std::collections::HashMap<String, std::collections::BTreeSet<String>> = Default::default();
        for (row, s) in rows.iter().zip(series) {
            seen.entry(row[col].clone()).or_default().insert(full(s, col));
        }
        for (row, s) in rows.iter_mut().zip(series) {
            if seen.get(&row[col]).is_some_and(|names| names.len() > 1) {
                row[col] = full(s, col);
            }
        }
    }
}

/// `±12%`, `±0.1%` (or less), `>100%` (no step up to 100% would be found), `-` (too few points).
pub fn detectable_text(d: Option<super::detectable::Detectable>) -> String {
    match d {
        Some(super::detectable::Detectable::Step(x)) if x >= 0.1 => format!("±{:.0}%", x * 100.0),
        Some(super::detectable::Detectable::Step(x)) => format!("±{:.1}%", x * 100.0),
        Some(super::detectable::Detectable::Beyond) => ">100%".into(),
        None => "-".into(),
    }
}

/// `  ↳ change +10.0% [+8.1%, +11.9%], p=0.0005` and the runs either side with their `--meta` pairs.
fn shift_line(h: &History, s: &Series, c: &super::series::Shift) -> String {
    let tags = |i: usize| {
        let r = &h.runs[s.points[i].run];
        let pairs: Vec<String> = r.run.meta.meta.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let pairs = if pairs.is_empty() { String::new() } else { format!(" ({})", pairs.join(" ")) };
        first_line_cut(&escape_control(&format!("{}{pairs}", r.name())), 88)
    };
    let pct = |x: f64| if x.is_finite() { format!("{:+.1}%", x * 100.0) } else { "?".into() };
    let size = match c.change {
        Some(ch) => format!("{} [{}, {}]", pct(ch.mean), pct(ch.ci_low), pct(ch.ci_high)),
        None => "?".into(),
    };
    format!("  ↳ change {size}, p={:.4}\n      before {}\n      after  {}\n", c.p, tags(c.index - 1), tags(c.index))
}

/// CSV: one line per point (`segment,cell,metric,unit,run,started,value,n,low,high` plus one
/// column per `--meta` key any run recorded; `low` and `high` are a paired ratio's interval,
/// empty for other metrics).
pub fn render_csv(h: &History) -> String {
    let keys: std::collections::BTreeSet<&String> = h.runs.iter().flat_map(|r| r.run.meta.meta.keys()).collect();
    let mut header: Vec<String> =
        ["segment", "cell", "metric", "unit", "run", "started", "value", "n", "low", "high"].map(String::from).to_vec();
    header.extend(keys.iter().map(|k| format!("meta.{k}")));
    let mut out = csv_record(&header);
    for s in &h.series {
        for p in &s.points {
            let r = &h.runs[p.run];
            let mut rec = vec![
                s.segment.to_string(),
                s.cell.clone(),
                s.metric.clone(),
                s.unit.to_string(),
                r.name(),
                r.run.meta.started.clone(),
                format!("{}", p.value),
                p.n.to_string(),
                p.interval.map(|i| format!("{}", i.0)).unwrap_or_default(),
                p.interval.map(|i| format!("{}", i.1)).unwrap_or_default(),
            ];
            rec.extend(keys.iter().map(|k| r.run.meta.meta.get(*k).cloned().unwrap_or_default()));
            out.push_str(&csv_record(&rec));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue #38, item 24: two cells whose ids differ only past the 28th character showed as
    /// one name.
    #[test]
    fn series_whose_names_differ_past_the_cut_are_told_apart() {
        let series = |cell: &str| Series {
            segment: 0,
            cell: cell.into(),
            metric: "total_loops".into(),
            unit: "loops/ms",
            better: crate::catalogue::Direction::HigherIsBetter,
            points: vec![super::super::series::Point { run: 0, value: 1.0, n: 3, interval: None }],
            change_points: vec![],
            detectable: None,
        };
        let (a, b) = ("ext4-M-qoff-t1-open_close-mount-opts-A", "ext4-M-qoff-t1-open_close-mount-opts-B");
        let other = "btrfs-M-qoff-t1-open_close-compress-zstd-level-3";
        let h = History {
            dir: "results/x".into(),
            runs: vec![],
            series: vec![series(a), series(b), series(other)],
            left_out: vec![],
            notes: vec![],
        };
        let out = render_table(&h, 200);
        assert!(out.contains(a) && out.contains(b), "{out}");
        // A name no other cut collides with keeps its cut.
        assert!(!out.contains(other) && out.contains(&first_line_cut(other, 28)), "{out}");
    }

    #[test]
    fn sparklines_span_the_range_and_a_flat_series_is_flat() {
        assert_eq!(sparkline(&[1.0, 2.0, 3.0, 8.0]), "▁▂▃█");
        assert_eq!(sparkline(&[5.0, 5.0]), "▄▄");
        assert_eq!(sparkline(&[]), "");
    }
}
