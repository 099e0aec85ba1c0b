//! What is in a build cache ([`super::build_cache`]) and pruning it
//! (`fsbench bisect-cache list|prune`).
//!
//! Only what fsbench made is ever removed, each name checked beneath the cache's fd with no
//! link followed:
//! - an **entry**: a 64-hex-digit name that is a real directory owned by the effective uid,
//!   writable by nobody else, holding a regular `build.json` that reads as a build record;
//! - a **failed build's log**: `<64 hex>.failed.log`, a regular file of ours;
//! - a **scratch** directory a killed build left: `.build-<16 hex>-…`, a real private
//!   directory of ours, not modified for an hour (a build may be running in a younger one).
//!
//! Anything else (other names, links, entries of another user, an entry without its
//! record) is left alone and counted. An entry's last use is its directory's modification
//! time: a lookup that finds it refreshes it, so `--keep N` keeps the N most recently used
//! entries and `--older-than DAYS` removes those unused for DAYS days.

use std::os::fd::OwnedFd;
use std::time::{Duration, SystemTime};

use super::build_cache::{BuildCache, BuildRecord, RECORD};
use crate::beneath::{self, Resolver, ours};

/// What a prune removes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Prune {
    /// Every entry but the `n` most recently used; every failed log and stale scratch.
    Keep(usize),
    /// Entries and failed logs unused for longer than this; every stale scratch.
    OlderThan(Duration),
}

/// A scratch directory younger than this may belong to a build in progress.
pub const SCRATCH_GRACE: Duration = Duration::from_secs(3600);

/// What kind of thing a name in the cache is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A built candidate.
    Entry,
    /// A failed build's output.
    FailedLog,
    /// A build's scratch directory.
    Scratch,
}

/// One name in the cache that fsbench made.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// Its name in the cache.
    pub name: String,
    /// What it is.
    pub kind: Kind,
    /// Its last use (an entry's directory mtime; a file's or scratch's mtime).
    pub used: SystemTime,
    /// The commit an entry built.
    pub commit: Option<String>,
    /// Bytes it holds (files beneath it, links not followed).
    pub bytes: u64,
}

/// The cache's contents: fsbench's items, newest use first, and how many names were left alone.
#[derive(Debug, Clone, PartialEq)]
pub struct Contents {
    /// fsbench's items.
    pub items: Vec<Item>,
    /// Names that are not fsbench's (or not trusted): never removed.
    pub foreign: Vec<String>,
}

fn is_key(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

fn mtime(st: &libc::stat) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::new(st.st_mtime.max(0) as u64, st.st_mtime_nsec.clamp(0, 999_999_999) as u32)
}

/// What `name` is, when fsbench made it (see the module documentation), and its stat.
fn classify(dir: &OwnedFd, name: &str) -> Option<(Kind, libc::stat, Option<String>)> {
    let c = beneath::plain_name(name).ok()?;
    let (kind, flags) = if is_key(name) {
        (Kind::Entry, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW)
    } else if name.strip_suffix(".failed.log").is_some_and(is_key) {
        (Kind::FailedLog, libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK)
    } else if name.strip_prefix(".build-").is_some_and(|r| {
        r.len() > 17 && r.as_bytes()[16] == b'-' && r.as_bytes()[..16].iter().all(u8::is_ascii_hexdigit)
    }) {
        (Kind::Scratch, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW)
    } else {
        return None;
    };
    let fd = beneath::open_beneath(dir, &c, flags, 0, Resolver::Auto).ok()?;
    let rule = if kind == Kind::FailedLog { ours::Rule::Owned } else { ours::Rule::Private };
    let st = beneath::stat(&fd).ok()?;
    ours::check_stat(&st, rule).ok()?;
    let is_dir = st.st_mode & libc::S_IFMT == libc::S_IFDIR;
    let is_file = st.st_mode & libc::S_IFMT == libc::S_IFREG;
    match kind {
        Kind::Entry if is_dir => {
            let record = beneath::open_file(&fd, RECORD).ok()??;
            let record: BuildRecord = serde_json::from_reader(std::io::Read::take(record, 1 << 16)).ok()?;
            Some((kind, st, Some(record.commit)))
        }
        Kind::Scratch if is_dir => Some((kind, st, None)),
        Kind::FailedLog if is_file => Some((kind, st, None)),
        _ => None,
    }
}

/// Bytes of the regular files beneath the directory `fd` (links not followed; capped in depth).
fn bytes_beneath(fd: &OwnedFd, depth: u32) -> u64 {
    let Ok(st) = beneath::stat(fd) else { return 0 };
    if st.st_mode & libc::S_IFMT != libc::S_IFDIR || depth > 64 {
        return st.st_size.max(0) as u64;
    }
    let Ok(names) = crate::beneath::list_names(fd) else { return 0 };
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK;
    names
        .iter()
        .filter_map(|n| beneath::plain_name(n).ok())
        .filter_map(|c| beneath::open_beneath(fd, &c, flags, 0, Resolver::Auto).ok())
        .map(|child| bytes_beneath(&child, depth + 1))
        .sum()
}

/// Everything in `cache`, newest use first.
pub fn contents(cache: &BuildCache) -> anyhow::Result<Contents> {
    let fd = cache.fd();
    let mut names = beneath::list_names(fd)
        .map_err(|e| anyhow::anyhow!("cannot list the build cache {}: {e}", cache.dir().display()))?;
    names.sort();
    let (mut items, mut foreign) = (Vec::new(), Vec::new());
    for name in names {
        match classify(fd, &name) {
            Some((kind, st, commit)) => {
                let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK;
                let c = beneath::plain_name(&name)?;
                let bytes =
                    beneath::open_beneath(fd, &c, flags, 0, Resolver::Auto).map(|f| bytes_beneath(&f, 0)).unwrap_or(0);
                items.push(Item { name, kind, used: mtime(&st), commit, bytes });
            }
            None => foreign.push(name),
        }
    }
    items.sort_by(|a, b| b.used.cmp(&a.used).then_with(|| a.name.cmp(&b.name)));
    Ok(Contents { items, foreign })
}

/// The items `rule` removes at time `now`.
pub fn selected(c: &Contents, rule: Prune, now: SystemTime) -> Vec<&Item> {
    let age = |i: &Item| now.duration_since(i.used).unwrap_or(Duration::ZERO);
    let mut entries_seen = 0;
    c.items
        .iter()
        .filter(|i| match (i.kind, rule) {
            (Kind::Scratch, _) => age(i) > SCRATCH_GRACE,
            (Kind::Entry, Prune::Keep(n)) => {
                entries_seen += 1;
                entries_seen > n
            }
            (Kind::FailedLog, Prune::Keep(_)) => true,
            (_, Prune::OlderThan(d)) => age(i) > d,
        })
        .collect()
}

/// Remove `items` from `cache` (each checked again just before, beneath the cache's fd; a
/// link in an item's place is removed as a link, never followed). The bytes freed.
pub fn remove(cache: &BuildCache, items: &[&Item]) -> anyhow::Result<u64> {
    let mut freed = 0;
    for i in items {
        if classify(cache.fd(), &i.name).map(|(k, ..)| k) != Some(i.kind) {
            continue;
        }
        crate::workload::steps::rm_rf_beneath(cache.dir(), &i.name, &|| false)
            .map_err(|e| anyhow::anyhow!("cannot remove {} from the build cache: {e}", i.name))?;
        freed += i.bytes;
    }
    Ok(freed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn set_age(path: &std::path::Path, days: u64) {
        let t = SystemTime::now() - Duration::from_secs(days * 86_400 + 60);
        let f = std::fs::File::open(path).unwrap();
        f.set_modified(t).unwrap();
    }

    /// An entry as a build leaves it, `days` since its last use.
    fn entry(dir: &std::path::Path, key: &str, commit: &str, days: u64) {
        let e = dir.join(key);
        std::fs::create_dir(&e).unwrap();
        std::fs::write(e.join("vmlinuz"), vec![7u8; 1000]).unwrap();
        let record = BuildRecord {
            commit: commit.into(),
            command: "make".into(),
            config_sha256: None,
            seconds: 1.0,
            finished: "2026-12-01T00:00:00Z".into(),
        };
        std::fs::write(e.join(RECORD), serde_json::to_vec(&record).unwrap()).unwrap();
        std::fs::set_permissions(&e, std::fs::Permissions::from_mode(0o700)).unwrap();
        set_age(&e, days);
    }

    #[test]
    fn prune_removes_only_what_fsbench_made_and_follows_no_link() {
        let c = tempfile::tempdir().unwrap();
        let dir = c.path().join("builds");
        let cache = BuildCache::open(&dir).unwrap();
        let key = |n: u8| format!("{:064x}", n);
        entry(&dir, &key(1), "c1", 0);
        entry(&dir, &key(2), "c2", 10);
        entry(&dir, &key(3), "c3", 40);
        // Not fsbench's: a directory with a key name but no record, a world-writable entry,
        // a link to an entry-shaped directory outside, another file.
        std::fs::create_dir(dir.join(key(4))).unwrap();
        entry(&dir, &key(5), "c5", 90);
        std::fs::set_permissions(dir.join(key(5)), std::fs::Permissions::from_mode(0o777)).unwrap();
        let outside = c.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        entry(&outside, &key(6), "c6", 90);
        std::os::unix::fs::symlink(outside.join(key(6)), dir.join(key(6))).unwrap();
        std::fs::write(dir.join("notes.txt"), "mine").unwrap();
        std::fs::write(dir.join(format!("{}.failed.log", key(7))), "broken\n").unwrap();
        set_age(&dir.join(format!("{}.failed.log", key(7))), 2);
        let scratch = |age: u64, n: u8| {
            let s = dir.join(format!(".build-{}-x{n}", &key(8)[..16]));
            std::fs::create_dir(&s).unwrap();
            std::fs::set_permissions(&s, std::fs::Permissions::from_mode(0o700)).unwrap();
            set_age(&s, age);
        };
        scratch(1, 1);
        scratch(0, 2);

        let all = contents(&cache).unwrap();
        let names = |v: &[&Item]| v.iter().map(|i| i.name.clone()).collect::<Vec<_>>();
        let entries: Vec<_> = all.items.iter().filter(|i| i.kind == Kind::Entry).map(|i| i.commit.clone()).collect();
        assert_eq!(entries, [Some("c1".into()), Some("c2".into()), Some("c3".into())], "newest use first");
        assert!(all.items.iter().find(|i| i.commit.as_deref() == Some("c1")).unwrap().bytes >= 1000);
        let mut foreign = all.foreign.clone();
        foreign.sort();
        assert_eq!(foreign, [key(4), key(5), key(6), "notes.txt".to_string()]);

        let now = SystemTime::now();
        let old = selected(&all, Prune::OlderThan(Duration::from_secs(30 * 86_400)), now);
        assert_eq!(names(&old), [format!(".build-{}-x1", &key(8)[..16]), key(3)]);
        let keep = selected(&all, Prune::Keep(1), now);
        assert_eq!(keep.iter().filter(|i| i.kind == Kind::Entry).count(), 2);
        assert!(keep.iter().any(|i| i.kind == Kind::FailedLog));

        let freed = remove(&cache, &keep).unwrap();
        assert!(freed >= 2000, "{freed}");
        let left: Vec<String> =
            std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        let mut left = left;
        left.sort();
        let mut want =
            vec![key(1), key(4), key(5), key(6), "notes.txt".to_string(), format!(".build-{}-x2", &key(8)[..16])];
        want.sort();
        assert_eq!(left, want);
        // The link's target outside the cache is untouched.
        assert!(outside.join(key(6)).join("vmlinuz").is_file());
        assert_eq!(std::fs::read_to_string(dir.join("notes.txt")).unwrap(), "mine");
    }

    #[test]
    fn a_build_found_by_a_bisection_counts_as_used_now() {
        let c = tempfile::tempdir().unwrap();
        let dir = c.path().join("builds");
        let cache = BuildCache::open(&dir).unwrap();
        let (old, used) = (format!("{:064x}", 1), format!("{:064x}", 2));
        entry(&dir, &old, "c1", 40);
        entry(&dir, &used, "c2", 40);
        assert!(cache.lookup(&used).is_some());
        let rule = Prune::OlderThan(Duration::from_secs(30 * 86_400));
        let all = contents(&cache).unwrap();
        let gone: Vec<_> = selected(&all, rule, SystemTime::now()).iter().map(|i| i.name.clone()).collect();
        assert_eq!(gone, [old]);
    }

    #[test]
    fn an_entry_swapped_for_a_link_after_listing_is_not_followed() {
        let c = tempfile::tempdir().unwrap();
        let dir = c.path().join("builds");
        let cache = BuildCache::open(&dir).unwrap();
        let key = format!("{:064x}", 1);
        entry(&dir, &key, "c1", 5);
        let all = contents(&cache).unwrap();
        let outside = c.path().join("victim");
        entry(c.path(), "victim", "v", 0);
        std::fs::remove_dir_all(dir.join(&key)).unwrap();
        std::os::unix::fs::symlink(&outside, dir.join(&key)).unwrap();
        remove(&cache, &all.items.iter().collect::<Vec<_>>()).unwrap();
        assert!(outside.join("vmlinuz").is_file(), "the link's target was removed");
        assert!(dir.join(&key).symlink_metadata().unwrap().file_type().is_symlink(), "not fsbench's: left alone");
    }
}
