//! The decision rule's vocabulary, shared by the gate and the report's paired section:
//! which metric is compared ([`Metric`]), which way it gets better ([`Direction`]), the
//! verdict an interval earns ([`Verdict::decide`], the one place the rule is written; the
//! gate's module documentation states it in words), and the `[gate]` thresholds a run's
//! scenario asks for ([`gate_spec_of`]).
//!
//! It sits below both the gate and the report, so the report can judge a paired run
//! without importing the gate, which imports the report.

use serde::Serialize;

use crate::model::FioMetric;
use crate::results::LoadedRun;
use crate::scenario::GateSpec;
use crate::stats::Change;

/// The metric a gate compares; serialized as its `--metric` name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// lat_fs loops per ms over all tasks (higher is better).
    TotalLoops,
    /// Wall-clock time of a step in seconds (lower is better).
    Elapsed,
    /// A percentile of lat_fs operation latency in µs, from `latency = "histogram"` runs
    /// (lower is better): `--metric p99`.
    Latency(crate::monitor::latency::Percentile),
    /// A fio cell's figure per repetition: `--metric iops|bw|p99|clat_mean`.
    Fio(FioMetric),
    /// An op-mix cell's figure per repetition: `--metric ops|p99|mbps`.
    Ops(crate::model::OpsMetric),
}

impl Serialize for Metric {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl Metric {
    /// Name as given to `--metric`.
    pub fn name(self) -> &'static str {
        match self {
            Metric::TotalLoops => "total_loops",
            Metric::Elapsed => "elapsed",
            Metric::Latency(p) => p.name(),
            Metric::Fio(m) => m.name(),
            Metric::Ops(m) => m.name(),
        }
    }

    /// Whether a larger value is better.
    pub fn higher_is_better(self) -> bool {
        self.direction() == Direction::HigherIsBetter
    }

    /// Which way is better for this metric.
    pub fn direction(self) -> Direction {
        match self {
            Metric::TotalLoops => Direction::HigherIsBetter,
            Metric::Elapsed | Metric::Latency(_) => Direction::LowerIsBetter,
            Metric::Fio(m) if m.higher_is_better() => Direction::HigherIsBetter,
            Metric::Fio(_) => Direction::LowerIsBetter,
            Metric::Ops(m) if m.higher_is_better() => Direction::HigherIsBetter,
            Metric::Ops(_) => Direction::LowerIsBetter,
        }
    }

    /// Unit of the samples as printed.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::TotalLoops => "loops/ms",
            Metric::Elapsed => "s",
            Metric::Latency(_) => "µs",
            Metric::Fio(m) => m.unit(),
            Metric::Ops(m) => m.unit(),
        }
    }

    /// The metric column: name, unit and which way is worse (`elapsed [s], higher is worse`).
    pub fn described(self) -> String {
        format!("{} [{}], {}", self.name(), self.unit(), self.direction().worse())
    }
}

/// Which way a metric gets better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// More is better (throughput): worse means lower.
    HigherIsBetter,
    /// Less is better (time): worse means higher.
    LowerIsBetter,
}

impl Direction {
    /// The direction of "worse" in words, for reports: `lower is worse`.
    pub fn worse(self) -> &'static str {
        match self {
            Direction::HigherIsBetter => "lower is worse",
            Direction::LowerIsBetter => "higher is worse",
        }
    }
}

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
