//! The history index (`<results root>/.fsbench-index/index.sqlite`): brought up to date from
//! the run directories, never trusted over them, and giving what reading them gives.

use std::path::{Path, PathBuf};

use crate::support::fsbench;
use crate::support::report::latfs_scenario_text;

/// Run `i` of a history under `root/hist`, finished (so the index may hold it).
fn finished_run(root: &Path, i: usize, value: f64) -> PathBuf {
    let text = latfs_scenario_text("hist", "");
    let dir = super::history::write_history_run(root, i, &text, value, &[("commit", &format!("c{i}"))]);
    let run_json = dir.join("run.json");
    let mut meta: serde_json::Value = serde_json::from_slice(&std::fs::read(&run_json).unwrap()).unwrap();
    meta["finished"] = meta["started"].clone();
    std::fs::write(&run_json, serde_json::to_vec_pretty(&meta).unwrap()).unwrap();
    dir
}

fn history(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = fsbench().arg("history").arg(dir).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn indexed_runs(root: &Path) -> Vec<String> {
    let db = root.join(".fsbench-index/index.sqlite");
    let conn = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let mut q = conn.prepare("SELECT run_dir FROM runs ORDER BY run_dir").unwrap();
    q.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
}

#[test]
fn the_index_follows_runs_added_and_removed_and_answers_as_the_directories_do() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs: Vec<PathBuf> = (0..8).map(|i| finished_run(tmp.path(), i, if i < 4 { 100.0 } else { 110.0 })).collect();
    let hist = tmp.path().join("hist");
    let (code, first, err) = history(&hist, &["--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.is_empty(), "{err}");
    assert_eq!(indexed_runs(tmp.path()).len(), 8);
    let (_, plain, _) = history(&hist, &["--json", "--no-index"]);
    assert_eq!(first, plain, "the index must answer as the run directories do");
    // A warm index answers the same.
    assert_eq!(history(&hist, &["--json"]).1, plain);

    // A new run, and one removed.
    finished_run(tmp.path(), 8, 110.0);
    std::fs::remove_dir_all(&dirs[0]).unwrap();
    let (code, after, err) = history(&hist, &["--json"]);
    assert_eq!(code, 0, "{err}");
    let names = indexed_runs(tmp.path());
    assert_eq!(names.len(), 8, "{names:?}");
    assert!(!names.iter().any(|n| dirs[0].ends_with(n)), "{names:?}");
    assert_eq!(after, history(&hist, &["--json", "--no-index"]).1);

    // A run changed in place (its run.json rewritten with another value).
    let run_json = dirs[3].join("run.json");
    let mut meta: serde_json::Value = serde_json::from_slice(&std::fs::read(&run_json).unwrap()).unwrap();
    meta["meta"]["commit"] = "changed".into();
    std::fs::write(&run_json, serde_json::to_vec(&meta).unwrap()).unwrap();
    let (_, changed, _) = history(&hist, &["--csv"]);
    assert!(changed.contains("changed"), "{changed}");
    assert_eq!(changed, history(&hist, &["--csv", "--no-index"]).1);
}

#[test]
fn an_unfinished_run_is_read_from_its_directory_and_not_indexed() {
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..3 {
        finished_run(tmp.path(), i, 100.0);
    }
    let text = latfs_scenario_text("hist", "");
    super::history::write_history_run(tmp.path(), 3, &text, 100.0, &[]);
    let hist = tmp.path().join("hist");
    let (code, out, err) = history(&hist, &["--json"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(indexed_runs(tmp.path()).len(), 3);
    assert_eq!(out, history(&hist, &["--json", "--no-index"]).1);
}

#[test]
fn a_symlink_planted_at_the_index_directory_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..3 {
        finished_run(tmp.path(), i, 100.0);
    }
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), tmp.path().join(".fsbench-index")).unwrap();
    let (code, out, err) = history(&tmp.path().join("hist"), &["--csv"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("history index not used") && err.contains("symbolic link"), "{err}");
    assert_eq!(out, history(&tmp.path().join("hist"), &["--csv", "--no-index"]).1);
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0, "nothing written through the link");
}

#[test]
fn an_index_directory_others_can_write_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    finished_run(tmp.path(), 0, 100.0);
    let ix = tmp.path().join(".fsbench-index");
    std::fs::create_dir(&ix).unwrap();
    std::fs::set_permissions(&ix, std::fs::Permissions::from_mode(0o777)).unwrap();
    let (code, _, err) = history(&tmp.path().join("hist"), &[]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("history index not used") && err.contains("0777"), "{err}");
}

#[test]
fn a_corrupt_or_planted_index_file_is_rebuilt() {
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..3 {
        finished_run(tmp.path(), i, 100.0);
    }
    let hist = tmp.path().join("hist");
    let (_, good, _) = history(&hist, &["--json", "--no-index"]);
    let db = tmp.path().join(".fsbench-index/index.sqlite");
    history(&hist, &[]);
    // Garbage where the database was.
    std::fs::write(&db, vec![0x5a; 8192]).unwrap();
    let (code, out, err) = history(&hist, &["--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("built again"), "{err}");
    assert_eq!(out, good);
    assert_eq!(indexed_runs(tmp.path()).len(), 3);
    // A link planted at the database's name is removed, not followed.
    let target = tmp.path().join("precious");
    std::fs::write(&target, b"keep me").unwrap();
    std::fs::remove_file(&db).unwrap();
    std::os::unix::fs::symlink(&target, &db).unwrap();
    let (code, out, err) = history(&hist, &["--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("not a regular file"), "{err}");
    assert_eq!(out, good);
    assert_eq!(std::fs::read(&target).unwrap(), b"keep me");
    assert!(std::fs::symlink_metadata(&db).unwrap().is_file());
}
