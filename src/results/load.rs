//! Reading a run directory back: `run.json` strictly, each cell file forgivingly.

use std::fs;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use super::error::io;
use super::{CELLS_DIR, RUN_FILE, ResultsError, RunMeta, bounds, printable, safe};
use crate::beneath::open_file;
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
/// version, or a scenario text that does not match its `scenario_sha256`) is an
/// error; a bad cell file is recorded in `problems` and skipped.
///
/// The directory is opened once (a link to it is followed: the caller named it) and
/// everything in it is read beneath that fd ([`load_run_at`]).
pub fn load_run(dir: &Path) -> Result<LoadedRun, ResultsError> {
    let dir_fd = match safe::open_dir(dir) {
        Ok(fd) => fd,
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ENOTDIR)) => {
            return Err(ResultsError::NotARun { dir: dir.to_path_buf() });
        }
        Err(e) => return Err(io(dir, "open run directory", e)),
    };
    load_run_at(&dir_fd, dir)
}

/// Load the run directory open at `dir_fd`, named `shown` in messages and in
/// [`LoadedRun::dir`]: `run.json`, `cells/` and each cell file are opened beneath the
/// fd without following any link, so what is read is the directory that was opened,
/// whatever happens to its path meanwhile. Every string is capped and its control characters
/// escaped as the file is read ([`printable`]).
pub fn load_run_at(dir_fd: &OwnedFd, shown: &Path) -> Result<LoadedRun, ResultsError> {
    load_unescaped(dir_fd, shown)
}

/// [`load_run_at`] with every text field as stored: for a writer that writes `run.json` back.
pub(super) fn load_unescaped(dir_fd: &OwnedFd, shown: &Path) -> Result<LoadedRun, ResultsError> {
    let run_file = shown.join(RUN_FILE);
    let meta: RunMeta = match open_file(dir_fd, RUN_FILE) {
        Ok(Some(f)) => read_json(f, &run_file)?,
        Ok(None) => return Err(ResultsError::NotARun { dir: shown.to_path_buf() }),
        Err(e) => return Err(io(&run_file, "read", e)),
    };
    check_scenario_sha256(&meta, &run_file)?;
    let mut cells = Vec::new();
    let mut problems = Vec::new();
    let cells_dir = shown.join(CELLS_DIR);
    let cells_fd = match safe::open_subdir(dir_fd, CELLS_DIR) {
        Ok(fd) => Some(fd),
        // A run killed before its first cell has no cells yet: that is not an error.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io(&cells_dir, "read cells directory", e)),
    };
    let mut names: Vec<String> = match &cells_fd {
        Some(fd) => cell_file_names(fd).map_err(|e| io(&cells_dir, "read cells directory", e))?,
        None => Vec::new(),
    };
    names.sort();
    // Parsing dominates reporting time for large runs; files are independent, so
    // spread them over the CPUs (order is restored by the sort below).
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(8);
    let chunk = names.len().div_ceil(threads).max(1);
    let parsed: Vec<(PathBuf, Result<CellResult, ResultsError>)> = match &cells_fd {
        None => Vec::new(),
        Some(cells_fd) => std::thread::scope(|s| {
            let handles: Vec<_> = names
                .chunks(chunk)
                .map(|part| {
                    let cells_dir = &cells_dir;
                    s.spawn(move || {
                        part.iter()
                            .map(|name| {
                                let path = cells_dir.join(name);
                                let cell = match open_file(cells_fd, name) {
                                    Ok(Some(f)) => read_json::<CellResult>(f, &path),
                                    Ok(None) => Err(io(&path, "read", std::io::ErrorKind::NotFound.into())),
                                    Err(e) => Err(io(&path, "read", e)),
                                };
                                (path, cell)
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles.into_iter().flat_map(|h| h.join().expect("cell parser thread panicked")).collect()
        }),
    };
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
                let mut cell = cell;
                super::profile::attach(dir_fd, &mut cell);
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
    Ok(LoadedRun { dir: shown.to_path_buf(), meta, cells, problems })
}

/// The run's scenario is what `--resume` executes and what comparisons match on: a
/// text that is not the one its hash names was edited after the run (or forged).
fn check_scenario_sha256(meta: &RunMeta, run_file: &Path) -> Result<(), ResultsError> {
    let actual = super::sha256_hex(meta.scenario_text.as_bytes());
    if actual.eq_ignore_ascii_case(&meta.scenario_sha256) {
        return Ok(());
    }
    Err(ResultsError::Parse {
        path: run_file.to_path_buf(),
        field: "scenario_sha256".into(),
        message: format!(
            "does not match the run's scenario_text (whose sha256 is {actual}): the scenario was changed after the \
             run; the run is refused"
        ),
    })
}

/// The names in a cells directory that can be cell files: `*.json`, not hidden (a
/// temporary file of a write in flight starts with `.`).
pub(super) fn cell_file_names(cells_fd: &OwnedFd) -> std::io::Result<Vec<String>> {
    use nix::fcntl::OFlag;
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
    let mut dir = nix::dir::Dir::openat(cells_fd, ".", flags, nix::sys::stat::Mode::empty())?;
    let mut names = Vec::new();
    for entry in dir.iter() {
        let entry = entry?;
        let Ok(name) = entry.file_name().to_str() else { continue };
        if name.ends_with(".json") && name.len() > ".json".len() && !name.starts_with('.') {
            names.push(name.to_string());
        }
    }
    Ok(names)
}

/// The field name used when a whole result file, not one field, is unusable.
const WHOLE_FILE: &str = "(whole file)";

/// Read a JSON result file: parsed once as untyped JSON, so that a file from a newer
/// fsbench gets the version message instead of a confusing field error, and so that
/// every string in it is capped and escaped ([`printable`]) before it becomes typed data.
fn read_json<T: serde::de::DeserializeOwned + BoundedFile>(f: fs::File, path: &Path) -> Result<T, ResultsError> {
    let text = read_capped(f, path)?;
    let parse_error = |field: String, message: String| ResultsError::Parse { path: path.to_path_buf(), field, message };
    let mut value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        // serde_json quotes no input in its syntax errors, only positions.
        parse_error(WHOLE_FILE.into(), format!("not valid JSON ({e}); truncated or hand-edited?"))
    })?;
    // A missing `schema` is reported by serde's own message below.
    if let Some(v) = value.get("schema") {
        match v.as_u64() {
            Some(found) if found > T::SUPPORTED_SCHEMA as u64 => {
                return Err(ResultsError::NewerSchema {
                    path: path.to_path_buf(),
                    found,
                    supported: T::SUPPORTED_SCHEMA,
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
fn read_capped(f: fs::File, path: &Path) -> Result<String, ResultsError> {
    use std::io::Read;
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

/// A file of the results tree: it carries its format version, and bounded numbers and counts.
pub trait BoundedFile {
    /// The newest `schema` this fsbench reads.
    const SUPPORTED_SCHEMA: u32;
    /// Check every number and count: the dotted field and what is wrong, when one is out of bounds.
    fn bounds(&self) -> Result<(), bounds::Violation>;
}

impl BoundedFile for CellResult {
    const SUPPORTED_SCHEMA: u32 = RESULT_SCHEMA_VERSION;
    fn bounds(&self) -> Result<(), bounds::Violation> {
        bounds::check_cell(self)
    }
}

impl BoundedFile for RunMeta {
    const SUPPORTED_SCHEMA: u32 = RESULT_SCHEMA_VERSION;
    fn bounds(&self) -> Result<(), bounds::Violation> {
        bounds::check_run(self)
    }
}

/// Read the file `name` that sits beside the runs in the scenario directory `dir`
/// (`calibration.json`) as result files are read: opened beneath the directory without
/// following a link, capped in size, every string escaped, its version and bounds checked.
/// `Ok(None)` when there is no such regular file. Since it steers verdicts, the file must
/// also be owned by the effective uid or root and not writable by group or others.
pub fn read_beside_runs<T: serde::de::DeserializeOwned + BoundedFile>(
    dir: &Path,
    name: &str,
) -> Result<Option<T>, ResultsError> {
    let path = dir.join(name);
    let dir_fd = match safe::open_dir(dir) {
        Ok(fd) => fd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(dir, "open results directory", e)),
    };
    let Some(f) = open_file(&dir_fd, name).map_err(|e| io(&path, "read", e))? else { return Ok(None) };
    let st = safe::stat(&f).map_err(|e| io(&path, "read", e))?;
    // SAFETY: geteuid cannot fail.
    let euid = unsafe { libc::geteuid() };
    if st.st_uid != euid && st.st_uid != 0 {
        let why =
            format!("owned by uid {}, not by you (uid {euid}) or root: another user could steer the gate", st.st_uid);
        return Err(ResultsError::Parse { path, field: WHOLE_FILE.into(), message: why });
    }
    if st.st_mode & 0o022 != 0 {
        let why = format!("has mode {:04o}: others could have written it", st.st_mode & 0o7777);
        return Err(ResultsError::Parse { path, field: WHOLE_FILE.into(), message: why });
    }
    read_json(f, &path).map(Some)
}
