//! A cell's profiled repetition (`[workload] profile`): one more repetition of its
//! workload (one iteration of a steps cell) on the same filesystems and in the same
//! cgroup, after the timed ones, under the profiler. Its numbers are thrown away: a
//! profile never counts toward, nor disturbs, the statistics it explains. Once per cell
//! and run: later rounds and pair members of the cell are not profiled again.
//!
//! The mechanism is [`crate::profile`]; the workload says how it runs once
//! ([`crate::workload::kind::WorkloadAnswers::profiled_once`]); this file only runs it.

use std::collections::BTreeSet;
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
    /// Cells already profiled in this run (one profiled repetition per cell).
    pub(super) done: BTreeSet<String>,
}

/// Run the cell's profiled repetition into `r.profile`, when the scenario asks for one
/// and the cell has none yet in this run. `at` is the cell as its timed repetitions ran
/// it; its progress and monitors are left out of the profiled one. Never fails the cell:
/// a failure is its `not_profiled` reason.
pub(super) fn profile_cell(
    s: &Scenario,
    state: &mut ProfileState,
    workdir: &Path,
    at: &mut CellRun<'_>,
    r: &mut CellResult,
) {
    if s.profile.is_none() || !state.done.insert(at.params.id()) {
        return;
    }
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
        in_process: answers.runs_in_process(at.params.tasks, at.in_cgroup),
        offcpu: s.profile == Some(crate::model::ProfileMode::CpuOffcpu),
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
