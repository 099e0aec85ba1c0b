//! Trust::Untrusted rejects hostile archives with a clear error and writes
//! nothing outside the destination.

use std::io::Write;
use std::path::{Path, PathBuf};

use fsbench::workload::untar::{Resolver, Trust, UnpackLimits, UntarError, unpack_tar_gz};

/// One raw entry: name and link name bytes are written as given (no sanitising).
struct E<'a> {
    name: &'a [u8],
    kind: tar::EntryType,
    mode: u32,
    link: &'a [u8],
    data: Vec<u8>,
}

fn file(name: &[u8], data: &[u8]) -> E<'static> {
    E { name: name.to_vec().leak(), kind: tar::EntryType::Regular, mode: 0o644, link: b"", data: data.to_vec() }
}

fn link(name: &'static [u8], kind: tar::EntryType, target: &'static [u8]) -> E<'static> {
    E { name, kind, mode: 0o777, link: target, data: vec![] }
}

fn build(path: &Path, entries: &[E]) {
    let f = std::fs::File::create(path).unwrap();
    let gz = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
    let mut b = tar::Builder::new(gz);
    for e in entries {
        let mut h = tar::Header::new_gnu();
        h.as_gnu_mut().unwrap().name[..e.name.len()].copy_from_slice(e.name);
        h.as_gnu_mut().unwrap().linkname[..e.link.len()].copy_from_slice(e.link);
        h.set_entry_type(e.kind);
        h.set_mode(e.mode);
        h.set_size(e.data.len() as u64);
        h.set_mtime(1_046_113_539);
        h.set_cksum();
        b.append(&h, e.data.as_slice()).unwrap();
    }
    b.into_inner().unwrap().finish().unwrap().flush().unwrap();
}

/// A sandbox: `dest` to extract into, `outside` that must stay empty.
struct Sandbox {
    _d: tempfile::TempDir,
    root: PathBuf,
    dest: PathBuf,
    outside: PathBuf,
}

fn sandbox() -> Sandbox {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().to_path_buf();
    let (dest, outside) = (root.join("dest"), root.join("outside"));
    std::fs::create_dir(&dest).unwrap();
    std::fs::create_dir(&outside).unwrap();
    Sandbox { _d: d, root, dest, outside }
}

impl Sandbox {
    fn untar(&self, entries: &[E], limits: UnpackLimits) -> Result<(), UntarError> {
        let a = self.root.join("a.tar.gz");
        build(&a, entries);
        let r = unpack_tar_gz(&a, &self.dest, &Trust::Untrusted(limits)).map(|_| ());
        std::fs::remove_file(&a).unwrap();
        r
    }

    fn assert_nothing_outside(&self) {
        assert_eq!(
            std::fs::read_dir(&self.outside).unwrap().count(),
            0,
            "something was written to {}",
            self.outside.display()
        );
        let top: Vec<_> = std::fs::read_dir(&self.root).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(top.len(), 2, "unexpected entries next to the destination: {top:?}");
    }
}

fn expect_err(sb: &Sandbox, entries: &[E], limits: UnpackLimits, want: &str) {
    let e = sb.untar(entries, limits).expect_err("must be rejected");
    assert!(e.to_string().contains(want), "error `{e}` should mention `{want}`");
    sb.assert_nothing_outside();
}

#[test]
fn a_benign_archive_unpacks() {
    let sb = sandbox();
    sb.untar(
        &[
            file(b"d/a.c", b"int x;\n"),
            link(b"d/l", tar::EntryType::Symlink, b"a.c"),
            link(b"d/h", tar::EntryType::Link, b"d/a.c"),
        ],
        UnpackLimits::default(),
    )
    .unwrap();
    assert_eq!(std::fs::read(sb.dest.join("d/l")).unwrap(), b"int x;\n");
    assert_eq!(std::fs::read(sb.dest.join("d/h")).unwrap(), b"int x;\n");
}

#[test]
fn absolute_path_is_refused() {
    let sb = sandbox();
    let abs = sb.outside.join("pwned");
    expect_err(&sb, &[file(abs.as_os_str().as_encoded_bytes(), b"x")], UnpackLimits::default(), "absolute path");
}

#[test]
fn dotdot_is_refused() {
    let sb = sandbox();
    expect_err(&sb, &[file(b"../outside/pwned", b"x")], UnpackLimits::default(), "`..`");
}

#[test]
fn symlink_escape_then_write_through_it_is_refused() {
    let sb = sandbox();
    let target = sb.outside.as_os_str().as_encoded_bytes().to_vec().leak();
    expect_err(
        &sb,
        &[link(b"esc", tar::EntryType::Symlink, target), file(b"esc/pwned", b"x")],
        UnpackLimits::default(),
        "symlink",
    );
    expect_err(
        &sb,
        &[link(b"a/esc", tar::EntryType::Symlink, b"../../outside"), file(b"a/esc/pwned", b"x")],
        UnpackLimits::default(),
        "symlink target `../../outside` leaves the archive (from `a`)",
    );
}

/// Regression (security review): `l1 -> .` makes `l1/l1/.../l2` sit at the top, so a
/// target that lexically stays inside from the written path climbs out in fact. Nothing
/// is written through an archive's own links, so the chain is refused at its second link.
#[test]
fn a_chain_of_links_cannot_climb_out() {
    let sb = sandbox();
    expect_err(
        &sb,
        &[
            link(b"l1", tar::EntryType::Symlink, b"."),
            link(b"l1/l1/l1/l1/l2", tar::EntryType::Symlink, b"../../../../outside"),
        ],
        UnpackLimits::default(),
        "path goes through the symbolic link `l1`",
    );
}

#[test]
fn a_planted_symlink_cannot_lead_a_write_outside() {
    // Defence in depth: a symlink already in the destination (not from the
    // archive, so never checked) must not be followed out by openat2.
    for resolver in [Resolver::Openat2, Resolver::FdWalk] {
        planted_symlink_case(UnpackLimits { resolver, ..Default::default() });
    }
}

fn planted_symlink_case(limits: UnpackLimits) {
    let sb = sandbox();
    std::os::unix::fs::symlink(&sb.outside, sb.dest.join("pre")).unwrap();
    let e = sb.untar(&[file(b"pre/pwned", b"x")], limits).expect_err("must be rejected");
    assert!(matches!(e, UntarError::Fs { .. }), "{e}");
    // openat2 says ELOOP (RESOLVE_NO_SYMLINKS), the fd walk ENOTDIR (O_NOFOLLOW|O_DIRECTORY).
    let s = e.to_string();
    assert!(s.contains("os error 40") || s.contains("os error 20"), "{e}");
    sb.assert_nothing_outside();
}

#[test]
fn hardlink_escape_is_refused() {
    let sb = sandbox();
    std::fs::write(sb.outside.join("secret"), b"s").unwrap();
    let target = sb.outside.join("secret").as_os_str().as_encoded_bytes().to_vec().leak();
    let e = sb.untar(&[link(b"h", tar::EntryType::Link, target)], UnpackLimits::default()).unwrap_err();
    assert!(e.to_string().contains("absolute path"), "{e}");
    let e = sb.untar(&[link(b"h", tar::EntryType::Link, b"../outside/secret")], UnpackLimits::default()).unwrap_err();
    assert!(e.to_string().contains("`..`"), "{e}");
    // Through a planted symlink: the link's source is resolved beneath the root.
    std::os::unix::fs::symlink(&sb.outside, sb.dest.join("pre")).unwrap();
    let e = sb.untar(&[link(b"h", tar::EntryType::Link, b"pre/secret")], UnpackLimits::default()).unwrap_err();
    assert!(matches!(e, UntarError::Fs { .. }), "{e}");
    assert!(!sb.dest.join("h").exists());
    assert_eq!(
        std::fs::metadata(sb.outside.join("secret")).map(|m| std::os::unix::fs::MetadataExt::nlink(&m)).unwrap(),
        1
    );
}

#[test]
fn device_nodes_are_refused() {
    let sb = sandbox();
    let mut e = link(b"null", tar::EntryType::Char, b"");
    e.mode = 0o666;
    expect_err(&sb, &[e], UnpackLimits::default(), "device nodes");
    assert!(!sb.dest.join("null").exists());
}

#[test]
fn setuid_is_refused() {
    let sb = sandbox();
    let mut e = file(b"suid", b"#!/bin/sh\n");
    e.mode = 0o4755;
    expect_err(&sb, &[e], UnpackLimits::default(), "setuid");
    assert!(!sb.dest.join("suid").exists());
}

#[test]
fn entry_and_byte_caps_hold() {
    let sb = sandbox();
    let many: Vec<E> = (0..10).map(|i| file(format!("f{i}").as_bytes(), b"x")).collect();
    expect_err(&sb, &many, UnpackLimits { max_entries: 5, ..Default::default() }, "number of entries");
    let sb = sandbox();
    expect_err(
        &sb,
        &[file(b"big", &vec![0u8; 2 << 20])],
        UnpackLimits { max_bytes: 1 << 20, ..Default::default() },
        "total bytes",
    );
    assert!(!sb.dest.join("big").exists(), "the capped file is never created");
    let sb = sandbox();
    expect_err(&sb, &[file(b"a/b/c/d/e", b"x")], UnpackLimits { max_depth: 3, ..Default::default() }, "path depth");
}

#[test]
fn gzip_bomb_is_stopped() {
    // 64 MiB of zeros compress to ~64 KiB; many small entries each under the
    // per-file budget would still inflate without end, so the decoder itself stops.
    let sb = sandbox();
    let entries: Vec<E> = (0..64).map(|i| file(format!("z{i}").as_bytes(), &vec![0u8; 1 << 20])).collect();
    let limits = UnpackLimits { max_bytes: 4 << 20, max_entries: 100, ..Default::default() };
    let e = sb.untar(&entries, limits).unwrap_err();
    assert!(e.to_string().contains("total bytes") || e.to_string().contains("decompressed stream exceeds"), "{e}");
    sb.assert_nothing_outside();
    let written: u64 = std::fs::read_dir(&sb.dest).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).sum();
    assert!(written <= 4 << 20, "wrote {written} bytes past the cap");
}
