//! `fsbench history --json`: the runs and their series as one versioned document.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use super::History;
use crate::catalogue::Direction;

/// Version of the history document; raised when a field changes meaning or goes away.
pub const HISTORY_SCHEMA_VERSION: u32 = 1;

/// `fsbench history --json`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct HistoryJson {
    /// Document version ([`HISTORY_SCHEMA_VERSION`]).
    pub schema: u32,
    /// The scenario directory read.
    pub dir: std::path::PathBuf,
    /// `started`, or `meta:KEY` with `--order-by KEY`.
    pub order: String,
    /// The runs kept, in series order; points name them by position in this list.
    pub runs: Vec<HistoryRunJson>,
    /// One series per comparable segment, cell and metric.
    pub series: Vec<SeriesJson>,
    /// One `dir: reason` line per run left out for a reason other than the filters.
    pub left_out: Vec<String>,
}

/// One run of the history.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct HistoryRunJson {
    /// Its directory name.
    pub run: String,
    /// Its directory.
    pub dir: std::path::PathBuf,
    /// When it started (RFC 3339).
    pub started: String,
    /// Host name.
    pub host: String,
    /// Its `--label`.
    pub label: Option<String>,
    /// Its `run --meta` pairs.
    pub meta: BTreeMap<String, String>,
    /// Its comparable segment, from 0: a new segment starts where the scenario text changed
    /// what is measured.
    pub segment: usize,
}

/// One series.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SeriesJson {
    /// Comparable segment, from 0.
    pub segment: usize,
    /// Cell id.
    pub cell: String,
    /// Metric (`total_loops`, `latency_p99`, `step1 ... elapsed`, fio's `iops`, `bw`, `p99`,
    /// `clat_mean`, or a paired run's `paired ratio <metric>` of a candidate cell).
    pub metric: String,
    /// Unit of the values.
    pub unit: String,
    /// Which way is better.
    pub better: Direction,
    /// The points, in series order.
    pub points: Vec<PointJson>,
    /// True when the series has fewer points than change-point detection needs.
    pub too_few_points: bool,
    /// Its change points, in order.
    pub change_points: Vec<ChangePointJson>,
    /// The smallest relative step (0.12: 12%, either way) the change-point test would find
    /// halfway through the last window of this series' own residuals (docs/history.md);
    /// `null` with too few points, and when not even a 100% step would be found.
    pub detectable: Option<f64>,
}

/// A change point of a series.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ChangePointJson {
    /// Position in `points` of the first point of the new level.
    pub index: usize,
    /// Position in `runs` of the last run before the shift.
    pub run_before: usize,
    /// Position in `runs` of the first run after it.
    pub run_after: usize,
    /// Permutation p-value.
    pub p: f64,
    /// Relative change of the mean between the levels either side, with its 95% interval.
    pub change: Option<crate::stats::Change>,
}

/// One point of a series.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PointJson {
    /// Position of its run in `runs`.
    pub run: usize,
    /// The run's mean over its repetitions or iterations; for a paired ratio, the ratio of the
    /// geometric means, candidate over baseline.
    pub value: f64,
    /// Repetitions or iterations behind the value (for a paired ratio: pairs).
    pub n: usize,
    /// A paired ratio's lower interval end, at the level of its run's paired section; absent for
    /// other metrics and for an unbounded interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub low: Option<f64>,
    /// A paired ratio's upper interval end; absent as `low` is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub high: Option<f64>,
}

/// The document of `h`.
pub fn history_json(h: &History, order: &super::OrderBy, min_points: usize) -> HistoryJson {
    HistoryJson {
        schema: HISTORY_SCHEMA_VERSION,
        dir: h.dir.clone(),
        order: match order {
            super::OrderBy::Started => "started".into(),
            super::OrderBy::Tag(k) => format!("meta:{k}"),
        },
        runs: h
            .runs
            .iter()
            .map(|r| HistoryRunJson {
                run: r.name(),
                dir: r.run.dir.clone(),
                started: r.run.meta.started.clone(),
                host: r.run.meta.host.hostname.clone(),
                label: r.run.meta.label.clone(),
                meta: r.run.meta.meta.clone(),
                segment: r.segment,
            })
            .collect(),
        series: h
            .series
            .iter()
            .map(|s| SeriesJson {
                segment: s.segment,
                cell: s.cell.clone(),
                metric: s.metric.clone(),
                unit: s.unit.to_string(),
                better: s.better,
                points: s
                    .points
                    .iter()
                    .map(|p| PointJson {
                        run: p.run,
                        value: p.value,
                        n: p.n,
                        low: p.interval.map(|i| i.0),
                        high: p.interval.map(|i| i.1),
                    })
                    .collect(),
                too_few_points: s.points.len() < min_points,
                detectable: match s.detectable {
                    Some(super::detectable::Detectable::Step(x)) => Some(x),
                    _ => None,
                },
                change_points: s
                    .change_points
                    .iter()
                    .map(|c| ChangePointJson {
                        index: c.index,
                        run_before: s.points[c.index - 1].run,
                        run_after: s.points[c.index].run,
                        p: c.p,
                        change: c.change,
                    })
                    .collect(),
            })
            .collect(),
        left_out: h.left_out.clone(),
    }
}

/// JSON Schema of the document (`schemas/history.schema.json`).
pub fn history_schema_json() -> String {
    serde_json::to_string_pretty(&schemars::schema_for!(HistoryJson)).expect("schema serializes") + "\n"
}
