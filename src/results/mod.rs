//! The result store: `results/<scenario>/<run-id>/run.json` and one file per cell.
//!
//! Layout of a run directory:
//! ```text
//! <out>/<scenario>/<run-id>/run.json          RunMeta: provenance, plan, start/end
//! <out>/<scenario>/<run-id>/cells/<id>.json   one CellResult per finished cell
//! ```
//! Every file is written to a temporary name, fsynced and renamed over its final
//! name, so a crash or Ctrl-C leaves either the old file or the new one, never a
//! torn one; a run loses at most the cell in flight. Loading is forgiving per
//! cell (a bad cell file becomes a `problem`, the rest still loads) and strict
//! per run (no readable `run.json`, no run).

pub mod bounds;
pub mod find;
pub mod safe;

mod printable;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::model::{CellParams, CellResult, CellStatus, RESULT_SCHEMA_VERSION};

/// Name of the run metadata file inside a run directory.
pub const RUN_FILE: &str = "run.json";
/// Name of the directory holding one JSON file per cell.
pub const CELLS_DIR: &str = "cells";

/// Errors of the result store; each names the file it is about.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    /// A file or directory could not be read, written, created or renamed.
    #[error("{path}: {what}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What was being done (`create run directory`, `rename`).
        what: &'static str,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A directory given as a run has no `run.json`.
    #[error("{dir}: not a run directory (no {RUN_FILE}); expected results/<scenario>/<run-id>/")]
    NotARun {
        /// The directory.
        dir: PathBuf,
    },
    /// A JSON file does not match the result format.
    #[error("{path}: {field}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Dotted path of the offending field (`params.tasks`), or `.` for the whole document.
        field: String,
        /// What is wrong, in serde's words.
        message: String,
    },
    /// A file written by a newer fsbench.
    #[error(
        "{path}: schema: result format version {found} is newer than this fsbench reads (up to {supported}); upgrade fsbench"
    )]
    NewerSchema {
        /// The file.
        path: PathBuf,
        /// Version found in the file.
        found: u64,
        /// Newest version this build reads.
        supported: u32,
    },
    /// A cell id that cannot be used as a file name.
    #[error("cell id `{0}` is not a safe file name")]
    BadCellId(String),
    /// A value could not be turned into JSON (a NaN is fine; this is a bug).
    #[error("{0}: could not serialize: {1}")]
    Serialize(PathBuf, serde_json::Error),
}

/// The machine a run ran on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HostInfo {
    /// Host name (`uname -n`).
    pub hostname: String,
    /// Kernel release (`uname -r`).
    pub kernel_release: String,
    /// Kernel version string (`uname -v`).
    pub kernel_version: String,
    /// Kernel command line (`/proc/cmdline`).
    pub kernel_cmdline: String,
    /// CPU model name from `/proc/cpuinfo`.
    pub cpu_model: String,
    /// Online CPUs.
    pub cpu_count: u32,
    /// Total memory in bytes (`MemTotal`).
    pub memory_bytes: u64,
}

impl HostInfo {
    /// Read the host's identity from uname(2) and /proc; missing pieces stay empty.
    pub fn detect() -> HostInfo {
        let uts = nix::sys::utsname::uname().ok();
        let s = |f: fn(&nix::sys::utsname::UtsName) -> &std::ffi::OsStr| {
            uts.as_ref().map(|u| f(u).to_string_lossy().into_owned()).unwrap_or_default()
        };
        let read = |p: &str| fs::read_to_string(p).map(|t| t.trim().to_string()).unwrap_or_default();
        let cpuinfo = read("/proc/cpuinfo");
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == "model name" || k.trim() == "Model").then(|| v.trim().to_string())
            })
            .unwrap_or_default();
        let cpu_count = std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(0);
        let memory_bytes = read("/proc/meminfo")
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kib| kib * 1024)
            .unwrap_or(0);
        HostInfo {
            hostname: s(|u| u.nodename()),
            kernel_release: s(|u| u.release()),
            kernel_version: s(|u| u.version()),
            kernel_cmdline: read("/proc/cmdline"),
            cpu_model,
            cpu_count,
            memory_bytes,
        }
    }
}

/// Contents of `run.json`: what ran, where, when, and what was planned.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunMeta {
    /// Result format version ([`RESULT_SCHEMA_VERSION`]).
    pub schema: u32,
    /// fsbench version that wrote the run.
    pub tool_version: String,
    /// Directory name of the run (`20250101T120000Z-host`).
    pub run_id: String,
    /// Scenario name.
    pub scenario_name: String,
    /// Where the scenario text came from (a path or `<embedded:...>`).
    pub scenario_origin: String,
    /// The scenario text after overrides.
    pub scenario_text: String,
    /// sha256 of `scenario_text`, hex.
    pub scenario_sha256: String,
    /// The real archive (`[archive] path`) the run unpacked: what identifies it where paths
    /// differ. Absent for generated archives (the recipe in the text identifies them) and in
    /// runs written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive: Option<ArchiveFacts>,
    /// `lat_fs` or `steps`.
    pub workload: crate::model::WorkloadKind,
    /// `--label` (e.g. the kernel under test).
    #[serde(default)]
    pub label: Option<String>,
    /// The machine.
    pub host: HostInfo,
    /// Start, RFC 3339 UTC.
    pub started: String,
    /// End, RFC 3339 UTC; `None` while running or after a crash.
    #[serde(default)]
    pub finished: Option<String>,
    /// Every cell the plan contained, in plan order.
    pub planned_cells: Vec<CellParams>,
    /// True when the run stopped early (Ctrl-C, SIGTERM).
    #[serde(default)]
    pub interrupted: bool,
    /// Which part of a sharded run this is (`fsbench run --shard K/N`); absent when unsharded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<RunShard>,
    /// The environment preflight at the start (governor, THP, load, busy neighbours, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<crate::host::environment::Environment>,
    /// The order the cells ran in, when not the plan's (`run --order random --seed N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<RunOrder>,
}

/// How the cells of a run were ordered, as recorded in `run.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunOrder {
    /// `plan` or `random`.
    pub kind: String,
    /// Seed of the random order (the same seed and plan give the same order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Cell ids in the order they ran.
    #[serde(default)]
    pub cells: Vec<String>,
}

/// One shard of a sharded run, as recorded in `run.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunShard {
    /// Shard number K, from 1.
    pub index: u32,
    /// Number of shards N.
    pub count: u32,
    /// What the shards of one logical run share (`slurm-<array job id>`, or scenario hash and N).
    pub key: String,
    /// Cells in the whole (unsharded) plan.
    pub total_cells: usize,
    /// Position of each planned cell of this shard in the full expansion, parallel to `planned_cells`.
    pub cell_indices: Vec<usize>,
}

/// Writes one run directory: `run.json` up front, a cell file as each cell finishes.
#[derive(Debug)]
pub struct RunWriter {
    dir: PathBuf,
    meta: RunMeta,
    /// The run directory, opened once: every write is relative to it (see [`safe`]).
    dir_fd: std::os::fd::OwnedFd,
    /// Its `cells/` directory.
    cells_fd: std::os::fd::OwnedFd,
}

impl RunWriter {
    /// Make `<out_root>/<scenario.name>/<run-id>/` and write `run.json` atomically.
    ///
    /// The run id is the UTC start time plus the short host name; if that
    /// directory exists already (two runs in one second), `-2`, `-3`, ... is appended.
    pub fn create(
        out_root: &Path,
        scenario: &crate::scenario::Scenario,
        label: Option<&str>,
        planned: &[CellParams],
    ) -> Result<RunWriter, ResultsError> {
        RunWriter::create_shard(out_root, scenario, label, planned, None)
    }

    /// Like [`RunWriter::create`], for one shard of a sharded run: the run id ends
    /// in `-shard<K>of<N>` and `run.json` records the shard.
    pub fn create_shard(
        out_root: &Path,
        scenario: &crate::scenario::Scenario,
        label: Option<&str>,
        planned: &[CellParams],
        shard: Option<RunShard>,
    ) -> Result<RunWriter, ResultsError> {
        let host = HostInfo::detect();
        let started = now_rfc3339();
        let short_host = host.hostname.split('.').next().unwrap_or("").to_string();
        let mut base = format!("{}-{}", compact_timestamp(&started), sanitize(&short_host));
        if let Some(sh) = &shard {
            base.push_str(&format!("-shard{}of{}", sh.index, sh.count));
        }
        let made = RunDir::make(out_root, &scenario.name, &base)?;
        let run_id = made.run_id.clone();
        let meta = RunMeta {
            schema: RESULT_SCHEMA_VERSION,
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            run_id,
            scenario_name: scenario.name.clone(),
            scenario_origin: scenario.source.origin.clone(),
            scenario_text: scenario.source.text.clone(),
            scenario_sha256: sha256_hex(scenario.source.text.as_bytes()),
            archive: archive_facts(scenario)?,
            workload: scenario.workload.kind(),
            label: label.map(str::to_string),
            host,
            started,
            finished: None,
            planned_cells: planned.to_vec(),
            interrupted: false,
            shard,
            environment: None,
            order: None,
        };
        let (writer, parent_fd) = made.into_writer(meta);
        if let Err(e) = writer.write_meta() {
            // A run that never started must not show up in merge, report or --resume.
            remove_half_made(&parent_fd, &writer.meta.run_id);
            return Err(e);
        }
        Ok(writer)
    }

    /// Write a whole run gathered elsewhere (a merge of shards) as a new run directory
    /// `<out_root>/<scenario>/<name>/`, which loads like any other; returns it. Names
    /// from the files are made safe for a path first: they are other people's text.
    pub fn write_whole(
        out_root: &Path,
        name: &str,
        meta: &RunMeta,
        cells: &[CellResult],
    ) -> Result<PathBuf, ResultsError> {
        let made = RunDir::make(out_root, &sanitize(&meta.scenario_name), &sanitize(name))?;
        let run_id = made.run_id.clone();
        let (mut writer, parent_fd) = made.into_writer(RunMeta { run_id: run_id.clone(), ..meta.clone() });
        let written = cells.iter().try_for_each(|c| writer.write_cell(c).map(drop)).and_then(|()| writer.write_meta());
        if let Err(e) = written {
            // Removes the directory when no cell was written yet; cell files already written stay.
            remove_half_made(&parent_fd, &run_id);
            return Err(e);
        }
        Ok(writer.dir)
    }

    /// Remove a run directory that never stored a cell (a start that failed after it was
    /// made), so that it does not show up as a half-made run in merge, report or --resume.
    pub fn abandon(self) {
        let Some(id) = self.dir.file_name().map(|n| n.to_string_lossy().into_owned()) else { return };
        let Some(parent) = self.dir.parent() else { return };
        let Ok(parent_fd) = safe::open_dir(parent) else { return };
        drop((self.dir_fd, self.cells_fd));
        remove_half_made(&parent_fd, &id);
    }

    /// Reopen an interrupted run: its metadata and the cells already stored, by id.
    ///
    /// Cells stored as `failed` and unreadable cell files are not counted as stored,
    /// so a resumed run retries them (their files are replaced). Leftover temporary
    /// files of a crashed write are removed. `finished` is cleared until `finish`.
    pub fn resume(run_dir: &Path) -> Result<(RunWriter, RunMeta, BTreeMap<String, CellResult>), ResultsError> {
        let loaded = load_run(run_dir)?;
        let cells = run_dir.join(CELLS_DIR);
        let dir_fd = safe::open_dir_nofollow(run_dir).map_err(|e| io(run_dir, "open run directory", e))?;
        let cells_fd = match safe::open_subdir(&dir_fd, CELLS_DIR) {
            Ok(fd) => fd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                safe::create_subdir(&dir_fd, CELLS_DIR).map_err(|e| io(&cells, "create cells directory", e))?
            }
            Err(e) => return Err(io(&cells, "open cells directory", e)),
        };
        if let Ok(rd) = fs::read_dir(&cells) {
            for entry in rd.flatten() {
                let name = entry.file_name();
                if name.to_string_lossy().starts_with(safe::TMP_PREFIX)
                    && let Ok(c) = std::ffi::CString::new(name.as_encoded_bytes())
                {
                    // SAFETY: cells_fd is an open directory; c a valid name inside it.
                    unsafe { libc::unlinkat(std::os::fd::AsRawFd::as_raw_fd(&cells_fd), c.as_ptr(), 0) };
                }
            }
        }
        let stored: BTreeMap<String, CellResult> =
            loaded.cells.into_iter().filter(|c| c.status != CellStatus::Failed).map(|c| (c.id.clone(), c)).collect();
        let mut meta = loaded.meta;
        meta.finished = None;
        meta.interrupted = false;
        let writer = RunWriter { dir: run_dir.to_path_buf(), meta: meta.clone(), dir_fd, cells_fd };
        writer.write_meta()?;
        Ok((writer, meta, stored))
    }

    /// Store one finished cell as `<run-dir>/cells/<id>.json` (temp file, fsync, rename).
    pub fn write_cell(&mut self, cell: &CellResult) -> Result<PathBuf, ResultsError> {
        if cell.id.is_empty() || cell.id.starts_with('.') || cell.id.contains(['/', '\0']) {
            return Err(ResultsError::BadCellId(cell.id.clone()));
        }
        let name = format!("{}.json", cell.id);
        let path = self.dir.join(CELLS_DIR).join(&name);
        let bytes = serde_json::to_vec_pretty(cell).map_err(|e| ResultsError::Serialize(path.clone(), e))?;
        safe::write_at(&self.cells_fd, &name, &bytes).map_err(|e| io(&path, "write", e))?;
        Ok(path)
    }

    /// Record the end time (and whether the run was interrupted) in `run.json`.
    pub fn finish(mut self, interrupted: bool) -> Result<PathBuf, ResultsError> {
        self.meta.finished = Some(now_rfc3339());
        self.meta.interrupted = interrupted;
        self.write_meta()?;
        Ok(self.dir)
    }

    /// The run directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Record the environment preflight and the cell order in `run.json` (written now).
    pub fn record(
        &mut self,
        environment: Option<crate::host::environment::Environment>,
        order: Option<RunOrder>,
    ) -> Result<(), ResultsError> {
        if environment.is_some() {
            self.meta.environment = environment;
        }
        if order.is_some() {
            self.meta.order = order;
        }
        self.write_meta()
    }

    fn write_meta(&self) -> Result<(), ResultsError> {
        let path = self.dir.join(RUN_FILE);
        let bytes = serde_json::to_vec_pretty(&self.meta).map_err(|e| ResultsError::Serialize(path.clone(), e))?;
        safe::write_at(&self.dir_fd, RUN_FILE, &bytes).map_err(|e| io(&path, "write", e))
    }
}

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
    let mut run = LoadedRun { dir: dir.to_path_buf(), meta, cells, problems };
    printable::escape_text(&mut run);
    Ok(run)
}

/// File in a run directory imported from a bundle; `run --resume` refuses such runs.
pub const IMPORTED_MARKER: &str = "IMPORTED-FROM-BUNDLE";

/// The field name used when a whole result file, not one field, is unusable.
const WHOLE_FILE: &str = "(whole file)";

/// Read a JSON result file. The common case (a good file) is parsed once; only
/// when parsing fails is the text looked at again as untyped JSON, so that a file
/// from a newer fsbench gets the version message instead of a confusing field error.
fn read_json<T: serde::de::DeserializeOwned + HasSchema>(path: &Path) -> Result<T, ResultsError> {
    let text = read_capped(path)?;
    let mut de = serde_json::Deserializer::from_str(&text);
    let typed: Result<T, (String, String)> = serde_path_to_error::deserialize(&mut de)
        .map_err(|e| (e.path().to_string(), e.into_inner().to_string()))
        .and_then(|v| de.end().map(|()| v).map_err(|e| (WHOLE_FILE.to_string(), e.to_string())));
    match typed {
        Ok(v) if v.schema() > RESULT_SCHEMA_VERSION => Err(ResultsError::NewerSchema {
            path: path.to_path_buf(),
            found: v.schema() as u64,
            supported: RESULT_SCHEMA_VERSION,
        }),
        Ok(v) => match v.bounds() {
            Ok(()) => Ok(v),
            Err((field, message)) => Err(ResultsError::Parse { path: path.to_path_buf(), field, message }),
        },
        Err((field, message)) => {
            let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| ResultsError::Parse {
                path: path.to_path_buf(),
                field: WHOLE_FILE.into(),
                message: format!("not valid JSON ({e}); truncated or hand-edited?"),
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
                        return Err(ResultsError::Parse {
                            path: path.to_path_buf(),
                            field: "schema".into(),
                            message: format!("expected a version number, found {v}"),
                        });
                    }
                }
            }
            Err(ResultsError::Parse { path: path.to_path_buf(), field, message })
        }
    }
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

/// Result files carry their format version, and bounded numbers and counts.
trait HasSchema {
    fn schema(&self) -> u32;
    fn bounds(&self) -> Result<(), bounds::Violation>;
}

impl HasSchema for CellResult {
    fn schema(&self) -> u32 {
        self.schema
    }
    fn bounds(&self) -> Result<(), bounds::Violation> {
        bounds::check_cell(self)
    }
}

impl HasSchema for RunMeta {
    fn schema(&self) -> u32 {
        self.schema
    }
    fn bounds(&self) -> Result<(), bounds::Violation> {
        bounds::check_run(self)
    }
}

/// Write `bytes` to `path` atomically: temp file in the same directory, fsync,
/// rename, fsync the directory (so the rename itself survives a crash).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ResultsError> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let fd = safe::open_dir(dir).map_err(|e| io(dir, "open directory", e))?;
    // Created O_EXCL|O_NOFOLLOW under a fresh name and renamed: a link planted at the
    // temp or the final name is never written through.
    safe::write_at(&fd, &name, bytes).map_err(|e| io(path, "write", e))
}

/// The current time as RFC 3339 UTC with seconds: `2025-01-31T12:00:00Z`.
pub fn now_rfc3339() -> String {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    rfc3339_from_unix(secs)
}

/// Format seconds since the epoch as RFC 3339 UTC (civil-from-days, proleptic Gregorian).
pub fn rfc3339_from_unix(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's days_from_civil inverse: exact for all dates after 1970.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, (rem % 3600) / 60, rem % 60)
}

/// A real archive as a run used it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ArchiveFacts {
    /// sha256 of the .tar.gz, hex.
    pub sha256: String,
    /// Size in bytes.
    pub size: u64,
    /// Entries in the tar stream (metadata headers excluded); `None` past [`MAX_COUNTED_ENTRIES`].
    pub entries: Option<u64>,
    /// Its top-level directory (what `{archive.top}` stood for).
    pub top: String,
}

/// Counting stops here: a tarball of more entries is no kernel tree, and a crafted one
/// must not keep a run start busy for hours.
pub const MAX_COUNTED_ENTRIES: u64 = 10_000_000;

/// sha256, size and entry count of the scenario's real archive, streamed.
fn archive_facts(scenario: &crate::scenario::Scenario) -> Result<Option<ArchiveFacts>, ResultsError> {
    use sha2::Digest;
    use std::io::Read;
    let Some(a) = scenario.archive.as_ref() else { return Ok(None) };
    let crate::scenario::ArchiveSource::Path(p) = &a.source else { return Ok(None) };
    let mut f = fs::File::open(p).map_err(|e| io(p, "read archive", e))?;
    let mut h = sha2::Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut size = 0u64;
    loop {
        let n = f.read(&mut buf).map_err(|e| io(p, "read archive", e))?;
        if n == 0 {
            break;
        }
        size += n as u64;
        h.update(&buf[..n]);
    }
    let f = fs::File::open(p).map_err(|e| io(p, "read archive", e))?;
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(std::io::BufReader::new(f)));
    // An unreadable stream is the untar step's error to report, with its position; here it only leaves the count out.
    let entries = ar.entries().ok().and_then(|es| {
        let mut n = 0u64;
        for e in es {
            e.ok()?;
            n += 1;
            if n > MAX_COUNTED_ENTRIES {
                return None;
            }
        }
        Some(n)
    });
    Ok(Some(ArchiveFacts {
        sha256: h.finalize().iter().map(|b| format!("{b:02x}")).collect(),
        size,
        entries,
        top: a.top.clone(),
    }))
}

/// sha256 of some bytes as lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// JSON Schema of cell result files (`schemas/result.schema.json`).
pub fn result_schema_json() -> String {
    let schema = schemars::schema_for!(CellResult);
    serde_json::to_string_pretty(&schema).expect("schema serializes") + "\n"
}

/// JSON Schema of `run.json` (`schemas/run.schema.json`).
pub fn run_schema_json() -> String {
    let schema = schemars::schema_for!(RunMeta);
    serde_json::to_string_pretty(&schema).expect("schema serializes") + "\n"
}

/// `2025-01-31T12:00:00Z` -> `20250131T120000Z`: sortable and safe in paths.
fn compact_timestamp(rfc3339: &str) -> String {
    rfc3339.chars().filter(|c| *c != '-' && *c != ':').collect()
}

fn sanitize(s: &str) -> String {
    let s: String =
        s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    if s.is_empty() { "host".into() } else { s }
}

/// A new, empty run directory `<out_root>/<scenario>/<run_id>/` with its `cells/`,
/// made through directory fds: `--out` is the user's choice, and below it nothing
/// is followed or trusted unchecked (see [`safe`]).
struct RunDir {
    parent_fd: std::os::fd::OwnedFd,
    dir_fd: std::os::fd::OwnedFd,
    cells_fd: std::os::fd::OwnedFd,
    dir: PathBuf,
    run_id: String,
}

impl RunDir {
    fn make(out_root: &Path, scenario: &str, base: &str) -> Result<RunDir, ResultsError> {
        let parent = out_root.join(scenario);
        fs::create_dir_all(out_root).map_err(|e| io(out_root, "create results directory", e))?;
        let root_fd = safe::open_dir(out_root).map_err(|e| io(out_root, "open results directory", e))?;
        let parent_fd =
            safe::ensure_subdir(&root_fd, scenario, &parent).map_err(|e| io(&parent, "open results directory", e))?;
        let (dir_fd, dir, run_id) = create_unique_dir(&parent_fd, &parent, base)?;
        let cells_fd = match safe::create_subdir(&dir_fd, CELLS_DIR) {
            Ok(fd) => fd,
            Err(e) => {
                remove_half_made(&parent_fd, &run_id);
                return Err(io(&dir.join(CELLS_DIR), "create cells directory", e));
            }
        };
        Ok(RunDir { parent_fd, dir_fd, cells_fd, dir, run_id })
    }

    /// The writer of this directory, and the fd of its parent (to remove it again).
    fn into_writer(self, meta: RunMeta) -> (RunWriter, std::os::fd::OwnedFd) {
        (RunWriter { dir: self.dir, meta, dir_fd: self.dir_fd, cells_fd: self.cells_fd }, self.parent_fd)
    }
}

/// Create `<parent>/<base>` or the first free `<base>-N`; mkdirat fails on an
/// existing directory, so two concurrent runs can never share one.
fn create_unique_dir(
    parent_fd: &std::os::fd::OwnedFd,
    parent: &Path,
    base: &str,
) -> Result<(std::os::fd::OwnedFd, PathBuf, String), ResultsError> {
    for n in 1u32.. {
        let id = if n == 1 { base.to_string() } else { format!("{base}-{n}") };
        let dir = parent.join(&id);
        match safe::create_subdir(parent_fd, &id) {
            Ok(fd) => return Ok((fd, dir, id)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io(&dir, "create run directory", e)),
        }
    }
    unreachable!("u32 run-id suffixes exhausted")
}

/// Remove what a failed start made of run directory `id`: its run.json, its empty
/// cells/ and itself; anything else in it (not ours) stays.
fn remove_half_made(parent_fd: &std::os::fd::OwnedFd, id: &str) {
    use std::os::fd::AsRawFd;
    let Ok(dir_fd) = safe::open_subdir(parent_fd, id) else { return };
    let c = |s: &str| std::ffi::CString::new(s).expect("no NUL in fixed names");
    // SAFETY: open directory fds and valid names; failures leave the entry in place.
    unsafe {
        libc::unlinkat(dir_fd.as_raw_fd(), c(RUN_FILE).as_ptr(), 0);
        libc::unlinkat(dir_fd.as_raw_fd(), c(CELLS_DIR).as_ptr(), libc::AT_REMOVEDIR);
        libc::unlinkat(parent_fd.as_raw_fd(), c(id).as_ptr(), libc::AT_REMOVEDIR);
    }
}

fn io(path: &Path, what: &'static str, source: std::io::Error) -> ResultsError {
    ResultsError::Io { path: path.to_path_buf(), what, source }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_known_dates() {
        assert_eq!(rfc3339_from_unix(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_from_unix(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339_from_unix(1_046_476_838), "2003-03-01T00:00:38Z");
        assert_eq!(rfc3339_from_unix(4_102_444_799), "2099-12-31T23:59:59Z");
        assert_eq!(compact_timestamp("2003-03-01T00:00:38Z"), "20030301T000038Z");
    }

    #[test]
    fn unique_dirs_do_not_collide() {
        let t = tempfile::tempdir().unwrap();
        let fd = safe::open_dir(t.path()).unwrap();
        let (_, a, ia) = create_unique_dir(&fd, t.path(), "x").unwrap();
        let (_, b, ib) = create_unique_dir(&fd, t.path(), "x").unwrap();
        assert_ne!(a, b);
        assert_eq!((ia.as_str(), ib.as_str()), ("x", "x-2"));
    }

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("a.json");
        write_atomic(&p, b"1").unwrap();
        write_atomic(&p, b"22").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"22");
        assert_eq!(fs::read_dir(t.path()).unwrap().count(), 1);
    }

    #[test]
    fn host_detect_reads_this_kernel() {
        let h = HostInfo::detect();
        assert!(!h.kernel_release.is_empty());
        assert!(h.cpu_count >= 1 && h.memory_bytes > 0);
    }

    #[test]
    fn workload_kind_keeps_its_json_and_an_unknown_one_is_a_load_error() {
        let mut m = RunMeta { workload: crate::model::WorkloadKind::Steps, ..Default::default() };
        let text = serde_json::to_string(&m).unwrap();
        assert!(text.contains(r#""workload":"steps""#), "{text}");
        m.workload = crate::model::WorkloadKind::LatFs;
        assert!(serde_json::to_string(&m).unwrap().contains(r#""workload":"lat_fs""#));
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join(RUN_FILE), text.replace(r#""workload":"steps""#, r#""workload":"fio""#)).unwrap();
        let e = load_run(t.path()).unwrap_err().to_string();
        assert!(e.contains("unknown variant `fio`") && e.contains("`lat_fs`"), "{e}");
    }
}
