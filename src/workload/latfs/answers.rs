//! What lat_fs answers about itself ([`crate::workload::kind`]).

use std::time::Duration;

use anyhow::Context;

use super::notes::noise_notes;
use crate::catalogue::Metric;
use crate::model::{CellParams, CellResult, CellStatus, LatfsTest, SkipReason};
use crate::monitor::latency::Percentile;
use crate::scenario::{GateSpec, LatfsSpec};
use crate::workload::kind::{CellRun, KindAnswers, LatfsKind, WorkloadAnswers};

impl KindAnswers for LatfsKind {
    fn default_metric(&self) -> Metric {
        Metric::TotalLoops
    }

    fn metric(&self, requested: Option<&str>) -> Result<Metric, &'static str> {
        match requested {
            None | Some("total_loops") => Ok(Metric::TotalLoops),
            Some(m) => Percentile::parse(m).map(Metric::Latency).ok_or("total_loops, or p50, p90, p99, p99.9, max"),
        }
    }

    fn paired_metrics(&self) -> Vec<Metric> {
        let latency = [Percentile::P50, Percentile::P90, Percentile::P99].map(Metric::Latency);
        std::iter::once(Metric::TotalLoops).chain(latency).collect()
    }
}

/// The per-task uids, lmbench `-U`'s spacing from a base no user, group or process of
/// this host holds ([`crate::host::task_uids`]).
pub fn task_uids(tasks: u32) -> Vec<u32> {
    crate::host::task_uids::task_uids(tasks)
}

impl WorkloadAnswers for LatfsSpec {
    fn kind(&self) -> &'static dyn KindAnswers {
        &LatfsKind
    }

    fn rounds(&self) -> Option<u32> {
        Some(self.rounds)
    }

    fn cell_estimate(&self) -> Duration {
        ((self.warmup + self.duration) * self.repetitions + Duration::from_millis(200)) * self.rounds.max(1)
    }

    fn guest_cell_work(&self) -> Duration {
        (self.warmup + self.duration) * self.repetitions
    }

    fn pair_reruns(&self) -> u32 {
        self.noise.max_reruns
    }

    fn member_value(&self, r: &CellResult) -> Result<crate::workload::kind::Member, String> {
        super::member::member_value(r)
    }

    fn round_value(&self, r: &CellResult, round: u32) -> Result<f64, String> {
        super::member::round_value(r, round)
    }

    /// The threshold of the baseline member's test.
    fn pair_threshold(&self, gate: &GateSpec, baseline: &CellParams) -> f64 {
        baseline.test.map_or(gate.threshold, |t| gate.threshold_for(t.name()))
    }

    fn add_needs(&self, needs: &mut Vec<String>, dir_backing: bool) {
        if self.per_task_uid && dir_backing {
            needs.push("root for per-task uid (else runs as you)".into());
        }
    }

    fn cannot_run(&self, p: &CellParams, root: bool) -> Option<SkipReason> {
        (p.test == Some(LatfsTest::Chown) && !root).then(|| SkipReason {
            reason: "the chown loop fchowns to uid+1, which needs root (CAP_CHOWN)".into(),
            remedy: Some("run as root, or leave chown out with --only test=...".into()),
        })
    }

    fn task_uids(&self, tasks: u32, as_root: bool, notes: &mut Vec<String>) -> Option<Vec<u32>> {
        if self.per_task_uid && !as_root {
            notes.push("per_task_uid needs root: tasks ran as the invoking user".into());
        }
        (self.per_task_uid && as_root).then(|| task_uids(tasks))
    }

    fn warmup(&self) -> Duration {
        self.warmup
    }

    fn profiled_once(&self) -> Option<crate::scenario::Workload> {
        let mut one = self.clone();
        (one.repetitions, one.noise.min_repetitions, one.noise.max_reruns, one.noise.disturbance) = (1, 1, 0, None);
        Some(crate::scenario::Workload::Latfs(one))
    }

    fn pair_member(&self) -> Option<crate::scenario::Workload> {
        let mut member = self.clone();
        member.noise.pair_member = true;
        Some(crate::scenario::Workload::Latfs(member))
    }

    fn run_cell(&self, at: &mut CellRun<'_>, r: &mut CellResult) -> anyhow::Result<()> {
        let spec = LatfsSpec { per_task_uid: self.per_task_uid && at.as_root, ..self.clone() };
        let test = at.params.test.context("a lat_fs cell without a test")?;
        let run = super::LatfsRun { test, spec: &spec, task_dirs: at.task_dirs, exe: at.exe };
        let phase = at.phase;
        let res = super::run_monitored(&run, at.watch, &|i, n| phase(&format!("repetition {i}/{n}")))?;
        r.notes.extend(noise_notes(&res));
        if res.total_loops.n == 0 && !res.repetitions.is_empty() {
            r.status = CellStatus::Disturbed;
        }
        r.latfs = Some(res);
        Ok(())
    }
}
