//! `fsbench gate RUN`, `report` and `compare` of a paired run (`[compare] arms`), on
//! hand-made paired runs with known per-pair ratios.

use std::path::{Path, PathBuf};

use fsbench::model::LatfsTest;

use crate::support::fsbench;
use crate::support::report::*;

const ARMS: [&str; 2] = ["ext4", "ext4-nodelalloc"];

/// `n` baseline members around `mean` (the machine drifting by ±20% between pairs) and
/// candidate members at `ratio` of their pair's baseline, with a small per-pair wobble.
fn pairs(n: usize, mean: f64, ratio: f64, wobble: f64) -> Vec<Vec<f64>> {
    let k = [0.0, 1.0, -1.0, 0.5, -0.5, 0.8, -0.8, 0.3, -0.3, 0.6];
    let base: Vec<f64> = (0..n).map(|i| mean * (1.0 + 0.2 * k[(i + 3) % k.len()])).collect();
    let cand = base.iter().enumerate().map(|(i, b)| b * ratio * (1.0 + wobble * k[i % k.len()])).collect();
    vec![base, cand]
}

fn paired_run(dir: &Path, name: &str, groups: &[(LatfsTest, Vec<Vec<f64>>)], dropped: &[u32]) -> PathBuf {
    write_paired_run(&dir.join(name), name, &ARMS, groups, dropped, "pairs = { min = 6, max = 32 }\n")
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn fsbench_out(args: &[&str], paths: &[&Path]) -> Out {
    let o = fsbench().args(args).args(paths).output().unwrap();
    Out {
        code: o.status.code().unwrap(),
        stdout: String::from_utf8_lossy(&o.stdout).into(),
        stderr: String::from_utf8_lossy(&o.stderr).into(),
    }
}

fn row<'a>(stdout: &'a str, cell: &str) -> &'a str {
    stdout.lines().find(|l| l.contains(cell)).unwrap_or_else(|| panic!("no row for {cell} in\n{stdout}"))
}

#[test]
fn a_paired_run_gates_by_itself_with_the_two_run_gates_verdicts_and_exit_codes() {
    let d = tempfile::tempdir().unwrap();
    // The machine drifts ±20% between pairs, yet each pair is 10% apart: regressed.
    let slow = paired_run(d.path(), "SLOW", &[(LatfsTest::Chown, pairs(8, 1000.0, 0.90, 0.005))], &[3]);
    let tmp = tempfile::tempdir().unwrap();
    let (j, m, h) = (tmp.path().join("j.xml"), tmp.path().join("s.md"), tmp.path().join("g.html"));
    let o = fsbench()
        .arg("gate")
        .arg(&slow)
        .arg("--junit")
        .arg(&j)
        .arg("--markdown")
        .arg(&m)
        .arg("--html")
        .arg(&h)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    let r = row(&stdout, "ext4-nodelalloc-S-qoff-t1-chown");
    assert!(r.contains("regressed") && r.contains("-10.0%"), "{stdout}");
    // The interval is at the level the sequential stop used (5 looks of 6..32: 99%).
    assert!(stdout.contains("change [99% CI]") && stdout.contains("Paired comparison"), "{stdout}");
    assert!(stdout.contains("8 (+1 dropped)"), "{stdout}");
    let md = std::fs::read_to_string(&m).unwrap();
    assert!(md.contains("**regressed**") && md.contains("paired change") && md.contains("99% CI"), "{md}");
    let junit = std::fs::read_to_string(&j).unwrap();
    let doc = roxmltree::Document::parse(&junit).expect("JUnit XML is well-formed");
    let case = doc.descendants().find(|n| n.has_tag_name("testcase")).unwrap();
    assert_eq!(case.attribute("name"), Some("ext4-nodelalloc-S-qoff-t1-chown"));
    assert!(case.children().any(|n| n.has_tag_name("failure")));
    let html = std::fs::read_to_string(&h).unwrap();
    assert!(html.contains("Gate: regression") && html.contains("Paired comparison"), "{html}");

    // The same arms 1% apart, tight: unchanged, exit 0.
    let same = paired_run(d.path(), "SAME", &[(LatfsTest::Chown, pairs(8, 1000.0, 0.99, 0.005))], &[]);
    let o = fsbench_out(&["gate"], &[&same]);
    assert_eq!(o.code, 0, "{}", o.stdout);
    assert!(row(&o.stdout, "ext4-nodelalloc-S-qoff-t1-chown").contains("unchanged"), "{}", o.stdout);

    // Three pairs cannot decide at 99%: inconclusive, which fails only when asked to.
    let few = paired_run(d.path(), "FEW", &[(LatfsTest::Chown, pairs(3, 1000.0, 0.99, 0.03))], &[]);
    let o = fsbench_out(&["gate"], &[&few]);
    assert_eq!(o.code, 0, "{}", o.stdout);
    assert!(row(&o.stdout, "ext4-nodelalloc-S-qoff-t1-chown").contains("inconclusive"), "{}", o.stdout);
    assert!(o.stderr.contains("INCONCLUSIVE") && o.stderr.contains("compare.pairs.max"), "{}", o.stderr);
    assert!(o.stdout.contains("needs 6 pairs"), "{}", o.stdout);
    assert_eq!(fsbench_out(&["gate", "--inconclusive", "fail"], &[&few]).code, 1);
    assert_eq!(fsbench_out(&["gate", "--bisect"], &[&few]).code, 125);
    assert_eq!(fsbench_out(&["gate", "--bisect"], &[&slow]).code, 1);
}

#[test]
fn gate_json_of_a_paired_run_carries_the_pairs() {
    let d = tempfile::tempdir().unwrap();
    let run = paired_run(
        d.path(),
        "P",
        &[(LatfsTest::Chown, pairs(8, 1000.0, 0.90, 0.005)), (LatfsTest::OpenClose, pairs(8, 500.0, 1.0, 0.002))],
        &[],
    );
    let o = fsbench_out(&["gate", "--json"], &[&run]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    let doc = crate::schemas::conforming("gate.schema.json", o.stdout.as_bytes(), "gate RUN --json");
    assert_eq!(doc["counts"]["regressed"], 1);
    assert_eq!(doc["counts"]["unchanged"], 1);
    let paired = &doc["report"]["paired"];
    assert_eq!(paired["axis"], "fs");
    assert_eq!(paired["looks"], serde_json::json!([6, 9, 14, 21, 32]));
    assert!((paired["level"].as_f64().unwrap() - 0.99).abs() < 1e-12);
    assert_eq!(paired["comparisons"][0]["pairs"], 8);
    assert!(paired["comparisons"][0]["signed_rank"]["p"].as_f64().unwrap() < 0.01);
}

#[test]
fn gate_run_on_an_unpaired_run_says_what_it_expected() {
    let d = tempfile::tempdir().unwrap();
    let plain = write_seed_run(&d.path().join("BASE"), "BASE");
    let o = fsbench_out(&["gate"], &[&plain]);
    assert_eq!(o.code, 2, "{}", o.stdout);
    assert!(o.stderr.contains("expected a paired run: a scenario with [compare] arms"), "{}", o.stderr);
    // RUN or the two sides, not both; and one side alone is not enough.
    assert_eq!(fsbench_out(&["gate", "--baseline"], &[&plain, &plain]).code, 2);
    assert_eq!(fsbench().args(["gate", "--baseline"]).arg(&plain).output().unwrap().status.code(), Some(2));
}

#[test]
fn report_and_compare_show_the_paired_section() {
    let d = tempfile::tempdir().unwrap();
    let run = paired_run(d.path(), "P", &[(LatfsTest::Chown, pairs(8, 1000.0, 0.90, 0.005))], &[3]);
    let o = fsbench_out(&["report"], &[&run]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("Paired comparison\n") && o.stdout.contains("ratio [99% CI]"), "{}", o.stdout);
    let r = row(&o.stdout, "S-qoff-t1-chown  ");
    assert!(r.contains("ext4-nodelalloc") && r.contains("0.900 [") && r.contains("8 (+1 dropped)"), "{r}");
    assert!(r.contains("max pairs") && r.contains("regressed"), "{r}");
    assert!(o.stdout.contains("dropped pairs: slot 3: ext4-nodelalloc-S-qoff-t1-chown: disturbed"), "{}", o.stdout);
    // compare of the one paired run is its paired comparison.
    let c = fsbench_out(&["compare"], &[&run]);
    assert_eq!((c.code, &c.stdout), (0, &o.stdout), "{}", c.stderr);
    let md = fsbench_out(&["report", "--format", "markdown"], &[&run]).stdout;
    assert!(md.contains("## Paired comparison") && md.contains("| S-qoff-t1-chown |"), "{md}");
    // CSV: the cells' table, a blank line, then the pairs' own table.
    let csv = fsbench_out(&["report", "--format", "csv"], &[&run]).stdout;
    let (_, pairs_csv) = csv.split_once("\n\n").expect("two tables");
    assert!(pairs_csv.starts_with("label,pair_group,step,baseline,candidate,pairs,dropped"), "{csv}");
    assert!(pairs_csv.lines().nth(1).unwrap().starts_with("P,S-qoff-t1-chown,,ext4,ext4-nodelalloc,8,1,0,"), "{csv}");
    let doc = crate::schemas::conforming(
        "report.schema.json",
        fsbench_out(&["report", "--json"], &[&run]).stdout.as_bytes(),
        "report --json",
    );
    assert_eq!(doc["paired"][0]["comparisons"][0]["verdict"], "regressed");
    let html = tempfile::tempdir().unwrap().keep().join("r.html");
    assert_eq!(fsbench().arg("report").arg(&run).arg("--html").arg(&html).output().unwrap().status.code(), Some(0));
    assert!(std::fs::read_to_string(&html).unwrap().contains("Paired comparison"));
    // Two runs: today's comparison, then each paired run's section under its label.
    let other = paired_run(d.path(), "Q", &[(LatfsTest::Chown, pairs(8, 1000.0, 1.0, 0.005))], &[]);
    let two = fsbench_out(&["compare"], &[&run, &other]);
    assert_eq!(two.code, 0, "{}", two.stderr);
    assert!(
        two.stdout.contains("Paired comparison: P\n") && two.stdout.contains("Paired comparison: Q\n"),
        "{}",
        two.stdout
    );
    let doc = crate::schemas::conforming(
        "report.schema.json",
        fsbench_out(&["compare", "--json"], &[&run, &other]).stdout.as_bytes(),
        "compare --json",
    );
    assert_eq!(doc["paired"].as_array().unwrap().len(), 2);
    // One unpaired run is too few to compare.
    let plain = write_seed_run(&d.path().join("BASE"), "BASE");
    let o = fsbench_out(&["compare"], &[&plain]);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("or one paired run"), "{}", o.stderr);
}

/// A steps member: 3 iterations of rm -rf (removing nothing in the first), untar, sync.
fn untar_member(untar_ms: u64) -> Vec<Vec<fsbench::model::StepTiming>> {
    (0..3)
        .map(|k| {
            let mut rm = step("rm -rf linux-2.5.63", "rm_rf", 20, 1710, 2160);
            rm.entries = Some(if k == 0 { 0 } else { 17_000 });
            vec![
                rm,
                step("tar zxf linux-2.5.63.tar.gz", "untar", 4830, 5860, untar_ms + k * 7),
                step("sync", "sync", 0, 30, 960),
            ]
        })
        .collect()
}

#[test]
fn a_paired_steps_run_is_gated_per_step_and_iteration_position() {
    use fsbench::model::pairing::{CellPairing, PairSlot, PairStop};
    let d = tempfile::tempdir().unwrap();
    let arms = ["ext4", "xfs"];
    let drift = [10_000u64, 12_000, 9_000, 11_000, 10_500, 9_500];
    let cells: Vec<_> = arms
        .iter()
        .enumerate()
        .map(|(arm, fs)| {
            // xfs untars 10% slower in every pair, whatever the machine's drift.
            let iterations = drift.iter().flat_map(|ms| untar_member(ms * (10 + arm as u64) / 10)).collect();
            let mut c = steps_cell(fs, iterations);
            c.pairing = Some(CellPairing {
                axis: "fs".into(),
                arms: arms.iter().map(|a| a.to_string()).collect(),
                arm,
                group: "S-qoff-t1".into(),
                seed: 1,
                pairs: (0..6).map(|s| PairSlot { slot: s, order: vec![0, 1], round: s, common_load: false }).collect(),
                dropped: vec![],
                stop: Some(PairStop::Regressed),
                stop_reason: None,
            });
            c
        })
        .collect();
    let text = "schema = 1\nname = \"paired-untar\"\n[matrix]\nfs = [\"ext4\", \"xfs\"]\nlayout = [\"S\"]\n\
                [backing]\nkind = \"tmpfs-loop\"\n[archive]\ngenerate = \"linux-2.5.63\"\n[workload]\nkind = \"steps\"\n\
                iterations = 3\nsteps = [{ op = \"rm_rf\", path = \"linux-2.5.63\" }, { op = \"untar\" }, { op = \"sync\" }]\n\
                [compare]\narms = \"fs\"\n";
    let planned = cells.iter().map(|c| c.params.clone()).collect();
    let run = write_run(&d.path().join("S"), &meta(Some("S"), "paired-untar", text, "steps", planned), &cells);
    let o = fsbench_out(&["gate"], &[&run]);
    assert_eq!(o.code, 1, "{}\n{}", o.stdout, o.stderr);
    assert!(row(&o.stdout, "xfs-S-qoff-t1#1 untar").contains("regressed"), "{}", o.stdout);
    // Identical steps in both arms: no change at all.
    assert!(row(&o.stdout, "xfs-S-qoff-t1#2 sync").contains("unchanged"), "{}", o.stdout);
    let doc = crate::schemas::conforming(
        "gate.schema.json",
        fsbench_out(&["gate", "--json"], &[&run]).stdout.as_bytes(),
        "gate RUN --json (steps)",
    );
    let untar = &doc["report"]["paired"]["comparisons"][1];
    assert_eq!((untar["step"].as_str(), untar["pairs"].as_u64()), (Some("#1 untar"), Some(6)));
    // Each pair's ratio is over its steady iterations (2 and 3): exactly 1.1.
    for d in untar["log_ratios"].as_array().unwrap() {
        assert!((d.as_f64().unwrap() - 1.1f64.ln()).abs() < 1e-3, "{d}");
    }
}

/// New users' report, round three (item 6): Ctrl-C 20 s into a paired run (1 of 4 groups
/// started), then `gate RUN` gave one row, `0 missing`, rc 0, though run.json said
/// `"interrupted": true` and planned more cells; `gate --history` of that run passed too.
/// Every planned cell that is absent is `missing`, and the gate says the run was interrupted.
#[test]
fn an_interrupted_paired_run_never_passes_its_gate() {
    let d = tempfile::tempdir().unwrap();
    let groups =
        [(LatfsTest::Chown, pairs(8, 1000.0, 0.99, 0.005)), (LatfsTest::OpenClose, pairs(8, 1000.0, 0.99, 0.005))];
    let run = paired_run(d.path(), "CUT", &groups, &[]);
    for f in std::fs::read_dir(run.join("cells")).unwrap() {
        let f = f.unwrap().path();
        if f.to_string_lossy().contains("open_close") {
            std::fs::remove_file(f).unwrap();
        }
    }
    let meta_path = run.join("run.json");
    let mut meta: serde_json::Value = serde_json::from_slice(&std::fs::read(&meta_path).unwrap()).unwrap();
    meta["interrupted"] = true.into();
    std::fs::write(&meta_path, serde_json::to_vec(&meta).unwrap()).unwrap();
    let o = fsbench_out(&["gate"], &[&run]);
    assert_eq!(o.code, 1, "{}\n{}", o.stdout, o.stderr);
    assert!(row(&o.stdout, "ext4-nodelalloc-S-qoff-t1-chown").contains("unchanged"), "{}", o.stdout);
    assert!(row(&o.stdout, "ext4-nodelalloc-S-qoff-t1-open_close").contains("missing"), "{}", o.stdout);
    assert!(o.stderr.contains("was interrupted") && o.stderr.contains("2 of 4 planned cells"), "{}", o.stderr);
    assert_eq!(fsbench_out(&["gate", "--allow-missing"], &[&run]).code, 0);

    // Item 10: JUnit reported `missing` as `<skipped>` while the job exited 1, and the
    // Markdown summary said "no regression" without the reason JUnit had.
    let tmp = tempfile::tempdir().unwrap();
    let (j, m) = (tmp.path().join("j.xml"), tmp.path().join("s.md"));
    let o = fsbench().arg("gate").arg(&run).arg("--junit").arg(&j).arg("--markdown").arg(&m).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let junit = std::fs::read_to_string(&j).unwrap();
    let doc = roxmltree::Document::parse(&junit).expect("JUnit XML is well-formed");
    let case = doc
        .descendants()
        .find(|n| n.has_tag_name("testcase") && n.attribute("name") == Some("ext4-nodelalloc-S-qoff-t1-open_close"))
        .unwrap();
    assert!(case.children().any(|n| n.has_tag_name("failure")), "{junit}");
    let md = std::fs::read_to_string(&m).unwrap();
    assert!(md.contains("❌ cells missing") && md.contains("was interrupted before this cell"), "{md}");
    // With --allow-missing the job passes, and the case is skipped, not failed.
    let o = fsbench().arg("gate").arg(&run).arg("--allow-missing").arg("--junit").arg(&j).output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    let junit = std::fs::read_to_string(&j).unwrap();
    assert!(junit.contains("<skipped") && !junit.contains("<failure"), "{junit}");
}

/// New users' report, round three (item 5): two paired A/A runs of one scenario, minutes
/// apart, gated as `--baseline A --candidate B` read `open_close -13.7% regressed`: each
/// paired member is stored as a round, and 6–33 "rounds" spanning a minute were taken as
/// covering the spread between runs. A paired side counts as one round: inconclusive
/// without a calibration, with a note saying why.
#[test]
fn two_paired_runs_gated_against_each_other_are_not_decided_by_their_members() {
    let d = tempfile::tempdir().unwrap();
    let a = paired_run(d.path(), "A", &[(LatfsTest::OpenClose, pairs(16, 1000.0, 1.0, 0.005))], &[]);
    let b = paired_run(d.path(), "B", &[(LatfsTest::OpenClose, pairs(16, 863.0, 1.0, 0.005))], &[]);
    let o = fsbench().arg("gate").arg("--baseline").arg(&a).arg("--candidate").arg(&b).output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(!stdout.contains("regressed  ") && stdout.contains("inconclusive"), "{stdout}");
    assert!(stderr.contains("is a paired run") || stdout.contains("is a paired run"), "{stdout}\n{stderr}");
}

#[test]
fn compare_of_two_labs_paired_runs_says_in_one_table_whether_they_agree() {
    // Issue #38 item 31: `compare THEIRS=… OURS=…` printed each lab's section one after the
    // other, and no table said whether the labs agree.
    let d = tempfile::tempdir().unwrap();
    let theirs = paired_run(d.path(), "THEIRS", &[(LatfsTest::Chown, pairs(8, 1000.0, 0.90, 0.005))], &[]);
    let ours = paired_run(d.path(), "OURS", &[(LatfsTest::Chown, pairs(8, 800.0, 0.905, 0.005))], &[]);
    let far = paired_run(d.path(), "FAR", &[(LatfsTest::Chown, pairs(8, 1000.0, 1.10, 0.005))], &[]);
    let (t, o, f) = (theirs.to_str().unwrap(), ours.to_str().unwrap(), far.to_str().unwrap());
    let out = fsbench_out(&["compare", &format!("THEIRS={t}"), &format!("OURS={o}")], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let table = out.stdout.split("Do the paired runs agree?").nth(1).unwrap_or_else(|| panic!("{}", out.stdout));
    assert!(table.contains("THEIRS [99% CI]") && table.contains("OURS [99% CI]"), "{table}");
    let r = row(table, "S-qoff-t1-chown");
    assert!(r.contains("0.900 [") && r.contains("0.905 [") && r.contains("agree (intervals overlap)"), "{r}");
    let out = fsbench_out(&["compare", &format!("THEIRS={t}"), &format!("FAR={f}")], &[]);
    let table = out.stdout.split("Do the paired runs agree?").nth(1).unwrap_or_else(|| panic!("{}", out.stdout));
    assert!(row(table, "S-qoff-t1-chown").contains("differ (no ratio in every interval)"), "{table}");
}
