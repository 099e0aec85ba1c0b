//! The paired ratios of a paired run (`[compare] arms`) as history metrics of its candidate
//! cells: per pair group, candidate arm and quantity, the ratio of the geometric means
//! (candidate / baseline, `exp(mean ln(c/b))`) over the run's pairs, with its interval.
//!
//! The pairs and their statistics are the report's and the gate's: the run is joined by
//! [`crate::report::paired::join_pairs`], nothing is recomputed here. Each quantity the
//! candidate cell has as an unpaired metric gets a `paired ratio <metric>` beside it:
//!
//! | workload | metrics |
//! |---|---|
//! | lat_fs | `paired ratio total_loops`; `paired ratio latency_p50`/`p90`/`p99` when the repetitions recorded a latency distribution |
//! | steps | `paired ratio stepN <label> elapsed` |
//! | fio | `paired ratio iops`, `… bw`, `… p99`, `… clat_mean` |
//!
//! Unit `ratio`, the same direction as the metric, `n` the pairs, and the interval at the
//! level of the run's paired section (`1 − 0.05 / looks`, 99% for the default 6..32 pairs).

use super::metric::{Better, Metric, RATIO_UNIT};
use crate::model::{TextFormat, WorkloadKind};
use crate::monitor::latency::Percentile;
use crate::report::paired::{PairedComparison, PairedOptions, is_paired, join_pairs, pair_settings};
use crate::results::LoadedRun;
use crate::verdict::Metric as Compared;

/// Prefix of a paired ratio's metric name.
pub const PAIRED_PREFIX: &str = "paired ratio ";
/// [`Metric::position`] of a cell's first paired ratio: after any of its own metrics.
pub const PAIRED_POSITION: usize = 1 << 20;

/// The quantities a run of `workload` is compared on, each with the unpaired metric's name
/// (`None` for steps, named per step) and its place among the cell's paired ratios.
fn compared(workload: WorkloadKind) -> Vec<(Compared, Option<&'static str>)> {
    let name = |m: Compared| match m {
        Compared::Elapsed => None,
        Compared::Latency(Percentile::P50) => Some("latency_p50"),
        Compared::Latency(Percentile::P90) => Some("latency_p90"),
        Compared::Latency(Percentile::P99) => Some("latency_p99"),
        m => Some(m.name()),
    };
    crate::workload::kind::of_kind(workload).paired_metrics().into_iter().map(|m| (m, name(m))).collect()
}

/// Every paired ratio of `run`, as (candidate cell id, metric); empty for an unpaired run.
/// A comparison without pairs, or whose ratio is not a positive finite number, gives none.
pub fn paired_metrics(run: &LoadedRun) -> Vec<(String, Metric)> {
    if !is_paired(run) {
        return Vec::new();
    }
    let settings = pair_settings(&run.meta.scenario_text, &run.meta.scenario_origin);
    // Thresholds only decide verdicts, which a series does not keep.
    let spec = crate::scenario::GateSpec::default();
    let mut out = Vec::new();
    for (k, (metric, name)) in compared(run.meta.workload).into_iter().enumerate() {
        let opts = PairedOptions { metric, spec: &spec, settings: settings.clone() };
        let Some(paired) = join_pairs("", run, &opts) else { continue };
        let better = if metric.higher_is_better() { Better::Higher } else { Better::Lower };
        for c in &paired.comparisons {
            let Some(change) = c.change else { continue };
            let ratio = 1.0 + change.mean;
            if !(ratio.is_finite() && ratio > 0.0) {
                continue;
            }
            let Some((cell, quantity, position)) = quantity_of(run, c, name, k) else { continue };
            let (low, high) = (1.0 + change.ci_low, 1.0 + change.ci_high);
            let interval = (low.is_finite() && high.is_finite()).then_some((low, high));
            let metric = Metric {
                name: format!("{PAIRED_PREFIX}{quantity}"),
                unit: RATIO_UNIT,
                better,
                value: ratio,
                n: c.pairs,
                position: PAIRED_POSITION + position,
                interval,
            };
            out.push((cell, metric));
        }
    }
    out
}

/// The candidate cell of comparison `c`, the unpaired metric it compares (a step's named as
/// the cell's own step metric is) and its place among the cell's paired ratios (`k` the
/// quantity's place, or the step's index).
fn quantity_of(run: &LoadedRun, c: &PairedComparison, name: Option<&str>, k: usize) -> Option<(String, String, usize)> {
    let Some(step) = &c.step else { return Some((c.name.clone(), name?.to_string(), k)) };
    // `#j op`, j from 0, after the candidate's cell id.
    let cell = c.name.strip_suffix(step.as_str())?.to_string();
    let j: usize = step.strip_prefix('#')?.split(' ').next()?.parse().ok()?;
    let label = run
        .cells
        .iter()
        .find(|x| x.id == cell)?
        .steps
        .as_ref()?
        .iterations
        .iter()
        .find_map(|it| it.get(j))
        .map(|t| t.label.escaped(TextFormat::Terminal).into_owned())?;
    Some((cell, format!("step{} {label} elapsed", j + 1), j))
}
