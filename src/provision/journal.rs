//! A write-ahead record of the kernel objects a cell acquires, so that a run
//! killed with SIGKILL (no destructors) can be undone at the next start.
//!
//! Each object is written to `<cell-dir>/provision.journal` (and fsynced)
//! *before* it is acquired. Stale cleanup does not trust the journal for what
//! still exists: it reads /proc/self/mountinfo and the loop devices' sysfs
//! backing_file, and uses the journal for ownership (is the owner alive?) and
//! for which objects are ours: only what a journal records is released, and
//! only journals in private directories laid out as fsbench makes them count.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

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
    /// A cgroup about to be made for the cell's workers (`<root>/fsbench/<run>.<cell-dir>`).
    Cgroup(PathBuf),
    /// A kernel setting about to be changed (queue or sysctl), with the value to restore.
    /// Only journals of earlier versions hold these: settings are now journalled host-wide
    /// ([`super::host_tunables`]), where overlapping runs share them.
    Tunable { path: PathBuf, old: String },
}

impl Entry {
    fn line(&self) -> String {
        match self {
            Entry::Owner { pid, start } => format!("owner {pid} {start}"),
            Entry::Tmpfs(p) => format!("tmpfs {}", p.display()),
            Entry::Loop(p) => format!("loop {}", p.display()),
            Entry::Mount(p) => format!("mount {}", p.display()),
            Entry::Scratch(p) => format!("scratch {}", p.display()),
            Entry::Cgroup(p) => format!("cgroup {}", p.display()),
            // A tab ends the path: sysctl values may hold spaces (`4096 16384 4194304`).
            Entry::Tunable { path, old } => format!("tunable {}\t{old}", path.display()),
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
            "cgroup" => Entry::Cgroup(rest.into()),
            "tunable" => {
                let (path, old) = rest.split_once('\t')?;
                Entry::Tunable { path: path.into(), old: old.into() }
            }
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

/// Whether `p` is an absolute path without `.`/`..` that lies strictly inside `dir`.
fn strictly_inside(p: &Path, dir: &Path) -> bool {
    p.is_absolute()
        && p.components().all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
        && p != dir
        && p.starts_with(dir)
}

/// Undo what the journal of `cell_dir` records, newest first, and nothing
/// else: each recorded mount (tmpfs or filesystem) at a path inside the cell
/// dir is unmounted, each loop device whose backing file is exactly a recorded
/// image inside the cell dir is detached, each recorded cgroup named for the cell is
/// removed (see [`super::cgroup::remove_stale`]), and each recorded scratch directory
/// that is plainly ours (see [`scratch_is_ours`]) is removed. Entries that fail
/// these checks are ignored and reported. Returns a line per object.
pub fn undo_cell(cell_dir: &Path, entries: &[Entry]) -> Result<Vec<String>, ProvisionError> {
    let mut done = Vec::new();
    // The images this cell attached: a queue setting is put back only on a loop device
    // still backed by one of them (a device number is reused by whoever attaches next).
    let images: Vec<&Path> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Loop(image) if strictly_inside(image, cell_dir) => Some(image.as_path()),
            _ => None,
        })
        .collect();
    for e in entries.iter().rev() {
        match e {
            Entry::Owner { .. } => {}
            Entry::Tmpfs(p) | Entry::Mount(p) => {
                if !strictly_inside(p, cell_dir) {
                    done.push(format!("ignored journal entry outside its cell dir: {}", e.line()));
                    continue;
                }
                // Stacked mounts at the same point: take them all, top first.
                for _ in 0..16 {
                    let Some(m) = mount::find_mount(p) else { break };
                    if matches!(e, Entry::Tmpfs(_)) && m.fstype != "tmpfs" {
                        done.push(format!("left {} alone: journal says tmpfs, mounted is {}", p.display(), m.fstype));
                        break;
                    }
                    mount::unmount_or_detach(p, 20)?;
                    done.push(format!("unmounted {} ({} {})", p.display(), m.fstype, m.source));
                }
            }
            Entry::Loop(image) => {
                if !strictly_inside(image, cell_dir) {
                    done.push(format!("ignored journal entry outside its cell dir: {}", e.line()));
                    continue;
                }
                for name in loopdev::loops_backed_by(image) {
                    loopdev::detach_by_name(&name, image)?;
                    done.push(format!("detached /dev/{name} ({})", image.display()));
                }
            }
            Entry::Tunable { path, old } => {
                // Only the files this journal's kind of entry can name; never anything else.
                if !super::tunables::is_tunable_path(path) {
                    done.push(format!("ignored journal entry for an unknown setting: {}", e.line()));
                    continue;
                }
                if let Err(why) = queue_device_is_ours(path, &images) {
                    done.push(format!("left {} alone: {why}", path.display()));
                    continue;
                }
                match std::fs::write(path, old) {
                    Ok(()) => done.push(format!("restored {} = {old}", path.display())),
                    Err(err) => done.push(format!("could not restore {} = {old}: {err}", path.display())),
                }
            }
            // Only a group named for this very cell, in a mounted cgroup hierarchy.
            Entry::Cgroup(p) => match super::cgroup::remove_stale(p, cell_dir) {
                Ok(line) => done.push(line),
                Err(why) => done.push(format!("left {} alone: {why}", p.display())),
            },
            Entry::Scratch(p) => match scratch_is_ours(p) {
                Ok(false) => {}
                Ok(true) => {
                    std::fs::remove_dir_all(p).map_err(|e| ProvisionError::io("remove scratch dir", p, e))?;
                    done.push(format!("removed {}", p.display()));
                }
                Err(why) => done.push(format!("left {} alone: {why}", p.display())),
            },
        }
    }
    Ok(done)
}

/// Whether the device of a queue setting (`/sys/block/<dev>/queue/<key>` or
/// `/sys/dev/block/<maj>:<min>/queue/<key>`) is still the one the cell set it on. A loop
/// device must still be backed by one of the cell's `images`: once detached, its number
/// goes to whoever attaches next. A named disk (`backing.kind = "device"`, allowed with
/// --allow-device) keeps its name. `/proc/sys` settings are the machine's own and always go back.
fn queue_device_is_ours(path: &Path, images: &[&Path]) -> Result<(), String> {
    let Some(dev_dir) = super::tunables::queue_device_dir(path) else { return Ok(()) };
    let name = dev_dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    // Loop devices are major 7; /sys/block names them loopN.
    if !name.starts_with("loop") && !name.starts_with("7:") {
        return Ok(());
    }
    let dev = if name.starts_with("loop") { format!("/dev/{name}") } else { dev_dir.display().to_string() };
    match loopdev::backing_file_at(dev_dir) {
        Some(b) if images.contains(&b.as_path()) => Ok(()),
        Some(b) => Err(format!("{dev} is now backed by {}, not by this cell's image", b.display())),
        None => Err(format!("{dev} is no longer attached to this cell's image")),
    }
}

/// Whether a journal's scratch path may be deleted: Ok(false) when it is gone,
/// Ok(true) when it is a real directory (not a symlink, no symlink on the way)
/// named `fsbench-*`, owned by the effective uid, with nothing mounted in it.
fn scratch_is_ours(p: &Path) -> Result<bool, String> {
    let named_ours = p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("fsbench-"));
    if !p.is_absolute() || !p.components().all(|c| matches!(c, Component::RootDir | Component::Normal(_))) {
        return Err("not a plain absolute path".into());
    }
    if !named_ours {
        return Err("not named fsbench-*".into());
    }
    let m = match std::fs::symlink_metadata(p) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e.to_string()),
    };
    if !m.file_type().is_dir() {
        return Err("not a directory".into());
    }
    if m.uid() != nix::unistd::geteuid().as_raw() {
        return Err(format!("owned by uid {}", m.uid()));
    }
    if p.canonicalize().ok().as_deref() != Some(p) {
        return Err("reached through a symbolic link".into());
    }
    if mount::mountinfo().iter().any(|mi| mi.mount_point.starts_with(p)) {
        return Err("something is mounted in it".into());
    }
    Ok(true)
}

/// Metadata of `p` if it is a directory or file (not a symlink) owned by the
/// effective uid and not writable by group or others.
fn private_entry(p: &Path) -> Option<std::fs::Metadata> {
    let m = std::fs::symlink_metadata(p).ok()?;
    let ours = m.uid() == nix::unistd::geteuid().as_raw() && m.mode() & 0o022 == 0;
    (ours && (m.file_type().is_dir() || m.file_type().is_file())).then_some(m)
}

/// Journals stale cleanup may trust: exactly `<root>/<run-id>/<cell-dir>/provision.journal`,
/// with the run dir, the cell dir and the journal private (see [`private_entry`])
/// and neither directory a mount point.
fn trusted_journals(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let dirs = private_subdirs;
    for run in dirs(root) {
        for cell in dirs(&run) {
            let j = cell.join(JOURNAL_FILE);
            if private_entry(&j).is_some_and(|m| m.is_file() && m.nlink() == 1) {
                out.push(j);
            }
        }
    }
    out
}

/// Find cell directories `<root>/<run-id>/<cell-dir>` whose journal's owner is
/// dead, undo what their journals record and remove them. The root must be
/// private to this user (see [`super::private::check_private_dir`]); anything
/// not laid out or owned as fsbench makes it is left alone.
pub fn cleanup_stale(root: &Path) -> Result<Vec<String>, ProvisionError> {
    let mut cleaned = Vec::new();
    if std::fs::symlink_metadata(root).is_err() {
        return Ok(cleaned);
    }
    super::private::check_private_dir(root, "work directory")?;
    let root = root.canonicalize().map_err(|e| ProvisionError::io("resolve work directory", root, e))?;
    for jpath in trusted_journals(&root) {
        let Some(entries) = read(&jpath) else { continue };
        // No owner line: another process is creating this journal right now.
        if owner_alive(&entries) || !entries.iter().any(|e| matches!(e, Entry::Owner { .. })) {
            continue;
        }
        let cell_dir = jpath.parent().expect("journal has a parent").to_path_buf();
        let undone = undo_cell(&cell_dir, &entries)?;
        cleaned.extend(undone);
        // Never delete through a mount the journal did not record.
        if let Some(m) = mount::mountinfo().into_iter().find(|m| m.mount_point.starts_with(&cell_dir)) {
            cleaned.push(format!(
                "left {} in place: {} ({}) is mounted in it and not recorded in its journal",
                cell_dir.display(),
                m.mount_point.display(),
                m.fstype
            ));
            continue;
        }
        std::fs::remove_dir_all(&cell_dir).map_err(|e| ProvisionError::io("remove stale cell dir", &cell_dir, e))?;
        cleaned.push(format!("removed {}", cell_dir.display()));
        // Remove the run dir if that emptied it (never the root).
        if let Some(run) = cell_dir.parent()
            && run != root
            && std::fs::remove_dir(run).is_ok()
        {
            cleaned.push(format!("removed {}", run.display()));
        }
    }
    // Run-level directories claimed by a journal of their own (workroot::claim_run_dir)
    // whose owner is dead: what is left in them (an archive copy, a private `dir`
    // backing, a probe's files) goes too, once nothing is mounted inside.
    for run in private_subdirs(&root) {
        let j = run.join(JOURNAL_FILE);
        if !private_entry(&j).is_some_and(|m| m.is_file() && m.nlink() == 1) {
            continue;
        }
        let Some(entries) = read(&j) else { continue };
        // A claim records its owner and nothing else; a journal of objects at this
        // depth is not laid out as fsbench makes them and is not trusted.
        let is_claim = !entries.is_empty() && entries.iter().all(|e| matches!(e, Entry::Owner { .. }));
        if !is_claim || owner_alive(&entries) {
            continue;
        }
        if mount::mountinfo().iter().any(|m| m.mount_point.starts_with(&run)) {
            cleaned.push(format!("left {} in place: something is still mounted in it", run.display()));
            continue;
        }
        std::fs::remove_dir_all(&run).map_err(|e| ProvisionError::io("remove stale run dir", &run, e))?;
        cleaned.push(format!("removed {}", run.display()));
    }
    Ok(cleaned)
}

/// The private, non-mount-point directories directly under `dir`, sorted.
fn private_subdirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut v: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| private_entry(p).is_some_and(|m| m.is_dir()) && !mount::is_mountpoint(p))
        .collect();
    v.sort();
    v
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

    #[test]
    fn tunables_round_trip_and_only_known_settings_are_restored() {
        let e = Entry::Tunable { path: "/proc/sys/net/ipv4/tcp_rmem".into(), old: "4096 131072 6291456".into() };
        assert_eq!(Entry::parse(&e.line()), Some(e));
        // A journal naming another file is ignored, never written.
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let done = undo_cell(dir.path(), &[Entry::Tunable { path: victim.clone(), old: "x".into() }]).unwrap();
        assert!(done[0].starts_with("ignored journal entry"), "{done:?}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        // A loop device's queue setting without that device backed by the cell's image is
        // left alone (here: no such device at all).
        let image = dir.path().join("fs.img");
        let queue = PathBuf::from("/sys/block/loop98765/queue/read_ahead_kb");
        let entries = [Entry::Loop(image), Entry::Tunable { path: queue, old: "128".into() }];
        let done = undo_cell(dir.path(), &entries).unwrap();
        assert_eq!(
            done,
            [
                "left /sys/block/loop98765/queue/read_ahead_kb alone: /dev/loop98765 is no longer attached to this cell's image"
            ]
        );
    }

    #[test]
    fn stale_cleanup_removes_the_run_dir_and_archive_copy_a_sigkill_left() {
        let root = tempfile::tempdir().unwrap();
        let run = root.path().join("20260101T000000Z-host");
        std::fs::create_dir_all(run.join("archive")).unwrap();
        std::fs::write(run.join("archive/linux.tar.gz"), b"copy").unwrap();
        std::fs::write(run.join(JOURNAL_FILE), format!("{MAGIC}\nowner 999999999 5\n")).unwrap();
        // A live run's claimed directory is left alone.
        let live = root.path().join("live");
        std::fs::create_dir_all(&live).unwrap();
        Journal::create(&live).unwrap();
        let cleaned = cleanup_stale(root.path()).unwrap();
        assert!(!run.exists(), "{cleaned:?}");
        assert!(live.exists());
    }
}
