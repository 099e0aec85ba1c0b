//! A real archive replaces the generated one in one option, and the run records it.

use crate::support::kernel::assert_no_leaks;
use crate::support::sandbox::{Sandbox, cell_json};
use crate::support::{crate_root, fsbench, small_fixture};

#[test]
fn validate_reads_the_archives_top_directory_and_refuses_a_missing_one() {
    let out = fsbench().args(["plan", "kernel-untar", "--archive"]).arg(small_fixture()).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let missing = fsbench()
        .arg("validate")
        .arg(crate_root().join("scenarios/kernel-untar.toml"))
        .args(["--set", "archive.path=/nonexistent/linux.tar.gz"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(err.contains("/nonexistent/linux.tar.gz") && err.contains("does not exist"), "{err}");
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn run_archive_replaces_generate_and_is_in_the_provenance() {
    skip_unless_root!();
    let sb = Sandbox::new("fsbench-archive-");
    let fixture = small_fixture();
    let out = sb
        .fsbench(&[
            "run",
            "kernel-untar",
            "--archive",
            fixture.to_str().unwrap(),
            "--set",
            "matrix.fs=ext4",
            "--set",
            "workload.iterations=2",
            "--set",
            "backing.image_size=64MiB",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{stderr}", String::from_utf8_lossy(&out.stdout));
    assert!(!stderr.contains("cached"), "a user's own file is not prepared or cached: {stderr}");
    let run = &sb.runs()[0];
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    let a = &meta["archive"];
    assert_eq!(a["size"].as_u64().unwrap(), std::fs::metadata(&fixture).unwrap().len(), "{a:#}");
    assert_eq!(a["sha256"].as_str().unwrap().len(), 64, "{a:#}");
    assert_eq!(a["top"], "linux-2.5.63");
    let entries = a["entries"].as_u64().unwrap();
    let cell = cell_json(run, "ext4-S-qoff-t1");
    let its = &cell["steps"]["iterations"];
    assert_eq!(its[0][0]["label"], "rm -rf linux-2.5.63");
    assert_eq!(its[0][1]["label"], "tar zxf linux-2.5.63-small.tar.gz");
    assert_eq!(its[0][0]["entries"], 0);
    assert_eq!(its[0][1]["entries"].as_u64(), Some(entries), "untar made every entry the run counted");
    assert_eq!(its[1][0]["entries"].as_u64(), Some(entries), "rm_rf followed the archive's top directory");
    assert!(cell.get("notes").is_none(), "{cell:#}");
    assert_no_leaks(sb.path());
}
