//! `fsbench fixture kernel-tree` writes the archive and prints its statistics.

use assert_cmd::prelude::*;
use predicates::prelude::*;
use predicates::str::contains;

use crate::support::fsbench;

#[test]
fn kernel_tree_writes_and_prints_stats() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("k.tar.gz");
    fsbench()
        .args(["fixture", "kernel-tree", "--scale", "0.01", "--seed", "5", "-o"])
        .arg(&out)
        .assert()
        .success()
        .stdout(contains("files            139").and(contains("gzip ratio")));
    assert!(out.metadata().unwrap().len() > 10_000);
}

#[test]
fn unknown_profile_is_a_usage_error() {
    let d = tempfile::tempdir().unwrap();
    fsbench()
        .args(["fixture", "kernel-tree", "--profile", "linux-9", "-o"])
        .arg(d.path().join("k.tar.gz"))
        .assert()
        .code(2)
        .stderr(contains("unknown fixture profile `linux-9`"));
}
