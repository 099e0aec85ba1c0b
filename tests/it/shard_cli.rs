//! `fsbench run --shard` / engine variables and `fsbench merge`, through the binary.
//! Uses a `dir` backing (no mounts), so it runs the same as root and not.

use std::path::Path;
use std::process::Output;

use crate::support::fsbench;
use crate::support::sandbox::{Sandbox, cell_ids};

const QUICK: &[&str] = &[
    "--set",
    "backing.kind=dir",
    "--set",
    "workload.warmup=5ms",
    "--set",
    "workload.duration=20ms",
    "--set",
    "workload.repetitions=2",
    "--set",
    "workload.disturbance=off",
    "--only",
    "fs=ext4,tasks=1",
];

fn sandbox() -> Sandbox {
    Sandbox::new("fsbench-shard-")
}

/// `fsbench run` of the quickstart (4 cells) with a clean engine environment plus `env`.
fn run(sb: &Sandbox, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let mut args = vec!["run", "scenarios/quickstart.toml"];
    args.extend_from_slice(QUICK);
    args.extend_from_slice(extra);
    let mut c = sb.fsbench(&args);
    for v in [
        "SLURM_ARRAY_TASK_ID",
        "SLURM_ARRAY_TASK_COUNT",
        "SLURM_ARRAY_TASK_MIN",
        "SLURM_ARRAY_JOB_ID",
        "JOB_COMPLETION_INDEX",
        "FSBENCH_SHARD_COUNT",
        "FSBENCH_RUN_KEY",
    ] {
        c.env_remove(v);
    }
    c.envs(env.iter().copied());
    c.output().unwrap()
}

/// `fsbench merge <dirs> --format <format>`.
fn merge(dirs: &[&Path], format: &str) -> Output {
    fsbench().arg("merge").args(dirs).args(["--format", format]).env_remove("FSBENCH_RUN_KEY").output().unwrap()
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\n{}\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn meta(run: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap()
}

#[test]
fn three_shards_partition_the_run_and_merge_reports_gaps_by_number() {
    let sb = sandbox();
    for k in 1..=3 {
        ok(&run(&sb, &["--shard", &format!("{k}/3")], &[]));
    }
    let runs = sb.runs();
    assert_eq!(runs.len(), 3);
    let mut all: Vec<String> = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        let name = r.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.ends_with(&format!("-shard{}of3", i + 1)), "{name}");
        let m = meta(r);
        assert_eq!(m["shard"]["index"], i + 1);
        assert_eq!(m["shard"]["total_cells"], 4);
        assert_eq!(m["shard"]["cell_indices"].as_array().unwrap().len(), cell_ids(r).len());
        all.extend(cell_ids(r));
    }
    all.sort();
    let n = all.len();
    all.dedup();
    assert_eq!((n, all.len()), (4, 4), "every cell exactly once: {all:?}");

    let root = sb.out();
    let text = ok(&merge(&[&root], "table"));
    assert!(text.contains("merged 3 of 3 shards of run "), "{text}");
    assert!(text.contains("#nr_task"), "{text}");

    // A second copy of shard 1 and no shard 2: both named by number, exit 1.
    let copy = runs[0].with_file_name("copy-of-shard1");
    std::fs::create_dir_all(copy.join("cells")).unwrap();
    std::fs::copy(runs[0].join("run.json"), copy.join("run.json")).unwrap();
    std::fs::remove_dir_all(&runs[1]).unwrap();
    let o = merge(&[&root.join("quickstart")], "table");
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("merged 2 of 3 shards") && text.contains("missing shards: 2"), "{text}");
    assert!(text.contains("duplicated shard 1: "), "{text}");
}

#[test]
fn hosts_are_a_dimension_not_an_average() {
    let sb = sandbox();
    ok(&run(&sb, &["--shard", "1/2"], &[]));
    ok(&run(&sb, &["--shard", "2/2"], &[]));
    // Pretend shard 2 ran on another machine.
    let r2 = &sb.runs()[1];
    let mut m = meta(r2);
    m["host"]["hostname"] = "otherhost".into();
    std::fs::write(r2.join("run.json"), serde_json::to_string_pretty(&m).unwrap()).unwrap();
    let json = ok(&merge(&[&sb.out()], "json"));
    let short = fsbench().arg("merge").arg(sb.out()).arg("--json").env_remove("FSBENCH_RUN_KEY").output().unwrap();
    assert_eq!(ok(&short), json, "--json is --format json");
    let v = crate::schemas::conforming("merge.schema.json", json.as_bytes(), "merge --json");
    assert_eq!(v["merged"].as_array().unwrap().len(), 1, "one sharded run");
    assert_eq!((v["merged"][0]["complete"].as_bool(), v["merged"][0]["shards"].as_u64()), (Some(true), Some(2)));
    let v = &v["merged"][0]["report"];
    let labels: Vec<&str> = v["runs"].as_array().unwrap().iter().map(|r| r["label"].as_str().unwrap()).collect();
    assert_eq!(labels.len(), 2, "one entry per host: {labels:?}");
    assert!(labels.contains(&"otherhost"), "{labels:?}");
    // Each cell ran on one host: its table has that host's column only, and both hosts appear.
    let mut seen = std::collections::BTreeSet::new();
    for t in v["tables"].as_array().unwrap() {
        let cols: Vec<&str> = t["columns"].as_array().unwrap().iter().map(|c| c["label"].as_str().unwrap()).collect();
        assert_eq!(cols.len(), 1, "{}: {cols:?}", t["test"]);
        seen.insert(cols[0].to_string());
    }
    assert_eq!(seen.len(), 2, "{seen:?}");

    // The same cells on two hosts (unsharded runs of one scenario): side by side, one column each.
    let sb = sandbox();
    ok(&run(&sb, &[], &[]));
    ok(&run(&sb, &[], &[]));
    let r2 = &sb.runs()[1];
    let mut m = meta(r2);
    m["host"]["hostname"] = "otherhost".into();
    std::fs::write(r2.join("run.json"), serde_json::to_string_pretty(&m).unwrap()).unwrap();
    let v: serde_json::Value = serde_json::from_str(&ok(&merge(&[&sb.out()], "json"))).unwrap();
    let v = &v["merged"][0]["report"];
    for t in v["tables"].as_array().unwrap() {
        let cols: Vec<&str> = t["columns"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(cols.len(), 2, "a column per host in {}: {cols:?}", t["test"]);
        assert!(cols.iter().any(|c| c.starts_with("otherhost-")), "{cols:?}");
        let medians: Vec<bool> = t["values"][0].as_array().unwrap().iter().map(|x| !x.is_null()).collect();
        assert_eq!(medians.len(), 2);
    }
}

#[test]
fn engine_variables_pick_the_shard() {
    let sb = sandbox();
    let slurm = [
        ("SLURM_ARRAY_TASK_ID", "2"),
        ("SLURM_ARRAY_TASK_COUNT", "2"),
        ("SLURM_ARRAY_TASK_MIN", "1"),
        ("SLURM_ARRAY_JOB_ID", "99"),
    ];
    ok(&run(&sb, &[], &slurm));
    ok(&run(&sb, &[], &[("JOB_COMPLETION_INDEX", "0"), ("FSBENCH_SHARD_COUNT", "2"), ("FSBENCH_RUN_KEY", "slurm-99")]));
    let runs = sb.runs();
    let names: Vec<String> = runs.iter().map(|r| r.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert!(
        names.iter().any(|n| n.ends_with("-shard2of2")) && names.iter().any(|n| n.ends_with("-shard1of2")),
        "{names:?}"
    );
    assert!(runs.iter().all(|r| meta(r)["shard"]["key"] == "slurm-99"));
    let text = ok(&merge(&[&sb.out()], "table"));
    assert!(text.contains("merged 2 of 2 shards of run slurm-99"), "{text}");
}

#[test]
fn inconsistent_shard_settings_are_usage_errors() {
    let sb = sandbox();
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
    let cases: &[Case] = &[
        (&["--shard", "5/4"], &[], "expected K/N"),
        (&["--shard", "1/2", "--shard-count", "3"], &[], "disagrees"),
        (&["--shard-count", "3"], &[], "--shard-count needs JOB_COMPLETION_INDEX"),
        (&[], &[("JOB_COMPLETION_INDEX", "1")], "FSBENCH_SHARD_COUNT"),
        (&[], &[("JOB_COMPLETION_INDEX", "4"), ("FSBENCH_SHARD_COUNT", "4")], "not below the shard count"),
        (
            &[],
            &[("SLURM_ARRAY_TASK_ID", "3"), ("SLURM_ARRAY_TASK_COUNT", "2"), ("SLURM_ARRAY_TASK_MIN", "1")],
            "not below",
        ),
        (
            &["--shard-count", "3"],
            &[("SLURM_ARRAY_TASK_ID", "1"), ("SLURM_ARRAY_TASK_COUNT", "2"), ("SLURM_ARRAY_TASK_MIN", "1")],
            "disagrees",
        ),
    ];
    for (args, env, message) in cases {
        let o = run(&sb, args, env);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?} {env:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?} {env:?}: {stderr}");
    }
    assert!(sb.runs().is_empty(), "no run directory for a refused shard");
}

#[test]
fn shards_of_one_key_from_different_scenarios_are_refused() {
    let sb = sandbox();
    let key = [("FSBENCH_RUN_KEY", "mixed")];
    ok(&run(&sb, &["--shard", "1/2"], &key));
    ok(&run(&sb, &["--shard", "2/2", "--set", "workload.repetitions=3"], &key));
    let o = merge(&[&sb.out()], "table");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("different scenario texts"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Regression (CLI review): merging a run that never finished exited 0.
#[test]
fn an_unfinished_run_does_not_merge_cleanly() {
    let sb = sandbox();
    ok(&run(&sb, &[], &[]));
    let run = sb.runs().pop().unwrap();
    assert_eq!(merge(&[&run], "table").status.code(), Some(0));
    // As a killed run leaves it: no finish time.
    let mut m = meta(&run);
    m["finished"] = serde_json::Value::Null;
    std::fs::write(run.join("run.json"), serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    assert_eq!(merge(&[&run], "table").status.code(), Some(1));
}

#[test]
fn merge_out_writes_a_run_that_report_compare_and_gate_accept() {
    let sb = sandbox();
    for k in 1..=2 {
        ok(&run(&sb, &["--shard", &format!("{k}/2")], &[]));
    }
    let merged_root = sb.out().with_file_name("merged");
    let o = fsbench()
        .arg("merge")
        .arg(sb.out())
        .arg("--out")
        .arg(&merged_root)
        .env_remove("FSBENCH_RUN_KEY")
        .output()
        .unwrap();
    ok(&o);
    let scenario = merged_root.join("quickstart");
    let dirs: Vec<_> = std::fs::read_dir(&scenario).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let merged = &dirs[0];
    assert!(merged.file_name().unwrap().to_string_lossy().ends_with("-merged"), "{merged:?}");
    assert_eq!(cell_ids(merged).len(), 4, "every cell of both shards");
    let m = meta(merged);
    assert!(m["shard"].is_null() && m["planned_cells"].as_array().unwrap().len() == 4, "{m}");
    let text = ok(&fsbench().arg("report").arg(merged).output().unwrap());
    assert!(text.contains("#nr_task"), "{text}");
    // The merged run is found like any other: listed, and named by `latest`.
    let list = ok(&fsbench().arg("report").arg(&scenario).output().unwrap());
    assert!(list.starts_with("1 run in ") && list.contains("4/4"), "{list}");
    ok(&fsbench().args(["gate", "--candidate", "latest", "--baseline"]).arg(merged).output().unwrap());
    ok(&fsbench().arg("compare").arg(format!("A={}", merged.display())).arg("B=latest").output().unwrap());
}
