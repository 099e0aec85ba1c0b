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

/// A lat_fs run (two cells, 99/100/101 and 198/200/202 loops/ms) and a steps run (one cell, three iterations).
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
    assert_eq!(doc[1]["value"], 11.0, "the median of 10, 11, 12 s");
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
    assert_eq!(s["value"], 11.0, "{doc:#}");
    for (_, measures) in doc.as_object().unwrap() {
        for (_, metric) in measures.as_object().unwrap() {
            let keys: Vec<&String> = metric.as_object().unwrap().keys().collect();
            assert_eq!(keys, ["lower_value", "upper_value", "value"]);
        }
    }
}
