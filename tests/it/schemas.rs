//! The checked-in JSON Schemas must match the types they are generated from.
//! Regenerate with `FSBENCH_BLESS=1 cargo test --test it schemas::`.

use crate::support::crate_root;

fn check(file: &str, generated: String) {
    let path = crate_root().join(file);
    if std::env::var_os("FSBENCH_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == generated,
        "{file} is stale: regenerate it with `FSBENCH_BLESS=1 cargo test --test it schemas::`"
    );
}

#[test]
fn scenario_schema_is_current() {
    check("schemas/scenario.schema.json", fsbench::scenario::file::scenario_schema_json());
}

#[test]
fn every_bundled_scenario_points_editors_at_the_schema() {
    for name in ["quickstart", "quota-smp", "kernel-untar", "quota-qemu"] {
        let text = std::fs::read_to_string(crate_root().join(format!("scenarios/{name}.toml"))).unwrap();
        assert!(
            text.starts_with("#:schema ../schemas/scenario.schema.json"),
            "{name}.toml must start with the #:schema line"
        );
    }
}

#[test]
fn result_schema_is_current() {
    check("schemas/result.schema.json", fsbench::results::result_schema_json());
}

#[test]
fn run_schema_is_current() {
    check("schemas/run.schema.json", fsbench::results::run_schema_json());
}

#[test]
fn command_output_schemas_are_current() {
    for (file, text) in fsbench::app::output::schemas() {
        check(&format!("schemas/{file}"), text);
    }
}

/// `fsbench <args>` printed JSON that conforms to `schemas/<schema>`; the document.
fn conforms(schema: &str, args: &[&str], ok_codes: &[i32]) -> serde_json::Value {
    let out = crate::support::fsbench().current_dir(crate_root()).args(args).output().unwrap();
    assert!(
        ok_codes.contains(&out.status.code().unwrap_or(-1)),
        "{args:?}: exit {:?}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    conforming(schema, &out.stdout, &format!("{args:?}"))
}

/// `stdout` of `what` is one JSON document that conforms to `schemas/<schema>`; the document.
pub(crate) fn conforming(schema: &str, stdout: &[u8], what: &str) -> serde_json::Value {
    let doc: serde_json::Value = serde_json::from_slice(stdout).unwrap_or_else(|e| panic!("{what}: {e}"));
    let schema_doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(crate_root().join("schemas").join(schema)).unwrap()).unwrap();
    let errors = crate::support::jsonschema::validate(&schema_doc, &doc);
    assert!(errors.is_empty(), "{what} breaks {schema}:\n{}", errors.join("\n"));
    assert_eq!(doc["schema"], 1, "{what}: documents carry their version");
    doc
}

#[test]
fn doctor_list_plan_validate_and_gate_json_conform_to_their_schemas() {
    let doc = conforms("doctor.schema.json", &["doctor", "--json"], &[0]);
    assert!(doc["capabilities"].as_array().unwrap().iter().any(|c| c["name"] == "root"));
    let doc = conforms("list.schema.json", &["list", "--json"], &[0]);
    assert!(doc["scenarios"].as_array().unwrap().iter().any(|s| s["name"] == "quota-smp"));
    let doc = conforms("plan.schema.json", &["plan", "scenarios/quota-smp.toml", "--json"], &[0]);
    assert_eq!(doc["cells"].as_array().unwrap().len(), 128);
    conforms("plan.schema.json", &["plan", "scenarios/kernel-untar.toml", "--format", "json"], &[0]);
    let doc = conforms(
        "validate.schema.json",
        &["validate", "scenarios/quickstart.toml", "tests/bad_scenarios/filesystems-typo.toml", "--json"],
        &[2],
    );
    assert_eq!(doc["files"][0]["ok"], true);
    assert!(doc["files"][1]["error"].as_str().unwrap().contains("did you mean `ext4`"), "{doc}");
    let tmp = tempfile::tempdir().unwrap();
    let a = crate::support::report::write_seed_run(&tmp.path().join("a"), "BASE");
    let b = crate::support::report::write_seed_run(&tmp.path().join("b"), "V3");
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let doc = conforms("gate.schema.json", &["gate", "--baseline", a, "--candidate", b, "--json"], &[0, 1]);
    assert_eq!(doc["report"]["rows"].as_array().unwrap().len(), 128);
    // Every comparison is counted under its verdict, `inconclusive` included.
    let counts = doc["counts"].as_object().unwrap();
    assert_eq!(counts.len(), 5, "{counts:?}");
    for (verdict, n) in counts {
        let rows = doc["report"]["rows"].as_array().unwrap().iter().filter(|r| r["verdict"] == **verdict).count();
        assert_eq!(n.as_u64().unwrap() as usize, rows, "{verdict}");
    }
}

#[test]
fn the_schema_check_can_fail() {
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(crate_root().join("schemas/doctor.schema.json")).unwrap())
            .unwrap();
    let v = crate::support::jsonschema::validate;
    assert!(!v(&schema, &serde_json::json!({"schema": 1, "capabilities": "x", "interrupted": false})).is_empty());
    assert!(!v(&schema, &serde_json::json!({"schema": 1, "interrupted": false})).is_empty());
    let row = serde_json::json!({"name": "root", "state": "ok", "detail": "", "remedy": 3});
    assert!(!v(&schema, &serde_json::json!({"schema": 1, "capabilities": [row], "interrupted": false})).is_empty());
    // Tuples, as schemars writes `(f64, f64)`.
    let pair = serde_json::json!({"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}], "minItems": 2, "maxItems": 2});
    assert!(v(&pair, &serde_json::json!([1.5, 2])).is_empty());
    for bad in [serde_json::json!([1.5]), serde_json::json!([1, 2, 3]), serde_json::json!(["1", 2])] {
        assert!(!v(&pair, &bad).is_empty(), "{bad}");
    }
    // A report is told apart by its workload: a steps body called lat_fs is neither.
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(crate_root().join("schemas/report.schema.json")).unwrap())
            .unwrap();
    let steps = serde_json::json!({"workload": "steps", "schema": 1, "scenario": "s", "runs": [], "warnings": [],
        "groups": [], "not_measured": [], "problems": []});
    assert!(v(&report, &steps).is_empty(), "{:?}", v(&report, &steps));
    let mut lat_fs = steps.clone();
    lat_fs["workload"] = "lat_fs".into();
    assert!(!v(&report, &lat_fs).is_empty());
}

/// `fsbench <args>` in `dir`: exit code and stdout.
fn stdout_of(dir: &std::path::Path, args: &[&str]) -> (i32, Vec<u8>) {
    let out = crate::support::fsbench().current_dir(dir).args(args).output().unwrap();
    (out.status.code().unwrap_or(-1), out.stdout)
}

/// Seed 000's run of `label` with three repetitions per cell (so ratios get a test and an
/// interval), and on its first cell the kernel counters and latency distributions the monitors record.
fn write_monitored_seed_run(dir: &std::path::Path, label: &str, spread: f64) -> std::path::PathBuf {
    use crate::support::report::*;
    use fsbench::model::{Counters, DeviceCounters, LatencyDist};
    let mut cells: Vec<_> = seed_cells(&parse_seed000(), label)
        .into_iter()
        .map(|(p, v)| latfs_cell(p, &[v * (1.0 - spread), v, v * (1.0 + spread)]))
        .collect();
    let dist = LatencyDist {
        count: 1000,
        min_ns: 900,
        mean_ns: 1000.5,
        p50_ns: 1000,
        p90_ns: 1100,
        p99_ns: 1500,
        p999_ns: 2000,
        max_ns: 2500,
        significant_digits: 2,
        buckets: vec![[900, 10], [1000, 980], [2500, 10]],
    };
    let counters = Counters {
        window_us: 1_000_000,
        devices: vec![DeviceCounters {
            device: "loop3".into(),
            write_ios: 40,
            write_sectors: 800,
            io_ticks_ms: 500,
            ..Default::default()
        }],
        context_switches: Some(5000),
        ..Default::default()
    };
    let l = cells[0].latfs.as_mut().unwrap();
    l.latency_dist = Some(dist.clone());
    for r in &mut l.repetitions {
        r.counters = Some(counters.clone());
        r.latency_dist = Some(dist.clone());
    }
    let planned = cells.iter().map(|c| c.params.clone()).collect();
    let m = meta(Some(label), "quota-smp", &latfs_scenario_text("quota-smp", "repetitions = 3\n"), "lat_fs", planned);
    write_run(dir, &m, &cells)
}

#[test]
fn report_and_compare_json_of_lat_fs_runs_conform_to_their_schemas() {
    let tmp = tempfile::tempdir().unwrap();
    let a = write_monitored_seed_run(&tmp.path().join("a"), "BASE", 0.01);
    let b = write_monitored_seed_run(&tmp.path().join("b"), "V3", 0.02);
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());

    let doc = conforms("report.schema.json", &["report", a, "--json"], &[0]);
    assert_eq!((doc["workload"].as_str(), doc["metric"].as_str()), (Some("lat_fs"), Some("total_loops")));
    assert_eq!(doc["tables"].as_array().unwrap().len(), 16);
    assert!(doc["tables"][0]["values"][0][0]["summary"]["median"].as_f64().unwrap() > 0.0, "{doc}");
    assert!(doc["tables"][0].get("ratios").is_none(), "a report has no ratios");
    assert_eq!(doc["counters"][0]["write_ios"], serde_json::json!([40, 40, 40]));
    assert_eq!(doc["latency"][0]["dist"]["p99_ns"], 1500);

    let doc = conforms("reports.schema.json", &["report", a, b, "--json"], &[0]);
    let reports = doc["reports"].as_array().unwrap();
    assert_eq!(reports.len(), 2, "one report per run in one document");
    assert_eq!(reports[1]["runs"][0]["label"], "V3");

    // Old seed runs: one repetition, so no test and an unbounded interval (`null`).
    let tmp1 = tempfile::tempdir().unwrap();
    let s = crate::support::report::write_seed_run(&tmp1.path().join("s"), "V3");
    let doc = conforms("report.schema.json", &["compare", a, s.to_str().unwrap(), "--json"], &[0]);
    let r = &doc["tables"][0]["ratios"]["values"][0][0];
    assert!(r["ratio"].as_f64().is_some() && r["ci_low"].is_null() && r["welch"].is_null(), "{r}");

    let doc = conforms("report.schema.json", &["compare", a, b, "--json"], &[0]);
    let t0 = &doc["tables"][0];
    assert_eq!(t0["ratios"]["columns"][0], "V3/BASE-ext2-M-qoff");
    let r = &t0["ratios"]["values"][0][0];
    assert!(r["ratio"].as_f64().unwrap() > 0.0 && r["ci_low"].as_f64().unwrap() < r["ci_high"].as_f64().unwrap());
    assert!(r["welch"]["p"].as_f64().is_some() && r["significant"].is_boolean(), "{r}");

    let doc = conforms("report.schema.json", &["compare", a, b, "--metric", "p99", "--json"], &[0]);
    assert_eq!(doc["metric"], "p99");
    assert_eq!(doc["tables"][0]["values"][0][0]["summary"]["median"], 1.5, "µs");
}

#[test]
fn report_and_compare_json_of_steps_runs_conform_to_their_schemas() {
    use crate::support::report::write_untar_run;
    let tmp = tempfile::tempdir().unwrap();
    // ext4's untar grows every iteration: a flagged step with a trend.
    let a = write_untar_run(&tmp.path().join("a"), "BASE", &[("ext4", [10, 200, 400]), ("xfs", [5, 6, 8])]);
    let b = write_untar_run(&tmp.path().join("b"), "NEW", &[("ext4", [12, 250, 500]), ("xfs", [5, 7, 9])]);
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());

    let doc = conforms("report.schema.json", &["report", a, "--json"], &[0]);
    assert_eq!(doc["workload"], "steps");
    let g = &doc["groups"][0];
    assert_eq!(g["iterations"].as_array().unwrap().len(), 3);
    assert_eq!(g["iterations"][2][1]["elapsed_us"], 9_000_000);
    assert!(g["flags"][0]["trend"]["change"].as_f64().unwrap() > 0.2, "{g}");
    assert!(doc.get("comparison").is_none(), "a report has no comparison");

    let doc = conforms("report.schema.json", &["compare", a, b, "--json"], &[0]);
    let c = &doc["comparison"];
    assert_eq!((c["labels"][0].as_str(), c["iterations"].as_str()), (Some("BASE"), Some("steady")));
    let untar = &c["tables"][1];
    assert_eq!(untar["label"], "tar zxf linux-2.5.63.tar.gz");
    let r = &untar["rows"][0]["ratios"][0];
    assert!(r["ratio"].as_f64().unwrap() > 1.0 && r["ci95"].as_array().is_some_and(|i| i.len() == 2), "{r}");

    let doc = conforms("report.schema.json", &["compare", a, b, "--iterations", "2", "--json"], &[0]);
    assert_eq!(doc["comparison"]["iterations"]["nth"], 2);
}

#[test]
fn the_run_listing_json_conforms_to_its_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("quota-smp");
    crate::support::report::write_seed_run(&dir.join("20101111T120000Z-BASE"), "BASE");
    crate::support::report::write_seed_run(&dir.join("20101111T130000Z-V3"), "V3");
    let doc = conforms("run-list.schema.json", &["report", dir.to_str().unwrap(), "--json"], &[0]);
    assert_eq!(doc["dir"], dir.to_str().unwrap());
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(
        (runs[0]["label"].as_str(), runs[0]["state"].as_str(), runs[0]["ok"].as_u64()),
        (Some("BASE"), Some("finished"), Some(128))
    );
}

#[test]
fn merge_json_conforms_to_its_schema_and_says_what_is_missing() {
    use crate::support::report::*;
    use fsbench::results::RunShard;
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("results");
    let text = latfs_scenario_text("quota-smp", "repetitions = 1\n");
    let cells: Vec<_> = seed_cells(&parse_seed000(), "BASE").into_iter().map(|(p, v)| latfs_cell(p, &[v])).collect();
    // Shards 1 and 3 of 3 (3 twice), shard 2 never ran.
    for (name, k) in [("shard1", 1), ("shard3", 3), ("shard3-again", 3)] {
        let mine: Vec<usize> = (0..cells.len()).filter(|i| i % 3 == k - 1).collect();
        let mine_cells: Vec<_> = mine.iter().map(|&i| cells[i].clone()).collect();
        let mut m =
            meta(Some("BASE"), "quota-smp", &text, "lat_fs", mine_cells.iter().map(|c| c.params.clone()).collect());
        m.shard = Some(RunShard {
            index: k as u32,
            count: 3,
            key: "k1".into(),
            total_cells: cells.len(),
            cell_indices: mine,
        });
        write_run(&root.join("quota-smp").join(name), &m, &mine_cells);
    }
    // Two unsharded runs of one text on two hosts: side by side.
    write_seed_run(&root.join("quota-smp/v3-here"), "V3");
    let other = write_seed_run(&root.join("quota-smp/v3-there"), "V3");
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(other.join("run.json")).unwrap()).unwrap();
    m["host"]["hostname"] = "otherhost".into();
    std::fs::write(other.join("run.json"), serde_json::to_vec(&m).unwrap()).unwrap();

    let (code, out) = stdout_of(tmp.path(), &["merge", root.to_str().unwrap(), "--json"]);
    assert_eq!(code, 1, "a shard is missing");
    let doc = conforming("merge.schema.json", &out, "merge --json");
    let merged = doc["merged"].as_array().unwrap();
    assert_eq!(merged.len(), 2, "{doc}");
    let (sharded, hosts) = (&merged[0], &merged[1]);
    assert_eq!(
        (sharded["key"].as_str(), sharded["shards"].as_u64(), sharded["runs"].as_u64()),
        (Some("k1"), Some(3), Some(3))
    );
    assert_eq!(sharded["missing"], serde_json::json!([2]));
    assert_eq!(sharded["duplicated"][0]["shard"], 3);
    assert_eq!(sharded["duplicated"][0]["dirs"].as_array().unwrap().len(), 2);
    assert_eq!((sharded["complete"].as_bool(), sharded["finished"].as_bool()), (Some(false), Some(true)));
    assert_eq!(sharded["report"]["workload"], "lat_fs");
    assert!(sharded["report"]["not_measured"].as_array().unwrap().iter().all(|n| n["status"] == "missing"));
    assert!(hosts["key"].is_null() && hosts["complete"] == true, "{hosts}");
    let labels: Vec<&str> =
        hosts["report"]["runs"].as_array().unwrap().iter().map(|r| r["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["V3@xeon-w5580", "V3@otherhost"]);
    assert!(hosts["report"]["tables"][0]["ratios"]["values"][0][0]["ratio"].as_f64().is_some(), "hosts are compared");
}

/// `run --json`: one document on stdout (no tables around it) naming the run directory a
/// CI script goes on with, the run's report and the exit code; it conforms to its schema.
#[test]
fn run_json_names_the_run_directory_and_conforms_to_its_schema() {
    let sb = crate::support::sandbox::Sandbox::new("fsbench-runjson-");
    let args = [
        "run",
        "scenarios/quickstart.toml",
        "--set",
        "backing.kind=dir",
        "--only",
        "fs=ext4,tasks=1,test=create_unlink",
        "--set",
        "workload.warmup=0ms",
        "--set",
        "workload.duration=100ms",
        "--set",
        "workload.repetitions=2",
        "--json",
    ];
    let out = sb.fsbench(&args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = conforming("run-outcome.schema.json", &out.stdout, "run --json");
    assert_eq!((doc["exit"].as_i64(), doc["interrupted"].as_bool()), (Some(0), Some(false)), "{doc}");
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{doc}");
    assert_eq!(std::path::Path::new(runs[0]["dir"].as_str().unwrap()), sb.runs()[0].as_path());
    assert_eq!(runs[0]["report"]["workload"], "lat_fs", "{doc}");
    // The same run, told by the report.
    let report =
        crate::support::fsbench().args(["report", runs[0]["dir"].as_str().unwrap(), "--json"]).output().unwrap();
    let report: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    assert_eq!(report, runs[0]["report"]);
}
