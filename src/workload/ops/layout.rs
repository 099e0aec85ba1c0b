//! Where a fileset's files go and how big they are, drawn from a seed before anything
//! is made: filebench's tree (`fileset_populate_subdir`), in which every directory draws
//! a depth and a width from gamma distributions around the mean depth
//! `ln(entries) / ln(dirwidth)` and the mean width `dirwidth` (shape `dirgamma`), and
//! holds files when it is as deep as its drawn depth, directories otherwise. The top
//! directory (`00000001`) keeps making subdirectories until every entry has a place.

use super::spec::{FilesetSpec, SizeDist};
use crate::rng::SplitMix64;

/// A directory of the layout. Directory 0 is the fileset's own directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirNode {
    /// Index of the parent directory (`u32::MAX` for the fileset's directory).
    pub parent: u32,
    /// Its name's number (`%08d`).
    pub serial: u32,
}

/// A file entry of the layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileNode {
    /// Index of its directory.
    pub dir: u32,
    /// Its name's number (`%08d`).
    pub serial: u32,
    /// Declared size, bytes.
    pub size: u64,
    /// Created before the window.
    pub prealloc: bool,
}

/// A fileset's directories and files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Directories, parents before children.
    pub dirs: Vec<DirNode>,
    /// Files, in the order they were placed.
    pub files: Vec<FileNode>,
}

pub use crate::scenario::ops_spec::MAX_ENTRIES;

impl Layout {
    /// Draw the layout of `spec` from `seed`.
    pub fn draw(spec: &FilesetSpec, seed: u64) -> Layout {
        let width = spec.dir_width.max(2.0);
        let entries = spec.entries.min(MAX_ENTRIES);
        let mean_depth = ((entries.max(1)) as f64).ln() / width.ln();
        let mut b = Builder {
            rng: SplitMix64::new(seed),
            sizes: SplitMix64::new(seed ^ 0x5bd1_e995_5bd1_e995),
            spec,
            entries,
            mean_depth,
            width,
            layout: Layout { dirs: vec![DirNode { parent: u32::MAX, serial: 0 }], files: Vec::new() },
        };
        if entries > 0 {
            b.subdir(None, 1, 0.0);
        }
        b.layout
    }

    /// Indexes of the directories that hold files, ascending.
    pub fn leaf_dirs(&self) -> Vec<u32> {
        let mut leaf: Vec<u32> = self.files.iter().map(|f| f.dir).collect();
        leaf.sort_unstable();
        leaf.dedup();
        leaf
    }

    /// The path of directory `d` relative to the cell's directory (`set/00000001/00000002`).
    pub fn dir_path(&self, name: &str, d: u32) -> String {
        let mut parts = Vec::new();
        let mut i = d;
        while i != 0 && i != u32::MAX {
            parts.push(format!("{:08}", self.dirs[i as usize].serial));
            i = self.dirs[i as usize].parent;
        }
        parts.push(name.to_string());
        parts.reverse();
        parts.join("/")
    }
}

struct Builder<'a> {
    rng: SplitMix64,
    sizes: SplitMix64,
    spec: &'a FilesetSpec,
    entries: u64,
    mean_depth: f64,
    width: f64,
    layout: Layout,
}

impl Builder<'_> {
    fn subdir(&mut self, parent: Option<u32>, serial: u32, depth: f64) {
        let depth = depth + 1.0;
        let me = self.layout.dirs.len() as u32;
        self.layout.dirs.push(DirNode { parent: parent.unwrap_or(0), serial });
        let g = self.spec.dir_gamma;
        let mut rand_depth =
            if g > 0.0 { self.rng.gamma(g, self.mean_depth / g).trunc() } else { self.mean_depth.trunc() };
        let mut rand_width = if g > 0.0 { self.rng.gamma(g, self.width / g) } else { self.width };
        if rand_depth == 0.0 {
            rand_depth = 1.0;
        }
        if rand_width == 0.0 {
            rand_width = 1.0;
        }
        let leaf = depth >= rand_depth;
        let mut i: u32 = 1;
        while (parent.is_none() || (i as f64) < rand_width + 1.0) && (self.layout.files.len() as u64) < self.entries {
            if parent.is_some() && leaf {
                self.file(me, i);
            } else {
                self.subdir(Some(me), i, depth);
            }
            i += 1;
        }
    }

    fn file(&mut self, dir: u32, serial: u32) {
        let size = draw_size(&self.spec.size, &mut self.sizes);
        let prealloc = self.rng.below(100) < self.spec.prealloc_percent as u64;
        self.layout.files.push(FileNode { dir, serial, size, prealloc });
    }
}

/// One size drawn from `d`.
pub fn draw_size(d: &SizeDist, rng: &mut SplitMix64) -> u64 {
    match d {
        SizeDist::Fixed(n) => *n,
        SizeDist::Uniform { min, max } => min + rng.below(max.saturating_sub(*min).saturating_add(1)),
        SizeDist::Gamma { mean, shape } => rng.gamma(*shape, mean / shape).round() as u64,
        SizeDist::Table(t) => {
            let w: Vec<f64> = t.iter().map(|(_, w)| *w).collect();
            t[rng.weighted(&w)].0
        }
    }
}

/// `[lower bound, count]` of power-of-two buckets of `sizes` (0 alone), ascending.
pub fn size_histogram(sizes: impl Iterator<Item = u64>) -> Vec<[u64; 2]> {
    let mut counts = std::collections::BTreeMap::new();
    for s in sizes {
        let lower = if s == 0 { 0 } else { 1u64 << (63 - s.leading_zeros()) };
        *counts.entry(lower).or_insert(0u64) += 1;
    }
    counts.into_iter().map(|(k, v)| [k, v]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(entries: u64, width: f64, gamma: f64, size: SizeDist) -> FilesetSpec {
        FilesetSpec {
            name: "set".into(),
            entries,
            dir_width: width,
            dir_gamma: gamma,
            size,
            prealloc_percent: 80,
            reuse: false,
            read_only: false,
        }
    }

    #[test]
    fn every_entry_gets_a_place_and_names_are_unique_per_directory() {
        let l = Layout::draw(&spec(10_000, 20.0, 1.5, SizeDist::Fixed(1)), 1);
        assert_eq!(l.files.len(), 10_000);
        let mut names: Vec<(u32, u32)> = l.files.iter().map(|f| (f.dir, f.serial)).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 10_000);
        // Parents come before children, and no file sits in a directory that has subdirectories.
        let parents: std::collections::HashSet<u32> = l.dirs.iter().skip(1).map(|d| d.parent).collect();
        for (i, d) in l.dirs.iter().enumerate().skip(1) {
            assert!((d.parent as usize) < i);
        }
        assert!(l.files.iter().all(|f| !parents.contains(&f.dir)));
    }

    #[test]
    fn mean_files_per_leaf_directory_follows_dirwidth() {
        // filebench's fileserver: 10,000 files, dirwidth 20, dirgamma 1.5. A leaf holds its drawn
        // width (gamma, mean 20) unless the entries run out, so the mean lies near 20.
        let l = Layout::draw(&spec(10_000, 20.0, 1.5, SizeDist::Fixed(1)), 3);
        let per_leaf = 10_000.0 / l.leaf_dirs().len() as f64;
        assert!((14.0..=26.0).contains(&per_leaf), "{per_leaf} files per leaf directory");
    }

    #[test]
    fn a_huge_width_gives_one_flat_directory() {
        // varmail: dirwidth 1,000,000: every file in 00000001/00000001.
        let l = Layout::draw(&spec(1000, 1_000_000.0, 1.5, SizeDist::Fixed(1)), 5);
        assert_eq!(l.leaf_dirs().len(), 1);
        assert_eq!(l.dir_path("set", l.leaf_dirs()[0]), "set/00000001/00000001");
    }

    #[test]
    fn the_same_seed_draws_the_same_layout_and_another_seed_another() {
        let s = spec(2000, 20.0, 1.5, SizeDist::Gamma { mean: 16384.0, shape: 1.5 });
        assert_eq!(Layout::draw(&s, 9), Layout::draw(&s, 9));
        assert_ne!(Layout::draw(&s, 9), Layout::draw(&s, 10));
    }

    #[test]
    fn gamma_sizes_fit_their_declared_distribution() {
        // Kolmogorov-Smirnov against statrs' gamma CDF: D below the 1% critical value 1.63/sqrt(n).
        use statrs::distribution::{ContinuousCDF, Gamma};
        let s = spec(20_000, 20.0, 1.5, SizeDist::Gamma { mean: 131_072.0, shape: 1.5 });
        let l = Layout::draw(&s, 11);
        let mut sizes: Vec<f64> = l.files.iter().map(|f| f.size as f64).collect();
        sizes.sort_by(f64::total_cmp);
        let g = Gamma::new(1.5, 1.5 / 131_072.0).unwrap();
        let n = sizes.len() as f64;
        let d = sizes
            .iter()
            .enumerate()
            .map(|(i, &x)| {
                let f = g.cdf(x);
                (f - i as f64 / n).abs().max(((i + 1) as f64 / n - f).abs())
            })
            .fold(0.0, f64::max);
        assert!(d < 1.63 / n.sqrt(), "KS D = {d}");
        // A wrong shape is told apart by the same test.
        let wrong = Gamma::new(3.0, 3.0 / 131_072.0).unwrap();
        let d_wrong = sizes.iter().enumerate().map(|(i, &x)| (wrong.cdf(x) - i as f64 / n).abs()).fold(0.0, f64::max);
        assert!(d_wrong > 1.63 / n.sqrt());
    }

    #[test]
    fn prealloc_share_uniform_and_table_sizes() {
        let l = Layout::draw(&spec(10_000, 20.0, 0.0, SizeDist::Uniform { min: 10, max: 20 }), 2);
        let pre = l.files.iter().filter(|f| f.prealloc).count();
        assert!((7700..=8300).contains(&pre), "{pre}");
        assert!(l.files.iter().all(|f| (10..=20).contains(&f.size)));
        let t = SizeDist::Table(vec![(100, 3.0), (1000, 1.0)]);
        let l = Layout::draw(&spec(8000, 20.0, 0.0, t), 2);
        let small = l.files.iter().filter(|f| f.size == 100).count();
        assert!((5700..=6300).contains(&small), "{small}");
        assert_eq!(
            size_histogram([0, 1, 3, 4096, 8191, 8192].into_iter()),
            vec![[0, 1], [1, 1], [2, 1], [4096, 2], [8192, 1]]
        );
    }
}
