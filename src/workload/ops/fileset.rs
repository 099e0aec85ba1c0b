//! A fileset while the workers run: which entries exist, which are busy, which are open,
//! and the picking rules of filebench (`fileset_pick`): an existing file by a
//! round-robin pointer per worker, a not-yet-existing one from a separate pool by a
//! shared pointer, a busy entry skipped for the next one, so no two workers operate on
//! one entry at once; uniform and Zipf picking as options. Picking and releasing take no
//! lock: one atomic word per entry (its flags and open count), in a shared mapping so
//! that workers in forked processes (`processes`) pick by the same rules.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::layout::{DirNode, FileNode};
use super::shm::Shm;
use super::spec::Pick;
use super::sys::Name;
use crate::rng::SplitMix64;

const EXISTS: u32 = 1;
const BUSY: u32 = 2;
const SYMLINK: u32 = 4;
/// The open count lives above the flags in an entry's word.
const OPEN_SHIFT: u32 = 16;

/// What an existing-file pick needs of the entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// A regular file (open, stat, chmod, link source, ...).
    Regular,
    /// Any entry no worker holds open (delete, rename).
    Closed,
}

impl Want {
    /// Whether an entry whose word is `v` is one to pick, busy or not.
    #[inline]
    fn fits(self, v: u32) -> bool {
        v & EXISTS != 0
            && match self {
                Want::Regular => v & SYMLINK == 0,
                Want::Closed => v >> OPEN_SHIFT == 0,
            }
    }
}

/// A built fileset, shared by the workers.
pub struct FilesetState {
    /// Its name.
    pub name: String,
    /// Open its files read-only.
    pub read_only: bool,
    /// Its directories (0: the fileset's own).
    pub dirs: Vec<DirNode>,
    /// Its entries.
    pub files: Vec<FileNode>,
    /// The directories holding files (where workers make and read directories).
    pub leaf_dirs: Vec<u32>,
    dir_fds: Vec<OwnedFd>,
    /// Per entry, one word: the flags (exists, busy, a link fsbench made) and, from bit 16,
    /// how many workers hold it open. A worker takes an entry by setting BUSY with a
    /// compare-and-swap, so picking takes no lock and costs no system call; the open count
    /// only grows while its entry is busy, so a pick that sees it zero and sets BUSY in the
    /// same swap has a closed entry. Shared with forked worker processes.
    words: Shm<AtomicU32>,
    /// The free pool's shared pointer (one word, shared like `words`).
    free_rotor: Shm<AtomicUsize>,
    zipf: Mutex<Vec<(u64, Arc<Vec<f64>>)>>,
}

impl FilesetState {
    /// A fileset over built directories (`dir_fds[i]` opened on `dirs[i]`) and entries whose
    /// existence is `exists[i]`; fails when the shared mapping of its words cannot be made.
    pub fn new(
        name: String,
        read_only: bool,
        dirs: Vec<DirNode>,
        files: Vec<FileNode>,
        dir_fds: Vec<OwnedFd>,
        exists: &[bool],
    ) -> std::io::Result<FilesetState> {
        let mut leaf_dirs: Vec<u32> = files.iter().map(|f| f.dir).collect();
        leaf_dirs.sort_unstable();
        leaf_dirs.dedup();
        leaf_dirs.shrink_to_fit();
        let words: Shm<AtomicU32> = Shm::zeroed(exists.len())?;
        for (w, &e) in words.iter().zip(exists) {
            if e {
                w.store(EXISTS, Ordering::Relaxed);
            }
        }
        Ok(FilesetState {
            name,
            read_only,
            dirs,
            files,
            leaf_dirs,
            dir_fds,
            words,
            free_rotor: Shm::zeroed(1)?,
            zipf: Mutex::new(Vec::new()),
        })
    }

    /// The fd of directory `d`.
    pub fn dir_fd(&self, d: u32) -> RawFd {
        self.dir_fds[d as usize].as_raw_fd()
    }

    /// Directory fd and name of entry `i`.
    #[inline]
    pub fn entry(&self, i: usize) -> (RawFd, Name) {
        let f = &self.files[i];
        (self.dir_fd(f.dir), Name::serial(f.serial))
    }

    /// Entry `i`'s path relative to the cell's directory, for error messages.
    pub fn entry_path(&self, i: usize) -> String {
        let f = &self.files[i];
        format!("{}/{:08}", self.dir_path(f.dir), f.serial)
    }

    /// Directory `d`'s path relative to the cell's directory.
    pub fn dir_path(&self, d: u32) -> String {
        let mut parts = Vec::new();
        let mut i = d;
        while i != 0 && i != u32::MAX {
            parts.push(format!("{:08}", self.dirs[i as usize].serial));
            i = self.dirs[i as usize].parent;
        }
        parts.push(self.name.clone());
        parts.reverse();
        parts.join("/")
    }

    /// Entries that exist now.
    #[cfg(test)]
    pub fn existing(&self) -> usize {
        self.words.iter().filter(|w| w.load(Ordering::Relaxed) & EXISTS != 0).count()
    }

    /// Mark entry `i` busy if its word satisfies `ok` and it is idle; whether it was.
    #[inline]
    fn take(&self, i: usize, ok: impl Fn(u32) -> bool) -> bool {
        let w = &self.words[i];
        let mut v = w.load(Ordering::Relaxed);
        while v & BUSY == 0 && ok(v) {
            match w.compare_exchange_weak(v, v | BUSY, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(now) => v = now,
            }
        }
        false
    }

    /// Pick an existing, idle entry that satisfies `want` and mark it busy.
    pub fn pick_existing(&self, want: Want, pick: Pick, rotor: &mut usize, rng: &mut SplitMix64) -> Option<usize> {
        let n = self.files.len();
        if n == 0 {
            return None;
        }
        let start = match pick {
            Pick::RoundRobin => *rotor % n,
            Pick::Uniform => rng.below(n as u64) as usize,
            Pick::Zipf(s) => self.zipf_index(s, rng),
        };
        let mut i = start;
        for _ in 0..n {
            if self.take(i, |v| want.fits(v)) {
                if pick == Pick::RoundRobin {
                    *rotor = i + 1;
                }
                return Some(i);
            }
            i += 1;
            if i == n {
                i = 0;
            }
        }
        None
    }

    /// Whether an entry that satisfies `want` exists, busy or not: a pick that found none
    /// idle waits for it (another worker's op ends soon) instead of running out of files.
    pub fn any_existing(&self, want: Want) -> bool {
        self.words.iter().any(|w| want.fits(w.load(Ordering::Relaxed)))
    }

    /// Pick an entry that does not exist and is idle (the shared pointer) and mark it busy.
    pub fn pick_free(&self) -> Option<usize> {
        let n = self.files.len();
        if n == 0 {
            return None;
        }
        let mut i = self.free_rotor[0].load(Ordering::Relaxed) % n;
        for _ in 0..n {
            if self.take(i, |v| v & EXISTS == 0) {
                self.free_rotor[0].store(i + 1, Ordering::Relaxed);
                return Some(i);
            }
            i += 1;
            if i == n {
                i = 0;
            }
        }
        None
    }

    /// Release a busy entry: whether it exists now (and is a link), and the change of its open count.
    pub fn release(&self, i: usize, exists: bool, symlink: bool, open_delta: i32) {
        let mut f = 0;
        if exists {
            f |= EXISTS;
        }
        if symlink {
            f |= SYMLINK;
        }
        // Only closes (which lower the count) race with this: retry until the word holds still.
        let _ = self.words[i].fetch_update(Ordering::Release, Ordering::Relaxed, |v| {
            let open = ((v >> OPEN_SHIFT) as i32 + open_delta).clamp(0, u16::MAX as i32) as u32;
            Some(open << OPEN_SHIFT | f)
        });
    }

    /// Whether entry `i` is a symbolic link fsbench made.
    pub fn is_symlink(&self, i: usize) -> bool {
        self.words[i].load(Ordering::Relaxed) & SYMLINK != 0
    }

    /// Drop one open reference of an entry: a close.
    pub fn closed(&self, i: usize) {
        let _ = self.words[i].fetch_update(Ordering::Release, Ordering::Relaxed, |v| {
            Some(if v >> OPEN_SHIFT == 0 { v } else { v - (1 << OPEN_SHIFT) })
        });
    }

    fn zipf_index(&self, s: f64, rng: &mut SplitMix64) -> usize {
        let cdf = {
            let mut cache = self.zipf.lock().expect("zipf lock");
            match cache.iter().find(|(bits, _)| *bits == s.to_bits()) {
                Some((_, c)) => Arc::clone(c),
                None => {
                    let c = Arc::new(zipf_cdf(self.files.len(), s));
                    cache.push((s.to_bits(), Arc::clone(&c)));
                    c
                }
            }
        };
        let u = rng.f64();
        cdf.partition_point(|&c| c < u).min(self.files.len() - 1)
    }
}

/// The cumulative distribution of Zipf(s) over ranks 1..=n, as f64 in (0, 1].
pub fn zipf_cdf(n: usize, s: f64) -> Vec<f64> {
    let mut acc = 0.0;
    let mut c: Vec<f64> = (1..=n)
        .map(|k| {
            acc += (k as f64).powf(-s);
            acc
        })
        .collect();
    for x in &mut c {
        *x /= acc;
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(n: usize, exists: &[bool]) -> FilesetState {
        let files = (0..n).map(|i| FileNode { dir: 0, serial: i as u32 + 1, size: 1, prealloc: true }).collect();
        FilesetState::new("s".into(), false, vec![DirNode { parent: u32::MAX, serial: 0 }], files, Vec::new(), exists)
            .unwrap()
    }

    #[test]
    fn round_robin_walks_existing_entries_and_skips_busy_ones() {
        let s = state(5, &[true, false, true, true, false]);
        let (mut rotor, mut rng) = (0, SplitMix64::new(1));
        assert_eq!(s.pick_existing(Want::Regular, Pick::RoundRobin, &mut rotor, &mut rng), Some(0));
        // 0 is busy now: another worker's pointer at 0 gets 2.
        let mut other = 0;
        assert_eq!(s.pick_existing(Want::Regular, Pick::RoundRobin, &mut other, &mut rng), Some(2));
        assert_eq!(s.pick_existing(Want::Regular, Pick::RoundRobin, &mut rotor, &mut rng), Some(3));
        s.release(0, true, false, 0);
        s.release(2, true, false, 0);
        s.release(3, true, false, 0);
        assert_eq!(s.pick_existing(Want::Regular, Pick::RoundRobin, &mut rotor, &mut rng), Some(0));
    }

    #[test]
    fn the_free_pool_is_separate_and_delete_spares_open_files() {
        let s = state(4, &[true, false, true, false]);
        assert_eq!(s.pick_free(), Some(1));
        assert_eq!(s.pick_free(), Some(3));
        assert_eq!(s.pick_free(), None);
        s.release(1, true, false, 1); // created and held open
        s.release(3, false, false, 0);
        let (mut rotor, mut rng) = (1, SplitMix64::new(1));
        assert_eq!(s.pick_existing(Want::Closed, Pick::RoundRobin, &mut rotor, &mut rng), Some(2));
        s.release(2, false, false, 0); // deleted
        assert_eq!(s.pick_existing(Want::Closed, Pick::RoundRobin, &mut rotor, &mut rng), Some(0));
        s.release(0, true, false, 0);
        s.closed(1);
        assert_eq!(s.existing(), 2);
    }

    #[test]
    fn zipf_picks_favour_low_ranks() {
        let s = state(1000, &[true; 1000]);
        let (mut rotor, mut rng) = (0, SplitMix64::new(4));
        let mut first = 0;
        for _ in 0..10_000 {
            let i = s.pick_existing(Want::Regular, Pick::Zipf(1.0), &mut rotor, &mut rng).unwrap();
            if i == 0 {
                first += 1;
            }
            s.release(i, true, false, 0);
        }
        // P(rank 1) = 1 / H(1000) = 0.1336.
        assert!((1200..=1480).contains(&first), "{first}");
        let c = zipf_cdf(3, 0.0);
        assert!((c[0] - 1.0 / 3.0).abs() < 1e-12 && (c[2] - 1.0).abs() < 1e-12);
    }
}
