//! `fsbench export`: runs as github-action-benchmark's and Bencher's JSON, checked against the
//! shapes of the formats' published examples (see `src/report/export.rs` for the examples).

use std::path::Path;

use serde_json::Value;

use crate::support::fsbench;
use crate::support::report::{meta, step, steps_cell, steps_scenario_text, write_run};

fn export(args: &[&str], runs: &[&Path]) -> (i32, String, String) {
    let out = fsbench().arg("export").args(runs).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A lat_fs run (two cells, 99/100/101 and 198/200/202 loops/ms) and a steps run (one cell, three
/// iterations; the steady ones are the second and third).
fn runs(root: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let text = crate::support::report::latfs_scenario_text("hist", "");
    let latfs = super::history::write_history_run(root, 0, &text, 100.0, &[]);
    let text = steps_scenario_text("untar");
    let iterations: Vec<Vec<_>> = [10_000, 11_000, 12_000]
        .iter()
        .map(|&ms| {
            vec![
                step("rm -rf linux-2.5.63", "rm_rf", 10, 200, 1_000),
                step("tar zxf linux.tar.gz", "untar", 100, 900, ms),
            ]
        })
        .collect();
    let cell = steps_cell("ext3", iterations);
    let m = meta(Some("base"), "untar", &text, "steps", vec![cell.params.clone()]);
    let steps = write_run(&root.join("untar/run-1"), &m, &[cell]);
    (latfs, steps)
}

#[test]
fn github_action_benchmark_files_hold_one_direction_each() {
    let tmp = tempfile::tempdir().unwrap();
    let (latfs, steps) = runs(tmp.path());
    let (code, out, err) = export(&["--format", "github-action-benchmark", "--better", "higher"], &[&latfs]);
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    let entries = doc.as_array().unwrap();
    assert_eq!(entries.len(), 2, "{doc:#}");
    assert_eq!(entries[0]["name"], "ext2-M-qoff-t1-open_close total_loops");
    assert_eq!(entries[0]["unit"], "loops/ms");
    assert_eq!(entries[0]["value"], 100.0);
    assert!(entries[0]["range"].as_str().unwrap().starts_with("± "), "{doc:#}");
    for e in entries {
        let keys: Vec<&String> = e.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["extra", "name", "range", "unit", "value"]);
    }

    let file = tmp.path().join("smaller.json");
    let (code, out, err) = export(
        &["--format", "github-action-benchmark", "--better", "lower", "--out", file.to_str().unwrap()],
        &[&steps],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.is_empty());
    let doc: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let names: Vec<&str> = doc.as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["ext3-S-qoff-t1 step1 rm -rf linux-2.5.63 elapsed", "ext3-S-qoff-t1 step2 tar zxf linux.tar.gz elapsed"]
    );
    // Iteration 1 (10 s) is not steady (the catalogue's samples rule, as the gate's): the
    // mean of 11 and 12 s.
    assert_eq!(doc[1]["value"], 11.5, "the mean of the steady 11, 12 s");
    assert_eq!(doc[1]["unit"], "s");

    let (code, _, err) = export(&["--format", "github-action-benchmark"], &[&latfs]);
    assert_eq!(code, 2);
    assert!(err.contains("customBiggerIsBetter") && err.contains("--better"), "{err}");
}

#[test]
fn bencher_metric_format_holds_every_measure_with_its_interval() {
    let tmp = tempfile::tempdir().unwrap();
    let (latfs, steps) = runs(tmp.path());
    let (code, out, err) = export(&["--format", "bencher"], &[&latfs, &steps]);
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    // Two runs: names start with the runs' labels.
    let m = &doc["run/ext4-M-qoff-t1-open_close"]["total_loops"];
    assert_eq!(m["value"], 100.0, "{doc:#}");
    assert!(m["lower_value"].as_f64().unwrap() < 100.0 && m["upper_value"].as_f64().unwrap() > 100.0, "{doc:#}");
    let s = &doc["base/ext3-S-qoff-t1 step2 tar zxf linux.tar.gz"]["elapsed"];
    assert_eq!(s["value"], 11.5, "the steady iterations' mean: {doc:#}");
    for (_, measures) in doc.as_object().unwrap() {
        for (_, metric) in measures.as_object().unwrap() {
            let keys: Vec<&String> = metric.as_object().unwrap().keys().collect();
            assert_eq!(keys, ["lower_value", "upper_value", "value"]);
        }
    }
}

#[test]
fn a_fio_run_exports_iops_and_bandwidth_bigger_and_latency_smaller() {
    use fsbench::model::{FioDirection, FioJobStats, FioLatency, FioRepetition, FioResult};
    let tmp = tempfile::tempdir().unwrap();
    let mut cell = crate::support::report::latfs_cell(
        fsbench::model::CellParams {
            fs: "xfs".into(),
            layout: fsbench::model::Layout::S,
            quota: fsbench::model::QuotaMode::Off,
            tasks: 1,
            test: None,
            fio: Default::default(),
            kernel: None,
        },
        &[1.0],
    );
    cell.latfs = None;
    let rep = |index: u32, iops: f64| FioRepetition {
        index,
        total: FioJobStats {
            name: "total".into(),
            all: FioDirection {
                iops,
                bw_bytes: iops * 1_048_576.0,
                total_ios: 1000,
                clat_ns: FioLatency { mean: 1e9 / iops, p99: 2e9 / iops, ..Default::default() },
            },
            ..Default::default()
        },
        ..Default::default()
    };
    cell.fio = Some(FioResult {
        fio_version: "fio-3.33".into(),
        repetitions: vec![rep(0, 1000.0), rep(1, 2000.0), rep(2, 4000.0)],
        ..Default::default()
    });
    let id = cell.id.clone();
    let m = meta(Some("fio"), "fio", "name = 'fio'", "fio", vec![cell.params.clone()]);
    let run = write_run(&tmp.path().join("fio/run-1"), &m, &[cell]);
    let (code, out, err) = export(&["--format", "github-action-benchmark", "--better", "higher"], &[&run]);
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    let got: Vec<(&str, &str, f64)> = doc
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap(), e["unit"].as_str().unwrap(), e["value"].as_f64().unwrap()))
        .collect();
    let (iops, bw) = (format!("{id} iops"), format!("{id} bw"));
    let mean = 7000.0 / 3.0;
    assert_eq!(got, [(iops.as_str(), "IOPS", mean), (bw.as_str(), "MiB/s", mean)], "means: {doc:#}");
    let (code, out, err) = export(&["--format", "bencher"], &[&run]);
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    let measures: Vec<&String> = doc[&id].as_object().unwrap().keys().collect();
    assert_eq!(measures, ["bw", "clat_mean", "iops", "p99"], "{doc:#}");
    assert_eq!(doc[&id]["p99"]["value"], 3500.0 / 3.0, "the mean p99 in µs of 2000, 1000 and 500");
}

/// Issue 38 item 21: `export --better lower` on a lat_fs run wrote `[]` with rc 0, and a CI
/// job published an empty benchmark. It is an error naming the direction there is.
#[test]
fn an_export_of_nothing_fails_and_says_which_direction_the_runs_measure() {
    let tmp = tempfile::tempdir().unwrap();
    let (latfs, _) = runs(tmp.path());
    let file = tmp.path().join("lower.json");
    let (code, out, err) = export(
        &["--format", "github-action-benchmark", "--better", "lower", "--out", file.to_str().unwrap()],
        &[&latfs],
    );
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.is_empty() && !file.exists(), "{out}");
    assert!(err.contains("none of the runs' measures is lower-is-better") && err.contains("--better higher"), "{err}");
}

/// Issue 38 item 4: one sample exported `"range": "± 0"` and `[17.07, 17.07]` (Bencher:
/// lower = upper = value). A steps cell of two iterations has one steady sample: no interval.
#[test]
fn one_sample_is_exported_without_an_interval() {
    let tmp = tempfile::tempdir().unwrap();
    let iterations: Vec<Vec<_>> =
        [10_000, 17_070].iter().map(|&ms| vec![step("tar zxf linux.tar.gz", "untar", 100, 900, ms)]).collect();
    let cell = steps_cell("ext3", iterations);
    let m = meta(Some("one"), "untar", &steps_scenario_text("untar"), "steps", vec![cell.params.clone()]);
    let run = write_run(&tmp.path().join("untar/run-1"), &m, &[cell]);
    let (code, out, err) = export(&["--format", "github-action-benchmark", "--better", "lower"], &[&run]);
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc[0]["value"], 17.07, "{doc:#}");
    assert!(doc[0].get("range").is_none(), "{doc:#}");
    assert!(doc[0]["extra"].as_str().unwrap().starts_with("mean of 1; no interval from one sample"), "{doc:#}");
    let (code, out, err) = export(&["--format", "bencher"], &[&run]);
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    let (_, measures) = doc.as_object().unwrap().iter().next().unwrap();
    assert_eq!(measures["elapsed"], serde_json::json!({"value": 17.07}), "{doc:#}");
}
