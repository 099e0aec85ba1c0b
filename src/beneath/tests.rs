//! Both resolvers against the same hostile trees: a link in the middle, a link at
//! the end, `..`, absolute paths, a directory swapped for a link (once, and in a
//! loop while paths are being opened). Every case runs with `openat2` and with
//! the fd walk forced, and the two must give the same answer.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use super::*;

const BOTH: [Resolver; 2] = [Resolver::Openat2, Resolver::FdWalk];

fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

/// `<tmp>/root` holding `sub/`, `file`, and links `esc -> ../outside`, `abs -> <tmp>/outside`,
/// `in -> sub`, `flink -> file`; `<tmp>/outside/b/keep` is what must never be reached.
struct Tree {
    tmp: tempfile::TempDir,
    root: OwnedFd,
}

impl Tree {
    fn new() -> Tree {
        let tmp = tempfile::tempdir().unwrap();
        let (root, outside) = (tmp.path().join("root"), tmp.path().join("outside"));
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(outside.join("b")).unwrap();
        std::fs::write(outside.join("b/keep"), b"k").unwrap();
        std::fs::write(root.join("file"), b"f").unwrap();
        std::os::unix::fs::symlink("../outside", root.join("esc")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("abs")).unwrap();
        std::os::unix::fs::symlink("sub", root.join("in")).unwrap();
        std::os::unix::fs::symlink("file", root.join("flink")).unwrap();
        let fd = open_dir(&root).unwrap();
        Tree { tmp, root: fd }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.tmp.path().join("root").join(rel)
    }

    /// Everything under `outside`, which must stay exactly `b` and `b/keep`.
    fn outside(&self) -> Vec<PathBuf> {
        fn walk(p: &Path, out: &mut Vec<PathBuf>) {
            for e in std::fs::read_dir(p).unwrap().flatten() {
                out.push(e.path());
                if e.file_type().unwrap().is_dir() {
                    walk(&e.path(), out);
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.tmp.path().join("outside"), &mut out);
        out.sort();
        out
    }

    fn assert_outside_untouched(&self) {
        let o = self.tmp.path().join("outside");
        assert_eq!(self.outside(), vec![o.join("b"), o.join("b/keep")]);
        assert_eq!(std::fs::read(o.join("b/keep")).unwrap(), b"k");
    }
}

/// The errno of an open, or 0 when it succeeded.
fn errno(r: std::io::Result<OwnedFd>) -> i32 {
    r.map_or_else(|e| e.raw_os_error().unwrap_or(-1), |_| 0)
}

#[test]
fn the_two_resolvers_give_the_same_answer_for_every_hostile_path() {
    use libc::{O_DIRECTORY, O_NOFOLLOW, O_PATH, O_RDONLY, O_WRONLY};
    let t = Tree::new();
    let (dir, ro) = (O_RDONLY | O_DIRECTORY, O_RDONLY);
    #[rustfmt::skip]
    let cases: &[(&str, i32, i32)] = &[
        // Plain paths open.
        ("sub", dir, 0), ("file", ro, 0), ("sub", O_PATH | O_DIRECTORY, 0),
        // A link in the middle, relative, absolute or staying inside: refused.
        ("esc/b", dir, libc::ELOOP), ("abs/b/keep", ro, libc::ELOOP), ("in/x", ro, libc::ELOOP),
        ("esc/b", O_PATH | O_DIRECTORY, libc::ELOOP),
        // A link at the end: refused, or the kernel's O_NOFOLLOW answer when asked for.
        ("esc", dir, libc::ELOOP), ("flink", ro, libc::ELOOP), ("flink", O_WRONLY, libc::ELOOP),
        ("in", O_PATH | O_DIRECTORY, libc::ELOOP), ("flink", O_PATH, libc::ELOOP),
        ("esc", dir | O_NOFOLLOW, libc::ENOTDIR), ("flink", O_PATH | O_NOFOLLOW, 0),
        // A file on the way is not a directory.
        ("file/x", ro, libc::ENOTDIR),
        // `..`, absolute and non-plain paths never reach the kernel.
        ("..", dir, libc::EINVAL), ("../outside", dir, libc::EINVAL), ("sub/../sub", dir, libc::EINVAL),
        ("sub/../../outside/b/keep", ro, libc::EINVAL), ("/", dir, libc::EINVAL), ("/etc", dir, libc::EINVAL),
        ("", dir, libc::EINVAL), (".", dir, libc::EINVAL), ("./sub", dir, libc::EINVAL),
        ("sub//x", ro, libc::EINVAL), ("sub/", dir, libc::EINVAL),
        // Missing.
        ("sub/none", ro, libc::ENOENT), ("none/x", ro, libc::ENOENT),
    ];
    for &(path, flags, want) in cases {
        for r in BOTH {
            assert_eq!(errno(open_beneath(&t.root, &c(path), flags, 0, r)), want, "{r:?} {path} {flags:#o}");
        }
    }
    t.assert_outside_untouched();
}

#[test]
fn nothing_is_created_through_a_link_in_the_middle_or_at_the_end() {
    for r in BOTH {
        let t = Tree::new();
        create_excl(&t.root, &c("sub/new"), 0o600, r).unwrap();
        assert!(t.path("sub/new").is_file(), "{r:?}");
        for bad in ["esc/new", "abs/new", "abs/b/keep", "in/new"] {
            let e = create_excl(&t.root, &c(bad), 0o600, r).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::ELOOP), "{r:?} {bad}: {e}");
        }
        // O_EXCL never opens an existing name, a link there included.
        for existing in ["flink", "esc", "file", "sub/new"] {
            let e = create_excl(&t.root, &c(existing), 0o600, r).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::EEXIST), "{r:?} {existing}");
        }
        assert!(create_excl(&t.root, &c("../outside/new"), 0o600, r).is_err());
        assert!(create_excl(&t.root, &c(&t.tmp.path().join("outside/new").to_string_lossy()), 0o600, r).is_err());
        assert_eq!(std::fs::read(t.path("file")).unwrap(), b"f");
        t.assert_outside_untouched();
    }
}

#[test]
fn directories_are_made_and_renamed_only_beneath() {
    for r in BOTH {
        let t = Tree::new();
        mkdir_all_beneath(&t.root, &c("sub/x/y"), 0o755, r).unwrap();
        assert!(t.path("sub/x/y").is_dir(), "{r:?}");
        mkdir_all_beneath(&t.root, &c("sub/x/y"), 0o755, r).unwrap();
        assert_eq!(mkdir_beneath(&t.root, &c("sub/x"), 0o755, r).unwrap_err().raw_os_error(), Some(libc::EEXIST));
        for bad in ["esc/new", "abs/new/deeper", "in/x", "../new", "/new"] {
            assert!(mkdir_all_beneath(&t.root, &c(bad), 0o755, r).is_err(), "{r:?} {bad}");
            assert!(mkdir_beneath(&t.root, &c(bad), 0o755, r).is_err(), "{r:?} {bad}");
        }
        // rename: sources and destinations resolved beneath; a link at the destination is replaced.
        std::fs::write(t.path("sub/a"), b"a").unwrap();
        let e = rename_beneath(&t.root, &c("sub/a"), &c("esc/a"), r).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ELOOP), "{r:?}");
        assert!(rename_beneath(&t.root, &c("in/a"), &c("moved"), r).is_err(), "{r:?}");
        assert!(rename_beneath(&t.root, &c("sub/a"), &c("../a"), r).is_err(), "{r:?}");
        rename_beneath(&t.root, &c("sub/a"), &c("esc"), r).unwrap();
        assert_eq!(std::fs::read(t.path("esc")).unwrap(), b"a", "{r:?}: the link was replaced, not followed");
        t.assert_outside_untouched();
    }
}

#[test]
fn a_directory_swapped_for_a_link_is_never_followed() {
    for r in BOTH {
        let t = Tree::new();
        // A parent resolved before the swap stays the directory it was (now `moved`, inside).
        let (held, name) = parent_beneath(&t.root, &c("sub/x"), r).unwrap();
        let held = held.expect("sub/x has a parent");
        std::fs::rename(t.path("sub"), t.path("moved")).unwrap();
        std::os::unix::fs::symlink("../outside", t.path("sub")).unwrap();
        // SAFETY: valid fd and name.
        assert_eq!(unsafe { libc::mkdirat(held.as_raw_fd(), name.as_ptr(), 0o755) }, 0);
        assert!(t.path("moved/x").is_dir(), "{r:?}");
        // A path resolved after the swap meets the link and stops.
        assert_eq!(errno(create_excl(&t.root, &c("sub/b/new"), 0o600, r)), libc::ELOOP, "{r:?}");
        assert!(mkdir_all_beneath(&t.root, &c("sub/new"), 0o755, r).is_err(), "{r:?}");
        t.assert_outside_untouched();
    }
}

#[test]
fn a_directory_exchanged_with_a_link_in_a_loop_never_leads_outside() {
    for r in BOTH {
        let t = Tree::new();
        std::fs::create_dir(t.path("d")).unwrap();
        std::os::unix::fs::symlink("../outside/b", t.path("l")).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let swapper = {
            let (stop, root) = (stop.clone(), t.root.try_clone().unwrap());
            std::thread::spawn(move || {
                let (d, l) = (c("d"), c("l"));
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    // SAFETY: valid fd and names; RENAME_EXCHANGE swaps the two entries atomically.
                    unsafe {
                        libc::renameat2(
                            root.as_raw_fd(),
                            d.as_ptr(),
                            root.as_raw_fd(),
                            l.as_ptr(),
                            libc::RENAME_EXCHANGE,
                        )
                    };
                }
            })
        };
        let (mut made, mut refused) = (0, 0);
        for i in 0..2000 {
            match create_excl(&t.root, &c(&format!("d/f{i}")), 0o600, r) {
                Ok(_) => made += 1,
                Err(e) => {
                    // The walk may see the link, then the directory again when it asks what it met.
                    assert!(matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)), "{r:?}: {e}");
                    refused += 1;
                }
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        swapper.join().unwrap();
        assert_eq!(made + refused, 2000);
        let real = ["d", "l"].map(|n| t.path(n)).into_iter().find(|p| std::fs::symlink_metadata(p).unwrap().is_dir());
        let inside = std::fs::read_dir(real.unwrap()).unwrap().count();
        assert_eq!(inside, made, "{r:?}: every file made landed in the real directory");
        t.assert_outside_untouched();
    }
}

#[test]
fn an_atomic_write_replaces_a_planted_link_and_takes_only_names() {
    let t = Tree::new();
    write_replacing(&t.root, "flink", b"new").unwrap();
    assert_eq!(std::fs::read(t.path("file")).unwrap(), b"f", "the link's target was written through");
    assert_eq!(std::fs::read(t.path("flink")).unwrap(), b"new");
    assert!(!std::fs::symlink_metadata(t.path("flink")).unwrap().file_type().is_symlink());
    for bad in ["../x", "sub/x", "", ".", ".."] {
        assert!(write_replacing(&t.root, bad, b"").is_err(), "{bad}");
    }
    let leftovers = std::fs::read_dir(t.path("")).unwrap().flatten();
    assert!(leftovers.into_iter().all(|e| !e.file_name().to_string_lossy().starts_with(TMP_PREFIX)));
    t.assert_outside_untouched();
}
