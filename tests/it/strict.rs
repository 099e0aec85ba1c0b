//! Strictness for CI: a typo'd filesystem is flagged before anything runs.

use crate::support::fsbench;

#[test]
fn validate_warns_of_a_typod_filesystem_name_with_a_suggestion() {
    // A typo'd name used to validate silently, run, and exit 0 with its cells skipped.
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("typo.toml");
    std::fs::write(
        &f,
        "schema = 1\nname = \"typo\"\n[matrix]\nfs = [\"ext4\", \"xsf\"]\n[backing]\nkind = \"tmpfs-loop\"\nimage_size = \"64MiB\"\n\
         [workload]\nkind = \"lat_fs\"\n",
    )
    .unwrap();
    let o = fsbench().arg("validate").arg(&f).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "a warning, not an error: {err}");
    assert!(err.contains("filesystem `xsf`") && err.contains("did you mean `xfs`?"), "{err}");
    assert!(!err.contains("`ext4`"), "ext4 is fine here: {err}");
}
