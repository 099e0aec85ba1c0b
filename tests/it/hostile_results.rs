//! Result files are other people's files: absurd numbers and counts in them are bad
//! input (exit 2, the file and field named), never a hang, an abort or a verdict.

mod text;

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use fsbench::model::{CellParams, Layout, QuotaMode};
use fsbench::results::RunShard;

use crate::support::fsbench;
use crate::support::report::{latfs_cell, latfs_scenario_text, meta, write_run};

fn params(tasks: u32) -> CellParams {
    CellParams {
        fs: "ext4".into(),
        layout: Layout::S,
        quota: QuotaMode::Off,
        tasks,
        test: Some(fsbench::model::LatfsTest::OpenClose),
    }
}

/// Wait at most `limit`; a command still running then is a hang (killed, reported as None).
fn finish(mut child: Child, limit: Duration) -> Option<(i32, String)> {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if let Some(st) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
            return Some((st.code().unwrap_or(-1), err));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

#[test]
fn f64_max_in_a_result_file_is_refused_by_report_plot_and_gate() {
    // It used to make `report --plot` spin forever and the gate say `unchanged`.
    let tmp = tempfile::tempdir().unwrap();
    let text = latfs_scenario_text("q", "");
    let base = write_run(
        &tmp.path().join("base"),
        &meta(Some("BASE"), "q", &text, "lat_fs", vec![params(1)]),
        &[latfs_cell(params(1), &[100.0, 101.0, 99.0])],
    );
    let mut cell = latfs_cell(params(1), &[100.0, 101.0, 99.0]);
    cell.latfs.as_mut().unwrap().total_loops.median = f64::MAX;
    cell.latfs.as_mut().unwrap().repetitions[0].total_loops_per_ms = f64::MAX;
    let bad = write_run(&tmp.path().join("cand"), &meta(Some("V3"), "q", &text, "lat_fs", vec![params(1)]), &[cell]);
    let plots = tmp.path().join("plots");
    std::fs::create_dir(&plots).unwrap();
    let report = fsbench()
        .arg("report")
        .arg(&bad)
        .arg("--plot")
        .arg(&plots)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (code, err) = finish(report, Duration::from_secs(60)).expect("report --plot hung on f64::MAX");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("latfs.total_loops.median") && err.contains("plausible"), "{err}");
    let gate = fsbench()
        .args(["gate", "--baseline"])
        .arg(&base)
        .arg("--candidate")
        .arg(&bad)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (code, err) = finish(gate, Duration::from_secs(60)).expect("gate hung");
    assert_eq!(code, 2, "a gate over an implausible file is bad input, not a verdict: {err}");
}

#[test]
fn a_huge_shard_count_in_run_json_aborted_merge_with_exit_134() {
    let tmp = tempfile::tempdir().unwrap();
    let text = latfs_scenario_text("q", "");
    let mut m = meta(Some("BASE"), "q", &text, "lat_fs", vec![params(1)]);
    m.shard = Some(RunShard { index: 1, count: u32::MAX, key: "k".into(), total_cells: 2, cell_indices: vec![0] });
    let dir = write_run(&tmp.path().join("q/r1"), &m, &[latfs_cell(params(1), &[100.0])]);
    let merge = fsbench().arg("merge").arg(&dir).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let (code, err) = finish(merge, Duration::from_secs(60)).expect("merge hung");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("shard.count"), "{err}");
}
