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

/// New users' report: with CPU hogs and no reruns every cell came out DISTURBED with no
/// statistics, and `run --strict` exited 0. A cell without statistics gave no number: the
/// run fails ("no cell produced a number"), and `--strict` fails on it.
#[test]
fn a_run_whose_every_cell_is_disturbed_fails() {
    let sb = crate::support::sandbox::Sandbox::new("fsbench-strict-disturbed-");
    let scenario = sb.path().join("disturbed.toml");
    std::fs::write(
        &scenario,
        "schema = 1\nname = \"disturbed\"\n[matrix]\nfs = [\"ext4\"]\ntasks = [1]\ntest = [\"open_close\"]\n\
         [backing]\nkind = \"dir\"\n[workload]\nkind = \"lat_fs\"\nwarmup = \"0ms\"\nduration = \"300ms\"\nrepetitions = 2\n\
         max_reruns = 0\n",
    )
    .unwrap();
    // Foreign CPU time on every CPU: children of the test, not of fsbench.
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
    let mut hogs: Vec<std::process::Child> = (0..cpus)
        .map(|_| std::process::Command::new("sh").args(["-c", "while :; do :; done"]).spawn().unwrap())
        .collect();
    let o = sb.fsbench(&["run", scenario.to_str().unwrap(), "--strict", "--set", "workload.disturbance=1%"]).output();
    for h in &mut hogs {
        let _ = h.kill();
        let _ = h.wait();
    }
    let o = o.unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(text.contains("no statistics"), "every repetition should have been disturbed: {text}");
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(text.contains("no cell produced a number"), "{text}");
}
