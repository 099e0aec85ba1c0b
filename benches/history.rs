//! `fsbench history` over 1,000 runs × 128 lat_fs cells: reading the runs with a cold index
//! (built from scratch), a warm one (nothing changed), and without the index.
//!
//! `cargo bench --bench history` writes 1,000 synthetic finished runs (fs ext2/ext4 × M/S ×
//! qoff/qon × tasks 1, 2, 4, 8 × 4 tests = 128 cells, 3 repetitions each, a 10% step at run
//! 500) to a temporary directory, then times: the index built from scratch; the index read
//! warm (best of 3); every run directory read without it (`--no-index`); one run added to a
//! warm index; and the whole `history` (change points included) once with a warm index, for
//! the 4 series of one cell and for every series (change points cost the same per series with
//! or without the index).
//! `FSBENCH_BENCH_RUNS=N` writes N runs instead. Prints the figures; fails on none (the
//! machines are shared: figures go to benches/README.md with the load they were taken at).

use std::path::Path;
use std::time::{Duration, Instant};

use fsbench::history::{HistoryRequest, history, index, load};
use fsbench::model::*;
use fsbench::results::{HostInfo, RunMeta, sha256_hex};
use fsbench::stats::summarize;

const TEXT: &str = "schema = 1\nname = \"hist\"\n[matrix]\nfs = [\"ext2\", \"ext4\"]\nlayout = [\"M\", \"S\"]\n\
quota = [\"off\", \"on\"]\ntasks = [1, 2, 4, 8]\ntest = [\"open_close\", \"create_unlink\", \"chown\", \"write_truncate\"]\n\
[backing]\nkind = \"tmpfs-loop\"\nimage_size = \"1GiB\"\n[workload]\nkind = \"lat_fs\"\nrepetitions = 3\n";

fn planned() -> Vec<CellParams> {
    let mut out = Vec::new();
    for fs in ["ext2", "ext4"] {
        for layout in [Layout::M, Layout::S] {
            for quota in [QuotaMode::Off, QuotaMode::On] {
                for tasks in [1, 2, 4, 8] {
                    for test in LatfsTest::ALL {
                        out.push(CellParams {
                            fs: fs.into(),
                            layout,
                            quota,
                            tasks,
                            test: Some(test),
                            fio: Default::default(),
                            kernel: None,
                        });
                    }
                }
            }
        }
    }
    out
}

fn cell(params: CellParams, value: f64) -> CellResult {
    let reps: Vec<LatfsRepetition> = (0..3)
        .map(|r| {
            let v = value * (1.0 + 0.01 * (r as f64 - 1.0));
            LatfsRepetition {
                tasks: vec![TaskSample {
                    task: 0,
                    iterations: 1_000,
                    window_ns: 1_000_000_000,
                    user_us: 10,
                    sys_us: 900,
                }],
                total_loops_per_ms: v,
                latency_us: 1000.0 / v,
                ..LatfsRepetition::default()
            }
        })
        .collect();
    let samples: Vec<f64> = reps.iter().map(|r| r.total_loops_per_ms).collect();
    CellResult {
        schema: RESULT_SCHEMA_VERSION,
        id: params.id(),
        filesystems: Vec::new(),
        params,
        status: CellStatus::Ok,
        skip: None,
        error: None,
        notes: Vec::new(),
        latfs: Some(LatfsResult {
            total_loops: summarize(&samples),
            latency_us: summarize(&samples),
            repetitions: reps,
            stopped: None,
            reruns: 0,
            pinned_cpus: Vec::new(),
            latency_dist: None,
        }),
        steps: None,
        pairing: None,
        cgroup: None,
        profile: None,
        pair_profiles: Vec::new(),
        fio: None,
        ops: None,
        started: "2025-01-01T00:00:00Z".into(),
        finished: "2025-01-01T00:00:01Z".into(),
    }
}

/// Run `i` of the history in `hist/`.
fn write_run(hist: &Path, i: usize, cells: &[CellParams]) {
    let id = format!("2026{:02}{:02}T{:02}0000Z-{i:04}", 1 + i / 600, 1 + (i / 24) % 25, i % 24);
    let started = format!("2026-{:02}-{:02}T{:02}:00:00Z", 1 + i / 600, 1 + (i / 24) % 25, i % 24);
    let meta = RunMeta {
        schema: RESULT_SCHEMA_VERSION,
        tool_version: "0.1.0".into(),
        run_id: id.clone(),
        scenario_name: "hist".into(),
        scenario_origin: "scenarios/hist.toml".into(),
        scenario_text: TEXT.into(),
        scenario_sha256: sha256_hex(TEXT.as_bytes()),
        workload: WorkloadKind::LatFs,
        label: None,
        host: HostInfo { hostname: "bench".into(), cpu_count: 2, ..Default::default() },
        started: started.clone(),
        finished: Some(started),
        planned_cells: cells.to_vec(),
        meta: [("commit".to_string(), format!("c{i}"))].into_iter().collect(),
        ..Default::default()
    };
    let dir = hist.join(&id);
    std::fs::create_dir_all(dir.join("cells")).unwrap();
    std::fs::write(dir.join("run.json"), serde_json::to_vec(&meta).unwrap()).unwrap();
    let step = if i >= 500 { 1.1 } else { 1.0 };
    for (k, p) in cells.iter().enumerate() {
        let value = (100.0 + k as f64) * step * (1.0 + 0.02 * ((i * 7 + k) % 5) as f64 / 4.0);
        let c = cell(p.clone(), value);
        std::fs::write(dir.join("cells").join(format!("{}.json", c.id)), serde_json::to_vec(&c).unwrap()).unwrap();
    }
}

fn read_indexed(hist: &Path) -> usize {
    let dirs = load::run_dirs(hist).unwrap();
    let mut notes = Vec::new();
    let found = index::read_history(hist, &dirs, &mut notes).unwrap();
    assert!(notes.is_empty(), "{notes:?}");
    found.cells.values().map(Vec::len).sum()
}

fn read_directories(hist: &Path) -> usize {
    let loaded = load::load_history(hist, &HistoryRequest::default()).unwrap();
    loaded.runs.iter().map(|r| fsbench::history::series::measured_cells(&r.run).len()).sum()
}

fn secs(d: Duration) -> String {
    format!("{:.3} s", d.as_secs_f64())
}

fn main() {
    let n: usize = std::env::var("FSBENCH_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(1000);
    let tmp = tempfile::tempdir().unwrap();
    let hist = tmp.path().join("hist");
    let cells = planned();
    let t = Instant::now();
    for i in 0..n {
        write_run(&hist, i, &cells);
    }
    println!("wrote {n} runs × {} cells in {}", cells.len(), secs(t.elapsed()));

    let t = Instant::now();
    let measured = read_indexed(&hist);
    let cold = t.elapsed();
    assert_eq!(measured, n * cells.len());
    let db = tmp.path().join(".fsbench-index/index.sqlite");
    let size = std::fs::metadata(&db).map(|m| m.len()).unwrap_or(0);

    let mut warm = Duration::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        assert_eq!(read_indexed(&hist), measured);
        warm = warm.min(t.elapsed());
    }

    let t = Instant::now();
    assert_eq!(read_directories(&hist), measured);
    let no_index = t.elapsed();

    write_run(&hist, n, &cells);
    let t = Instant::now();
    assert_eq!(read_indexed(&hist), measured + cells.len());
    let one_more = t.elapsed();

    // Change points cost per series, and not what the index changes: one cell (4 series) is
    // enough to time them, and keeps the benchmark within minutes in a debug build.
    let filter = fsbench::history::HistoryFilter {
        only: vec!["fs=ext4,layout=M,quota=off,tasks=1".into()],
        ..Default::default()
    };
    let req = HistoryRequest { use_index: true, filter, ..Default::default() };
    let t = Instant::now();
    let h = history(&hist, &req).unwrap();
    let whole = t.elapsed();
    let found: usize = h.series.iter().map(|s| s.change_points.len()).sum();

    // And every series: what `fsbench history` of the whole scenario costs with a warm index.
    let req = HistoryRequest { use_index: true, ..Default::default() };
    let t = Instant::now();
    let all = history(&hist, &req).unwrap();
    let everything = t.elapsed();
    let found_all: usize = all.series.iter().map(|s| s.change_points.len()).sum();

    println!("| step | time |\n|---|---|");
    println!("| index built from scratch ({n} runs, {:.0} MiB) | {} |", size as f64 / (1 << 20) as f64, secs(cold));
    println!("| index warm, nothing changed (best of 3) | {} |", secs(warm));
    println!("| without the index (every cell file parsed) | {} |", secs(no_index));
    println!("| index warm, one run added | {} |", secs(one_more));
    println!(
        "| whole `history`, warm index, change points of {} series ({found} found) | {} |",
        h.series.len(),
        secs(whole)
    );
    println!(
        "| whole `history`, warm index, every series: {} ({found_all} change points found) | {} |",
        all.series.len(),
        secs(everything)
    );
}
