//! History: every run of a scenario as a point of a series, per cell and metric.
//!
//! [`load`] finds the runs of a scenario directory (through the result store's loader),
//! filters and orders them and splits them into segments where the scenario text changed
//! what is measured (the rule `compare` refuses by); [`series`] turns each cell's numbers
//! (a `metric` each) into one series per metric and segment, and [`paired`] a paired run's
//! candidate cells' paired ratios into series of their own; [`render`] prints them as a
//! table with a sparkline per series or as CSV; [`html`] as a page of charts; [`json`] is
//! the `--json` document; [`index`] keeps what the series need of every finished run in an
//! SQLite database, so they are not read again.

pub mod change_points;
pub mod detectable;
pub mod function;
pub mod html;
pub mod index;
pub mod json;
pub mod load;
mod metric;
pub mod paired;
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
    /// Read the runs through the index of the results root ([`index`]), bringing it up to date.
    pub use_index: bool,
}

/// The runs of a history and their series.
#[derive(Debug, Clone)]
pub struct History {
    /// The scenario directory read.
    pub dir: std::path::PathBuf,
    /// The runs kept, in series order (their `run.cells` are empty when read through the
    /// index: the series hold what a history needs of them).
    pub runs: Vec<HistoryRun>,
    /// One series per (segment, cell, metric).
    pub series: Vec<Series>,
    /// One line per run directory left out and why (unreadable, no `--order-by` key).
    pub left_out: Vec<String>,
    /// What happened to the index: not used and why, or rebuilt and why.
    pub notes: Vec<String>,
}

/// Read a scenario directory's history as `req` asks.
pub fn history(dir: &std::path::Path, req: &HistoryRequest) -> Result<History, HistoryError> {
    let mut notes = Vec::new();
    let (loaded, cells) = match req.use_index {
        true => {
            let dirs = load::run_dirs(dir)?;
            match index::read_history(dir, &dirs, &mut notes) {
                Ok(mut found) => {
                    let loaded = load::select(dir, found.runs, found.left_out, dirs.len(), req)?;
                    let cells =
                        loaded.runs.iter().map(|r| found.cells.remove(&r.run.dir).unwrap_or_default()).collect();
                    (loaded, cells)
                }
                Err(why) => {
                    notes.push(format!("history index not used: {why}"));
                    from_directories(dir, req)?
                }
            }
        }
        false => from_directories(dir, req)?,
    };
    let only = load::cell_filter(&req.filter.only, &loaded.runs).map_err(|e| HistoryError::Only(e.to_string()))?;
    let mut series = series::series_from(&loaded.runs, &cells, &only);
    series::find_change_points(&mut series, &req.change_points);
    Ok(History { dir: dir.to_path_buf(), runs: loaded.runs, series, left_out: loaded.left_out, notes })
}

/// The runs of `dir` read from their directories, with their measured cells.
fn from_directories(
    dir: &std::path::Path,
    req: &HistoryRequest,
) -> Result<(load::LoadedHistory, Vec<Vec<series::MeasuredCell>>), HistoryError> {
    let loaded = load_history(dir, req)?;
    let cells = loaded.runs.iter().map(|r| series::measured_cells(&r.run)).collect();
    Ok((loaded, cells))
}

#[cfg(test)]
mod tests;
