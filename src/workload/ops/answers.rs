//! What an op mix answers about itself ([`crate::workload::kind`]), and how its cell runs:
//! one [`super::run`] per repetition in the cell's first task directory, each judged for
//! disturbance and read around by the cell's counters.

use std::time::Duration;

use super::spec::OpsWorkload;
use crate::catalogue::Metric;
use crate::model::{CellResult, CellStatus, OPS_METRICS, OpsMetric, OpsRepetition, OpsResult};
use crate::workload::kind::{CellRun, KindAnswers, OpsKind, WorkloadAnswers};

impl KindAnswers for OpsKind {
    fn default_metric(&self) -> Metric {
        Metric::Ops(OpsMetric::Ops)
    }

    fn metric(&self, requested: Option<&str>) -> Result<Metric, &'static str> {
        match requested {
            None => Ok(self.default_metric()),
            Some(m) => OpsMetric::parse(m).map(Metric::Ops).ok_or("ops, p99, mbps"),
        }
    }

    fn paired_metrics(&self) -> Vec<Metric> {
        OPS_METRICS.iter().filter_map(|n| OpsMetric::parse(n)).map(Metric::Ops).collect()
    }
}

/// Rough cost of building the filesets: 20 µs per file plus the bytes at 500 MB/s.
fn build_estimate(w: &OpsWorkload) -> Duration {
    let files: u64 = w.spec.filesets.iter().map(|f| f.entries * f.prealloc_percent as u64 / 100).sum();
    let (bytes, _) = w.fileset_bytes();
    Duration::from_secs_f64(files as f64 * 20e-6 + bytes / 500e6)
}

/// A window: its duration, or a guess of a second when it stops on loops alone.
fn window(w: &OpsWorkload) -> Duration {
    w.spec.stop.duration.unwrap_or(Duration::from_secs(1))
}

impl WorkloadAnswers for OpsWorkload {
    fn kind(&self) -> &'static dyn KindAnswers {
        &OpsKind
    }

    fn cell_estimate(&self) -> Duration {
        (window(self) + build_estimate(self)) * self.repetitions
    }

    fn guest_cell_work(&self) -> Duration {
        (window(self) + build_estimate(self) * 4 + Duration::from_secs(5)) * self.repetitions
    }

    fn member_value(&self, r: &CellResult) -> Result<crate::workload::kind::Member, String> {
        r.measured()?;
        let Some(o) = &r.ops else { return Err("no op-mix figures".into()) };
        let value = reps_value(o.repetitions.iter())?;
        let load = crate::host::pair_load::MemberLoad::of(o.repetitions.iter().filter_map(|x| x.disturbance.as_ref()));
        Ok(crate::workload::kind::Member { value, loads: vec![load] })
    }

    fn round_value(&self, r: &CellResult, round: u32) -> Result<f64, String> {
        let Some(o) = &r.ops else { return Err("no op-mix figures".into()) };
        reps_value(o.repetitions.iter().filter(|x| x.round == round))
    }

    fn profiled_once(&self) -> Option<crate::scenario::Workload> {
        let mut one = self.clone();
        (one.repetitions, one.disturbance) = (1, None);
        Some(crate::scenario::Workload::Ops(one))
    }

    /// The op mix's workers are threads of fsbench...
    fn runs_in_process(&self, _tasks: u32, _in_cgroup: bool) -> bool {
        true
    }

    /// ...named `ops-N` ([`super::run`]): the supervising thread is left out.
    fn worker_threads(&self) -> Option<&'static str> {
        Some(super::WORKER_THREAD_PREFIX)
    }

    fn run_cell(&self, at: &mut CellRun<'_>, r: &mut CellResult) -> anyhow::Result<()> {
        let dir = at.task_dirs.first().map(|d| d.as_path()).unwrap_or(at.target);
        let mut res = OpsResult::default();
        let n = self.repetitions;
        for i in 0..n {
            (at.phase)(&format!("repetition {}/{n}", i + 1));
            let workers: u32 = self.spec.groups.iter().map(|g| g.threads).sum();
            let judge = self.disturbance.map(|t| (t, crate::host::cpu::Window::start(std::process::id())));
            let before = at.watch.map(crate::monitor::Watch::snapshot);
            let w = super::run(dir, &self.spec, i, at.cancel)?;
            let mut rep = w.repetition;
            rep.counters = at.watch.zip(before).map(|(wa, b)| b.delta(&wa.snapshot()));
            rep.disturbance = judge.and_then(|(t, win)| win.finish(t, workers.min(host_cpus())));
            if i == 0 {
                res.filesets = w.filesets;
            }
            res.repetitions.push(rep);
        }
        if (self.scale - 1.0).abs() > f64::EPSILON {
            r.notes.push(format!("filesets scaled by {} (workload.scale)", self.scale));
        }
        let disturbed = res.repetitions.iter().filter(|x| !x.counts()).count();
        if disturbed > 0 {
            r.notes.push(format!(
                "{disturbed} of {} repetitions disturbed by other processes (kept, left out of statistics)",
                res.repetitions.len()
            ));
        }
        summarise(&mut res);
        if res.ops_per_s.n == 0 && !res.repetitions.is_empty() {
            r.status = CellStatus::Disturbed;
        }
        r.ops = Some(res);
        Ok(())
    }
}

fn host_cpus() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

/// The mean ops/s of `reps`, or why they make no member value.
pub fn reps_value<'r>(reps: impl Iterator<Item = &'r OpsRepetition>) -> Result<f64, String> {
    let v: Vec<f64> = reps.map(|x| x.total.ops_per_s).collect();
    if v.is_empty() {
        return Err("no op-mix repetitions".into());
    }
    Ok(v.iter().sum::<f64>() / v.len() as f64)
}

/// The cell's statistics over its undisturbed repetitions.
pub fn summarise(r: &mut OpsResult) {
    let of = |m: OpsMetric| -> Vec<f64> { r.repetitions.iter().filter(|x| x.counts()).map(|x| m.of(x)).collect() };
    r.ops_per_s = crate::stats::summarize(&of(OpsMetric::Ops));
    r.p99_us = crate::stats::summarize(&of(OpsMetric::P99));
    r.mb_per_s = crate::stats::summarize(&of(OpsMetric::Mbps));
}

/// `next`'s repetitions as round `round` of `earlier` (a paired run's next member
/// measurement), with the statistics over all of them.
pub fn absorb_round(earlier: OpsResult, next: OpsResult, round: u32) -> OpsResult {
    let mut r = earlier;
    r.repetitions.extend(next.repetitions.into_iter().map(|x| OpsRepetition { round, ..x }));
    if r.filesets.is_empty() {
        r.filesets = next.filesets;
    }
    summarise(&mut r);
    r
}
