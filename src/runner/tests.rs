//! The run loop against a scripted executor: rounds, resume from stored results and
//! interrupts, fast and without root. Each fake cell answers what its script says.

use std::collections::BTreeMap;

use super::cell::CellExecutor;
use super::progress::Phase;
use super::progress::Progress;
use super::rounds::{CellOrder, RoundPlan, Tally, run_rounds};
use crate::model::{CellParams, CellResult, CellStatus, LatfsRepetition, LatfsTest, Layout, QuotaMode, round_samples};
use crate::plan::Cell;
use crate::workload::latfs;

/// What a scripted cell answers when measured.
#[derive(Clone)]
enum Answer {
    /// Measured, with these loops/ms, one repetition each.
    Loops(Vec<f64>),
    /// Failed with this error.
    Fails(&'static str),
}

/// A fake executor: answers from a script, in call order, and records which cells it measured.
struct Scripted<'f> {
    /// The answers, in call order; once they run out, every call measures `[1.0]`.
    answers: Vec<Answer>,
    /// The ids of the cells measured, in order.
    calls: Vec<String>,
    /// The signal flag the loop polls, and the call (from 0) during which the signal arrives.
    signal: &'f std::cell::Cell<bool>,
    signal_during: Option<usize>,
    /// Cells (by fs) the host check skips before anything runs.
    host_lacks: Vec<&'static str>,
}

impl<'f> Scripted<'f> {
    fn new(answers: Vec<Answer>, signal: &'f std::cell::Cell<bool>) -> Scripted<'f> {
        Scripted { answers, calls: Vec::new(), signal, signal_during: None, host_lacks: Vec::new() }
    }
}

impl CellExecutor for Scripted<'_> {
    fn skip(&mut self, cell: &Cell) -> Option<CellResult> {
        self.host_lacks
            .contains(&cell.params.fs.as_str())
            .then(|| CellResult::new(&cell.params, CellStatus::Skipped, "t"))
    }

    fn measure(&mut self, cell: &Cell, phase: &Phase) -> CellResult {
        let call = self.calls.len();
        self.calls.push(cell.id());
        phase("repetition 1/1");
        if self.signal_during == Some(call) {
            self.signal.set(true);
        }
        match self.answers.get(call).cloned().unwrap_or(Answer::Loops(vec![1.0])) {
            Answer::Loops(loops) => measured(&cell.params, &loops, 0),
            Answer::Fails(e) => {
                let mut r = CellResult::new(&cell.params, CellStatus::Failed, "t");
                r.error = Some(e.into());
                r
            }
        }
    }
}

/// A measured lat_fs result of `p` with one repetition per value, all of round `round`.
fn measured(p: &CellParams, loops: &[f64], round: u32) -> CellResult {
    let mut r = CellResult::new(p, CellStatus::Ok, "t");
    let reps =
        loops.iter().map(|&l| LatfsRepetition { total_loops_per_ms: l, round, ..LatfsRepetition::default() }).collect();
    r.latfs = Some(latfs::result(reps));
    r
}

/// Cells `a` (chown), `b` (open_close), `c` (create_unlink), `d` (write_truncate), as many as asked.
fn cells(n: usize) -> Vec<Cell> {
    [LatfsTest::Chown, LatfsTest::OpenClose, LatfsTest::CreateUnlink, LatfsTest::WriteTruncate][..n]
        .iter()
        .enumerate()
        .map(|(index, &test)| Cell {
            index,
            params: CellParams {
                fs: "ext4".into(),
                layout: Layout::S,
                quota: QuotaMode::Off,
                tasks: 1,
                test: Some(test),
                fio: Default::default(),
                kernel: None,
            },
        })
        .collect()
}

/// What one run of the loop did.
struct Ran {
    /// Cells measured, by id, in call order.
    calls: Vec<String>,
    /// Results stored, by id, in order.
    writes: Vec<String>,
    /// What is stored of every cell afterwards.
    stored: BTreeMap<String, CellResult>,
    tally: Tally,
    previously_done: usize,
}

/// Plan `rounds` rounds of `cells` over `stored` and run them with `exec`; the signal arrives
/// (if ever) during the executor's call `exec.signal_during` or right after store number `signal_after_write`.
fn run(
    cells: &[Cell],
    rounds: u32,
    mut stored: BTreeMap<String, CellResult>,
    exec: &mut Scripted,
    signal_after_write: Option<usize>,
) -> Ran {
    let plan = RoundPlan::new(rounds, cells, &stored, CellOrder::Plan);
    let progress = Progress::new(plan.cell_runs(), plan.rounds, true);
    let signal = exec.signal;
    let mut writes = Vec::new();
    let mut store = |r: &CellResult| {
        writes.push(r.id.clone());
        if signal_after_write == Some(writes.len()) {
            signal.set(true);
        }
        Ok(())
    };
    let ran = run_rounds(&plan.runs_of, &mut stored, exec, &mut store, &progress, &|| signal.get()).unwrap();
    let tally = Tally::of(&ran, &stored);
    Ran { calls: std::mem::take(&mut exec.calls), writes, stored, tally, previously_done: plan.previously_done }
}

fn ids(cells: &[Cell], which: &[usize]) -> Vec<String> {
    which.iter().map(|&i| cells[i].id()).collect()
}

fn round_means(r: &CellResult) -> Vec<f64> {
    round_samples(&r.latfs.as_ref().unwrap().repetitions, |x| Some(x.total_loops_per_ms))
}

#[test]
fn rounds_run_the_matrix_round_after_round_and_keep_each_rounds_mean_in_order() {
    let cells = cells(2);
    let signal = std::cell::Cell::new(false);
    let loops = |a: f64| Answer::Loops(vec![a, a + 2.0]);
    let mut exec =
        Scripted::new(vec![loops(30.0), loops(5.0), loops(10.0), loops(6.0), loops(20.0), loops(7.0)], &signal);
    let ran = run(&cells, 3, BTreeMap::new(), &mut exec, None);
    // The whole matrix once per round, not one cell three times over.
    assert_eq!(ran.calls, ids(&cells, &[0, 1, 0, 1, 0, 1]));
    // Every round is stored as soon as it is measured.
    assert_eq!(ran.writes, ran.calls);
    let a = &ran.stored[&cells[0].id()];
    assert_eq!(round_means(a), [31.0, 11.0, 21.0]);
    let l = a.latfs.as_ref().unwrap();
    assert_eq!(l.repetitions.iter().map(|r| r.round).collect::<Vec<_>>(), [0, 0, 1, 1, 2, 2]);
    assert_eq!((l.rounds_done(), l.total_loops.n, l.total_loops.mean), (3, 3, 21.0));
    assert_eq!(round_means(&ran.stored[&cells[1].id()]), [6.0, 7.0, 8.0]);
    assert_eq!(ran.tally, Tally { measured: 2, failed: 0, skipped: 0, without_statistics: 0 });
}

#[test]
fn a_cell_that_fails_a_round_runs_no_later_round() {
    let cells = cells(2);
    let signal = std::cell::Cell::new(false);
    let mut exec = Scripted::new(vec![Answer::Fails("mount: EIO")], &signal);
    let ran = run(&cells, 3, BTreeMap::new(), &mut exec, None);
    assert_eq!(ran.calls, ids(&cells, &[0, 1, 1, 1]));
    assert_eq!(ran.stored[&cells[0].id()].error.as_deref(), Some("mount: EIO"));
    assert_eq!(ran.tally, Tally { measured: 1, failed: 1, skipped: 0, without_statistics: 0 });
}

#[test]
fn a_resumed_run_measures_only_the_rounds_and_cells_it_lacks() {
    let cells = cells(4);
    let p = |i: usize| &cells[i].params;
    let mut stored = BTreeMap::new();
    // a: one round of three stored; b: all three; c: skipped (no rounds to add); d: nothing.
    stored.insert(cells[0].id(), measured(p(0), &[40.0], 0));
    let mut b = measured(p(1), &[1.0], 0);
    for round in 1..3 {
        b = super::rounds::absorb_round(b, measured(p(1), &[1.0], 0), round);
    }
    stored.insert(cells[1].id(), b.clone());
    stored.insert(cells[2].id(), CellResult::new(p(2), CellStatus::Skipped, "t"));
    let signal = std::cell::Cell::new(false);
    let mut exec = Scripted::new(vec![Answer::Loops(vec![9.0]), Answer::Loops(vec![50.0])], &signal);
    let ran = run(&cells, 3, stored, &mut exec, None);
    assert_eq!(ran.previously_done, 2);
    // d's three rounds, a's last two.
    assert_eq!(ran.calls, ids(&cells, &[3, 0, 3, 0, 3]));
    assert_eq!(round_means(&ran.stored[&cells[0].id()]), [40.0, 50.0, 1.0]);
    assert_eq!(round_means(&ran.stored[&cells[3].id()]), [9.0, 1.0, 1.0]);
    // What was complete is left as it was, and only what ran is counted.
    assert_eq!(ran.stored[&cells[1].id()], b);
    assert_eq!(ran.stored[&cells[2].id()].status, CellStatus::Skipped);
    assert_eq!(ran.tally, Tally { measured: 2, failed: 0, skipped: 0, without_statistics: 0 });
}

#[test]
fn a_signal_between_cells_stops_before_the_next_and_keeps_what_was_measured() {
    let cells = cells(3);
    let signal = std::cell::Cell::new(false);
    let mut exec = Scripted::new(vec![Answer::Loops(vec![12.0])], &signal);
    let ran = run(&cells, 2, BTreeMap::new(), &mut exec, Some(1));
    assert_eq!(ran.calls, ids(&cells, &[0]));
    assert_eq!(ran.writes, ids(&cells, &[0]));
    assert_eq!(ran.stored.keys().cloned().collect::<Vec<_>>(), ids(&cells, &[0]));
    assert_eq!(round_means(&ran.stored[&cells[0].id()]), [12.0]);
    assert_eq!(ran.tally, Tally { measured: 1, failed: 0, skipped: 0, without_statistics: 0 });
}

#[test]
fn a_cell_that_saw_the_signal_is_not_stored_and_its_earlier_rounds_stay() {
    let cells = cells(2);
    let signal = std::cell::Cell::new(false);
    let mut exec = Scripted::new(vec![Answer::Loops(vec![3.0]), Answer::Loops(vec![4.0])], &signal);
    // The signal arrives while a's second round is measured.
    exec.signal_during = Some(2);
    let ran = run(&cells, 2, BTreeMap::new(), &mut exec, None);
    assert_eq!(ran.calls, ids(&cells, &[0, 1, 0]));
    assert_eq!(ran.writes, ids(&cells, &[0, 1]));
    // a keeps its first round only, so a resume runs its second again.
    let a = &ran.stored[&cells[0].id()];
    assert_eq!((a.latfs.as_ref().unwrap().rounds_done(), round_means(a)), (1, vec![3.0]));
    let again = RoundPlan::new(2, &cells, &ran.stored, CellOrder::Plan);
    assert_eq!(again.runs_of, vec![Vec::<&Cell>::new(), cells.iter().collect()]);
}

/// A paired scenario: arms `a` (baseline) and `b` on `fs`, the lat_fs tests given, pairs `min..=max`.
fn paired_scenario(tests: &str, min: u32, max: u32) -> crate::scenario::Scenario {
    let text = format!(
        "schema = 1\nname = \"p\"\n[matrix]\nfs = [\"a\", \"b\"]\ntest = [{tests}]\n[backing]\nkind = \"dir\"\npath = \"/tmp\"\n\
         [workload]\nkind = \"lat_fs\"\n[compare]\narms = \"fs\"\npairs = {{ min = {min}, max = {max} }}\nseed = 7\n"
    );
    crate::scenario::parse_str(&text, "p.toml").unwrap()
}

/// Run the pair groups of `cells` over `stored`, as `run` would; the signal as in [`run`].
fn run_paired(
    s: &crate::scenario::Scenario,
    cells: &[Cell],
    mut stored: BTreeMap<String, CellResult>,
    exec: &mut Scripted,
) -> Ran {
    let spec = s.compare.as_ref().unwrap();
    let arms = super::paired_run::arm_values(s, spec);
    let run = super::paired_run::PairedRun { scenario: s, spec, seed: spec.seed.unwrap(), quiet: true, arms };
    let signal = exec.signal;
    let mut writes = Vec::new();
    let mut store = |r: &CellResult| {
        writes.push(r.id.clone());
        Ok(())
    };
    let ran = super::paired_run::run_paired(&run, cells, &mut stored, exec, &mut store, &|| signal.get()).unwrap();
    let tally = Tally::of(&ran.ran, &stored);
    Ran { calls: std::mem::take(&mut exec.calls), writes, stored, tally, previously_done: ran.previously_done }
}

fn pairing(r: &CellResult) -> &crate::model::pairing::CellPairing {
    r.pairing.as_ref().expect("a paired cell")
}

/// `(slot, round)` of every pair a cell was a member of.
fn slots(r: &CellResult) -> Vec<(u32, u32)> {
    pairing(r).pairs.iter().map(|p| (p.slot, p.round)).collect()
}

#[test]
fn a_paired_run_stores_every_member_as_a_round_and_its_pairs_join_up() {
    use crate::model::pairing::PairStop;
    let s = paired_scenario("\"chown\"", 2, 4);
    let cells = crate::plan::expand(&s).cells;
    let signal = std::cell::Cell::new(false);
    // Identical arms without spread: unchanged at the first look, after 2 pairs.
    let mut exec = Scripted::new(vec![], &signal);
    let ran = run_paired(&s, &cells, BTreeMap::new(), &mut exec);
    assert_eq!(ran.calls.len(), 4);
    // Both members are stored after every pair, and once more with the group's stop.
    assert_eq!(ran.writes.len(), 6);
    // The members ran in the schedule's order.
    let sched = super::pairs::pair_schedule(7, 4, 2);
    let want: Vec<String> = sched[..2].iter().flatten().map(|&a| cells[a].id()).collect();
    assert_eq!(ran.calls, want);
    for (arm, cell) in cells.iter().enumerate() {
        let r = &ran.stored[&cell.id()];
        let p = pairing(r);
        assert_eq!((p.axis.as_str(), p.arm, p.seed, p.group.as_str()), ("fs", arm, 7, "S-qoff-t1-chown"));
        assert_eq!(p.arms, ["a", "b"]);
        assert_eq!(slots(r), [(0, 0), (1, 1)]);
        assert_eq!(p.stop, Some(PairStop::Unchanged));
        assert_eq!(r.latfs.as_ref().unwrap().rounds_done(), 2);
        // The slot order is stored as it ran.
        assert_eq!(p.pairs[1].order, sched[1]);
    }
    assert_eq!(ran.tally, Tally { measured: 2, failed: 0, skipped: 0, without_statistics: 0 });
}

#[test]
fn a_void_attempt_is_a_round_but_no_pair_and_a_failed_one_only_a_note() {
    let s = paired_scenario("\"chown\"", 2, 4);
    let cells = crate::plan::expand(&s).cells;
    let signal = std::cell::Cell::new(false);
    // The first attempt's first member fails: the slot runs again (the rerun budget is 3).
    let mut exec = Scripted::new(vec![Answer::Fails("mount: EIO")], &signal);
    let ran = run_paired(&s, &cells, BTreeMap::new(), &mut exec);
    assert_eq!(ran.calls.len(), 6);
    let first = &ran.calls[0];
    let other = cells.iter().map(Cell::id).find(|id| id != first).unwrap();
    // The failed member has no round of that attempt; its partner's void round 0 is kept.
    let failed = &ran.stored[first];
    assert_eq!(slots(failed), [(0, 0), (1, 1)]);
    assert!(failed.notes.iter().any(|n| n.contains("failed: mount: EIO")), "{:?}", failed.notes);
    assert_eq!(failed.status, CellStatus::Ok);
    assert_eq!(slots(&ran.stored[&other]), [(0, 1), (1, 2)]);
    assert!(pairing(failed).dropped.is_empty());
}

#[test]
fn an_interrupted_paired_run_resumes_its_groups_at_the_next_slot_with_the_same_schedule() {
    use crate::model::pairing::PairStop;
    let s = paired_scenario("\"chown\", \"open_close\"", 3, 3);
    let cells = crate::plan::expand(&s).cells;
    let signal = std::cell::Cell::new(false);
    let mut exec = Scripted::new(vec![], &signal);
    // The signal arrives during the first group's third attempt's first member (call 4).
    exec.signal_during = Some(4);
    let first = run_paired(&s, &cells, BTreeMap::new(), &mut exec);
    assert_eq!(first.calls.len(), 5);
    // The pair in flight is lost; the two before are stored, the group says it was interrupted.
    let group: Vec<&CellResult> = first.stored.values().collect();
    assert_eq!(group.len(), 2, "only the first group ran");
    for r in &group {
        assert_eq!(slots(r), [(0, 0), (1, 1)]);
        assert_eq!(pairing(r).stop, Some(PairStop::Interrupted));
    }
    signal.set(false);
    exec.signal_during = None;
    let resumed = run_paired(&s, &cells, first.stored, &mut exec);
    // Slot 2 of the first group, then the second group's 3 pairs.
    assert_eq!(resumed.calls.len(), 2 + 6);
    let sched = super::pairs::pair_schedule(7, 3, 2);
    let ids = |c: &[String]| c.to_vec();
    let group_cells: Vec<String> =
        cells.iter().filter(|c| c.params.test == cells[0].params.test).map(Cell::id).collect();
    let want: Vec<String> = sched[2].iter().map(|&a| group_cells[a].clone()).collect();
    assert_eq!(ids(&resumed.calls[..2]), want);
    for r in resumed.stored.values() {
        assert_eq!(slots(r), [(0, 0), (1, 1), (2, 2)], "{}", r.id);
        // 3 pairs is `max`; identical arms are unchanged at that look.
        assert_eq!(pairing(r).stop, Some(PairStop::Unchanged));
    }
    // A run whose groups all stopped has nothing left to do.
    let again = run_paired(&s, &cells, resumed.stored, &mut exec);
    assert_eq!((again.calls.len(), again.previously_done), (0, 4));
}

#[test]
fn cells_in_no_complete_group_run_unpaired_after_the_groups() {
    let s = paired_scenario("\"chown\", \"open_close\"", 2, 2);
    // `--only` left arm b of open_close out.
    let cells: Vec<Cell> = crate::plan::expand(&s)
        .cells
        .into_iter()
        .filter(|c| c.params.fs == "a" || c.params.test == Some(LatfsTest::Chown))
        .collect();
    assert_eq!(cells.len(), 3);
    let signal = std::cell::Cell::new(false);
    let mut exec = Scripted::new(vec![], &signal);
    let ran = run_paired(&s, &cells, BTreeMap::new(), &mut exec);
    let lone = cells.iter().find(|c| c.params.test == Some(LatfsTest::OpenClose)).unwrap();
    assert_eq!(ran.calls.last(), Some(&lone.id()));
    assert_eq!(ran.calls.len(), 5);
    let r = &ran.stored[&lone.id()];
    assert_eq!((r.pairing.is_none(), r.latfs.as_ref().unwrap().rounds_done()), (true, 1));
    assert_eq!(ran.tally.measured, 3);
}

#[test]
fn an_arm_the_host_cannot_run_is_skipped_and_its_partners_run_unpaired() {
    let s = paired_scenario("\"chown\"", 2, 4);
    let cells = crate::plan::expand(&s).cells;
    let signal = std::cell::Cell::new(false);
    let mut exec = Scripted::new(vec![], &signal);
    exec.host_lacks = vec!["b"];
    let ran = run_paired(&s, &cells, BTreeMap::new(), &mut exec);
    // No pair is attempted: arm a runs once, unpaired.
    assert_eq!(ran.calls, ids(&cells, &[0]));
    assert_eq!(ran.stored[&cells[1].id()].status, CellStatus::Skipped);
    assert!(ran.stored[&cells[0].id()].pairing.is_none());
    assert_eq!(ran.tally, Tally { measured: 1, failed: 0, skipped: 1, without_statistics: 0 });
}

#[test]
fn a_paired_run_refuses_a_random_order_before_creating_anything() {
    let s = paired_scenario("\"chown\"", 2, 4);
    let e = super::paired_run::refuse_unpairable(&s, CellOrder::Random { seed: 1 }).unwrap_err();
    assert!(e.to_string().contains("--order random does not apply to a paired run"), "{e}");
    assert!(super::paired_run::refuse_unpairable(&s, CellOrder::Plan).is_ok());
}
