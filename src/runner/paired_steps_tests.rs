//! Paired steps groups and groups whose member always fails, against a scripted executor:
//! the schedule, how each member's iterations are folded into its cell, the values the
//! sequential stop reads, and the early `member_failed` stop. No root.

use std::collections::{BTreeMap, VecDeque};

use super::cell::CellExecutor;
use super::paired_run::{PairedRun, run_paired};
use super::progress::Phase;
use crate::model::pairing::{CellPairing, PairStop};
use crate::model::{CellResult, CellStatus, Disturbance, StepTiming, StepsResult};
use crate::plan::Cell;

/// What a scripted member answers.
#[derive(Clone)]
enum Member {
    /// Ran: each iteration two steps (`untar` 60%, `sync` 40%) summing to this many seconds.
    Ran(Vec<f64>),
    /// Ran, with one step disturbed.
    Disturbed,
    /// Ran, with every step disturbed.
    AllDisturbed,
    /// A step exited non-zero (or provisioning failed): this error.
    Fails(String),
    /// The host turned it down: this reason.
    Skipped(&'static str),
}

/// Answers per arm (by fs) from a queue, then `steady` for ever; records the calls.
struct Script {
    arms: Vec<(&'static str, VecDeque<Member>, Member)>,
    calls: Vec<String>,
}

impl Script {
    fn new(arms: Vec<(&'static str, Vec<Member>, Member)>) -> Script {
        Script { arms: arms.into_iter().map(|(f, q, s)| (f, q.into(), s)).collect(), calls: Vec::new() }
    }
}

fn timing(op: &str, seconds: f64) -> StepTiming {
    StepTiming { label: op.into(), op: op.into(), elapsed_us: (seconds * 1e6).round() as u64, ..Default::default() }
}

impl CellExecutor for Script {
    fn measure(&mut self, cell: &Cell, _phase: &Phase) -> CellResult {
        self.calls.push(cell.params.fs.clone());
        let arm = self.arms.iter_mut().find(|(f, _, _)| *f == cell.params.fs).expect("a scripted arm");
        let answer = arm.1.pop_front().unwrap_or_else(|| arm.2.clone());
        let mut r = CellResult::new(&cell.params, CellStatus::Ok, "t");
        match answer {
            Member::Ran(totals) => {
                let iterations = totals.iter().map(|t| vec![timing("untar", t * 0.6), timing("sync", t * 0.4)]);
                r.steps = Some(StepsResult { iterations: iterations.collect(), ..Default::default() });
            }
            Member::Disturbed | Member::AllDisturbed => {
                let mut it = vec![timing("untar", 1.0), timing("sync", 1.0)];
                // Its partner (no window recorded) lost nothing: 0.8 of a CPU apart.
                let hit = Disturbance {
                    wall_us: 1_000_000,
                    contention_us: Some(800_000),
                    disturbed: true,
                    ..Default::default()
                };
                let all = matches!(answer, Member::AllDisturbed);
                for (j, t) in it.iter_mut().enumerate() {
                    if all || j == 1 {
                        t.disturbance = Some(hit.clone());
                    }
                }
                r.steps = Some(StepsResult { iterations: vec![it.clone(), it], ..Default::default() });
            }
            Member::Fails(e) => {
                r.status = CellStatus::Failed;
                r.error = Some(e);
            }
            Member::Skipped(why) => {
                r.status = CellStatus::Skipped;
                r.skip = Some(crate::model::SkipReason { reason: why.into(), remedy: None });
            }
        }
        r
    }
}

/// Arms `a` (baseline) and `b` on `fs`, a steps workload of `iterations` iterations, pairs
/// `min..=max`, order seed 7.
fn scenario(iterations: u32, min: u32, max: u32) -> crate::scenario::Scenario {
    let text = format!(
        "schema = 1\nname = \"p\"\n[matrix]\nfs = [\"a\", \"b\"]\n[backing]\nkind = \"dir\"\npath = \"/tmp\"\n\
         [workload]\nkind = \"steps\"\niterations = {iterations}\nsteps = [{{ op = \"sync\" }}, {{ op = \"sync\" }}]\n\
         [compare]\narms = \"fs\"\npairs = {{ min = {min}, max = {max} }}\nseed = 7\n[gate]\nthreshold = \"5%\"\n"
    );
    crate::scenario::parse_str(&text, "p.toml").unwrap()
}

/// Run the scenario's pair groups from nothing; what is stored afterwards.
fn run(s: &crate::scenario::Scenario, exec: &mut Script) -> (Vec<Cell>, BTreeMap<String, CellResult>) {
    let cells = crate::plan::expand(s).cells;
    let spec = s.compare.as_ref().unwrap();
    let run = PairedRun { scenario: s, spec, seed: 7, quiet: true, arms: super::paired_run::arm_values(s, spec) };
    let mut stored = BTreeMap::new();
    run_paired(&run, &cells, &mut stored, exec, &mut |_| Ok(()), &|| false).unwrap();
    (cells, stored)
}

fn pairing(r: &CellResult) -> &CellPairing {
    r.pairing.as_ref().expect("a paired cell")
}

/// Each iteration's total seconds, in the cell's order.
fn totals(r: &CellResult) -> Vec<f64> {
    let its = &r.steps.as_ref().unwrap().iterations;
    its.iter().map(|it| (it.iter().map(|t| t.elapsed_us).sum::<u64>() as f64 / 1e6 * 100.0).round() / 100.0).collect()
}

#[test]
fn a_paired_steps_group_appends_each_member_as_its_iterations_and_stops_on_their_totals() {
    let s = scenario(2, 2, 4);
    // b is 20% slower in every iteration; its first attempt fails (a step exited 1).
    let mut exec = Script::new(vec![
        (
            "a",
            vec![Member::Ran(vec![1.0, 2.0]), Member::Ran(vec![1.1, 2.1]), Member::Ran(vec![0.9, 1.9])],
            Member::Ran(vec![9.0, 9.0]),
        ),
        (
            "b",
            vec![
                Member::Fails("iteration 1, step `sync`: `false` exited with exit status: 1".into()),
                Member::Ran(vec![1.32, 2.52]),
                Member::Ran(vec![1.08, 2.28]),
            ],
            Member::Ran(vec![9.0, 9.0]),
        ),
    ]);
    let (cells, stored) = run(&s, &mut exec);
    // Slot 0 twice (void, then a pair), slot 1 once; each time in the schedule's order.
    let sched = super::pairs::pair_schedule(7, 4, 2);
    let want: Vec<&str> = [&sched[0], &sched[0], &sched[1]].into_iter().flatten().map(|&a| ["a", "b"][a]).collect();
    assert_eq!(exec.calls, want);
    let (a, b) = (&stored[&cells[0].id()], &stored[&cells[1].id()]);
    // a's measured member of the void attempt is kept as its member 0, in no pair.
    assert_eq!(totals(a), [1.0, 2.0, 1.1, 2.1, 0.9, 1.9]);
    assert_eq!(totals(b), [1.32, 2.52, 1.08, 2.28]);
    let slots = |r: &CellResult| pairing(r).pairs.iter().map(|p| (p.slot, p.round)).collect::<Vec<_>>();
    assert_eq!(slots(a), [(0, 1), (1, 2)]);
    assert_eq!(slots(b), [(0, 0), (1, 1)]);
    assert_eq!(pairing(a).pairs[1].order, sched[1]);
    // The failed attempt is a note of b's, not its status.
    assert_eq!(b.status, CellStatus::Ok);
    assert!(b.notes.iter().any(|n| n.contains("failed: iteration 1, step `sync`")), "{:?}", b.notes);
    // Every pair's totals are 1.2 times apart, so a 5% threshold calls it at the first look.
    for r in [a, b] {
        assert_eq!((pairing(r).stop, pairing(r).stop_reason.as_deref()), (Some(PairStop::Regressed), None));
    }
    // The values the stop read are the members' mean iteration totals, member by member.
    let value = |r: &CellResult, round| crate::workload::steps::member::round_value(r, round, 2).unwrap();
    assert!((value(a, 1) - 1.6).abs() < 1e-9 && (value(b, 0) - 1.92).abs() < 1e-9);
    assert!((value(a, 2) - 1.4).abs() < 1e-9 && (value(b, 1) - 1.68).abs() < 1e-9);
}

/// Issue #38, item 26: a disturbed `sync` threw away its member's `untar` too. Steps are
/// judged step by step: one step disturbed in one member leaves the pair (the reader leaves
/// that step's positions out); only a member disturbed unlike its partner in every step voids it.
#[test]
fn one_disturbed_step_does_not_void_a_steps_pair_but_every_step_disturbed_does() {
    let s = scenario(2, 2, 2);
    let mut exec = Script::new(vec![
        ("a", vec![Member::Disturbed], Member::Ran(vec![2.0, 2.0])),
        ("b", vec![], Member::Ran(vec![2.0, 2.0])),
    ]);
    let (cells, stored) = run(&s, &mut exec);
    assert_eq!(exec.calls.len(), 4, "{:?}", exec.calls);
    let a = &stored[&cells[0].id()];
    assert_eq!(a.steps.as_ref().unwrap().iterations.len(), 4);
    assert_eq!(pairing(a).pairs.iter().map(|p| p.round).collect::<Vec<_>>(), [0, 1]);
    assert!(pairing(a).dropped.is_empty());
    // Both steps disturbed in one member only: void, rerun, then a pair.
    let mut exec = Script::new(vec![
        ("a", vec![Member::AllDisturbed], Member::Ran(vec![2.0, 2.0])),
        ("b", vec![], Member::Ran(vec![2.0, 2.0])),
    ]);
    let (cells, stored) = run(&s, &mut exec);
    assert_eq!(exec.calls.len(), 6);
    let a = &stored[&cells[0].id()];
    assert_eq!(pairing(a).pairs.iter().map(|p| p.round).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(pairing(a).stop, Some(PairStop::Unchanged));
}

#[test]
fn an_arm_that_fails_every_attempt_stops_its_group_after_three() {
    let s = scenario(1, 2, 32);
    let error = "provisioning failed: mkfs.ext4: invalid option -- 'Z'";
    let mut exec = Script::new(vec![("a", vec![], Member::Ran(vec![1.0])), ("b", vec![], Member::Fails(error.into()))]);
    let (cells, stored) = run(&s, &mut exec);
    // Three attempts at slot 0 (two reruns of the budget of 3), not 32 slots' worth.
    assert_eq!(exec.calls.len(), 6);
    for c in &cells {
        let p = pairing(&stored[&c.id()]);
        assert_eq!(p.stop, Some(PairStop::MemberFailed));
        let why = p.stop_reason.as_deref().unwrap();
        assert_eq!(why, format!("{}: failed in 3 attempts in a row: failed: {error}", cells[1].id()));
        // The slot the group gave up on is dropped with the reason of its last attempt.
        assert_eq!(p.dropped.iter().map(|d| d.slot).collect::<Vec<_>>(), [0]);
        assert!(p.pairs.is_empty());
    }
    assert_eq!(stored[&cells[1].id()].status, CellStatus::Failed);
}

#[test]
fn only_failures_in_a_row_of_one_arm_stop_a_group() {
    // b fails twice, runs once, fails twice: never three in a row. The pairs decide.
    let s = scenario(1, 2, 4);
    let fail = || Member::Fails("`false` exited with exit status: 1".into());
    let ok = || Member::Ran(vec![1.0]);
    let mut exec = Script::new(vec![
        ("a", vec![], Member::Ran(vec![1.0])),
        ("b", vec![fail(), fail(), ok(), fail(), fail()], ok()),
    ]);
    let (cells, stored) = run(&s, &mut exec);
    let p = pairing(&stored[&cells[0].id()]);
    assert_eq!((p.stop, p.pairs.len()), (Some(PairStop::Unchanged), 2), "{p:?}");
    // Disturbed members and skips: a skip is a failure to run, a disturbance is not.
    let mut exec = Script::new(vec![
        ("a", vec![Member::Disturbed, Member::Disturbed, Member::Disturbed], Member::Ran(vec![1.0])),
        ("b", vec![], Member::Skipped("no mkfs.btrfs")),
    ]);
    let (_, stored) = run(&s, &mut exec);
    let p = pairing(&stored[&cells[0].id()]);
    assert_eq!(p.stop, Some(PairStop::MemberFailed));
    assert!(p.stop_reason.as_deref().unwrap().ends_with("skipped: no mkfs.btrfs"), "{p:?}");
    // b's three skips in a row stop the group whatever a's disturbances did.
    assert_eq!(exec.calls.len(), 6);
}

#[test]
fn an_interrupted_paired_steps_group_resumes_from_the_members_its_cells_hold() {
    let s = scenario(2, 3, 3);
    let cells = crate::plan::expand(&s).cells;
    let spec = s.compare.as_ref().unwrap();
    let run = PairedRun { scenario: &s, spec, seed: 7, quiet: true, arms: super::paired_run::arm_values(&s, spec) };
    let mut exec =
        Script::new(vec![("a", vec![], Member::Ran(vec![1.0, 2.0])), ("b", vec![], Member::Ran(vec![1.1, 2.2]))]);
    let mut stored = BTreeMap::new();
    // The signal arrives during the second pair's first member: only the first pair is kept.
    let calls = std::cell::Cell::new(0usize);
    let mut count = |_: &CellResult| Ok(());
    {
        let exec_calls = &calls;
        let stop = || exec_calls.get() >= 3;
        let mut counting = Counting { inner: &mut exec, calls: exec_calls };
        run_paired(&run, &cells, &mut stored, &mut counting, &mut count, &stop).unwrap();
    }
    for c in &cells {
        let p = pairing(&stored[&c.id()]);
        assert_eq!((p.stop, p.pairs.len()), (Some(PairStop::Interrupted), 1));
        assert_eq!(stored[&c.id()].steps.as_ref().unwrap().iterations.len(), 2);
    }
    // Resumed: the stored pair's values are read back from the cells' first two iterations.
    run_paired(&run, &cells, &mut stored, &mut exec, &mut count, &|| false).unwrap();
    for c in &cells {
        let r = &stored[&c.id()];
        assert_eq!((pairing(r).stop, pairing(r).pairs.len()), (Some(PairStop::Regressed), 3));
        assert_eq!(r.steps.as_ref().unwrap().iterations.len(), 6);
        assert_eq!(pairing(r).pairs.iter().map(|p| p.round).collect::<Vec<_>>(), [0, 1, 2]);
    }
}

/// An executor that counts its calls where the stop closure can see them.
struct Counting<'a> {
    inner: &'a mut Script,
    calls: &'a std::cell::Cell<usize>,
}

impl CellExecutor for Counting<'_> {
    fn measure(&mut self, cell: &Cell, phase: &Phase) -> CellResult {
        self.calls.set(self.calls.get() + 1);
        self.inner.measure(cell, phase)
    }
}

#[test]
fn a_failing_arms_whole_stderr_is_cut_in_its_reasons_so_the_cell_file_loads() {
    let s = scenario(1, 2, 4);
    let stderr = format!("mkfs.ext4: {}", "é".repeat(5000));
    let mut exec =
        Script::new(vec![("a", vec![], Member::Ran(vec![1.0])), ("b", vec![], Member::Fails(stderr.clone()))]);
    let (cells, stored) = run(&s, &mut exec);
    let b = &stored[&cells[1].id()];
    let p = pairing(b);
    let why = p.stop_reason.as_deref().unwrap();
    assert!(why.len() <= 4096 && why.ends_with('…') && why.contains("failed in 3 attempts in a row"), "{}", why.len());
    assert!(p.dropped.iter().all(|d| d.reason.len() <= 4096));
    // The cell keeps the whole error, and loads.
    assert_eq!(b.error.as_deref(), Some(stderr.as_str()));
    assert_eq!(crate::results::bounds::check_cell(b), Ok(()));
}

/// Issue #38, items 12 and 19: the end-of-run line of a steps group named nothing for the
/// change it printed (the member sum of all steps) nor for the stop decided on it.
#[test]
fn a_steps_groups_end_line_names_the_step_sum_it_stopped_on() {
    let s = scenario(1, 2, 2);
    let cells = crate::plan::expand(&s).cells;
    let group = super::pairs::PairGroup { key: "S-qoff-t1".into(), members: cells.iter().collect() };
    let pair =
        |slot, b: f64| super::pairs::PairRecord { slot, order: vec![0, 1], values: vec![1.0, b], common_load: false };
    let out = super::pairs::PairGroupOutcome {
        pairs: vec![pair(0, 1.2), pair(1, 1.21)],
        dropped: vec![],
        stop: PairStop::Regressed,
        stop_reason: None,
    };
    let rules = super::pairs::PairRules {
        seed: 7,
        min_pairs: 2,
        max_pairs: 2,
        threshold: 0.05,
        direction: crate::catalogue::Direction::LowerIsBetter,
        max_reruns: 3,
    };
    let line = super::paired_run::group_line(&group, &out, &rules, true);
    assert!(line.contains("b (sum of the steps per iteration): +"), "{line}");
    assert!(line.ends_with("stopped: regressed on the step sum"), "{line}");
    let lat_fs = super::paired_run::group_line(&group, &out, &rules, false);
    assert!(lat_fs.contains("b: +") && lat_fs.ends_with("stopped: regressed"), "{lat_fs}");
}
