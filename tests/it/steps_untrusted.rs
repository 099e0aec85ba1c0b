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
    // Through a planted symlink: only earlier entries of the archive may be linked to (and
    // the link's source would be resolved beneath the root anyway).
    std::os::unix::fs::symlink(&sb.outside, sb.dest.join("pre")).unwrap();
    let e = sb.untar(&[link(b"h", tar::EntryType::Link, b"pre/secret")], UnpackLimits::default()).unwrap_err();
    assert!(e.to_string().contains("hard link target `pre/secret` is not an earlier entry of the archive"), "{e}");
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

/// The hostile archive of the review (security review, round two): `d/l1 -> ../y` and
/// `d/l2 -> l1/../..` each stay inside when every component is taken for a directory,
/// but `l2` really is the directory above the destination. `name` (where the next
/// iteration looks for its archive) then becomes a link through the chain to a host file.
fn chained_attack(name: &'static [u8]) -> Vec<E<'static>> {
    let through: &'static [u8] = b"d/l2/outside/host.tar.gz";
    vec![
        link(b"d/l1", tar::EntryType::Symlink, b"../y"),
        link(b"d/l2", tar::EntryType::Symlink, b"l1/../.."),
        link(name, tar::EntryType::Symlink, through),
    ]
}

/// Two iterations of `untar` of an untrusted archive, with its archive in `archive_dir`.
fn two_iterations(dest: &Path, archive_dir: &Path, name: &str) -> Result<(), fsbench::workload::steps::StepsError> {
    use fsbench::scenario::{Step, StepsSpec};
    use fsbench::workload::steps::{StepsRun, run};
    let spec = StepsSpec { disturbance: None, iterations: 2, steps: vec![Step::Untar { archive: name.into() }] };
    let trust = Trust::Untrusted(UnpackLimits::default());
    let never = || false;
    let r = StepsRun {
        spec: &spec,
        target: dest,
        archive_dir,
        cancel: &never,
        trust: &trust,
        run_root: std::process::id(),
    };
    run(&r).map(|_| ())
}

/// Across two iterations, the chained links are refused in the first, whether the archive
/// sits at the top of the tree (as the user's own does) or where a bundle's is staged;
/// the host archive the chain aims at is never opened or extracted.
#[test]
fn chained_links_across_two_iterations_open_nothing_outside() {
    use fsbench::workload::untar::ARCHIVE_STAGING_DIR;
    for staged in [false, true] {
        let sb = sandbox();
        // A "host file" outside the destination, readable only through the chain.
        build(&sb.outside.join("host.tar.gz"), &[file(b"pwned-by-host-archive", b"x")]);
        let archive_dir = if staged { sb.dest.join(ARCHIVE_STAGING_DIR) } else { sb.dest.clone() };
        std::fs::create_dir_all(&archive_dir).unwrap();
        let name = if staged { b".fsbench-archive/a.tar.gz" as &'static [u8] } else { b"a.tar.gz" };
        build(&archive_dir.join("a.tar.gz"), &chained_attack(name));
        let e = two_iterations(&sb.dest, &archive_dir, "a.tar.gz").expect_err("must be refused").to_string();
        assert!(e.contains("iteration 1"), "{e}");
        assert!(
            e.contains("refusing archive entry `d/l2`: symlink target `l1/../..` leaves the archive (from `d`) through the symbolic link `d/l1`"),
            "{e}"
        );
        assert!(!sb.dest.join("pwned-by-host-archive").exists());
        assert!(
            std::fs::symlink_metadata(archive_dir.join("a.tar.gz")).unwrap().is_file(),
            "the archive is still itself"
        );
        let outside: Vec<_> = std::fs::read_dir(&sb.outside).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(outside, ["host.tar.gz"]);
    }
}

/// A bundle's archive is staged in a directory its entries may not name, so no entry,
/// not even a plain file, can replace what the next iteration reads.
#[test]
fn an_archive_cannot_replace_its_staged_self() {
    use fsbench::workload::untar::ARCHIVE_STAGING_DIR;
    let sb = sandbox();
    let archive_dir = sb.dest.join(ARCHIVE_STAGING_DIR);
    std::fs::create_dir(&archive_dir).unwrap();
    build(&archive_dir.join("a.tar.gz"), &[file(b"ok", b"x"), file(b".fsbench-archive/a.tar.gz", b"other archive")]);
    let e = two_iterations(&sb.dest, &archive_dir, "a.tar.gz").expect_err("must be refused").to_string();
    assert!(e.contains("refusing archive entry `.fsbench-archive/a.tar.gz`") && e.contains("reserved"), "{e}");
    // A benign archive runs both iterations from the same staged file.
    let sb = sandbox();
    let archive_dir = sb.dest.join(ARCHIVE_STAGING_DIR);
    std::fs::create_dir(&archive_dir).unwrap();
    build(
        &archive_dir.join("a.tar.gz"),
        &[file(b"d/a.c", b"int x;\n"), link(b"d/l", tar::EntryType::Symlink, b"../d/a.c")],
    );
    two_iterations(&sb.dest, &archive_dir, "a.tar.gz").unwrap();
    assert_eq!(std::fs::read(sb.dest.join("d/l")).unwrap(), b"int x;\n");
}

/// Whatever put a link or a FIFO where an untrusted archive is read, it is refused
/// without being followed or blocking; the file a link points at is never read.
#[test]
fn an_untrusted_archive_is_never_read_through_a_link_or_from_a_fifo() {
    let sb = sandbox();
    let real = sb.root.join("real.tar.gz");
    build(&real, &[file(b"pwned-through-a-link", b"x")]);
    let at = sb.root.join("outside/a.tar.gz");
    std::os::unix::fs::symlink(&real, &at).unwrap();
    let untrusted = Trust::Untrusted(UnpackLimits::default());
    let e = unpack_tar_gz(&at, &sb.dest, &untrusted).unwrap_err();
    assert!(matches!(e, UntarError::OpenArchive { .. }) && e.to_string().contains("not a regular file"), "{e}");
    assert!(!sb.dest.join("pwned-through-a-link").exists());
    std::fs::remove_file(&at).unwrap();
    nix::unistd::mkfifo(&at, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let t = std::time::Instant::now();
    let e = unpack_tar_gz(&at, &sb.dest, &untrusted).unwrap_err();
    assert!(e.to_string().contains("not a regular file"), "{e}");
    assert!(t.elapsed() < std::time::Duration::from_secs(5));
    assert!(!sb.dest.join("pwned-through-a-link").exists());
}

/// Variants of the chain: links to `.` and `..`, a hard link re-homing a link, a link
/// judged through a name the archive later makes a link, a link later replaced, a link
/// to itself, an absolute target. Each refused by extraction, naming the entry.
#[test]
fn variants_of_the_chain_are_refused() {
    use tar::EntryType::{Directory, Link, Symlink};
    let dir = |name: &'static [u8]| E { name, kind: Directory, mode: 0o755, link: b"", data: vec![] };
    let cases: Vec<(Vec<E>, &str)> = vec![
        (
            vec![link(b"l", Symlink, b"."), link(b"x", Symlink, b"l/../outside")],
            "`x`: symlink target `l/../outside` leaves the archive",
        ),
        (vec![link(b"p/up", Symlink, b".."), link(b"p/q/x", Symlink, b"../up/../outside")], "`p/q/x`"),
        (vec![link(b"a/b/up", Symlink, b"../c"), link(b"h", Link, b"a/b/up")], "hard link to the symlink `a/b/up`"),
        (vec![link(b"a/l", Symlink, b"."), link(b"h", Link, b"a/l/f")], "path goes through the symbolic link `a/l`"),
        (vec![link(b"p/x", Symlink, b"a/../../outside"), link(b"p/a", Symlink, b"..")], "`p/a` must stay a directory"),
        (
            vec![
                dir(b"m/n"),
                link(b"m/l", Symlink, b"n"),
                link(b"m/y", Symlink, b"l/../../outside"),
                link(b"m/l", Symlink, b"."),
            ],
            "would replace the symbolic link `m/l`",
        ),
        (vec![link(b"s", Symlink, b"s/../outside")], "through the link itself"),
        (vec![link(b"abs", Symlink, b"/tmp")], "absolute target"),
        (vec![file(b"c", b"x"), dir(b"c")], "name clash: `c` is already a file"),
        (vec![dir(b"c"), file(b"c", b"x")], "name clash: `c` is already a directory"),
    ];
    for (entries, want) in cases {
        let sb = sandbox();
        expect_err(&sb, &entries, UnpackLimits::default(), want);
    }
}
