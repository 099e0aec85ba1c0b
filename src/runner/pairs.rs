//! Paired runs: the members of a pair group (cells that differ only in the arm axis of
//! `[compare]`) measured back to back, in balanced order, pair by pair, until the
//! sequential rule of [`crate::stats::paired`] decides or the pairs run out.
//!
//! Everything here is a pure function or runs behind [`CellExecutor`], so the schedule,
//! the voiding of a pair with a disturbed or failed member, and the sequential stop are
//! tested with a scripted executor and no root.

use serde::Serialize;

use super::cell::CellExecutor;
use super::progress::Progress;
use crate::catalogue::Direction;
use crate::host::pair_load::{MemberLoad, PairLoad, pair_loads};
pub use crate::model::pairing::{DroppedPair, MEMBER_FAILED_ATTEMPTS, PairStop};
use crate::model::{CellResult, CellStatus};
pub use crate::plan::{PairGroup, pair_groups};
use crate::scenario::CompareSpec;
use crate::stats::paired::{alpha_per_look, look_schedule, paired_change};
use crate::verdict::Verdict;
use crate::workload::kind::Member;

/// The order in which the arms of each pair run: for pair `i`, the arm indices (0 is
/// the baseline) in the order measured.
///
/// Pairs come in blocks of two, the second the first reversed (ABBA or BAAB with two
/// arms; ABC CBA or CBA ABC with three). Half the blocks start forward, half reversed,
/// in an order shuffled from `seed`; with an odd number of blocks the extra one's
/// direction comes from the seed too. So for an even `n_pairs` exactly half the pairs
/// run forward (as many AB as BA), for an odd one the counts differ by one, and the same
/// seed always gives the same schedule.
pub fn pair_schedule(seed: u64, n_pairs: usize, arms: usize) -> Vec<Vec<usize>> {
    let blocks = n_pairs.div_ceil(2);
    let mut rng = crate::rng::SplitMix64::new(seed);
    let mut forward_first: Vec<bool> = (0..blocks).map(|b| b < blocks / 2).collect();
    if blocks % 2 == 1 {
        forward_first[blocks - 1] = rng.below(2) == 0;
    }
    rng.shuffle(&mut forward_first);
    let forward: Vec<usize> = (0..arms).collect();
    let reversed: Vec<usize> = (0..arms).rev().collect();
    forward_first
        .iter()
        .flat_map(|&f| if f { [forward.clone(), reversed.clone()] } else { [reversed.clone(), forward.clone()] })
        .take(n_pairs)
        .collect()
}

/// One pair that counts: the arms' values in the slot's order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairRecord {
    /// Its members ran under common load ([`AttemptFate::Pair`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub common_load: bool,
    /// The pair's place in the schedule, from 0.
    pub slot: usize,
    /// The arm indices in the order they ran.
    pub order: Vec<usize>,
    /// Each arm's value (baseline first).
    pub values: Vec<f64>,
}

/// Where a pair group starts: nothing yet, or what a resumed run had stored of it.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupStart {
    /// The pairs that count so far, in schedule order.
    pub pairs: Vec<PairRecord>,
    /// Slots dropped so far.
    pub dropped: Vec<DroppedPair>,
    /// The first slot still to run.
    pub next_slot: usize,
    /// Void pairs that may still run again.
    pub reruns_left: u32,
}

impl GroupStart {
    /// A group with nothing measured, and its whole rerun budget.
    pub fn fresh(rules: &PairRules) -> GroupStart {
        GroupStart { pairs: Vec::new(), dropped: Vec::new(), next_slot: 0, reruns_left: rules.max_reruns }
    }
}

/// What became of one attempt at a slot.
#[derive(Debug, Clone, PartialEq)]
pub enum AttemptFate {
    /// Every member gave a value and their loads did not void it
    /// ([`crate::host::pair_load`]): the slot's pair; `common_load` when its members were
    /// disturbed alike (kept, their disturbed samples included).
    Pair {
        /// The members ran under about the same load (some of it disturbing).
        common_load: bool,
    },
    /// A member voided it, and the slot runs again (the reason).
    Rerun(String),
    /// A member voided it and the rerun budget is spent: the slot is dropped (the reason).
    Dropped(String),
}

/// One attempt at a slot, measured: handed to the caller (to store) before the next begins.
#[derive(Debug, Clone)]
pub struct Attempt {
    /// The slot, from 0.
    pub slot: usize,
    /// The arm indices in the order they ran.
    pub order: Vec<usize>,
    /// The members' results, in the order they ran (`results[i]` is arm `order[i]`).
    pub results: Vec<CellResult>,
    /// Whether it made the slot's pair.
    pub fate: AttemptFate,
}

/// What one pair group measured.
#[derive(Debug, Clone)]
pub struct PairGroupOutcome {
    /// The pairs that count, in schedule order (those it started with included).
    pub pairs: Vec<PairRecord>,
    /// Slots that yielded no pair after their reruns.
    pub dropped: Vec<DroppedPair>,
    /// Why the group stopped.
    pub stop: PairStop,
    /// With [`PairStop::MemberFailed`]: the arm and its error.
    pub stop_reason: Option<String>,
}

/// How a pair group runs: its bounds, order seed, verdict threshold and rerun budget.
#[derive(Debug, Clone, Copy)]
pub struct PairRules {
    /// Seed of [`pair_schedule`], recorded with the run.
    pub seed: u64,
    /// Pairs before the first look.
    pub min_pairs: u32,
    /// Most pairs.
    pub max_pairs: u32,
    /// The gate threshold (fraction).
    pub threshold: f64,
    /// Which way the metric gets better.
    pub direction: Direction,
    /// Void pairs that may be run again, per group (`workload.max_reruns`).
    pub max_reruns: u32,
}

impl PairRules {
    /// The rules for `spec` with the scenario's threshold and rerun budget.
    pub fn of(spec: &CompareSpec, seed: u64, threshold: f64, direction: Direction, max_reruns: u32) -> PairRules {
        PairRules { seed, min_pairs: spec.min_pairs, max_pairs: spec.max_pairs, threshold, direction, max_reruns }
    }
}

/// Run one pair group from `start`: each slot of the schedule measures every member back
/// to back in the slot's order; a member `value` rejects, or members disturbed unlike each
/// other ([`pair_load`]: the one rule), void the pair, which runs again while the group's
/// rerun budget lasts and is dropped with the reason after. Every
/// attempt goes to `record` as soon as it is measured; an attempt during which a signal
/// arrived is not recorded (it did not finish as planned). At each look of
/// [`look_schedule`] the paired interval at [`alpha_per_look`] is read with the gate's
/// rule, and the group stops once every candidate arm is decided, or after `max` slots.
///
/// An arm that failed or was skipped in [`MEMBER_FAILED_ATTEMPTS`] attempts in a row
/// (whatever the slots) stops the group with [`PairStop::MemberFailed`]: that last
/// attempt's slot is dropped, and the outcome's `stop_reason` names the arm and its error.
/// A disturbed member, or an attempt in which the arm ran, starts its count again.
#[allow(clippy::too_many_arguments)]
pub(super) fn run_pair_group(
    exec: &mut dyn CellExecutor,
    group: &PairGroup,
    rules: &PairRules,
    value: &dyn Fn(&CellResult) -> Result<Member, String>,
    start: GroupStart,
    record: &mut dyn FnMut(Attempt) -> anyhow::Result<()>,
    interrupted: &dyn Fn() -> bool,
    progress: &Progress,
) -> anyhow::Result<PairGroupOutcome> {
    let arms = group.members.len();
    let schedule = pair_schedule(rules.seed, rules.max_pairs as usize, arms);
    let looks = look_schedule(rules.min_pairs, rules.max_pairs);
    let alpha = alpha_per_look(rules.min_pairs, rules.max_pairs);
    let mut out =
        PairGroupOutcome { pairs: start.pairs, dropped: start.dropped, stop: PairStop::MaxPairs, stop_reason: None };
    let mut reruns_left = start.reruns_left;
    // Per arm: attempts in a row in which it failed, and its last error.
    let mut failing: Vec<(u32, String)> = vec![(0, String::new()); arms];
    for (slot, order) in schedule.iter().enumerate().skip(start.next_slot) {
        loop {
            if interrupted() {
                out.stop = PairStop::Interrupted;
                return Ok(out);
            }
            let mut values = vec![f64::NAN; arms];
            let mut loads: Vec<Vec<MemberLoad>> = vec![Vec::new(); arms];
            let mut void: Option<String> = None;
            let mut results = Vec::with_capacity(arms);
            for &arm in order {
                let cell = group.members[arm];
                progress.start(cell, slot as u32);
                let r = exec.measure(cell, &|what| progress.phase(cell, slot as u32, what));
                if interrupted() {
                    out.stop = PairStop::Interrupted;
                    return Ok(out);
                }
                progress.finish(cell, slot as u32, &r);
                match failure(&r) {
                    Some(why) => failing[arm] = (failing[arm].0 + 1, why),
                    None => failing[arm].0 = 0,
                }
                match value(&r) {
                    Ok(m) => (values[arm], loads[arm]) = (m.value, m.loads),
                    Err(why) => {
                        void.get_or_insert_with(|| bounded(format!("{}: {why}", arm_label(group, arm))));
                    }
                }
                results.push(r);
            }
            let load = pair_loads(&loads);
            if let (None, PairLoad::Uneven { member, why }) = (&void, &load) {
                void = Some(bounded(format!("{}: {why}", arm_label(group, *member))));
            }
            let gave_up = failing.iter().position(|(n, _)| *n >= MEMBER_FAILED_ATTEMPTS);
            let fate = match void {
                None => AttemptFate::Pair { common_load: load == PairLoad::Common },
                Some(reason) if reruns_left > 0 && gave_up.is_none() => {
                    reruns_left -= 1;
                    AttemptFate::Rerun(reason)
                }
                Some(reason) => AttemptFate::Dropped(reason),
            };
            match &fate {
                AttemptFate::Pair { common_load } => {
                    out.pairs.push(PairRecord { slot, order: order.clone(), values, common_load: *common_load })
                }
                AttemptFate::Dropped(reason) => {
                    out.dropped.push(DroppedPair { slot: slot as u32, reason: reason.clone() })
                }
                AttemptFate::Rerun(_) => {}
            }
            let again = matches!(fate, AttemptFate::Rerun(_));
            record(Attempt { slot, order: order.clone(), results, fate })?;
            if let Some(arm) = gave_up {
                out.stop = PairStop::MemberFailed;
                out.stop_reason = Some(bounded(format!(
                    "{}: failed in {MEMBER_FAILED_ATTEMPTS} attempts in a row: {}",
                    arm_label(group, arm),
                    failing[arm].1
                )));
                return Ok(out);
            }
            if !again {
                break;
            }
        }
        let n = out.pairs.len() as u32;
        // A look at a pair count the schedule names; dropped slots can skip a count, so a
        // look is also due at the last slot.
        let at_look = looks.contains(&n) && out.pairs.last().is_some_and(|p| p.slot == slot);
        if at_look && let Some(v) = decided(&out.pairs, arms, alpha, rules) {
            out.stop = v;
            return Ok(out);
        }
    }
    Ok(out)
}

/// [`run_pair_group`] from nothing, in memory: no attempt stored, no progress shown. The
/// seam through which `fsbench bisect`'s simulation (`src/bisect/simulate.rs`) drives the
/// schedule, the voiding of pairs and the sequential stop with a scripted executor.
pub fn run_pair_group_in_memory(
    exec: &mut dyn CellExecutor,
    group: &PairGroup,
    rules: &PairRules,
    value: &dyn Fn(&CellResult) -> Result<Member, String>,
    interrupted: &dyn Fn() -> bool,
) -> anyhow::Result<PairGroupOutcome> {
    let progress = Progress::new(0, 1, true);
    run_pair_group(exec, group, rules, value, GroupStart::fresh(rules), &mut |_| Ok(()), interrupted, &progress)
}

/// The verdict of every candidate arm against the baseline at level `alpha`, when each is
/// decided; the worst of them (regressed over improved over unchanged).
fn decided(pairs: &[PairRecord], arms: usize, alpha: f64, rules: &PairRules) -> Option<PairStop> {
    let baseline: Vec<f64> = pairs.iter().map(|p| p.values[0]).collect();
    let mut verdicts = Vec::new();
    for arm in 1..arms {
        let candidate: Vec<f64> = pairs.iter().map(|p| p.values[arm]).collect();
        let v = Verdict::decide(paired_change(&baseline, &candidate, alpha), rules.threshold, rules.direction);
        if !matches!(v, Verdict::Regressed | Verdict::Improved | Verdict::Unchanged) {
            return None;
        }
        verdicts.push(v);
    }
    [(Verdict::Regressed, PairStop::Regressed), (Verdict::Improved, PairStop::Improved)]
        .into_iter()
        .find(|(v, _)| verdicts.contains(v))
        .map_or(Some(PairStop::Unchanged), |(_, stop)| Some(stop))
}

/// Why a member failed to run (`failed: mkfs.ext4: …`, `skipped: …`); `None` when it ran
/// (a disturbed member ran: it is noise, not a failure).
fn failure(r: &CellResult) -> Option<String> {
    match r.status {
        CellStatus::Failed => Some(format!("failed: {}", r.error.as_deref().unwrap_or("unknown error"))),
        CellStatus::Skipped => {
            Some(format!("skipped: {}", r.skip.as_ref().map_or("the host cannot run it", |s| s.reason.as_str())))
        }
        CellStatus::Ok | CellStatus::Disturbed => None,
    }
}

/// Most characters of a dropped pair's or a stop's reason: a tool's whole stderr can be in
/// an error, and a cell file's pairing texts are refused past 4096 bytes on load (the cell
/// keeps the whole error in its notes or `error`).
const REASON_CHARS: usize = 1000;

/// `reason` cut to [`REASON_CHARS`] characters (at most 4 bytes each), with an ellipsis.
fn bounded(reason: String) -> String {
    if reason.chars().count() <= REASON_CHARS {
        return reason;
    }
    format!("{}…", reason.chars().take(REASON_CHARS - 1).collect::<String>())
}

fn arm_label(group: &PairGroup, arm: usize) -> String {
    group.members[arm].id()
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;
    use crate::model::CellResult;
    use crate::model::{CellParams, Disturbance, LatfsRepetition, LatfsTest, Layout, QuotaMode};
    use crate::plan::Cell;
    use crate::workload::latfs;

    fn cell(index: usize, fs: &str, test: LatfsTest) -> Cell {
        Cell {
            index,
            params: CellParams {
                fs: fs.into(),
                layout: Layout::S,
                quota: QuotaMode::Off,
                tasks: 1,
                test: Some(test),
                fio: Default::default(),
                kernel: None,
            },
        }
    }

    #[test]
    fn the_schedule_is_balanced_and_reproducible() {
        for seed in 0..50 {
            for n in [2usize, 6, 8, 20, 32] {
                let s = pair_schedule(seed, n, 2);
                assert_eq!(s.len(), n);
                let ab = s.iter().filter(|o| **o == [0, 1]).count();
                assert_eq!(ab * 2, n, "seed {seed}, {n} pairs: {s:?}");
                // Blocks: each second pair is the first reversed (ABBA or BAAB).
                for b in s.chunks(2) {
                    assert_eq!(b[0].iter().rev().copied().collect::<Vec<_>>(), b[1]);
                }
            }
            let odd = pair_schedule(seed, 7, 2);
            let ab = odd.iter().filter(|o| **o == [0, 1]).count();
            assert!(ab == 3 || ab == 4, "{odd:?}");
            assert_eq!(pair_schedule(seed, 32, 2), pair_schedule(seed, 32, 2));
        }
        // Different seeds give different block orders.
        let distinct: std::collections::BTreeSet<_> = (0..20).map(|s| pair_schedule(s, 16, 2)).collect();
        assert!(distinct.len() > 10, "{}", distinct.len());
        // Three arms: forward and reversed orders, balanced too.
        let s = pair_schedule(3, 4, 3);
        assert_eq!(s.iter().filter(|o| **o == [0, 1, 2]).count(), 2);
        assert!(s.iter().all(|o| *o == [0, 1, 2] || *o == [2, 1, 0]));
    }

    #[test]
    fn cells_that_differ_only_in_the_arm_form_a_group() {
        let cells = vec![
            cell(0, "ext4", LatfsTest::OpenClose),
            cell(1, "ext4", LatfsTest::Chown),
            cell(2, "ext4-nodelalloc", LatfsTest::OpenClose),
            cell(3, "ext4-nodelalloc", LatfsTest::Chown),
            cell(4, "xfs", LatfsTest::Chown),
        ];
        let spec = CompareSpec { arms: "fs".into(), min_pairs: 6, max_pairs: 32, seed: None };
        let groups = pair_groups(&cells, &spec, &["ext4".into(), "ext4-nodelalloc".into()]);
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].key, "S-qoff-t1-open_close");
        assert_eq!(groups[0].members.iter().map(|c| c.index).collect::<Vec<_>>(), [0, 2]);
        assert_eq!(groups[1].members.iter().map(|c| c.index).collect::<Vec<_>>(), [1, 3]);
        // A group missing an arm has nothing to pair.
        assert_eq!(pair_groups(&cells[..3], &spec, &["ext4".into(), "ext4-nodelalloc".into()]).len(), 1);
    }

    /// Answers each measured cell from a per-arm queue of loops/ms (`None`: disturbed).
    struct Arms {
        by_fs: Vec<(String, VecDeque<Option<f64>>, f64)>,
        calls: Vec<String>,
    }

    impl Arms {
        /// Arm `fs` answers its script, then `steady` for ever.
        fn new(script: &[(&str, Vec<Option<f64>>, f64)]) -> Arms {
            Arms {
                by_fs: script.iter().map(|(f, q, s)| (f.to_string(), q.iter().copied().collect(), *s)).collect(),
                calls: vec![],
            }
        }
    }

    impl CellExecutor for Arms {
        fn measure(&mut self, cell: &Cell, _phase: &crate::runner::progress::Phase) -> CellResult {
            self.calls.push(cell.params.fs.clone());
            let arm = self.by_fs.iter_mut().find(|(f, _, _)| *f == cell.params.fs).unwrap();
            let answer = arm.1.pop_front().unwrap_or(Some(arm.2));
            let mut r = CellResult::new(&cell.params, CellStatus::Ok, "t");
            let rep = LatfsRepetition {
                total_loops_per_ms: answer.unwrap_or(1.0),
                disturbance: Some(window(if answer.is_none() { 0.8 } else { 0.0 })),
                ..Default::default()
            };
            r.latfs = Some(latfs::result(vec![rep]));
            r
        }
    }

    /// A 100 ms window that lost `cpus` to others (disturbed above a quarter of a CPU).
    fn window(cpus: f64) -> Disturbance {
        Disturbance {
            wall_us: 100_000,
            contention_us: Some((cpus * 1e5) as u64),
            disturbed: cpus > 0.25,
            threshold: Some(0.25),
            ..Default::default()
        }
    }

    fn group(cells: &[Cell]) -> PairGroup<'_> {
        PairGroup { key: "g".into(), members: cells.iter().collect() }
    }

    fn rules(min: u32, max: u32, reruns: u32) -> PairRules {
        PairRules {
            seed: 1,
            min_pairs: min,
            max_pairs: max,
            threshold: 0.05,
            direction: Direction::HigherIsBetter,
            max_reruns: reruns,
        }
    }

    /// Run `cells` as one group from scratch; what it returned and every attempt recorded.
    fn run_group(
        exec: &mut Arms,
        cells: &[Cell],
        rules: &PairRules,
        interrupted: &dyn Fn() -> bool,
    ) -> (PairGroupOutcome, Vec<Attempt>) {
        let mut attempts = Vec::new();
        let progress = Progress::new(0, 1, true);
        let out = run_pair_group(
            exec,
            &group(cells),
            rules,
            &crate::workload::latfs::member::member_value,
            GroupStart::fresh(rules),
            &mut |a| {
                attempts.push(a);
                Ok(())
            },
            interrupted,
            &progress,
        )
        .unwrap();
        (out, attempts)
    }

    fn noisy(center: f64, n: usize, seed: u64, spread: f64) -> Vec<Option<f64>> {
        let mut rng = crate::rng::SplitMix64::new(seed);
        (0..n).map(|_| Some(center * (1.0 + spread * rng.normal()))).collect()
    }

    #[test]
    fn a_clear_regression_stops_at_the_first_look() {
        let cells = [cell(0, "a", LatfsTest::Chown), cell(1, "b", LatfsTest::Chown)];
        let mut exec = Arms::new(&[("a", noisy(100.0, 40, 1, 0.01), 100.0), ("b", noisy(80.0, 40, 2, 0.01), 80.0)]);
        let (out, _) = run_group(&mut exec, &cells, &rules(6, 32, 3), &|| false);
        assert_eq!(out.stop, PairStop::Regressed);
        assert_eq!(out.pairs.len(), 6);
        assert_eq!(exec.calls.len(), 12);
        // Members ran back to back in the schedule's order.
        let sched = pair_schedule(1, 32, 2);
        let want: Vec<&str> = sched[..6].iter().flatten().map(|&a| ["a", "b"][a]).collect();
        assert_eq!(exec.calls, want);
    }

    #[test]
    fn an_undecided_group_runs_to_max_and_says_so() {
        // 5% apart with 6% noise per member: a 5% threshold cannot be decided in 9 pairs.
        let cells = [cell(0, "a", LatfsTest::Chown), cell(1, "b", LatfsTest::Chown)];
        let mut exec = Arms::new(&[("a", noisy(100.0, 40, 3, 0.06), 100.0), ("b", noisy(95.0, 40, 4, 0.06), 95.0)]);
        let (out, _) = run_group(&mut exec, &cells, &rules(6, 9, 0), &|| false);
        assert_eq!(out.stop, PairStop::MaxPairs);
        assert_eq!(out.pairs.len(), 9);
    }

    #[test]
    fn a_disturbed_member_voids_its_pair_which_reruns_then_drops() {
        let cells = [cell(0, "a", LatfsTest::Chown), cell(1, "b", LatfsTest::Chown)];
        // b's first two answers are disturbed: slot 0 runs again once (the budget), is void
        // again and is dropped; a's values from the void attempts are not kept.
        let mut exec = Arms::new(&[("a", vec![Some(100.0); 3], 100.0), ("b", vec![None, None], 100.0)]);
        let (out, attempts) = run_group(&mut exec, &cells, &rules(2, 3, 1), &|| false);
        assert_eq!(out.dropped.len(), 1, "{:?}", out.dropped);
        assert_eq!(out.dropped[0].slot, 0);
        assert_eq!(
            out.dropped[0].reason,
            "b-S-qoff-t1-chown: disturbed unlike its partner (0.80 CPUs taken, against 0.00)"
        );
        assert_eq!(out.pairs.iter().map(|p| p.slot).collect::<Vec<_>>(), [1, 2]);
        assert!(out.pairs.iter().all(|p| p.values == [100.0, 100.0]));
        // 2 attempts at slot 0, one each at slots 1 and 2; every attempt recorded.
        assert_eq!(attempts.iter().map(|a| a.results.len()).sum::<usize>(), 8);
        assert!(matches!(&attempts[0].fate, AttemptFate::Rerun(r) if r.contains("disturbed unlike its partner")));
        assert!(matches!(&attempts[1].fate, AttemptFate::Dropped(_)));
        assert_eq!(attempts[2].fate, AttemptFate::Pair { common_load: false });
        // Identical arms without spread: the interval is the point 0, unchanged at the first look.
        assert_eq!(out.stop, PairStop::Unchanged);
    }

    #[test]
    fn members_disturbed_alike_keep_their_pair_under_common_load() {
        let cells = [cell(0, "a", LatfsTest::Chown), cell(1, "b", LatfsTest::Chown)];
        // Both arms' first two answers disturbed alike (a busy host), then quiet: no slot is
        // void, the first two pairs are kept under common load with their disturbed values.
        let mut exec = Arms::new(&[("a", vec![None, None], 1.0), ("b", vec![None, None], 1.0)]);
        let (out, attempts) = run_group(&mut exec, &cells, &rules(2, 3, 0), &|| false);
        assert!(out.dropped.is_empty(), "{:?}", out.dropped);
        assert_eq!(out.pairs.iter().map(|p| p.common_load).collect::<Vec<_>>(), [true, true]);
        assert!(out.pairs.iter().all(|p| p.values == [1.0, 1.0]));
        assert_eq!(attempts.len(), 2);
        assert_eq!(attempts[0].fate, AttemptFate::Pair { common_load: true });
    }

    #[test]
    fn a_signal_stops_the_group_between_pairs() {
        let cells = [cell(0, "a", LatfsTest::Chown), cell(1, "b", LatfsTest::Chown)];
        let mut exec = Arms::new(&[("a", vec![], 100.0), ("b", vec![], 100.0)]);
        let (out, attempts) = run_group(&mut exec, &cells, &rules(6, 32, 3), &|| true);
        assert_eq!((out.stop, attempts.len()), (PairStop::Interrupted, 0));
    }
}
