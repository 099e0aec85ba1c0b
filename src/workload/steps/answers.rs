//! What steps answer about themselves ([`crate::workload::kind`]), and a steps cell run:
//! one copy in this process, or one per task at once.

use std::time::Duration;

use crate::catalogue::Metric;
use crate::model::{CellResult, StepsResult};
use crate::scenario::{GateSpec, Step, StepsSpec};
use crate::workload::kind::{CellRun, KindAnswers, StepsKind, WorkloadAnswers};
use crate::workload::untar::{Trust, UnpackLimits};

impl KindAnswers for StepsKind {
    fn default_metric(&self) -> Metric {
        Metric::Elapsed
    }

    fn metric(&self, requested: Option<&str>) -> Result<Metric, &'static str> {
        match requested {
            None | Some("elapsed") => Ok(Metric::Elapsed),
            Some(_) => Err("elapsed"),
        }
    }
}

impl WorkloadAnswers for StepsSpec {
    fn kind(&self) -> &'static dyn KindAnswers {
        &StepsKind
    }

    /// Steps have no fixed length; seed 002's kernel untar takes seconds per step.
    fn cell_estimate(&self) -> Duration {
        Duration::from_secs(2) * (self.steps.len() as u32) * self.iterations
    }

    fn guest_cell_work(&self) -> Duration {
        Duration::from_secs(120)
    }

    /// A member is a whole run of `workload.iterations`.
    fn iterations_per_member(&self) -> Option<u32> {
        Some(self.iterations)
    }

    fn member_value(&self, r: &CellResult) -> Result<crate::workload::kind::Member, String> {
        super::member::member_value(r)
    }

    fn round_value(&self, r: &CellResult, round: u32) -> Result<f64, String> {
        super::member::round_value(r, round, self.iterations)
    }

    /// The scenario's own threshold: a member is a whole iteration, not one step.
    fn pair_threshold(&self, gate: &GateSpec, _baseline: &crate::model::CellParams) -> f64 {
        gate.threshold
    }

    fn kernel_pairs_refused(&self) -> Option<&'static str> {
        Some(
            "--paired with --kernel and a steps workload: kernel-paired steps runs are not executed yet; \
             pair the steps on one kernel ([compare] arms on a matrix axis) or run the kernels unpaired",
        )
    }

    fn add_needs(&self, needs: &mut Vec<String>, _dir_backing: bool) {
        if self.steps.iter().any(|x| matches!(x, Step::DropCaches)) && !needs.iter().any(|n| n == "root") {
            needs.push("root (drop_caches)".into());
        }
        if self.steps.iter().any(|x| matches!(x, Step::Exec { .. })) {
            needs.push("exec".into());
        }
    }

    fn commands(&self) -> Vec<String> {
        self.steps.iter().filter(|x| matches!(x, Step::Exec { .. })).map(Step::label).collect()
    }

    fn guest_tools(&self) -> Vec<String> {
        self.steps
            .iter()
            .filter_map(|step| match step {
                Step::Exec { argv } => argv.first().cloned(),
                _ => None,
            })
            .collect()
    }

    fn profiled_once(&self) -> Option<crate::scenario::Workload> {
        let mut one = self.clone();
        (one.iterations, one.disturbance) = (1, None);
        Some(crate::scenario::Workload::Steps(one))
    }

    fn runs_in_process(&self, tasks: u32, in_cgroup: bool) -> bool {
        // As `run_steps` decides: one copy without a cgroup runs in this process.
        tasks <= 1 && !in_cgroup
    }

    fn run_cell(&self, at: &mut CellRun<'_>, r: &mut CellResult) -> anyhow::Result<()> {
        let res = run_steps(self, at)?;
        // Said where the numbers are stored, so every report of the cell carries it too.
        r.notes.extend(super::loop_warnings::loop_warnings(&res.iterations));
        r.steps = Some(res);
        Ok(())
    }
}

/// Run a steps cell's steps with its archive staged: one copy in this process, or with
/// `tasks > 1` one process per copy, all at once. A cell with a cgroup runs even its one
/// copy as a process, so that the group limits the copy and not fsbench.
fn run_steps(spec: &StepsSpec, at: &mut CellRun<'_>) -> anyhow::Result<StepsResult> {
    let tasks = at.params.tasks;
    let (target, task_dirs) = (at.target, at.task_dirs);
    if tasks > 1 || at.in_cgroup {
        // N copies at once, each in its own directory (S) or filesystem (M), each with its
        // own tarball on it when the archive lives on the filesystem under test.
        let mut archive_dirs = Vec::with_capacity(task_dirs.len());
        for d in task_dirs {
            archive_dirs.push((at.stage_archive)(d)?.unwrap_or_else(|| d.clone()));
        }
        let run = super::tasks::TasksRun {
            spec,
            targets: task_dirs,
            archive_dirs: &archive_dirs,
            untrusted: at.untrusted_archive,
            exe: at.exe,
            watch: at.watch,
        };
        // Each copy is a process of its own; progress says how many run, not their steps.
        (at.phase)(&if tasks > 1 {
            format!("{tasks} copies at once, {} iterations each", spec.iterations)
        } else {
            format!("one copy in the cell's cgroup, {} iterations", spec.iterations)
        });
        let mut res = super::tasks::run(&run)?;
        // One copy in a worker (the cell's cgroup) is the cell itself: stored as an
        // in-process copy is, with its own timings and counters and no list of copies.
        if tasks <= 1
            && let [copy] = res.copies.as_mut_slice()
        {
            res.iterations = std::mem::take(&mut copy.iterations);
            res.copies.clear();
        }
        return Ok(res);
    }
    let archive_dir = (at.stage_archive)(target)?;
    let trust = if at.untrusted_archive { Trust::Untrusted(UnpackLimits::default()) } else { Trust::Own };
    let run = super::StepsRun {
        spec,
        target,
        archive_dir: archive_dir.as_deref().unwrap_or(target),
        cancel: at.cancel,
        trust: &trust,
        run_root: std::process::id(),
    };
    let phase = at.phase;
    Ok(super::run_monitored(&run, at.watch, &|i, n, label| phase(&format!("iteration {i}/{n}: {label}")))?)
}
