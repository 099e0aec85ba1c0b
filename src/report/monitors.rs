//! At-a-glance columns from the kernel counters and latency distributions, for every renderer.
//!
//! MB are 10^6 bytes (sectors × 512), as iostat's MB; "util" is the busiest device's
//! share of the window with I/O in flight (iostat's %util); peak dirty is the highest
//! `Dirty` of /proc/meminfo sampled during the step. A `-` means "not monitored".

use schemars::JsonSchema;
use serde::Serialize;

use super::format::{csv_num, fmt4};
use super::markup::Markup;
use crate::model::{CellResult, CellStatus, Counters, LatencyDist, StepTiming};
use crate::results::LoadedRun;
use crate::stats::summarize;

/// Headers of the step columns, in the order of [`step_columns`].
pub const STEP_HEADERS: [&str; 4] = ["MB written", "write IOs", "peak dirty MB", "util %"];

/// The step's MB written, write IOs, peak dirty MB and device utilisation, as text.
pub fn step_columns(s: &StepTiming) -> [String; 4] {
    let Some(c) = &s.counters else { return ["-".into(), "-".into(), "-".into(), "-".into()] };
    [
        mb(c.bytes_written()),
        c.write_ios().to_string(),
        c.peak_dirty_kib.map(|k| mb(k * 1024)).unwrap_or_else(|| "-".into()),
        util(c),
    ]
}

/// The same as numbers for CSV: empty where not monitored.
pub fn step_csv(s: &StepTiming) -> [String; 4] {
    let Some(c) = &s.counters else { return Default::default() };
    [
        format!("{:.3}", c.bytes_written() as f64 / 1e6),
        c.write_ios().to_string(),
        c.peak_dirty_kib.map(|k| format!("{:.3}", k as f64 * 1024.0 / 1e6)).unwrap_or_default(),
        c.utilisation_percent().map(|u| format!("{u:.1}")).unwrap_or_default(),
    ]
}

fn mb(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / 1e6)
}

fn util(c: &Counters) -> String {
    c.utilisation_percent().map(|u| format!("{u:.0}")).unwrap_or_else(|| "-".into())
}

/// The kernel counters of one cell (lat_fs or fio) over its repetitions.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CellCounters {
    /// Run label.
    pub label: String,
    /// Cell id.
    pub id: String,
    /// Write requests completed on the cell's devices, per repetition.
    pub write_ios: Vec<u64>,
    /// MB written per repetition.
    pub mb_written: Vec<f64>,
    /// Median utilisation of the busiest device, percent (`None`, `null` in JSON, without devices).
    pub util_percent: Option<f64>,
    /// Median context switches per second, system-wide.
    pub context_switches_per_s: Option<f64>,
}

/// The latency distribution of one lat_fs cell, merged over tasks and repetitions.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CellLatency {
    /// Run label.
    pub label: String,
    /// Cell id.
    pub id: String,
    /// The distribution.
    pub dist: LatencyDist,
}

/// Every lat_fs cell with counters, in run then cell order.
pub fn latfs_counters(runs: &[(&str, &LoadedRun)]) -> Vec<CellCounters> {
    counters_by(runs, |c| c.latfs.as_ref().map(|l| l.repetitions.iter().filter_map(|r| r.counters.as_ref()).collect()))
}

/// Every fio cell with counters, in run then cell order.
pub fn fio_counters(runs: &[(&str, &LoadedRun)]) -> Vec<CellCounters> {
    counters_by(runs, |c| c.fio.as_ref().map(|f| f.repetitions.iter().filter_map(|r| r.counters.as_ref()).collect()))
}

/// A row per finished cell of `runs` whose repetitions' counters `reps` finds (every
/// repetition that recorded some, disturbed ones included), in run then cell order.
fn counters_by(runs: &[(&str, &LoadedRun)], reps: impl Fn(&CellResult) -> Option<Vec<&Counters>>) -> Vec<CellCounters> {
    let mut out = Vec::new();
    for (label, run) in runs {
        for c in run.cells.iter().filter(|c| c.status == CellStatus::Ok) {
            if let Some(row) = reps(c).and_then(|r| cell_counters(label, &c.id, &r)) {
                out.push(row);
            }
        }
    }
    out
}

/// The row of cell `id` of run `label` from its repetitions' counters; `None` without any.
pub fn cell_counters(label: &str, id: &str, counters: &[&Counters]) -> Option<CellCounters> {
    if counters.is_empty() {
        return None;
    }
    let median = |v: Vec<f64>| (!v.is_empty()).then(|| summarize(&v).median);
    Some(CellCounters {
        label: label.to_string(),
        id: id.to_string(),
        write_ios: counters.iter().map(|c| c.write_ios()).collect(),
        mb_written: counters.iter().map(|c| c.bytes_written() as f64 / 1e6).collect(),
        util_percent: median(counters.iter().filter_map(|c| c.utilisation_percent()).collect()),
        context_switches_per_s: median(
            counters
                .iter()
                .filter(|c| c.window_us > 0)
                .filter_map(|c| c.context_switches.map(|n| n as f64 * 1e6 / c.window_us as f64))
                .collect(),
        ),
    })
}

/// The counters section of a report (nothing when no cell recorded counters): the
/// table of the cells whose devices saw activity, then the note about the quiet ones.
pub fn write_counters(m: &mut dyn Markup, counters: &[CellCounters]) {
    if counters.is_empty() {
        return;
    }
    m.heading(2, "Kernel counters per repetition (the cell's block devices; context switches system-wide)");
    let (header, rows) = counters_table(counters);
    if !rows.is_empty() {
        m.paragraph("MB written, util % and context switches are medians over the repetitions.");
        m.table(&header, &rows);
    }
    if let Some(note) = quiet_cells_note(counters) {
        m.paragraph(&note);
    }
}

/// The CSV columns of a cell's counters ([`COUNTER_CSV_HEADERS`]): medians of write IOs
/// and MB written over the repetitions, and the median utilisation; empty without a row.
pub fn counters_csv(row: Option<&CellCounters>) -> [String; 3] {
    let Some(c) = row else { return Default::default() };
    let ios: Vec<f64> = c.write_ios.iter().map(|v| *v as f64).collect();
    [fmt4(summarize(&ios).median), fmt4(summarize(&c.mb_written).median), csv_num(c.util_percent)]
}

/// Headers of [`counters_csv`]'s columns.
pub const COUNTER_CSV_HEADERS: [&str; 3] = ["write_ios_median", "mb_written_median", "util_percent"];

/// Every lat_fs cell with a latency distribution.
pub fn latfs_latencies(runs: &[(&str, &LoadedRun)]) -> Vec<CellLatency> {
    let mut out = Vec::new();
    for (label, run) in runs {
        for c in run.cells.iter().filter(|c| c.status == CellStatus::Ok) {
            if let Some(d) = c.latfs.as_ref().and_then(|l| l.latency_dist.as_ref()) {
                out.push(CellLatency { label: label.to_string(), id: c.id.clone(), dist: d.clone() });
            }
        }
    }
    out
}

impl CellCounters {
    /// Whether the cell's devices saw any write or any busy time in some repetition: a
    /// row without is all zeros (lat_fs loops often never reach the device) and says nothing.
    pub fn has_device_activity(&self) -> bool {
        self.write_ios.iter().any(|&n| n > 0)
            || self.mb_written.iter().any(|&mb| mb > 0.0)
            || self.util_percent.is_some_and(|u| u > 0.0)
    }
}

/// Header and rows of the per-repetition counter table: the cells whose devices saw
/// activity (see [`CellCounters::has_device_activity`]; [`quiet_cells_note`] counts the rest).
pub fn counters_table(rows: &[CellCounters]) -> (Vec<String>, Vec<Vec<String>>) {
    let header =
        ["cell", "write IOs per repetition", "MB written", "util %", "ctx switches/s"].map(String::from).to_vec();
    let body = rows
        .iter()
        .filter(|r| r.has_device_activity())
        .map(|r| {
            vec![
                format!("{} {}", r.label, r.id),
                per_repetition(&r.write_ios),
                format!("{:.2}", summarize(&r.mb_written).median),
                r.util_percent.map(|u| format!("{u:.0}")).unwrap_or_else(|| "-".into()),
                r.context_switches_per_s.map(|c| format!("{c:.0}")).unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    (header, body)
}

/// One line about the cells [`counters_table`] leaves out (their block devices saw no
/// write and no busy time in any repetition), with the range of their context switches;
/// `None` when every cell is in the table.
pub fn quiet_cells_note(rows: &[CellCounters]) -> Option<String> {
    let quiet: Vec<&CellCounters> = rows.iter().filter(|r| !r.has_device_activity()).collect();
    if quiet.is_empty() {
        return None;
    }
    let switches: Vec<f64> = quiet.iter().filter_map(|r| r.context_switches_per_s).collect();
    let range = match (switches.iter().copied().reduce(f64::min), switches.iter().copied().reduce(f64::max)) {
        (Some(lo), Some(hi)) => format!("; their context switches: {lo:.0}–{hi:.0}/s"),
        _ => String::new(),
    };
    let n = quiet.len();
    if n == rows.len() {
        // Said positively: "no cell's devices saw no write" would read as the opposite.
        return Some(format!("No cell's block devices saw a write or busy time in any repetition{range}."));
    }
    let which = crate::text::plural(n, "cell", "cells");
    Some(format!("{which} left out: their block devices saw no write and no busy time in any repetition{range}."))
}

/// Values listed one per repetition, as long as a table cell can hold them: past
/// [`LISTED_REPETITIONS`] (rounds multiply them) `0 ×28`, or `12–40, median 31 (28 reps)`.
fn per_repetition(v: &[u64]) -> String {
    if v.len() <= LISTED_REPETITIONS {
        return v.iter().map(u64::to_string).collect::<Vec<_>>().join(" ");
    }
    let (min, max) = (v.iter().min().copied().unwrap_or(0), v.iter().max().copied().unwrap_or(0));
    if min == max {
        return format!("{min} ×{}", v.len());
    }
    let median = summarize(&v.iter().map(|&x| x as f64).collect::<Vec<_>>()).median;
    format!("{min}–{max}, median {median:.0} ({} reps)", v.len())
}

/// Repetitions whose values a counter table lists one by one.
const LISTED_REPETITIONS: usize = 8;

/// Header and rows of the latency percentile table (microseconds).
pub fn latency_table(rows: &[CellLatency]) -> (Vec<String>, Vec<Vec<String>>) {
    let header = ["cell", "ops", "p50 µs", "p90 µs", "p99 µs", "p99.9 µs", "max µs"].map(String::from).to_vec();
    let us = |ns: u64| format!("{:.2}", ns as f64 / 1e3);
    let body = rows
        .iter()
        .map(|r| {
            let d = &r.dist;
            vec![
                format!("{} {}", r.label, r.id),
                d.count.to_string(),
                us(d.p50_ns),
                us(d.p90_ns),
                us(d.p99_ns),
                us(d.p999_ns),
                us(d.max_ns),
            ]
        })
        .collect();
    (header, body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::DeviceCounters;

    #[test]
    fn many_repetitions_are_summed_up_in_one_cell() {
        assert_eq!(per_repetition(&[3, 0, 12]), "3 0 12");
        assert_eq!(per_repetition(&[0; 28]), "0 ×28");
        let v: Vec<u64> = (1..=9).collect();
        assert_eq!(per_repetition(&v), "1–9, median 5 (9 reps)");
    }

    #[test]
    fn all_zero_counter_rows_are_left_out_and_counted() {
        let row = |id: &str, ios: Vec<u64>, cs: f64| CellCounters {
            label: "run".into(),
            id: id.into(),
            mb_written: ios.iter().map(|&n| n as f64 * 0.004).collect(),
            write_ios: ios,
            util_percent: Some(0.0),
            context_switches_per_s: Some(cs),
        };
        let rows = vec![row("a", vec![0, 0], 900.0), row("b", vec![0, 3], 1000.0), row("c", vec![0, 0], 1200.0)];
        let (_, body) = counters_table(&rows);
        assert_eq!(body.len(), 1);
        assert_eq!(body[0][0], "run b");
        assert_eq!(
            quiet_cells_note(&rows).unwrap(),
            "2 cells left out: their block devices saw no write and no busy time in any repetition; \
             their context switches: 900–1200/s."
        );
        let (_, body) = counters_table(&rows[..1]);
        assert!(body.is_empty());
        assert!(quiet_cells_note(&rows[..1]).unwrap().starts_with("No cell's block devices saw a write or busy time"));
        assert_eq!(quiet_cells_note(&rows[1..2]), None);
    }

    #[test]
    fn step_columns_read_at_a_glance() {
        let mut s = StepTiming::default();
        assert_eq!(step_columns(&s), ["-", "-", "-", "-"]);
        s.counters = Some(Counters {
            window_us: 1_000_000,
            devices: vec![DeviceCounters {
                write_sectors: 2_000_000,
                write_ios: 300,
                io_ticks_ms: 250,
                ..Default::default()
            }],
            peak_dirty_kib: Some(512_000),
            ..Default::default()
        });
        assert_eq!(step_columns(&s), ["1024.0", "300", "524.3", "25"]);
        assert_eq!(step_csv(&s), ["1024.000", "300", "524.288", "25.0"]);
    }
}
