use super::*;
use crate::model::{
    CellParams, CellResult, CellStatus, Disturbance, FioDirection, FioJobStats, FioRepetition, FioResult,
    LatfsRepetition, LatfsResult, LatfsTest, Layout, QuotaMode, StepsResult,
};

fn timing(op: &str, ms: u64, entries: Option<u64>, disturbed: bool) -> StepTiming {
    StepTiming {
        label: format!("{op} x").as_str().into(),
        op: op.into(),
        elapsed_us: ms * 1000,
        entries,
        disturbance: disturbed.then(|| Disturbance { disturbed: true, ..Default::default() }),
        ..Default::default()
    }
}

fn params(test: Option<LatfsTest>) -> CellParams {
    CellParams {
        fs: "ext4".into(),
        layout: Layout::S,
        quota: QuotaMode::Off,
        tasks: 1,
        test,
        fio: Default::default(),
        kernel: None,
    }
}

#[test]
fn steps_samples_are_the_steady_undisturbed_iterations() {
    // Iteration 1 removed nothing (not steady); iteration 3's untar was disturbed.
    let its: Vec<Vec<StepTiming>> = [(0, 500, false), (17, 2300, false), (17, 7700, true), (17, 2320, false)]
        .into_iter()
        .map(|(rm, untar, d)| vec![timing("rm_rf", 100, Some(rm), false), timing("untar", untar, Some(9), d)])
        .collect();
    let cell = CellResult {
        steps: Some(StepsResult { iterations: its, ..Default::default() }),
        ..CellResult::new(&params(None), CellStatus::Ok, "")
    };
    let q = samples(&cell, Metric::Elapsed);
    assert_eq!(q.len(), 2);
    assert_eq!(q[1].name, format!("{}#1 untar", cell.id));
    assert_eq!((q[1].key.as_str(), q[1].step.as_ref().unwrap().label.as_str()), ("untar", "untar x"));
    assert_eq!(q[1].samples, [2.3, 2.32]);
    assert!((q[1].mean().unwrap() - 2.31).abs() < 1e-12);
    assert_eq!(q[0].samples, [0.1, 0.1, 0.1]);
    // A lat_fs cell has no steps: one quantity, no samples.
    let none = samples(&CellResult::new(&params(None), CellStatus::Ok, ""), Metric::Elapsed);
    assert_eq!((none.len(), none[0].samples.len(), none[0].mean()), (1, 0, None));
}

#[test]
fn latfs_and_fio_samples_are_the_undisturbed_repetitions() {
    let rep = |round, loops, disturbed: bool| LatfsRepetition {
        round,
        total_loops_per_ms: loops,
        disturbance: disturbed.then(|| Disturbance { disturbed: true, ..Default::default() }),
        ..Default::default()
    };
    let latfs = LatfsResult {
        repetitions: vec![rep(0, 10.0, false), rep(0, 99.0, true), rep(0, 14.0, false), rep(1, 20.0, false)],
        ..Default::default()
    };
    let cell =
        CellResult { latfs: Some(latfs), ..CellResult::new(&params(Some(LatfsTest::Chown)), CellStatus::Ok, "") };
    let q = samples(&cell, Metric::TotalLoops);
    // Two rounds: one sample per round, its undisturbed repetitions' mean.
    assert_eq!((q[0].samples.clone(), q[0].rounds, q[0].key.as_str()), (vec![12.0, 20.0], 2, "chown"));
    assert_eq!(round_samples(&cell, Metric::TotalLoops, 0), [10.0, 14.0]);
    // No histogram: no latency samples.
    assert!(samples(&cell, Metric::Latency(Percentile::P99))[0].samples.is_empty());

    let frep = |iops: f64, disturbed: bool| FioRepetition {
        total: FioJobStats { all: FioDirection { iops, ..Default::default() }, ..Default::default() },
        disturbance: disturbed.then(|| Disturbance { disturbed: true, ..Default::default() }),
        ..Default::default()
    };
    let fio = CellResult {
        fio: Some(FioResult { repetitions: vec![frep(100.0, false), frep(9e9, true)], ..Default::default() }),
        ..CellResult::new(&params(None), CellStatus::Ok, "")
    };
    let q = samples(&fio, Metric::Fio(FioMetric::Iops));
    assert_eq!((q[0].samples.clone(), q[0].key.as_str()), (vec![100.0], "iops"));
    assert_eq!(round_samples(&fio, Metric::Fio(FioMetric::Iops), 0), [100.0]);
}

#[test]
fn every_metric_has_one_direction_unit_and_name() {
    use Direction::{HigherIsBetter as Up, LowerIsBetter as Down};
    let table = [
        (Metric::TotalLoops, Up, "loops/ms", "total_loops"),
        (Metric::Elapsed, Down, "s", "elapsed"),
        (Metric::Latency(Percentile::P99), Down, "µs", "latency_p99"),
        (Metric::Fio(FioMetric::Iops), Up, "IOPS", "iops"),
        (Metric::Fio(FioMetric::Bw), Up, "MiB/s", "bw"),
        (Metric::Fio(FioMetric::P99), Down, "µs", "p99"),
        (Metric::Fio(FioMetric::ClatMean), Down, "µs", "clat_mean"),
    ];
    for (m, d, unit, measure) in table {
        assert_eq!((m.direction(), m.unit(), m.measure_name().as_str()), (d, unit, measure), "{m:?}");
        assert!(UNITS.contains(&m.unit()), "{m:?}");
    }
    assert_eq!(Metric::Fio(FioMetric::P99).ascii_unit(), "us");
    assert_eq!(Metric::Elapsed.described(), "elapsed [s], higher is worse");
    for d in [Up, Down] {
        assert_eq!(Direction::from_word(d.word()), Some(d));
        assert_eq!(serde_json::to_value(d).unwrap(), d.word());
    }
    assert_eq!(Direction::from_word("sideways"), None);
}

#[test]
fn a_steps_pair_keeps_each_step_at_each_position_unless_its_members_were_loaded_unlike() {
    // A 1 s step window that lost `cpus` of a CPU to others.
    let hit = |mut t: StepTiming, cpus: f64| {
        t.disturbance = Some(Disturbance {
            wall_us: 1_000_000,
            contention_us: Some((cpus * 1e6) as u64),
            disturbed: cpus > 0.25,
            ..Default::default()
        });
        t
    };
    let it = |rm, untar: StepTiming, sync: StepTiming| vec![timing("rm_rf", 1, Some(rm), false), untar, sync];
    let a = vec![
        it(0, timing("untar", 10, None, false), timing("sync", 5, None, false)),
        it(9, timing("untar", 10, None, false), hit(timing("sync", 5, None, false), 0.8)),
        it(9, hit(timing("untar", 10, None, false), 0.6), timing("sync", 5, None, false)),
    ];
    let b = vec![
        it(0, timing("untar", 10, None, false), timing("sync", 5, None, false)),
        it(9, timing("untar", 10, None, false), timing("sync", 5, None, false)),
        it(9, hit(timing("untar", 10, None, false), 0.6), timing("sync", 5, None, false)),
    ];
    let positions = |j| step_pair_samples(&a, &b, j).iter().map(|(k, _, _)| *k).collect::<Vec<_>>();
    // The first iteration removed nothing (not steady). Position 1's sync was hit in `a`
    // only: left out of sync, not of untar. Position 2's untar was hit alike: kept.
    assert_eq!(positions(1), [1, 2]);
    assert_eq!(positions(2), [2]);
}
