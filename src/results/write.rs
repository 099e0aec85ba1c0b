//! Writing a run directory: `run.json` up front, one cell file as each cell finishes,
//! every file atomically.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::error::io;
use super::run_dir::{RunDir, remove_half_made, sanitize};
use super::time::compact_timestamp;
use super::{ArchiveFacts, CELLS_DIR, RUN_FILE, ResultsError, RunMeta, RunOrder, RunShard, now_rfc3339, safe};
use crate::host::identity::HostInfo;
use crate::model::{CellParams, CellResult, CellStatus, RESULT_SCHEMA_VERSION};

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
            derived: None,
            meta: Default::default(),
            pair_seed: None,
            kernels: Vec::new(),
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
    /// `<out_root>/<scenario>/<name>/`, which loads like any other and is marked in its
    /// `run.json` as `derived` (so never resumed); returns it. Names from the files are
    /// made safe for a path first: they are other people's text.
    pub fn write_whole(
        out_root: &Path,
        name: &str,
        meta: &RunMeta,
        cells: &[CellResult],
        derived: super::Derived,
    ) -> Result<PathBuf, ResultsError> {
        let made = RunDir::make(out_root, &sanitize(&meta.scenario_name), &sanitize(name))?;
        let run_id = made.run_id.clone();
        let meta = RunMeta { run_id: run_id.clone(), derived: Some(derived), ..meta.clone() };
        let (mut writer, parent_fd) = made.into_writer(meta);
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

    /// Reopen an interrupted run, checked and loaded by [`ResumableRun::open`]: its metadata
    /// and the cells already stored, by id. Writes go to the directory that was opened
    /// and checked, through its fd, whatever its path names now.
    ///
    /// Cells stored as `failed` and unreadable cell files are not counted as stored,
    /// so a resumed run retries them (their files are replaced). Leftover temporary
    /// files of a crashed write are removed. `finished` is cleared until `finish`.
    pub fn resume(
        opened: super::ResumableRun,
    ) -> Result<(RunWriter, RunMeta, BTreeMap<String, CellResult>), ResultsError> {
        let super::ResumableRun { dir_fd, run: loaded } = opened;
        let run_dir = loaded.dir.clone();
        let cells = run_dir.join(CELLS_DIR);
        let cells_fd = match safe::open_subdir(&dir_fd, CELLS_DIR) {
            Ok(fd) => fd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                safe::create_subdir(&dir_fd, CELLS_DIR).map_err(|e| io(&cells, "create cells directory", e))?
            }
            Err(e) => return Err(io(&cells, "open cells directory", e)),
        };
        safe::remove_temporaries(&cells_fd).map_err(|e| io(&cells, "remove temporary files", e))?;
        let stored: BTreeMap<String, CellResult> =
            loaded.cells.into_iter().filter(|c| c.status != CellStatus::Failed).map(|c| (c.id.clone(), c)).collect();
        let mut meta = loaded.meta;
        meta.finished = None;
        meta.interrupted = false;
        let writer = RunWriter { dir: run_dir, meta: meta.clone(), dir_fd, cells_fd };
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
        // The folded stacks first, so that a cell file never names a profile not yet written.
        // A paired run's later profiled members too (`<id>.pair<k>.folded`).
        for p in cell.profile.iter().chain(&cell.pair_profiles) {
            let name = |offcpu| crate::profile::folded_name(&cell.id, p.pair, offcpu);
            if !p.folded.is_empty() {
                self.write_profile(&name(false), p.folded.as_bytes())?;
            }
            if let Some(o) = p.offcpu.as_ref().filter(|o| !o.folded.is_empty()) {
                self.write_profile(&name(true), o.folded.as_bytes())?;
            }
        }
        let bytes = serde_json::to_vec_pretty(cell).map_err(|e| ResultsError::Serialize(path.clone(), e))?;
        safe::write_at(&self.cells_fd, &name, &bytes).map_err(|e| io(&path, "write", e))?;
        Ok(path)
    }

    /// Store a cell's folded stacks as `<run-dir>/profiles/<name>`
    /// ([`crate::profile::folded_name`]; temp file, rename).
    fn write_profile(&self, name: &str, folded: &[u8]) -> Result<(), ResultsError> {
        let dir = self.dir.join(crate::profile::PROFILES_DIR);
        let fd =
            safe::ensure_subdir(&self.dir_fd, crate::profile::PROFILES_DIR, &dir).map_err(|e| io(&dir, "make", e))?;
        safe::write_at(&fd, name, folded).map_err(|e| io(&dir.join(name), "write", e))
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

    /// Record the seed of a paired run's pair order in `run.json` (written again at once).
    pub fn record_pair_seed(&mut self, seed: u64) -> Result<(), ResultsError> {
        self.meta.pair_seed = Some(seed);
        self.write_meta()
    }

    /// The seed of the pair order recorded in `run.json`, if any (a resumed paired run's).
    pub fn pair_seed(&self) -> Option<u64> {
        self.meta.pair_seed
    }

    /// Record the kernels of a kernel-paired run in `run.json` (written again at once).
    pub fn record_kernels(&mut self, kernels: Vec<super::RunKernel>) -> Result<(), ResultsError> {
        self.meta.kernels = kernels;
        self.write_meta()
    }

    /// Record the run's `--meta` pairs in `run.json` (written again at once).
    pub fn record_tags(&mut self, tags: crate::model::run_tags::RunTags) -> Result<(), ResultsError> {
        self.meta.meta = tags;
        self.write_meta()
    }

    fn write_meta(&self) -> Result<(), ResultsError> {
        let path = self.dir.join(RUN_FILE);
        let bytes = serde_json::to_vec_pretty(&self.meta).map_err(|e| ResultsError::Serialize(path.clone(), e))?;
        safe::write_at(&self.dir_fd, RUN_FILE, &bytes).map_err(|e| io(&path, "write", e))
    }
}

impl RunDir {
    /// The writer of this directory, and the fd of its parent (to remove it again).
    fn into_writer(self, meta: RunMeta) -> (RunWriter, std::os::fd::OwnedFd) {
        (RunWriter { dir: self.dir, meta, dir_fd: self.dir_fd, cells_fd: self.cells_fd }, self.parent_fd)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("a.json");
        write_atomic(&p, b"1").unwrap();
        write_atomic(&p, b"22").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"22");
        assert_eq!(fs::read_dir(t.path()).unwrap().count(), 1);
    }
}
