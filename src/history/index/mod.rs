//! The history index: an SQLite database beside the results (`<root>/.fsbench-index/index.sqlite`)
//! holding, per finished run, its `run.json` and the values a history reads, so that a history
//! of a thousand runs need not parse a hundred thousand cell files.
//!
//! The run directories stay the only source of truth: the index is brought up to date from them
//! on every `history` (runs new, changed or gone since), and may be deleted at any time.
//! [`place`] finds and opens it safely; [`store`] holds its tables, their update and reading.

pub mod place;
pub mod store;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::series::MeasuredCell;
use crate::results::LoadedRun;
use store::IndexError;

/// The runs of a scenario directory as the index (and, for those it does not hold, the loader) gave them.
pub struct FromIndex {
    /// The runs read, by directory name; those from the index have no `cells` (the measured
    /// cells are in [`FromIndex::cells`]).
    pub runs: Vec<LoadedRun>,
    /// Each run's measured cells, by run directory.
    pub cells: HashMap<PathBuf, Vec<MeasuredCell>>,
    /// One line per run directory the loader refused, by name.
    pub left_out: Vec<String>,
}

/// Read the run directories `dirs` of the scenario directory `dir` through the index of its
/// results root (the directory above it), bringing the index up to date first. A damaged
/// index is removed and built again (said in `notes`); the reason when no index can be used.
pub fn read_history(dir: &Path, dirs: &[PathBuf], notes: &mut Vec<String>) -> Result<FromIndex, String> {
    let canonical = std::fs::canonicalize(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let (Some(root), Some(scenario)) = (canonical.parent(), canonical.file_name().and_then(|n| n.to_str())) else {
        return Err(format!("{}: no results root above it, or a name that is not UTF-8", dir.display()));
    };
    let names: Vec<String> = dirs.iter().filter_map(|p| p.file_name()?.to_str().map(str::to_string)).collect();
    if names.len() != dirs.len() {
        return Err("a run directory's name is not UTF-8".into());
    }
    let ix = place::open_index_dir(root)?;
    for attempt in 0..2 {
        let mut conn = ix.open(notes)?;
        match read_through(&mut conn, scenario, dir, &names) {
            Ok(found) => return Ok(found),
            Err(e) if e.is_corrupt() && attempt == 0 => {
                drop(conn);
                notes.push(format!("{}: {e}; removed, the index is built again", ix.shown.display()));
                ix.remove_db();
            }
            Err(e) => return Err(format!("{}: {e}", ix.shown.display())),
        }
    }
    unreachable!("the second attempt returns")
}

fn read_through(
    conn: &mut rusqlite::Connection,
    scenario: &str,
    dir: &Path,
    names: &[String],
) -> Result<FromIndex, IndexError> {
    store::ensure_schema(conn)?;
    let direct = store::update(conn, scenario, dir, names)?;
    let mut by_name: HashMap<String, Result<(LoadedRun, Vec<MeasuredCell>), String>> = HashMap::new();
    for r in store::read(conn, scenario)? {
        let run = LoadedRun { dir: dir.join(&r.name), meta: r.meta, cells: Vec::new(), problems: Vec::new() };
        by_name.insert(r.name, Ok((run, r.cells)));
    }
    for d in direct {
        by_name.insert(d.name, d.run);
    }
    let mut found = FromIndex { runs: Vec::new(), cells: HashMap::new(), left_out: Vec::new() };
    for name in names {
        match by_name.remove(name) {
            Some(Ok((run, cells))) => {
                found.cells.insert(run.dir.clone(), cells);
                found.runs.push(run);
            }
            Some(Err(e)) => found.left_out.push(crate::text::escape_control(&e)),
            None => return Err(IndexError::Other(format!("run {name} changed while it was read"))),
        }
    }
    Ok(found)
}
