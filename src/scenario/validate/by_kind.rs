//! The one place validation turns on the workload kind: which room builds the spec of a
//! `workload.kind` ([`super::latfs`], [`super::steps`], [`super::fio`], [`super::ops`]), and what the rest
//! of the scenario may say about it. Validation sits below the workloads, so it answers
//! these from the spec here; the workloads answer everything after validation through
//! [`crate::workload::kind`]. A new kind adds its arm to each `match` of this file.

use std::path::Path;

use super::super::diagnose::Ctx;
use super::super::file::ScenarioFile;
use super::super::{ArchiveSpec, Backing, Matrix, ScenarioError, Workload};
use super::{validate_fio, validate_latfs, validate_steps};

/// The spec of `[workload]` for its `kind` (checked to be a known one before).
pub(super) fn workload(
    ctx: &Ctx,
    kind: &str,
    f: &ScenarioFile,
    backing: &Backing,
    base_dir: &Path,
    archive: Option<&ArchiveSpec>,
) -> Result<Workload, ScenarioError> {
    let w = &f.workload;
    if kind != "ops" {
        super::ops::reject_ops_keys(ctx, kind, w)?;
    }
    Ok(match kind {
        "lat_fs" => Workload::Latfs(validate_latfs(ctx, w)?),
        "fio" => Workload::Fio(validate_fio(ctx, w, base_dir)?),
        "ops" => {
            let ops = super::ops::validate_ops(ctx, w, &f.matrix, backing, base_dir)?;
            super::ops_inodes::inodes_fit(ctx, &ops, f, backing)?;
            Workload::Ops(ops)
        }
        _ => Workload::Steps(validate_steps(ctx, w, archive)?),
    })
}

/// The keys `[gate] thresholds` may name for this workload, and what such a key is.
pub(super) fn gate_keys<'a>(workload: &'a Workload, matrix: &'a Matrix) -> (Vec<&'a str>, &'static str) {
    match workload {
        Workload::Latfs(_) => (matrix.test.iter().map(|t| t.name()).collect(), "lat_fs test"),
        Workload::Steps(st) => (st.steps.iter().map(|s| s.op()).collect(), "step op"),
        Workload::Fio(_) => (crate::model::FIO_METRICS.to_vec(), "fio metric"),
        Workload::Ops(_) => (crate::model::OPS_METRICS.to_vec(), "ops metric"),
    }
}

/// Whether the workload reads the scenario's `[archive]`.
pub(super) fn reads_archive(workload: &Workload) -> bool {
    matches!(workload, Workload::Steps(_))
}

/// `workload.rounds`, for a kind that has rounds.
pub(super) fn rounds(workload: &Workload) -> Option<u32> {
    match workload {
        Workload::Latfs(l) => Some(l.rounds),
        Workload::Steps(_) | Workload::Fio(_) | Workload::Ops(_) => None,
    }
}

/// `workload.iterations` of a kind whose pair members each add that many iterations to
/// their cell (steps); `None` for a kind whose members are rounds.
pub(super) fn iterations_per_member(workload: &Workload) -> Option<u32> {
    match workload {
        Workload::Steps(st) => Some(st.iterations),
        Workload::Latfs(_) | Workload::Fio(_) | Workload::Ops(_) => None,
    }
}

impl Workload {
    /// `lat_fs`, `steps`, `fio` or `ops`.
    pub fn kind(&self) -> crate::model::WorkloadKind {
        match self {
            Workload::Latfs(_) => crate::model::WorkloadKind::LatFs,
            Workload::Steps(_) => crate::model::WorkloadKind::Steps,
            Workload::Fio(_) => crate::model::WorkloadKind::Fio,
            Workload::Ops(_) => crate::model::WorkloadKind::Ops,
        }
    }
}
