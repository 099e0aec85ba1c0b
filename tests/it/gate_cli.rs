//! `fsbench gate` on synthetic result sets with known noise.

use std::path::{Path, PathBuf};

use fsbench::model::*;

use crate::support::fsbench;
use crate::support::report::*;

fn params(test: LatfsTest, tasks: u32) -> CellParams {
    CellParams {
        fs: "ext4".into(),
        layout: Layout::M,
        quota: QuotaMode::Off,
        tasks,
        test: Some(test),
        fio: Default::default(),
        kernel: None,
    }
}

/// Samples around `mean` with a fixed relative spread pattern (deterministic "noise").
fn noisy(mean: f64, rel_spread: f64) -> Vec<f64> {
    [0.0, 1.0, -1.0, 0.5, -0.5, 0.8, -0.8].iter().map(|k| mean * (1.0 + k * rel_spread)).collect()
}

/// Write a lat_fs run of `cells` (params, samples) with an optional `[gate]` section. Each
/// sample is a round of its own (`workload.rounds`), so the samples carry the spread between
/// provisionings and the gate judges them without a calibration (see gate_calibrated.rs for
/// runs of one round).
fn run(dir: &Path, label: &str, gate: &str, cells: &[(CellParams, Vec<f64>)]) -> PathBuf {
    let cells: Vec<CellResult> = cells.iter().map(|(p, s)| in_rounds(latfs_cell(p.clone(), s))).collect();
    let planned = cells.iter().map(|c| c.params.clone()).collect();
    let text = format!("{}{gate}", latfs_scenario_text("quota-smp", "repetitions = 7\n"));
    let m = meta(Some(label), "quota-smp", &text, "lat_fs", planned);
    write_run(&dir.join(label), &m, &cells)
}

fn in_rounds(mut cell: CellResult) -> CellResult {
    if let Some(l) = &mut cell.latfs {
        for (i, r) in l.repetitions.iter_mut().enumerate() {
            r.round = i as u32;
        }
    }
    cell
}

/// A calibration beside the runs in `scenario_dir` for the fixtures' host, with a small
/// between-run spread (0.1%) for each of `names` on `metric`.
pub(crate) fn quiet_calibration(scenario_dir: &Path, metric: &str, names: &[&str]) {
    let cells: Vec<serde_json::Value> = names
        .iter()
        .map(|n| {
            let level = |variance: f64, n: usize, df: usize| serde_json::json!({"variance": variance, "n": n, "df": df});
            serde_json::json!({
                "name": n, "metric": metric, "key": "",
                "levels": {"repetition": level(1e-6, 30, 24), "round": level(0.0, 6, 0), "run": level(1e-6, 6, 5), "mean": 0.0},
                "repetition_seconds": 1.0, "round_seconds": 0.0
            })
        })
        .collect();
    let m = meta(None, "x", "", "lat_fs", vec![]);
    // For the scenario text of the runs already there (a calibration holds only for its text).
    let sha = std::fs::read_dir(scenario_dir)
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("run.json")).ok())
        .find_map(|b| {
            serde_json::from_slice::<serde_json::Value>(&b).ok()?["scenario_sha256"].as_str().map(String::from)
        })
        .expect("quiet_calibration: write the runs first");
    let doc = serde_json::json!({
        "schema": 1, "fsbench_version": "0.1.0", "date": "2010-11-20T00:00:00Z", "host": m.host,
        "scenario": "x", "scenario_sha256": sha, "runs": ["a", "b", "c"], "cells": cells
    });
    std::fs::write(scenario_dir.join("calibration.json"), serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
}

struct Gate {
    code: i32,
    stdout: String,
    stderr: String,
    junit: String,
    markdown: String,
}

fn gate(base: &Path, cand: &Path, extra: &[&str]) -> Gate {
    let tmp = tempfile::tempdir().unwrap();
    let (j, m) = (tmp.path().join("junit.xml"), tmp.path().join("summary.md"));
    let out = fsbench()
        .arg("gate")
        .arg("--baseline")
        .arg(base)
        .arg("--candidate")
        .arg(cand)
        .arg("--junit")
        .arg(&j)
        .arg("--markdown")
        .arg(&m)
        .args(extra)
        .output()
        .unwrap();
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    Gate {
        code: out.status.code().unwrap(),
        stdout: String::from_utf8_lossy(&out.stdout).into(),
        stderr: String::from_utf8_lossy(&out.stderr).into(),
        junit: read(&j),
        markdown: read(&m),
    }
}

fn line_of<'a>(stdout: &'a str, cell: &str) -> &'a str {
    stdout.lines().find(|l| l.contains(cell)).unwrap_or_else(|| panic!("no row for {cell} in\n{stdout}"))
}

#[test]
fn ten_percent_slowdown_with_tight_samples_fails() {
    let d = tempfile::tempdir().unwrap();
    let p = params(LatfsTest::Chown, 1);
    let b = run(d.path(), "BASE", "", &[(p.clone(), noisy(1000.0, 0.005))]);
    let c = run(d.path(), "CAND", "", &[(p.clone(), noisy(900.0, 0.005))]);
    let g = gate(&b, &c, &[]);
    assert_eq!(g.code, 1, "{}", g.stdout);
    assert!(line_of(&g.stdout, &p.id()).contains("regressed"), "{}", g.stdout);
    assert!(line_of(&g.stdout, &p.id()).contains("-10.0%"), "{}", g.stdout);
    assert!(g.markdown.contains("**regressed**") && g.markdown.contains("regression"), "{}", g.markdown);
    let doc = roxmltree::Document::parse(&g.junit).expect("JUnit XML is well-formed");
    let case = doc.descendants().find(|n| n.has_tag_name("testcase")).unwrap();
    assert_eq!(case.attribute("name"), Some(p.id().as_str()));
    assert!(case.children().any(|n| n.has_tag_name("failure")));
}

#[test]
fn ten_percent_slowdown_with_wide_noise_is_inconclusive_not_unchanged() {
    let d = tempfile::tempdir().unwrap();
    let p = params(LatfsTest::Chown, 1);
    let b = run(d.path(), "BASE", "", &[(p.clone(), noisy(1000.0, 0.25))]);
    let c = run(d.path(), "CAND", "", &[(p.clone(), noisy(900.0, 0.25))]);
    let g = gate(&b, &c, &[]);
    assert_eq!(g.code, 0, "{}", g.stdout);
    assert!(line_of(&g.stdout, &p.id()).contains("inconclusive"), "{}", g.stdout);
    assert!(g.stderr.contains("INCONCLUSIVE"), "{}", g.stderr);
    assert!(g.markdown.contains("**inconclusive**") && g.markdown.contains("lower is worse"), "{}", g.markdown);
    assert!(g.junit.contains("lower is worse"), "{}", g.junit);
    assert_eq!(gate(&b, &c, &["--inconclusive", "fail"]).code, 1);
    let doc_fail = gate(&b, &c, &["--inconclusive", "fail"]).junit;
    assert!(doc_fail.contains("failures=\"1\""), "{doc_fail}");
    assert_eq!(gate(&b, &c, &["--bisect"]).code, 125);
}

#[test]
fn bisect_maps_verdicts_to_git_bisect_run_codes() {
    let d = tempfile::tempdir().unwrap();
    let (p1, p2) = (params(LatfsTest::Chown, 1), params(LatfsTest::Chown, 2));
    let base = run(d.path(), "BASE", "", &[(p1.clone(), noisy(1000.0, 0.005)), (p2.clone(), noisy(500.0, 0.005))]);
    let same = run(d.path(), "SAME", "", &[(p1.clone(), noisy(1000.0, 0.005)), (p2.clone(), noisy(500.0, 0.005))]);
    let slow = run(d.path(), "SLOW", "", &[(p1.clone(), noisy(800.0, 0.005)), (p2.clone(), noisy(500.0, 0.005))]);
    let part = run(d.path(), "PART", "", &[(p1.clone(), noisy(1000.0, 0.005))]);
    assert_eq!(gate(&base, &same, &["--bisect"]).code, 0);
    assert_eq!(gate(&base, &slow, &["--bisect"]).code, 1);
    assert_eq!(gate(&base, &part, &["--bisect"]).code, 125);
    // Bad input must not read as "bad revision" (1..127): it stops the bisection.
    assert_eq!(gate(&base, &d.path().join("nope"), &["--bisect"]).code, 128);
}

#[test]
fn one_percent_never_fails_at_five_percent() {
    let d = tempfile::tempdir().unwrap();
    // From no noise at all to wide noise: a 1% change is inside a 5% threshold.
    for spread in [0.0, 0.0001, 0.01, 0.1, 0.3] {
        let p = params(LatfsTest::OpenClose, 2);
        let b = run(&d.path().join(format!("{spread}")), "BASE", "", &[(p.clone(), noisy(1000.0, spread))]);
        let c = run(&d.path().join(format!("{spread}")), "CAND", "", &[(p.clone(), noisy(990.0, spread))]);
        let g = gate(&b, &c, &["--threshold", "5%"]);
        assert_eq!(g.code, 0, "spread {spread}: {}", g.stdout);
        // Tight samples rule a 5% change out; wide ones cannot, and say so.
        let want = if spread < 0.05 { "unchanged" } else { "inconclusive" };
        assert!(line_of(&g.stdout, &p.id()).contains(want), "spread {spread}: {}", g.stdout);
    }
}

#[test]
fn improvement_is_reported_and_passes() {
    let d = tempfile::tempdir().unwrap();
    let p = params(LatfsTest::CreateUnlink, 1);
    let b = run(d.path(), "BASE", "", &[(p.clone(), noisy(1000.0, 0.005))]);
    let c = run(d.path(), "CAND", "", &[(p.clone(), noisy(1200.0, 0.005))]);
    let g = gate(&b, &c, &[]);
    assert_eq!(g.code, 0, "{}", g.stdout);
    assert!(line_of(&g.stdout, &p.id()).contains("improved"), "{}", g.stdout);
}

#[test]
fn gate_fails_on_a_missing_cell_unless_allow_missing() {
    // It used to pass with cells missing.
    let d = tempfile::tempdir().unwrap();
    let (p1, p2) = (params(LatfsTest::Chown, 1), params(LatfsTest::Chown, 2));
    let b = run(d.path(), "BASE", "", &[(p1.clone(), noisy(1000.0, 0.01)), (p2.clone(), noisy(500.0, 0.01))]);
    let c = run(d.path(), "CAND", "", &[(p1.clone(), noisy(1000.0, 0.01))]);
    // A cell the candidate did not run was not checked: the gate fails by default.
    let g = gate(&b, &c, &[]);
    assert_eq!(g.code, 1, "{}", g.stdout);
    assert!(line_of(&g.stdout, &p2.id()).contains("missing"), "{}", g.stdout);
    let g = gate(&b, &c, &["--allow-missing"]);
    assert_eq!(g.code, 0, "{}", g.stdout);
    assert!(line_of(&g.stdout, &p2.id()).contains("missing"), "{}", g.stdout);
    let doc = roxmltree::Document::parse(&g.junit).unwrap();
    let cases: Vec<_> = doc.descendants().filter(|n| n.has_tag_name("testcase")).collect();
    assert_eq!(cases.len(), 2);
    let skipped = cases.iter().find(|c| c.attribute("name") == Some(p2.id().as_str())).unwrap();
    assert!(skipped.children().any(|n| n.has_tag_name("skipped")));
    let suite = doc.descendants().find(|n| n.has_tag_name("testsuite")).unwrap();
    assert_eq!(
        (suite.attribute("tests"), suite.attribute("skipped"), suite.attribute("failures")),
        (Some("2"), Some("1"), Some("0"))
    );
}

#[test]
fn scenario_thresholds_apply_per_test_and_cli_overrides_them() {
    let d = tempfile::tempdir().unwrap();
    let (chown, oc) = (params(LatfsTest::Chown, 1), params(LatfsTest::OpenClose, 1));
    let gate_section = "[gate]\nthreshold = \"5%\"\nthresholds = { chown = \"20%\" }\n";
    let cells = |m: f64| vec![(chown.clone(), noisy(m, 0.005)), (oc.clone(), noisy(m, 0.005))];
    let b = run(d.path(), "BASE", gate_section, &cells(1000.0));
    let c = run(d.path(), "CAND", gate_section, &cells(900.0));
    let g = gate(&b, &c, &[]);
    assert_eq!(g.code, 1);
    assert!(line_of(&g.stdout, &chown.id()).contains("unchanged"), "{}", g.stdout);
    assert!(line_of(&g.stdout, &oc.id()).contains("regressed"), "{}", g.stdout);
    let g = gate(&b, &c, &["--threshold", "15%"]);
    assert_eq!(g.code, 0, "{}", g.stdout);
}

#[test]
fn bad_input_exits_2() {
    let d = tempfile::tempdir().unwrap();
    let p = params(LatfsTest::Chown, 1);
    let b = run(d.path(), "BASE", "", &[(p.clone(), noisy(1000.0, 0.01))]);
    let g = gate(&b, &d.path().join("nope"), &[]);
    assert_eq!(g.code, 2);
    let g = gate(&b, &b, &["--threshold", "five"]);
    assert_eq!(g.code, 2);
    let g = gate(&b, &b, &["--metric", "elapsed"]);
    assert_eq!(g.code, 2);
}

#[test]
fn steps_are_gated_per_step_on_elapsed() {
    let d = tempfile::tempdir().unwrap();
    let p = CellParams {
        fs: "ext4".into(),
        layout: Layout::S,
        quota: QuotaMode::Off,
        tasks: 1,
        test: None,
        fio: Default::default(),
        kernel: None,
    };
    let text = "schema = 1\nname = \"untar\"\n[matrix]\nfs = [\"ext4\"]\nlayout = [\"S\"]\n[backing]\nkind = \"dir\"\n\
                [archive]\ngenerate = \"linux-2.5.63\"\nscale = 0.01\n[workload]\nkind = \"steps\"\niterations = 5\n\
                steps = [{ op = \"sync\" }, { op = \"untar\" }]\n";
    let mk = |label: &str, untar_us: u64| {
        let iterations = (0..5u64)
            .map(|i| {
                vec![
                    StepTiming {
                        label: "sync".into(),
                        op: "sync".into(),
                        user_us: 0,
                        system_us: 0,
                        elapsed_us: 1000 + i,
                        max_rss_kib: 0,
                        ..StepTiming::default()
                    },
                    StepTiming {
                        label: "tar zxf a".into(),
                        op: "untar".into(),
                        user_us: 0,
                        system_us: 0,
                        elapsed_us: untar_us + i * 100,
                        max_rss_kib: 0,
                        ..StepTiming::default()
                    },
                ]
            })
            .collect();
        let mut cell = latfs_cell(p.clone(), &[1.0]);
        cell.latfs = None;
        cell.steps = Some(StepsResult { iterations, ..StepsResult::default() });
        let m = meta(Some(label), "untar", text, "steps", vec![p.clone()]);
        write_run(&d.path().join(label), &m, &[cell])
    };
    let b = mk("BASE", 1_000_000);
    let c = mk("CAND", 1_200_000);
    // Steps run one round: without a calibration nothing is decided.
    let g = gate(&b, &c, &[]);
    assert_eq!(g.code, 0, "{}", g.stdout);
    assert!(line_of(&g.stdout, "#1 untar").contains("inconclusive"), "{}", g.stdout);
    assert!(g.stderr.contains("fsbench calibrate"), "{}", g.stderr);
    quiet_calibration(d.path(), "elapsed", &[&format!("{}#0 sync", p.id()), &format!("{}#1 untar", p.id())]);
    let g = gate(&b, &c, &[]);
    assert_eq!(g.code, 1, "{}", g.stdout);
    assert!(line_of(&g.stdout, "#0 sync").contains("unchanged"), "{}", g.stdout);
    assert!(line_of(&g.stdout, "#1 untar").contains("regressed"), "{}", g.stdout);
    // One metric: said once under the table, not on every row.
    assert!(g.stdout.contains("metric: elapsed [s], higher is worse"), "{}", g.stdout);
}

/// Regression (CLI review): a candidate that measured nothing, or whose results cannot be
/// read, made the gate pass (exit 0): CI went green on an empty run.
#[test]
fn a_candidate_without_readable_results_is_bad_input_not_a_pass() {
    let d = tempfile::tempdir().unwrap();
    let p = params(LatfsTest::Chown, 1);
    let b = run(d.path(), "BASE", "", &[(p.clone(), noisy(1000.0, 0.01))]);
    let empty = run(d.path(), "EMPTY", "", &[]);
    let g = gate(&b, &empty, &[]);
    assert_eq!(g.code, 2, "{}", g.stdout);
    let broken = run(d.path(), "BROKEN", "", &[(p.clone(), noisy(1000.0, 0.01))]);
    let cell = std::fs::read_dir(broken.join("cells")).unwrap().next().unwrap().unwrap().path();
    let text = std::fs::read_to_string(&cell).unwrap();
    std::fs::write(&cell, &text[..text.len() / 2]).unwrap();
    assert_eq!(gate(&b, &broken, &[]).code, 2);
    // An output path that cannot be written is refused before anything runs.
    let out = fsbench()
        .arg("gate")
        .arg("--baseline")
        .arg(&b)
        .arg("--candidate")
        .arg(&b)
        .arg("--markdown")
        .arg(d.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--markdown"));
}

/// Iteration 1's `rm -rf` of nothing is no sample, and values are printed in seconds
/// with the direction of "worse" stated.
#[test]
fn steps_gate_uses_steady_iterations_and_prints_seconds() {
    let d = tempfile::tempdir().unwrap();
    let mk = |label: &str, rm_s: [f64; 5]| {
        let iterations = rm_s
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mut t = parse_time_line("rm -rf linux-2.5.63 0.02user 1.71system 0:02.16elapsed 80%CPU");
                t.elapsed_us = (s * 1e6) as u64;
                t.entries = Some(if i == 0 { 0 } else { 17_000 });
                vec![t]
            })
            .collect();
        let cell = steps_cell("ext4", iterations);
        let m =
            meta(Some(label), "kernel-untar", &steps_scenario_text("kernel-untar"), "steps", vec![cell.params.clone()]);
        write_run(&d.path().join(label), &m, &[cell])
    };
    // The fresh first iterations differ 100x; the steady ones are the same.
    let b = mk("BASE", [0.0005, 2.00, 2.02, 1.98, 2.01]);
    let c = mk("CAND", [0.05, 2.01, 1.99, 2.00, 2.02]);
    let id = std::fs::read_dir(b.join("cells")).unwrap().next().unwrap().unwrap().path();
    let id = id.file_stem().unwrap().to_string_lossy().into_owned();
    quiet_calibration(d.path(), "elapsed", &[&format!("{id}#0 rm_rf")]);
    let g = gate(&b, &c, &[]);
    assert_eq!(g.code, 0, "{}", g.stdout);
    let line = line_of(&g.stdout, "#0 rm_rf");
    assert!(line.contains("unchanged"), "{}", g.stdout);
    assert_eq!(line.matches("2.0050").count(), 2, "median of the steady iterations in seconds: {line}");
    assert!(g.stdout.contains("higher is worse"), "{}", g.stdout);
    assert!(g.junit.contains("elapsed [s], higher is worse"), "{}", g.junit);
}

/// A mount option more on one side is shown key by key and the gate still
/// decides (Markdown and JUnit written); runs that share no lat_fs test are refused, saying why.
#[test]
fn scenario_differences_are_shown_and_only_different_quantities_refuse() {
    let d = tempfile::tempdir().unwrap();
    let cells = [(params(LatfsTest::Chown, 1), noisy(100.0, 0.01))];
    let base = run(d.path(), "BASE", "", &cells);
    let planned = vec![cells[0].0.clone()];
    let text =
        latfs_scenario_text("quota-smp", "repetitions = 7\n").replace("\"noload\"]", "\"noload\", \"nodelalloc\"]");
    let cand_cells: Vec<CellResult> = cells.iter().map(|(p, s)| latfs_cell(p.clone(), s)).collect();
    let cand = write_run(
        &d.path().join("NEW"),
        &meta(Some("NEW"), "quota-smp", &text, "lat_fs", planned.clone()),
        &cand_cells,
    );
    let out = fsbench().arg("gate").arg("--baseline").arg(&base).arg("--candidate").arg(&cand).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("filesystems.ext4.mount: + \"nodelalloc\""), "{err}");
    let g = gate(&base, &cand, &[]);
    assert!(!g.markdown.is_empty() && !g.junit.is_empty(), "reports are written");
    // No test in common: a different quantity.
    let text = latfs_scenario_text("quota-smp", "repetitions = 7\n")
        .replace("tasks = [1, 2, 4, 8]\n", "tasks = [1, 2, 4, 8]\ntest = [\"open_close\"]\n");
    let base_text = latfs_scenario_text("quota-smp", "repetitions = 7\n")
        .replace("tasks = [1, 2, 4, 8]\n", "tasks = [1, 2, 4, 8]\ntest = [\"chown\"]\n");
    let b2 = write_run(
        &d.path().join("B2"),
        &meta(Some("B2"), "quota-smp", &base_text, "lat_fs", planned.clone()),
        &cand_cells,
    );
    let c2 = write_run(&d.path().join("C2"), &meta(Some("C2"), "quota-smp", &text, "lat_fs", planned), &cand_cells);
    let out = fsbench().arg("gate").arg("--baseline").arg(&b2).arg("--candidate").arg(&c2).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("did not measure the same quantities: they share no lat_fs test"), "{err}");
}

/// New users' report: "passing anyway" was printed and then the gate exited 1 for a
/// missing cell; the words must match the exit status.
#[test]
fn the_inconclusive_warning_does_not_say_passing_when_the_gate_fails() {
    let d = tempfile::tempdir().unwrap();
    let (p1, p2) = (params(LatfsTest::Chown, 1), params(LatfsTest::Chown, 2));
    let b = run(d.path(), "BASE", "", &[(p1.clone(), noisy(1000.0, 0.25)), (p2.clone(), noisy(500.0, 0.01))]);
    let c = run(d.path(), "CAND", "", &[(p1.clone(), noisy(900.0, 0.25))]);
    let g = gate(&b, &c, &[]);
    assert_eq!(g.code, 1, "{}", g.stdout);
    assert!(g.stderr.contains("INCONCLUSIVE") && !g.stderr.contains("passing anyway"), "{}", g.stderr);
    assert!(g.stderr.contains("the gate fails: cells are missing"), "{}", g.stderr);
    let g = gate(&b, &c, &["--allow-missing"]);
    assert_eq!(g.code, 0, "{}", g.stdout);
    assert!(g.stderr.contains("passing anyway"), "{}", g.stderr);
}

/// New users' report: `--metric p99` on runs without histograms printed every row
/// `missing` with no reason; it is refused up front, saying what to do, and a row missing
/// its histogram on one side says so.
#[test]
fn a_percentile_gate_without_histograms_says_why() {
    let d = tempfile::tempdir().unwrap();
    let p = params(LatfsTest::Chown, 1);
    let b = run(d.path(), "BASE", "", &[(p.clone(), noisy(1000.0, 0.01))]);
    let c = run(d.path(), "CAND", "", &[(p.clone(), noisy(1000.0, 0.01))]);
    let g = gate(&b, &c, &["--metric", "p99"]);
    assert_eq!(g.code, 2, "{}", g.stdout);
    assert!(g.stderr.contains("neither run recorded a latency histogram"), "{}", g.stderr);
    assert!(g.stderr.contains("latency = \"histogram\""), "{}", g.stderr);
}
