//! A cell's profiled repetition (`[workload] profile`): one more repetition of its
//! workload (one iteration of a steps cell) on the same filesystems and in the same
//! cgroup, after the timed ones, under the profiler. Its numbers are thrown away: a
//! profile never counts toward, nor disturbs, the statistics it explains. Once per cell
//! and run: later rounds and pair members of the cell are not profiled again.
//!
//! The mechanism is [`crate::profile`]; this file only builds the one repetition.

use super::RunContext;
use super::progress::Phase;
use super::steps_stage::{StepsAt, run_steps};
use crate::model::CellResult;
use crate::plan::Cell;
use crate::provision::Provisioned;
use crate::scenario::{LatfsSpec, Workload};

/// Run the cell's profiled repetition into `r.profile`, when the scenario asks for one
/// and the cell has none yet in this run. Never fails the cell: a failure is its
/// `not_profiled` reason.
pub(super) fn profile_cell(
    ctx: &mut RunContext,
    cell: &Cell,
    provisioned: &Provisioned,
    latfs: Option<&LatfsSpec>,
    in_cgroup: bool,
    r: &mut CellResult,
    phase: &Phase,
) {
    if ctx.scenario.profile.is_none() || !ctx.profiled.insert(cell.params.id()) {
        return;
    }
    phase("profiled repetition (not counted)");
    let recorder = ctx.profiler.get_or_insert_with(|| crate::profile::detect(&crate::profile::Probe::host())).clone();
    let p = &cell.params;
    let in_process = matches!(ctx.scenario.workload, Workload::Steps(_)) && p.tasks <= 1 && !in_cgroup;
    let req = crate::profile::WindowRequest {
        recorder: &recorder,
        frequency_hz: crate::profile::DEFAULT_FREQUENCY_HZ,
        // Removed with the session; a directory of its own so that nothing is left in the run's.
        scratch: ctx.workdir.join(format!("profile-{}", p.id())),
        cell_id: p.id(),
        in_process,
    };
    let workload = ctx.scenario.workload.clone();
    let mut once = || -> anyhow::Result<()> {
        match (&workload, latfs) {
            (Workload::Latfs(_), Some(spec)) => {
                let mut one = spec.clone();
                (one.repetitions, one.noise.min_repetitions, one.noise.max_reruns, one.noise.disturbance) =
                    (1, 1, 0, None);
                let test = p.test.expect("lat_fs cells have a test");
                let run = crate::workload::latfs::LatfsRun {
                    test,
                    spec: &one,
                    task_dirs: provisioned.task_dirs(),
                    exe: &ctx.exe,
                };
                crate::workload::latfs::run_monitored(&run, None, &|_, _| {})?;
            }
            (Workload::Steps(spec), _) => {
                let mut one = spec.clone();
                (one.iterations, one.disturbance) = (1, None);
                let at = StepsAt {
                    target: provisioned.root(),
                    task_dirs: provisioned.task_dirs(),
                    tasks: p.tasks,
                    in_cgroup,
                };
                run_steps(ctx, &one, &at, None, &|_| {})?;
            }
            (Workload::Fio(spec), _) => {
                let mut one = spec.clone();
                (one.repetitions, one.disturbance) = (1, None);
                let run = crate::workload::fio::FioRun {
                    spec: &one,
                    task_dirs: provisioned.task_dirs(),
                    tasks: p.tasks,
                    sweeps: &p.fio,
                    out_dir: &ctx.workdir.join("fio").join(format!("{}-profiled", p.id())),
                };
                crate::workload::fio::run_monitored(&run, None, &|_, _| {})?;
            }
            (Workload::Latfs(_), None) => anyhow::bail!("no lat_fs options"),
        }
        Ok(())
    };
    let (profile, _) = crate::profile::record_window(&req, &mut once);
    // Also when perf never started (the session removes it otherwise).
    let _ = std::fs::remove_dir_all(&req.scratch);
    if let Some(why) = &profile.not_profiled {
        r.notes.push(format!("not profiled: {why}"));
    }
    r.profile = Some(profile);
}
