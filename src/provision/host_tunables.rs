//! The host-wide journal of kernel settings fsbench has changed (`[sysctl]` values and
//! block queue settings), shared by every fsbench process on the host whatever its work
//! root, so that overlapping runs neither leave a value changed for good nor measure a
//! cell under a value another run chose.
//!
//! The rule:
//! - The journal is `/run/fsbench/tunables.json`, read and written only while holding an
//!   exclusive `flock` on `/run/fsbench/tunables.lock`. The directory and both files are
//!   opened without following links (`O_NOFOLLOW`, files by `openat` from the directory)
//!   and refused unless owned by the effective uid and not writable by group or others:
//!   nobody else can plant or swap them.
//! - An entry per setting (its `/proc/sys/...` or `/sys/dev/block/<maj>:<min>/queue/...`
//!   path) holds the host's original value, the value fsbench set, and the processes
//!   holding it (pid and start time, which tells a live process from a reused pid).
//! - The first holder reads the original and journals it (fsynced) *before* writing the
//!   new value. A later holder asking for the same value joins the entry (a reference);
//!   one asking for a different value while a live holder remains is refused, and its
//!   cell is skipped with the holders' pids in the reason, instead of being measured
//!   under a value it did not ask for.
//! - A holder leaving drops its reference; the last one out writes the original back.
//! - Holders that are dead (SIGKILL) are dropped whenever the journal is locked, and an
//!   entry none of whose holders is alive is restored then: by any later fsbench start
//!   ([`HostJournal::restore_orphans`], whatever its work root) or by the next process
//!   that changes a setting.
//! - A queue setting of a loop device is put back only while the device is still backed
//!   by the image it had when the setting was changed: once detached, its number goes to
//!   whoever attaches next.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg, OFlag};
use nix::sys::stat::Mode;
use serde::{Deserialize, Serialize};

use super::ProvisionError;
use super::tunables;
use crate::model::SkipReason;

/// The directory of the host-wide journal: tmpfs, emptied at boot with the settings it
/// would restore, and writable only by root.
pub const HOST_JOURNAL_DIR: &str = "/run/fsbench";
const JOURNAL: &str = "tunables.json";
const JOURNAL_TMP: &str = "tunables.json.tmp";
const LOCK: &str = "tunables.lock";
const SCHEMA: u32 = 1;
/// A journal larger than this was not written by fsbench.
const MAX_JOURNAL_BYTES: u64 = 4 << 20;

/// A process holding a setting: its pid and start time (clock ticks since boot).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// Process id.
    pub pid: i32,
    /// Start time, field 22 of `/proc/<pid>/stat`.
    pub start: u64,
}

impl Holder {
    /// This process.
    pub fn this_process() -> Holder {
        let pid = std::process::id() as i32;
        Holder::of_pid(pid).unwrap_or(Holder { pid, start: 0 })
    }

    /// The live process `pid`, if there is one.
    pub fn of_pid(pid: i32) -> Option<Holder> {
        super::journal::process_start(pid).map(|start| Holder { pid, start })
    }

    /// Whether the process still runs (the same pid with the same start time).
    pub fn is_alive(&self) -> bool {
        super::journal::process_start(self.pid) == Some(self.start)
    }
}

/// One changed setting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Held {
    path: PathBuf,
    /// The host's value before the first holder changed it.
    original: String,
    /// The value the holders asked for.
    value: String,
    /// For a loop device's queue setting: its backing file when the setting was changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    loop_backing: Option<PathBuf>,
    holders: Vec<Holder>,
}

/// The journal's contents.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Ledger {
    schema: u32,
    entries: Vec<Held>,
}

/// What a holder asking for a value finds.
#[derive(Debug, PartialEq, Eq)]
enum Claim {
    /// Nobody holds the setting: read its original and journal it first.
    First,
    /// Live holders set the same value: the holder joined them. The original they saved.
    Shared { original: String },
    /// Live holders set another value.
    Conflict { value: String, pids: Vec<i32> },
}

impl Ledger {
    /// Drop dead holders; remove and return the entries no live process holds.
    fn take_orphans(&mut self, alive: &dyn Fn(&Holder) -> bool) -> Vec<Held> {
        for e in &mut self.entries {
            e.holders.retain(|h| alive(h));
        }
        let (orphans, live) = std::mem::take(&mut self.entries).into_iter().partition(|e| e.holders.is_empty());
        self.entries = live;
        orphans
    }

    /// `holder` asks for `path` = `value` (see [`Claim`]); it joins a shared entry at once.
    fn claim(&mut self, path: &Path, value: &str, holder: Holder) -> Claim {
        let Some(e) = self.entries.iter_mut().find(|e| e.path == path) else { return Claim::First };
        if e.value != value {
            return Claim::Conflict { value: e.value.clone(), pids: e.holders.iter().map(|h| h.pid).collect() };
        }
        e.holders.push(holder);
        Claim::Shared { original: e.original.clone() }
    }

    /// Drop one reference of `holder` to `path`; the entry when that was the last one.
    fn release(&mut self, path: &Path, holder: Holder) -> Option<Held> {
        let i = self.entries.iter().position(|e| e.path == path)?;
        let e = &mut self.entries[i];
        if let Some(h) = e.holders.iter().position(|h| *h == holder) {
            e.holders.remove(h);
        }
        e.holders.is_empty().then(|| self.entries.remove(i))
    }
}

/// The host-wide journal in a directory (see the module doc for the rule it keeps).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostJournal {
    dir: PathBuf,
}

impl HostJournal {
    /// The host's journal, in [`HOST_JOURNAL_DIR`].
    pub fn system() -> HostJournal {
        HostJournal { dir: PathBuf::from(HOST_JOURNAL_DIR) }
    }

    /// A journal in `dir` (a test's own; the directory is made if its parent exists).
    pub fn at(dir: &Path) -> HostJournal {
        HostJournal { dir: dir.to_path_buf() }
    }

    /// Set `path` (the setting `key`) to `value` for `holder`, joining the live holders
    /// of the same value or saving the original first. Returns the original. Another
    /// value held by a live process, an unreadable setting and a kernel refusal are
    /// [`ProvisionError::Unsupported`]: the cell is skipped with the reason.
    pub fn set(&self, holder: Holder, key: &str, path: &Path, value: &str) -> Result<String, ProvisionError> {
        let skip =
            |reason: String, remedy: String| ProvisionError::Unsupported(SkipReason { reason, remedy: Some(remedy) });
        if !tunables::is_tunable_path(path) {
            return Err(skip(
                format!("{key} ({}) is not a setting fsbench changes", path.display()),
                "use a key under /proc/sys or a block queue setting".into(),
            ));
        }
        let mut locked = self.lock(true)?.expect("created when missing");
        for line in locked.restore_orphans() {
            eprintln!("fsbench: cleaned up after an earlier run: {line}");
        }
        let claimed = match locked.ledger.claim(path, value, holder) {
            Claim::Conflict { value: held, pids } => {
                let pids = pids.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", ");
                Err(skip(
                    format!(
                        "{key} is held at {held} by another fsbench run that is still running (pid {pids}); this cell \
                         asks for {value} and would be measured under that run's value"
                    ),
                    format!("run this cell when pid {pids} has finished, or give both runs the same {key}"),
                ))
            }
            Claim::Shared { original } => Ok(original),
            Claim::First => tunables::read_value(path)
                .map_err(|e| {
                    skip(
                        format!("cannot read {} ({key}): {e}", path.display()),
                        "check the key: it must exist under /sys/block/<dev>/queue or /proc/sys".into(),
                    )
                })
                .inspect(|original| {
                    locked.ledger.entries.push(Held {
                        path: path.to_path_buf(),
                        original: original.clone(),
                        value: value.to_string(),
                        loop_backing: loop_backing(path),
                        holders: vec![holder],
                    })
                }),
        };
        // Journalled before the kernel sees the new value: a SIGKILL from here on is undone.
        // Saved on refusal too: restored orphans are forgotten.
        locked.save()?;
        let original = claimed?;
        if let Err(refused) = tunables::write_value(path, key, value) {
            if let Some(e) = locked.ledger.release(path, holder) {
                let _ = restore(&e);
            }
            locked.save()?;
            return Err(ProvisionError::Unsupported(refused));
        }
        Ok(original)
    }

    /// Drop `holder`'s reference to `path`; the last holder writes the original back.
    /// Returns what was restored, if anything.
    pub fn release(&self, holder: Holder, path: &Path) -> Result<Option<String>, ProvisionError> {
        let Some(mut locked) = self.lock(false)? else { return Ok(None) };
        let restored = locked.ledger.release(path, holder).map(|e| restore(&e));
        locked.save()?;
        match restored {
            Some(Err(e)) => Err(ProvisionError::io("restore", path, e)),
            Some(Ok(line)) => Ok(Some(line)),
            None => Ok(None),
        }
    }

    /// Restore every setting whose holders are all dead (a run killed with SIGKILL) and
    /// forget them. Nothing to do when the journal's directory does not exist. Returns a
    /// line per setting.
    pub fn restore_orphans(&self) -> Result<Vec<String>, ProvisionError> {
        let Some(mut locked) = self.lock(false)? else { return Ok(Vec::new()) };
        let lines = locked.restore_orphans();
        if !lines.is_empty() {
            locked.save()?;
        }
        Ok(lines)
    }

    /// The directory opened and checked, the lock taken, the journal read. None when the
    /// directory is missing and `create` is not set.
    fn lock(&self, create: bool) -> Result<Option<Locked>, ProvisionError> {
        let refuse = |path: &Path, why: String| {
            ProvisionError::io("refusing the host-wide tunables journal", path, std::io::Error::other(why))
        };
        if create {
            match std::fs::DirBuilder::new().mode(0o700).create(&self.dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(ProvisionError::io("create", &self.dir, e)),
            }
        }
        let dir = match OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&self.dir)
        {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !create => return Ok(None),
            Err(e) => return Err(refuse(&self.dir, format!("{e} (it must be a real directory, not a link)"))),
        };
        check_private(&dir, false).map_err(|why| refuse(&self.dir, why))?;
        let flags = OFlag::O_RDWR | OFlag::O_CREAT | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let lock_path = self.dir.join(LOCK);
        let lock = nix::fcntl::openat(dir.as_fd(), LOCK, flags, Mode::from_bits_truncate(0o600))
            .map(File::from)
            .map_err(|e| refuse(&lock_path, e.to_string()))?;
        check_private(&lock, true).map_err(|why| refuse(&lock_path, why))?;
        let lock = Flock::lock(lock, FlockArg::LockExclusive).map_err(|(_, e)| ProvisionError::Sys {
            what: "lock".into(),
            path: lock_path,
            source: e,
        })?;
        let ledger = read_ledger(&dir).map_err(|why| refuse(&self.dir.join(JOURNAL), why))?;
        Ok(Some(Locked { path: self.dir.clone(), dir, _lock: lock, ledger }))
    }
}

/// The journal while this process holds its lock.
struct Locked {
    path: PathBuf,
    dir: File,
    _lock: Flock<File>,
    ledger: Ledger,
}

impl Locked {
    /// Restore and forget the entries no live process holds; a line per entry.
    fn restore_orphans(&mut self) -> Vec<String> {
        let orphans = self.ledger.take_orphans(&|h: &Holder| h.is_alive());
        orphans
            .iter()
            .map(|e| match restore(e) {
                Ok(line) => format!("{line} (set by fsbench, whose holders are gone)"),
                Err(err) => format!("could not restore {} = {}: {err}", e.path.display(), e.original),
            })
            .collect()
    }

    /// Write the journal: a new file, fsynced, renamed over the old one.
    fn save(&mut self) -> Result<(), ProvisionError> {
        self.ledger.schema = SCHEMA;
        let text = serde_json::to_string_pretty(&self.ledger).expect("the journal serialises");
        let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_TRUNC | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let tmp = self.path.join(JOURNAL_TMP);
        let io = |what: &str, e: std::io::Error| ProvisionError::io(what, &tmp, e);
        let mut f = nix::fcntl::openat(self.dir.as_fd(), JOURNAL_TMP, flags, Mode::from_bits_truncate(0o600))
            .map(File::from)
            .map_err(|e| io("create", e.into()))?;
        f.write_all(format!("{text}\n").as_bytes()).and_then(|()| f.sync_all()).map_err(|e| io("write", e))?;
        nix::fcntl::renameat(self.dir.as_fd(), JOURNAL_TMP, self.dir.as_fd(), JOURNAL)
            .map_err(|e| io("rename", e.into()))?;
        self.dir.sync_all().map_err(|e| io("sync directory of", e))
    }
}

/// Refuse what another user could have made or can write: not owned by the effective
/// uid, writable by group or others, or (for a `file`) not a plain file with one link.
fn check_private(f: &File, file: bool) -> Result<(), String> {
    let m = f.metadata().map_err(|e| e.to_string())?;
    let euid = nix::unistd::geteuid().as_raw();
    if m.uid() != euid {
        return Err(format!("owned by uid {}, not {euid}", m.uid()));
    }
    if m.mode() & 0o022 != 0 {
        return Err(format!("mode {:04o} lets group or others write it", m.mode() & 0o7777));
    }
    if file && (!m.is_file() || m.nlink() != 1) {
        return Err("not a plain file with a single link".into());
    }
    Ok(())
}

/// The journal in `dir`, or an empty one if there is none yet.
fn read_ledger(dir: &File) -> Result<Ledger, String> {
    let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let f = match nix::fcntl::openat(dir.as_fd(), JOURNAL, flags, Mode::empty()) {
        Ok(fd) => File::from(fd),
        Err(nix::errno::Errno::ENOENT) => return Ok(Ledger { schema: SCHEMA, entries: Vec::new() }),
        Err(e) => return Err(e.to_string()),
    };
    check_private(&f, true)?;
    let mut text = String::new();
    f.take(MAX_JOURNAL_BYTES).read_to_string(&mut text).map_err(|e| e.to_string())?;
    let ledger: Ledger = serde_json::from_str(&text).map_err(|e| format!("unreadable: {e}"))?;
    if ledger.schema != SCHEMA {
        return Err(format!("schema {} (this fsbench reads {SCHEMA})", ledger.schema));
    }
    Ok(ledger)
}

/// The backing file of the loop device a queue setting belongs to, if it is one.
fn loop_backing(path: &Path) -> Option<PathBuf> {
    super::loopdev::backing_file_at(tunables::queue_device_dir(path)?)
}

/// Write an entry's original value back: only to a setting this module writes, and for a
/// loop device only while it is backed by the image it had. Returns what was done.
fn restore(e: &Held) -> std::io::Result<String> {
    if !tunables::is_tunable_path(&e.path) {
        return Ok(format!("left {} alone: not a setting fsbench changes", e.path.display()));
    }
    if let Some(image) = &e.loop_backing {
        match loop_backing(&e.path) {
            Some(now) if &now == image => {}
            Some(now) => {
                return Ok(format!(
                    "left {} alone: the loop device is now backed by {}, not by {}",
                    e.path.display(),
                    now.display(),
                    image.display()
                ));
            }
            None => {
                return Ok(format!(
                    "left {} alone: the loop device is no longer attached to {}",
                    e.path.display(),
                    image.display()
                ));
            }
        }
    }
    std::fs::write(&e.path, &e.original)?;
    Ok(format!("restored {} = {}", e.path.display(), e.original))
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Holder = Holder { pid: 100, start: 1 };
    const B: Holder = Holder { pid: 200, start: 2 };
    const C: Holder = Holder { pid: 300, start: 3 };

    fn entry(path: &str, value: &str, holders: &[Holder]) -> Held {
        Held {
            path: path.into(),
            original: "20".into(),
            value: value.into(),
            loop_backing: None,
            holders: holders.to_vec(),
        }
    }

    #[test]
    fn the_same_value_is_shared_another_is_refused_and_the_last_one_out_restores() {
        let p = Path::new("/proc/sys/vm/dirty_ratio");
        let mut l = Ledger::default();
        assert_eq!(l.claim(p, "10", A), Claim::First);
        l.entries.push(entry("/proc/sys/vm/dirty_ratio", "10", &[A]));
        assert_eq!(l.claim(p, "10", B), Claim::Shared { original: "20".into() });
        assert_eq!(l.claim(p, "5", C), Claim::Conflict { value: "10".into(), pids: vec![100, 200] });
        assert_eq!(l.release(p, A), None, "B still holds it");
        assert_eq!(l.release(p, B).map(|e| e.original), Some("20".into()));
        assert!(l.entries.is_empty());
        assert_eq!(l.release(p, B), None);
    }

    #[test]
    fn dead_holders_are_dropped_and_entries_nobody_alive_holds_are_orphans() {
        let mut l = Ledger {
            schema: SCHEMA,
            entries: vec![entry("/proc/sys/vm/a", "1", &[A, B]), entry("/proc/sys/vm/b", "1", &[B, C])],
        };
        let orphans = l.take_orphans(&|h: &Holder| *h == A);
        assert_eq!(orphans.iter().map(|e| e.path.clone()).collect::<Vec<_>>(), [PathBuf::from("/proc/sys/vm/b")]);
        assert_eq!(l.entries, [entry("/proc/sys/vm/a", "1", &[A])]);
    }

    #[test]
    fn the_journal_round_trips_and_refuses_a_foreign_file() {
        let d = tempfile::tempdir().unwrap();
        let j = HostJournal::at(&d.path().join("fsbench"));
        assert_eq!(j.restore_orphans().unwrap(), Vec::<String>::new(), "no directory: nothing to do");
        let mut locked = j.lock(true).unwrap().unwrap();
        locked.ledger.entries.push(entry("/proc/sys/vm/a", "1", &[Holder::this_process()]));
        locked.save().unwrap();
        drop(locked);
        let again = j.lock(false).unwrap().unwrap();
        assert_eq!(again.ledger.entries.len(), 1);
        drop(again);
        assert!(j.restore_orphans().unwrap().is_empty(), "its holder is alive");
        // A journal others can write is not trusted.
        let path = d.path().join("fsbench").join(JOURNAL);
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o666)).unwrap();
        let e = j.restore_orphans().unwrap_err().to_string();
        assert!(e.contains("refusing") && e.contains("group or others"), "{e}");
    }

    #[test]
    fn a_path_that_is_no_setting_is_never_written() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let j = HostJournal::at(&d.path().join("fsbench"));
        let e = j.set(Holder::this_process(), "x", &victim, "y").unwrap_err();
        assert!(matches!(e, ProvisionError::Unsupported(_)), "{e}");
        let line = restore(&Held { path: victim.clone(), ..entry("/", "y", &[]) }).unwrap();
        assert!(line.starts_with("left"), "{line}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    }
}
