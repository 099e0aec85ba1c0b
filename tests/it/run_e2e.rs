//! End-to-end runs of the `fsbench` binary: real provisioning as root, Ctrl-C and
//! kill -9 at awkward moments, resume. After each: zero leaked mounts and loops.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::kernel::{assert_no_leaks, leaks};
use crate::support::poll;
use crate::support::sandbox::{Sandbox, cell_ids, cell_json};

/// A sandbox for one test: its run's work directory is under it, so leak checks look there.
fn sandbox() -> Sandbox {
    Sandbox::new("fsbench-e2e-")
}

fn wait_for(child: &mut Child, timeout: Duration) -> Option<std::process::ExitStatus> {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if let Some(st) = child.try_wait().unwrap() {
            return Some(st);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    child.wait().ok()
}

/// Wait until something of ours is mounted under `dir` (provisioning has begun).
fn wait_for_mount(dir: &Path, timeout: Duration) -> bool {
    poll(timeout, Duration::from_millis(5), || leaks(dir).iter().any(|l| l.starts_with("mount")).then_some(()))
        .is_some()
}

/// Start `fsbench <args>`, wait until it has mounted something, wait `delay`, send each
/// signal in turn (5 ms apart), and return how it exited. Panics if it never mounts or exits.
fn interrupt_run(
    sb: &Sandbox,
    args: &[&str],
    delay: Duration,
    signals: &[nix::sys::signal::Signal],
) -> std::process::ExitStatus {
    let mut child = sb.fsbench(args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    assert!(wait_for_mount(sb.path(), Duration::from_secs(30)), "provisioning never started");
    std::thread::sleep(delay);
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    for (i, sig) in signals.iter().enumerate() {
        if i > 0 {
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = nix::sys::signal::kill(pid, *sig);
    }
    wait_for(&mut child, Duration::from_secs(60)).expect("fsbench exits after the signal")
}

const QUICK: &[&str] = &[
    "--set",
    "workload.warmup=10ms",
    "--set",
    "workload.duration=50ms",
    "--set",
    "workload.repetitions=2",
    "--set",
    "workload.disturbance=off",
];

/// `fsbench run scenarios/quickstart.toml` on the dir backing, kept short ([`QUICK`]), with `extra`.
fn quick_dir_run(sb: &Sandbox, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["run", "scenarios/quickstart.toml", "--set", "backing.kind=dir"];
    args.extend_from_slice(extra);
    args.extend_from_slice(QUICK);
    sb.fsbench(&args).output().unwrap()
}

#[test]
fn dir_backing_runs_without_provisioning() {
    let sb = sandbox();
    let out = quick_dir_run(&sb, &["--only", "fs=ext4,tasks=1"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}\n{}", stdout, String::from_utf8_lossy(&out.stderr));
    let runs = sb.runs();
    assert_eq!(runs.len(), 1);
    assert_eq!(cell_ids(&runs[0]).len(), 4, "four lat_fs tests");
    assert!(stdout.contains("#nr_task"), "seed-style table printed:\n{stdout}");
    // Honest labels: the cell records the directory's own filesystem, not the scenario's ext4.
    let cell = cell_json(&runs[0], "ext4-S-qoff-t1-chown");
    let fs = &cell["filesystems"][0];
    assert_eq!(fs["existing_dir"], true, "{fs:#}");
    assert!(fs["mkfs_argv"].as_array().unwrap().is_empty(), "{fs:#}");
    let dir = Path::new(fs["mountpoint"].as_str().unwrap()).parent().unwrap().to_path_buf();
    // The private backing directory is gone after the run; the sandbox it was in is on the same filesystem.
    assert!(dir.starts_with(sb.path()), "{dir:?}");
    let real = Command::new("findmnt").args(["-n", "-o", "FSTYPE", "--target"]).arg(sb.path()).output().unwrap();
    assert_eq!(fs["fs"].as_str().unwrap(), String::from_utf8_lossy(&real.stdout).trim(), "{fs:#}");
    let note = format!(
        "note: backing dir: measured the existing {} filesystem of {}",
        fs["fs"].as_str().unwrap(),
        dir.display()
    );
    // Prose wraps at 100 columns, continuation lines indented: read it as one line.
    let flat = stdout.replace("\n  ", " ");
    assert!(
        flat.contains(&note)
            && flat.contains("nothing was formatted or mounted, so mkfs and mount options were not applied"),
        "{stdout}"
    );
    assert_eq!(stdout.matches("note: backing dir").count(), 1, "said once per run: {stdout}");
    assert_no_leaks(sb.path());
}

#[test]
fn one_repetition_prints_no_cv() {
    // Issue #38 item 13: `cv 0.0%` from one repetition claimed a perfectly steady cell.
    let sb = sandbox();
    // Not `sb.fsbench`: that one is `--quiet`, and the progress lines are the point here.
    let mut args = vec!["run", "scenarios/quickstart.toml", "--set", "backing.kind=dir", "--only"];
    args.push("fs=ext4,tasks=1,test=chown");
    args.extend_from_slice(QUICK);
    args.extend(["--set", "workload.repetitions=1"]);
    let mut cmd = crate::support::fsbench();
    cmd.current_dir(crate::support::crate_root()).args(&args);
    cmd.arg("--workdir").arg(sb.work()).arg("--out").arg(sb.out()).env("XDG_CACHE_HOME", sb.path().join("cache"));
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let line = stderr.lines().find(|l| l.contains("ext4-S-qoff-t1-chown: ok")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(line.contains("(1 repetition") && !line.contains("cv "), "{line}");
    assert_no_leaks(sb.path());
}

#[test]
fn random_order_and_the_environment_are_recorded_in_run_json() {
    let sb = sandbox();
    let out = quick_dir_run(&sb, &["--only", "fs=ext4,tasks=1", "--order", "random", "--seed", "7"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sb.runs()[0].join("run.json")).unwrap()).unwrap();
    assert_eq!((run["order"]["kind"].as_str(), run["order"]["seed"].as_u64()), (Some("random"), Some(7)), "{run:#}");
    let ran: Vec<&str> = run["order"]["cells"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
    let planned: Vec<String> = run["planned_cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| format!("ext4-S-qoff-t1-{}", p["test"].as_str().unwrap()))
        .collect();
    let mut sorted = ran.clone();
    sorted.sort();
    let mut want: Vec<&str> = planned.iter().map(String::as_str).collect();
    want.sort();
    assert_eq!(sorted, want, "every planned cell ran once");
    // Seed 7 over these four cells is not the plan's order (the permutation is fixed by SplitMix64).
    assert_ne!(ran, planned.iter().map(String::as_str).collect::<Vec<_>>());
    let env = &run["environment"];
    assert!(
        env["cpus_online"].is_string() && env["loadavg"].is_array() && env["sample_ms"].as_u64() >= Some(300),
        "{env:#}"
    );
    // --seed without --order random is a usage error.
    let out = sb.fsbench(&["run", "scenarios/quickstart.toml", "--seed", "1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn tmpfs_loop_ext4_cells_run_and_leave_nothing() {
    skip_unless_root!();
    let sb = sandbox();
    let mut args = vec!["run", "scenarios/quickstart.toml", "--only", "fs=ext4,test=chown"];
    args.extend_from_slice(QUICK);
    let out = sb.fsbench(&args).output().unwrap();
    assert!(out.status.success(), "{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let run = &sb.runs()[0];
    let cell = cell_json(run, "ext4-S-qoff-t2-chown");
    assert_eq!(cell["status"], "ok", "{cell:#}");
    let fs = &cell["filesystems"][0];
    assert!(fs["device"].as_str().unwrap().starts_with("/dev/loop"), "{fs:#}");
    assert!(
        fs["super_options"].as_str().unwrap().contains("noload")
            || fs["mount_options"].as_str().unwrap().contains("noload")
            || fs["mount_options_requested"].to_string().contains("noload"),
        "{fs:#}"
    );
    assert!(cell["latfs"]["total_loops"]["median"].as_f64().unwrap() > 0.0);
    assert_no_leaks(sb.path());
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn quota_on_cells_are_skipped_with_a_reason_when_the_kernel_lacks_quota() {
    skip_unless_root!();
    let sb = sandbox();
    let mut args = vec!["run", "scenarios/quota-smp.toml", "--only", "fs=ext4,layout=S,tasks=1,test=chown"];
    args.extend_from_slice(QUICK);
    let out = sb.fsbench(&args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let run = &sb.runs()[0];
    let qon = cell_json(run, "ext4-S-qon-t1-chown");
    let qoff = cell_json(run, "ext4-S-qoff-t1-chown");
    assert_eq!(qoff["status"], "ok", "{qoff:#}");
    // On a kernel with quota support the cell runs; on these machines it is skipped with the reason.
    if qon["status"] == "skipped" {
        let reason = qon["skip"]["reason"].as_str().unwrap();
        assert!(reason.to_lowercase().contains("quota"), "{reason}");
    } else {
        assert_eq!(qon["status"], "ok", "{qon:#}");
    }
    assert_no_leaks(sb.path());
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn sigint_during_provisioning_cleans_up_and_exits_130() {
    skip_unless_root!();
    let sb = sandbox();
    // Layout M with 8 tasks: 8 images, 8 loops, 8 mkfs, 8 mounts: a long provisioning phase.
    let mut args = vec!["run", "scenarios/quota-smp.toml", "--only", "fs=ext2,layout=M,quota=off,tasks=8"];
    args.extend_from_slice(QUICK);
    let status = interrupt_run(&sb, &args, Duration::ZERO, &[nix::sys::signal::Signal::SIGINT]);
    assert_eq!(status.code(), Some(130), "exit code after SIGINT");
    assert_no_leaks(sb.path());
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn sigint_during_workload_and_second_sigint_still_clean_up() {
    skip_unless_root!();
    let sb = sandbox();
    let args = [
        "run",
        "scenarios/quickstart.toml",
        "--only",
        "fs=ext4,tasks=2,test=open_close",
        "--set",
        "workload.duration=5s",
        "--set",
        "workload.repetitions=1",
        "--set",
        "workload.disturbance=off",
    ];
    // 1.5 s: inside the timed window; the second SIGINT must not abort the cleanup.
    let sigint = nix::sys::signal::Signal::SIGINT;
    let status = interrupt_run(&sb, &args, Duration::from_millis(1500), &[sigint, sigint]);
    assert_eq!(status.code(), Some(130));
    assert_no_leaks(sb.path());
    // No worker outlives the run.
    let ps = Command::new("pgrep").args(["-f", "__latfs-worker"]).output().unwrap();
    let workdir = sb.work().to_string_lossy().into_owned();
    let survivors: Vec<String> = String::from_utf8_lossy(&ps.stdout)
        .lines()
        .filter(|pid| std::fs::read_to_string(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.contains(&workdir)))
        .map(String::from)
        .collect();
    assert!(survivors.is_empty(), "workers left running: {survivors:?}");
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn sigkill_then_next_start_cleans_the_stale_work_directory() {
    skip_unless_root!();
    let sb = sandbox();
    let args = [
        "run",
        "scenarios/quickstart.toml",
        "--only",
        "fs=ext4,tasks=1,test=chown",
        "--set",
        "workload.duration=5s",
        "--set",
        "workload.repetitions=1",
        "--set",
        "workload.disturbance=off",
    ];
    let mut child = sb.fsbench(&args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    assert!(wait_for_mount(sb.path(), Duration::from_secs(30)), "provisioning never started");
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap(); // SIGKILL: no handler runs
    child.wait().unwrap();
    // Workers die with the parent's pipe closing; give them a moment.
    std::thread::sleep(Duration::from_millis(500));
    assert!(!leaks(sb.path()).is_empty(), "kill -9 should have left something to clean");
    // The next start finds the stale work directory and cleans it before running.
    let out = sb
        .fsbench(&[
            "run",
            "scenarios/quickstart.toml",
            "--only",
            "fs=ext4,tasks=1,test=chown",
            "--set",
            "backing.kind=dir",
            "--set",
            "workload.duration=20ms",
            "--set",
            "workload.repetitions=1",
            "--set",
            "workload.disturbance=off",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cleaned up after an earlier run"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_no_leaks(sb.path());
}

#[test]
fn interrupted_run_resumes_to_the_same_cell_set() {
    let sb = sandbox();
    let args = [
        "run",
        "scenarios/quickstart.toml",
        "--set",
        "backing.kind=dir",
        "--set",
        "workload.warmup=0ms",
        "--set",
        "workload.duration=150ms",
        "--set",
        "workload.repetitions=1",
        "--set",
        "workload.disturbance=off",
        "--only",
        "fs=ext4",
    ];
    let mut child = sb.fsbench(&args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    // Wait until some but not all cells are stored, then Ctrl-C.
    let stored = || sb.runs().first().map(|r| cell_ids(r).len()).unwrap_or(0);
    poll(Duration::from_secs(60), Duration::from_millis(10), || (stored() >= 2).then_some(()));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let status = wait_for(&mut child, Duration::from_secs(30)).unwrap();
    assert_eq!(status.code(), Some(130));
    let run = sb.runs()[0].clone();
    let partial = cell_ids(&run).len();
    assert!(partial < 8, "the run was interrupted before its 8 cells ({partial})");
    let out = sb.fsbench(&["run", "--resume", run.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Resuming a complete run changes nothing, not even its finish time.
    let before = std::fs::read_to_string(run.join("run.json")).unwrap();
    let out = sb.fsbench(&["run", "--resume", run.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("is complete"));
    let after = std::fs::read_to_string(run.join("run.json")).unwrap();
    assert!(after == before, "run.json changed:\n{before}\n---\n{after}");
    // Same cell set as an uninterrupted run of the same plan.
    let full = sandbox();
    let out = full
        .fsbench(&[
            "run",
            "scenarios/quickstart.toml",
            "--set",
            "backing.kind=dir",
            "--set",
            "workload.duration=10ms",
            "--set",
            "workload.warmup=0ms",
            "--set",
            "workload.repetitions=1",
            "--set",
            "workload.disturbance=off",
            "--only",
            "fs=ext4",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(cell_ids(&run), cell_ids(&full.runs()[0]));
}

#[test]
fn wrong_options_are_usage_errors() {
    let sb = sandbox();
    let out = sb.fsbench(&["run", "scenarios/quickstart.toml", "--only", "fs=zfs"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no cell has fs=zfs"));
    let out = sb.fsbench(&["run", "no/such/scenario.toml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(sb.runs().is_empty(), "no run directory for a run that never started");
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn sigkill_of_a_worker_fails_its_cell_and_the_run_goes_on() {
    skip_unless_root!();
    let sb = sandbox();
    // Two cells: the first one's worker is killed, the second one still runs.
    let args = [
        "run",
        "scenarios/quickstart.toml",
        "--only",
        "fs=ext4,tasks=2,test=open_close,test=chown",
        "--set",
        "workload.duration=3s",
        "--set",
        "workload.repetitions=1",
        "--set",
        "workload.disturbance=off",
        "--set",
        "workload.warmup=0ms",
    ];
    let mut child = sb.fsbench(&args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    // Find a worker of this run: its arguments name a task directory under our sandbox.
    let ours = sb.path().to_string_lossy().into_owned();
    let worker = poll(Duration::from_secs(30), Duration::from_millis(10), || {
        std::fs::read_dir("/proc").unwrap().flatten().find_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let cmd = std::fs::read_to_string(format!("/proc/{pid}/cmdline")).ok()?;
            (cmd.contains("__latfs-worker") && cmd.contains(&ours)).then_some(pid)
        })
    })
    .expect("no worker appeared");
    // At once: the worker has exec'd (its command line names the task) and its cell cannot
    // end before it does, so the kill always lands in the first cell (no sleep to outlast).
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(worker), nix::sys::signal::Signal::SIGKILL).unwrap();
    let status = wait_for(&mut child, Duration::from_secs(60)).expect("fsbench finishes");
    assert_eq!(status.code(), Some(1), "a failed cell makes the run exit 1");
    let run = &sb.runs()[0];
    assert_eq!(cell_ids(run).len(), 2, "the run went on to the next cell");
    let failed = cell_json(run, "ext4-S-qoff-t2-open_close");
    assert_eq!(failed["status"], "failed", "{failed:#}");
    let error = failed["error"].as_str().unwrap();
    assert!(error.contains("task") && error.contains("signal 9"), "{error}");
    assert_no_leaks(sb.path());
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn sighup_cleans_up_like_ctrl_c() {
    skip_unless_root!();
    let sb = sandbox();
    let args = [
        "run",
        "scenarios/quickstart.toml",
        "--only",
        "fs=ext4,tasks=1,test=open_close",
        "--set",
        "workload.duration=5s",
        "--set",
        "workload.repetitions=1",
        "--set",
        "workload.disturbance=off",
    ];
    let status = interrupt_run(&sb, &args, Duration::from_millis(500), &[nix::sys::signal::Signal::SIGHUP]);
    assert_eq!(status.code(), Some(130), "a hang-up is an interruption");
    assert_no_leaks(sb.path());
}

#[test]
fn rounds_run_the_matrix_again_and_resume_finishes_the_missing_rounds() {
    let sb = sandbox();
    let out = quick_dir_run(
        &sb,
        &[
            "--only",
            "fs=ext4,tasks=1,test=open_close,chown",
            "--set",
            "workload.rounds=3",
            "--order",
            "random",
            "--seed",
            "3",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let run = sb.runs()[0].clone();
    let cell = |id: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(run.join("cells").join(format!("{id}.json"))).unwrap()).unwrap()
    };
    let rounds = |c: &serde_json::Value| -> Vec<u64> {
        c["latfs"]["repetitions"].as_array().unwrap().iter().map(|r| r["round"].as_u64().unwrap_or(0)).collect()
    };
    for id in ["ext4-S-qoff-t1-open_close", "ext4-S-qoff-t1-chown"] {
        let c = cell(id);
        assert_eq!(rounds(&c), vec![0, 0, 1, 1, 2, 2], "{id}: two repetitions in each of three rounds");
        // The statistics are over the three rounds' means.
        assert_eq!(c["latfs"]["total_loops"]["n"], 3, "{c:#}");
    }
    // The report says what its numbers are over.
    let rep = crate::support::fsbench().arg("report").arg(&run).output().unwrap();
    let flat = String::from_utf8_lossy(&rep.stdout).replace("\n  ", " ");
    assert!(flat.contains("median over the means of the cell's rounds (up to 3"), "{flat}");
    // Every round ran both cells, each round in its own order from the seed.
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    assert_eq!(meta["order"]["cells"].as_array().unwrap().len(), 6, "{meta:#}");

    // A run stopped in its last round: one cell has only two rounds stored.
    let path = run.join("cells/ext4-S-qoff-t1-chown.json");
    let mut c = cell("ext4-S-qoff-t1-chown");
    c["latfs"]["repetitions"].as_array_mut().unwrap().truncate(4);
    std::fs::write(&path, serde_json::to_vec_pretty(&c).unwrap()).unwrap();
    let mut meta = meta;
    meta["interrupted"] = true.into();
    std::fs::write(run.join("run.json"), serde_json::to_vec_pretty(&meta).unwrap()).unwrap();
    let untouched = std::fs::read(run.join("cells/ext4-S-qoff-t1-open_close.json")).unwrap();
    let out = sb.fsbench(&["run", "--resume", run.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(rounds(&cell("ext4-S-qoff-t1-chown")), vec![0, 0, 1, 1, 2, 2], "the missing round ran");
    assert_eq!(std::fs::read(run.join("cells/ext4-S-qoff-t1-open_close.json")).unwrap(), untouched);
    assert_no_leaks(sb.path());
}
