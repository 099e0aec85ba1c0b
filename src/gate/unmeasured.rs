//! Planned cells a run never stored (it was interrupted, or a cell file is gone): each is a
//! `missing` row, so no gate passes over a cell it did not see. New users' report, round
//! three: Ctrl-C 20 s into a paired run, then `gate RUN` said one row, `0 missing`, rc 0,
//! and so did `gate --history` of that run.

use super::{GateRow, Metric, Verdict};
use crate::results::LoadedRun;
use crate::scenario::GateSpec;
use crate::stats::summarize;

/// A `missing` row for each cell `run` planned but did not store, unless `rows` already
/// has one of its name; and a warning naming how many, when there are any.
pub fn unmeasured_rows(
    run: &LoadedRun,
    side: &str,
    metric: Metric,
    spec: &GateSpec,
    rows: &[GateRow],
    warnings: &mut Vec<String>,
) -> Vec<GateRow> {
    let stored: std::collections::BTreeSet<String> =
        run.cells.iter().flat_map(|c| [c.id.clone(), c.params.id()]).collect();
    let why = if run.meta.interrupted {
        format!("{side}: not measured: the run was interrupted before this cell")
    } else {
        format!("{side}: planned but not stored in the run")
    };
    let out: Vec<GateRow> = run
        .meta
        .planned_cells
        .iter()
        .map(|p| p.id())
        .filter(|id| !stored.contains(id) && !rows.iter().any(|r| r.name == *id))
        .map(|id| GateRow {
            name: id,
            metric,
            key: String::new(),
            threshold: spec.threshold,
            baseline: summarize(&[]),
            candidate: summarize(&[]),
            change: None,
            verdict: Verdict::Missing,
            note: Some(why.clone()),
        })
        .collect();
    if run.meta.interrupted || !out.is_empty() {
        let planned = run.meta.planned_cells.len();
        warnings.push(format!(
            "the {side} run {} was {}: {} of {planned} planned cells have no result, and each is missing",
            run.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            if run.meta.interrupted { "interrupted" } else { "not finished" },
            run.meta.planned_cells.iter().filter(|p| !stored.contains(&p.id())).count(),
        ));
    }
    out
}
