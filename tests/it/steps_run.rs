//! The steps workload: every iteration kept, time(1)-style figures, exec CPU, cancel.

use std::cell::Cell;
use std::path::{Path, PathBuf};

use fsbench::scenario::{Step, StepsSpec};
use fsbench::workload::steps::{StepError, StepsError, StepsRun, run};
use fsbench::workload::untar::Trust;

use crate::support::{crate_root, is_root};

const ARCHIVE: &str = "linux-2.5.63-small.tar.gz";

/// Where the small fixture archive is.
fn fixtures() -> PathBuf {
    crate_root().join("fixtures")
}

/// The request of every test here unless it says otherwise: never cancelled, the archive
/// trusted as the scenario's own fixture, this test process at the root of the run.
fn request<'a>(spec: &'a StepsSpec, target: &'a Path, archive_dir: &'a Path) -> StepsRun<'a> {
    StepsRun { spec, target, archive_dir, cancel: &never_cancelled, trust: &Trust::Own, run_root: std::process::id() }
}

fn never_cancelled() -> bool {
    false
}

fn seed_loop(iterations: u32) -> StepsSpec {
    StepsSpec {
        disturbance: None,
        iterations,
        steps: vec![Step::RmRf { path: "linux-2.5.63".into() }, Step::Untar { archive: ARCHIVE.into() }, Step::Sync],
    }
}

fn is_time_line(s: &str) -> bool {
    // `0.02user 1.71system 0:02.16elapsed 80%CPU` (or `?%CPU` under 10 ms)
    let p: Vec<&str> = s.split(' ').collect();
    p.len() == 4
        && p[0].strip_suffix("user").is_some_and(|v| v.contains('.') && v.split('.').nth(1).unwrap().len() == 2)
        && p[1].ends_with("system")
        && p[2].strip_suffix("elapsed").is_some_and(|v| v.contains(':'))
        && p[3].ends_with("%CPU")
}

#[test]
fn seed_loop_keeps_every_iteration_in_time_format() {
    let d = tempfile::tempdir().unwrap();
    let spec = seed_loop(3);
    let r = run(&request(&spec, d.path(), &fixtures())).unwrap();
    assert_eq!(r.iterations.len(), 3);
    for it in &r.iterations {
        let labels: Vec<&str> = it.iter().map(|t| t.label.trusted_raw_for_comparison()).collect();
        assert_eq!(labels, ["rm -rf linux-2.5.63", "tar zxf linux-2.5.63-small.tar.gz", "sync"]);
        let ops: Vec<&str> = it.iter().map(|t| t.op.trusted_raw_for_comparison()).collect();
        assert_eq!(ops, ["rm_rf", "untar", "sync"]);
        for t in it {
            let line = t.seed_line();
            assert!(line.starts_with(t.label.trusted_raw_for_comparison()) && is_time_line(&t.time_format()), "{line}");
        }
        // Unpacking 3 MiB of files costs CPU and takes time; the process RSS is known.
        assert!(it[1].user_us + it[1].system_us > 0 && it[1].elapsed_us > 0);
        assert!(it[1].max_rss_kib > 0);
    }
    // Iteration 1's rm_rf finds nothing; later ones remove what untar created (what `--iterations steady` relies on).
    assert_eq!(r.iterations[0][0].entries, Some(0));
    let created = r.iterations[0][1].entries.unwrap();
    assert!(created > 12, "{created}");
    assert_eq!(r.iterations[1][0].entries, Some(created));
    // The second and later rm_rf have a tree to remove: they take system time.
    assert!(r.iterations[1][0].system_us + r.iterations[1][0].user_us > 0 || r.iterations[1][0].elapsed_us > 100);
    assert_eq!(
        std::fs::read_dir(d.path().join("linux-2.5.63")).unwrap().count(),
        12,
        "11 top-level dirs and the root file of the 2% fixture"
    );
}

#[test]
fn exec_counts_the_childs_cpu() {
    let d = tempfile::tempdir().unwrap();
    let spec = StepsSpec {
        disturbance: None,
        iterations: 1,
        steps: vec![Step::Exec {
            argv: vec!["sh".into(), "-c".into(), "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done".into()],
        }],
    };
    let r = run(&request(&spec, d.path(), d.path())).unwrap();
    let t = &r.iterations[0][0];
    assert!(t.user_us >= 50_000, "the busy loop's user time is counted: {}", t.time_format());
    assert!(
        t.user_us + t.system_us <= t.elapsed_us + 20_000,
        "CPU cannot exceed elapsed for one single-threaded child"
    );
    assert_eq!(t.label, "sh -c i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done");
}

#[test]
fn exec_runs_in_the_target_and_reports_failure() {
    let d = tempfile::tempdir().unwrap();
    let spec = StepsSpec {
        disturbance: None,
        iterations: 2,
        steps: vec![
            Step::Mkdir { path: "a/b".into() },
            Step::Exec { argv: vec!["test".into(), "-d".into(), "a/b".into()] },
            Step::Syncfs,
        ],
    };
    let r = run(&request(&spec, d.path(), d.path())).unwrap();
    assert_eq!(r.iterations.len(), 2);
    let spec = StepsSpec {
        disturbance: None,
        iterations: 1,
        steps: vec![Step::Sync, Step::Exec { argv: vec!["false".into()] }],
    };
    match run(&request(&spec, d.path(), d.path())) {
        Err(StepsError::Step { iteration: 1, label, source: StepError::ExecFailed { .. }, completed }) => {
            assert_eq!(label, "false");
            assert_eq!(completed.iterations[0].len(), 1, "the sync before the failure is kept");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn cancel_stops_early_with_what_was_timed() {
    let d = tempfile::tempdir().unwrap();
    let spec = seed_loop(5);
    // Let the first iteration (~300 polls: one per step and per archive entry)
    // finish, then cancel inside the second (its rm_rf polls once per directory).
    let polls = Cell::new(0u32);
    let cancel = || {
        polls.set(polls.get() + 1);
        polls.get() > 310
    };
    let e = run(&StepsRun { cancel: &cancel, ..request(&spec, d.path(), &fixtures()) }).unwrap_err();
    match e {
        StepsError::Interrupted { iteration, completed } => {
            assert_eq!(iteration, 2);
            assert_eq!(completed.iterations[0].len(), 3);
            assert!(completed.iterations[1].len() < 3);
        }
        other => panic!("unexpected {other:?}"),
    }
    let cancel_now = || true;
    let e = run(&StepsRun { cancel: &cancel_now, ..request(&spec, d.path(), &fixtures()) }).unwrap_err();
    assert!(matches!(e, StepsError::Interrupted { iteration: 1, .. }));
}

#[test]
fn step_paths_cannot_leave_the_target() {
    let d = tempfile::tempdir().unwrap();
    let spec = StepsSpec { disturbance: None, iterations: 1, steps: vec![Step::RmRf { path: "../x".into() }] };
    let e = run(&request(&spec, d.path(), d.path())).unwrap_err();
    assert!(e.to_string().contains("not inside the filesystem under test"), "{e}");
}

#[test]
fn drop_caches_needs_root() {
    let d = tempfile::tempdir().unwrap();
    let spec = StepsSpec { disturbance: None, iterations: 1, steps: vec![Step::DropCaches] };
    let r = run(&request(&spec, d.path(), d.path()));
    if is_root() {
        assert_eq!(r.unwrap().iterations[0][0].label, "drop_caches");
    } else {
        eprintln!("not root: checking the error only");
        assert!(r.unwrap_err().to_string().contains("needs root"));
    }
}

/// Regression (security review): a directory link planted in the tree must not carry
/// rm_rf or mkdir outside the filesystem under test.
#[test]
fn step_paths_do_not_pass_through_symlinks() {
    let d = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("victim"), b"keep me").unwrap();
    std::os::unix::fs::symlink(outside.path(), d.path().join("link")).unwrap();
    for step in [Step::RmRf { path: "link/victim".into() }, Step::Mkdir { path: "link/new".into() }] {
        let spec = StepsSpec { disturbance: None, iterations: 1, steps: vec![step] };
        let e = run(&request(&spec, d.path(), d.path())).unwrap_err();
        assert!(e.to_string().contains("passes through the symlink"), "{e}");
    }
    assert_eq!(std::fs::read(outside.path().join("victim")).unwrap(), b"keep me");
    assert!(!outside.path().join("new").exists());
    // The link itself may be removed: rm_rf does not follow it.
    let spec = StepsSpec { disturbance: None, iterations: 1, steps: vec![Step::RmRf { path: "link".into() }] };
    run(&request(&spec, d.path(), d.path())).unwrap();
    assert!(outside.path().join("victim").exists());
}
