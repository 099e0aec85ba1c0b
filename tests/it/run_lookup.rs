//! Finding runs: a scenario directory lists its runs; `@LABEL`, `latest` and
//! `SCENARIO@LABEL` name runs wherever a run directory is accepted.

use std::path::{Path, PathBuf};

use assert_cmd::prelude::*;

use crate::support::fsbench;
use crate::support::report::*;

/// Seed 000's run of `label`, started at `hour`, as `<root>/quota-smp/<id>`.
fn run_at(root: &Path, label: &str, hour: u32) -> PathBuf {
    let id = format!("20101111T{hour:02}0000Z-xeon");
    let dir = write_seed_run(&root.join("quota-smp").join(&id), label);
    let path = dir.join("run.json");
    let mut meta: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    meta["run_id"] = id.into();
    meta["started"] = format!("2010-11-11T{hour:02}:00:00Z").into();
    std::fs::write(&path, serde_json::to_vec(&meta).unwrap()).unwrap();
    dir
}

/// Three runs: BASE at 10:00, V3 at 11:00, BASE again at 12:00 (the newest).
fn three_runs() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("results");
    run_at(&root, "BASE", 10);
    run_at(&root, "V3", 11);
    run_at(&root, "BASE", 12);
    (tmp, root)
}

fn stdio(a: &assert_cmd::assert::Assert) -> (String, String) {
    let o = a.get_output();
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

#[test]
fn a_scenario_directory_lists_its_runs() {
    let (_tmp, root) = three_runs();
    let (out, _) = stdio(&fsbench().arg("report").arg(root.join("quota-smp")).assert().success());
    assert!(out.starts_with("3 runs in "), "{out}");
    let lines: Vec<&str> = out.lines().filter(|l| l.starts_with("20101111T")).collect();
    assert_eq!(lines.len(), 3, "{out}");
    // Oldest first, with label, host, kernel, date and cells.
    assert!(lines[0].starts_with("20101111T100000Z-xeon") && lines[0].contains("BASE"), "{out}");
    assert!(lines[1].contains("V3") && lines[1].contains("xeon-w5580") && lines[1].contains("2.6.37-rc1"));
    assert!(lines[2].contains("2010-11-11 12:00") && lines[2].contains("128/128"), "{out}");
    assert!(lines.iter().all(|l| l.chars().count() <= 100), "{out}");
    assert!(out.contains("fsbench report ") && out.contains("quota-smp@BASE"), "{out}");
    let (json, _) =
        stdio(&fsbench().args(["report", "--format", "json"]).arg(root.join("quota-smp")).assert().success());
    let v = crate::schemas::conforming("run-list.schema.json", json.as_bytes(), "report SCENARIO_DIR --json");
    assert_eq!(v["runs"].as_array().unwrap().len(), 3);
    assert_eq!(v["runs"][1]["label"], "V3");
    assert_eq!(v["runs"][2]["ok"], 128);
}

#[test]
fn json_is_short_for_format_json_in_report_and_compare() {
    let (tmp, root) = three_runs();
    let run = |args: &[&str]| stdio(&fsbench().current_dir(tmp.path()).args(args).assert().success()).0;
    let sdir = root.join("quota-smp");
    let sdir = sdir.to_str().unwrap();
    for args in [&["report", sdir][..], &["report", "@V3"], &["compare", "BASE=@BASE", "V3=@V3"]] {
        let long = run(&[args, &["--format", "json"][..]].concat());
        let short = run(&[args, &["--json"][..]].concat());
        assert!(serde_json::from_str::<serde_json::Value>(&short).is_ok(), "{args:?}: {short}");
        assert_eq!(short, long, "{args:?}");
    }
}

#[test]
fn labels_and_latest_name_runs_in_compare_report_and_gate() {
    let (tmp, root) = three_runs();
    let (out, err) = stdio(
        &fsbench()
            .current_dir(tmp.path())
            .args(["compare", "BASE=@BASE", "V3=quota-smp@V3", "NEW=latest"])
            .assert()
            .success(),
    );
    // `@BASE` is the newest of the two BASE runs, and the choice is said.
    assert!(
        err.contains("`@BASE` is ") && err.contains("20101111T120000Z-xeon") && err.contains("2 runs labelled BASE")
    );
    assert!(out.contains("BASE: run 20101111T120000Z-xeon") && out.contains("V3: run 20101111T110000Z-xeon"), "{out}");
    assert!(out.contains("NEW: run 20101111T120000Z-xeon"), "{out}");
    // Another root, and a scenario directory before the `@`.
    let sdir = root.join("quota-smp");
    fsbench().args(["report", "@V3", "--results"]).arg(&root).assert().success();
    fsbench().arg("report").arg(format!("{}@latest", sdir.display())).assert().success();
    // A bare name looks in the scenario of the run named by its directory.
    let v3 = sdir.join("20101111T110000Z-xeon");
    fsbench().current_dir("/").arg("compare").arg(&v3).arg("@BASE").assert().success();
    fsbench().current_dir(tmp.path()).args(["gate", "--baseline", "@BASE", "--candidate", "latest"]).assert().success();
}

#[test]
fn a_name_that_matches_nothing_says_what_there_is() {
    let (tmp, root) = three_runs();
    let (_, err) = stdio(&fsbench().current_dir(tmp.path()).args(["report", "@V4"]).assert().code(2));
    assert!(err.contains("no run labelled `V4`") && err.contains("labels: BASE, V3"), "{err}");
    // Two scenarios: a bare name cannot guess.
    write_seed_run(&root.join("other").join("r1"), "BASE");
    let (_, err) = stdio(&fsbench().current_dir(tmp.path()).args(["report", "latest"]).assert().code(2));
    assert!(err.contains("which scenario?") && err.contains("other, quota-smp") && err.contains("@latest"), "{err}");
    let (_, err) =
        stdio(&fsbench().args(["report", "latest", "--results"]).arg(tmp.path().join("none")).assert().code(2));
    assert!(err.contains("no scenario directory with runs"), "{err}");
}

#[test]
fn a_broken_run_is_reported_and_hides_nothing() {
    let (tmp, root) = three_runs();
    let broken = root.join("quota-smp").join("20101111T130000Z-broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("run.json"), "{ not json").unwrap();
    // Listed: the readable runs, the broken one named on stderr, exit 2 (bad input).
    let (out, err) = stdio(&fsbench().arg("report").arg(root.join("quota-smp")).assert().code(2));
    assert!(out.starts_with("3 runs in ") && err.contains("20101111T130000Z-broken"), "{out}\n{err}");
    // Names still resolve, and say what was not considered.
    let (_, err) = stdio(&fsbench().current_dir(tmp.path()).args(["report", "quota-smp@latest"]).assert().success());
    assert!(err.contains("20101111T120000Z-xeon") && err.contains("1 run not readable"), "{err}");
}

/// New users' report: a bare name next to `SCENARIO@LABEL` asked "which scenario?" with
/// two scenarios under the results root; `@BASE` alone suggested a scenario without BASE;
/// and a `./@BASE` directory in the current directory won over the label (security review, round two).
#[test]
fn a_bare_name_looks_where_the_other_runs_are_and_names_come_before_paths() {
    let (tmp, root) = three_runs();
    // A second scenario, without BASE, sorting first.
    let other = write_seed_run(&root.join("aaa-other").join("20101111T090000Z-xeon"), "X");
    assert!(other.join("run.json").exists());
    let (_, err) = stdio(
        &fsbench().args(["compare", "BASE=quota-smp@BASE", "V3=latest", "--results"]).arg(&root).assert().success(),
    );
    assert!(err.contains("20101111T120000Z-xeon"), "latest of quota-smp: {err}");
    // `@BASE` alone: only quota-smp has BASE, so it is that one.
    let (_, err) = stdio(&fsbench().args(["report", "@BASE", "--results"]).arg(&root).assert().success());
    assert!(err.contains("quota-smp"), "{err}");
    // A directory named `@BASE` in the current directory: the name is still the label.
    let cwd = tmp.path().join("cwd");
    std::fs::create_dir_all(cwd.join("@BASE")).unwrap();
    let (_, err) =
        stdio(&fsbench().current_dir(&cwd).args(["report", "@BASE", "--results"]).arg(&root).assert().success());
    assert!(err.contains("runs labelled BASE"), "{err}");
}

/// New users' report, round three (item 9): the README's `compare BASE=@BASE V3=latest`
/// exited 2 ("which scenario?") once `results/` held the quickstart run beside quota-smp,
/// which it always does in the README's own sequence.
#[test]
fn the_readme_compare_line_works_beside_the_quickstart_run() {
    let (tmp, root) = three_runs();
    write_seed_run(&root.join("quickstart").join("20101111T130000Z-xeon"), "X");
    let (out, _) =
        stdio(&fsbench().current_dir(tmp.path()).args(["compare", "BASE=@BASE", "V3=latest"]).assert().success());
    assert!(out.contains("V3: run 20101111T120000Z-xeon"), "latest of quota-smp, the scenario of @BASE: {out}");
}
