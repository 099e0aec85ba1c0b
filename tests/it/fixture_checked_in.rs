//! The checked-in fixture is exactly what the generator makes today.

use fsbench::fixture::generate_kernel_tree;

#[test]
fn checked_in_fixture_is_reproducible() {
    let fixture = crate::support::small_fixture();
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("again.tar.gz");
    generate_kernel_tree("linux-2.5.63", 0.02, 1, &out).unwrap();
    let (a, b) = (std::fs::read(&fixture).unwrap(), std::fs::read(&out).unwrap());
    assert!(a.len() < 1 << 20, "fixture must stay under 1 MB");
    assert!(a == b, "fixtures/linux-2.5.63-small.tar.gz differs from the generator's output: see fixtures/README.md");
}
