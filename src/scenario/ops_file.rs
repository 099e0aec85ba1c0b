//! `[workload]` keys of kind `ops` as written: filesets, worker groups and their ops.
//! Plain serde structs like the rest of `file`; `validate::ops` turns them into
//! `workload::ops::spec` values and says where a value is wrong.

use schemars::JsonSchema;
use serde::Deserialize;

/// `[[workload.fileset]]`: a set of files in a tree of directories.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FilesetFile {
    /// Its directory's name beneath the cell's directory (A-Z a-z 0-9 . _ -).
    pub name: String,
    /// Files that exist or may be created (times `workload.scale`).
    pub entries: i64,
    /// Mean directory width (filebench's `dirwidth`); default 20.
    #[serde(default)]
    pub dir_width: Option<f64>,
    /// Shape of the gamma distribution of directory widths and depths (filebench's
    /// `dirgamma` / 1000); 0 for fixed widths; default 1.5.
    #[serde(default)]
    pub dir_gamma: Option<f64>,
    /// File size: `"16KiB"`, `"gamma(128KiB, 1.5)"` (mean, shape) or `"uniform(1KiB, 64KiB)"`.
    #[serde(default)]
    pub size: Option<String>,
    /// An empirical size table instead of `size`: `[["4KiB", 3], ["1MiB", 1]]` (size, weight).
    #[serde(default)]
    pub sizes: Option<Vec<(String, f64)>>,
    /// Percentage of the entries created before the timed window (filebench's `prealloc`); default 0.
    #[serde(default)]
    pub prealloc: Option<i64>,
    /// Keep the fileset as the previous repetition left it; default false.
    #[serde(default)]
    pub reuse: Option<bool>,
    /// Open its files read-only; default false.
    #[serde(default)]
    pub read_only: Option<bool>,
}

/// `[[workload.group]]`: N workers running one loop, or a weighted mix of transactions.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupFile {
    /// Its name (reports, errors); default `group<N>`.
    #[serde(default)]
    pub name: Option<String>,
    /// Worker threads (in each process, with `processes`).
    pub threads: i64,
    /// Worker processes, each running `threads` threads (filebench's process instances):
    /// forked, each with its own fd table and address space. Default: the threads run in
    /// fsbench's own process.
    #[serde(default)]
    pub processes: Option<i64>,
    /// The ops each worker runs in order, over and over.
    #[serde(default, rename = "loop")]
    pub ops_loop: Option<Vec<OpFile>>,
    /// Transactions, one drawn per iteration with probability ∝ its weight (postmark).
    #[serde(default)]
    pub mix: Option<Vec<TransactionFile>>,
    /// A dbench loadfile each thread replays as one client, in `clients/client<N>`
    /// (relative to the scenario's directory, or absolute).
    #[serde(default)]
    pub loadfile: Option<String>,
    /// With a `loadfile`: how a client looks up an op's path first, as dbench's fileio
    /// backend does: `full` (a `stat`, and on failure a case-insensitive read of the
    /// directory; the default), `stat` (dbench's `--no-resolve`) or `none`.
    #[serde(default)]
    pub resolve: Option<String>,
}

/// One weighted transaction of a mix.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TransactionFile {
    /// Relative weight (> 0).
    pub weight: f64,
    /// Its ops, in order.
    pub ops: Vec<OpFile>,
}

/// One op: `{ op = "open", fileset = "bigfileset", fd = 1 }`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpFile {
    /// create, open, close, read, write, append, fsync, fdatasync, stat, rename, delete,
    /// mkdir, rmdir, readdir, link, symlink, truncate, chmod, chown or delay.
    pub op: String,
    /// The fileset it picks from (ops on files by name, and `append` to open its fd on first use).
    #[serde(default)]
    pub fileset: Option<String>,
    /// The worker's fd slot (0..15) the op opens into or works on.
    #[serde(default)]
    pub fd: Option<i64>,
    /// Size of each read, write or append system call (1 byte to 16MiB); default 1MiB for
    /// read and write, the append's size (one call) for append.
    #[serde(default)]
    pub io_size: Option<String>,
    /// read: bytes to read (default the whole file); append: bytes (with `random`, the
    /// maximum of 1..=N); truncate: the new size.
    #[serde(default)]
    pub size: Option<String>,
    /// append: a uniform 1..=size bytes (filebench's `appendfilerand`); default true.
    #[serde(default)]
    pub random: Option<bool>,
    /// append, instead of `size`: a uniform 1..=(up_to − the file's size) bytes, none once
    /// the file has up_to (postmark's append, never past its largest file size).
    #[serde(default)]
    pub up_to: Option<String>,
    /// How an existing file is picked: `round-robin` (default), `uniform` or `zipf(1.1)`.
    #[serde(default)]
    pub pick: Option<String>,
    /// chmod: the mode (e.g. `0o600`).
    #[serde(default)]
    pub mode: Option<i64>,
    /// chown: the uid.
    #[serde(default)]
    pub uid: Option<i64>,
    /// chown: the gid.
    #[serde(default)]
    pub gid: Option<i64>,
    /// delay: how long (`"10ms"`).
    #[serde(default)]
    pub time: Option<String>,
}
