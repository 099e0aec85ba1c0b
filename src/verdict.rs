//! The decision rule, shared by the gate and the report's paired section: the verdict an
//! interval earns ([`Verdict::decide`], the one place the rule is written; the gate's module
//! documentation states it in words), and the `[gate]` thresholds a run's scenario asks for
//! ([`gate_spec_of`]). Which metric is compared and which way it gets better are the
//! metric catalogue's ([`crate::catalogue`]).
//!
//! It sits below both the gate and the report, so the report can judge a paired run
//! without importing the gate, which imports the report.

use serde::Serialize;

use crate::catalogue::Direction;
use crate::results::LoadedRun;
use crate::scenario::GateSpec;
use crate::stats::Change;

/// The verdict on one comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Significantly worse by more than the threshold.
    Regressed,
    /// Significantly better by more than the threshold.
    Improved,
    /// The whole interval lies inside ±threshold: no change as large as the threshold.
    Unchanged,
    /// The interval straddles the threshold: the data cannot tell.
    Inconclusive,
    /// Present on one side only, or without samples.
    Missing,
}

impl Verdict {
    /// Lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Regressed => "regressed",
            Verdict::Improved => "improved",
            Verdict::Unchanged => "unchanged",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Missing => "missing",
        }
    }

    /// The verdict for a relative change under `threshold` (a fraction, 0.05 = 5%):
    /// the gate's whole decision rule (see the module documentation).
    pub fn decide(change: Option<Change>, threshold: f64, direction: Direction) -> Verdict {
        let Some(c) = change else { return Verdict::Missing };
        if c.mean.is_nan() || c.ci_low.is_nan() || c.ci_high.is_nan() || !threshold.is_finite() {
            return Verdict::Inconclusive;
        }
        let t = threshold.abs();
        // Bounds may be infinite: comparisons below stay correct, and an infinite
        // end can never be inside ±t, so it is never `unchanged`.
        let (below, above) = (c.ci_high < -t, c.ci_low > t);
        let (worse, better) = match direction {
            Direction::HigherIsBetter => (below, above),
            Direction::LowerIsBetter => (above, below),
        };
        if worse {
            Verdict::Regressed
        } else if better {
            Verdict::Improved
        } else if c.ci_low >= -t && c.ci_high <= t {
            Verdict::Unchanged
        } else {
            Verdict::Inconclusive
        }
    }
}

/// Whether a comparison of two *separate* runs can be decided from their samples alone:
/// only when both sides span two rounds or more. Repetitions of one round share one
/// provisioning and one stretch of the machine's time, so with one round on a side the
/// samples show the spread within a run, never the spread between runs, and an interval
/// or test on them claims more than the data shows (two runs of one build came out
/// "significantly" different). Then only a calibrated between-run spread can decide
/// ([`crate::gate::between_run`]); `compare` marks no such difference significant. The
/// one home of the rule, for the gate and the comparison tables.
pub fn separate_runs_decidable(baseline_rounds: u32, candidate_rounds: u32) -> bool {
    baseline_rounds >= 2 && candidate_rounds >= 2
}

/// The rounds a side of a comparison of separate runs spans: its own, except that a
/// paired run counts as one (its members are rounds of one run, measured minutes apart,
/// not independent runs: taken as rounds they made two A/A paired runs `regressed`).
pub fn rounds_between_runs(paired: bool, rounds: u32) -> u32 {
    if paired { 1 } else { rounds }
}

/// Why a comparison of separate runs that [`separate_runs_decidable`] refuses has no verdict
/// (the gate's row note) and no significance mark (`compare`).
pub const WITHIN_RUN_ONLY: &str = "one round on a side and no calibration: the interval shows the spread within \
a run only, so it cannot decide";

/// The remedies, said once per report when comparisons were [`WITHIN_RUN_ONLY`].
pub fn within_run_remedies(rows: usize) -> String {
    format!(
        "{rows} comparison(s) of runs with one round cannot be decided from the spread within a run alone: measure \
         the spread between runs once with `fsbench calibrate SCENARIO` on this host, or run `workload.rounds` >= 2 \
         (`--set workload.rounds=4`), or compare both builds in one paired run (`[compare] arms`)"
    )
}

/// The `[gate]` thresholds of a run's scenario text; default 5% (with a warning) when unreadable.
pub fn gate_spec_of(run: &LoadedRun, warnings: &mut Vec<String>) -> GateSpec {
    // Validating the whole scenario can fail on another host (an archive path that
    // does not exist here) while its thresholds are still wanted: then only the
    // `[gate]` table is read, with the same types and units as the scenario.
    match crate::scenario::parse_str(&run.meta.scenario_text, &run.meta.scenario_origin) {
        Ok(s) => s.gate,
        Err(first) => match gate_table_only(&run.meta.scenario_text) {
            Ok(spec) => spec,
            Err(why) => {
                warnings.push(format!(
                    "cannot read [gate] thresholds from the baseline's scenario ({first}; {why}); using 5%"
                ));
                GateSpec::default()
            }
        },
    }
}

pub(crate) fn gate_table_only(text: &str) -> Result<GateSpec, String> {
    use crate::scenario::units::parse_percent;
    let t: toml::Table = text.parse().map_err(|e: toml::de::Error| e.message().to_string())?;
    let Some(g) = t.get("gate") else { return Ok(GateSpec::default()) };
    let g: crate::scenario::file::GateFile =
        g.clone().try_into().map_err(|e: toml::de::Error| format!("[gate]: {}", e.message()))?;
    let mut spec = GateSpec::default();
    if let Some(t) = &g.threshold {
        spec.threshold = parse_percent(t).map_err(|e| format!("gate.threshold: {e}"))?;
    }
    for (k, v) in &g.thresholds {
        spec.per_key.insert(k.clone(), parse_percent(v).map_err(|e| format!("gate.thresholds.{k}: {e}"))?);
    }
    Ok(spec)
}
