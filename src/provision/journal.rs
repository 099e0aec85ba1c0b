//! A write-ahead record of the kernel objects a cell acquires, so that a run
//! killed with SIGKILL (no destructors) can be undone at the next start.
//!
//! Each object is written to `<cell-dir>/provision.journal` (and fsynced)
//! *before* it is acquired. Stale cleanup does not trust the journal for what
//! still exists: it reads /proc/self/mountinfo and the loop devices' sysfs
//! backing_file, and uses the journal for ownership (is the owner alive?),
//! which mounts are backing tmpfs, and scratch directories outside the cell dir.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::ProvisionError;
use super::loopdev;
use super::mount;

/// File name of the journal inside a cell directory.
pub const JOURNAL_FILE: &str = "provision.journal";
const MAGIC: &str = "fsbench-provision-journal 1";

/// What a journal line records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// The process that owns the cell: pid and its start time (clock ticks since boot).
    Owner { pid: i32, start: u64 },
    /// A tmpfs mounted at this path to hold images.
    Tmpfs(PathBuf),
    /// A loop device about to be attached to this image.
    Loop(PathBuf),
    /// A filesystem about to be mounted here.
    Mount(PathBuf),
    /// A directory created outside the cell dir (backing `dir`), removed at teardown.
    Scratch(PathBuf),
}

impl Entry {
    fn line(&self) -> String {
        match self {
            Entry::Owner { pid, start } => format!("owner {pid} {start}"),
            Entry::Tmpfs(p) => format!("tmpfs {}", p.display()),
            Entry::Loop(p) => format!("loop {}", p.display()),
            Entry::Mount(p) => format!("mount {}", p.display()),
            Entry::Scratch(p) => format!("scratch {}", p.display()),
        }
    }

    fn parse(line: &str) -> Option<Entry> {
        let (kind, rest) = line.split_once(' ')?;
        Some(match kind {
            "owner" => {
                let (pid, start) = rest.split_once(' ')?;
                Entry::Owner { pid: pid.parse().ok()?, start: start.parse().ok()? }
            }
            "tmpfs" => Entry::Tmpfs(rest.into()),
            "loop" => Entry::Loop(rest.into()),
            "mount" => Entry::Mount(rest.into()),
            "scratch" => Entry::Scratch(rest.into()),
            _ => return None,
        })
    }
}

/// An open journal, appended to as objects are acquired.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: File,
}

impl Journal {
    /// Create the journal of `cell_dir`, owned by this process.
    pub fn create(cell_dir: &Path) -> Result<Journal, ProvisionError> {
        let path = cell_dir.join(JOURNAL_FILE);
        let file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(&path)
            .map_err(|e| ProvisionError::io("create journal", &path, e))?;
        let mut j = Journal { path, file };
        let pid = std::process::id() as i32;
        // Magic and owner in one write: a concurrent run's cleanup_stale must never
        // see a journal without its owner and take a live cell for a dead one.
        let owner = Entry::Owner { pid, start: process_start(pid).unwrap_or(0) }.line();
        j.file
            .write_all(format!("{MAGIC}\n{owner}\n").as_bytes())
            .and_then(|_| j.file.sync_data())
            .map_err(|e| ProvisionError::io("write journal", &j.path, e))?;
        Ok(j)
    }

    /// Record an object before acquiring it.
    pub fn record(&mut self, e: &Entry) -> Result<(), ProvisionError> {
        self.write_line(&e.line())
    }

    fn write_line(&mut self, line: &str) -> Result<(), ProvisionError> {
        if line.contains('\n') {
            return Err(ProvisionError::io("journal", &self.path, std::io::Error::other("path contains a newline")));
        }
        self.file
            .write_all(format!("{line}\n").as_bytes())
            .and_then(|_| self.file.sync_data())
            .map_err(|e| ProvisionError::io("write journal", &self.path, e))
    }
}

/// Read a journal; None if it is not one of ours.
pub fn read(path: &Path) -> Option<Vec<Entry>> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut lines = text.lines();
    if lines.next()? != MAGIC {
        return None;
    }
    Some(lines.filter_map(Entry::parse).collect())
}

/// Start time of a process in clock ticks since boot (field 22 of /proc/<pid>/stat),
/// which tells a live owner from a recycled pid.
pub fn process_start(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces and parentheses: split after the last ')'.
    let after = &stat[stat.rfind(')')? + 2..];
    after.split(' ').nth(19)?.parse().ok()
}

fn owner_alive(entries: &[Entry]) -> bool {
    entries.iter().any(|e| matches!(e, Entry::Owner { pid, start } if process_start(*pid) == Some(*start)))
}

/// Undo everything under `cell_dir`: mounts on loop devices (deepest first),
/// loop devices backed by images under it, then the tmpfs, then directories.
/// Returns a line per object released.
pub fn undo_cell(cell_dir: &Path, entries: &[Entry]) -> Result<Vec<String>, ProvisionError> {
    let mut done = Vec::new();
    let tmpfs: Vec<&PathBuf> =
        entries.iter().filter_map(|e| if let Entry::Tmpfs(p) = e { Some(p) } else { None }).collect();
    let under = |m: &mount::MountInfo| m.mount_point.starts_with(cell_dir);
    // Phase 1: filesystems under test (everything but our backing tmpfs), deepest first.
    for pass in 0..2 {
        for _ in 0..64 {
            let mut mounts: Vec<mount::MountInfo> = mount::mountinfo()
                .into_iter()
                .filter(|m| under(m) && (pass == 1 || !tmpfs.contains(&&m.mount_point)))
                .collect();
            let Some(m) = mounts.iter().max_by_key(|m| m.mount_point.components().count()).cloned() else { break };
            mounts.clear();
            mount::unmount(&m.mount_point, true)?;
            done.push(format!("unmounted {} ({} {})", m.mount_point.display(), m.fstype, m.source));
        }
        if pass == 0 {
            // Phase 2: loop devices whose images live in this cell's tmpfs.
            for (name, image) in loopdev::loops_backed_under(cell_dir) {
                loopdev::detach_by_name(&name, &image)?;
                done.push(format!("detached /dev/{name} ({})", image.display()));
            }
        }
    }
    for e in entries {
        if let Entry::Scratch(p) = e
            && p.exists()
        {
            std::fs::remove_dir_all(p).map_err(|e| ProvisionError::io("remove scratch dir", p, e))?;
            done.push(format!("removed {}", p.display()));
        }
    }
    Ok(done)
}

/// Find cell directories under `root` (up to three levels deep) whose
/// journal's owner is dead, undo them and remove them.
pub fn cleanup_stale(root: &Path) -> Result<Vec<String>, ProvisionError> {
    let mut cleaned = Vec::new();
    if !root.exists() {
        return Ok(cleaned);
    }
    let journals: Vec<PathBuf> = walkdir::WalkDir::new(root)
        .max_depth(4)
        .into_iter()
        // Never descend into mounts: a live filesystem under test is not ours to walk.
        .filter_entry(|e| e.depth() == 0 || !mount::is_mountpoint(e.path()))
        .flatten()
        .filter(|e| e.file_type().is_file() && e.file_name() == JOURNAL_FILE)
        .map(|e| e.into_path())
        .collect();
    for jpath in journals {
        let Some(entries) = read(&jpath) else { continue };
        // No owner line: another process is creating this journal right now.
        if owner_alive(&entries) || !entries.iter().any(|e| matches!(e, Entry::Owner { .. })) {
            continue;
        }
        let cell_dir = jpath.parent().expect("journal has a parent").to_path_buf();
        let undone = undo_cell(&cell_dir, &entries)?;
        cleaned.extend(undone);
        std::fs::remove_dir_all(&cell_dir).map_err(|e| ProvisionError::io("remove stale cell dir", &cell_dir, e))?;
        cleaned.push(format!("removed {}", cell_dir.display()));
        // Remove emptied parents up to (not including) the root.
        let mut p = cell_dir.parent();
        while let Some(dir) = p {
            if dir == root || !dir.starts_with(root) || std::fs::remove_dir(dir).is_err() {
                break;
            }
            cleaned.push(format!("removed {}", dir.display()));
            p = dir.parent();
        }
    }
    Ok(cleaned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_round_trips_and_knows_its_owner_is_alive() {
        let dir = tempfile::tempdir().unwrap();
        let mut j = Journal::create(dir.path()).unwrap();
        j.record(&Entry::Tmpfs(dir.path().join("backing"))).unwrap();
        j.record(&Entry::Mount(dir.path().join("mnt/0 x"))).unwrap();
        let entries = read(&dir.path().join(JOURNAL_FILE)).unwrap();
        assert_eq!(entries.len(), 3);
        assert_eq!(entries[2], Entry::Mount(dir.path().join("mnt/0 x")));
        assert!(owner_alive(&entries), "this process owns the journal");
        // A stale owner: same pid, different start time.
        let stale = vec![Entry::Owner { pid: std::process::id() as i32, start: 1 }];
        assert!(!owner_alive(&stale));
    }

    #[test]
    fn cleanup_stale_leaves_live_cells_alone() {
        let root = tempfile::tempdir().unwrap();
        let cell = root.path().join("run/cell");
        std::fs::create_dir_all(&cell).unwrap();
        let _j = Journal::create(&cell).unwrap();
        assert!(cleanup_stale(root.path()).unwrap().is_empty());
        assert!(cell.exists());
    }

    #[test]
    fn cleanup_stale_removes_dead_cells_without_kernel_objects() {
        let root = tempfile::tempdir().unwrap();
        let cell = root.path().join("run/cell");
        std::fs::create_dir_all(&cell).unwrap();
        std::fs::write(cell.join(JOURNAL_FILE), format!("{MAGIC}\nowner 999999999 5\n")).unwrap();
        let cleaned = cleanup_stale(root.path()).unwrap();
        assert!(!cell.exists());
        assert!(!root.path().join("run").exists());
        assert_eq!(cleaned.len(), 2, "{cleaned:?}");
    }
}
