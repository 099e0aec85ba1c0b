//! `run --meta` and `fsbench history` over small synthetic result directories.

use std::path::{Path, PathBuf};

use crate::support::report::{latfs_cell, latfs_scenario_text, meta, write_run};
use crate::support::sandbox::Sandbox;
use crate::support::{crate_root, fsbench};
use fsbench::model::{CellParams, LatfsTest, Layout, QuotaMode};

fn params(fs: &str, tasks: u32) -> CellParams {
    CellParams {
        fs: fs.into(),
        layout: Layout::M,
        quota: QuotaMode::Off,
        tasks,
        test: Some(LatfsTest::OpenClose),
        fio: Default::default(),
        kernel: None,
    }
}

/// Write run `i` of a lat_fs history under `root/hist/`: two cells, `value(i)` loops/ms each
/// (three repetitions of ±1%), started `i` hours after a fixed time, with `tags`.
pub fn write_history_run(root: &Path, i: usize, text: &str, value: f64, tags: &[(&str, &str)]) -> PathBuf {
    let cells = [params("ext2", 1), params("ext4", 1)];
    let mut m = meta(None, "hist", text, "lat_fs", cells.to_vec());
    m.run_id = format!("2011{:02}{:02}T{:02}0000Z-host", 1 + i / 600, 1 + (i / 24) % 25, i % 24);
    m.started = format!("2011-{:02}-{:02}T{:02}:00:00Z", 1 + i / 600, 1 + (i / 24) % 25, i % 24);
    m.finished = None;
    m.meta = tags.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let cells: Vec<_> = cells.iter().map(|p| latfs_cell(p.clone(), &[value * 0.99, value, value * 1.01])).collect();
    write_run(&root.join("hist").join(&m.run_id), &m, &cells)
}

#[test]
fn a_bad_meta_pair_is_a_usage_error_that_says_why() {
    let q = crate_root().join("scenarios/quickstart.toml");
    for (arg, why) in [
        ("commit", "no `=`"),
        ("bad key=x", "key `bad key`"),
        ("k=\u{1b}[2J", "control characters"),
        ("k=a\tb", "control characters"),
    ] {
        let out = fsbench().arg("run").arg(&q).args(["--meta", arg, "--only", "fs=nosuchfs"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{arg}: {err}");
        assert!(err.contains("--meta") && err.contains(why), "{arg}: {err}");
    }
    let long_key = format!("{}=x", "k".repeat(65));
    let out = fsbench().arg("run").arg(&q).args(["--meta", &long_key]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("1 to 64"));
}

#[test]
fn meta_pairs_show_in_the_run_list_and_its_json() {
    let dir = tempfile::tempdir().unwrap();
    let text = latfs_scenario_text("hist", "");
    write_history_run(dir.path(), 0, &text, 100.0, &[]);
    write_history_run(dir.path(), 1, &text, 100.0, &[("commit", "abc123"), ("branch", "main")]);
    let out = fsbench().arg("report").arg(dir.path().join("hist")).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("branch=main commit=abc123"), "{stdout}");
    let out = fsbench().arg("report").arg(dir.path().join("hist")).arg("--json").output().unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(doc["runs"][0].get("meta").is_none(), "{doc:#}");
    assert_eq!(doc["runs"][1]["meta"]["commit"], "abc123");
}

#[test]
fn a_hostile_meta_value_in_run_json_is_printed_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let text = latfs_scenario_text("hist", "");
    write_history_run(dir.path(), 0, &text, 100.0, &[]);
    write_history_run(dir.path(), 1, &text, 100.0, &[("k", "\u{1b}]0;owned\u{7}")]);
    let out = fsbench().arg("report").arg(dir.path().join("hist")).output().unwrap();
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    // Every string of a result file is escaped as it is read: the value is shown, inert.
    assert!(!all.contains('\u{1b}') && !all.contains('\u{7}'), "{all:?}");
    assert!(all.contains("k=\\u{1b}]0;owned\\u{7}"), "{all}");
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn run_records_its_meta_pairs_in_run_json() {
    let sb = Sandbox::new("fsbench-history-");
    let mut args = vec!["run", "scenarios/quickstart.toml", "--set", "backing.kind=dir", "--only"];
    args.extend_from_slice(&["fs=ext4,tasks=1,test=chown", "--meta", "commit=abc123", "--meta", "note=a=b c"]);
    for set in ["workload.warmup=10ms", "workload.duration=50ms", "workload.repetitions=2"] {
        args.extend_from_slice(&["--set", set]);
    }
    let out = sb.fsbench(&args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sb.runs()[0].join("run.json")).unwrap()).unwrap();
    assert_eq!(run["meta"], serde_json::json!({"commit": "abc123", "note": "a=b c"}), "{run:#}");
}

/// A lat_fs history of `n` runs in `root/hist`: `value(i)` loops/ms in run `i`, `commit=<n-i>`.
fn history_of(root: &Path, n: usize, text: &dyn Fn(usize) -> String, value: &dyn Fn(usize) -> f64) {
    for i in 0..n {
        let commit = format!("{}", n - i);
        write_history_run(root, i, &text(i), value(i), &[("commit", &commit), ("branch", "main")]);
    }
}

fn history(args: &[&str], dir: &Path) -> (i32, String, String) {
    let out = fsbench().arg("history").arg(dir).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn history_prints_a_series_per_cell_with_a_sparkline_within_100_columns() {
    let dir = tempfile::tempdir().unwrap();
    let text = latfs_scenario_text("hist", "");
    history_of(dir.path(), 40, &|_| text.clone(), &|i| if i < 25 { 100.0 } else { 110.0 });
    let (code, out, err) = history(&[], &dir.path().join("hist"));
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("40 runs in "), "{out}");
    let row = out
        .lines()
        .find(|l| l.split_whitespace().take(2).eq(["ext4-M-qoff-t1-open_close", "total_loops"]) && l.contains('▁'))
        .expect(&out);
    // Piped output is 100 columns: the sparkline shows the last runs that fit (fewer than 40),
    // filling the row to the 100th column.
    let trend = row.rsplit("  ").next().unwrap();
    let low = trend.strip_suffix(&"█".repeat(15)).expect(row);
    assert!(!low.is_empty() && low.chars().all(|c| c == '▁'), "{row}");
    assert!(row.contains("+10.0%") && row.chars().count() == 100 && trend.chars().count() < 40, "{row}\n{out}");
    assert!(out.lines().all(|l| !l.ends_with(' ')), "{out}");
    assert!(out.lines().all(|l| l.chars().count() <= 100), "{out}");
    // The step is found at run 25 (the 26th, 2011-01-02 01:00) in both cells, with the size of the shift.
    assert_eq!(out.matches("↳ change +10.0% [").count(), 2, "{out}");
    assert_eq!(out.matches("after  20110102T010000Z-host (branch=main commit=15)\n").count(), 2, "{out}");
    let (_, json, _) = history(&["--json"], &dir.path().join("hist"));
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let cp = &doc["series"][0]["change_points"];
    assert_eq!(
        (cp.as_array().unwrap().len(), cp[0]["index"].as_u64(), cp[0]["run_after"].as_u64()),
        (1, Some(25), Some(25))
    );
    assert!(cp[0]["p"].as_f64().unwrap() <= 0.001 && cp[0]["change"]["ci_low"].as_f64().unwrap() > 0.09, "{cp:#}");
    assert_eq!(doc["series"][0]["too_few_points"], false);
    // --last and --since narrow it; --only picks cells.
    let (_, out, _) = history(&["--last", "10", "--only", "fs=ext2"], &dir.path().join("hist"));
    assert!(out.starts_with("10 runs in ") && !out.contains("ext4-M"), "{out}");
    let (_, out, _) = history(&["--since", "2011-01-02"], &dir.path().join("hist"));
    assert!(out.starts_with("16 runs in "), "{out}");
}

#[test]
fn history_orders_by_a_meta_key_and_filters_by_meta_and_host() {
    let dir = tempfile::tempdir().unwrap();
    let text = latfs_scenario_text("hist", "");
    // commit counts down as time goes on: ordered by commit, the series runs backwards.
    history_of(dir.path(), 12, &|_| text.clone(), &|i| 100.0 + i as f64);
    let (code, out, err) = history(&["--order-by", "commit", "--csv"], &dir.path().join("hist"));
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().filter(|l| l.contains("ext2-M-qoff-t1-open_close,total_loops")).collect();
    assert_eq!(lines.len(), 12);
    assert!(lines[0].contains(",111,") && lines[11].contains(",100,"), "{out}");
    assert!(out.lines().next().unwrap().ends_with("meta.branch,meta.commit"), "{out}");
    let (_, out, _) = history(&["--meta", "commit=3"], &dir.path().join("hist"));
    assert!(out.starts_with("1 run in "), "{out}");
    let (code, _, err) = history(&["--host", "elsewhere"], &dir.path().join("hist"));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no run matches"), "{err}");
    for bad in [&["--since", "yesterday"][..], &["--order-by", "a b"], &["--meta", "x"], &["--only", "fs=xfs"]] {
        let (code, _, err) = history(bad, &dir.path().join("hist"));
        assert_eq!(code, 2, "{bad:?}: {err}");
    }
}

#[test]
fn a_scenario_that_measures_something_else_splits_the_series() {
    let dir = tempfile::tempdir().unwrap();
    let base = latfs_scenario_text("hist", "");
    let with_test = |t: &str| base.replace("tasks = [1, 2, 4, 8]", &format!("tasks = [1, 2, 4, 8]\ntest = [\"{t}\"]"));
    // A mount option changes the conditions, not the quantity: runs 4..8 stay in the series.
    let option = with_test("chown").replace("\"noload\"]", "\"noload\", \"nodelalloc\"]");
    let texts = [with_test("chown"), option, with_test("open_close")];
    history_of(dir.path(), 12, &|i| texts[i / 4].clone(), &|_| 100.0);
    let (code, out, err) = history(&["--json"], &dir.path().join("hist"));
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let segments: Vec<u64> = doc["runs"].as_array().unwrap().iter().map(|r| r["segment"].as_u64().unwrap()).collect();
    assert_eq!(segments, [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1]);
    let lens: Vec<usize> =
        doc["series"].as_array().unwrap().iter().map(|s| s["points"].as_array().unwrap().len()).collect();
    assert_eq!(lens, [8, 8, 4, 4], "{doc:#}");
    let (_, table, _) = history(&[], &dir.path().join("hist"));
    assert!(table.contains("segment 2 (from "), "{table}");
}

#[test]
fn history_json_conforms_to_its_checked_in_schema() {
    let path = crate_root().join("schemas/history.schema.json");
    let generated = fsbench::history::json::history_schema_json();
    if std::env::var_os("FSBENCH_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == generated,
        "schemas/history.schema.json is stale: FSBENCH_BLESS=1 cargo test --test it history::"
    );
    let dir = tempfile::tempdir().unwrap();
    let text = latfs_scenario_text("hist", "");
    history_of(dir.path(), 3, &|_| text.clone(), &|_| 100.0);
    let (code, out, err) = history(&["--json"], &dir.path().join("hist"));
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let schema: serde_json::Value = serde_json::from_str(&on_disk).unwrap();
    let errors = crate::support::jsonschema::validate(&schema, &doc);
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!((doc["schema"].as_u64(), doc["order"].as_str()), (Some(1), Some("started")));
    assert_eq!(doc["series"][0]["too_few_points"], true, "three runs are too few for a change point");
}

#[test]
fn a_paired_run_s_ratios_are_series_in_every_output_and_through_the_index() {
    use crate::support::report::write_paired_run;
    let tmp = tempfile::tempdir().unwrap();
    let arms = ["ext4", "ext4-nodelalloc"];
    let base = vec![100.0, 104.0, 97.0, 101.0, 99.0, 103.0];
    for i in 0..8 {
        let level = if i < 4 { 0.95 } else { 0.85 };
        let cand: Vec<f64> = base.iter().enumerate().map(|(k, b)| b * level * (1.0 + 0.01 * k as f64)).collect();
        let dir = tmp.path().join("paired").join(format!("run-{i}"));
        write_paired_run(&dir, &format!("r{i}"), &arms, &[(LatfsTest::Chown, vec![base.clone(), cand])], &[], "");
    }
    let dir = tmp.path().join("paired");
    let (code, json, err) = history(&["--json"], &dir);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json, history(&["--json", "--no-index"], &dir).1, "the index must hold the ratios");
    assert_eq!(json, history(&["--json"], &dir).1, "a warm index too");
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let series = doc["series"].as_array().unwrap();
    let ratio = series.iter().find(|s| s["metric"] == "paired ratio total_loops").expect("a ratio series");
    assert_eq!(ratio["cell"], "ext4-nodelalloc-S-qoff-t1-chown", "the candidate's cell");
    assert_eq!((ratio["unit"].as_str(), ratio["better"].as_str()), (Some("ratio"), Some("higher")));
    let points = ratio["points"].as_array().unwrap();
    assert_eq!(points.len(), 8);
    // Run 0: exp(mean ln(0.95 · (1 + k/100))) over the six pairs.
    let want = (0..6).map(|k| (0.95 * (1.0 + 0.01 * k as f64)).ln()).sum::<f64>() / 6.0;
    let p0 = &points[0];
    assert!((p0["value"].as_f64().unwrap() - want.exp()).abs() < 1e-9, "{p0}");
    assert_eq!(p0["n"], 6);
    assert!(p0["low"].as_f64().unwrap() < p0["value"].as_f64().unwrap(), "{p0}");
    assert!(p0["high"].as_f64().unwrap() > p0["value"].as_f64().unwrap(), "{p0}");
    // The baseline has no ratio; both arms keep their own total_loops.
    assert_eq!(series.iter().filter(|s| s["metric"].as_str().unwrap().starts_with("paired")).count(), 1);
    assert_eq!(series.iter().filter(|s| s["metric"] == "total_loops").count(), 2);

    let (_, csv, _) = history(&["--csv"], &dir);
    assert!(csv.starts_with("segment,cell,metric,unit,run,started,value,n,low,high\n"), "{csv}");
    let line = csv.lines().find(|l| l.contains(",paired ratio total_loops,ratio,")).expect("ratio rows");
    assert!(!line.ends_with(",,"), "{line}");
    assert!(csv.lines().filter(|l| l.contains(",total_loops,loops/ms,")).all(|l| l.ends_with(",,")), "{csv}");
    let (_, table, _) = history(&[], &dir);
    assert!(table.contains("paired ratio total_loops"), "{table}");
    let page = tmp.path().join("history.html");
    let out = fsbench().arg("history").arg(&dir).arg("--html").arg(&page).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("paired ratio total_loops"), "the ratio has its chart");
    assert_eq!(html.matches("class=\"interval\"").count(), 8, "a whisker per ratio point");
}

/// Issue #38: a 10% step in 40 runs that spread about 8% and drifted was not flagged, and
/// the history could not say it could not have been. Each series now states the smallest
/// step the change-point test would find at its noise and length (`detectable`).
#[test]
fn each_series_says_the_smallest_step_its_change_point_test_would_find() {
    let dir = tempfile::tempdir().unwrap();
    let text = latfs_scenario_text("hist", "");
    // A deterministic ±14% scatter (sd about 8%) and a 7% drift over 40 runs.
    let noise = |i: usize| ((i * 7919 % 97) as f64 / 96.0 - 0.5) * 0.28;
    history_of(dir.path(), 40, &|_| text.clone(), &|i| 100.0 * (1.0 + 0.07 * i as f64 / 39.0) * (1.0 + noise(i)));
    let (code, out, err) = history(&[], &dir.path().join("hist"));
    assert_eq!(code, 0, "{err}");
    let header = out.lines().find(|l| l.starts_with("cell")).expect(&out);
    assert!(header.contains("detectable"), "{out}");
    let (_, json, _) = history(&["--json"], &dir.path().join("hist"));
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let d = doc["series"][0]["detectable"].as_f64().expect(&json);
    assert!(d > 0.10, "a 10% step could not have been seen: {d}");
    let shown = format!("±{:.0}%", d * 100.0);
    assert!(out.lines().any(|l| l.contains("total_loops") && l.contains(&shown)), "{shown}\n{out}");
    // Runs that agree to ±1% would show a step of a few percent.
    let quiet = tempfile::tempdir().unwrap();
    history_of(quiet.path(), 40, &|_| text.clone(), &|i| 100.0 * (1.0 + noise(i) / 14.0));
    let (_, json, _) = history(&["--json"], &quiet.path().join("hist"));
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let q = doc["series"][0]["detectable"].as_f64().expect(&json);
    assert!(q < 0.03, "{q}");
    // Three runs are too few to say anything.
    let short = tempfile::tempdir().unwrap();
    history_of(short.path(), 3, &|_| text.clone(), &|_| 100.0);
    let (_, json, _) = history(&["--json"], &short.path().join("hist"));
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(doc["series"][0]["detectable"].is_null(), "{json}");
}
