//! Reading a paired run (`[compare] arms`): its cells joined back into pairs ([`join_pairs`]),
//! each pair group's statistics per candidate arm, and the report's "Paired comparison"
//! section ([`write_sections`], [`csv`]; JSON is [`PairedRun`] itself).
//!
//! Per pair group, candidate arm and quantity (a lat_fs cell's `total_loops`, or each step
//! of a steps cell): the per-pair log ratios `d`, the paired ratio `exp(mean d)` with its
//! t interval ([`crate::stats::paired::change_of_log_ratios`]), Wilcoxon's signed-rank p and
//! the Hodges–Lehmann interval (from 6 pairs), the pairs that counted, were dropped or had
//! no partner, the recorded stop reason, and the gate's verdict (`Verdict::decide`) at the
//! scenario's `[gate]` threshold.
//!
//! **Level.** Every interval is at `1 - 0.05 / K`, K the number of looks of the run's
//! schedule ([`crate::stats::paired::alpha_per_look`] of the scenario's `compare.pairs`
//! `min`/`max`, 6..32 when it does not say: 99%), the level the sequential stop decided at,
//! so the verdict read here is the one the group stopped with.

mod join;
mod render;
mod settings;

pub use join::{PairedComparison, PairedOptions, PairedRun, SignedRankCheck, join_pairs};
pub use render::{
    agreement, csv, hl_cell, p_cell, pairs_cell, percent, ratio_cell, section_text, stop_cell, stop_name,
    write_agreement, write_sections,
};
pub use settings::{PairSettings, pair_settings};

use crate::results::LoadedRun;

/// Whether any cell of `run` took part in a pair group.
pub fn is_paired(run: &LoadedRun) -> bool {
    run.cells.iter().any(|c| c.pairing.is_some())
}

/// `run`'s paired comparisons as reports show them: on the workload's own metric
/// (`total_loops`, steps' `elapsed`) at the run's `[gate]` thresholds; `None` for an
/// unpaired run.
pub fn paired_of(label: &str, run: &LoadedRun) -> Option<PairedRun> {
    if !is_paired(run) {
        return None;
    }
    let mut warnings = Vec::new();
    let spec = crate::verdict::gate_spec_of(run, &mut warnings);
    let metric = crate::workload::kind::of_kind(run.meta.workload).default_metric();
    let settings = pair_settings(&run.meta.scenario_text, &run.meta.scenario_origin);
    let mut p = join_pairs(label, run, &PairedOptions { metric, spec: &spec, settings })?;
    p.warnings.extend(warnings);
    Some(p)
}

#[cfg(test)]
mod tests;
