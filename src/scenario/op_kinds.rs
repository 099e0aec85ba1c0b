//! Every op kind an ops cell's account counts, and its account index: the op-mix kinds
//! ([`OP_NAMES`], `ops_spec`'s ops), then the dbench loadfile kinds
//! ([`LOADFILE_OP_NAMES`], `loadfile_spec`'s calls). One list, so a report, the account
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

/// The op kinds of a loadfile, in the order reports list them; named as dbench names
/// them in its summary. Their account indexes follow [`OP_NAMES`]'s.
pub const LOADFILE_OP_NAMES: &[&str] = &[
    "NTCreateX",
    "Close",
    "Rename",
    "Unlink",
    "Deltree",
    "Mkdir",
    "Rmdir",
    "Qpathinfo",
    "Qfileinfo",
    "Qfsinfo",
    "Sfileinfo",
    "Find",
    "WriteX",
    "ReadX",
    "LockX",
    "UnlockX",
    "Flush",
];

/// Account indexes: the op-mix kinds ([`OP_NAMES`]), then the loadfile kinds.
pub const KIND_COUNT: usize = OP_NAMES.len() + LOADFILE_OP_NAMES.len();

/// The name of account index `k` (an op-mix kind or a loadfile kind).
pub fn kind_name(k: usize) -> &'static str {
    OP_NAMES.get(k).copied().unwrap_or_else(|| LOADFILE_OP_NAMES[k - OP_NAMES.len()])
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_delay_index_names_delay() {
        assert_eq!(super::OP_NAMES[super::DELAY_KIND], "delay");
    }
}
