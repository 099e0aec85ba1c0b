//! fio metrics and paired-ratio series on hand-made runs, read directly and through the index.

use std::path::{Path, PathBuf};

use super::series::{MeasuredCell, measured_cells, series_from, unit_named};
use super::{HistoryRequest, HistoryRun};
use crate::catalogue::Direction;
use crate::model::pairing::{CellPairing, PairSlot, PairStop};
use crate::model::*;
use crate::plan::CellFilter;
use crate::results::{LoadedRun, RunMeta};

fn params(fs: &str, test: Option<LatfsTest>) -> CellParams {
    CellParams {
        fs: fs.into(),
        layout: Layout::S,
        quota: QuotaMode::Off,
        tasks: 1,
        test,
        fio: Default::default(),
        kernel: None,
    }
}

fn cell(params: CellParams) -> CellResult {
    CellResult {
        finished: "2026-11-01T00:00:01Z".into(),
        ..CellResult::new(&params, CellStatus::Ok, "2026-11-01T00:00:00Z")
    }
}

/// A fio repetition of `iops` 4 KiB I/Os per second, mean latency `1/iops` s, p99 three times that.
fn fio_rep(index: u32, round: u32, iops: f64, disturbed: bool) -> FioRepetition {
    let all = FioDirection {
        iops,
        bw_bytes: iops * 4096.0,
        total_ios: 1000,
        clat_ns: FioLatency { mean: 1e9 / iops, p99: 3e9 / iops, ..Default::default() },
    };
    FioRepetition {
        index,
        round,
        total: FioJobStats { name: "total".into(), all, ..Default::default() },
        disturbance: disturbed.then(|| Disturbance { disturbed: true, ..Default::default() }),
        ..Default::default()
    }
}

/// Arm `arm` of `arms` (axis `fs`) in group `group`, round `i` the member of slot `i`.
fn pairing(arms: &[&str], arm: usize, group: &str, pairs: usize) -> CellPairing {
    CellPairing {
        axis: "fs".into(),
        arms: arms.iter().map(|a| a.to_string()).collect(),
        arm,
        group: group.into(),
        seed: 7,
        pairs: (0..pairs as u32)
            .map(|i| PairSlot { slot: i, order: vec![0, 1], round: i, common_load: false })
            .collect(),
        dropped: vec![],
        stop: Some(PairStop::MaxPairs),
        stop_reason: None,
    }
}

/// A paired fio cell of arm `arm`: round `i` holds one repetition of `iops[i]` and a disturbed
/// one that must not count.
fn fio_member_cell(arms: &[&str], arm: usize, iops: &[f64]) -> CellResult {
    let mut c = cell(params(arms[arm], None));
    let mut reps = Vec::new();
    for (i, v) in iops.iter().enumerate() {
        reps.push(fio_rep(2 * i as u32, i as u32, *v, false));
        reps.push(fio_rep(2 * i as u32 + 1, i as u32, 1e6, true));
    }
    c.fio = Some(FioResult { fio_version: "fio-3.33".into(), repetitions: reps, ..Default::default() });
    c.pairing = Some(pairing(arms, arm, "S-qoff-t1", iops.len()));
    c
}

/// A paired lat_fs cell of arm `arm`: round `i` holds one repetition of `loops[i]` loops/ms.
fn latfs_member_cell(arms: &[&str], arm: usize, loops: &[f64]) -> CellResult {
    let mut c = cell(params(arms[arm], Some(LatfsTest::Chown)));
    let repetitions = loops
        .iter()
        .enumerate()
        .map(|(i, v)| LatfsRepetition { round: i as u32, total_loops_per_ms: *v, ..Default::default() })
        .collect();
    c.latfs = Some(LatfsResult { total_loops: crate::stats::summarize(loops), repetitions, ..Default::default() });
    c.pairing = Some(pairing(arms, arm, "S-qoff-t1-chown", loops.len()));
    c
}

fn meta(workload: WorkloadKind, text: &str, i: usize, planned: Vec<CellParams>) -> RunMeta {
    RunMeta {
        schema: RESULT_SCHEMA_VERSION,
        tool_version: "0.1.0".into(),
        run_id: format!("20261101T{i:02}0000Z-host"),
        scenario_name: "hist".into(),
        scenario_origin: "scenarios/hist.toml".into(),
        scenario_text: text.into(),
        scenario_sha256: crate::results::sha256_hex(text.as_bytes()),
        workload,
        started: format!("2026-11-01T{i:02}:00:00Z"),
        finished: Some(format!("2026-11-01T{i:02}:30:00Z")),
        planned_cells: planned,
        ..Default::default()
    }
}

fn loaded(workload: WorkloadKind, i: usize, cells: Vec<CellResult>) -> LoadedRun {
    let planned = cells.iter().map(|c| c.params.clone()).collect();
    LoadedRun {
        dir: format!("results/hist/run-{i:02}").into(),
        meta: meta(workload, "name = 'hist'", i, planned),
        cells,
        problems: vec![],
    }
}

/// `exp(mean ln(c/b))`: the paired ratio, computed here without the join.
fn geometric_ratio(b: &[f64], c: &[f64]) -> f64 {
    (b.iter().zip(c).map(|(b, c)| (c / b).ln()).sum::<f64>() / b.len() as f64).exp()
}

fn metric<'a>(cells: &'a [MeasuredCell], cell: &str, name: &str) -> Option<&'a super::series::MetricValue> {
    cells.iter().find(|c| c.id == cell)?.metrics.iter().find(|m| m.name == name)
}

#[test]
fn a_fio_cell_gives_the_gate_s_four_figures_averaged_over_its_undisturbed_repetitions() {
    let mut c = cell(params("ext4", None));
    let reps = vec![fio_rep(0, 0, 1000.0, false), fio_rep(1, 0, 3000.0, false), fio_rep(2, 0, 1e6, true)];
    c.fio = Some(FioResult { repetitions: reps, ..Default::default() });
    let cells = measured_cells(&loaded(WorkloadKind::Fio, 0, vec![c.clone()]));
    let got: Vec<(&str, &str, Direction, f64, usize)> =
        cells[0].metrics.iter().map(|m| (m.name.as_str(), m.unit, m.better, m.value, m.n)).collect();
    let mib = 4096.0 / (1024.0 * 1024.0);
    assert_eq!(
        got,
        [
            ("iops", "IOPS", Direction::HigherIsBetter, 2000.0, 2),
            ("bw", "MiB/s", Direction::HigherIsBetter, 2000.0 * mib, 2),
            ("p99", "µs", Direction::LowerIsBetter, (3e6 / 1000.0 + 3e6 / 3000.0) / 2.0, 2),
            ("clat_mean", "µs", Direction::LowerIsBetter, (1e6 / 1000.0 + 1e6 / 3000.0) / 2.0, 2),
        ]
    );
    assert!(cells[0].metrics.iter().all(|m| unit_named(m.unit) == Some(m.unit) && m.interval.is_none()));
    // Every repetition disturbed: nothing to average, no metric rather than a made-up one.
    c.fio.as_mut().unwrap().repetitions.retain(|r| !r.counts());
    assert!(measured_cells(&loaded(WorkloadKind::Fio, 0, vec![c]))[0].metrics.is_empty());
}

#[test]
fn a_paired_run_gives_its_candidate_cells_the_paired_ratios_of_the_join() {
    let arms = ["ext4", "xfs"];
    let base = [100.0, 104.0, 97.0, 101.0, 99.0, 103.0];
    let cand = [90.0, 95.0, 88.0, 91.5, 89.0, 92.0];
    let run =
        loaded(WorkloadKind::LatFs, 0, vec![latfs_member_cell(&arms, 0, &base), latfs_member_cell(&arms, 1, &cand)]);
    let cells = measured_cells(&run);
    let (b_id, c_id) = (run.cells[0].id.clone(), run.cells[1].id.clone());
    let r = metric(&cells, &c_id, "paired ratio total_loops").expect("the candidate has its ratio");
    assert!((r.value - geometric_ratio(&base, &cand)).abs() < 1e-12, "{r:?}");
    assert_eq!((r.unit, r.better, r.n), ("ratio", Direction::HigherIsBetter, 6));
    let (lo, hi) = r.interval.expect("six pairs bound the interval");
    assert!(lo < r.value && r.value < hi && hi < 1.0, "{r:?}");
    // After the cell's own metrics; the baseline compares with nothing.
    let own = metric(&cells, &c_id, "total_loops").unwrap();
    assert!(r.position > own.position);
    assert!(cells.iter().find(|c| c.id == b_id).unwrap().metrics.iter().all(|m| !m.name.starts_with("paired")));
    // No latency distribution was recorded: no latency ratio is made up.
    assert!(metric(&cells, &c_id, "paired ratio latency_p99").is_none());

    // One pair: a ratio without an interval.
    let run = loaded(
        WorkloadKind::LatFs,
        0,
        vec![latfs_member_cell(&arms, 0, &[100.0]), latfs_member_cell(&arms, 1, &[80.0])],
    );
    let cells = measured_cells(&run);
    let r = metric(&cells, &c_id, "paired ratio total_loops").unwrap();
    assert_eq!((r.value, r.n, r.interval), (0.8, 1, None));
}

#[test]
fn paired_fio_ratios_are_per_figure_with_the_figure_s_direction() {
    let arms = ["ext4", "xfs"];
    let base = [1000.0, 1100.0, 900.0, 1050.0, 950.0, 1000.0];
    let cand = [1200.0, 1300.0, 1100.0, 1250.0, 1150.0, 1210.0];
    let run = loaded(WorkloadKind::Fio, 0, vec![fio_member_cell(&arms, 0, &base), fio_member_cell(&arms, 1, &cand)]);
    let cells = measured_cells(&run);
    let c_id = &run.cells[1].id;
    let iops = metric(&cells, c_id, "paired ratio iops").unwrap();
    let want = geometric_ratio(&base, &cand);
    assert!((iops.value - want).abs() < 1e-12, "{iops:?}");
    assert_eq!(iops.better, Direction::HigherIsBetter);
    // Latency is 1/iops here: its ratio is the reciprocal, and lower is better.
    let clat = metric(&cells, c_id, "paired ratio clat_mean").unwrap();
    assert!((clat.value - 1.0 / want).abs() < 1e-12, "{clat:?}");
    assert_eq!(clat.better, Direction::LowerIsBetter);
    let names: Vec<&str> = cells
        .iter()
        .find(|c| &c.id == c_id)
        .unwrap()
        .metrics
        .iter()
        .map(|m| m.name.as_str())
        .filter(|n| n.starts_with("paired"))
        .collect();
    assert_eq!(names, ["paired ratio iops", "paired ratio bw", "paired ratio p99", "paired ratio clat_mean"]);
}

#[test]
fn paired_steps_ratios_are_named_after_the_cell_s_steps() {
    let arms = ["ext4", "xfs"];
    let step = |label: &str, ms: u64| StepTiming {
        label: UntrustedText::from(label),
        op: UntrustedText::from("untar"),
        elapsed_us: ms * 1000,
        ..Default::default()
    };
    // One iteration per member (no scenario to say so: guessed from the rounds).
    let member = |arm: usize, ms: &[u64]| {
        let mut c = cell(params(arms[arm], None));
        let iterations = ms.iter().map(|&m| vec![step("rm -rf t", 100), step("tar xf t.tar", m)]).collect();
        c.steps = Some(StepsResult { iterations, ..Default::default() });
        c.pairing = Some(pairing(&arms, arm, "S-qoff-t1", ms.len()));
        c
    };
    let (b, c) = ([1000, 1100, 1050, 990, 1020, 1010], [1200, 1300, 1250, 1180, 1230, 1210]);
    let run = loaded(WorkloadKind::Steps, 0, vec![member(0, &b), member(1, &c)]);
    let cells = measured_cells(&run);
    let c_id = &run.cells[1].id;
    let r = metric(&cells, c_id, "paired ratio step2 tar xf t.tar elapsed").expect("step 2's ratio");
    let (bf, cf): (Vec<f64>, Vec<f64>) = (b.iter().map(|&x| x as f64).collect(), c.iter().map(|&x| x as f64).collect());
    assert!((r.value - geometric_ratio(&bf, &cf)).abs() < 1e-9, "{r:?}");
    assert_eq!((r.better, r.n), (Direction::LowerIsBetter, 6));
    assert!((metric(&cells, c_id, "paired ratio step1 rm -rf t elapsed").unwrap().value - 1.0).abs() < 1e-12);
}

#[test]
fn paired_ratios_make_a_series_whose_change_point_is_found() {
    let arms = ["ext4", "xfs"];
    let base = [100.0, 104.0, 97.0, 101.0, 99.0, 103.0];
    // The candidate loses 10% from run 12 on, with a little noise per run.
    let runs: Vec<HistoryRun> = (0..24)
        .map(|i| {
            let level = if i < 12 { 1.0 } else { 0.9 };
            let wobble = 1.0 + 0.004 * ((i * 7 % 5) as f64 - 2.0);
            let cand: Vec<f64> = base.iter().map(|b| b * level * wobble).collect();
            let run = loaded(
                WorkloadKind::LatFs,
                i,
                vec![latfs_member_cell(&arms, 0, &base), latfs_member_cell(&arms, 1, &cand)],
            );
            HistoryRun { run, segment: 0 }
        })
        .collect();
    let cells: Vec<Vec<MeasuredCell>> = runs.iter().map(|r| measured_cells(&r.run)).collect();
    let mut series = series_from(&runs, &cells, &CellFilter::default());
    super::series::find_change_points(&mut series, &Default::default());
    let s = series.iter().find(|s| s.metric == "paired ratio total_loops").expect("a ratio series");
    assert_eq!((s.cell.as_str(), s.unit, s.points.len()), (runs[0].run.cells[1].id.as_str(), "ratio", 24));
    assert!(s.points.iter().all(|p| p.n == 6 && p.interval.is_some()));
    assert_eq!(s.change_points.len(), 1, "{:?}", s.change_points);
    assert_eq!(s.change_points[0].index, 12);
    // The ratio series comes after the cell's own.
    let order: Vec<&str> = series.iter().filter(|x| x.cell == s.cell).map(|x| x.metric.as_str()).collect();
    assert_eq!(order, ["total_loops", "paired ratio total_loops"]);
}

/// Write run `i` (finished) of `root/hist` with paired fio cells: unpaired fio figures and
/// paired ratios both.
fn write_fio_run(root: &Path, i: usize, gain: f64) -> PathBuf {
    let arms = ["ext4", "xfs"];
    let base = [1000.0, 1100.0, 900.0, 1050.0, 950.0, 1000.0];
    let cand: Vec<f64> = base.iter().enumerate().map(|(k, b)| b * gain * (1.0 + 0.01 * k as f64)).collect();
    let cells = [fio_member_cell(&arms, 0, &base), fio_member_cell(&arms, 1, &cand)];
    let m = meta(WorkloadKind::Fio, "name = 'hist'", i, cells.iter().map(|c| c.params.clone()).collect());
    let dir = root.join("hist").join(&m.run_id);
    std::fs::create_dir_all(dir.join("cells")).unwrap();
    std::fs::write(dir.join("run.json"), serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    for c in &cells {
        std::fs::write(dir.join("cells").join(format!("{}.json", c.id)), serde_json::to_vec(c).unwrap()).unwrap();
    }
    dir
}

#[test]
fn fio_runs_and_their_paired_ratios_round_trip_through_the_index() {
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..8 {
        write_fio_run(tmp.path(), i, if i < 4 { 1.2 } else { 1.1 });
    }
    let dir = tmp.path().join("hist");
    let read = |use_index: bool| {
        let mut notes = Vec::new();
        let h = super::history(&dir, &HistoryRequest { use_index, ..Default::default() }).unwrap();
        notes.extend(h.notes.iter().cloned());
        (h, notes)
    };
    let (direct, _) = read(false);
    let names: Vec<&str> = direct.series.iter().map(|s| s.metric.as_str()).collect();
    for m in ["iops", "bw", "p99", "clat_mean", "paired ratio iops", "paired ratio clat_mean"] {
        assert!(names.contains(&m), "{m} missing from {names:?}");
    }
    assert!(direct.series.iter().any(|s| s.points.iter().any(|p| p.interval.is_some())));
    let (built, notes) = read(true);
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(built.series, direct.series, "building the index");
    let (warm, _) = read(true);
    assert!(warm.runs.iter().all(|r| r.run.cells.is_empty()), "a warm index answers without the cell files");
    assert_eq!(warm.series, direct.series, "a warm index");

    // An index the previous version built has no fio or paired rows: it is built again, not trusted.
    let db = tmp.path().join(".fsbench-index/index.sqlite");
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(
            "DELETE FROM points WHERE unit IN ('IOPS', 'MiB/s', 'ratio') OR metric IN ('p99', 'clat_mean'); \
             PRAGMA user_version = 1;",
        )
        .unwrap();
    }
    let (rebuilt, _) = read(true);
    assert_eq!(rebuilt.series, direct.series, "an index of version 1");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(version, super::index::store::SCHEMA_VERSION);
    let ratios: i64 = conn
        .query_row("SELECT count(*) FROM points WHERE unit = 'ratio' AND low IS NOT NULL AND high > low", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(ratios, 8 * 4, "each run's four paired ratios, with their intervals");
}

/// An index version 2 built holds step means over every iteration (the first and the
/// disturbed ones too); since version 3 a step's value is the catalogue's steady mean, so such
/// an index is built again rather than mixing the two numbers in one series.
#[test]
fn a_version_2_index_of_step_means_over_every_iteration_is_built_again() {
    let tmp = tempfile::tempdir().unwrap();
    let step = |op: &str, ms: u64, rm: Option<u64>, disturbed: bool| StepTiming {
        label: UntrustedText::from(op),
        op: UntrustedText::from(op),
        elapsed_us: ms * 1000,
        entries: rm,
        disturbance: disturbed.then(|| Disturbance { disturbed: true, ..Default::default() }),
        ..Default::default()
    };
    for i in 0..2 {
        let mut c = cell(params("ext4", None));
        // Iteration 1 removed nothing; iteration 3's untar was disturbed: the steady mean is 2.0 s.
        let its = [(0, 500, false), (9, 1900, false), (9, 9000, true), (9, 2100, false)];
        let iterations =
            its.iter().map(|&(rm, ms, d)| vec![step("rm_rf", 100, Some(rm), false), step("untar", ms, None, d)]);
        c.steps = Some(StepsResult { iterations: iterations.collect(), ..Default::default() });
        let m = meta(WorkloadKind::Steps, "name = 'hist'", i, vec![c.params.clone()]);
        let dir = tmp.path().join("hist").join(&m.run_id);
        std::fs::create_dir_all(dir.join("cells")).unwrap();
        std::fs::write(dir.join("run.json"), serde_json::to_vec_pretty(&m).unwrap()).unwrap();
        std::fs::write(dir.join("cells").join(format!("{}.json", c.id)), serde_json::to_vec(&c).unwrap()).unwrap();
    }
    let dir = tmp.path().join("hist");
    let read = |use_index: bool| super::history(&dir, &HistoryRequest { use_index, ..Default::default() }).unwrap();
    let direct = read(false);
    let untar = direct.series.iter().find(|s| s.metric == "step2 untar elapsed").expect("the untar series");
    assert_eq!(untar.values(), [2.0, 2.0]);
    assert_eq!(untar.points[0].n, 2);
    assert_eq!(read(true).series, direct.series, "building the index");
    // What version 2 stored: the mean over every iteration, 13.5 / 4 s.
    let db = tmp.path().join(".fsbench-index/index.sqlite");
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(
            "UPDATE points SET value = 3.375, n = 4 WHERE metric = 'step2 untar elapsed'; PRAGMA user_version = 2;",
        )
        .unwrap();
    }
    assert_eq!(read(true).series, direct.series, "an index of version 2");
}

/// A latency percentile's value is the catalogue's too: the mean of each undisturbed
/// repetition's percentile, as `gate --metric p99` and `export` state it (it was that
/// percentile of the histogram merged over the repetitions, with n = 1).
#[test]
fn a_latency_percentile_is_the_mean_over_the_undisturbed_repetitions_as_the_gate_reads_it() {
    let dist = |p99_us: u64| LatencyDist { p50_ns: 1000, p90_ns: 2000, p99_ns: p99_us * 1000, ..Default::default() };
    let rep = |p99_us: u64, disturbed: bool| LatfsRepetition {
        total_loops_per_ms: 10.0,
        latency_dist: Some(dist(p99_us)),
        disturbance: disturbed.then(|| Disturbance { disturbed: true, ..Default::default() }),
        ..Default::default()
    };
    let mut c = cell(params("ext4", Some(LatfsTest::Chown)));
    let repetitions = vec![rep(100, false), rep(9000, true), rep(300, false)];
    c.latfs = Some(LatfsResult { latency_dist: Some(dist(9000)), repetitions, ..Default::default() });
    let run = loaded(WorkloadKind::LatFs, 0, vec![c]);
    let cells = measured_cells(&run);
    let p99 = metric(&cells, &run.cells[0].id, "latency_p99").expect("latency_p99");
    assert_eq!((p99.value, p99.n, p99.unit, p99.better), (200.0, 2, "µs", Direction::LowerIsBetter));
    let gate = crate::gate::series_of(
        &run.cells[0],
        crate::catalogue::Metric::Latency(crate::monitor::latency::Percentile::P99),
    );
    assert_eq!(gate[0].samples, [100.0, 300.0]);
    let order: Vec<&str> = cells[0].metrics.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(order, ["total_loops", "latency_p50", "latency_p90", "latency_p99"]);
}
