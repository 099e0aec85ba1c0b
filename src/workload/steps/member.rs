//! A steps run as one member of a pair (`[compare] arms` with a steps workload): its value
//! for the sequential stop, its iterations appended to its cell, and a stored member read
//! back out of the cell.
//!
//! Steps record no round: member `r` of a cell is its iterations `r·I .. (r+1)·I`, `I` the
//! scenario's `workload.iterations` (every member runs all of them, or fails and adds
//! none). The paired reader (`report::paired`) slices them the same way.

use crate::host::pair_load::MemberLoad;
use crate::model::{CellResult, StepTiming, StepsResult};
use crate::workload::kind::Member;

/// A steps member's value for the sequential stop (lower is better): the mean over its
/// iterations of the summed elapsed seconds of the iteration's steps, disturbed ones
/// included, with the load each step saw over the iterations (the pair is judged step by
/// step: one disturbed step does not void the others, `host::pair_load::pair_loads`). A
/// failed or skipped member, or one without iterations, voids its pair.
pub fn member_value(r: &CellResult) -> Result<Member, String> {
    r.measured()?;
    let Some(s) = &r.steps else { return Err("no steps timings".into()) };
    let value = iterations_value(&s.iterations)?;
    let width = s.iterations.iter().map(Vec::len).max().unwrap_or(0);
    let loads = (0..width)
        .map(|j| MemberLoad::of(s.iterations.iter().filter_map(|it| it.get(j)?.disturbance.as_ref())))
        .collect();
    Ok(Member { value, loads })
}

/// The value member `round` of a stored steps cell had (its `per` iterations from
/// `round · per`), as [`member_value`] computed it (a resumed paired run's pairs).
pub fn round_value(r: &CellResult, round: u32, per: u32) -> Result<f64, String> {
    let Some(s) = &r.steps else { return Err("no steps timings".into()) };
    let (from, to) = (round as usize * per as usize, (round as usize + 1) * per as usize);
    let Some(its) = s.iterations.get(from..to).filter(|_| per > 0) else {
        return Err(format!("member {round} ({per} iterations each) is not among the cell's {}", s.iterations.len()));
    };
    iterations_value(its)
}

/// The mean summed elapsed seconds per iteration, or why the iterations make no value.
fn iterations_value(its: &[Vec<StepTiming>]) -> Result<f64, String> {
    if its.is_empty() {
        return Err("no iterations".into());
    }
    let mut total_us = 0u64;
    for t in its.iter().flatten() {
        total_us = total_us.saturating_add(t.elapsed_us);
    }
    if total_us == 0 {
        return Err("no elapsed time measured (0 µs): no ratio".into());
    }
    Ok(total_us as f64 / 1e6 / its.len() as f64)
}

/// The member `next` appended to what its cell holds: its iterations after the earlier
/// ones (each copy's after the same copy's, with `tasks > 1`). The cell keeps its first
/// member's timeline; later members' steps lose their `start_ms`, which is on a timeline
/// of their own that is not kept.
pub fn absorb(earlier: StepsResult, next: StepsResult) -> StepsResult {
    let mut r = earlier;
    let off_timeline = |its: Vec<Vec<StepTiming>>| {
        its.into_iter().map(|it| it.into_iter().map(|t| StepTiming { start_ms: None, ..t }).collect::<Vec<_>>())
    };
    let keep_times = r.timeline.is_none();
    if keep_times {
        // No earlier timeline to be wrong about: the next one is the cell's.
        r.timeline = next.timeline;
        r.iterations.extend(next.iterations);
    } else {
        r.iterations.extend(off_timeline(next.iterations));
    }
    for copy in next.copies {
        let its: Vec<Vec<StepTiming>> =
            if keep_times { copy.iterations } else { off_timeline(copy.iterations).collect() };
        match r.copies.iter_mut().find(|c| c.task == copy.task) {
            Some(c) => {
                c.iterations.extend(its);
                c.finished_unix_us = copy.finished_unix_us;
            }
            None => r.copies.push(crate::model::StepsCopy { iterations: its, ..copy }),
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CellStatus, Disturbance};

    fn step(op: &str, elapsed_us: u64) -> StepTiming {
        StepTiming { label: op.into(), op: op.into(), elapsed_us, start_ms: Some(5), ..StepTiming::default() }
    }

    fn cell(its: Vec<Vec<StepTiming>>) -> CellResult {
        let params = crate::model::CellParams {
            fs: "ext4".into(),
            layout: crate::model::Layout::S,
            quota: crate::model::QuotaMode::Off,
            tasks: 1,
            test: None,
            fio: Default::default(),
            kernel: None,
        };
        CellResult {
            steps: Some(StepsResult { iterations: its, ..StepsResult::default() }),
            ..CellResult::new(&params, CellStatus::Ok, "")
        }
    }

    #[test]
    fn a_member_is_its_mean_iteration_time_and_a_stored_one_its_slice() {
        let its = vec![vec![step("untar", 1_000_000), step("sync", 500_000)], vec![step("untar", 2_000_000)]];
        assert_eq!(
            member_value(&cell(its.clone())).map(|m| (m.value, m.loads.iter().any(|l| l.disturbed))),
            Ok((1.75, false))
        );
        // A disturbed step is the pair's business (`host::pair_load`): the value keeps it.
        let mut disturbed = its.clone();
        disturbed[1][0].disturbance = Some(Disturbance { disturbed: true, ..Disturbance::default() });
        assert_eq!(member_value(&cell(disturbed)).map(|m| (m.value, m.loads[0].disturbed)), Ok((1.75, true)));
        let mut failed = cell(its.clone());
        failed.status = CellStatus::Failed;
        failed.error = Some("`false` exited with exit status: 1".into());
        assert_eq!(member_value(&failed).map(|m| m.value), Err("failed: `false` exited with exit status: 1".into()));
        // Two members of one iteration each: member 1 is the second iteration.
        let stored = cell(its);
        assert_eq!(round_value(&stored, 0, 1), Ok(1.5));
        assert_eq!(round_value(&stored, 1, 1), Ok(2.0));
        assert!(round_value(&stored, 2, 1).unwrap_err().contains("not among the cell's 2"));
        assert!(round_value(&stored, 0, 0).is_err());
        assert!(member_value(&cell(vec![vec![step("sync", 0)]])).is_err());
    }

    #[test]
    fn absorbing_appends_iterations_and_keeps_the_first_timeline() {
        let first = StepsResult {
            iterations: vec![vec![step("sync", 10)]],
            timeline: Some(crate::model::Timeline { interval_ms: 100, ..Default::default() }),
            ..StepsResult::default()
        };
        let next = StepsResult {
            iterations: vec![vec![step("sync", 20)], vec![step("sync", 30)]],
            timeline: Some(crate::model::Timeline { interval_ms: 200, ..Default::default() }),
            ..StepsResult::default()
        };
        let r = absorb(first, next);
        let e: Vec<u64> = r.iterations.iter().map(|it| it[0].elapsed_us).collect();
        assert_eq!(e, [10, 20, 30]);
        assert_eq!(r.timeline.as_ref().map(|t| t.interval_ms), Some(100));
        let starts: Vec<Option<u64>> = r.iterations.iter().map(|it| it[0].start_ms).collect();
        assert_eq!(starts, [Some(5), None, None]);
        // Copies: each task's iterations after its own.
        let copy = |task, e, fin| crate::model::StepsCopy {
            task,
            started_unix_us: 1,
            finished_unix_us: fin,
            iterations: vec![vec![step("sync", e)]],
        };
        let a = StepsResult { copies: vec![copy(0, 1, 10), copy(1, 2, 11)], ..StepsResult::default() };
        let b = StepsResult { copies: vec![copy(1, 4, 21), copy(0, 3, 20)], ..StepsResult::default() };
        let r = absorb(a, b);
        let c0: Vec<u64> = r.copies[0].iterations.iter().map(|it| it[0].elapsed_us).collect();
        assert_eq!((c0, r.copies[0].finished_unix_us, r.copies.len()), (vec![1, 3], 20, 2));
    }
}
