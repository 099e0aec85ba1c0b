//! Rounds: which cells each round runs and in what order, running them, and folding a
//! later round of a cell into what is stored of it.
//!
//! A lat_fs scenario with `workload.rounds = N` runs the whole matrix N times; a cell's
//! statistics are then over its rounds' means. A resumed run plans only the rounds its
//! stored cells still lack.

use std::collections::{BTreeMap, BTreeSet};

use super::cell::CellExecutor;
use super::progress::Progress;
use crate::model::{CellResult, CellStatus};
use crate::plan::Cell;
use crate::results;
use crate::scenario::Scenario;
use crate::workload::latfs;
use crate::workload::latfs::notes::noise_notes;

/// The order cells run in (`run --order`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CellOrder {
    /// The plan's order (fs outermost ... test innermost).
    #[default]
    Plan,
    /// A random permutation from this seed, so drift over a long run does not line up with one axis.
    Random {
        /// The seed; the same seed and plan give the same order.
        seed: u64,
    },
}

/// The cells in the order they should run, with what to record about it.
pub fn order_cells(cells: Vec<&Cell>, order: CellOrder) -> (Vec<&Cell>, Option<results::RunOrder>) {
    match order {
        CellOrder::Plan => (cells, None),
        CellOrder::Random { seed } => {
            let mut cells = cells;
            crate::rng::SplitMix64::new(seed).shuffle(&mut cells);
            let ids = cells.iter().map(|c| c.id()).collect();
            (cells, Some(results::RunOrder { kind: "random".into(), seed: Some(seed), cells: ids }))
        }
    }
}

/// The rounds a run (or the rest of a resumed one) makes.
pub(super) struct RoundPlan<'c> {
    /// Rounds the scenario asks for.
    pub rounds: u32,
    /// The cells each round runs, in order.
    pub runs_of: Vec<Vec<&'c Cell>>,
    /// What to record in run.json of the order (random orders only).
    pub order: Option<results::RunOrder>,
    /// Cells stored before this invocation that want no more rounds.
    pub previously_done: usize,
}

impl<'c> RoundPlan<'c> {
    /// The `rounds` rounds of `cells` given what is `stored` of them.
    pub fn new(
        rounds: u32,
        cells: &'c [Cell],
        stored: &BTreeMap<String, CellResult>,
        order: CellOrder,
    ) -> RoundPlan<'c> {
        let previously_done =
            cells.iter().filter(|c| stored.get(&c.id()).is_some_and(|r| !wants_round(r, rounds))).count();
        let (runs_of, order) = plan_rounds(cells, stored, rounds, order);
        RoundPlan { rounds, runs_of, order, previously_done }
    }

    /// Cell runs planned over all rounds (progress counts these).
    pub fn cell_runs(&self) -> usize {
        self.runs_of.iter().map(Vec::len).sum()
    }
}

/// The cells each round runs, in order, and what to record of the order: every round runs
/// the cells that still want it (none stored, or measured with fewer rounds), in the run's
/// order (random: a new permutation per round, from the seed and the round).
pub(super) fn plan_rounds<'c>(
    cells: &'c [Cell],
    stored: &BTreeMap<String, CellResult>,
    rounds: u32,
    order: CellOrder,
) -> (Vec<Vec<&'c Cell>>, Option<results::RunOrder>) {
    let mut runs_of = Vec::new();
    let mut record: Option<results::RunOrder> = None;
    for round in 0..rounds {
        let wanted: Vec<&Cell> = cells
            .iter()
            .filter(|c| stored.get(&c.id()).is_none_or(|r| takes_rounds(r) && rounds_of(r) <= round))
            .collect();
        let shuffled = match order {
            CellOrder::Random { seed } => CellOrder::Random { seed: seed.wrapping_add(round as u64) },
            plan => plan,
        };
        let (todo, o) = order_cells(wanted, shuffled);
        match (&mut record, o) {
            // The record names the run's seed and every cell run, round after round.
            (Some(all), Some(o)) => all.cells.extend(o.cells),
            (None, o) => record = o,
            (Some(_), None) => {}
        }
        runs_of.push(todo);
    }
    (runs_of, record)
}

/// Run the planned rounds: measure each cell with `exec`, fold a later round into what is
/// stored of the cell, and `store` every result as soon as it is known. `stop` (a signal)
/// ends the rounds before the next cell; a cell that saw it is not stored.
/// Returns the ids of the cells run in this invocation.
pub(super) fn run_rounds(
    runs_of: &[Vec<&Cell>],
    stored: &mut BTreeMap<String, CellResult>,
    exec: &mut dyn CellExecutor,
    store: &mut dyn FnMut(&CellResult) -> anyhow::Result<()>,
    progress: &Progress,
    stop: &dyn Fn() -> bool,
) -> anyhow::Result<BTreeSet<String>> {
    let mut ran: BTreeSet<String> = BTreeSet::new();
    for (round, todo) in runs_of.iter().enumerate() {
        let round = round as u32;
        for cell in todo {
            // A cell that failed or was skipped in an earlier round of this invocation has no more rounds.
            if round > 0 && stored.get(&cell.id()).is_some_and(|r| !takes_rounds(r)) {
                continue;
            }
            if stop() {
                return Ok(ran);
            }
            progress.start(cell, round);
            let result = exec.measure(cell, &|what| progress.phase(cell, round, what));
            // A cell that saw the signal did not finish as planned, whatever its status says
            // (a workload that noticed late may still look `ok`): store nothing for it, so
            // `--resume` runs it again.
            if stop() {
                return Ok(ran);
            }
            let result = match stored.remove(&cell.id()) {
                Some(earlier) if round > 0 => absorb_round(earlier, result, round),
                _ => result,
            };
            store(&result)?;
            progress.finish(cell, round, &result);
            ran.insert(result.id.clone());
            stored.insert(result.id.clone(), result);
        }
    }
    Ok(ran)
}

/// Cells of one invocation by what became of them.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Tally {
    /// Measured (ok or disturbed).
    pub measured: usize,
    /// Failed.
    pub failed: usize,
    /// Skipped.
    pub skipped: usize,
    /// Measured but without statistics (disturbed throughout): counted in `measured` too.
    pub without_statistics: usize,
}

impl Tally {
    /// The cells `ran` by the status stored for them now.
    pub fn of(ran: &BTreeSet<String>, stored: &BTreeMap<String, CellResult>) -> Tally {
        let mut t = Tally::default();
        for r in ran.iter().filter_map(|id| stored.get(id)) {
            match r.status {
                CellStatus::Failed => t.failed += 1,
                CellStatus::Skipped => t.skipped += 1,
                // A disturbed cell was measured; its samples are kept, marked unfit for statistics.
                CellStatus::Ok => t.measured += 1,
                // Unless it is a member of pairs that counted (kept under common load): the
                // pairs are its numbers.
                CellStatus::Disturbed if r.pairing.as_ref().is_some_and(|p| !p.pairs.is_empty()) => t.measured += 1,
                CellStatus::Disturbed => {
                    t.measured += 1;
                    t.without_statistics += 1;
                }
            }
        }
        t
    }
}

/// Rounds the scenario asks for (`workload.rounds`; a workload without rounds runs one).
pub(super) fn scenario_rounds(s: &Scenario) -> u32 {
    crate::workload::kind::of(&s.workload).rounds().unwrap_or(1).max(1)
}

/// Rounds a stored cell has: lat_fs cells count theirs; any other stored cell has its one.
fn rounds_of(r: &CellResult) -> u32 {
    r.latfs.as_ref().map_or(1, |l| l.rounds_done().max(1))
}

/// Whether a stored cell goes on to later rounds: measured ones do; skipped or failed ones stop.
fn takes_rounds(r: &CellResult) -> bool {
    matches!(r.status, CellStatus::Ok | CellStatus::Disturbed) && r.latfs.is_some()
}

/// Whether a stored cell still wants a round of a run of `rounds`.
fn wants_round(r: &CellResult, rounds: u32) -> bool {
    takes_rounds(r) && rounds_of(r) < rounds
}

/// A stored cell with one more round: the measurement absorbed, the status and notes of both.
///
/// A later round that fails (or is skipped) makes the cell so, with its error; the
/// repetitions of the rounds before are kept. Notes a later round adds are appended,
/// except the noise notes, which are said again over all the rounds ([`noise_notes`]).
pub(super) fn absorb_round(earlier: CellResult, next: CellResult, round: u32) -> CellResult {
    let mut r = earlier;
    r.finished = next.finished;
    // A cell is profiled once per run, in whichever round ran first here; a paired run's
    // later profiled members keep theirs beside the first.
    match (&r.profile, next.profile) {
        (None, p) => r.profile = p,
        (Some(_), Some(p)) => r.pair_profiles.push(p),
        (Some(_), None) => {}
    }
    r.pair_profiles.extend(next.pair_profiles);
    // The noise notes are said over all rounds: both sides' give way to those of the whole.
    let stale: Vec<String> = [&r.latfs, &next.latfs]
        .into_iter()
        .flatten()
        .flat_map(noise_notes)
        .chain([&r.fio, &next.fio].into_iter().flatten().flat_map(crate::workload::fio::noise_notes))
        .collect();
    r.notes.retain(|n| !stale.contains(n));
    // What provisioning says is the same every round.
    for n in next.notes.into_iter().filter(|n| !stale.contains(n)) {
        if !r.notes.contains(&n) {
            r.notes.push(n);
        }
    }
    match next.status {
        CellStatus::Ok | CellStatus::Disturbed => {
            if let (Some(a), Some(b)) = (r.latfs.take(), next.latfs) {
                let l = latfs::absorb_round(a, b, round);
                // The cell is `disturbed` only when no round left a sample.
                r.status = if l.total_loops.n == 0 { CellStatus::Disturbed } else { CellStatus::Ok };
                r.latfs = Some(l);
            }
            if let (Some(a), Some(b)) = (r.fio.take(), next.fio) {
                let f = crate::workload::fio::absorb_round(a, b, round);
                r.status = if f.iops.n == 0 { CellStatus::Disturbed } else { CellStatus::Ok };
                r.fio = Some(f);
            }
            if let (Some(a), Some(b)) = (r.ops.take(), next.ops) {
                let o = crate::workload::ops::answers::absorb_round(a, b, round);
                r.status = if o.ops_per_s.n == 0 { CellStatus::Disturbed } else { CellStatus::Ok };
                r.ops = Some(o);
            }
            // Steps record no round: a paired run's next member is its iterations, appended.
            r.steps = match (r.steps.take(), next.steps) {
                (Some(a), Some(b)) => Some(crate::workload::steps::member::absorb(a, b)),
                (a, b) => a.or(b),
            };
        }
        other => {
            r.status = other;
            r.skip = next.skip;
            r.error = next.error.map(|e| format!("round {}: {e}", round + 1));
        }
    }
    if let Some(l) = &r.latfs {
        r.notes.extend(noise_notes(l));
    }
    if let Some(f) = &r.fio {
        r.notes.extend(crate::workload::fio::noise_notes(f));
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::CellResult;
    use crate::model::{CellParams, Disturbance, LatfsRepetition, LatfsTest, Layout, QuotaMode};

    fn params() -> CellParams {
        CellParams {
            fs: "ext4".into(),
            layout: Layout::S,
            quota: QuotaMode::Off,
            tasks: 1,
            test: Some(LatfsTest::Chown),
            fio: Default::default(),
            kernel: None,
        }
    }

    fn cell(status: CellStatus, loops: &[f64], disturbed: bool) -> CellResult {
        let mut r = CellResult::new(&params(), status, "t0");
        let reps = loops
            .iter()
            .map(|&l| LatfsRepetition {
                total_loops_per_ms: l,
                disturbance: disturbed.then(|| Disturbance { disturbed: true, ..Disturbance::default() }),
                ..LatfsRepetition::default()
            })
            .collect();
        r.latfs = Some(latfs::result(reps));
        r
    }

    #[test]
    fn the_noise_notes_of_rounds_are_one_note_over_all_of_them() {
        let mut first = cell(CellStatus::Ok, &[10.0, 12.0], false);
        let mut noisy = cell(CellStatus::Ok, &[9.0], true);
        let l = first.latfs.as_mut().unwrap();
        l.repetitions.extend(noisy.latfs.take().unwrap().repetitions);
        *l = latfs::result(std::mem::take(&mut l.repetitions));
        first.notes = noise_notes(first.latfs.as_ref().unwrap());
        first.notes.insert(0, "sysctl vm.dirty_ratio = 5 (was 20)".into());
        assert_eq!(
            first.notes[1],
            "1 of 3 repetitions disturbed by other processes (kept, left out of statistics; 0 rerun)"
        );
        let mut second = cell(CellStatus::Disturbed, &[5.0, 6.0], true);
        second.notes = vec!["sysctl vm.dirty_ratio = 5 (was 20)".into()];
        second.notes.extend(noise_notes(second.latfs.as_ref().unwrap()));
        let mut third = cell(CellStatus::Ok, &[11.0], false);
        third.notes = second.notes[..1].to_vec();
        let both = absorb_round(absorb_round(first, second, 1), third, 2);
        assert_eq!(
            both.notes,
            [
                "sysctl vm.dirty_ratio = 5 (was 20)",
                "3 of 6 repetitions disturbed by other processes in rounds 1, 2 (kept, left out of statistics; 0 rerun)"
            ]
        );
        // A cell that no round left a sample says so once.
        let lost =
            absorb_round(cell(CellStatus::Disturbed, &[1.0], true), cell(CellStatus::Disturbed, &[2.0], true), 1);
        assert_eq!(lost.status, CellStatus::Disturbed);
        assert_eq!(lost.notes.len(), 2, "{:?}", lost.notes);
        assert!(lost.notes[1].starts_with("every repetition was disturbed"), "{:?}", lost.notes);
    }

    #[test]
    fn a_later_round_adds_its_repetitions_and_its_failure() {
        let first = cell(CellStatus::Ok, &[10.0, 12.0], false);
        let mut second = cell(CellStatus::Ok, &[20.0, 22.0], false);
        second.notes.push("round 2: 1 of 3 repetitions disturbed".into());
        second.finished = "t2".into();
        let both = absorb_round(first.clone(), second, 1);
        let l = both.latfs.as_ref().unwrap();
        assert_eq!(l.repetitions.iter().map(|r| r.round).collect::<Vec<_>>(), vec![0, 0, 1, 1]);
        // Two rounds: two samples, the rounds' means.
        assert_eq!((l.total_loops.n, l.total_loops.mean), (2, 16.0));
        assert_eq!((both.status, both.finished.as_str(), both.notes.len()), (CellStatus::Ok, "t2", 1));
        // A first round left without samples is rescued by a later one, and the reverse keeps the cell ok.
        let lost = cell(CellStatus::Disturbed, &[5.0], true);
        let rescued = absorb_round(lost, cell(CellStatus::Ok, &[30.0], false), 1);
        assert_eq!(rescued.status, CellStatus::Ok);
        let kept = absorb_round(first.clone(), cell(CellStatus::Disturbed, &[5.0], true), 1);
        assert_eq!((kept.status, kept.latfs.unwrap().total_loops.n), (CellStatus::Ok, 1));
        // A failing round fails the cell with its error, and the earlier repetitions stay.
        let mut failed = CellResult::new(&params(), CellStatus::Failed, "t3");
        failed.error = Some("mount: EIO".into());
        let r = absorb_round(first, failed, 2);
        assert_eq!((r.status, r.error.as_deref()), (CellStatus::Failed, Some("round 3: mount: EIO")));
        assert_eq!(r.latfs.unwrap().repetitions.len(), 2);
    }

    /// A paired fio cell's members, absorbed: one note over all its rounds naming the
    /// disturbed repetitions of every member, not the first member's words repeated.
    #[test]
    fn the_noise_notes_of_fio_members_are_one_note_over_all_of_them() {
        let member = |disturbed: &[bool]| {
            let mut r = CellResult::new(&params(), CellStatus::Ok, "t");
            let reps = disturbed
                .iter()
                .enumerate()
                .map(|(i, &d)| crate::model::FioRepetition {
                    index: i as u32,
                    disturbance: d.then(|| Disturbance { disturbed: true, ..Disturbance::default() }),
                    ..Default::default()
                })
                .collect();
            let mut f = crate::model::FioResult { repetitions: reps, ..Default::default() };
            crate::workload::fio::summarise(&mut f);
            r.notes = crate::workload::fio::noise_notes(&f);
            r.fio = Some(f);
            r
        };
        let first = member(&[true, false, false]);
        assert_eq!(
            first.notes,
            ["1 of 3 repetitions disturbed by other processes (kept, left out of statistics; 0 rerun)"]
        );
        let both = absorb_round(absorb_round(first, member(&[true, true, false]), 1), member(&[false; 3]), 2);
        assert_eq!(
            both.notes,
            ["3 of 9 repetitions disturbed by other processes in rounds 1, 2 (kept, left out of statistics; 0 rerun)"]
        );
    }
}
