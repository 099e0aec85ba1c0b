//! A paired run (`[compare] arms = …`): every pair group of the plan run pair by pair
//! ([`pairs::run_pair_group`]), each member measurement folded into its cell as one round,
//! the cell's [`CellPairing`] saying which round was which pair's member, and every member's
//! cell file written after every pair, so a signal loses at most the pair in flight.
//!
//! A resumed run continues each group from what its cells stored: the same seed gives the
//! same schedule, and the group goes on at the slot after the last it stored. Cells in no
//! complete group (narrowed away by `--only`, or whose partner the host cannot run) run
//! unpaired, as in a run without `[compare]`.

use std::collections::{BTreeMap, BTreeSet};

use super::cell::CellExecutor;
use super::pairs::{self, Attempt, AttemptFate, GroupStart, PairGroup, PairRecord, PairRules};
use super::progress::Progress;
use super::rounds;
use crate::model::pairing::{CellPairing, PairSlot, PairStop};
use crate::model::{CellResult, CellStatus};
use crate::plan::Cell;
use crate::scenario::{CompareSpec, Scenario};

/// What a paired run needs beyond the cells: the scenario's `[compare]`, the seed of the
/// pair order and the run's progress display setting.
pub(super) struct PairedRun<'a> {
    /// The scenario (thresholds, rerun budget, the arm axis's values).
    pub scenario: &'a Scenario,
    /// Its `[compare]`.
    pub spec: &'a CompareSpec,
    /// Seed of the pair order, recorded in `run.json` and every paired cell.
    pub seed: u64,
    /// No progress display.
    pub quiet: bool,
    /// The arm values, the baseline first: the arm axis's values ([`arm_values`]), or the
    /// kernels' labels of a kernel-paired run.
    pub arms: Vec<String>,
}

/// What a paired invocation did: the cells it measured, and how many were complete before it.
pub(super) struct PairedRan {
    /// Ids of the cells measured in this invocation.
    pub ran: BTreeSet<String>,
    /// Cells stored before this invocation that need nothing more.
    pub previously_done: usize,
}

/// Run the pair groups of `cells`, then the cells in no complete group unpaired; `store`
/// gets every cell as soon as it changes. `stop` (a signal) ends the run before the next
/// member; the member that saw it is not stored.
pub(super) fn run_paired(
    run: &PairedRun,
    cells: &[Cell],
    stored: &mut BTreeMap<String, CellResult>,
    exec: &mut dyn CellExecutor,
    store: &mut dyn FnMut(&CellResult) -> anyhow::Result<()>,
    stop: &dyn Fn() -> bool,
) -> anyhow::Result<PairedRan> {
    let arm_values = &run.arms;
    let groups = pairs::pair_groups(cells, run.spec, arm_values);
    let mut ran = BTreeSet::new();
    let mut previously_done = 0;
    let mut todo: Vec<(PairGroup, GroupStart)> = Vec::new();
    let mut unpaired: Vec<&Cell> = Vec::new();
    for group in &groups {
        let rules = rules(run, group);
        match resume_state(group, stored, &rules, crate::workload::kind::of(&run.scenario.workload))? {
            None => previously_done += group.members.len(),
            Some(start) => {
                // A member the host cannot run leaves its group nothing to pair: store the
                // skip, and its partners run unpaired.
                let skips: Vec<CellResult> = group.members.iter().filter_map(|c| exec.skip(c)).collect();
                if skips.is_empty() {
                    todo.push((group.clone(), start));
                    continue;
                }
                for r in skips {
                    store(&r)?;
                    ran.insert(r.id.clone());
                    stored.insert(r.id.clone(), r);
                }
                unpaired.extend(group.members.iter().filter(|c| !ran.contains(&c.id())));
            }
        }
    }
    let in_groups: BTreeSet<usize> = groups.iter().flat_map(|g| g.members.iter().map(|c| c.index)).collect();
    unpaired.extend(cells.iter().filter(|c| !in_groups.contains(&c.index)));
    let unpaired_todo: Vec<&Cell> = unpaired.iter().copied().filter(|c| !stored.contains_key(&c.id())).collect();
    previously_done += unpaired.len() - unpaired_todo.len();

    let most = todo.iter().map(|(g, s)| g.members.len() * (run.spec.max_pairs as usize).saturating_sub(s.next_slot));
    let progress = Progress::paired(most.sum(), run.spec.max_pairs, run.quiet);
    exec.pair_members(true);
    for (group, start) in &todo {
        let rules = rules(run, group);
        let base = pairing_of(run, arm_values, group);
        let mut record = |a: Attempt| {
            let ids = store_attempt(group, &base, a, stored, per_member(run.scenario))?;
            for id in ids {
                store(&stored[&id])?;
                ran.insert(id);
            }
            Ok(())
        };
        let out = pairs::run_pair_group(
            exec,
            group,
            &rules,
            &|r: &CellResult| crate::workload::kind::of(&run.scenario.workload).member_value(r),
            start.clone(),
            &mut record,
            stop,
            &progress,
        )?;
        // Every member says why the group stopped (a member never measured has no file).
        for member in &group.members {
            if let Some(r) = stored.get_mut(&member.id())
                && let Some(p) = r.pairing.as_mut()
            {
                p.stop = Some(out.stop);
                p.stop_reason.clone_from(&out.stop_reason);
                store(r)?;
            }
        }
        progress.summary(&group_line(group, &out, &rules, per_member(run.scenario).is_some()));
        if out.stop == PairStop::Interrupted {
            exec.pair_members(false);
            progress.done();
            return Ok(PairedRan { ran, previously_done });
        }
    }
    exec.pair_members(false);
    progress.done();

    if !unpaired_todo.is_empty() {
        let ids: Vec<String> = unpaired_todo.iter().map(|c| c.id()).collect();
        eprintln!(
            "fsbench: note: {} in no complete pair group (an arm narrowed away by --only, or skipped on this host): \
             run unpaired: {}",
            crate::text::cell_count(ids.len()),
            ids.join(", ")
        );
        let progress = Progress::new(unpaired_todo.len(), 1, run.quiet);
        let more = rounds::run_rounds(&[unpaired_todo], stored, exec, store, &progress, stop)?;
        progress.done();
        ran.extend(more);
    }
    Ok(PairedRan { ran, previously_done })
}

/// A seed for the pair order when the scenario gives none: from the clock, recorded.
pub(super) fn draw_seed() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1)
}

/// What a paired run cannot do, refused before anything is created: a random cell order
/// (the pair schedule orders the members).
pub(super) fn refuse_unpairable(s: &Scenario, order: super::CellOrder) -> anyhow::Result<()> {
    let Some(spec) = &s.compare else { return Ok(()) };
    if matches!(order, super::CellOrder::Random { .. }) {
        return Err(crate::exit::InputError::anyhow(format!(
            "--order random does not apply to a paired run ([compare] arms = \"{}\"): the pair schedule \
             orders the arms, from `compare.seed`",
            spec.arms
        )));
    }
    if spec.arms == crate::scenario::KERNEL_ARMS {
        return Err(crate::exit::InputError::anyhow(
            "[compare] arms = \"kernel\" pairs kernels: run it with two or more `--kernel LABEL=IMAGE` \
             (or [[kernels]]) and `--paired`",
        ));
    }
    Ok(())
}

/// Kernel-paired runs take the workloads whose members a guest can measure
/// ([`crate::workload::kind::WorkloadAnswers::kernel_pairs_refused`]).
pub(super) fn refuse_kernel_paired(s: &Scenario) -> anyhow::Result<()> {
    match crate::workload::kind::of(&s.workload).kernel_pairs_refused() {
        Some(why) => Err(crate::exit::InputError::anyhow(why)),
        None => Ok(()),
    }
}

/// The arm axis's values, the baseline first.
pub(super) fn arm_values(s: &Scenario, spec: &CompareSpec) -> Vec<String> {
    s.matrix.axis_values(&spec.arms).unwrap_or_default()
}

/// The rules of `group`: the gate threshold its workload decides its baseline member by
/// (a lat_fs test's, `iops`'s for fio, the scenario's own for steps, whose member is a whole
/// iteration), its default metric's direction and its rerun budget.
fn rules(run: &PairedRun, group: &PairGroup) -> PairRules {
    let s = run.scenario;
    let answers = crate::workload::kind::of(&s.workload);
    let threshold = answers.pair_threshold(&s.gate, &group.members[0].params);
    let direction = answers.kind().default_metric().direction();
    PairRules::of(run.spec, run.seed, threshold, direction, answers.pair_reruns())
}

/// Iterations one member adds to its cell (`workload.iterations` of steps): member `r` of
/// such a cell is its iterations from `r` times this; `None` for workloads with rounds.
fn per_member(s: &Scenario) -> Option<u32> {
    crate::workload::kind::of(&s.workload).iterations_per_member()
}

/// The pairing record every member of `group` starts with (its arm set per member).
fn pairing_of(run: &PairedRun, arm_values: &[String], group: &PairGroup) -> CellPairing {
    CellPairing {
        axis: run.spec.arms.clone(),
        arms: arm_values.to_vec(),
        arm: 0,
        group: group.key.clone(),
        seed: run.seed,
        pairs: Vec::new(),
        dropped: Vec::new(),
        stop: None,
        stop_reason: None,
    }
}

/// Fold one attempt into the members' stored cells: each measurement a round of its cell,
/// a pair's slot (with the round) or a dropped slot in every member's pairing. Returns the
/// ids of the cells changed.
fn store_attempt(
    group: &PairGroup,
    base: &CellPairing,
    a: Attempt,
    stored: &mut BTreeMap<String, CellResult>,
    steps_per: Option<u32>,
) -> anyhow::Result<Vec<String>> {
    let mut rounds = vec![None; group.members.len()];
    let mut ids = Vec::new();
    for (&arm, result) in a.order.iter().zip(a.results) {
        let id = group.members[arm].id();
        let (mut cell, round) = fold_member(stored.remove(&id), result, steps_per);
        if cell.pairing.is_none() {
            cell.pairing = Some(CellPairing { arm, ..base.clone() });
        }
        rounds[arm] = round;
        stored.insert(id.clone(), cell);
        ids.push(id);
    }
    for (arm, member) in group.members.iter().enumerate() {
        let Some(p) = stored.get_mut(&member.id()).and_then(|r| r.pairing.as_mut()) else { continue };
        match &a.fate {
            AttemptFate::Pair { common_load } => {
                let round = rounds[arm].ok_or_else(|| {
                    anyhow::anyhow!("pair {} of {}: a member counted without a round", a.slot, group.key)
                })?;
                p.pairs.push(PairSlot {
                    slot: a.slot as u32,
                    order: a.order.clone(),
                    round,
                    common_load: *common_load,
                });
            }
            AttemptFate::Dropped(reason) => {
                p.dropped.push(crate::model::pairing::DroppedPair { slot: a.slot as u32, reason: reason.clone() })
            }
            AttemptFate::Rerun(_) => {}
        }
    }
    Ok(ids)
}

/// Whether a result holds a measurement that can be a round of its cell.
fn measured(r: &CellResult) -> bool {
    matches!(r.status, CellStatus::Ok | CellStatus::Disturbed)
        && (r.latfs.as_ref().is_some_and(|l| !l.repetitions.is_empty())
            || r.fio.as_ref().is_some_and(|f| !f.repetitions.is_empty())
            || r.ops.as_ref().is_some_and(|o| !o.repetitions.is_empty())
            || r.steps.as_ref().is_some_and(|s| !s.iterations.is_empty()))
}

/// One member measurement folded into what is stored of its cell, and the round it became
/// (`None` when it measured nothing: a failed or skipped attempt).
///
/// The first measurement is round 0; later ones are absorbed as the next round, as
/// `workload.rounds` would ([`rounds::absorb_round`]); a steps member's iterations are
/// appended, so round `r` is iterations `r·steps_per ..`. A failed or skipped attempt changes
/// no round and not the cell's status (the pair it voided says why); it leaves a note. A
/// cell with nothing measured yet is stored as its attempt came back, so its file says
/// why it has no numbers.
pub(super) fn fold_member(
    earlier: Option<CellResult>,
    next: CellResult,
    steps_per: Option<u32>,
) -> (CellResult, Option<u32>) {
    match earlier {
        Some(mut e) if measured(&e) => {
            if measured(&next) {
                let round = next_round(&e, steps_per);
                (absorb(e, next, round), Some(round))
            } else {
                e.notes.push(attempt_note(&next));
                e.finished = next.finished;
                (e, None)
            }
        }
        earlier => {
            let mut next = next;
            if let Some(e) = earlier {
                let mut notes = e.notes.clone();
                if !measured(&e) && e.status != CellStatus::Ok {
                    notes.push(attempt_note(&e));
                }
                notes.extend(std::mem::take(&mut next.notes));
                next.notes = notes;
                next.pairing = e.pairing;
                next.started = e.started;
            }
            let round = measured(&next).then_some(0);
            (next, round)
        }
    }
}

/// The round a cell's next measurement becomes: a steps cell's members so far are its
/// iterations over `steps_per`.
fn next_round(r: &CellResult, steps_per: Option<u32>) -> u32 {
    match (&r.latfs, &r.fio, &r.steps) {
        (Some(l), _, _) => l.rounds_done(),
        (None, Some(f), _) => f.rounds_done(),
        (None, None, Some(s)) => steps_per.filter(|&n| n > 0).map_or(0, |n| s.iterations.len() as u32 / n),
        (None, None, None) => r.ops.as_ref().map_or(0, |o| o.rounds_done()),
    }
}

/// `next` as round `round` of `earlier`.
fn absorb(earlier: CellResult, next: CellResult, round: u32) -> CellResult {
    rounds::absorb_round(earlier, next, round)
}

/// A note for an attempt that measured nothing.
fn attempt_note(r: &CellResult) -> String {
    let why = match r.status {
        CellStatus::Skipped => format!("skipped: {}", r.skip.as_ref().map(|s| s.reason.as_str()).unwrap_or("")),
        _ => format!("failed: {}", r.error.as_deref().unwrap_or("unknown error")),
    };
    format!("a pair member attempt at {} {why}", r.started)
}

/// Where `group` stands in what `stored` holds of it: `None` when it stopped already (every
/// member says why), else where to go on, rebuilt from its cells' pairing (the pairs'
/// values from their rounds). The rerun budget left is estimated: attempts that measured
/// nothing in any member leave no round behind, so the estimate may allow a few too many.
fn resume_state(
    group: &PairGroup,
    stored: &BTreeMap<String, CellResult>,
    rules: &PairRules,
    answers: &dyn crate::workload::kind::WorkloadAnswers,
) -> anyhow::Result<Option<GroupStart>> {
    let cells: Vec<Option<&CellResult>> = group.members.iter().map(|c| stored.get(&c.id())).collect();
    let pairings: Vec<Option<&CellPairing>> = cells.iter().map(|c| c.and_then(|r| r.pairing.as_ref())).collect();
    let stopped = |p: &Option<&CellPairing>| p.is_some_and(|p| p.stop.is_some_and(|s| s != PairStop::Interrupted));
    if pairings.iter().all(stopped) {
        return Ok(None);
    }
    let Some(reference) = pairings.iter().flatten().max_by_key(|p| p.pairs.len() + p.dropped.len()) else {
        return Ok(Some(GroupStart::fresh(rules)));
    };
    let bad = |why: String| anyhow::anyhow!("cannot resume pair group {}: {why}", group.key);
    if reference.seed != rules.seed {
        return Err(bad(format!("its cells ran with seed {}, this run with {}", reference.seed, rules.seed)));
    }
    let mut records = Vec::new();
    for slot in &reference.pairs {
        let mut values = Vec::new();
        for (arm, (cell, p)) in cells.iter().zip(&pairings).enumerate() {
            let round = p.and_then(|p| p.pairs.iter().find(|s| s.slot == slot.slot)).map(|s| s.round);
            let value = match (cell, round) {
                (Some(c), Some(round)) => answers.round_value(c, round),
                _ => Err("not stored".into()),
            };
            values.push(value.map_err(|e| bad(format!("pair {} of {}: {e}", slot.slot, group.members[arm].id())))?);
        }
        records.push(PairRecord {
            slot: slot.slot as usize,
            order: slot.order.clone(),
            values,
            common_load: slot.common_load,
        });
    }
    let last = reference.pairs.iter().map(|s| s.slot).chain(reference.dropped.iter().map(|d| d.slot)).max();
    // Dropping a slot spends the budget, so a group that dropped one has none left.
    let void_attempts = cells
        .iter()
        .flatten()
        .map(|c| next_round(c, answers.iterations_per_member()).saturating_sub(records.len() as u32))
        .max();
    let reruns_left =
        if reference.dropped.is_empty() { rules.max_reruns.saturating_sub(void_attempts.unwrap_or(0)) } else { 0 };
    Ok(Some(GroupStart {
        pairs: records,
        dropped: reference.dropped.clone(),
        next_slot: last.map_or(0, |s| s as usize + 1),
        reruns_left,
    }))
}

/// One line at a group's end: its pairs, the paired change of each candidate arm and why it
/// stopped. For `steps` the change the stop decided on is of the sum of a member's steps per
/// iteration, which no report shows beside the per-step rows: the line names it.
pub(super) fn group_line(group: &PairGroup, out: &pairs::PairGroupOutcome, rules: &PairRules, steps: bool) -> String {
    let alpha = crate::stats::paired::alpha_per_look(rules.min_pairs, rules.max_pairs);
    let baseline: Vec<f64> = out.pairs.iter().map(|p| p.values[0]).collect();
    let mut changes = Vec::new();
    for (arm, member) in group.members.iter().enumerate().skip(1) {
        let candidate: Vec<f64> = out.pairs.iter().map(|p| p.values[arm]).collect();
        let what = match crate::stats::paired::paired_change(&baseline, &candidate, alpha) {
            Some(c) if c.ci_low.is_finite() && c.ci_high.is_finite() => {
                format!("{:+.1}% [{:+.1}%, {:+.1}%]", c.mean * 100.0, c.ci_low * 100.0, c.ci_high * 100.0)
            }
            _ => "no interval".into(),
        };
        let of = if steps { " (sum of the steps per iteration)" } else { "" };
        changes.push(format!("{}{of}: {what}", crate::plan::axis_value(&member.params, &group_axis(group))));
    }
    let dropped = if out.dropped.is_empty() { String::new() } else { format!(", {} dropped", out.dropped.len()) };
    let stop = match out.stop {
        PairStop::Regressed => "regressed".to_string(),
        PairStop::Improved => "improved".into(),
        PairStop::Unchanged => "unchanged".into(),
        PairStop::MaxPairs => "undecided at max pairs".into(),
        PairStop::Interrupted => "interrupted".into(),
        PairStop::MemberFailed => format!("a member failed: {}", out.stop_reason.as_deref().unwrap_or("-")),
    };
    let decided = matches!(out.stop, PairStop::Regressed | PairStop::Improved | PairStop::Unchanged);
    let stop = if steps && decided { format!("{stop} on the step sum") } else { stop };
    format!(
        "pair group {}: {} pairs{dropped}; {}; stopped: {stop}",
        group.key,
        out.pairs.len(),
        if changes.is_empty() { "-".into() } else { changes.join(", ") }
    )
}

/// The arm axis of a group, read back from its members (the one axis they differ in).
fn group_axis(group: &PairGroup) -> String {
    let (a, b) = (&group.members[0].params, &group.members[1].params);
    let axes = ["fs", "layout", "quota", "tasks", "test", crate::scenario::KERNEL_ARMS];
    axes.iter().find(|ax| crate::plan::axis_value(a, ax) != crate::plan::axis_value(b, ax)).unwrap_or(&"fs").to_string()
}
