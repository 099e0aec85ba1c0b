//! One series per (segment, cell, metric): the number each run measured, in series order.

use std::collections::BTreeMap;

use super::HistoryRun;
pub use super::metric::{MetricValue, unit_named};
use crate::catalogue::{Direction, Metric as Measured, samples};
use crate::model::{CellResult, FioMetric};
use crate::monitor::latency::Percentile;
use crate::plan::CellFilter;

/// One point: a run's value of one metric in one cell.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Index of the run in [`super::History::runs`].
    pub run: usize,
    /// The run's value ([`MetricValue::value`]).
    pub value: f64,
    /// The samples behind it (for a paired ratio: the pairs).
    pub n: usize,
    /// A paired ratio's interval `(low, high)` at its run's paired level; `None` for other
    /// metrics and for an unbounded interval (one pair).
    pub interval: Option<(f64, f64)>,
}

/// The values of one metric of one cell over the runs of one segment.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Comparable segment, from 0.
    pub segment: usize,
    /// Cell id (`ext4-M-qoff-t1-open_close`).
    pub cell: String,
    /// Metric name (`total_loops`, `latency_p99`, `step2 tar zxf linux-2.5.63.tar.gz elapsed`,
    /// `iops`, `paired ratio total_loops`).
    pub metric: String,
    /// Unit of the values (one [`unit_named`] knows).
    pub unit: &'static str,
    /// Which way is better.
    pub better: Direction,
    /// The points, in series order.
    pub points: Vec<Point>,
    /// Its change points ([`super::change_points`]), filled by [`find_change_points`].
    pub change_points: Vec<Shift>,
    /// The smallest step the test would find at its noise and length
    /// ([`super::detectable`]), filled by [`find_change_points`]; `None` with too few points.
    pub detectable: Option<super::detectable::Detectable>,
}

/// A change point of a series, as reported.
#[derive(Debug, Clone, PartialEq)]
pub struct Shift {
    /// Index of the first point of the new level, in the series' points.
    pub index: usize,
    /// Permutation p-value.
    pub p: f64,
    /// Relative change of the mean from the points since the previous change point to those
    /// up to the next one, with its 95% interval (Fieller's, as compare and gate use).
    pub change: Option<crate::stats::Change>,
}

/// Find the change points of every series with at least the points the method needs, and
/// the smallest step each could have shown ([`super::detectable`]).
///
/// Series are independent and each one's permutations are seeded by its windows, so they
/// are shared out over the CPUs (scoped threads, contiguous chunks): the answer is the one
/// a single thread gives.
pub fn find_change_points(series: &mut [Series], opt: &super::change_points::ChangePointOptions) {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(series.len()).max(1);
    let chunk = series.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        for part in series.chunks_mut(chunk) {
            scope.spawn(move || {
                for s in part.iter_mut() {
                    s.change_points = shifts_of(s, opt);
                    let at: Vec<usize> = s.change_points.iter().map(|c| c.index).collect();
                    s.detectable = super::detectable::detectable_step(&s.values(), &at, opt);
                }
            });
        }
    });
}

/// The change points of one series, each with its shift.
fn shifts_of(s: &Series, opt: &super::change_points::ChangePointOptions) -> Vec<Shift> {
    let v = s.values();
    let cps = super::change_points::change_points(&v, opt);
    let bounds: Vec<usize> = std::iter::once(0).chain(cps.iter().map(|c| c.index)).chain([v.len()]).collect();
    cps.iter()
        .enumerate()
        .map(|(k, c)| Shift {
            index: c.index,
            p: c.p,
            change: crate::stats::relative_change(&v[bounds[k]..c.index], &v[c.index..bounds[k + 2]]),
        })
        .collect()
}

impl Series {
    /// The values alone, in order.
    pub fn values(&self) -> Vec<f64> {
        self.points.iter().map(|p| p.value).collect()
    }
}

/// What a history keeps of one cell a run measured: its id, its parameters (for `--only`)
/// and its metrics, in the order [`series_from`] numbers them.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredCell {
    /// Cell id.
    pub id: String,
    /// Its axis values.
    pub params: crate::model::CellParams,
    /// Its metrics with a finite value.
    pub metrics: Vec<MetricValue>,
}

/// The metrics of one measured cell, those with a finite value: each the mean of its samples
/// by the catalogue's rule ([`crate::catalogue::samples`]: steady, undisturbed), the number
/// `gate`, `compare` and `export` state for the run.
fn metrics(c: &CellResult) -> Vec<MetricValue> {
    let mut out = Vec::new();
    let mut position = 0;
    let mut push = |name: String, of: Measured, value: f64, n: usize| {
        if value.is_finite() {
            out.push(MetricValue { name, unit: of.unit(), better: of.direction(), value, n, position, interval: None });
        }
        position += 1;
    };
    if c.latfs.is_some() {
        // A latency percentile: of each undisturbed repetition's histogram, like the gate's `--metric p99`.
        let latfs = [Percentile::P50, Percentile::P90, Percentile::P99].map(Measured::Latency);
        for m in std::iter::once(Measured::TotalLoops).chain(latfs) {
            for q in samples(c, m) {
                if let Some(mean) = q.mean() {
                    push(m.measure_name(), m, mean, q.samples.len());
                }
            }
        }
    }
    if c.steps.is_some() {
        for q in samples(c, Measured::Elapsed) {
            let Some(step) = &q.step else { continue };
            let (name, n) = (format!("step{} {} elapsed", step.index + 1, step.label), q.samples.len());
            push(name, Measured::Elapsed, q.mean().unwrap_or(f64::NAN), n);
        }
    }
    if c.fio.is_some() {
        // The figures `gate --metric` judges.
        for m in crate::model::FIO_METRICS.iter().filter_map(|n| FioMetric::parse(n)).map(Measured::Fio) {
            for q in samples(c, m) {
                if let Some(mean) = q.mean() {
                    push(m.measure_name(), m, mean, q.samples.len());
                }
            }
        }
    }
    out
}

/// The cells of a run that a history reads: those measured (status ok), in the run's order,
/// each candidate cell of a paired run with its paired ratios after its own metrics.
pub fn measured_cells(run: &crate::results::LoadedRun) -> Vec<MeasuredCell> {
    let mut cells: Vec<MeasuredCell> = run
        .cells
        .iter()
        .filter(|c| c.status == crate::model::CellStatus::Ok)
        .map(|c| MeasuredCell { id: c.id.clone(), params: c.params.clone(), metrics: metrics(c) })
        .collect();
    for (cell, metric) in super::paired::paired_metrics(run) {
        if let Some(c) = cells.iter_mut().find(|c| c.id == cell) {
            c.metrics.push(metric);
        }
    }
    cells
}

/// Every series of `runs`, by segment, cell (in the first plan's order) and metric.
pub fn series_of(runs: &[HistoryRun], only: &CellFilter) -> Vec<Series> {
    let cells: Vec<Vec<MeasuredCell>> = runs.iter().map(|r| measured_cells(&r.run)).collect();
    series_from(runs, &cells, only)
}

/// Every series of `runs` whose measured cells are `cells` (one list per run, in the same
/// order), by segment, cell (in the first plan's order) and metric.
pub fn series_from(runs: &[HistoryRun], cells: &[Vec<MeasuredCell>], only: &CellFilter) -> Vec<Series> {
    // Keyed by (segment, cell position, cell id, metric position, metric): plan order, not names.
    let mut by_key: BTreeMap<(usize, usize, String, usize, String), Series> = BTreeMap::new();
    let mut cell_pos: BTreeMap<String, usize> = BTreeMap::new();
    for (i, (hr, measured)) in runs.iter().zip(cells).enumerate() {
        for p in &hr.run.meta.planned_cells {
            let next = cell_pos.len();
            cell_pos.entry(p.id()).or_insert(next);
        }
        for c in measured.iter().filter(|c| only.matches(&c.params)) {
            let next = cell_pos.len();
            let pos = *cell_pos.entry(c.id.clone()).or_insert(next);
            for metric in &c.metrics {
                let key = (hr.segment, pos, c.id.clone(), metric.position, metric.name.clone());
                let s = by_key.entry(key).or_insert_with(|| Series {
                    segment: hr.segment,
                    cell: c.id.clone(),
                    metric: metric.name.clone(),
                    unit: metric.unit,
                    better: metric.better,
                    points: Vec::new(),
                    change_points: Vec::new(),
                    detectable: None,
                });
                s.points.push(Point { run: i, value: metric.value, n: metric.n, interval: metric.interval });
            }
        }
    }
    by_key.into_values().collect()
}
