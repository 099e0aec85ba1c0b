//! A cell's profiled repetition (`[workload] profile`): one more repetition of its
//! workload (one iteration of a steps cell) on the same filesystems and in the same
//! cgroup, after the timed ones, under the profiler. Its numbers are thrown away: a
//! profile never counts toward, nor disturbs, the statistics it explains. Once per cell
//! and run (later rounds are not profiled again), except in a paired run: there each of
//! the first [`crate::profile::PROFILED_PAIRS`] members of a cell is profiled after its
//! timed member, so the arms of a group have one profile per pair, taken in the pair
//! schedule's ABBA order, and the profile diff can judge a function's change across pairs.
//!
//! The mechanism is [`crate::profile`]; the workload says how it runs once
//! ([`crate::workload::kind::WorkloadAnswers::profiled_once`]); this file only runs it.

use std::collections::BTreeMap;
use std::path::Path;

use crate::model::{CellResult, CellStatus};
use crate::scenario::Scenario;
use crate::workload::kind::CellRun;

/// What the run keeps between cells for profiling: the recorder (found by the first cell
/// that profiles) and the cells already profiled.
#[derive(Default)]
pub(super) struct ProfileState {
    /// The profiler, or why this host has none.
    pub(super) recorder: Option<Result<crate::profile::Recorder, String>>,
    /// Profiled repetitions per cell so far in this run.
    pub(super) done: BTreeMap<String, u32>,
}

impl ProfileState {
    /// The state of a resumed run: each stored cell's profiles count as done, so its next
    /// pair member is profiled under the next pair index (not 0 again, overwriting the
    /// first pair's profile), and a cell profiled once is not profiled again.
    pub(super) fn resumed(stored: &BTreeMap<String, CellResult>) -> ProfileState {
        let done = stored
            .iter()
            .filter_map(|(id, c)| {
                let profiles: Vec<_> = c.profile.iter().chain(&c.pair_profiles).collect();
                let next = profiles.iter().filter_map(|p| p.pair).max().map_or(profiles.len() as u32, |k| k + 1);
                (next > 0).then(|| (id.clone(), next.max(profiles.len() as u32)))
            })
            .collect();
        ProfileState { recorder: None, done }
    }
}

/// Run the cell's profiled repetition into `r.profile`, when the scenario asks for one
/// and the cell has none yet in this run (a pair `member`: fewer than
/// [`crate::profile::PROFILED_PAIRS`]). `at` is the cell as its timed repetitions ran it;
/// its progress and monitors are left out of the profiled one. Never fails the cell: a
/// failure is its `not_profiled` reason.
pub(super) fn profile_cell(
    s: &Scenario,
    state: &mut ProfileState,
    workdir: &Path,
    member: bool,
    at: &mut CellRun<'_>,
    r: &mut CellResult,
) {
    let most = if member { crate::profile::PROFILED_PAIRS } else { 1 };
    let done = state.done.entry(at.params.id()).or_default();
    if s.profile.is_none() || *done >= most {
        return;
    }
    let pair = member.then_some(*done);
    *done += 1;
    let answers = crate::workload::kind::of(&s.workload);
    let Some(once) = answers.profiled_once() else { return };
    (at.phase)("profiled repetition (not counted)");
    let recorder = state.recorder.get_or_insert_with(|| crate::profile::detect(&crate::profile::Probe::host())).clone();
    let id = at.params.id();
    let req = crate::profile::WindowRequest {
        recorder: &recorder,
        frequency_hz: crate::profile::DEFAULT_FREQUENCY_HZ,
        // Removed with the session; a directory of its own so that nothing is left in the run's.
        scratch: workdir.join(format!("profile-{id}")),
        cell_id: id.clone(),
        pair,
        in_process: answers.runs_in_process(at.params.tasks, at.in_cgroup),
        offcpu: s.profile.is_some_and(|m| m.offcpu()),
        kthreads: s.profile.is_some_and(|m| m.kthreads()),
        threads: answers.worker_threads(),
    };
    // The profiled repetition's own scratch, monitors off, progress quiet.
    let (scratch, watch, phase) = (at.scratch.clone(), at.watch.take(), at.phase);
    at.scratch = workdir.join(format!("profiled-{id}"));
    at.phase = &|_| {};
    let mut thrown_away = CellResult::new(at.params, CellStatus::Ok, &r.started);
    let mut run = || crate::workload::kind::of(&once).run_cell(at, &mut thrown_away);
    let (profile, _) = crate::profile::record_window(&req, &mut run);
    let _ = std::fs::remove_dir_all(workdir.join(format!("profiled-{id}")));
    (at.scratch, at.watch, at.phase) = (scratch, watch, phase);
    // Also when perf never started (the session removes it otherwise).
    let _ = std::fs::remove_dir_all(&req.scratch);
    if let Some(why) = &profile.not_profiled {
        r.notes.push(format!("not profiled: {why}"));
    }
    r.profile = Some(profile);
}
