//! Reading a run directory back: `run.json` strictly, each cell file forgivingly.

use std::fs;
use std::path::{Path, PathBuf};

use super::error::io;
use super::{CELLS_DIR, RUN_FILE, ResultsError, RunMeta, bounds, printable};
use crate::model::{CellResult, RESULT_SCHEMA_VERSION};

/// A run as read back from disk.
#[derive(Debug, Clone)]
pub struct LoadedRun {
    /// The run directory.
    pub dir: PathBuf,
    /// Contents of `run.json`.
    pub meta: RunMeta,
    /// Every readable cell, sorted by plan order (unplanned cells last, by id).
    pub cells: Vec<CellResult>,
    /// One `path: field: message` line per cell file that could not be used.
    pub problems: Vec<String>,
}

impl LoadedRun {
    /// The label used in column names: `--label`, or `run` when none was given.
    pub fn label(&self) -> &str {
        self.meta.label.as_deref().unwrap_or("run")
    }
}

/// Load a run directory. A missing or unreadable `run.json` (or a newer schema
/// version) is an error; a bad cell file is recorded in `problems` and skipped.
pub fn load_run(dir: &Path) -> Result<LoadedRun, ResultsError> {
    let run_file = dir.join(RUN_FILE);
    if !run_file.is_file() {
        return Err(ResultsError::NotARun { dir: dir.to_path_buf() });
    }
    let meta: RunMeta = read_json(&run_file)?;
    let mut cells = Vec::new();
    let mut problems = Vec::new();
    let cells_dir = dir.join(CELLS_DIR);
    let mut paths: Vec<PathBuf> = match fs::read_dir(&cells_dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.extension().is_some_and(|x| x == "json")
                    && !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.'))
            })
            .collect(),
        // A run killed before its first cell has no cells yet: that is not an error.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(io(&cells_dir, "read cells directory", e)),
    };
    paths.sort();
    // Parsing dominates reporting time for large runs; files are independent, so
    // spread them over the CPUs (order is restored by the sort below).
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(8);
    let chunk = paths.len().div_ceil(threads).max(1);
    let parsed: Vec<(PathBuf, Result<CellResult, ResultsError>)> = std::thread::scope(|s| {
        let handles: Vec<_> = paths
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || part.iter().map(|p| (p.clone(), read_json::<CellResult>(p))).collect::<Vec<_>>())
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().expect("cell parser thread panicked")).collect()
    });
    for (path, parsed) in parsed {
        match parsed {
            Ok(cell) => {
                let expected = cell.params.id();
                if cell.id != expected {
                    problems.push(format!(
                        "{}: id: `{}` does not match its params (expected `{expected}`); cell ignored",
                        path.display(),
                        cell.id
                    ));
                    continue;
                }
                cells.push(cell);
            }
            Err(e) => problems.push(e.to_string()),
        }
    }
    let order: std::collections::HashMap<String, usize> =
        meta.planned_cells.iter().enumerate().map(|(i, p)| (p.id(), i)).collect();
    cells.sort_by(|a, b| {
        let ka = order.get(&a.id).copied().unwrap_or(usize::MAX);
        let kb = order.get(&b.id).copied().unwrap_or(usize::MAX);
        ka.cmp(&kb).then_with(|| a.id.cmp(&b.id))
    });
    Ok(LoadedRun { dir: dir.to_path_buf(), meta, cells, problems })
}

/// The field name used when a whole result file, not one field, is unusable.
const WHOLE_FILE: &str = "(whole file)";

/// Read a JSON result file: parsed once as untyped JSON, so that a file from a newer
/// fsbench gets the version message instead of a confusing field error, and so that
/// every string in it is capped and escaped ([`printable`]) before it becomes typed data.
fn read_json<T: serde::de::DeserializeOwned + HasSchema>(path: &Path) -> Result<T, ResultsError> {
    let text = read_capped(path)?;
    let parse_error = |field: String, message: String| ResultsError::Parse { path: path.to_path_buf(), field, message };
    let mut value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        // serde_json quotes no input in its syntax errors, only positions.
        parse_error(WHOLE_FILE.into(), format!("not valid JSON ({e}); truncated or hand-edited?"))
    })?;
    // A missing `schema` is reported by serde's own message below.
    if let Some(v) = value.get("schema") {
        match v.as_u64() {
            Some(found) if found > RESULT_SCHEMA_VERSION as u64 => {
                return Err(ResultsError::NewerSchema {
                    path: path.to_path_buf(),
                    found,
                    supported: RESULT_SCHEMA_VERSION,
                });
            }
            Some(_) => {}
            None => {
                let shown = crate::text::first_line_cut(&crate::text::escape_control(&v.to_string()), 80);
                return Err(parse_error("schema".into(), format!("expected a version number, found {shown}")));
            }
        }
    }
    printable::guard_strings(&mut value).map_err(|(field, message)| parse_error(field, message))?;
    let typed: T = serde_path_to_error::deserialize(&value).map_err(|e| {
        // serde quotes the value it refused (`unknown variant ...`): already escaped
        // by the guard above, and cut so that a message stays one readable line.
        let message = crate::text::first_line_cut(&crate::text::escape_control(&e.inner().to_string()), 300);
        parse_error(e.path().to_string(), message)
    })?;
    typed.bounds().map_err(|(field, message)| parse_error(field, message))?;
    Ok(typed)
}

/// Read a result file, refusing one larger than [`bounds::MAX_FILE_BYTES`] before allocating.
fn read_capped(path: &Path) -> Result<String, ResultsError> {
    use std::io::Read;
    let f = fs::File::open(path).map_err(|e| io(path, "read", e))?;
    let mut text = String::new();
    f.take(bounds::MAX_FILE_BYTES + 1).read_to_string(&mut text).map_err(|e| io(path, "read", e))?;
    if text.len() as u64 > bounds::MAX_FILE_BYTES {
        return Err(ResultsError::Parse {
            path: path.to_path_buf(),
            field: WHOLE_FILE.into(),
            message: format!("larger than the {} MiB a result file may be", bounds::MAX_FILE_BYTES >> 20),
        });
    }
    Ok(text)
}

/// Result files carry bounded numbers and counts.
trait HasSchema {
    fn bounds(&self) -> Result<(), bounds::Violation>;
}

impl HasSchema for CellResult {
    fn bounds(&self) -> Result<(), bounds::Violation> {
        bounds::check_cell(self)
    }
}

impl HasSchema for RunMeta {
    fn bounds(&self) -> Result<(), bounds::Violation> {
        bounds::check_run(self)
    }
}
