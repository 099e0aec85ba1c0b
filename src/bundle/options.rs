//! Allow-lists for the mkfs arguments and mount options a bundle may carry.
//!
//! A bundle is someone else's file: its `[filesystems.<fs>] mkfs` and `mount`
//! may not name files or devices in any form (`/dev/sdb`, a relative file name,
//! `LABEL=`, `UUID=`, `PARTUUID=`, `device=`, `logdev=`, `journal_path=`,
//! `mke2fs -d DIR`, `mkfs.xfs -p FILE`, `mkfs.btrfs --rootdir DIR`, an undo
//! file, a bad-blocks list...). Rather than chase every way to name one, only
//! options fsbench knows to be safe are admitted, per mkfs tool and filesystem,
//! each value checked by shape (a number, a size, one of a few words); the rest
//! is refused with the option named. A user who trusts the scenario can always
//! run it with `fsbench run`, where nothing is filtered.
//!
//! The tables are chosen by the filesystem's TYPE (`ext4` for a variant
//! `[filesystems.ext4-nodelalloc] type = "ext4"`): the type is what mkfs and
//! mount(2) receive, so it is what the options are judged against.
//!
//! No panic words: an option that turns a filesystem error into a host panic
//! (`errors=panic`, `fatal_errors=panic`, `mke2fs -e panic`) would let the
//! bundle's workload, which can reach such an error, take the whole machine
//! down. They are absent from the tables, and [`mentions_panic`] refuses any
//! option or value spelling `panic` before a table is consulted, so a table
//! edited later cannot let one back in.

/// What a value may look like.
#[derive(Debug, Clone, Copy)]
enum Val {
    /// No value (`noload`, `-j`).
    None,
    /// Decimal digits.
    Num,
    /// Digits with an optional size suffix (`4k`, `64m`, `1g`).
    Size,
    /// One of these words.
    Word(&'static [&'static str]),
    /// A comma-separated list of `key[=value]` sub-options from this table.
    Sub(&'static [(&'static str, Val)]),
    /// A comma-separated list of feature names (`^` to disable), letters, digits and `_`.
    Features,
}

const BOOL: Val = Val::Word(&["0", "1"]);

/// Mount options every filesystem takes (the VFS's own).
const MOUNT_GENERIC: &[(&str, Val)] = &[
    ("ro", Val::None),
    ("rw", Val::None),
    ("sync", Val::None),
    ("async", Val::None),
    ("dirsync", Val::None),
    ("atime", Val::None),
    ("noatime", Val::None),
    ("relatime", Val::None),
    ("norelatime", Val::None),
    ("strictatime", Val::None),
    ("lazytime", Val::None),
    ("nolazytime", Val::None),
    ("diratime", Val::None),
    ("nodiratime", Val::None),
    ("nosuid", Val::None),
    ("nodev", Val::None),
    ("noexec", Val::None),
    ("iversion", Val::None),
    ("noiversion", Val::None),
    ("acl", Val::None),
    ("noacl", Val::None),
    ("user_xattr", Val::None),
    ("nouser_xattr", Val::None),
    ("quota", Val::None),
    ("noquota", Val::None),
    ("usrquota", Val::None),
    ("grpquota", Val::None),
    ("prjquota", Val::None),
];

const MOUNT_EXT: &[(&str, Val)] = &[
    ("barrier", Val::None),
    ("barrier", BOOL),
    ("nobarrier", Val::None),
    ("noload", Val::None),
    ("norecovery", Val::None),
    ("data", Val::Word(&["journal", "ordered", "writeback"])),
    ("data_err", Val::Word(&["abort", "ignore"])),
    ("commit", Val::Num),
    ("delalloc", Val::None),
    ("nodelalloc", Val::None),
    ("journal_checksum", Val::None),
    ("nojournal_checksum", Val::None),
    ("journal_async_commit", Val::None),
    ("journal_ioprio", Val::Num),
    ("discard", Val::None),
    ("nodiscard", Val::None),
    ("dioread_nolock", Val::None),
    ("dioread_lock", Val::None),
    ("auto_da_alloc", Val::None),
    ("noauto_da_alloc", Val::None),
    ("stripe", Val::Num),
    ("inode_readahead_blks", Val::Num),
    ("max_batch_time", Val::Num),
    ("min_batch_time", Val::Num),
    ("errors", Val::Word(&["continue", "remount-ro"])),
    ("i_version", Val::None),
    ("block_validity", Val::None),
    ("noblock_validity", Val::None),
    ("init_itable", Val::Num),
    ("noinit_itable", Val::None),
    ("mb_optimize_scan", BOOL),
    ("jqfmt", Val::Word(&["vfsold", "vfsv0", "vfsv1"])),
    ("resuid", Val::Num),
    ("resgid", Val::Num),
    ("sb", Val::Num),
    ("grpid", Val::None),
    ("bsdgroups", Val::None),
    ("nogrpid", Val::None),
    ("sysvgroups", Val::None),
    ("minixdf", Val::None),
    ("bsddf", Val::None),
    ("oldalloc", Val::None),
    ("orlov", Val::None),
    ("debug", Val::None),
    ("nombcache", Val::None),
];

const MOUNT_XFS: &[(&str, Val)] = &[
    ("allocsize", Val::Size),
    ("attr2", Val::None),
    ("noattr2", Val::None),
    ("discard", Val::None),
    ("nodiscard", Val::None),
    ("filestreams", Val::None),
    ("grpid", Val::None),
    ("bsdgroups", Val::None),
    ("nogrpid", Val::None),
    ("sysvgroups", Val::None),
    ("ikeep", Val::None),
    ("noikeep", Val::None),
    ("inode32", Val::None),
    ("inode64", Val::None),
    ("largeio", Val::None),
    ("nolargeio", Val::None),
    ("logbufs", Val::Num),
    ("logbsize", Val::Size),
    ("noalign", Val::None),
    ("norecovery", Val::None),
    ("nouuid", Val::None),
    ("sunit", Val::Num),
    ("swidth", Val::Num),
    ("swalloc", Val::None),
    ("wsync", Val::None),
    ("uquota", Val::None),
    ("gquota", Val::None),
    ("pquota", Val::None),
    ("uqnoenforce", Val::None),
    ("gqnoenforce", Val::None),
    ("pqnoenforce", Val::None),
    ("qnoenforce", Val::None),
];

const MOUNT_BTRFS: &[(&str, Val)] = &[
    ("compress", Val::None),
    ("compress", Val::Word(&["zlib", "lzo", "zstd", "no"])),
    ("compress-force", Val::Word(&["zlib", "lzo", "zstd"])),
    ("space_cache", Val::None),
    ("space_cache", Val::Word(&["v1", "v2"])),
    ("nospace_cache", Val::None),
    ("ssd", Val::None),
    ("nossd", Val::None),
    ("ssd_spread", Val::None),
    ("nossd_spread", Val::None),
    ("discard", Val::None),
    ("discard", Val::Word(&["sync", "async"])),
    ("nodiscard", Val::None),
    ("autodefrag", Val::None),
    ("noautodefrag", Val::None),
    ("commit", Val::Num),
    ("datacow", Val::None),
    ("nodatacow", Val::None),
    ("datasum", Val::None),
    ("nodatasum", Val::None),
    ("flushoncommit", Val::None),
    ("noflushoncommit", Val::None),
    ("max_inline", Val::Size),
    ("thread_pool", Val::Num),
    ("barrier", Val::None),
    ("nobarrier", Val::None),
    ("treelog", Val::None),
    ("notreelog", Val::None),
    ("clear_cache", Val::None),
    ("enospc_debug", Val::None),
    ("noenospc_debug", Val::None),
    ("fatal_errors", Val::Word(&["bug"])),
];

/// mke2fs (`mkfs.ext2/3/4`): no `-d` (populates from a host directory), `-l`
/// (bad-blocks file), `-z` (undo file), `-J device=`, `-L`/`-U` (names the
/// filesystem carries on the host's udev), nor positional arguments (devices).
const MKFS_EXT: &[(&str, Val)] = &[
    ("-b", Val::Size),
    ("-C", Val::Size),
    ("-i", Val::Num),
    ("-I", Val::Num),
    ("-j", Val::None),
    ("-J", Val::Sub(&[("size", Val::Num)])),
    ("-m", Val::Num),
    ("-N", Val::Num),
    ("-g", Val::Num),
    ("-G", Val::Num),
    ("-r", Val::Word(&["0", "1"])),
    ("-e", Val::Word(&["continue", "remount-ro"])),
    ("-O", Val::Features),
    ("-o", Val::Word(&["Linux", "GNU", "hurd", "FreeBSD", "Lites"])),
    ("-t", Val::Word(&["ext2", "ext3", "ext4"])),
    ("-T", Val::Word(&["default", "floppy", "small", "news", "largefile", "largefile4", "huge", "big", "hurd"])),
    (
        "-E",
        Val::Sub(&[
            ("lazy_itable_init", BOOL),
            ("lazy_journal_init", BOOL),
            ("stride", Val::Num),
            ("stripe_width", Val::Num),
            ("stripe-width", Val::Num),
            ("resize", Val::Num),
            ("packed_meta_blocks", BOOL),
            ("num_backup_sb", Val::Word(&["0", "1", "2"])),
            ("discard", Val::None),
            ("nodiscard", Val::None),
            ("quotatype", Val::Word(&["usrquota", "grpquota", "prjquota", "usrquota:grpquota"])),
            ("test_fs", Val::None),
            ("orphan_file_size", Val::Size),
            ("assume_storage_prezeroed", BOOL),
        ]),
    ),
    ("-F", Val::None),
    ("-q", Val::None),
    ("-v", Val::None),
    ("-n", Val::None),
    ("-D", Val::None),
    ("-K", Val::None),
];

/// mkfs.xfs: no `-p` (protofile: host files), `-L`, `logdev=`/`rtdev=`/`name=`/`file`.
const MKFS_XFS: &[(&str, Val)] = &[
    ("-b", Val::Sub(&[("size", Val::Size)])),
    (
        "-m",
        Val::Sub(&[
            ("crc", BOOL),
            ("finobt", BOOL),
            ("reflink", BOOL),
            ("rmapbt", BOOL),
            ("bigtime", BOOL),
            ("inobtcount", BOOL),
        ]),
    ),
    (
        "-d",
        Val::Sub(&[
            ("agcount", Val::Num),
            ("agsize", Val::Size),
            ("su", Val::Size),
            ("sw", Val::Num),
            ("sunit", Val::Num),
            ("swidth", Val::Num),
            ("size", Val::Size),
        ]),
    ),
    (
        "-i",
        Val::Sub(&[
            ("size", Val::Size),
            ("maxpct", Val::Num),
            ("align", BOOL),
            ("sparse", BOOL),
            ("attr", Val::Word(&["1", "2"])),
            ("projid32bit", BOOL),
            ("nrext64", BOOL),
        ]),
    ),
    (
        "-l",
        Val::Sub(&[
            ("size", Val::Size),
            ("version", Val::Word(&["1", "2"])),
            ("sunit", Val::Num),
            ("su", Val::Size),
            ("lazy-count", BOOL),
            ("internal", Val::None),
            ("internal", BOOL),
        ]),
    ),
    ("-n", Val::Sub(&[("size", Val::Size), ("version", Val::Word(&["2", "ci"])), ("ftype", BOOL)])),
    ("-s", Val::Sub(&[("size", Val::Size)])),
    ("-f", Val::None),
    ("-K", Val::None),
    ("-q", Val::None),
    ("-N", Val::None),
];

/// mkfs.btrfs: no positional arguments (more devices), `-r/--rootdir` (host files), `-L`, `-U`.
const MKFS_BTRFS: &[(&str, Val)] = &[
    ("-d", Val::Word(&["single", "dup", "raid0", "raid1", "raid10", "raid5", "raid6"])),
    ("-m", Val::Word(&["single", "dup", "raid0", "raid1", "raid10", "raid5", "raid6"])),
    ("-n", Val::Size),
    ("-s", Val::Size),
    ("-b", Val::Size),
    ("-O", Val::Features),
    ("-R", Val::Features),
    ("--csum", Val::Word(&["crc32c", "xxhash", "sha256", "blake2"])),
    ("-K", Val::None),
    ("-f", Val::None),
    ("-q", Val::None),
    ("-M", Val::None),
];

/// The mount options of filesystem type `fs_type` beyond [`MOUNT_GENERIC`].
fn mount_table(fs_type: &str) -> &'static [(&'static str, Val)] {
    match fs_type {
        "ext2" | "ext3" | "ext4" => MOUNT_EXT,
        "xfs" => MOUNT_XFS,
        "btrfs" => MOUNT_BTRFS,
        _ => &[],
    }
}

/// The arguments `mkfs.<fs_type>` may take; `None`: fsbench knows none to be safe.
fn mkfs_table(fs_type: &str) -> Option<&'static [(&'static str, Val)]> {
    match fs_type {
        "ext2" | "ext3" | "ext4" => Some(MKFS_EXT),
        "xfs" => Some(MKFS_XFS),
        "btrfs" => Some(MKFS_BTRFS),
        _ => None,
    }
}

fn is_num(v: &str) -> bool {
    !v.is_empty() && v.len() <= 20 && v.bytes().all(|b| b.is_ascii_digit())
}

fn value_ok(rule: Val, v: Option<&str>) -> bool {
    match (rule, v) {
        (Val::None, None) => true,
        (Val::None, Some(_)) | (_, None) => false,
        (Val::Num, Some(v)) => is_num(v),
        (Val::Size, Some(v)) => {
            let digits = v.trim_end_matches(|c: char| "kKmMgGtTbs".contains(c));
            is_num(digits) && v.len() - digits.len() <= 1
        }
        (Val::Word(words), Some(v)) => words.contains(&v),
        (Val::Features, Some(v)) => {
            !v.is_empty()
                && v.split(',').all(|f| {
                    let f = f.strip_prefix('^').unwrap_or(f);
                    !f.is_empty()
                        && f.len() <= 32
                        && f.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
                })
        }
        (Val::Sub(table), Some(v)) => !v.is_empty() && v.split(',').all(|o| option_ok(table, o)),
    }
}

/// `key[=value]` against a table (the same key may appear with and without a value).
fn option_ok(table: &[(&str, Val)], opt: &str) -> bool {
    let (k, v) = match opt.split_once('=') {
        Some((k, v)) => (k, Some(v)),
        None => (opt, None),
    };
    table.iter().any(|(name, rule)| *name == k && value_ok(*rule, v))
}

/// Whether an option or argument spells `panic` anywhere (`errors=panic`, `-epanic`,
/// `fatal_errors=PANIC`): never from a bundle, whatever the tables say.
pub fn mentions_panic(opt: &str) -> bool {
    opt.to_ascii_lowercase().contains("panic")
}

/// How messages name a filesystem: `ext4`, or `ext4-nodelalloc (type ext4)` for a variant.
fn shown(name: &str, fs_type: &str) -> String {
    if name == fs_type { name.to_string() } else { format!("{name} (type {fs_type})") }
}

const PANIC_WHY: &str = "it turns a filesystem error the workload can reach into a panic of the whole machine";

/// Check one mount option of the filesystem `name` of type `fs_type` (the table is the
/// type's); `Err` says why it is refused.
pub fn check_mount_option(name: &str, fs_type: &str, opt: &str) -> Result<(), String> {
    let fs = shown(name, fs_type);
    let opt_shown = crate::model::UntrustedText::escape(opt, crate::model::TextFormat::Terminal);
    if mentions_panic(opt) {
        return Err(format!("refusing mount option `{opt_shown}` of filesystem {fs}: {PANIC_WHY}"));
    }
    if option_ok(MOUNT_GENERIC, opt) || option_ok(mount_table(fs_type), opt) {
        return Ok(());
    }
    Err(format!(
        "refusing mount option `{opt_shown}` of filesystem {fs}: not among the options a bundle may set for {fs_type} \
         (options naming files or devices, such as device=, logdev=, journal_path=, usrjquota=, LABEL= or UUID=, are never allowed)"
    ))
}

/// Check the mkfs arguments of the filesystem `name` of type `fs_type` (the table is
/// `mkfs.<fs_type>`'s); `Err` names the refused argument.
pub fn check_mkfs_args(name: &str, fs_type: &str, args: &[String]) -> Result<(), String> {
    let fs = shown(name, fs_type);
    if let Some(a) = args.iter().find(|a| mentions_panic(a)) {
        return Err(format!(
            "refusing mkfs argument `{}` of filesystem {fs}: {PANIC_WHY}",
            crate::model::UntrustedText::escape(a, crate::model::TextFormat::Terminal)
        ));
    }
    let refuse = |a: &str, why: &str| {
        Err(format!(
            "refusing mkfs argument `{}` of filesystem {fs}: {why}; a bundle's mkfs arguments may not name files or devices \
             (review the scenario and run it yourself with `fsbench run` if you trust it)",
            crate::model::UntrustedText::escape(a, crate::model::TextFormat::Terminal)
        ))
    };
    let Some(table) = mkfs_table(fs_type) else {
        return match args.first() {
            None => Ok(()),
            Some(a) => refuse(a, &format!("fsbench knows no safe mkfs.{fs_type} arguments")),
        };
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        // `-Evalue` and `--csum=value` spellings as well as `-E value`.
        let (flag, inline) = if let Some((f, v)) = a.split_once('=').filter(|_| a.starts_with("--")) {
            (f.to_string(), Some(v.to_string()))
        } else if a.len() > 2 && a.starts_with('-') && !a.starts_with("--") {
            (a[..2].to_string(), Some(a[2..].to_string()))
        } else {
            (a.clone(), None)
        };
        let Some((_, rule)) = table.iter().find(|(f, _)| *f == flag) else {
            let why =
                if a.starts_with('-') { "not an argument fsbench knows to be safe" } else { "a file or device name" };
            return refuse(a, why);
        };
        match rule {
            Val::None if inline.is_none() => {}
            Val::None => return refuse(a, "takes no value"),
            rule => {
                let value = match inline {
                    Some(v) => v,
                    None => match it.next() {
                        Some(v) => v.clone(),
                        None => return refuse(a, "needs a value"),
                    },
                };
                if !value_ok(*rule, Some(&value)) {
                    return refuse(&format!("{flag} {value}"), "a value fsbench does not know to be safe");
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn the_shipped_scenarios_options_are_allowed() {
        check_mkfs_args("ext4", "ext4", &s(&["-E", "lazy_itable_init=0,lazy_journal_init=0"])).unwrap();
        check_mkfs_args("xfs", "xfs", &s(&["-f", "-m", "crc=1,reflink=0"])).unwrap();
        check_mkfs_args("btrfs", "btrfs", &s(&["-f", "-O", "^no-holes"])).unwrap();
        check_mkfs_args("btrfs", "btrfs", &s(&["-f", "-m", "single", "--csum=xxhash"])).unwrap();
        for o in ["usrquota", "grpquota", "barrier=0", "noload", "nodelalloc", "data=writeback", "commit=30"] {
            check_mount_option("ext4", "ext4", o).unwrap();
        }
        check_mount_option("xfs", "xfs", "logbsize=256k").unwrap();
        check_mount_option("btrfs", "btrfs", "compress=zstd").unwrap();
    }

    #[test]
    fn anything_naming_a_file_or_device_is_refused_by_name() {
        for (fs, args, named) in [
            ("btrfs", &["-f", "/dev/loop0"][..], "`/dev/loop0`"),
            ("btrfs", &["--rootdir", "/etc"], "`--rootdir`"),
            ("ext4", &["-d", "/root"], "`-d`"),
            ("ext4", &["-d/root"], "`-d/root`"),
            ("ext4", &["-z", "undo"], "`-z`"),
            ("ext4", &["-J", "device=/dev/sdb"], "`-J device=/dev/sdb`"),
            ("ext4", &["-L", "root"], "`-L`"),
            ("ext4", &["image.img"], "a file or device name"),
            ("xfs", &["-l", "logdev=/dev/sdc"], "`-l logdev=/dev/sdc`"),
            ("xfs", &["-p", "proto"], "`-p`"),
            ("f2fs", &["-l", "x"], "knows no safe mkfs.f2fs"),
        ] {
            let e = check_mkfs_args(fs, fs, &s(args)).unwrap_err();
            assert!(e.contains(named), "{fs} {args:?}: {e}");
        }
        for (fs, o) in [
            ("ext4", "journal_path=/dev/sdb"),
            ("ext4", "journal_dev=2049"),
            ("ext4", "usrjquota=aquota.user"),
            ("xfs", "logdev=/dev/sdc"),
            ("xfs", "rtdev=/dev/sdd"),
            ("btrfs", "device=/dev/sdb"),
            ("btrfs", "subvol=x"),
            ("ext4", "LABEL=root"),
            ("ext4", "UUID=1234"),
            ("ext4", "PARTUUID=1234"),
            ("ext4", "data=../x"),
        ] {
            let e = check_mount_option(fs, fs, o).unwrap_err();
            assert!(e.contains(&format!("`{o}`")), "{e}");
        }
    }

    /// New users' report: a variant was judged by its name, so `ext4-nodelalloc` had no
    /// allow-list at all; it is judged by its type, and refused exactly as its type would be.
    #[test]
    fn a_variant_is_judged_by_its_type() {
        check_mkfs_args("ext4-nodelalloc", "ext4", &s(&["-E", "lazy_itable_init=0"])).unwrap();
        check_mount_option("ext4-nodelalloc", "ext4", "nodelalloc").unwrap();
        check_mount_option("xfs-big-log", "xfs", "logbsize=256k").unwrap();
        let e = check_mkfs_args("ext4-evil", "ext4", &s(&["-d", "/root"])).unwrap_err();
        assert!(e.contains("`-d` of filesystem ext4-evil (type ext4)"), "{e}");
        let e = check_mount_option("ext4-evil", "ext4", "journal_path=/dev/sdb").unwrap_err();
        assert!(e.contains("of filesystem ext4-evil (type ext4)"), "{e}");
        // A variant named like a type is still judged by the type it makes.
        assert!(check_mount_option("xfs", "ext4", "logbsize=256k").is_err());
        assert!(check_mkfs_args("f2fs-x", "f2fs", &s(&["-l", "x"])).unwrap_err().contains("mkfs.f2fs"));
    }

    /// Security review, round two: allow-listed options turned any filesystem error into a host panic.
    #[test]
    fn panic_words_are_refused_in_every_spelling() {
        for (fs, o) in [
            ("ext4", "errors=panic"),
            ("ext2", "errors=panic"),
            ("ext3", "errors=PANIC"),
            ("btrfs", "fatal_errors=panic"),
            ("xfs", "panic"),
        ] {
            let e = check_mount_option(fs, fs, o).unwrap_err();
            assert!(e.contains("panic of the whole machine"), "{o}: {e}");
        }
        for (fs, args) in [
            ("ext4", &["-e", "panic"][..]),
            ("ext4", &["-epanic"]),
            ("ext2", &["-F", "-e", "panic"]),
            ("btrfs", &["-O", "panic"]),
        ] {
            let e = check_mkfs_args(fs, fs, &s(args)).unwrap_err();
            assert!(e.contains("panic of the whole machine"), "{args:?}: {e}");
        }
        check_mount_option("ext4", "ext4", "errors=remount-ro").unwrap();
        check_mkfs_args("ext4", "ext4", &s(&["-e", "remount-ro"])).unwrap();
    }

    /// The tables themselves carry no panic word, so the guard above is a second line.
    #[test]
    fn no_table_lists_a_panic_word() {
        fn words(rule: Val) -> Vec<&'static str> {
            match rule {
                Val::Word(w) => w.to_vec(),
                Val::Sub(t) => t.iter().flat_map(|(k, v)| std::iter::once(*k).chain(words(*v))).collect(),
                _ => Vec::new(),
            }
        }
        for table in [MOUNT_GENERIC, MOUNT_EXT, MOUNT_XFS, MOUNT_BTRFS, MKFS_EXT, MKFS_XFS, MKFS_BTRFS] {
            for (k, v) in table {
                for w in std::iter::once(*k).chain(words(*v)) {
                    assert!(!mentions_panic(w), "`{k}` allows `{w}`");
                }
            }
        }
    }
}
