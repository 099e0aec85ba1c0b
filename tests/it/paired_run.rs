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

/// A real slowdown, injected: the candidate arm's workers run in a cgroup held to a quarter
/// of a CPU (`cpu.max`), the baseline's in one without a limit (so both arms are scheduled
/// as a group). The paired gate must call it `regressed` by itself (`gate RUN`, exit 1),
/// with the limit read back into the candidate's cell file and no group left behind.
#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn a_cpu_limited_arm_is_gated_regressed_by_the_paired_gate() {
    skip_unless_root!();
    let sb = Sandbox::new("fsbench-paired-slow-");
    let scenario = sb.path().join("slow.toml");
    std::fs::write(
        &scenario,
        r#"schema = 1
name = "slow"
description = "ext4 against ext4 held to a quarter of a CPU, paired"
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
cgroup = { "cpu.max" = "25000 100000" }
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
