//! The result store: create, write cells atomically, finish, resume, load bad input.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use fsbench::model::*;
use fsbench::results::{ResultsError, RunWriter, load_run};
use fsbench::scenario::*;

use crate::support::report::*;

fn scenario() -> Scenario {
    let text = latfs_scenario_text("quota-smp", "");
    Scenario {
        name: "quota-smp".into(),
        description: "test".into(),
        source: ScenarioSource { origin: "test.toml".into(), base_dir: PathBuf::from("."), text },
        matrix: Matrix {
            fs: vec!["ext2".into()],
            layout: vec![Layout::M],
            quota: vec![QuotaMode::Off],
            tasks: vec![1, 2],
            test: vec![LatfsTest::OpenClose, LatfsTest::Chown],
            fio: Vec::new(),
        },
        filesystems: BTreeMap::new(),
        backing: Backing::TmpfsLoop { image_size_m: 1 << 30, image_size_s: 10 << 30 },
        archive: None,
        workload: Workload::Latfs(LatfsSpec {
            per_task_uid: true,
            quota_refs: 2,
            open_for_write: true,
            warmup: Duration::from_millis(300),
            duration: Duration::from_secs(1),
            repetitions: 2,
            rounds: 1,
            noise: Default::default(),
            latency: fsbench::scenario::LatencyMode::Mean,
        }),
        gate: GateSpec::default(),
        kernels: Vec::new(),
        monitors: true,
        profile: None,
        compare: None,
    }
}

fn planned() -> Vec<CellParams> {
    let mut v = Vec::new();
    for tasks in [1, 2] {
        for test in [LatfsTest::OpenClose, LatfsTest::Chown] {
            v.push(CellParams {
                fs: "ext2".into(),
                layout: Layout::M,
                quota: QuotaMode::Off,
                tasks,
                test: Some(test),
                fio: Default::default(),
                kernel: None,
            });
        }
    }
    v
}

#[test]
fn create_write_finish_load() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = planned();
    let mut w = RunWriter::create(tmp.path(), &scenario(), Some("BASE"), &plan).unwrap();
    let dir = w.dir().to_path_buf();
    assert_eq!(dir.parent().unwrap(), tmp.path().join("quota-smp"));
    // Written in reverse: loading restores plan order.
    for p in plan.iter().rev() {
        let path = w.write_cell(&latfs_cell(p.clone(), &[100.0, 110.0])).unwrap();
        assert_eq!(path, dir.join("cells").join(format!("{}.json", p.id())));
    }
    let finished = w.finish(false).unwrap();
    assert_eq!(finished, dir);
    let run = load_run(&dir).unwrap();
    assert!(run.problems.is_empty(), "{:?}", run.problems);
    assert_eq!(run.cells.iter().map(|c| c.params.clone()).collect::<Vec<_>>(), plan);
    let m = &run.meta;
    assert_eq!(
        (m.label.as_deref(), m.workload.name(), m.scenario_name.as_str()),
        (Some("BASE"), "lat_fs", "quota-smp")
    );
    assert_eq!(m.scenario_sha256, fsbench::results::sha256_hex(m.scenario_text.as_bytes()));
    assert!(m.finished.is_some() && !m.interrupted && !m.host.kernel_release.is_empty());
    // No temporary files are left behind.
    let names: Vec<String> = std::fs::read_dir(dir.join("cells"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| n.ends_with(".json") && !n.starts_with('.')), "{names:?}");
}

#[test]
fn two_runs_in_one_second_get_their_own_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let a = RunWriter::create(tmp.path(), &scenario(), None, &planned()).unwrap();
    let b = RunWriter::create(tmp.path(), &scenario(), None, &planned()).unwrap();
    assert_ne!(a.dir(), b.dir());
}

#[test]
fn resume_returns_what_is_stored_and_completes_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = planned();
    let mut w = RunWriter::create(tmp.path(), &scenario(), Some("V3"), &plan).unwrap();
    let dir = w.dir().to_path_buf();
    w.write_cell(&latfs_cell(plan[0].clone(), &[1.0])).unwrap();
    let mut failed = latfs_cell(plan[1].clone(), &[1.0]);
    failed.status = CellStatus::Failed;
    failed.error = Some("mount: EINVAL".into());
    w.write_cell(&failed).unwrap();
    // Simulate a kill mid-write of the third cell: a temp file, no finish.
    std::fs::write(dir.join("cells").join(".tmp-999-x.json"), b"{\"schema\":1,").unwrap();
    drop(w);
    let interrupted = load_run(&dir).unwrap();
    assert!(interrupted.meta.finished.is_none());

    let (mut w, meta, stored) = RunWriter::resume(fsbench::results::ResumableRun::open(&dir).unwrap()).unwrap();
    assert_eq!(meta.label.as_deref(), Some("V3"));
    // The failed cell is retried; the ok one is not.
    assert_eq!(stored.into_keys().collect::<Vec<_>>(), vec![plan[0].id()]);
    assert!(!dir.join("cells").join(".tmp-999-x.json").exists());
    for p in &plan[1..] {
        w.write_cell(&latfs_cell(p.clone(), &[2.0])).unwrap();
    }
    w.finish(false).unwrap();
    let run = load_run(&dir).unwrap();
    assert_eq!(run.cells.len(), plan.len());
    assert!(run.cells.iter().all(|c| c.status == CellStatus::Ok));
    assert!(run.meta.finished.is_some());
}

#[test]
fn bad_cell_files_become_problems_naming_file_and_field() {
    let tmp = tempfile::tempdir().unwrap();
    let plan = planned();
    let cells: Vec<CellResult> = plan.iter().map(|p| latfs_cell(p.clone(), &[5.0])).collect();
    let dir = write_run(tmp.path(), &meta(Some("BASE"), "quota-smp", "x", "lat_fs", plan.clone()), &cells);
    let cell = |i: usize| dir.join("cells").join(format!("{}.json", plan[i].id()));
    // Truncated.
    let text = std::fs::read_to_string(cell(0)).unwrap();
    std::fs::write(cell(0), &text[..text.len() / 2]).unwrap();
    // Hand-edited field of the wrong type.
    std::fs::write(cell(1), std::fs::read_to_string(cell(1)).unwrap().replace("\"tasks\": 1,", "\"tasks\": \"one\","))
        .unwrap();
    // Newer schema.
    std::fs::write(cell(2), std::fs::read_to_string(cell(2)).unwrap().replacen("\"schema\": 1", "\"schema\": 7", 1))
        .unwrap();
    let run = load_run(&dir).unwrap();
    assert_eq!(run.cells.len(), 1, "the good cell still loads");
    assert_eq!(run.problems.len(), 3, "{:#?}", run.problems);
    let p = run.problems.join("\n");
    assert!(p.contains(&format!("{}: (whole file): not valid JSON", cell(0).display())), "{p}");
    assert!(p.contains(&format!("{}: params.tasks: invalid type: string \"one\"", cell(1).display())), "{p}");
    assert!(
        p.contains(&format!(
            "{}: schema: result format version 7 is newer than this fsbench reads (up to 1)",
            cell(2).display()
        )),
        "{p}"
    );
}

#[test]
fn run_json_missing_or_newer_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let err = load_run(tmp.path()).unwrap_err();
    assert!(matches!(err, ResultsError::NotARun { .. }));
    assert!(err.to_string().contains("no run.json"), "{err}");
    let mut m = meta(None, "s", "x", "lat_fs", vec![]);
    m.schema = 2;
    write_run(tmp.path(), &m, &[]);
    let err = load_run(tmp.path()).unwrap_err().to_string();
    assert!(
        err.contains("run.json: schema: result format version 2 is newer than this fsbench reads (up to 1)"),
        "{err}"
    );
}
