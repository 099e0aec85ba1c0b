//! The join and the statistics on hand-made paired runs.

use super::*;
use crate::model::pairing::{CellPairing, DroppedPair, PairSlot, PairStop};
use crate::model::*;
use crate::results::RunMeta;
use crate::scenario::GateSpec;
use crate::stats::paired::{alpha_per_look, change_of_log_ratios, wilcoxon};
use crate::verdict::Verdict;

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

fn pairing(arm: usize, group: &str, slots: &[u32], dropped: &[u32]) -> CellPairing {
    CellPairing {
        axis: "fs".into(),
        arms: vec!["ext4".into(), "ext4-nodelalloc".into()],
        arm,
        group: group.into(),
        seed: 7,
        // Round r of the cell is slot r's member, but a void attempt took a round too.
        pairs: slots
            .iter()
            .enumerate()
            .map(|(i, &s)| PairSlot { slot: s, order: vec![0, 1], round: i as u32 + 1, common_load: false })
            .collect(),
        dropped: dropped
            .iter()
            .map(|&s| DroppedPair { slot: s, reason: format!("ext4-nodelalloc-{group}: disturbed") })
            .collect(),
        stop: Some(PairStop::MaxPairs),
        stop_reason: None,
    }
}

fn rep(round: u32, loops: f64, disturbed: bool) -> LatfsRepetition {
    LatfsRepetition {
        round,
        total_loops_per_ms: loops,
        disturbance: disturbed.then(|| Disturbance { disturbed: true, ..Default::default() }),
        ..Default::default()
    }
}

/// A lat_fs cell whose round `i + 1` has two repetitions averaging `values[i]` (round 0 is
/// a void attempt that must not be read).
fn latfs_cell(fs: &str, values: &[f64], p: CellPairing) -> CellResult {
    let params = params(fs, Some(LatfsTest::Chown));
    let mut reps = vec![rep(0, 1.0, false)];
    for (i, v) in values.iter().enumerate() {
        let r = i as u32 + 1;
        reps.extend([rep(r, v * 0.99, false), rep(r, v * 1.01, false), rep(r, 1e6, true)]);
    }
    CellResult {
        latfs: Some(LatfsResult { repetitions: reps, ..Default::default() }),
        pairing: Some(p),
        ..CellResult::new(&params, CellStatus::Ok, "")
    }
}

fn run(cells: Vec<CellResult>, workload: WorkloadKind) -> crate::results::LoadedRun {
    crate::results::LoadedRun {
        dir: "results/paired/r1".into(),
        meta: RunMeta { workload, ..Default::default() },
        cells,
        problems: vec![],
    }
}

fn opts(spec: &GateSpec, metric: crate::catalogue::Metric, steps_iterations: Option<u32>) -> PairedOptions<'_> {
    PairedOptions {
        metric,
        spec,
        settings: PairSettings { min_pairs: 6, max_pairs: 32, steps_iterations, warnings: vec![] },
    }
}

#[test]
fn slots_join_arms_into_pairs_and_the_statistics_are_the_paired_ones() {
    // Slot 3 was dropped; slot 7 has a baseline member only (the run stopped between them).
    let base_vals = [100.0, 104.0, 97.0, 101.0, 99.0, 103.0, 98.0];
    let cand_vals = [90.0, 93.0, 88.0, 91.5, 89.0, 92.0];
    let base = latfs_cell("ext4", &base_vals, pairing(0, "S-qoff-t1-chown", &[0, 1, 2, 4, 5, 6, 7], &[3]));
    let cand = latfs_cell("ext4-nodelalloc", &cand_vals, pairing(1, "S-qoff-t1-chown", &[0, 1, 2, 4, 5, 6], &[3]));
    let spec = GateSpec::default();
    let r = join_pairs(
        "run",
        &run(vec![base, cand], WorkloadKind::LatFs),
        &opts(&spec, crate::catalogue::Metric::TotalLoops, None),
    )
    .unwrap();
    assert_eq!((r.axis.as_str(), r.looks.as_slice()), ("fs", [6, 9, 14, 21, 32].as_slice()));
    assert!((r.level - 0.99).abs() < 1e-12);
    assert_eq!(r.comparisons.len(), 1);
    let c = &r.comparisons[0];
    assert_eq!(
        (c.name.as_str(), c.group.as_str(), c.key.as_str()),
        ("ext4-nodelalloc-S-qoff-t1-chown", "S-qoff-t1-chown", "chown")
    );
    assert_eq!((c.baseline.as_str(), c.candidate.as_str()), ("ext4", "ext4-nodelalloc"));
    // Members are the rounds' undisturbed means, paired slot by slot.
    assert_eq!(c.pairs, 6);
    assert_eq!(c.unmatched, [7]);
    assert_eq!(c.dropped.iter().map(|d| d.slot).collect::<Vec<_>>(), [3]);
    let want: Vec<f64> = base_vals[..6].iter().zip(&cand_vals).map(|(b, c)| (c / b).ln()).collect();
    for (a, b) in c.log_ratios.iter().zip(&want) {
        assert!((a - b).abs() < 1e-12, "{:?} {want:?}", c.log_ratios);
    }
    let alpha = alpha_per_look(6, 32);
    assert_eq!(c.change, change_of_log_ratios(&want, alpha));
    let w = wilcoxon(&want, alpha).unwrap();
    let sr = c.signed_rank.unwrap();
    assert_eq!((sr.n, sr.p, sr.hl), (w.n, w.p, w.hl));
    // About -10% with a tight spread: regressed at 5%, with 99% intervals.
    assert_eq!(c.verdict, Verdict::Regressed, "{:?}", c.change);
    assert_eq!(c.stop, Some(PairStop::MaxPairs));
    assert!(c.note.as_deref().unwrap().contains("slot 7"), "{:?}", c.note);
    assert_eq!(pairs_cell(c), "6 (+1 dropped, 1 unmatched)");
}

#[test]
fn below_six_pairs_there_is_no_wilcoxon_check_and_an_unpaired_run_has_no_section() {
    let base = latfs_cell("ext4", &[100.0, 101.0, 99.0], pairing(0, "g", &[0, 1, 2], &[]));
    let cand = latfs_cell("ext4-nodelalloc", &[100.5, 100.0, 99.5], pairing(1, "g", &[0, 1, 2], &[]));
    let spec = GateSpec::default();
    let r = join_pairs(
        "run",
        &run(vec![base.clone(), cand], WorkloadKind::LatFs),
        &opts(&spec, crate::catalogue::Metric::TotalLoops, None),
    )
    .unwrap();
    let c = &r.comparisons[0];
    assert_eq!((c.pairs, c.signed_rank), (3, None));
    assert_eq!(hl_cell(c), "needs 6 pairs");
    // Three pairs at 99%: too wide to call unchanged at 5%.
    assert_eq!(c.verdict, Verdict::Inconclusive);
    // Without its candidate cell, a group has no comparison but a warning.
    let r = join_pairs(
        "run",
        &run(vec![base.clone()], WorkloadKind::LatFs),
        &opts(&spec, crate::catalogue::Metric::TotalLoops, None),
    )
    .unwrap();
    assert!(r.comparisons.is_empty() && r.warnings.len() == 1, "{:?}", r.warnings);
    let mut plain = base;
    plain.pairing = None;
    assert!(
        join_pairs(
            "run",
            &run(vec![plain], WorkloadKind::LatFs),
            &opts(&spec, crate::catalogue::Metric::TotalLoops, None)
        )
        .is_none()
    );
}

fn step(op: &str, elapsed_ms: u64, entries: Option<u64>) -> StepTiming {
    StepTiming { label: op.into(), op: op.into(), elapsed_us: elapsed_ms * 1000, entries, ..Default::default() }
}

/// A steps cell whose members are 3 iterations each (rm_rf removing nothing in the first).
fn steps_cell(fs: &str, untar_ms: &[[u64; 3]], p: CellPairing) -> CellResult {
    let params = params(fs, None);
    // Round 0: a void attempt's iterations, then one member per slot.
    let mut iterations: Vec<Vec<StepTiming>> =
        (0..3).map(|_| vec![step("rm_rf", 1, Some(0)), step("untar", 1, None)]).collect();
    for member in untar_ms {
        for (k, ms) in member.iter().enumerate() {
            iterations.push(vec![step("rm_rf", 50, Some(if k == 0 { 0 } else { 1000 })), step("untar", *ms, None)]);
        }
    }
    let mut c = latfs_cell(fs, &[], p);
    c.id = params.id();
    c.params = params;
    c.latfs = None;
    c.steps = Some(StepsResult { iterations, ..Default::default() });
    c
}

#[test]
fn steps_pair_per_iteration_position_over_steady_iterations() {
    let slots: Vec<u32> = (0..6).collect();
    // Iteration 0 of each member (nothing removed) is not steady: its 10x must not count.
    let a: Vec<[u64; 3]> = (0..6).map(|i| [1000, 1000 + i * 10, 1100 + i * 10]).collect();
    let b: Vec<[u64; 3]> = (0..6).map(|i| [10_000, 1100 + i * 11, 1210 + i * 11]).collect();
    let base = steps_cell("ext4", &a, pairing(0, "S-qoff-t1", &slots, &[]));
    let cand = steps_cell("ext4-nodelalloc", &b, pairing(1, "S-qoff-t1", &slots, &[]));
    let spec = GateSpec::default();
    let r = join_pairs(
        "run",
        &run(vec![base, cand], WorkloadKind::Steps),
        &opts(&spec, crate::catalogue::Metric::Elapsed, Some(3)),
    )
    .unwrap();
    assert_eq!(r.comparisons.len(), 2, "one per step");
    let untar = &r.comparisons[1];
    assert_eq!(
        (untar.name.as_str(), untar.step.as_deref(), untar.key.as_str()),
        ("ext4-nodelalloc-S-qoff-t1#1 untar", Some("#1 untar"), "untar")
    );
    assert_eq!(untar.pairs, 6);
    for (i, d) in untar.log_ratios.iter().enumerate() {
        let want = ((b[i][1] as f64 / a[i][1] as f64).ln() + (b[i][2] as f64 / a[i][2] as f64).ln()) / 2.0;
        assert!((d - want).abs() < 1e-12, "pair {i}: {d} vs {want}");
    }
    // 10% slower every time, elapsed higher is worse: regressed.
    assert_eq!(untar.verdict, Verdict::Regressed, "{:?}", untar.change);
    // The same data read with the iterations guessed from the rounds (7 rounds of 3).
    let r2 = join_pairs(
        "run",
        &run(r_cells(&a, &b, &slots), WorkloadKind::Steps),
        &opts(&spec, crate::catalogue::Metric::Elapsed, None),
    )
    .unwrap();
    assert_eq!(r2.comparisons[1].log_ratios, untar.log_ratios);
}

fn r_cells(a: &[[u64; 3]], b: &[[u64; 3]], slots: &[u32]) -> Vec<CellResult> {
    vec![
        steps_cell("ext4", a, pairing(0, "S-qoff-t1", slots, &[])),
        steps_cell("ext4-nodelalloc", b, pairing(1, "S-qoff-t1", slots, &[])),
    ]
}

#[test]
fn the_section_names_the_level_and_every_column() {
    let base = latfs_cell("ext4", &[100.0; 6], pairing(0, "g", &[0, 1, 2, 3, 4, 5], &[]));
    let cand = latfs_cell("ext4-nodelalloc", &[100.0; 6], pairing(1, "g", &[0, 1, 2, 3, 4, 5], &[]));
    let spec = GateSpec::default();
    let p = join_pairs(
        "run",
        &run(vec![base, cand], WorkloadKind::LatFs),
        &opts(&spec, crate::catalogue::Metric::TotalLoops, None),
    )
    .unwrap();
    let mut m: Box<dyn crate::report::markup::Markup> = Box::new(crate::report::markup::Plain::default());
    write_sections(&mut *m, std::slice::from_ref(&p), false);
    let text = m.finish();
    assert!(text.starts_with("Paired comparison\n"), "{text}");
    assert!(text.contains("Intervals at 99%"), "{text}");
    assert!(text.contains("ratio [99% CI]") && text.contains("HL [99% CI]"), "{text}");
    assert!(text.contains("1.000 [1.000, 1.000]") && text.contains("unchanged"), "{text}");
    let csv = csv(&[p]);
    assert!(csv.starts_with("label,pair_group,step,baseline,candidate,pairs,"), "{csv}");
    assert_eq!(csv.lines().count(), 2);
}

#[test]
fn a_cell_claiming_more_pairs_than_any_run_takes_is_not_read_as_pairs() {
    let slots: Vec<u32> = (0..=crate::model::pairing::MAX_PAIRS).collect();
    let mut base = latfs_cell("ext4", &[100.0], pairing(0, "g", &slots, &[]));
    base.pairing.as_mut().unwrap().pairs[0].round = u32::MAX;
    let cand = latfs_cell("ext4-nodelalloc", &[100.0], pairing(1, "g", &[0], &[]));
    let spec = GateSpec::default();
    let r = join_pairs(
        "run",
        &run(vec![base, cand], WorkloadKind::LatFs),
        &opts(&spec, crate::catalogue::Metric::TotalLoops, None),
    )
    .unwrap();
    assert!(r.warnings[0].contains("more than 1000 pair slots"), "{:?}", r.warnings);
    // The candidate is left without its baseline: missing, and said so.
    assert_eq!(r.comparisons.len(), 1);
    assert_eq!(r.comparisons[0].verdict, Verdict::Missing);
    assert!(r.comparisons[0].note.as_deref().unwrap().contains("no baseline cell"));
}

#[test]
fn a_group_that_gave_up_on_a_failing_arm_says_so_once_and_names_the_steps_from_the_baseline() {
    let mut bp = pairing(0, "S-qoff-t1", &[], &[0]);
    bp.stop = Some(PairStop::MemberFailed);
    bp.stop_reason = Some("ext4-nodelalloc-S-qoff-t1: failed in 3 attempts in a row: failed: mkfs\u{1b}[2J".into());
    let mut cp = bp.clone();
    cp.arm = 1;
    let base = steps_cell("ext4", &[[1000, 1000, 1000]], bp);
    // The failing arm never ran: its cell has no steps.
    let mut cand = steps_cell("ext4-nodelalloc", &[], cp);
    cand.steps = None;
    cand.status = CellStatus::Failed;
    let spec = GateSpec::default();
    let r = join_pairs(
        "run",
        &run(vec![base, cand], WorkloadKind::Steps),
        &opts(&spec, crate::catalogue::Metric::Elapsed, Some(3)),
    )
    .unwrap();
    let steps: Vec<&str> = r.comparisons.iter().map(|c| c.step.as_deref().unwrap()).collect();
    assert_eq!(steps, ["#0 rm_rf", "#1 untar"]);
    for c in &r.comparisons {
        assert_eq!((c.stop, c.verdict, c.pairs), (Some(PairStop::MemberFailed), Verdict::Missing, 0));
        // The reason as recorded in JSON, escaped where it is printed.
        assert!(c.stop_reason.as_deref().unwrap().ends_with("mkfs\u{1b}[2J"));
        assert!(c.note.as_deref().unwrap().contains("the group stopped: ext4-nodelalloc-S-qoff-t1: failed in 3"));
        assert!(!c.note.as_deref().unwrap().contains('\u{1b}'), "{:?}", c.note);
    }
    let text = section_text(&r, false);
    assert_eq!(text.matches("the group stopped:").count(), 1, "{text}");
    assert!(text.contains("S-qoff-t1: the group stopped:") && text.contains("member failed"), "{text}");
}

/// Issue 38 item 31: two labs' paired runs were printed one after the other; one table now
/// says, per pair group, each lab's paired ratio and whether the intervals agree.
#[test]
fn two_labs_paired_runs_get_one_table_that_says_whether_they_agree() {
    let spec = GateSpec::default();
    let lab = |label: &str, factor: f64| {
        let base_vals = [100.0, 104.0, 97.0, 101.0, 99.0, 103.0];
        let cand_vals: Vec<f64> = [0.90, 0.93, 0.88, 0.915, 0.89, 0.92].iter().map(|x| x * factor * 100.0).collect();
        let slots = [0, 1, 2, 3, 4, 5];
        let base = latfs_cell("ext4", &base_vals, pairing(0, "S-qoff-t1-chown", &slots, &[]));
        let cand = latfs_cell("ext4-nodelalloc", &cand_vals, pairing(1, "S-qoff-t1-chown", &slots, &[]));
        let r = run(vec![base, cand], WorkloadKind::LatFs);
        join_pairs(label, &r, &opts(&spec, crate::catalogue::Metric::TotalLoops, None)).unwrap()
    };
    let render = |runs: &[PairedRun]| {
        let mut m: Box<dyn crate::report::markup::Markup> = Box::new(crate::report::markup::Plain::default());
        write_agreement(&mut *m, runs);
        m.finish()
    };
    let (theirs, ours, far) = (lab("THEIRS", 1.0), lab("OURS", 1.005), lab("FAR", 1.2));
    let text = render(&[theirs.clone(), ours]);
    assert!(text.contains("Do the paired runs agree?") && text.contains("THEIRS [99% CI]"), "{text}");
    assert!(text.contains("OURS [99% CI]") && text.contains("agree (intervals overlap)"), "{text}");
    let text = render(&[theirs.clone(), far]);
    assert!(text.contains("differ (no ratio in every interval)"), "{text}");
    assert_eq!(agreement(&[theirs.comparisons[0].change, None]), "cannot tell");
}

#[test]
fn a_pair_under_common_load_reads_its_disturbed_repetitions_and_says_so() {
    let common = |mut p: CellPairing| {
        p.pairs.iter_mut().for_each(|s| s.common_load = true);
        p
    };
    let base = latfs_cell("ext4", &[100.0, 101.0, 99.0], common(pairing(0, "g", &[0, 1, 2], &[])));
    let cand = latfs_cell("ext4-nodelalloc", &[100.0, 101.0, 99.0], common(pairing(1, "g", &[0, 1, 2], &[])));
    let spec = GateSpec::default();
    let r = join_pairs(
        "run",
        &run(vec![base, cand], WorkloadKind::LatFs),
        &opts(&spec, crate::catalogue::Metric::TotalLoops, None),
    )
    .unwrap();
    let c = &r.comparisons[0];
    // Each round's disturbed repetition (1e6 loops/ms) counts: the pair judged the load.
    assert!((c.baseline_values[0] - (200.0 + 1e6) / 3.0).abs() < 1e-6, "{:?}", c.baseline_values);
    assert_eq!((c.pairs, c.common_load), (3, 3));
    assert!(c.note.as_deref().unwrap().contains("3 of 3 pairs ran under common load"), "{:?}", c.note);
}

/// Issue #38, item 19: a steps row's stop said `regressed` beside its own verdict `improved`:
/// the group stopped on the sum of the steps, and the stop column now says so.
#[test]
fn a_steps_rows_stop_names_the_step_sum_it_was_decided_on() {
    let base = latfs_cell("ext4", &[100.0, 101.0, 99.0], pairing(0, "g", &[0, 1, 2], &[]));
    let cand = latfs_cell("ext4-nodelalloc", &[100.5, 100.0, 99.5], pairing(1, "g", &[0, 1, 2], &[]));
    let spec = GateSpec::default();
    let r = join_pairs(
        "run",
        &run(vec![base, cand], WorkloadKind::LatFs),
        &opts(&spec, crate::catalogue::Metric::TotalLoops, None),
    )
    .unwrap();
    let mut c = r.comparisons[0].clone();
    c.stop = Some(PairStop::Regressed);
    assert_eq!(super::stop_cell(&c), "regressed");
    c.step = Some("#1 untar".into());
    assert_eq!(super::stop_cell(&c), "regressed on the step sum");
    c.stop = Some(PairStop::MaxPairs);
    assert_eq!(super::stop_cell(&c), "max pairs");
}
