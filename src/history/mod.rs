//! History: every run of a scenario as a point of a series, per cell and metric.
//!
//! [`load`] finds the runs of a scenario directory (through the result store's loader),
//! filters and orders them and splits them into segments where the scenario text changed
//! what is measured (the rule `compare` refuses by); [`series`] turns each cell's numbers
//! into one series per metric and segment; [`render`] prints them as a table with a
//! sparkline per series or as CSV; [`json`] is the `--json` document.

pub mod change_points;
pub mod json;
pub mod load;
pub mod render;
pub mod series;

pub use load::{HistoryError, HistoryFilter, HistoryRun, OrderBy, load_history};
pub use series::{Series, series_of};

/// What `fsbench history` reads and how it orders it: the plain request the command builds.
#[derive(Debug, Clone, Default)]
pub struct HistoryRequest {
    /// Which runs and cells to keep.
    pub filter: HistoryFilter,
    /// Start time, or a `--meta` key.
    pub order: OrderBy,
    /// How change points are found.
    pub change_points: change_points::ChangePointOptions,
}

/// The runs of a history and their series.
#[derive(Debug, Clone)]
pub struct History {
    /// The scenario directory read.
    pub dir: std::path::PathBuf,
    /// The runs kept, in series order.
    pub runs: Vec<HistoryRun>,
    /// One series per (segment, cell, metric).
    pub series: Vec<Series>,
    /// One line per run directory left out and why (unreadable, no `--order-by` key).
    pub left_out: Vec<String>,
}

/// Read a scenario directory's history as `req` asks.
pub fn history(dir: &std::path::Path, req: &HistoryRequest) -> Result<History, HistoryError> {
    let loaded = load_history(dir, req)?;
    let only = load::cell_filter(&req.filter.only, &loaded.runs).map_err(|e| HistoryError::Only(e.to_string()))?;
    let mut series = series_of(&loaded.runs, &only);
    series::find_change_points(&mut series, &req.change_points);
    Ok(History { dir: dir.to_path_buf(), runs: loaded.runs, series, left_out: loaded.left_out })
}
