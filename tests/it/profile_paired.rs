//! Profiles of a real paired run (`[compare] arms` with `--profile`): each arm profiled once
//! per pair for the first pairs, stored per member, and the arms' profile diff judged
//! across the pairs: ext4 `data=journal` against `data=ordered` on write_truncate grows the
//! journalled write path (`ext4_write_begin`) and shrinks delayed allocation; two identical arms list no function as changed.

use std::path::Path;

use crate::support::kernel::assert_no_leaks;
use crate::support::sandbox::Sandbox;
use crate::support::skip;

/// A paired write_truncate scenario of two ext4 arms, each a name and the TOML of its
/// filesystem after `type` (its mount options, a cgroup limit); five pairs (the profiled
/// ones), 1 s windows, every sample kept.
fn scenario(dir: &Path, a: (&str, &str), b: (&str, &str)) -> std::path::PathBuf {
    let path = dir.join("arms.toml");
    let text = format!(
        r#"schema = 1
name = "arms"
[matrix]
fs = ["{}", "{}"]
layout = ["S"]
tasks = [1]
test = ["write_truncate"]
[filesystems.{}]
type = "ext4"
{}
[filesystems.{}]
type = "ext4"
{}
[backing]
kind = "tmpfs-loop"
image_size = "64MiB"
[workload]
kind = "lat_fs"
warmup = "20ms"
duration = "1s"
repetitions = 1
disturbance = "off"
profile = "cpu"
[compare]
arms = "fs"
pairs = {{ min = 5, max = 5 }}
seed = 3
[gate]
threshold = "2%"
"#,
        a.0, b.0, a.0, a.1, b.0, b.1
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// A sandbox for the test `name`, or `None` (the test reported as skipped) where perf
/// cannot profile here.
fn sandbox_with_perf(name: &str, prefix: &str) -> Option<Sandbox> {
    if let Err(why) = fsbench::profile::detect(&fsbench::profile::Probe::host()) {
        skip(name, &format!("no profiler here: {why}"));
        return None;
    }
    Some(Sandbox::new(prefix))
}

/// The stored cell `id` of `run`, and the pair index of each of its profiles in order.
fn profiled_cell(run: &Path, id: &str) -> (fsbench::model::CellResult, Vec<Option<u32>>) {
    let path = run.join(format!("cells/{id}.json"));
    let cell: fsbench::model::CellResult = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let pairs = cell.profile.iter().chain(&cell.pair_profiles).map(|p| p.pair).collect();
    (cell, pairs)
}

/// Run the scenario; its run directory and `report`'s text.
fn run(sb: &Sandbox, scenario: &Path) -> (std::path::PathBuf, String) {
    let out = sb.fsbench(&["run", scenario.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_no_leaks(sb.path());
    let run = sb.runs().pop().unwrap();
    let report = crate::support::fsbench().arg("report").arg(&run).output().unwrap();
    assert!(report.status.success(), "{}", String::from_utf8_lossy(&report.stderr));
    (run, String::from_utf8_lossy(&report.stdout).into_owned())
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn data_journal_arm_grows_the_journalled_write_path_across_pairs() {
    skip_unless_root!();
    let Some(sb) = sandbox_with_perf(&test_name!(), "fsbench-prof-pair-") else { return };
    let s = scenario(
        sb.path(),
        ("ordered", r#"mount = ["barrier=0", "data=ordered"]"#),
        ("journal", r#"mount = ["barrier=0", "data=journal"]"#),
    );
    let (run, text) = run(&sb, &s);
    // One profile per member of each of the five pairs, stored per member.
    let (cell, pairs) = profiled_cell(&run, "journal-S-qoff-t1-write_truncate");
    assert_eq!(pairs, (0..5).map(Some).collect::<Vec<_>>(), "{:?}", cell.notes);
    assert!(run.join("profiles/journal-S-qoff-t1-write_truncate.pair4.folded").is_file());
    // The timed members are the pairs' only repetitions.
    assert_eq!(cell.latfs.as_ref().unwrap().repetitions.len(), 5);
    let at = text.find("Profile diff of S-qoff-t1-write_truncate (ordered → journal)").expect(&text);
    let section = &text[at..];
    assert!(section.contains("across 5 pairs of profiles"), "{section}");
    let grown = &section[section.find("function (grew)").expect(section)..];
    let grown = &grown[..grown.find("\n\n").unwrap_or(grown.len())];
    // The journalled write path's entry in place of the delayed-allocation one, and the
    // journalling itself among the top 10: the callers above each change (the write system
    // call, generic_perform_write) are folded into their call paths, not ranked.
    assert!(grown.contains("ext4_write_begin"), "{section}");
    assert!(grown.contains("ext4_journalled_write_end") || grown.contains("jbd2_"), "{section}");
    assert!(!grown.contains("\nvfs_write "), "a caller carried by its callee is not ranked: {section}");
    let shrunk = &section[section.find("function (shrank)").expect(section)..];
    assert!(shrunk.contains("ext4_da_write_begin") || shrunk.contains("ext4_da_write_end"), "{section}");
    // The gate's mail carries the same diff.
    let mail = sb.path().join("mail.txt");
    let gate = crate::support::fsbench().arg("gate").arg(&run).arg("--email").arg(&mail).output().unwrap();
    assert!(matches!(gate.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&gate.stderr));
    let mail = std::fs::read_to_string(mail).unwrap();
    assert!(mail.contains("perf-profile of S-qoff-t1-write_truncate") && mail.contains("across 5 pairs"), "{mail}");
    // And its terminal output, under the verdicts, with each change's interval across the pairs.
    let out = String::from_utf8_lossy(&gate.stdout);
    let why = &out[out.find("Profile changes:").unwrap_or_else(|| panic!("{out}"))..];
    assert!(why.contains("S-qoff-t1-write_truncate (ordered → journal)"), "{why}");
    assert!(why.contains("across 5 pairs of profiles, 95% interval"), "{why}");
    assert!(why.lines().any(|l| l.trim_start().starts_with("grew ") && l.contains(", +")), "{why}");
    assert!(mail.lines().all(|l| l.chars().count() <= 80), "{mail}");
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn identical_arms_list_no_function_change_across_pairs() {
    skip_unless_root!();
    let Some(sb) = sandbox_with_perf(&test_name!(), "fsbench-prof-aa-") else { return };
    let s = scenario(sb.path(), ("plain", r#"mount = ["barrier=0"]"#), ("same", r#"mount = ["barrier=0"]"#));
    let (_, text) = run(&sb, &s);
    let at = text.find("Profile diff of S-qoff-t1-write_truncate (plain → same)").expect(&text);
    let section = &text[at..];
    assert!(section.contains("across 5 pairs of profiles"), "{section}");
    // Holm keeps the chance of any false change at 5% over the ~140 functions tested, so
    // an A/A run lists one now and then (a fresh-clone CI run once listed
    // ext4_buffered_write_iter at -1.5 points, p 0.02): at most one, and small.
    let listed: Vec<f64> = ["function (grew)", "function (shrank)"]
        .iter()
        .filter_map(|t| section.find(t))
        .flat_map(|at| section[at..].split("\n\n").next().unwrap().lines().skip(1))
        .filter_map(|r| r.split_whitespace().nth(3)?.parse::<f64>().ok())
        .collect();
    assert!(listed.len() <= 1 && listed.iter().all(|pp| pp.abs() < 3.0), "{section}");
}

/// An injected slowdown (the candidate arm's workers limited to 20% of one CPU by its
/// cgroup's `cpu.max`) makes the arm slower but runs the same code: its workers ran less
/// (fewer samples in the same windows), and no function of the code it ran is listed as
/// changed. (That the paired gate calls such an arm regressed is `paired_run`'s test.)
///
/// One change is real and allowed: the profiled worker process's start (the dynamic
/// loader, about a dozen samples a profile in either arm) weighs more among the throttled
/// arm's fewer samples, so the process's root frame (`std::rt::lang_start`, every other
/// sample) shrinks by about a point.
#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn a_cgroup_slowdown_runs_less_but_changes_no_function() {
    skip_unless_root!();
    let Some(sb) = sandbox_with_perf(&test_name!(), "fsbench-prof-slow-") else { return };
    let s = scenario(
        sb.path(),
        ("full", "mount = [\"barrier=0\"]\ncgroup = { \"cpu.max\" = \"max\" }"),
        ("throttled", "mount = [\"barrier=0\"]\ncgroup = { \"cpu.max\" = \"20000 100000\" }"),
    );
    let (_, text) = run(&sb, &s);
    let at = text.find("Profile diff of S-qoff-t1-write_truncate (full → throttled)").expect(&text);
    let section = &text[at..];
    assert!(section.contains("across 5 pairs of profiles") && section.contains("0 grew and "), "{section}");
    if let Some(at) = section.find("function (shrank)") {
        let rows = section[at..].split("\n\n").next().unwrap().lines().skip(1);
        let names: Vec<&str> = rows.filter_map(|r| r.split_whitespace().next()).collect();
        assert!(names.iter().all(|n| *n == "std::rt::lang_start" || *n == "main"), "{section}");
    }
    // "(N → M samples in all)": the limit held the throttled arm's workers to less CPU time.
    let counts = &section[section.find("profiles (").expect(section) + "profiles (".len()..];
    let n: Vec<u64> = counts.split(" samples").next().unwrap().split(" → ").map(|x| x.parse().unwrap()).collect();
    assert!(n[1] < n[0], "the throttled arm sampled {} against {}: {section}", n[1], n[0]);
}

/// The profile files of `run`, by name, with their bytes. Read while the run writes
/// them: the store's temporary files (renamed away between the listing and the read) are
/// not profiles.
fn profile_files(run: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let Ok(dir) = std::fs::read_dir(run.join("profiles")) else { return Default::default() };
    dir.flatten()
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .filter(|(name, _)| name.ends_with(".folded") && !name.starts_with('.'))
        .map(|(name, path)| {
            let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (name, bytes)
        })
        .collect()
}

/// A paired profiled run stopped by Ctrl-C once three profiles are stored, then resumed:
/// the resumed members are profiled under the pair indexes that follow the stored ones,
/// so every stored profile is kept as it was, and each arm ends with one profile per pair.
#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn a_resumed_paired_run_profiles_the_pairs_it_had_not_and_keeps_the_stored_ones() {
    skip_unless_root!();
    let Some(sb) = sandbox_with_perf(&test_name!(), "fsbench-prof-resume-") else { return };
    let s = scenario(sb.path(), ("plain", r#"mount = ["barrier=0"]"#), ("same", r#"mount = ["barrier=0"]"#));
    let mut child = sb
        .fsbench(&["run", s.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Three of the ten profiles stored: seven members (each a 1 s window and a profiled
    // one) are still to run when Ctrl-C arrives.
    let run = crate::support::poll(std::time::Duration::from_secs(300), std::time::Duration::from_millis(20), || {
        sb.runs().into_iter().find(|r| profile_files(r).len() >= 3)
    })
    .expect("three profiles stored");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "the run was stopped before its last pair");
    let before = profile_files(&run);
    assert!(before.len() < 10, "{:?}", before.keys());
    let out = sb.fsbench(&["run", "--resume", run.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_no_leaks(sb.path());
    let after = profile_files(&run);
    for (name, bytes) in &before {
        assert!(after.get(name) == Some(bytes), "{name}: the stored profile was rewritten by the resumed run");
    }
    for arm in ["plain", "same"] {
        let id = format!("{arm}-S-qoff-t1-write_truncate");
        let (cell, pairs) = profiled_cell(&run, &id);
        assert_eq!(pairs, (0..5).map(Some).collect::<Vec<_>>(), "{id}: {:?}", cell.notes);
        for k in 1..5 {
            assert!(after.contains_key(&format!("{id}.pair{k}.folded")), "{id} pair {k}: {:?}", after.keys());
        }
    }
}
