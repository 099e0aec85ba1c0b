//! `run --meta` and `fsbench history` over small synthetic result directories.

use std::path::{Path, PathBuf};

use crate::support::report::{latfs_cell, latfs_scenario_text, meta, write_run};
use crate::support::sandbox::Sandbox;
use crate::support::{crate_root, fsbench};
use fsbench::model::{CellParams, LatfsTest, Layout, QuotaMode};

fn params(fs: &str, tasks: u32) -> CellParams {
    CellParams { fs: fs.into(), layout: Layout::M, quota: QuotaMode::Off, tasks, test: Some(LatfsTest::OpenClose) }
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
fn a_hostile_meta_value_in_run_json_makes_the_run_unreadable_not_printed() {
    let dir = tempfile::tempdir().unwrap();
    let text = latfs_scenario_text("hist", "");
    write_history_run(dir.path(), 0, &text, 100.0, &[]);
    write_history_run(dir.path(), 1, &text, 100.0, &[("k", "\u{1b}]0;owned\u{7}")]);
    let out = fsbench().arg("report").arg(dir.path().join("hist")).output().unwrap();
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!all.contains('\u{1b}'), "{all:?}");
    assert!(all.contains("meta.k"), "{all}");
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
