//! `fsbench compare`'s marks (issue #38): what `?` means, cells without a result, and no
//! star where the gate cannot decide (two runs of one round each).

use assert_cmd::prelude::*;
use fsbench::model::*;

use crate::support::fsbench;
use crate::support::report::*;

fn params(tasks: u32) -> CellParams {
    CellParams {
        fs: "ext4".into(),
        layout: Layout::M,
        quota: QuotaMode::Off,
        tasks,
        test: Some(LatfsTest::Chown),
        fio: Default::default(),
        kernel: None,
    }
}

/// A cell of 5 tight repetitions around `c`; with `rounds`, each repetition its own round.
fn cell(tasks: u32, c: f64, rounds: bool) -> CellResult {
    let mut cell = latfs_cell(params(tasks), &[c * 0.999, c * 1.001, c, c * 0.9995, c * 1.0005]);
    if rounds {
        for (i, r) in cell.latfs.as_mut().unwrap().repetitions.iter_mut().enumerate() {
            r.round = i as u32;
        }
    }
    cell
}

fn run(dir: &std::path::Path, label: &str, cells: Vec<CellResult>) -> String {
    let text = latfs_scenario_text("quota-smp", "repetitions = 5\n");
    let planned = cells.iter().map(|c| c.params.clone()).collect();
    write_run(dir, &meta(Some(label), "quota-smp", &text, "lat_fs", planned), &cells).to_string_lossy().into_owned()
}

fn stdout(args: &[&str]) -> String {
    let o = fsbench().args(args).assert().success();
    String::from_utf8_lossy(&o.get_output().stdout).into_owned()
}

/// The ratio cell of the row of `tasks` in the ratio table (the second table's row).
fn ratio_cell(out: &str, tasks: u32) -> String {
    let row = out.lines().filter(|l| l.starts_with(&format!("{tasks} "))).nth(1).unwrap_or_else(|| panic!("{out}"));
    row.split("  ").map(str::trim).filter(|c| !c.is_empty()).nth(1).unwrap_or_else(|| panic!("{out}")).to_string()
}

#[test]
fn two_one_round_runs_get_no_star_where_the_gate_cannot_decide() {
    // Issue #38 item 18: two quickstart runs of one build were starred `1.1725*`; the gate
    // refuses to decide such one-round pairs, and compare now says the same.
    let tmp = tempfile::tempdir().unwrap();
    let a = run(&tmp.path().join("a"), "BASE", vec![cell(1, 1000.0, false)]);
    let b = run(&tmp.path().join("b"), "V3", vec![cell(1, 1100.0, false)]);
    let out = stdout(&["compare", &a, &b]);
    let r = ratio_cell(&out, 1);
    assert!(r.starts_with("1.1000? ["), "no star: {r}\n{out}");
    let words = out.split_whitespace().collect::<Vec<_>>().join(" ");
    // A note says why, with the gate's remedies (calibrate, rounds, a paired run).
    assert!(
        words.contains("1 comparison(s) of runs with one round cannot be decided from the spread within a run"),
        "{out}"
    );
    assert!(words.contains("fsbench calibrate") && words.contains("[compare] arms"), "{out}");
    // The gate on the same pair: inconclusive, for the same reason.
    let g = fsbench().args(["gate", "--baseline", &a, "--candidate", &b]).output().unwrap();
    let gout = String::from_utf8_lossy(&g.stdout);
    assert!(gout.contains("inconclusive"), "{gout}");
    // JSON says why: no adjusted p, not significant, untested within_run_only.
    let doc: serde_json::Value = serde_json::from_str(&stdout(&["compare", &a, &b, "--json"])).unwrap();
    let j = &doc["tables"][0]["ratios"]["values"][0][0];
    assert_eq!((j["untested"].as_str(), j["significant"].as_bool()), (Some("within_run_only"), Some(false)), "{j}");

    // Runs of several rounds each: their rounds' means decide, and the star is back.
    let a = run(&tmp.path().join("ra"), "BASE", vec![cell(1, 1000.0, true)]);
    let b = run(&tmp.path().join("rb"), "V3", vec![cell(1, 1100.0, true)]);
    let out = stdout(&["compare", &a, &b]);
    assert!(ratio_cell(&out, 1).starts_with("1.1000* ["), "{out}");
    assert!(!out.contains("cannot be decided from the spread within a run"), "{out}");
}

#[test]
fn the_question_mark_is_explained_in_the_legend_and_the_docs() {
    // Issue #38 item 11: `?` was never explained; item 20: the legend said only "fewer than
    // 2 repetitions or no spread".
    let tmp = tempfile::tempdir().unwrap();
    let a = run(&tmp.path().join("a"), "BASE", vec![cell(1, 1000.0, false)]);
    let b = run(&tmp.path().join("b"), "V3", vec![cell(1, 1100.0, false)]);
    let out = stdout(&["compare", &a, &b]);
    let words = out.split_whitespace().collect::<Vec<_>>().join(" ");
    for case in ["? not tested", "fewer than 2 samples on a side", "no spread on either side", "single round"] {
        assert!(words.contains(case), "legend lacks `{case}`:\n{out}");
    }
    let docs = std::fs::read_to_string(crate::support::crate_root().join("docs/compare-and-gate.md")).unwrap();
    let docs = docs.split_whitespace().collect::<Vec<_>>().join(" ");
    for case in ["`?`", "fewer than 2 samples", "no spread", "one round", "`- (disturbed)`"] {
        assert!(docs.contains(case), "docs/compare-and-gate.md lacks `{case}`");
    }
}

#[test]
fn cells_without_a_result_get_a_dash_and_the_reason_not_numbers() {
    // Issue #38 item 20: a disturbed cell listed "without a result" still showed `510.0000~`
    // and a `?` ratio in the compare tables.
    let tmp = tempfile::tempdir().unwrap();
    let mut disturbed = cell(1, 510.0, false);
    for r in &mut disturbed.latfs.as_mut().unwrap().repetitions {
        r.disturbance = Some(Disturbance { disturbed: true, ..Default::default() });
    }
    disturbed.status = CellStatus::Disturbed;
    let mut failed = cell(2, 700.0, false);
    failed.status = CellStatus::Failed;
    failed.error = Some("mkfs failed".into());
    let a = run(&tmp.path().join("a"), "BASE", vec![disturbed, cell(2, 700.0, false)]);
    let b = run(&tmp.path().join("b"), "V3", vec![cell(1, 520.0, false), failed]);
    let out = stdout(&["compare", &a, &b]);
    let values = out.lines().find(|l| l.starts_with("1 ")).unwrap();
    assert!(values.contains("- (disturbed)") && !values.contains("510.0000"), "{out}");
    assert_eq!(ratio_cell(&out, 1), "- (BASE disturbed)", "{out}");
    let values = out.lines().find(|l| l.starts_with("2 ")).unwrap();
    assert!(values.contains("- (failed)"), "{out}");
    assert_eq!(ratio_cell(&out, 2), "- (V3 failed)", "{out}");
    // A report of the one run still shows the disturbed number, marked.
    assert!(stdout(&["report", &a]).contains("510.0000~"));
}

#[test]
fn no_interval_below_zero_and_no_cv_from_one_repetition_in_the_csv() {
    // Issue #38 item 13: Student's t at n = 2 reaches far below zero; loops/ms do not. And
    // one repetition has no spread: no cv (and no interval), not `0.0000`.
    let tmp = tempfile::tempdir().unwrap();
    let cells = vec![latfs_cell(params(1), &[1000.0, 35000.0]), latfs_cell(params(2), &[700.0])];
    let a = run(&tmp.path().join("a"), "BASE", cells);
    let csv = stdout(&["report", &a, "--format", "csv"]);
    let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |n: &str| head.iter().position(|h| *h == n).unwrap();
    let rows: Vec<Vec<&str>> = csv.lines().skip(1).map(|l| l.split(',').collect()).collect();
    let low: f64 = rows[0][col("ci95_low")].parse().unwrap();
    assert_eq!(low, 0.0, "{csv}");
    assert_eq!((rows[1][col("ci95_low")], rows[1][col("ci95_high")], rows[1][col("cv")]), ("", "", ""), "{csv}");
}
