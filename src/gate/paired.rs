//! `fsbench gate RUN`: a paired run (`[compare] arms`) gated by itself, the first arm the
//! baseline.
//!
//! One row per pair group, candidate arm and compared quantity (a lat_fs cell; each step
//! of a steps cell), named by the candidate's cell id. The change is the paired ratio
//! less 1 (`exp(mean d) - 1`, `d` the per-pair log ratios) with its t interval, read by
//! the same rule as every gate ([`Verdict::decide`]); the interval's level is the one the
//! run's sequential stop used (`1 - 0.05 / looks`, see [`crate::report::paired`]), so
//! the gate gives the verdict a group stopped with. The medians in the row are of the
//! pair members' values. Pairs come from [`crate::report::paired::join_pairs`], the same
//! join `report` and `compare` show.

use crate::exit::InputError;
use crate::report::paired::{PairedOptions, is_paired, join_pairs, pair_settings};
use crate::results::LoadedRun;
use crate::scenario::GateSpec;
use crate::stats::summarize;

use super::{GateOptions, GateReport, GateRow, Verdict, gate_spec_of, metric_for};

/// What `gate RUN` says of a run that is not paired.
pub const NOT_PAIRED: &str = "expected a paired run: a scenario with [compare] arms (e.g. `arms = \"fs\"`, or \
`--set compare.arms=fs` on `fsbench run`); to gate two separate runs, use --baseline RUN --candidate RUN";

/// Gate the paired run `run` by itself: every candidate arm against the baseline arm.
///
/// A run without paired cells is bad input ([`NOT_PAIRED`]). A comparison without a
/// single usable pair is `missing`.
pub fn evaluate_paired(run: &LoadedRun, opts: &GateOptions) -> anyhow::Result<GateReport> {
    if !is_paired(run) {
        return Err(InputError::anyhow(format!("{}: not a paired run; {NOT_PAIRED}", run.dir.display())));
    }
    let metric =
        metric_for(run.meta.workload, opts.metric.as_deref()).map_err(|e| InputError::anyhow(e.to_string()))?;
    let mut warnings = Vec::new();
    let spec = match opts.threshold {
        Some(t) => GateSpec { threshold: t, per_key: Default::default() },
        None => gate_spec_of(run, &mut warnings),
    };
    for p in &run.problems {
        warnings.push(p.clone());
    }
    let settings = pair_settings(&run.meta.scenario_text, &run.meta.scenario_origin);
    let Some(paired) = join_pairs(run.label(), run, &PairedOptions { metric, spec: &spec, settings }) else {
        return Err(InputError::anyhow(format!("{}: {NOT_PAIRED}", run.dir.display())));
    };
    warnings.extend(paired.warnings.iter().cloned());
    let mut rows: Vec<GateRow> = paired
        .comparisons
        .iter()
        .map(|c| GateRow {
            name: c.name.clone(),
            metric,
            key: c.key.clone(),
            threshold: c.threshold,
            baseline: summarize(&c.baseline_values),
            candidate: summarize(&c.candidate_values),
            change: c.change,
            verdict: c.verdict,
            note: c.note.clone().or_else(|| {
                (c.verdict == Verdict::Inconclusive && c.pairs < 2)
                    .then(|| "fewer than 2 pairs: cannot be significant".to_string())
            }),
        })
        .collect();
    let absent = super::unmeasured::unmeasured_rows(run, "paired", metric, &spec, &rows, &mut warnings);
    rows.extend(absent);
    let arm = |i: usize| format!("{} = {}", paired.axis, paired.arms.get(i).map(String::as_str).unwrap_or("?"));
    let candidates: Vec<String> = (1..paired.arms.len()).map(arm).collect();
    Ok(GateReport {
        baseline: format!("{} ({})", paired.run, arm(0)),
        candidate: format!("{} ({})", paired.run, candidates.join(", ")),
        rows,
        warnings,
        paired: Some(paired),
    })
}
