//! In-process untar produces the same tree as GNU `tar zxf`.

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use fsbench::workload::untar::{Trust, unpack_tar_gz};

use crate::support::{is_root, small_fixture};

/// Everything tar restores about an entry (owners only as root: GNU tar does not chown otherwise).
#[derive(Debug, PartialEq)]
struct Node {
    kind: &'static str,
    mode: u32,
    mtime: i64,
    owner: Option<(u32, u32)>,
    content: Vec<u8>,
    nlink: u64,
}

fn snapshot(root: &Path) -> BTreeMap<PathBuf, Node> {
    let mut out = BTreeMap::new();
    for e in walkdir::WalkDir::new(root).min_depth(1) {
        let e = e.unwrap();
        let m = e.path().symlink_metadata().unwrap();
        let ft = m.file_type();
        let (kind, content) = if ft.is_symlink() {
            ("symlink", std::fs::read_link(e.path()).unwrap().into_os_string().into_encoded_bytes())
        } else if ft.is_dir() {
            ("dir", Vec::new())
        } else {
            ("file", std::fs::read(e.path()).unwrap())
        };
        let mode = if ft.is_symlink() { 0 } else { m.permissions().mode() & 0o7777 };
        let node = Node {
            kind,
            mode,
            mtime: m.mtime(),
            owner: is_root().then(|| (m.uid(), m.gid())),
            content,
            nlink: if ft.is_dir() { 0 } else { m.nlink() },
        };
        out.insert(e.path().strip_prefix(root).unwrap().to_path_buf(), node);
    }
    out
}

fn gnu_tar_x_with(archive: &Path, dest: &Path, extra: &[&str]) {
    let st = Command::new("tar")
        .arg("zxf")
        .arg(archive)
        .args(extra)
        .current_dir(dest)
        .status()
        .expect("GNU tar is installed");
    assert!(st.success());
}

fn compare(archive: &Path) -> usize {
    compare_as(archive, &Trust::Own)
}

fn compare_as(archive: &Path, trust: &Trust) -> usize {
    let d = tempfile::tempdir().unwrap();
    let (gnu, ours) = (d.path().join("gnu"), d.path().join("ours"));
    std::fs::create_dir(&gnu).unwrap();
    std::fs::create_dir(&ours).unwrap();
    // Untrusted input never gets to choose owners or bypass the umask: GNU tar's
    // --no-same-owner --no-same-permissions is the same contract.
    let extra: &[&str] = if matches!(trust, Trust::Own) { &[] } else { &["--no-same-owner", "--no-same-permissions"] };
    gnu_tar_x_with(archive, &gnu, extra);
    unpack_tar_gz(archive, &ours, trust).unwrap();
    let (a, b) = (snapshot(&gnu), snapshot(&ours));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>(), "same entries");
    for (k, v) in &a {
        assert_eq!(v, &b[k], "entry {}", k.display());
    }
    a.len()
}

#[test]
fn fixture_extracts_identically_to_gnu_tar() {
    let n = compare(&small_fixture());
    assert_eq!(n, 276 + 20, "all files and directories of the small fixture");
}

/// The kernel fixture as untrusted input, through both resolvers, is GNU tar's tree too.
#[test]
fn fixture_as_untrusted_input_extracts_identically_to_gnu_tar() {
    use fsbench::workload::untar::{Resolver, UnpackLimits};
    for resolver in [Resolver::Openat2, Resolver::FdWalk] {
        let n = compare_as(&small_fixture(), &Trust::Untrusted(UnpackLimits { resolver, ..Default::default() }));
        assert_eq!(n, 276 + 20, "{resolver:?}");
    }
}

#[test]
fn links_modes_and_owners_extract_identically_to_gnu_tar() {
    // An archive made by GNU tar itself, with what the kernel fixture lacks:
    // symlinks, hard links, odd modes, foreign owners, a directory without its entry.
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("src");
    let t = src.join("tree");
    std::fs::create_dir_all(t.join("sub/deeper")).unwrap();
    std::fs::write(t.join("sub/a.c"), b"int main(void) { return 0; }\n").unwrap();
    std::fs::write(t.join("script"), b"#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(t.join("script"), std::fs::Permissions::from_mode(0o750)).unwrap();
    std::fs::write(t.join("sub/deeper/ro"), vec![b'x'; 100_000]).unwrap();
    std::fs::set_permissions(t.join("sub/deeper/ro"), std::fs::Permissions::from_mode(0o444)).unwrap();
    std::fs::set_permissions(t.join("sub/deeper"), std::fs::Permissions::from_mode(0o711)).unwrap();
    std::os::unix::fs::symlink("sub/a.c", t.join("link")).unwrap();
    std::fs::hard_link(t.join("sub/a.c"), t.join("hard")).unwrap();
    let archive = d.path().join("t.tar.gz");
    let mut cmd = Command::new("tar");
    cmd.arg("czf").arg(&archive).arg("--mtime=2003-02-24 19:05:39").arg("tree");
    if is_root() {
        cmd.args(["--owner=1234", "--group=4321", "--numeric-owner"]);
    }
    assert!(cmd.current_dir(&src).status().unwrap().success());
    compare(&archive);
}

/// A real tarball with in-tree `../` links (as kernel trees and /usr/include have),
/// made by GNU tar, extracts as untrusted input to the same tree GNU tar makes,
/// through openat2 and through the fd-walk fallback alike.
#[test]
fn untrusted_archive_with_in_tree_dotdot_links_extracts_like_gnu_tar() {
    use fsbench::workload::untar::{Resolver, UnpackLimits};
    let d = tempfile::tempdir().unwrap();
    let archive = in_tree_links_tarball(d.path());
    for resolver in [Resolver::Openat2, Resolver::FdWalk] {
        let e = tempfile::tempdir().unwrap();
        let (gnu, ours) = (e.path().join("gnu"), e.path().join("ours"));
        std::fs::create_dir(&gnu).unwrap();
        std::fs::create_dir(&ours).unwrap();
        gnu_tar_x_with(&archive, &gnu, &["--no-same-owner", "--no-same-permissions"]);
        let limits = UnpackLimits { resolver, ..Default::default() };
        let stats = unpack_tar_gz(&archive, &ours, &Trust::Untrusted(limits)).unwrap();
        assert_eq!(stats.symlinks, 4, "{resolver:?}");
        let (a, b) = (snapshot(&gnu), snapshot(&ours));
        assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>(), "{resolver:?}: same entries");
        for (k, v) in &a {
            assert_eq!(v, &b[k], "{resolver:?}: entry {}", k.display());
        }
        assert_eq!(std::fs::read(ours.join("linux/include/asm/io.h")).unwrap(), b"/* x86 io */\n");
    }
}

/// `linux/` with `include/asm -> ../arch/x86/include/asm` and friends, packed by GNU tar.
pub fn in_tree_links_tarball(dir: &Path) -> PathBuf {
    let src = dir.join("src");
    let t = src.join("linux");
    for sub in ["include/asm-generic", "arch/x86/include/asm", "arch/arm/boot/dts", "scripts/dtc/include-prefixes"] {
        std::fs::create_dir_all(t.join(sub)).unwrap();
    }
    std::fs::write(t.join("README"), b"Linux kernel\n").unwrap();
    std::fs::write(t.join("include/asm-generic/io.h"), b"/* generic io */\n").unwrap();
    std::fs::write(t.join("arch/x86/include/asm/io.h"), b"/* x86 io */\n").unwrap();
    std::fs::write(t.join("arch/arm/boot/dts/board.dts"), b"/dts-v1/;\n").unwrap();
    std::os::unix::fs::symlink("../arch/x86/include/asm", t.join("include/asm")).unwrap();
    std::os::unix::fs::symlink("../../../arch/arm/boot/dts", t.join("scripts/dtc/include-prefixes/arm")).unwrap();
    std::os::unix::fs::symlink("../README", t.join("include/README")).unwrap();
    std::os::unix::fs::symlink("asm-generic/../asm-generic/io.h", t.join("include/io.h")).unwrap();
    std::fs::hard_link(t.join("README"), t.join("COPYING")).unwrap();
    let archive = dir.join("linux-links.tar.gz");
    let st = Command::new("tar")
        .arg("czf")
        .arg(&archive)
        .arg("--mtime=2003-02-24 19:05:39")
        .args(["--owner=0", "--group=0", "--numeric-owner", "--mode=go-w", "linux"])
        .current_dir(&src)
        .status()
        .unwrap();
    assert!(st.success());
    archive
}
