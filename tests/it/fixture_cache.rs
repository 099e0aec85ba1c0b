//! Scenario archives: generated once into the cache, or a real tarball by path.

use fsbench::fixture::{FixtureError, cache_file_name, cached_archive};
use fsbench::scenario::ArchiveSource;

#[test]
fn generated_once_and_reused() {
    let d = tempfile::tempdir().unwrap();
    let src = ArchiveSource::Generate { profile: "linux-2.5.63".into(), scale: 0.01, seed: 3 };
    let a = cached_archive(&src, &d.path().join("cache")).unwrap();
    assert_eq!(a.file_name().unwrap().to_str().unwrap(), cache_file_name("linux-2.5.63", 0.01, 3));
    let m1 = std::fs::metadata(&a).unwrap().modified().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let b = cached_archive(&src, &d.path().join("cache")).unwrap();
    assert_eq!(a, b);
    assert_eq!(std::fs::metadata(&b).unwrap().modified().unwrap(), m1, "not regenerated");
    let mut left: Vec<String> = std::fs::read_dir(d.path().join("cache"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    let name = cache_file_name("linux-2.5.63", 0.01, 3);
    assert_eq!(left, [name.clone(), format!("{name}.sha256")], "no temporary files left in the cache");
}

#[test]
fn a_tampered_cached_archive_is_regenerated() {
    // It used to be trusted without a checksum.
    let d = tempfile::tempdir().unwrap();
    let src = ArchiveSource::Generate { profile: "linux-2.5.63".into(), scale: 0.01, seed: 3 };
    let a = cached_archive(&src, &d.path().join("cache")).unwrap();
    let good = std::fs::read(&a).unwrap();
    std::fs::write(&a, b"not the archive").unwrap();
    let b = cached_archive(&src, &d.path().join("cache")).unwrap();
    assert_eq!(std::fs::read(&b).unwrap(), good, "regenerated, not trusted");
}

#[test]
fn real_tarball_by_path() {
    let fixture = crate::support::small_fixture();
    let d = tempfile::tempdir().unwrap();
    assert_eq!(cached_archive(&ArchiveSource::Path(fixture.clone()), d.path()).unwrap(), fixture);
    let missing = d.path().join("nope.tar.gz");
    assert!(matches!(cached_archive(&ArchiveSource::Path(missing), d.path()), Err(FixtureError::MissingArchive(_))));
}
