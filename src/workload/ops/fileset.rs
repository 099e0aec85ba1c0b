//! A fileset while the workers run: which entries exist, which are busy, which are open,
//! and the picking rules of filebench (`fileset_pick`): an existing file by a
//! round-robin pointer per worker, a not-yet-existing one from a separate pool by a
//! shared pointer, a busy entry skipped for the next one, so no two workers operate on
//! one entry at once; uniform and Zipf picking as options. One lock per fileset, held
//! only to pick and to release, never across a system call.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex};

use super::layout::{DirNode, FileNode};
use super::spec::Pick;
use super::sys::Name;
use crate::rng::SplitMix64;

const EXISTS: u8 = 1;
const BUSY: u8 = 2;
const SYMLINK: u8 = 4;

/// What an existing-file pick needs of the entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// A regular file (open, stat, chmod, link source, ...).
    Regular,
    /// Any entry no worker holds open (delete, rename).
    Closed,
}

struct Table {
    flags: Vec<u8>,
    open: Vec<u16>,
    free_rotor: usize,
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
    table: Mutex<Table>,
    zipf: Mutex<Vec<(u64, Arc<Vec<f64>>)>>,
}

impl FilesetState {
    /// A fileset over built directories (`dir_fds[i]` opened on `dirs[i]`) and entries whose
    /// existence is `exists[i]`.
    pub fn new(
        name: String,
        read_only: bool,
        dirs: Vec<DirNode>,
        files: Vec<FileNode>,
        dir_fds: Vec<OwnedFd>,
        exists: &[bool],
    ) -> FilesetState {
        let mut leaf_dirs: Vec<u32> = files.iter().map(|f| f.dir).collect();
        leaf_dirs.sort_unstable();
        leaf_dirs.dedup();
        let flags = exists.iter().map(|&e| if e { EXISTS } else { 0 }).collect();
        let open = vec![0; files.len()];
        FilesetState {
            name,
            read_only,
            dirs,
            files,
            leaf_dirs,
            dir_fds,
            table: Mutex::new(Table { flags, open, free_rotor: 0 }),
            zipf: Mutex::new(Vec::new()),
        }
    }

    /// The fd of directory `d`.
    pub fn dir_fd(&self, d: u32) -> RawFd {
        self.dir_fds[d as usize].as_raw_fd()
    }

    /// Directory fd and name of entry `i`.
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
        self.table.lock().expect("fileset lock").flags.iter().filter(|&&f| f & EXISTS != 0).count()
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
        let mut t = self.table.lock().expect("fileset lock");
        let ok = |t: &Table, i: usize| {
            let f = t.flags[i];
            f & EXISTS != 0
                && f & BUSY == 0
                && match want {
                    Want::Regular => f & SYMLINK == 0,
                    Want::Closed => t.open[i] == 0,
                }
        };
        let i = (0..n).map(|k| (start + k) % n).find(|&i| ok(&t, i))?;
        t.flags[i] |= BUSY;
        if pick == Pick::RoundRobin {
            *rotor = i + 1;
        }
        Some(i)
    }

    /// Whether an entry that satisfies `want` exists, busy or not: a pick that found none
    /// idle waits for it (another worker's op ends soon) instead of running out of files.
    pub fn any_existing(&self, want: Want) -> bool {
        let t = self.table.lock().expect("fileset lock");
        (0..self.files.len()).any(|i| {
            let f = t.flags[i];
            f & EXISTS != 0
                && match want {
                    Want::Regular => f & SYMLINK == 0,
                    Want::Closed => t.open[i] == 0,
                }
        })
    }

    /// Pick an entry that does not exist and is idle (the shared pointer) and mark it busy.
    pub fn pick_free(&self) -> Option<usize> {
        let n = self.files.len();
        let mut t = self.table.lock().expect("fileset lock");
        let start = t.free_rotor % n.max(1);
        let i = (0..n).map(|k| (start + k) % n).find(|&i| t.flags[i] & (EXISTS | BUSY) == 0)?;
        t.flags[i] |= BUSY;
        t.free_rotor = i + 1;
        Some(i)
    }

    /// Release a busy entry: whether it exists now (and is a link), and the change of its open count.
    pub fn release(&self, i: usize, exists: bool, symlink: bool, open_delta: i32) {
        let mut t = self.table.lock().expect("fileset lock");
        let mut f = t.flags[i] & !(BUSY | EXISTS | SYMLINK);
        if exists {
            f |= EXISTS;
        }
        if symlink {
            f |= SYMLINK;
        }
        t.flags[i] = f;
        t.open[i] = (t.open[i] as i32 + open_delta).max(0) as u16;
    }

    /// Whether entry `i` is a symbolic link fsbench made.
    pub fn is_symlink(&self, i: usize) -> bool {
        self.table.lock().expect("fileset lock").flags[i] & SYMLINK != 0
    }

    /// Drop one open reference of a (not busy) entry: a close.
    pub fn closed(&self, i: usize) {
        let mut t = self.table.lock().expect("fileset lock");
        t.open[i] = t.open[i].saturating_sub(1);
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
