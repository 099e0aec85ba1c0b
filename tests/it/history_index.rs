//! The history index (`<results root>/.fsbench-index/index.sqlite`): brought up to date from
//! the run directories, never trusted over them, and giving what reading them gives.

use std::os::unix::fs::FileExt;
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

/// The finding: a cell file edited in place (its value changed, same size, its mtime put back
/// with utimensat) was not seen: `history` showed -20.5% where `report` and `--no-index` said
/// +695%. The index now keys every file's ctime and inode too, which no one can put back.
#[test]
fn a_cell_file_edited_in_place_with_its_mtime_put_back_is_read_again() {
    use std::os::unix::fs::MetadataExt;
    let tmp = tempfile::tempdir().unwrap();
    let dirs: Vec<PathBuf> = (0..4).map(|i| finished_run(tmp.path(), i, 100.0)).collect();
    let hist = tmp.path().join("hist");
    let (code, before, err) = history(&hist, &["--csv"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(indexed_runs(tmp.path()).len(), 4, "the runs are indexed before the edit");
    let cells = dirs[3].join("cells");
    let cell = std::fs::read_dir(&cells)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .unwrap();
    let text = std::fs::read_to_string(&cell).unwrap();
    assert!(text.contains("100.0"), "{text}");
    // Same length, so the size does not give it away: 100 -> 900 loops/ms.
    let edited = text.replace("100.0", "900.0").replace("99.0", "91.0").replace("101.0", "909.0");
    assert_eq!(edited.len(), text.len());
    let (file_before, dir_before) = (std::fs::metadata(&cell).unwrap(), std::fs::metadata(&cells).unwrap());
    // In place: the same inode, opened for writing, not renamed over.
    std::fs::OpenOptions::new().write(true).open(&cell).unwrap().write_all_at(edited.as_bytes(), 0).unwrap();
    let times = |m: &std::fs::Metadata| {
        [
            nix::sys::time::TimeSpec::new(m.atime(), m.atime_nsec()),
            nix::sys::time::TimeSpec::new(m.mtime(), m.mtime_nsec()),
        ]
    };
    for (path, m) in [(&cell, &file_before), (&cells, &dir_before)] {
        let [a, t] = times(m);
        nix::sys::stat::utimensat(
            nix::fcntl::AT_FDCWD,
            path.as_path(),
            &a,
            &t,
            nix::sys::stat::UtimensatFlags::NoFollowSymlink,
        )
        .unwrap();
    }
    let after_meta = std::fs::metadata(&cell).unwrap();
    assert_eq!(
        (after_meta.ino(), after_meta.len(), after_meta.mtime_nsec()),
        (file_before.ino(), file_before.len(), file_before.mtime_nsec())
    );
    let (code, after, err) = history(&hist, &["--csv"]);
    assert_eq!(code, 0, "{err}");
    assert_ne!(after, before, "the edit was not seen");
    // The run's value is the mean of its edited repetitions (900, 91, 909), as the catalogue reads it.
    assert!(after.contains("633.33"), "{after}");
    assert_eq!(after, history(&hist, &["--csv", "--no-index"]).1, "the index must answer as the directories do");
}

/// Untried surfaces, tried: two `history` at once on one results root (SQLite's locks and the
/// busy timeout keep the file whole; both answer as the directories do), and an index file too
/// big to be one fsbench wrote (removed and built again, never read).
#[test]
fn two_histories_at_once_agree_and_a_huge_index_file_is_rebuilt() {
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..40 {
        finished_run(tmp.path(), i, 100.0 + i as f64);
    }
    let hist = tmp.path().join("hist");
    let (_, plain, _) = history(&hist, &["--csv", "--no-index"]);
    for round in 0..3 {
        // Each round on an empty index, so both processes write it.
        let _ = std::fs::remove_dir_all(tmp.path().join(".fsbench-index"));
        let start = || fsbench().arg("history").arg(&hist).arg("--csv").output();
        let (a, b) = std::thread::scope(|s| {
            let a = s.spawn(start);
            let b = s.spawn(start);
            (a.join().unwrap().unwrap(), b.join().unwrap().unwrap())
        });
        for o in [&a, &b] {
            assert_eq!(o.status.code(), Some(0), "round {round}: {}", String::from_utf8_lossy(&o.stderr));
            assert_eq!(String::from_utf8_lossy(&o.stdout), plain, "round {round}");
        }
        assert_eq!(indexed_runs(tmp.path()).len(), 40, "round {round}");
    }
    // A sparse file of more than 1 GiB at the database's name.
    let db = tmp.path().join(".fsbench-index/index.sqlite");
    let f = std::fs::OpenOptions::new().write(true).open(&db).unwrap();
    f.set_len((1 << 30) + 1).unwrap();
    drop(f);
    let (code, out, err) = history(&hist, &["--csv"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("more than the") && err.contains("built again"), "{err}");
    assert_eq!(out, plain);
    assert!(std::fs::metadata(&db).unwrap().len() < 1 << 30);
}
