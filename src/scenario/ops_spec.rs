//! The declared op mix as the engine takes it: filesets, groups of workers, their
//! loops of ops, and when to stop. Plain values, already validated by the scenario
//! layer; nothing here is a path: every name the engine uses is one it generates.

use std::time::Duration;

use super::op_kinds::OP_NAMES;

/// An op-mix workload: what to build, who runs what, and when to stop.
#[derive(Debug, Clone, PartialEq)]
pub struct OpsSpec {
    /// Filesets, built in this order before the timed window.
    pub filesets: Vec<FilesetSpec>,
    /// Groups of workers.
    pub groups: Vec<ThreadGroup>,
    /// When the workers stop.
    pub stop: Stop,
    /// Seed of the layouts, sizes and random picks.
    pub seed: u64,
}

/// A set of files in a tree of directories, as filebench's `define fileset`.
#[derive(Debug, Clone, PartialEq)]
pub struct FilesetSpec {
    /// Its directory's name beneath the cell's directory (a plain name, checked by the scenario layer).
    pub name: String,
    /// Entries: files that exist or may be created.
    pub entries: u64,
    /// Mean directory width (filebench's `dirwidth`).
    pub dir_width: f64,
    /// Shape of the gamma distribution of widths and depths (filebench's `dirgamma` / 1000); 0: fixed.
    pub dir_gamma: f64,
    /// Sizes of the files.
    pub size: SizeDist,
    /// Percentage of the entries created (with their size written) before the window.
    pub prealloc_percent: u32,
    /// Keep the fileset as the previous repetition left it instead of rebuilding it.
    pub reuse: bool,
    /// Open its files read-only.
    pub read_only: bool,
}

/// The distribution of file sizes, bytes.
#[derive(Debug, Clone, PartialEq)]
pub enum SizeDist {
    /// Every file this size.
    Fixed(u64),
    /// Uniform in `min..=max`.
    Uniform {
        /// Smallest.
        min: u64,
        /// Largest.
        max: u64,
    },
    /// Gamma with this mean and shape (filebench's `cvar-gamma`, `mean:…;gamma:…`).
    Gamma {
        /// Mean size.
        mean: f64,
        /// Shape (k); the scale is mean / k.
        shape: f64,
    },
    /// An empirical table: `(size, weight)`, a size drawn with probability ∝ weight.
    Table(Vec<(u64, f64)>),
}

impl SizeDist {
    /// The mean size, for estimates.
    pub fn mean(&self) -> f64 {
        match self {
            SizeDist::Fixed(n) => *n as f64,
            SizeDist::Uniform { min, max } => (*min as f64 + *max as f64) / 2.0,
            SizeDist::Gamma { mean, .. } => *mean,
            SizeDist::Table(t) => {
                let w: f64 = t.iter().map(|(_, w)| w).sum();
                if w <= 0.0 { 0.0 } else { t.iter().map(|(s, w)| *s as f64 * w).sum::<f64>() / w }
            }
        }
    }
}

/// N workers running one flow.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadGroup {
    /// Its name, for reports and errors.
    pub name: String,
    /// Worker threads (in each process, with `processes`).
    pub threads: u32,
    /// Worker processes, each running `threads` threads (filebench's process instances):
    /// forked, with their own fd table and address space. `None`: the threads run in
    /// fsbench's own process.
    pub processes: Option<u32>,
    /// What each worker runs, over and over.
    pub flow: Flow,
}

impl ThreadGroup {
    /// Its workers: threads times processes.
    pub fn workers(&self) -> u32 {
        self.threads.saturating_mul(self.processes.unwrap_or(1))
    }
}

/// What a worker repeats.
#[derive(Debug, Clone, PartialEq)]
pub enum Flow {
    /// An ordered loop of ops (filebench's flowops of one thread).
    Loop(Vec<Op>),
    /// Each iteration one transaction, drawn with probability ∝ its weight (postmark).
    Mix(Vec<(f64, Vec<Op>)>),
    /// Each iteration one replay of a dbench loadfile, in the worker's own client
    /// directory (`clients/client<N>`); the group's threads are its clients.
    Loadfile(std::sync::Arc<super::loadfile_spec::Loadfile>),
}

impl Flow {
    /// Every op of the flow, in order (the mix's transactions one after the other).
    pub fn ops(&self) -> Vec<&Op> {
        match self {
            Flow::Loop(ops) => ops.iter().collect(),
            Flow::Mix(txs) => txs.iter().flat_map(|(_, ops)| ops.iter()).collect(),
            Flow::Loadfile(_) => Vec::new(),
        }
    }
}

/// A worker's fd slot (filebench's `fd=1`).
pub type Slot = usize;

/// Most fd slots a worker has.
pub const MAX_SLOTS: usize = 16;

/// How much a read reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ReadLen {
    /// From offset 0 to the end of the file.
    Whole,
    /// This many bytes from offset 0 (less at the end of the file).
    Bytes(u64),
}

/// How much an append writes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AppendLen {
    /// Always this many bytes.
    Fixed(u64),
    /// Uniform in 1..=N bytes (filebench's `appendfilerand`).
    Uniform(u64),
    /// Uniform in 1..=(N − the file's size) bytes, none once the file has N (postmark's
    /// append, which never takes a file past its largest size).
    UpTo(u64),
}

impl AppendLen {
    /// The most bytes one append writes.
    pub fn max(self) -> u64 {
        match self {
            AppendLen::Fixed(n) | AppendLen::Uniform(n) | AppendLen::UpTo(n) => n,
        }
    }
}

/// How an op picks an existing file from its fileset.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Pick {
    /// A round-robin pointer per worker over the existing files (filebench).
    #[default]
    RoundRobin,
    /// Uniformly at random.
    Uniform,
    /// Zipf with this exponent over the entries' indexes (entry 0 most popular).
    Zipf(f64),
}

/// One op of a flow. Fileset indexes refer to [`OpsSpec::filesets`].
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// Create a file that does not exist (O_CREAT | O_EXCL | O_RDWR) into a slot.
    Create { fileset: usize, slot: Slot },
    /// Open an existing file into a slot.
    Open { fileset: usize, slot: Slot, pick: Pick },
    /// Close a slot.
    Close { slot: Slot },
    /// Read from offset 0 in `io_size` chunks.
    Read { slot: Slot, len: ReadLen, io_size: u64 },
    /// Write the entry's declared size from offset 0 in `io_size` chunks.
    WriteWhole { slot: Slot, io_size: u64 },
    /// Seek to the end and write, in `io_size` chunks (the append's size when not
    /// declared: one call). With a fileset, an empty slot is first filled by opening one
    /// of its files (untimed, as filebench does for its shared log).
    Append { slot: Slot, len: AppendLen, io_size: u64, fileset: Option<usize> },
    /// fsync(2) a slot.
    Fsync { slot: Slot },
    /// fdatasync(2) a slot.
    Fdatasync { slot: Slot },
    /// fstatat(2) an existing file.
    Stat { fileset: usize, pick: Pick },
    /// Rename an existing file onto a free entry's name.
    Rename { fileset: usize },
    /// Unlink an existing file that no worker has open.
    Delete { fileset: usize },
    /// Make a directory in one of the fileset's directories.
    Mkdir { fileset: usize },
    /// Remove the directory this worker made last.
    Rmdir { fileset: usize },
    /// Open one of the fileset's directories and read all its entries.
    Readdir { fileset: usize },
    /// Hard-link an existing file to a free entry's name.
    Link { fileset: usize },
    /// Make a free entry a symbolic link to an existing file's name (never followed).
    Symlink { fileset: usize },
    /// ftruncate(2) a slot to a size.
    Truncate { slot: Slot, size: u64 },
    /// fchmodat(2) an existing file.
    Chmod { fileset: usize, mode: u32 },
    /// fchownat(2) an existing file.
    Chown { fileset: usize, uid: u32, gid: u32 },
    /// Sleep.
    Delay(Duration),
}

impl Op {
    /// Index of its kind in [`OP_NAMES`] (also its account index).
    pub fn kind(&self) -> usize {
        match self {
            Op::Create { .. } => 0,
            Op::Open { .. } => 1,
            Op::Close { .. } => 2,
            Op::Read { .. } => 3,
            Op::WriteWhole { .. } => 4,
            Op::Append { .. } => 5,
            Op::Fsync { .. } => 6,
            Op::Fdatasync { .. } => 7,
            Op::Stat { .. } => 8,
            Op::Rename { .. } => 9,
            Op::Delete { .. } => 10,
            Op::Mkdir { .. } => 11,
            Op::Rmdir { .. } => 12,
            Op::Readdir { .. } => 13,
            Op::Link { .. } => 14,
            Op::Symlink { .. } => 15,
            Op::Truncate { .. } => 16,
            Op::Chmod { .. } => 17,
            Op::Chown { .. } => 18,
            Op::Delay(_) => 19,
        }
    }

    /// Its name in [`OP_NAMES`].
    pub fn name(&self) -> &'static str {
        OP_NAMES[self.kind()]
    }
}

/// When the workers stop (the first condition met), and the pace they keep until then.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Stop {
    /// After this long.
    pub duration: Option<Duration>,
    /// After this many loops (or transactions, or loadfile passes) per worker.
    pub loops: Option<u64>,
    /// After this many ops per worker (every op but `delay`; a loadfile client's ops performed).
    pub ops: Option<u64>,
    /// After this many bytes read and written per worker.
    pub bytes: Option<u64>,
    /// Everyone, as soon as one worker is done (filebench's `mode quit firstdone`).
    pub first_done: bool,
    /// Each worker's open-loop pace; `None`: as fast as it goes.
    pub rate: Option<Rate>,
    /// Run this long before the window (dbench's warm-up): every figure the workers made
    /// in it is dropped and `duration` counts from its end. Only with a `duration` and
    /// no count.
    pub warmup: Option<Duration>,
}

/// An open-loop pace per worker: start `k` of a worker is scheduled at `k / per_s`
/// seconds after the window opens; a worker ahead of its schedule sleeps, one behind it
/// starts at once and the lateness is recorded.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Starts per second.
    pub per_s: f64,
    /// What a start is.
    pub unit: RateUnit,
}

/// What a [`Rate`] paces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateUnit {
    /// A loop (or transaction, or loadfile pass).
    Loops,
    /// An op (a loadfile line).
    Ops,
}

impl RateUnit {
    /// Its name in a scenario and a result.
    pub fn name(self) -> &'static str {
        match self {
            RateUnit::Loops => "loops",
            RateUnit::Ops => "ops",
        }
    }
}

/// Most starts per second a [`Rate`] may ask of a worker.
pub const MAX_RATE: f64 = 10_000_000.0;

/// Most workers over all groups of a scenario.
pub const MAX_WORKERS: u32 = 4096;

/// The `[workload]` of kind `ops` as validated: the engine's spec and what the runner
/// needs around it.
#[derive(Debug, Clone, PartialEq)]
pub struct OpsWorkload {
    /// What each repetition builds and runs.
    pub spec: OpsSpec,
    /// Timed windows per cell.
    pub repetitions: u32,
    /// The factor applied to the filesets' entries (recorded in notes).
    pub scale: f64,
    /// Contention of one CPU above which a repetition is disturbed; `None`: not checked.
    pub disturbance: Option<f64>,
}

impl OpsWorkload {
    /// Bytes the preallocated files take, and bytes of every entry at its declared size.
    pub fn fileset_bytes(&self) -> (f64, f64) {
        let mut pre = 0.0;
        let mut all = 0.0;
        for f in &self.spec.filesets {
            let b = f.entries as f64 * f.size.mean();
            all += b;
            pre += b * f.prealloc_percent as f64 / 100.0;
        }
        (pre, all)
    }
}

/// Largest io size or fixed read/append length a chunk may have (the write pattern's size).
pub const MAX_CHUNK: u64 = 16 << 20;

/// Most entries one fileset may declare (the engine keeps ~30 bytes per entry).
pub const MAX_ENTRIES: u64 = 50_000_000;
