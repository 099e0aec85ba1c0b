//! lat_fs runs for real: worker processes in temporary directories on the host
//! filesystem, short windows, one and two tasks.

use std::os::unix::fs::MetadataExt;
use std::time::Duration;

use fsbench::model::{LatfsTest, StopReason};
use fsbench::scenario::LatfsSpec;
use fsbench::workload::latfs::{self, LatfsRun, TEST_FILE, task_ids};

use crate::support::latfs::task_dirs;
use crate::support::{exe, is_root};

fn spec(per_task_uid: bool) -> LatfsSpec {
    crate::support::latfs::spec(per_task_uid, Duration::from_millis(100))
}

#[test]
fn every_test_runs_with_one_and_two_tasks() {
    let spec = spec(is_root());
    for test in LatfsTest::ALL {
        for n in [1, 2] {
            let (_tmp, dirs) = task_dirs(n);
            let r = latfs::run(&LatfsRun { test, spec: &spec, task_dirs: &dirs, exe: exe() })
                .unwrap_or_else(|e| panic!("{test} with {n} tasks: {e}"));
            assert_eq!(r.repetitions.len(), 2, "{test}/{n}");
            for rep in &r.repetitions {
                assert_eq!(rep.tasks.len(), n);
                for (i, t) in rep.tasks.iter().enumerate() {
                    assert_eq!(t.task, i as u32);
                    assert!(t.iterations > 0, "{test}/{n}: task {i} made no iterations");
                    assert!(t.window_ns >= 100_000_000, "{test}/{n}: window {} ns is short", t.window_ns);
                }
                // rusage is read: the workers were charged CPU. Not per task and not system time
                // alone: CPU time is charged at ticks, and a task starved by other tests' CPU hogs
                // on a loaded 2-core machine has been charged 0 µs of system time for its window.
                let cpu: u64 = rep.tasks.iter().map(|t| t.user_us + t.sys_us).sum();
                assert!(cpu > 0, "{test}/{n}: the workers have no CPU time (rusage not read?)");
                let sum: f64 = rep.tasks.iter().map(|t| t.loops_per_ms()).sum();
                assert!((rep.total_loops_per_ms - sum).abs() < 1e-9);
                assert!(rep.latency_us > 0.0);
            }
            assert_eq!(r.total_loops.n, 2);
            assert!(r.total_loops.min > 0.0 && r.total_loops.max >= r.total_loops.min);
            assert_eq!(r.latency_us.n, 2);
        }
    }
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn files_end_up_owned_by_the_task_uid() {
    skip_unless_root!();
    let spec = spec(true);
    for (test, uid_offset) in [(LatfsTest::OpenClose, 0), (LatfsTest::WriteTruncate, 0), (LatfsTest::Chown, 1)] {
        let (_tmp, dirs) = task_dirs(2);
        latfs::run(&LatfsRun { test, spec: &spec, task_dirs: &dirs, exe: exe() }).unwrap();
        for (i, d) in dirs.iter().enumerate() {
            let (uid, gid) = task_ids(i as u32);
            let m = std::fs::metadata(d.join(TEST_FILE)).unwrap();
            // chown ends each iteration with fchown(uid+1, gid+1).
            assert_eq!((m.uid(), m.gid()), (uid + uid_offset, gid + uid_offset), "{test}: task {i}");
            if test == LatfsTest::WriteTruncate {
                assert_eq!(m.len(), 8192, "the last call of an iteration is ftruncate(8192)");
            }
        }
    }
}

#[test]
fn without_per_task_uid_files_belong_to_the_caller() {
    let spec = spec(false);
    let (_tmp, dirs) = task_dirs(1);
    latfs::run(&LatfsRun { test: LatfsTest::OpenClose, spec: &spec, task_dirs: &dirs, exe: exe() }).unwrap();
    let m = std::fs::metadata(dirs[0].join(TEST_FILE)).unwrap();
    assert_eq!(m.uid(), nix::unistd::geteuid().as_raw());
}

#[test]
fn create_unlink_and_quota_references_leave_nothing_behind() {
    let spec = spec(is_root());
    let (_tmp, dirs) = task_dirs(2);
    latfs::run(&LatfsRun { test: LatfsTest::CreateUnlink, spec: &spec, task_dirs: &dirs, exe: exe() }).unwrap();
    for d in &dirs {
        let left: Vec<_> = std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(left.is_empty(), "{}: {left:?}", d.display());
    }
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn a_stale_test_file_of_another_uid_does_not_break_the_run() {
    skip_unless_root!();
    let spec = spec(true);
    let (_tmp, dirs) = task_dirs(1);
    // Left by an earlier cell whose task 0 was someone else, mode 0644.
    let stale = dirs[0].join(TEST_FILE);
    std::fs::write(&stale, b"x").unwrap();
    nix::unistd::chown(&stale, Some(4242.into()), Some(4242.into())).unwrap();
    latfs::run(&LatfsRun { test: LatfsTest::OpenClose, spec: &spec, task_dirs: &dirs, exe: exe() }).unwrap();
    assert_eq!(std::fs::metadata(&stale).unwrap().uid(), task_ids(0).0);
}

/// A disturbed repetition is kept, marked, rerun once and left out of the statistics.
/// Run through the `fsbench` binary, not in this test process: the disturbance window
/// counts the run's process tree as its own, and inside the test binary that tree is
/// every parallel test (their threads and the workers they reap), so on a busy CI host
/// the neighbours' CPU was counted as the cell's own and no window looked contended.
/// Here fsbench's tree is the cell's alone; two busy loops per CPU are foreign.
#[test]
fn disturbed_repetitions_are_kept_marked_rerun_and_left_out() {
    let sb = crate::support::sandbox::Sandbox::new("fsbench-disturbed-");
    let file = sb.path().join("disturbed.toml");
    std::fs::write(
        &file,
        "schema = 1\nname = \"disturbed\"\n[matrix]\nfs = [\"ext4\"]\ntasks = [1]\ntest = [\"open_close\"]\n\
         [backing]\nkind = \"dir\"\n[workload]\nkind = \"lat_fs\"\nper_task_uid = false\nwarmup = \"0ms\"\n\
         duration = \"300ms\"\nrepetitions = 2\nmax_reruns = 1\n",
    )
    .unwrap();
    let online = std::thread::available_parallelism().map_or(2, |n| n.get());
    let hogs = crate::support::hogs::Hogs::start(2 * online).wait_running();
    let out = sb.fsbench(&["run", file.to_str().unwrap(), "--set", "workload.disturbance=10%"]).output().unwrap();
    drop(hogs);
    let run = &sb.runs()[0];
    let ids = crate::support::sandbox::cell_ids(run);
    assert_eq!(ids.len(), 1, "{ids:?}");
    let c: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join(format!("cells/{}.json", ids[0]))).unwrap()).unwrap();
    let r = &c["latfs"];
    let why = format!("{}\n{c:#}", String::from_utf8_lossy(&out.stderr));
    // 2 repetitions wanted, the first disturbed one rerun once, the second stops the cell.
    let reps = r["repetitions"].as_array().unwrap_or_else(|| panic!("{why}"));
    assert_eq!(reps.len(), 2, "{why}");
    assert!(reps.iter().all(|x| x["disturbance"]["disturbed"] == true), "{why}");
    assert_eq!(
        (&r["reruns"], &r["stopped"], &r["total_loops"]["n"]),
        (&1.into(), &"rerun_budget".into(), &0.into()),
        "{why}"
    );
    // The samples are still in the result, for whoever wants to look.
    assert!(reps.iter().all(|x| x["total_loops_per_ms"].as_f64().unwrap_or(0.0) > 0.0), "{why}");
}

#[test]
fn adaptive_repetitions_stop_by_the_rule_and_say_why() {
    let mut spec = crate::support::latfs::spec(is_root(), Duration::from_millis(50));
    spec.repetitions = 6;
    spec.noise.min_repetitions = 2;
    spec.noise.ci_target = Some(0.5);
    let (_tmp, dirs) = task_dirs(1);
    let r = latfs::run(&LatfsRun { test: LatfsTest::Chown, spec: &spec, task_dirs: &dirs, exe: exe() }).unwrap();
    let samples: Vec<f64> = r.repetitions.iter().map(|x| x.total_loops_per_ms).collect();
    let hw = fsbench::stats::relative_half_width(&fsbench::stats::summarize(&samples));
    match r.stopped {
        Some(StopReason::CiTarget) => assert!(samples.len() >= 2 && samples.len() <= 6 && hw <= 0.5, "{samples:?}"),
        Some(StopReason::MaxRepetitions) => assert_eq!(samples.len(), 6),
        other => panic!("{other:?}"),
    }
    // And it stopped at the first repetition that met the target, not later.
    for n in 2..samples.len() {
        assert!(fsbench::stats::relative_half_width(&fsbench::stats::summarize(&samples[..n])) > 0.5, "{samples:?}");
    }
    spec.noise.ci_target = None;
    let r = latfs::run(&LatfsRun { test: LatfsTest::Chown, spec: &spec, task_dirs: &dirs, exe: exe() }).unwrap();
    assert_eq!((r.repetitions.len(), r.stopped), (6, Some(StopReason::Fixed)));
}

#[test]
fn spread_pins_each_task_to_a_cpu() {
    let mut spec = crate::support::latfs::spec(is_root(), Duration::from_millis(30));
    spec.noise.pin = fsbench::scenario::Pin::Spread;
    let (_tmp, dirs) = task_dirs(2);
    let r = latfs::run(&LatfsRun { test: LatfsTest::OpenClose, spec: &spec, task_dirs: &dirs, exe: exe() }).unwrap();
    let n = std::thread::available_parallelism().unwrap().get() as u32;
    assert_eq!(r.pinned_cpus.len(), 2, "{r:?}");
    assert!(r.pinned_cpus.iter().all(|c| *c < 1024) && (n < 2 || r.pinned_cpus[0] != r.pinned_cpus[1]), "{r:?}");
}

/// The finding: per-task uid 100 is `messagebus` on Debian, and its processes could signal the
/// workers. The base is chosen where no user, group or process is: a process planted in the
/// first candidate range (as an attacker with that uid would be) moves the choice on.
#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn per_task_uids_avoid_ranges_a_user_or_process_holds() {
    skip_unless_root!();
    use fsbench::host::task_uids::{CANDIDATES, HostIds, LMBENCH_BASE, RANGE, choose};
    use std::os::unix::process::CommandExt;
    let host = HostIds::read();
    let free = choose(&host).unwrap();
    assert!(!host.users.iter().any(|u| (free..free + RANGE).contains(u)));
    if host.users.contains(&LMBENCH_BASE) {
        // Here (Debian) uid 100 is a system user: the seed's mapping would run task 0 as it.
        assert_ne!(free, LMBENCH_BASE);
    }
    let squatter_uid = free + 8;
    let mut squatter =
        std::process::Command::new("sleep").arg("60").uid(squatter_uid).gid(squatter_uid).spawn().unwrap();
    let seen = crate::support::poll(Duration::from_secs(30), Duration::from_millis(5), || {
        HostIds::read().processes.contains(&squatter_uid).then_some(())
    });
    let next = choose(&HostIds::read());
    let _ = squatter.kill();
    let _ = squatter.wait();
    assert!(seen.is_some(), "the squatter never showed in /proc");
    let next = next.unwrap();
    assert_ne!(next, free, "a range with a running process of its ids was chosen");
    // (Not necessarily the next one up: workers of other tests may hold or free ranges meanwhile.)
    assert!(CANDIDATES.contains(&next));
}
