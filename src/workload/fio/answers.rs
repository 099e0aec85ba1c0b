//! What fio answers about itself ([`crate::workload::kind`]).

use std::time::Duration;

use crate::catalogue::Metric;
use crate::model::{CellParams, CellResult, CellStatus, FIO_METRICS, FioMetric, SkipReason};
use crate::scenario::{FioJob, FioSpec};
use crate::workload::kind::{CellRun, FioKind, KindAnswers, WorkloadAnswers};

impl KindAnswers for FioKind {
    fn default_metric(&self) -> Metric {
        Metric::Fio(FioMetric::Iops)
    }

    fn metric(&self, requested: Option<&str>) -> Result<Metric, &'static str> {
        match requested {
            None => Ok(self.default_metric()),
            Some(m) => FioMetric::parse(m).map(Metric::Fio).ok_or("iops, bw, p99, clat_mean"),
        }
    }

    fn paired_metrics(&self) -> Vec<Metric> {
        FIO_METRICS.iter().filter_map(|n| FioMetric::parse(n)).map(Metric::Fio).collect()
    }
}

impl WorkloadAnswers for FioSpec {
    fn kind(&self) -> &'static dyn KindAnswers {
        &FioKind
    }

    /// fio lays its files out before the timed part: a second is a fair guess for small jobs.
    fn cell_estimate(&self) -> Duration {
        (self.duration + self.warmup.unwrap_or_default() + Duration::from_secs(1)) * self.repetitions
    }

    fn guest_cell_work(&self) -> Duration {
        (self.duration + self.warmup.unwrap_or_default() + Duration::from_secs(5)) * self.repetitions
    }

    fn member_value(&self, r: &CellResult) -> Result<crate::workload::kind::Member, String> {
        super::member_value(r)
    }

    fn round_value(&self, r: &CellResult, round: u32) -> Result<f64, String> {
        super::round_value(r, round)
    }

    fn add_needs(&self, needs: &mut Vec<String>, _dir_backing: bool) {
        needs.push("fio".into());
    }

    fn cannot_run(&self, _p: &CellParams, _root: bool) -> Option<SkipReason> {
        super::fio_version().is_none().then(super::check::fio_missing)
    }

    /// fio runs as the guest's worker; its ioengines beyond the built-in ones are plugins
    /// it loads at run time, which the guest does not get (a job naming one fails its cell).
    fn guest_tools(&self) -> Vec<String> {
        vec![super::FIO.into()]
    }

    fn job(&self) -> Option<&FioJob> {
        Some(&self.job)
    }

    fn warmup(&self) -> Duration {
        self.warmup.unwrap_or_default()
    }

    fn pair_reruns(&self) -> u32 {
        self.max_reruns
    }

    fn pair_member(&self) -> Option<crate::scenario::Workload> {
        let mut member = self.clone();
        member.pair_member = true;
        Some(crate::scenario::Workload::Fio(member))
    }

    fn profiled_once(&self) -> Option<crate::scenario::Workload> {
        let mut one = self.clone();
        (one.repetitions, one.disturbance, one.max_reruns) = (1, None, 0);
        Some(crate::scenario::Workload::Fio(one))
    }

    fn run_cell(&self, at: &mut CellRun<'_>, r: &mut CellResult) -> anyhow::Result<()> {
        let run = super::FioRun {
            spec: self,
            task_dirs: at.task_dirs,
            tasks: at.params.tasks,
            sweeps: &at.params.fio,
            out_dir: &at.scratch,
        };
        let phase = at.phase;
        let res = super::run_monitored(&run, at.watch, &|i, n| phase(&format!("repetition {i}/{n}")))?;
        r.notes.extend(super::noise_notes(&res));
        // A cell whose every repetition was disturbed has no statistics.
        if res.iops.n == 0 && !res.repetitions.is_empty() {
            r.status = CellStatus::Disturbed;
        }
        r.fio = Some(res);
        Ok(())
    }
}
