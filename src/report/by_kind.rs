//! Which report renders a workload kind: the one place a report turns on the workload
//! (each kind's report is its own room, `latfs/`, `steps/`, `fio/`, `ops/`). A new kind adds its
//! arm here, beside its answers in [`crate::workload::kind`].

use super::{CompareOptions, WorkloadReport, fio, latfs, ops, steps};
use crate::model::WorkloadKind;
use crate::results::LoadedRun;

/// The one place a report turns on the workload: the first run's (a comparison refuses mixed ones).
/// With `compare`, ratios to the first label (lat_fs) or the side-by-side tables (steps).
pub(super) fn body<'a>(
    runs: &'a [(&'a str, &'a LoadedRun)],
    compare: Option<&CompareOptions>,
) -> Box<dyn WorkloadReport + 'a> {
    match runs.first().map(|(_, r)| r.meta.workload).unwrap_or_default() {
        WorkloadKind::LatFs => Box::new(latfs::LatfsReport::build(runs, compare)),
        WorkloadKind::Steps => Box::new(steps::StepsReport::build(runs, compare)),
        WorkloadKind::Fio => Box::new(fio::FioReport::build(runs, compare)),
        WorkloadKind::Ops => Box::new(ops::OpsReport::build(runs, compare)),
    }
}
