//! The runs of a history: found, loaded, filtered, ordered and split into comparable segments.

use std::path::{Path, PathBuf};

use crate::model::run_tags::RunTags;
use crate::plan::CellFilter;
use crate::results::{LoadedRun, load_run};

/// Why a history cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The directory cannot be listed.
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
    /// No run directory (with a `run.json`) inside it.
    #[error("{0}: no runs here (a history is read from results/<scenario>, the directory holding its runs)")]
    NoRuns(PathBuf),
    /// Filters left nothing.
    #[error("{0}: no run matches the filters ({1} read)")]
    NothingLeft(PathBuf, usize),
    /// A bad `--only`.
    #[error("{0}")]
    Only(String),
}

/// Which runs and cells a history keeps.
#[derive(Debug, Clone, Default)]
pub struct HistoryFilter {
    /// `--only`, parsed against the cells the runs planned.
    pub only: Vec<String>,
    /// `--since`: runs that started at or after this RFC 3339 prefix (`2026-11-01`).
    pub since: Option<String>,
    /// `--host`: runs of this host name only.
    pub host: Option<String>,
    /// `--meta KEY=VALUE`: runs that recorded all of these pairs.
    pub tags: RunTags,
    /// `--last N`: the last N runs in series order.
    pub last: Option<usize>,
}

/// The order of a series.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum OrderBy {
    /// When each run started.
    #[default]
    Started,
    /// A `--meta` key's value: numbers in numeric order when every value is one, text otherwise.
    Tag(String),
}

/// One run of a history.
#[derive(Debug, Clone)]
pub struct HistoryRun {
    /// The run, as the result store loaded it.
    pub run: LoadedRun,
    /// Its comparable segment, from 0: a new one starts where the scenario text changed what
    /// is measured.
    pub segment: usize,
}

impl HistoryRun {
    /// The run directory's name.
    pub fn name(&self) -> String {
        self.run.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    }
}

/// The runs kept and those left out.
pub struct LoadedHistory {
    /// Kept, in series order, with their segments.
    pub runs: Vec<HistoryRun>,
    /// `run: reason` per run left out for a reason other than the filters.
    pub left_out: Vec<String>,
}

/// Load every run of `dir` (never through a symlink: the store's listing skips them), keep
/// those the filter selects, order them and split them into comparable segments.
pub fn load_history(dir: &Path, req: &super::HistoryRequest) -> Result<LoadedHistory, HistoryError> {
    let dirs = run_dirs(dir)?;
    let read = dirs.len();
    let mut left_out = Vec::new();
    let mut runs: Vec<LoadedRun> = Vec::new();
    for d in dirs {
        match load_run(&d) {
            Ok(r) => runs.push(r),
            Err(e) => left_out.push(crate::text::escape_control(&e.to_string())),
        }
    }
    select(dir, runs, left_out, read, req)
}

/// The run directories of `dir` (those holding a `run.json`), by name; a symlink is not one.
pub fn run_dirs(dir: &Path) -> Result<Vec<PathBuf>, HistoryError> {
    let rd = std::fs::read_dir(dir).map_err(|e| HistoryError::Io(dir.to_path_buf(), e))?;
    let mut dirs: Vec<PathBuf> = rd
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .filter(|p| crate::results::find::is_run_dir(p))
        .collect();
    dirs.sort();
    if dirs.is_empty() {
        return Err(HistoryError::NoRuns(dir.to_path_buf()));
    }
    Ok(dirs)
}

/// Keep the loaded `runs` of `dir` (`read` run directories, `left_out` those that could not be
/// loaded) that the filter selects, order them and split them into comparable segments.
pub fn select(
    dir: &Path,
    mut runs: Vec<LoadedRun>,
    mut left_out: Vec<String>,
    read: usize,
    req: &super::HistoryRequest,
) -> Result<LoadedHistory, HistoryError> {
    let f = &req.filter;
    runs.retain(|r| {
        f.since.as_deref().is_none_or(|s| r.meta.started.as_str() >= s)
            && f.host.as_deref().is_none_or(|h| r.meta.host.hostname == h)
            && f.tags.iter().all(|(k, v)| r.meta.meta.get(k) == Some(v))
    });
    if let OrderBy::Tag(key) = &req.order {
        runs.retain(|r| {
            let has = r.meta.meta.contains_key(key);
            if !has {
                left_out.push(format!("{}: no --meta {key}", r.dir.display()));
            }
            has
        });
    }
    order(&mut runs, &req.order);
    if let Some(n) = f.last {
        let drop = runs.len().saturating_sub(n);
        runs.drain(..drop);
    }
    if runs.is_empty() {
        return Err(HistoryError::NothingLeft(dir.to_path_buf(), read));
    }
    Ok(LoadedHistory { runs: segments(runs), left_out })
}

/// Sort runs into series order; ties (and runs without the key) by start time, then name.
fn order(runs: &mut [LoadedRun], by: &OrderBy) {
    let started = |r: &LoadedRun| (r.meta.started.clone(), r.dir.clone());
    match by {
        OrderBy::Started => runs.sort_by_key(started),
        OrderBy::Tag(key) => {
            let value = |r: &LoadedRun| r.meta.meta.get(key).cloned().unwrap_or_default();
            let numeric = runs.iter().all(|r| value(r).parse::<f64>().is_ok_and(f64::is_finite));
            runs.sort_by(|a, b| {
                let by_value = if numeric {
                    value(a).parse::<f64>().unwrap_or(0.0).total_cmp(&value(b).parse::<f64>().unwrap_or(0.0))
                } else {
                    value(a).cmp(&value(b))
                };
                by_value.then_with(|| started(a).cmp(&started(b)))
            });
        }
    }
}

/// Number the segments: a run starts a new one when it cannot be compared with the run
/// before it (another workload, or a scenario text that measures something else).
fn segments(runs: Vec<LoadedRun>) -> Vec<HistoryRun> {
    let mut out: Vec<HistoryRun> = Vec::with_capacity(runs.len());
    for run in runs {
        let segment = match out.last() {
            None => 0,
            Some(prev) if comparable(&prev.run, &run) => prev.segment,
            Some(prev) => prev.segment + 1,
        };
        out.push(HistoryRun { run, segment });
    }
    out
}

/// Whether two runs measured the same quantities, by the rule `compare` refuses by.
pub fn comparable(a: &LoadedRun, b: &LoadedRun) -> bool {
    if a.meta.workload != b.meta.workload || a.meta.scenario_name != b.meta.scenario_name {
        return false;
    }
    if a.meta.scenario_sha256 == b.meta.scenario_sha256 && a.meta.archive == b.meta.archive {
        return true;
    }
    fn side(r: &LoadedRun) -> crate::scenario::diff::Side<'_> {
        crate::scenario::diff::Side {
            label: "run",
            text: &r.meta.scenario_text,
            archive_sha256: r.meta.archive.as_ref().map(|x| x.sha256.as_str()),
        }
    }
    // Texts that do not parse cannot be shown to measure the same: split rather than join.
    crate::scenario::diff::compare(&side(a), &side(b)).is_ok_and(|c| c.refusal.is_none())
}

/// Parse `--only` against every cell the runs planned; unknown axes and values are errors.
pub fn cell_filter(only: &[String], runs: &[HistoryRun]) -> Result<CellFilter, crate::exit::InputError> {
    let mut seen = std::collections::BTreeSet::new();
    let cells = runs
        .iter()
        .flat_map(|r| r.run.meta.planned_cells.iter())
        .filter(|p| seen.insert(p.id()))
        .enumerate()
        .map(|(index, p)| crate::plan::Cell { index, params: p.clone() })
        .collect();
    CellFilter::parse(only, &crate::plan::Plan { scenario: String::new(), cells })
}
