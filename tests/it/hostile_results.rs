//! Result files are other people's files: absurd numbers and counts in them are bad
//! input (exit 2, the file and field named), never a hang, an abort or a verdict.

mod text;

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use fsbench::model::{CellParams, Layout, QuotaMode};
use fsbench::results::RunShard;

use crate::support::fsbench;
use crate::support::report::{latfs_cell, latfs_scenario_text, meta, write_run};

fn params(tasks: u32) -> CellParams {
    CellParams {
        fs: "ext4".into(),
        layout: Layout::S,
        quota: QuotaMode::Off,
        tasks,
        test: Some(fsbench::model::LatfsTest::OpenClose),
        fio: Default::default(),
        kernel: None,
    }
}

/// Wait at most `limit`; a command still running then is a hang (killed, reported as None).
fn finish(mut child: Child, limit: Duration) -> Option<(i32, String)> {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if let Some(st) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
            return Some((st.code().unwrap_or(-1), err));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

#[test]
fn f64_max_in_a_result_file_is_refused_by_report_plot_and_gate() {
    // It used to make `report --plot` spin forever and the gate say `unchanged`.
    let tmp = tempfile::tempdir().unwrap();
    let text = latfs_scenario_text("q", "");
    let base = write_run(
        &tmp.path().join("base"),
        &meta(Some("BASE"), "q", &text, "lat_fs", vec![params(1)]),
        &[latfs_cell(params(1), &[100.0, 101.0, 99.0])],
    );
    let mut cell = latfs_cell(params(1), &[100.0, 101.0, 99.0]);
    cell.latfs.as_mut().unwrap().total_loops.median = f64::MAX;
    cell.latfs.as_mut().unwrap().repetitions[0].total_loops_per_ms = f64::MAX;
    let bad = write_run(&tmp.path().join("cand"), &meta(Some("V3"), "q", &text, "lat_fs", vec![params(1)]), &[cell]);
    let plots = tmp.path().join("plots");
    std::fs::create_dir(&plots).unwrap();
    let report = fsbench()
        .arg("report")
        .arg(&bad)
        .arg("--plot")
        .arg(&plots)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (code, err) = finish(report, Duration::from_secs(60)).expect("report --plot hung on f64::MAX");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("latfs.total_loops.median") && err.contains("plausible"), "{err}");
    let gate = fsbench()
        .args(["gate", "--baseline"])
        .arg(&base)
        .arg("--candidate")
        .arg(&bad)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (code, err) = finish(gate, Duration::from_secs(60)).expect("gate hung");
    assert_eq!(code, 2, "a gate over an implausible file is bad input, not a verdict: {err}");
}

#[test]
fn a_huge_shard_count_in_run_json_aborted_merge_with_exit_134() {
    let tmp = tempfile::tempdir().unwrap();
    let text = latfs_scenario_text("q", "");
    let mut m = meta(Some("BASE"), "q", &text, "lat_fs", vec![params(1)]);
    m.shard = Some(RunShard { index: 1, count: u32::MAX, key: "k".into(), total_cells: 2, cell_indices: vec![0] });
    let dir = write_run(&tmp.path().join("q/r1"), &m, &[latfs_cell(params(1), &[100.0])]);
    let merge = fsbench().arg("merge").arg(&dir).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let (code, err) = finish(merge, Duration::from_secs(60)).expect("merge hung");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("shard.count"), "{err}");
}

/// A steps scenario on a private directory whose one step runs `argv`.
fn exec_scenario(argv: &str) -> String {
    format!(
        "schema = 1\nname = \"q\"\n[matrix]\nfs = [\"ext4\"]\n[backing]\nkind = \"dir\"\n[workload]\nkind = \"steps\"\n\
         iterations = 1\nsteps = [{{ op = \"exec\", argv = {argv} }}]\n"
    )
}

/// `fsbench run <scenario> --out <out>` in `dir` (`--workdir` inside it); the run directory.
fn run_scenario(dir: &std::path::Path, text: &str, out: &std::path::Path) -> std::path::PathBuf {
    let sc = dir.join("victim.toml");
    std::fs::write(&sc, text).unwrap();
    let o = fsbench()
        .arg("run")
        .arg(&sc)
        .arg("--out")
        .arg(out)
        .arg("--workdir")
        .arg(dir.join("w"))
        .arg("--quiet")
        .output()
        .unwrap();
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&o.stderr));
    let runs = crate::support::sandbox::run_dirs(out);
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs[0].clone()
}

/// `fsbench run --resume <dir>`: exit code and stderr.
fn resume(dir: &std::path::Path, work: &std::path::Path) -> (i32, String) {
    let o = fsbench().args(["run", "--quiet", "--workdir"]).arg(work).arg("--resume").arg(dir).output().unwrap();
    (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// Regression (security review, round two): `run --resume` checked the run directory by
/// path, then loaded it again by path. Swapping it (rename exchange) for another user's
/// directory between the two ran that user's `exec` step as root in 1 of 2 to 1 of 20
/// tries. The directory is now opened once and checked, loaded and written through that
/// fd: whichever directory the path names at that instant, the attacker's is refused
/// (not ours) and the victim's runs; the attacker's command never does.
#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn a_run_directory_swapped_during_resume_never_runs_the_other_users_exec() {
    skip_unless_root!();
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("res");
    let log = tmp.path().join("victim.log");
    let marker = tmp.path().join("PWNED");
    // The victim's run: its cell fails (exit 1), so every resume runs it again.
    let victim = run_scenario(
        tmp.path(),
        &exec_scenario(&format!("[\"sh\", \"-c\", \"echo resumed >> {}; exit 1\"]", log.display())),
        &out,
    );
    std::fs::remove_file(&log).unwrap();
    // Entries that are no cell make every check of the directory take a while: the window
    // an attacker has between a check by path and a load by path (with 4,000, the code
    // before the fix ran the attacker's step within the first two tries).
    for i in 0..4000 {
        std::fs::write(victim.join("cells").join(format!("pad-{i}")), b"").unwrap();
    }
    // The attacker's: the same run.json with another command, owned by another user.
    let attacker = victim.with_file_name("attacker");
    std::fs::create_dir_all(attacker.join("cells")).unwrap();
    let mut meta: serde_json::Value = serde_json::from_slice(&std::fs::read(victim.join("run.json")).unwrap()).unwrap();
    let text = exec_scenario(&format!("[\"touch\", \"{}\"]", marker.display()));
    meta["scenario_sha256"] = fsbench::results::sha256_hex(text.as_bytes()).into();
    meta["scenario_text"] = text.into();
    meta["finished"] = serde_json::Value::Null;
    std::fs::write(attacker.join("run.json"), serde_json::to_vec_pretty(&meta).unwrap()).unwrap();
    for p in [attacker.join("run.json"), attacker.join("cells"), attacker.clone()] {
        std::os::unix::fs::chown(&p, Some(65534), Some(65534)).unwrap();
        let mode = if p.is_dir() { 0o755 } else { 0o644 };
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    // The attacker swaps the two directories as fast as it can while root resumes.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flipper = {
        let (stop, a, b) = (stop.clone(), victim.clone(), attacker.clone());
        std::thread::spawn(move || {
            use std::os::unix::ffi::OsStrExt;
            let c = |p: &std::path::Path| std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
            let (a, b) = (c(&a), c(&b));
            let mut swaps = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // SAFETY: valid C strings; renameat2 exchanges the two entries atomically.
                let r = unsafe {
                    libc::renameat2(libc::AT_FDCWD, a.as_ptr(), libc::AT_FDCWD, b.as_ptr(), libc::RENAME_EXCHANGE)
                };
                assert_eq!(r, 0, "renameat2: {}", std::io::Error::last_os_error());
                swaps += 1;
            }
            swaps
        })
    };
    let (mut ran, mut refused) = (0, 0);
    for i in 0..40 {
        let (code, err) = resume(&victim, &tmp.path().join("w"));
        assert!(!marker.exists(), "iteration {i}: the attacker's exec ran as root (exit {code}): {err}");
        match code {
            1 => ran += 1,
            2 => {
                assert!(err.contains("owned by uid 65534"), "iteration {i}: {err}");
                refused += 1;
            }
            other => panic!("iteration {i}: exit {other}: {err}"),
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let swaps = flipper.join().unwrap();
    assert!(!marker.exists());
    eprintln!("{swaps} swaps: the victim's run resumed {ran} times, the attacker's refused {refused} times");
    assert!(ran > 0 && refused > 0, "the race was not exercised: {ran} resumed, {refused} refused");
    let resumed = std::fs::read_to_string(&log).unwrap();
    assert_eq!(resumed.lines().count(), ran, "every resume that ran, ran the victim's step");
}

/// `--resume` of a run in a results root that others can write without the sticky bit
/// is refused, naming that directory: they could swap the run for theirs. A sticky one
/// (as /tmp) is fine.
#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn resume_under_a_root_others_can_write_is_refused_naming_it() {
    skip_unless_root!();
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("shared");
    let run = run_scenario(tmp.path(), &exec_scenario("[\"sh\", \"-c\", \"exit 1\"]"), &out);
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o777)).unwrap();
    let (code, err) = resume(&run, &tmp.path().join("w"));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("its ancestor {} has mode 0777", out.display())), "{err}");
    assert!(err.contains("sticky"), "{err}");
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let (code, err) = resume(&run, &tmp.path().join("w"));
    assert_eq!(code, 1, "a sticky shared root is fine (the cell fails again): {err}");
}

/// Regression (security review, round two): `merge --out` wrote the merged run despite a
/// duplicated shard (a planted one was used when it sorted first) and exit 1, and the
/// report then suggested `--resume`. Nothing is written now: not with a duplicate, not
/// with a shard missing unless --allow-missing; a merged run is marked and never resumed.
#[test]
fn a_merge_with_a_planted_duplicate_or_missing_shard_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let text = latfs_scenario_text("q", "");
    let shard = |index: u32, dir: &str, value: f64| {
        let mut m = meta(Some("BASE"), "q", &text, "lat_fs", vec![params(index)]);
        m.run_id = dir.into();
        m.shard =
            Some(RunShard { index, count: 2, key: "k".into(), total_cells: 2, cell_indices: vec![index as usize - 1] });
        write_run(&tmp.path().join("res/q").join(dir), &m, &[latfs_cell(params(index), &[value])])
    };
    let one = shard(1, "b-shard1", 100.0);
    let two = shard(2, "b-shard2", 100.0);
    let planted = shard(2, "a-planted", 1.0);
    let merged = tmp.path().join("merged");
    let merge = |dirs: &[&std::path::Path], extra: &[&str]| {
        let o = fsbench().arg("merge").args(dirs).arg("--out").arg(&merged).args(extra).output().unwrap();
        (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stderr).into_owned())
    };
    let (code, err) = merge(&[&one, &two, &planted], &[]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("writing nothing to") && err.contains("shard 2 of run k is in several directories"), "{err}");
    assert!(!merged.exists(), "a merge with a duplicated shard wrote {merged:?}");
    let (code, err) = merge(&[&one, &two, &planted], &["--allow-missing"]);
    assert_eq!(code, 1, "--allow-missing does not choose between duplicates: {err}");
    assert!(!merged.exists());
    let (code, err) = merge(&[&one], &[]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("shards 2 of run k are missing; pass --allow-missing"), "{err}");
    assert!(!merged.exists());
    // An unfinished shard, merged alone with --allow-missing: written, marked, and the report
    // does not send anyone to `--resume` it.
    let mut m = meta(Some("BASE"), "q", &text, "lat_fs", vec![params(1), params(3)]);
    m.run_id = "c-unfinished".into();
    m.finished = None;
    m.shard = Some(RunShard { index: 1, count: 1, key: "k2".into(), total_cells: 3, cell_indices: vec![0, 2] });
    let unfinished = write_run(&tmp.path().join("res/q/c-unfinished"), &m, &[latfs_cell(params(1), &[100.0])]);
    let (code, err) = merge(&[&unfinished], &[]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("did not finish") && err.contains("--allow-missing"), "{err}");
    assert!(!merged.exists());
    let (code, err) = merge(&[&unfinished], &["--allow-missing"]);
    assert_eq!(code, 1, "a partial merge is written but still not a success: {err}");
    let runs = crate::support::sandbox::run_dirs(&merged);
    assert_eq!(runs.len(), 1, "{runs:?}");
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(runs[0].join("run.json")).unwrap()).unwrap();
    assert_eq!(m["derived"]["kind"], "merged", "{m}");
    let o = fsbench().arg("report").arg(&runs[0]).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(!text.contains("--resume") && text.contains("(the run was merged from shards)"), "{text}");
    let (code, err) = resume(&runs[0], &tmp.path().join("w"));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("was merged from shards"), "{err}");
}

/// Regression (security review, round two): `scenario_sha256` was never checked against
/// the scenario text, so a run.json could pair numbers (or a resume) with any text. A
/// mismatch is now a load error naming the run, for every reader.
#[test]
fn a_tampered_scenario_sha256_is_refused_naming_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let text = latfs_scenario_text("q", "");
    let mut m = meta(Some("BASE"), "q", &text, "lat_fs", vec![params(1)]);
    m.scenario_text = text.replace("quota_refs = 2", "quota_refs = 0");
    let dir = write_run(&tmp.path().join("q/r1"), &m, &[latfs_cell(params(1), &[100.0])]);
    for args in [&["report"][..], &["merge"][..], &["run", "--resume"][..]] {
        let o = fsbench().args(args).arg(&dir).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!("{}: scenario_sha256: does not match", dir.join("run.json").display())),
            "{args:?}: {err}"
        );
    }
}
