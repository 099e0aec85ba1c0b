//! A paired run for real: `scenarios/paired-nodelalloc.toml` shrunk to one test, two to
//! three pairs of short windows on loop-over-tmpfs ext4. The cell files' pairing must join
//! the two arms into pairs, and nothing may stay mounted or attached.

use crate::support::kernel::assert_no_leaks;
use crate::support::sandbox::Sandbox;

/// One test, 2 to 3 pairs of one 50 ms repetition, every sample kept (a busy test machine
/// would otherwise void pair after pair), a fixed seed.
const SHRUNK: &[&str] = &[
    "run",
    "scenarios/paired-nodelalloc.toml",
    "--only",
    "test=chown",
    "--set",
    "compare.pairs.min=2",
    "--set",
    "compare.pairs.max=3",
    "--set",
    "compare.seed=11",
    "--set",
    "workload.warmup=10ms",
    "--set",
    "workload.duration=50ms",
    "--set",
    "workload.repetitions=1",
    "--set",
    "workload.disturbance=off",
    "--set",
    "backing.image_size=64MiB",
];

fn cell(run: &std::path::Path, id: &str) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(run.join(format!("cells/{id}.json"))).unwrap()).unwrap()
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn a_paired_run_stores_pairs_that_join_its_arms() {
    skip_unless_root!();
    let sb = Sandbox::new("fsbench-paired-");
    let out = sb.fsbench(SHRUNK).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{err}", String::from_utf8_lossy(&out.stdout));
    assert!(err.contains("pair group S-qoff-t1-chown:"), "{err}");
    let run = &sb.runs()[0];
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    assert_eq!(meta["pair_seed"], 11);
    let base = cell(run, "ext4-S-qoff-t1-chown");
    let cand = cell(run, "ext4-nodelalloc-S-qoff-t1-chown");
    let (bp, cp) = (&base["pairing"], &cand["pairing"]);
    assert_eq!((bp["arm"].as_u64(), cp["arm"].as_u64()), (Some(0), Some(1)), "{bp:#}");
    assert_eq!(bp["arms"], serde_json::json!(["ext4", "ext4-nodelalloc"]));
    assert_eq!((bp["group"].as_str(), bp["seed"].as_u64()), (Some("S-qoff-t1-chown"), Some(11)));
    let stops = ["regressed", "improved", "unchanged", "max_pairs"];
    assert!(stops.contains(&bp["stop"].as_str().unwrap()), "{bp:#}");
    assert_eq!(bp["stop"], cp["stop"]);
    // The same slots in both arms, each naming a round its cell holds.
    let pairs = |p: &serde_json::Value| p["pairs"].as_array().unwrap().clone();
    let (b, c) = (pairs(bp), pairs(cp));
    assert!((2..=3).contains(&b.len()), "{bp:#}");
    assert_eq!(b.len(), c.len());
    for (x, y) in b.iter().zip(&c) {
        assert_eq!((&x["slot"], &x["order"]), (&y["slot"], &y["order"]));
        for (p, cell) in [(x, &base), (y, &cand)] {
            let round = p["round"].as_u64().unwrap();
            let reps = cell["latfs"]["repetitions"].as_array().unwrap();
            assert!(reps.iter().any(|r| r["round"].as_u64().unwrap_or(0) == round), "round {round}: {cell:#}");
        }
    }
    assert_no_leaks(sb.path());
}

/// A real slowdown, injected: the candidate arm's workers run in a cgroup held to 5%
/// of a CPU (`cpu.max`), the baseline's in one without a limit (so both arms are scheduled
/// as a group). The paired gate must call it `regressed` by itself (`gate RUN`, exit 1),
/// with the limit read back into the candidate's cell file and no group left behind.
#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn a_cpu_limited_arm_is_gated_regressed_by_the_paired_gate() {
    skip_unless_root!();
    let sb = Sandbox::new("fsbench-paired-slow-");
    // 5% of a CPU, not a quarter: at load 9 on 2 cores the unlimited arm gets about a quarter of
    // a CPU too, so a 25% quota gave a ratio of 0.90 [0.80, 1.02] and an inconclusive gate.
    let scenario = sb.path().join("slow.toml");
    std::fs::write(
        &scenario,
        r#"schema = 1
name = "slow"
description = "ext4 against ext4 held to 5% of a CPU, paired"
[matrix]
fs = ["ext4", "ext4-slow"]
layout = ["S"]
tasks = [1]
test = ["chown"]
[filesystems.ext4]
mount = ["barrier=0", "noload"]
cgroup = { "cpu.max" = "max" }
[filesystems.ext4-slow]
type = "ext4"
mount = ["barrier=0", "noload"]
cgroup = { "cpu.max" = "5000 100000" }
[backing]
kind = "tmpfs-loop"
image_size = "64MiB"
[workload]
kind = "lat_fs"
warmup = "20ms"
duration = "200ms"
repetitions = 2
disturbance = "off"
[compare]
arms = "fs"
pairs = { min = 3, max = 6 }
seed = 5
[gate]
threshold = "5%"
"#,
    )
    .unwrap();
    let out = sb.fsbench(&["run", scenario.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let run = sb.runs()[0].clone();
    let slow = cell(&run, "ext4-slow-S-qoff-t1-chown");
    let limits = slow["cgroup"]["limits"].as_array().unwrap();
    assert!(limits.iter().any(|l| l["key"] == "cpu.max"), "{:#}", slow["cgroup"]);
    let gate = crate::support::fsbench().arg("gate").arg(&run).output().unwrap();
    let text = String::from_utf8_lossy(&gate.stdout);
    assert_eq!(gate.status.code(), Some(1), "{text}\n{}", String::from_utf8_lossy(&gate.stderr));
    assert!(text.contains("1 regressed"), "{text}");
    assert_no_leaks(sb.path());
}

/// A paired steps scenario: ext4 against ext4 with `nodelalloc`, one iteration of the seed's
/// loop on the small fixture per member, 2 to 3 pairs. `MKFS` is the variant's mkfs options.
const PAIRED_STEPS: &str = r#"schema = 1
name = "paired-steps"
[matrix]
fs = ["ext4", "ext4-nodelalloc"]
[filesystems.ext4]
mkfs = ["-E", "lazy_itable_init=0,lazy_journal_init=0"]
[filesystems.ext4-nodelalloc]
type = "ext4"
mkfs = MKFS
mount = ["nodelalloc"]
[backing]
kind = "tmpfs-loop"
image_size = "64MiB"
[archive]
path = "ARCHIVE"
[workload]
kind = "steps"
iterations = 1
disturbance = "off"
steps = [
  { op = "rm_rf", path = "linux-2.5.63" },
  { op = "untar", archive = "linux-2.5.63-small.tar.gz" },
  { op = "sync" },
]
[compare]
arms = "fs"
pairs = { min = 2, max = 3 }
seed = 3
"#;

/// `PAIRED_STEPS` written into the sandbox with the variant's mkfs options `mkfs`.
fn paired_steps_scenario(sb: &Sandbox, mkfs: &str) -> std::path::PathBuf {
    let archive = crate::support::crate_root().join("fixtures/linux-2.5.63-small.tar.gz");
    let text = PAIRED_STEPS.replace("ARCHIVE", archive.to_str().unwrap()).replace("MKFS", mkfs);
    let path = sb.path().join("paired-steps.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Each member of a steps pair is a fresh run of the scenario's iterations, appended to its
/// cell: what the cells store must join into pairs for `report` and `gate RUN`, per step.
#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn a_paired_steps_run_is_reported_and_gated_per_step() {
    skip_unless_root!();
    let sb = Sandbox::new("fsbench-paired-steps-");
    let scenario = paired_steps_scenario(&sb, r#"["-E", "lazy_itable_init=0,lazy_journal_init=0"]"#);
    let plan = crate::support::fsbench().arg("plan").arg(&scenario).output().unwrap();
    let plan_out = String::from_utf8_lossy(&plan.stdout);
    assert!(plan.status.success(), "{plan_out}{}", String::from_utf8_lossy(&plan.stderr));
    assert!(plan_out.contains("pair groups (1): S-qoff-t1"), "{plan_out}");
    assert!(plan_out.contains("pairs take about") && plan_out.contains("at worst (3 pairs and 3"), "{plan_out}");

    let out = sb.fsbench(&["run", scenario.to_str().unwrap()]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{err}", String::from_utf8_lossy(&out.stdout));
    assert!(err.contains("pair group S-qoff-t1:"), "{err}");
    let run = sb.runs()[0].clone();
    let base = cell(&run, "ext4-S-qoff-t1");
    let cand = cell(&run, "ext4-nodelalloc-S-qoff-t1");
    for c in [&base, &cand] {
        let p = &c["pairing"];
        let pairs = p["pairs"].as_array().unwrap();
        assert!((2..=3).contains(&pairs.len()), "{p:#}");
        // One iteration per member: every pair's round is an iteration the cell holds.
        let iterations = c["steps"]["iterations"].as_array().unwrap();
        assert!(pairs.iter().all(|s| (s["round"].as_u64().unwrap() as usize) < iterations.len()), "{c:#}");
        assert!(["regressed", "improved", "unchanged", "max_pairs"].contains(&p["stop"].as_str().unwrap()), "{p:#}");
    }
    assert_eq!(base["pairing"]["stop"], cand["pairing"]["stop"]);
    let n = base["pairing"]["pairs"].as_array().unwrap().len() as u64;

    let report = crate::support::fsbench().arg("report").arg(&run).output().unwrap();
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(report.status.success(), "{text}{}", String::from_utf8_lossy(&report.stderr));
    assert!(text.contains("Paired comparison") && text.contains("S-qoff-t1 #1 untar"), "{text}");
    let gate = crate::support::fsbench().args(["gate", "--json"]).arg(&run).output().unwrap();
    assert!(matches!(gate.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&gate.stderr));
    let doc = crate::schemas::conforming("gate.schema.json", &gate.stdout, "gate RUN --json (paired steps)");
    let rows = doc["report"]["paired"]["comparisons"].as_array().unwrap();
    let steps: Vec<&str> = rows.iter().map(|r| r["step"].as_str().unwrap()).collect();
    assert_eq!(steps, ["#0 rm_rf", "#1 untar", "#2 sync"]);
    // Every pair joined: the untar of every member timed on both sides.
    assert_eq!(rows[1]["pairs"].as_u64(), Some(n), "{:#}", rows[1]);
    assert!(rows[1]["change"].is_object(), "{:#}", rows[1]);
    assert_no_leaks(sb.path());
}

/// An arm whose mkfs rejects its options fails every attempt: its group stops after three
/// instead of running out its pairs, and report and gate say which arm and why.
#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn a_group_whose_arm_cannot_be_made_stops_after_three_attempts() {
    skip_unless_root!();
    let sb = Sandbox::new("fsbench-paired-failing-");
    let scenario = paired_steps_scenario(&sb, r#"["-O", "no_such_feature"]"#);
    let out = sb.fsbench(&["run", scenario.to_str().unwrap()]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("stopped: a member failed: ext4-nodelalloc-S-qoff-t1: failed in 3 attempts in a row"),
        "{err}"
    );
    let run = sb.runs()[0].clone();
    let bad = cell(&run, "ext4-nodelalloc-S-qoff-t1");
    assert_eq!(bad["status"], "failed", "{bad:#}");
    assert_eq!(bad["pairing"]["stop"], "member_failed", "{bad:#}");
    assert!(bad["pairing"]["stop_reason"].as_str().unwrap().contains("no_such_feature"), "{bad:#}");
    // The baseline ran in each of the three attempts, and nothing more.
    let base = cell(&run, "ext4-S-qoff-t1");
    assert_eq!(base["steps"]["iterations"].as_array().unwrap().len(), 3, "{base:#}");
    let report = crate::support::fsbench().arg("report").arg(&run).output().unwrap();
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(text.contains("member failed") && text.contains("the group stopped: ext4-nodelalloc-S-qoff-t1"), "{text}");
    // No pair to gate: exit 2, and the error says which group gave up and why.
    let gate = crate::support::fsbench().arg("gate").arg(&run).output().unwrap();
    let (text, err) = (String::from_utf8_lossy(&gate.stdout), String::from_utf8_lossy(&gate.stderr));
    assert_eq!(gate.status.code(), Some(2), "{text}\n{err}");
    assert!(text.contains("failed in 3 attempts in a row"), "{text}\n{err}");
    assert!(err.contains("(pair group S-qoff-t1 stopped: ext4-nodelalloc-S-qoff-t1: failed in 3"), "{err}");
    assert_no_leaks(sb.path());
}

/// An A/A pair beside a steady CPU hog (issue #38): both members see the same load, so the
/// pairs are kept under common load rather than voided one by one for a disturbance that
/// cancels in their ratio, and two identical arms are never called regressed.
#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn an_a_a_pair_beside_a_steady_cpu_hog_keeps_its_pairs_under_common_load() {
    skip_unless_root!();
    let sb = Sandbox::new("fsbench-paired-busy-");
    let scenario = sb.path().join("aa.toml");
    // Two tasks beside two busy loops on this machine: every window is contended, alike.
    std::fs::write(
        &scenario,
        r#"schema = 1
name = "aa"
[matrix]
fs = ["ext4", "ext4-same"]
layout = ["S"]
tasks = [2]
test = ["chown"]
[filesystems.ext4]
mount = ["barrier=0", "noload"]
[filesystems.ext4-same]
type = "ext4"
mount = ["barrier=0", "noload"]
[backing]
kind = "tmpfs-loop"
image_size = "64MiB"
[workload]
kind = "lat_fs"
warmup = "10ms"
duration = "100ms"
repetitions = 2
max_reruns = 1
[compare]
arms = "fs"
pairs = { min = 2, max = 3 }
seed = 4
[gate]
threshold = "5%"
"#,
    )
    .unwrap();
    let hogs = crate::support::hogs::Hogs::start(2);
    // The scenario's default threshold, said (the sandbox turns it off otherwise).
    let out = sb.fsbench(&["run", scenario.to_str().unwrap(), "--set", "workload.disturbance=25%"]).output().unwrap();
    drop(hogs);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{err}", String::from_utf8_lossy(&out.stdout));
    let run = sb.runs()[0].clone();
    let base = cell(&run, "ext4-S-qoff-t2-chown");
    let pairs = base["pairing"]["pairs"].as_array().unwrap().clone();
    assert!(!pairs.is_empty(), "no pairs beside a steady load:\n{err}\n{:#}", base["pairing"]);
    assert!(pairs.iter().any(|p| p["common_load"] == true), "{err}\n{:#}", base["pairing"]);
    assert_ne!(base["pairing"]["stop"], "regressed", "{err}");
    let gate = crate::support::fsbench().args(["gate", "--json"]).arg(&run).output().unwrap();
    assert!(matches!(gate.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&gate.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&gate.stdout).unwrap();
    let rows = doc["report"]["paired"]["comparisons"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{doc:#}");
    let verdict = rows[0]["verdict"].as_str().unwrap();
    assert!(["unchanged", "inconclusive"].contains(&verdict), "{:#}", rows[0]);
    assert!(rows[0]["pairs"].as_u64().unwrap() >= 1 && rows[0]["common_load"].as_u64().unwrap() >= 1, "{:#}", rows[0]);
    assert_no_leaks(sb.path());
}
