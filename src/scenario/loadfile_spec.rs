//! A dbench loadfile as the engine takes it: a list of ops, each with the line it came
//! from and whether dbench recorded it as succeeding. Paths are already checked and
//! turned into relative, `/`-separated names beneath the cell (see
//! `loadfile_parse`, which parses the text into these).

use super::op_kinds::OP_NAMES;

/// A parsed loadfile.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Loadfile {
    /// Where it was read from (for notes and errors).
    pub origin: String,
    /// The ops in file order.
    pub ops: Vec<LoadOp>,
    /// How its clients look a path up before an op that names one (the group's `resolve`).
    pub resolve: Resolve,
}

/// How a client looks up the path of an op that names one before the op's own call, as
/// dbench's fileio backend models a file server's name lookup (Samba's
/// `pvfs_resolve_name`); the lookup is part of the op, timed with it. With `full` or
/// `stat`, an NTCreateX that opened a file also `fstat`s it and SET_FILE_INFORMATION reads
/// the times before setting them, as that backend does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Resolve {
    /// `stat` the path and, when that fails, read its directory for a name that matches
    /// case-insensitively (dbench's default).
    #[default]
    Full,
    /// `stat` the path only (`dbench --no-resolve`).
    Stat,
    /// No lookup: each op is its own system call alone.
    None,
}

impl Resolve {
    /// The TOML names, in order.
    pub const NAMES: [&'static str; 3] = ["full", "stat", "none"];

    /// The mode `name` names.
    pub fn from_name(name: &str) -> Option<Resolve> {
        match name {
            "full" => Some(Resolve::Full),
            "stat" => Some(Resolve::Stat),
            "none" => Some(Resolve::None),
            _ => None,
        }
    }
}

/// A path beneath the cell: `/`-separated plain components. The first two components
/// of dbench's `\clients\client1\…` are the client's directory, renamed per client.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadPath {
    /// The components, each a plain name (no `.`, `..`, `/`, NUL or control characters).
    pub parts: Vec<String>,
    /// Whether it starts `\clients\client1`: the second component becomes `client<N>`.
    pub per_client: bool,
}

/// One line of a loadfile.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadOp {
    /// 1-based line number in the file.
    pub line: u32,
    /// What to do.
    pub call: Call,
    /// Whether dbench recorded `NT_STATUS_OK` (false: an error status, so failure is expected).
    pub expect_ok: bool,
}

/// A handle number of the loadfile (mapped to an fd per client).
pub type Handle = u32;

/// What a loadfile line does.
#[derive(Debug, Clone, PartialEq)]
pub enum Call {
    /// `NTCreateX path create_options disposition handle`.
    Create { path: LoadPath, directory: bool, disposition: u32, handle: Handle },
    /// `Close handle`.
    Close { handle: Handle },
    /// `Rename old new`.
    Rename { from: LoadPath, to: LoadPath },
    /// `Unlink path attributes`.
    Unlink { path: LoadPath },
    /// `Deltree path`: remove the tree.
    Deltree { path: LoadPath },
    /// `Mkdir path`.
    Mkdir { path: LoadPath },
    /// `Rmdir path`.
    Rmdir { path: LoadPath },
    /// `QUERY_PATH_INFORMATION path level`: fstatat.
    QueryPath { path: LoadPath },
    /// `QUERY_FILE_INFORMATION handle level`: fstat.
    QueryFile { handle: Handle },
    /// `QUERY_FS_INFORMATION level`: statfs of the client's directory.
    QueryFs,
    /// `SET_FILE_INFORMATION handle level`: futimens (the times of FileBasicInformation).
    SetFile { handle: Handle },
    /// `FIND_FIRST pattern level max_count count`: read the pattern's directory.
    Find { dir: LoadPath, pattern: String },
    /// `WriteX handle offset size returned`.
    Write { handle: Handle, offset: u64, size: u64 },
    /// `ReadX handle offset size returned`.
    Read { handle: Handle, offset: u64, size: u64 },
    /// `LockX handle offset length`: an OFD write lock.
    Lock { handle: Handle, offset: u64, len: u64 },
    /// `UnlockX handle offset length`.
    Unlock { handle: Handle, offset: u64, len: u64 },
    /// `Flush handle`: fsync.
    Flush { handle: Handle },
}

impl Call {
    /// Index of its kind in [`LOADFILE_OPS`](crate::scenario::op_kinds::LOADFILE_OPS).
    pub fn index(&self) -> usize {
        match self {
            Call::Create { .. } => 0,
            Call::Close { .. } => 1,
            Call::Rename { .. } => 2,
            Call::Unlink { .. } => 3,
            Call::Deltree { .. } => 4,
            Call::Mkdir { .. } => 5,
            Call::Rmdir { .. } => 6,
            Call::QueryPath { .. } => 7,
            Call::QueryFile { .. } => 8,
            Call::QueryFs => 9,
            Call::SetFile { .. } => 10,
            Call::Find { .. } => 11,
            Call::Write { .. } => 12,
            Call::Read { .. } => 13,
            Call::Lock { .. } => 14,
            Call::Unlock { .. } => 15,
            Call::Flush { .. } => 16,
        }
    }

    /// Its account index (after the op-mix kinds).
    pub fn kind(&self) -> usize {
        OP_NAMES.len() + self.index()
    }
}

/// Largest loadfile read, bytes (dbench's client.txt is 26 MB).
pub const MAX_LOADFILE_BYTES: u64 = 64 << 20;
/// Most lines of a loadfile (client.txt has 458,344).
pub const MAX_LOADFILE_LINES: usize = 2_000_000;
/// Longest line, bytes.
pub const MAX_LINE_BYTES: usize = 4096;
/// Largest ReadX/WriteX size, bytes.
pub const MAX_IO_BYTES: u64 = 16 << 20;
/// Largest offset (ReadX, WriteX, LockX), bytes: 1 TiB.
pub const MAX_OFFSET: u64 = 1 << 40;
/// Most handles one client holds open at once; an NTCreateX beyond it is a failed op.
pub const MAX_OPEN_HANDLES: usize = 1024;
/// Most components of a loadfile path.
pub const MAX_PATH_PARTS: usize = 32;
