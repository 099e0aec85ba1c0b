//! The index's tables (documented in docs/history.md), bringing a scenario's rows up to date
//! with its run directories, and reading them back.

use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;

use rusqlite::{Connection, TransactionBehavior, params};
use sha2::{Digest, Sha256};

use crate::catalogue::Direction;
use crate::history::series::{MeasuredCell, MetricValue, unit_named};
use crate::results::{LoadedRun, RunMeta, safe};

/// Why the index could not be brought up to date or read.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// SQLite's error (a corrupt file, a lock held too long, a full disk).
    #[error("{0}")]
    Sql(#[from] rusqlite::Error),
    /// Rows that cannot be what fsbench wrote.
    #[error("{0}")]
    Damaged(String),
    /// Anything else, said.
    #[error("{0}")]
    Other(String),
}

impl IndexError {
    /// Whether the database file is damaged (or not one): then it is removed and built again.
    pub fn is_corrupt(&self) -> bool {
        use rusqlite::ErrorCode::{DatabaseCorrupt, NotADatabase};
        match self {
            IndexError::Sql(rusqlite::Error::SqliteFailure(e, _)) => matches!(e.code, DatabaseCorrupt | NotADatabase),
            IndexError::Sql(rusqlite::Error::FromSqlConversionFailure(..) | rusqlite::Error::InvalidColumnType(..)) => {
                true
            }
            IndexError::Damaged(_) => true,
            _ => false,
        }
    }
}

/// `PRAGMA user_version` of the tables below; an index of another version is built again.
/// It is raised whenever the rows a run gives change, not only the tables: version 2 added
/// fio metrics, paired ratios and the `low`/`high` columns, which a version-1 index lacks
/// for the runs it holds; version 3 took step and latency values over the catalogue's samples
/// (steady, undisturbed iterations; each repetition's percentile) where version 2 averaged
/// every iteration and read the merged histogram; version 4 keys each run by every file's
/// status (`files_sha256`), so that a cell file edited in place is read again.
pub const SCHEMA_VERSION: i64 = 4;

const SCHEMA: &str = "
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    scenario TEXT NOT NULL,
    run_dir TEXT NOT NULL,
    dir_inode INTEGER NOT NULL,
    run_json_size INTEGER NOT NULL,
    run_json_mtime_ns INTEGER NOT NULL,
    cells_mtime_ns INTEGER NOT NULL,
    files_sha256 TEXT NOT NULL,
    started TEXT NOT NULL,
    finished TEXT NOT NULL,
    hostname TEXT NOT NULL,
    label TEXT,
    workload TEXT NOT NULL,
    scenario_name TEXT NOT NULL,
    scenario_sha256 TEXT NOT NULL,
    tool_version TEXT NOT NULL,
    run_json TEXT NOT NULL,
    UNIQUE (scenario, run_dir)
);
CREATE TABLE run_meta (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (run_id, key)
) WITHOUT ROWID;
CREATE TABLE cells (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    position INTEGER NOT NULL,
    cell TEXT NOT NULL,
    params TEXT NOT NULL,
    PRIMARY KEY (run_id, position)
) WITHOUT ROWID;
CREATE TABLE points (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    cell_position INTEGER NOT NULL,
    metric_position INTEGER NOT NULL,
    cell TEXT NOT NULL,
    metric TEXT NOT NULL,
    unit TEXT NOT NULL,
    better TEXT NOT NULL,
    value REAL NOT NULL,
    n INTEGER NOT NULL,
    low REAL,
    high REAL,
    PRIMARY KEY (run_id, cell_position, metric_position)
) WITHOUT ROWID;
CREATE INDEX points_by_cell_metric ON points (cell, metric);
";

/// Make the tables when the database is new; an index of another version is emptied and made
/// again (it holds nothing the run directories do not).
pub fn ensure_schema(conn: &Connection) -> rusqlite::Result<()> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version == SCHEMA_VERSION {
        return Ok(());
    }
    let tx = conn.unchecked_transaction()?;
    // Re-read inside the write lock: another fsbench may have just made them.
    if tx.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))? != SCHEMA_VERSION {
        for t in ["points", "cells", "run_meta", "runs"] {
            tx.execute_batch(&format!("DROP TABLE IF EXISTS {t}"))?;
        }
        tx.execute_batch(SCHEMA)?;
        tx.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))?;
    }
    tx.commit()
}

/// What a run directory looked like when it was read: a change to any of these reads it again.
/// `files` digests the status of `run.json` and of every entry of `cells/` (name, inode, size,
/// modification and change times): a file edited in place changes its ctime even when its
/// mtime is put back (utimensat sets the ctime to now; nothing sets it back), and a file
/// replaced changes its inode. One fstatat per file: far cheaper than parsing it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunKey {
    dir_inode: i64,
    run_json_size: i64,
    run_json_mtime_ns: i64,
    cells_mtime_ns: i64,
    files: String,
}

fn stat_at(dir: &OwnedFd, name: &std::ffi::CStr) -> Option<libc::stat> {
    // SAFETY: st is plain data; fstatat fills it for a valid fd and name.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::fstatat(dir.as_raw_fd(), name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
    (r == 0).then_some(st)
}

/// The key of the run directory open at `fd` (`None` when it has no plain `run.json`, or its
/// `cells/` cannot be listed: then the run is read directly, never from the index).
fn run_key(fd: &OwnedFd) -> Option<RunKey> {
    let dir = safe::stat(fd).ok()?;
    let run = stat_at(fd, c"run.json").filter(|s| s.st_mode & libc::S_IFMT == libc::S_IFREG)?;
    let cells = stat_at(fd, c"cells");
    let mut h = Sha256::new();
    add_status(&mut h, "run.json", &run);
    if let Some(c) = cells.filter(|c| c.st_mode & libc::S_IFMT == libc::S_IFDIR) {
        add_status(&mut h, "cells", &c);
        let cells_fd = safe::open_subdir(fd, "cells").ok()?;
        let mut names = crate::beneath::list_names(&cells_fd).ok()?;
        names.sort();
        for name in names {
            let c = std::ffi::CString::new(name.as_bytes()).ok()?;
            // A name that vanished meanwhile: read directly this time.
            let st = stat_at(&cells_fd, &c)?;
            add_status(&mut h, &name, &st);
        }
    }
    Some(RunKey {
        dir_inode: dir.st_ino as i64,
        run_json_size: run.st_size,
        run_json_mtime_ns: run.st_mtime * 1_000_000_000 + run.st_mtime_nsec,
        cells_mtime_ns: cells.map_or(0, |s| s.st_mtime * 1_000_000_000 + s.st_mtime_nsec),
        files: hex(&h.finalize()),
    })
}

/// One file's name and status in the key's digest (fixed-width fields: no two inputs collide).
fn add_status(h: &mut Sha256, name: &str, st: &libc::stat) {
    h.update((name.len() as u64).to_le_bytes());
    h.update(name.as_bytes());
    for v in
        [st.st_ino as i64, st.st_size, st.st_mode as i64, st.st_mtime, st.st_mtime_nsec, st.st_ctime, st.st_ctime_nsec]
    {
        h.update(v.to_le_bytes());
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A run read from its directory (not from the index) and why.
pub struct ReadDirectly {
    /// Its directory's name.
    pub name: String,
    /// The run, or the loader's reason for refusing it.
    pub run: Result<(LoadedRun, Vec<MeasuredCell>), String>,
}

/// Bring the rows of scenario `scenario` (the directory `dir`, its run directories `names`) up
/// to date: runs new or changed since they were indexed are read with the result store's
/// loader, finished ones are written in one transaction, rows of runs gone are deleted.
/// Runs the loader refuses and runs not finished (a run may be writing them now) are never
/// indexed: they are returned, read directly, every time.
pub fn update(
    conn: &mut Connection,
    scenario: &str,
    dir: &Path,
    names: &[String],
) -> Result<Vec<ReadDirectly>, IndexError> {
    let sql = IndexError::Sql;
    let mut stored: HashMap<String, RunKey> = HashMap::new();
    {
        let mut q = conn
            .prepare(
                "SELECT run_dir, dir_inode, run_json_size, run_json_mtime_ns, cells_mtime_ns, files_sha256 FROM runs \
                 WHERE scenario = ?1",
            )
            .map_err(sql)?;
        let rows = q
            .query_map([scenario], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    RunKey {
                        dir_inode: r.get(1)?,
                        run_json_size: r.get(2)?,
                        run_json_mtime_ns: r.get(3)?,
                        cells_mtime_ns: r.get(4)?,
                        files: r.get(5)?,
                    },
                ))
            })
            .map_err(sql)?;
        for row in rows {
            let (name, key) = row.map_err(sql)?;
            stored.insert(name, key);
        }
    }
    let scenario_fd = safe::open_dir(dir).map_err(|e| IndexError::Other(format!("{}: {e}", dir.display())))?;
    let mut direct = Vec::new();
    let mut fresh: Vec<(String, RunKey, LoadedRun, Vec<MeasuredCell>)> = Vec::new();
    let mut stale: Vec<String> = Vec::new();
    // Read without holding the write lock: the key is taken before the run is read, so a run
    // that changes meanwhile is stored under its old key and read again next time.
    for name in names {
        let shown = dir.join(name);
        let fd = match safe::open_subdir(&scenario_fd, name) {
            Ok(fd) => fd,
            Err(e) => {
                let e = crate::results::ResultsError::Io { path: shown.clone(), what: "open run directory", source: e };
                direct.push(ReadDirectly { name: name.clone(), run: Err(e.to_string()) });
                stale.push(name.clone());
                continue;
            }
        };
        let key = run_key(&fd);
        if key.is_some() && stored.get(name) == key.as_ref() {
            continue;
        }
        match crate::results::load_run_at(&fd, &shown) {
            Ok(run) => {
                let cells = crate::history::series::measured_cells(&run);
                match key {
                    Some(key) if run.meta.finished.is_some() => fresh.push((name.clone(), key, run, cells)),
                    _ => {
                        stale.push(name.clone());
                        direct.push(ReadDirectly { name: name.clone(), run: Ok((run, cells)) });
                    }
                }
            }
            Err(e) => {
                stale.push(name.clone());
                direct.push(ReadDirectly { name: name.clone(), run: Err(e.to_string()) });
            }
        }
    }
    let listed: std::collections::HashSet<&String> = names.iter().collect();
    stale.extend(stored.keys().filter(|n| !listed.contains(n)).cloned());
    stale.retain(|n| stored.contains_key(n));
    if fresh.is_empty() && stale.is_empty() {
        return Ok(direct);
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sql)?;
    for name in stale.iter().chain(fresh.iter().map(|f| &f.0)) {
        delete_run(&tx, scenario, name).map_err(sql)?;
    }
    for (name, key, run, cells) in &fresh {
        insert_run(&tx, scenario, name, key, run, cells).map_err(sql)?;
    }
    tx.commit().map_err(sql)?;
    Ok(direct)
}

fn delete_run(tx: &rusqlite::Transaction, scenario: &str, name: &str) -> rusqlite::Result<()> {
    let id: Option<i64> = tx
        .query_row("SELECT id FROM runs WHERE scenario = ?1 AND run_dir = ?2", [scenario, name], |r| r.get(0))
        .map(Some)
        .or_else(|e| if e == rusqlite::Error::QueryReturnedNoRows { Ok(None) } else { Err(e) })?;
    if let Some(id) = id {
        for t in ["points", "cells", "run_meta"] {
            tx.execute(&format!("DELETE FROM {t} WHERE run_id = ?1"), [id])?;
        }
        tx.execute("DELETE FROM runs WHERE id = ?1", [id])?;
    }
    Ok(())
}

fn insert_run(
    tx: &rusqlite::Transaction,
    scenario: &str,
    name: &str,
    key: &RunKey,
    run: &LoadedRun,
    cells: &[MeasuredCell],
) -> rusqlite::Result<()> {
    let m = &run.meta;
    let json = serde_json::to_string(m).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
    let workload = serde_json::to_value(m.workload).ok().and_then(|v| v.as_str().map(str::to_string));
    tx.execute(
        "INSERT INTO runs (scenario, run_dir, dir_inode, run_json_size, run_json_mtime_ns, cells_mtime_ns, \
         files_sha256, started, finished, hostname, label, workload, scenario_name, scenario_sha256, tool_version, \
         run_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
        params![
            scenario,
            name,
            key.dir_inode,
            key.run_json_size,
            key.run_json_mtime_ns,
            key.cells_mtime_ns,
            key.files,
            m.started,
            m.finished.as_deref().unwrap_or_default(),
            m.host.hostname,
            m.label,
            workload.unwrap_or_default(),
            m.scenario_name,
            m.scenario_sha256,
            m.tool_version,
            json
        ],
    )?;
    let id = tx.last_insert_rowid();
    let mut meta = tx.prepare_cached("INSERT INTO run_meta (run_id, key, value) VALUES (?1, ?2, ?3)")?;
    for (k, v) in m.meta.iter() {
        meta.execute(params![id, k, v])?;
    }
    let mut cell_row =
        tx.prepare_cached("INSERT INTO cells (run_id, position, cell, params) VALUES (?1, ?2, ?3, ?4)")?;
    let mut point = tx.prepare_cached(
        "INSERT INTO points (run_id, cell_position, metric_position, cell, metric, unit, better, value, n, low, \
         high) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?;
    for (pos, c) in cells.iter().enumerate() {
        let params =
            serde_json::to_string(&c.params).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
        cell_row.execute(params![id, pos as i64, c.id, params])?;
        for mt in &c.metrics {
            point.execute(params![
                id,
                pos as i64,
                mt.position as i64,
                c.id,
                mt.name,
                mt.unit,
                mt.better.word(),
                mt.value,
                mt.n as i64,
                mt.interval.map(|i| i.0),
                mt.interval.map(|i| i.1)
            ])?;
        }
    }
    Ok(())
}

/// A run as the index holds it: its `run.json` and its measured cells (its cell files are not read).
pub struct IndexedRun {
    /// Its directory's name.
    pub name: String,
    /// `run.json`, as the loader read it.
    pub meta: RunMeta,
    /// Its measured cells, in the run's order.
    pub cells: Vec<MeasuredCell>,
}

/// Every run of `scenario` in the index.
pub fn read(conn: &Connection, scenario: &str) -> Result<Vec<IndexedRun>, IndexError> {
    let sql = IndexError::Sql;
    let bad = IndexError::Damaged;
    let mut runs: Vec<(i64, IndexedRun)> = Vec::new();
    let mut by_id: HashMap<i64, usize> = HashMap::new();
    let mut q = conn.prepare("SELECT id, run_dir, run_json FROM runs WHERE scenario = ?1 ORDER BY id").map_err(sql)?;
    let rows = q
        .query_map([scenario], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?)))
        .map_err(sql)?;
    for row in rows {
        let (id, name, json) = row.map_err(sql)?;
        let meta: RunMeta = serde_json::from_str(&json).map_err(|e| bad(format!("run {name}: run_json: {e}")))?;
        by_id.insert(id, runs.len());
        runs.push((id, IndexedRun { name, meta, cells: Vec::new() }));
    }
    // The same parameters recur in every run: parse each text once.
    let mut params: HashMap<String, crate::model::CellParams> = HashMap::new();
    let mut q = conn
        .prepare(
            "SELECT c.run_id, c.cell, c.params FROM cells c JOIN runs r ON r.id = c.run_id WHERE r.scenario = ?1 \
             ORDER BY c.run_id, c.position",
        )
        .map_err(sql)?;
    let mut rows = q.query([scenario]).map_err(sql)?;
    while let Some(r) = rows.next().map_err(sql)? {
        let id: i64 = r.get(0).map_err(sql)?;
        let cell: String = r.get(1).map_err(sql)?;
        let text = r.get_ref(2).map_err(sql)?.as_str().map_err(|e| bad(e.to_string()))?;
        let p = match params.get(text) {
            Some(p) => p.clone(),
            None => {
                let p: crate::model::CellParams =
                    serde_json::from_str(text).map_err(|e| bad(format!("cell {cell}: params: {e}")))?;
                params.insert(text.to_string(), p.clone());
                p
            }
        };
        let Some(&i) = by_id.get(&id) else { return Err(bad(format!("cell {cell} of no run"))) };
        runs[i].1.cells.push(MeasuredCell { id: cell, params: p, metrics: Vec::new() });
    }
    let mut q = conn
        .prepare(
            "SELECT p.run_id, p.cell_position, p.metric_position, p.metric, p.unit, p.better, p.value, p.n, p.low, \
             p.high FROM points p JOIN runs r ON r.id = p.run_id WHERE r.scenario = ?1 ORDER BY p.run_id, p.cell_position, \
             p.metric_position",
        )
        .map_err(sql)?;
    let mut rows = q.query([scenario]).map_err(sql)?;
    while let Some(r) = rows.next().map_err(sql)? {
        let id: i64 = r.get(0).map_err(sql)?;
        let cell_pos: usize = r.get::<_, i64>(1).map_err(sql)? as usize;
        let unit_text = r.get_ref(4).map_err(sql)?.as_str().map_err(|e| bad(e.to_string()))?;
        let Some(unit) = unit_named(unit_text) else {
            return Err(bad(format!("unknown unit `{}`", crate::text::escape_control(unit_text))));
        };
        let word = r.get_ref(5).map_err(sql)?.as_str().map_err(|e| bad(e.to_string()))?;
        let Some(better) = Direction::from_word(word) else {
            return Err(bad(format!("unknown direction `{}`", crate::text::escape_control(word))));
        };
        let metric = MetricValue {
            name: r.get(3).map_err(sql)?,
            unit,
            better,
            value: r.get(6).map_err(sql)?,
            n: r.get::<_, i64>(7).map_err(sql)? as usize,
            position: r.get::<_, i64>(2).map_err(sql)? as usize,
            interval: match (r.get::<_, Option<f64>>(8).map_err(sql)?, r.get::<_, Option<f64>>(9).map_err(sql)?) {
                (Some(low), Some(high)) => Some((low, high)),
                (None, None) => None,
                _ => return Err(bad(format!("a point of run {id} has half an interval"))),
            },
        };
        let cell = by_id.get(&id).and_then(|&i| runs[i].1.cells.get_mut(cell_pos));
        let Some(cell) = cell else { return Err(bad(format!("a point of run {id} has no cell {cell_pos}"))) };
        cell.metrics.push(metric);
    }
    Ok(runs.into_iter().map(|(_, r)| r).collect())
}
