//! Every op kind an ops cell's account counts, and its account index: the op-mix kinds
//! ([`OP_NAMES`], `ops_spec`'s ops), then the dbench loadfile kinds
//! ([`LOADFILE_OPS`], `loadfile_spec`'s calls, with their loadfile keys). One list, so a report, the account
//! and both specs name a kind alike.

/// The kinds of ops, in the order reports list them.
pub const OP_NAMES: &[&str] = &[
    "create",
    "open",
    "close",
    "read",
    "write",
    "append",
    "fsync",
    "fdatasync",
    "stat",
    "rename",
    "delete",
    "mkdir",
    "rmdir",
    "readdir",
    "link",
    "symlink",
    "truncate",
    "chmod",
    "chown",
    "delay",
];

/// Account index of `delay`, the one kind that is not an op of the filesystem.
pub const DELAY_KIND: usize = 19;

/// The op kinds of a loadfile, in the order reports list them: the key of a loadfile line
/// (the ops fsbench replays, by dbench's names) and the name reports give the kind, as
/// dbench's summary names it. Their account indexes follow [`OP_NAMES`]'s.
pub const LOADFILE_OPS: &[(&str, &str)] = &[
    ("NTCreateX", "NTCreateX"),
    ("Close", "Close"),
    ("Rename", "Rename"),
    ("Unlink", "Unlink"),
    ("Deltree", "Deltree"),
    ("Mkdir", "Mkdir"),
    ("Rmdir", "Rmdir"),
    ("QUERY_PATH_INFORMATION", "Qpathinfo"),
    ("QUERY_FILE_INFORMATION", "Qfileinfo"),
    ("QUERY_FS_INFORMATION", "Qfsinfo"),
    ("SET_FILE_INFORMATION", "Sfileinfo"),
    ("FIND_FIRST", "Find"),
    ("WriteX", "WriteX"),
    ("ReadX", "ReadX"),
    ("LockX", "LockX"),
    ("UnlockX", "UnlockX"),
    ("Flush", "Flush"),
];

/// Account indexes: the op-mix kinds ([`OP_NAMES`]), then the loadfile kinds.
pub const KIND_COUNT: usize = OP_NAMES.len() + LOADFILE_OPS.len();

/// The name of account index `k` (an op-mix kind or a loadfile kind).
pub fn kind_name(k: usize) -> &'static str {
    OP_NAMES.get(k).copied().unwrap_or_else(|| LOADFILE_OPS[k - OP_NAMES.len()].1)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_delay_index_names_delay() {
        assert_eq!(super::OP_NAMES[super::DELAY_KIND], "delay");
    }
}
