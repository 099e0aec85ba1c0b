//! Calibration: where a scenario's variance is on this host, measured once by A/A runs of
//! one build (`fsbench calibrate`), so that a gate of two separate runs can include the
//! spread between runs that neither run shows by itself.
//!
//! The document is `<results>/<scenario>/calibration.json` ([`CALIBRATION_FILE`]): per cell
//! (and per step of a steps cell) the variance of the log of its metric at three levels
//! (repetitions within a round, rounds within a run, runs; [`crate::stats::variance_components`]),
//! what a repetition and a round cost in seconds, and where and when it was measured.
//! [`estimate`] computes it from the runs, [`store`] writes and reads it (bounded and
//! validated like every result file), [`budget`] turns it into rounds × repetitions that
//! decide within a time budget, and [`Calibration::usable_for`] says whether a gate may use it.

pub mod budget;
pub mod estimate;
pub mod store;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::host::identity::HostInfo;
use crate::stats::variance_components::VarianceComponents;

/// The calibration file's name in a scenario's results directory.
pub const CALIBRATION_FILE: &str = "calibration.json";
/// Version of the calibration document.
pub const CALIBRATION_SCHEMA_VERSION: u32 = 1;
/// A calibration measured more than this many days before (or after) a gated run is ignored:
/// machines change (updates, firmware, neighbours), and an old spread is a guess.
pub const MAX_AGE_DAYS: u64 = 30;

/// `calibration.json`: the variance components of a scenario's cells on one host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    /// Document version ([`CALIBRATION_SCHEMA_VERSION`]).
    pub schema: u32,
    /// fsbench version that measured it.
    pub fsbench_version: String,
    /// When it was made, RFC 3339 UTC.
    pub date: String,
    /// The machine the calibration runs ran on.
    pub host: HostInfo,
    /// Scenario name.
    pub scenario: String,
    /// sha256 of the scenario text the calibration runs ran (with calibrate's overrides), hex.
    pub scenario_sha256: String,
    /// sha256 of the scenario text the gated runs are expected to have run: the same file and
    /// `--set` overrides, without calibrate's own (`workload.rounds=2`), hex. A gate uses the
    /// calibration only for runs of this text or of `scenario_sha256`
    /// ([`Calibration::holds_for_text`]); absent in calibrations of fsbench 0.2.0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gated_sha256: Option<String>,
    /// The calibration runs' directory names, in the order they ran.
    pub runs: Vec<String>,
    /// One entry per cell (lat_fs) or step (steps) with enough data.
    pub cells: Vec<CellCalibration>,
}

/// The calibrated spread of one compared quantity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CellCalibration {
    /// The row name the gate uses: the cell id, or `<cell id>#<step index> <op>` for a step.
    pub name: String,
    /// The metric: `total_loops` (lat_fs) or `elapsed` (steps).
    pub metric: String,
    /// The `[gate]` key its threshold comes from (lat_fs test or step op).
    pub key: String,
    /// Variance of the log of the metric at each level.
    pub levels: VarianceComponents,
    /// Seconds one repetition (lat_fs: warmup and window; steps: the step) takes.
    pub repetition_seconds: f64,
    /// Seconds one more round costs besides its repetitions (provisioning), averaged over
    /// the run's cells; 0 for steps cells, which run one round.
    pub round_seconds: f64,
}

impl Calibration {
    /// The calibrated spread of the row `name` on `metric`.
    pub fn cell(&self, name: &str, metric: &str) -> Option<&CellCalibration> {
        self.cells.iter().find(|c| c.name == name && c.metric == metric)
    }

    /// Whether a gate of runs measured on `hosts` at `started` (RFC 3339) may use this
    /// calibration: `Err` with the reason when it is from another machine (host name, CPU
    /// model, CPU count or memory differ) or more than [`MAX_AGE_DAYS`] from a run.
    pub fn usable_for(&self, hosts: &[(&HostInfo, &str)]) -> Result<(), String> {
        let made = crate::results::unix_from_rfc3339(&self.date)
            .ok_or_else(|| format!("its date `{}` is not RFC 3339 UTC", self.date))?;
        for (host, started) in hosts {
            if !same_machine(&self.host, host) {
                return Err(format!(
                    "it was measured on another host ({}, {} × {}) than the runs ({}, {} × {})",
                    self.host.hostname,
                    self.host.cpu_count,
                    self.host.cpu_model,
                    host.hostname,
                    host.cpu_count,
                    host.cpu_model
                ));
            }
            let Some(at) = crate::results::unix_from_rfc3339(started) else { continue };
            let days = made.abs_diff(at) / 86_400;
            if days > MAX_AGE_DAYS {
                return Err(format!(
                    "it was measured on {}, {days} days from a run that started {started}: more than the \
                     {MAX_AGE_DAYS} days a calibration is trusted; run `fsbench calibrate` again",
                    self.date
                ));
            }
        }
        Ok(())
    }
}

impl Calibration {
    /// Whether runs of the scenario texts `shas` (each a run's `scenario_sha256`) may use this
    /// calibration: a spread measured for another text (another duration, repetition count,
    /// filesystem options...) is not theirs. `Err` says which texts differ.
    pub fn holds_for_text(&self, shas: &[(&str, &str)]) -> Result<(), String> {
        let ours = |sha: &str| {
            sha.eq_ignore_ascii_case(&self.scenario_sha256)
                || self.gated_sha256.as_deref().is_some_and(|g| sha.eq_ignore_ascii_case(g))
        };
        let short = |s: &str| s.chars().take(12).collect::<String>();
        let other: Vec<String> =
            shas.iter().filter(|(_, sha)| !ours(sha)).map(|(who, sha)| format!("{who} {}", short(sha))).collect();
        if other.is_empty() {
            return Ok(());
        }
        Err(format!(
            "it was measured for another scenario text (sha256 {}) than the {} ran: a calibration holds only for \
             the scenario text it measured (the same durations, repetitions, options); run `fsbench calibrate` with \
             the scenario and `--set` the runs used",
            short(self.gated_sha256.as_deref().unwrap_or(&self.scenario_sha256)),
            other.join(" and ")
        ))
    }
}

/// The machine identity a calibration holds for: the same host name, CPU and memory. The
/// kernel is left out: kernels are what gates compare.
fn same_machine(a: &HostInfo, b: &HostInfo) -> bool {
    a.hostname == b.hostname
        && a.cpu_model == b.cpu_model
        && a.cpu_count == b.cpu_count
        && a.memory_bytes == b.memory_bytes
}

/// JSON Schema of the calibration document (`schemas/calibration.schema.json`).
pub fn calibration_schema_json() -> String {
    let schema = schemars::schema_for!(Calibration);
    serde_json::to_string_pretty(&schema).expect("schema serializes") + "\n"
}

/// A calibration for tests elsewhere in the crate.
#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;

    /// An empty calibration of host `lab1` (2 × `cpu`) dated `date`.
    pub(crate) fn sample(date: &str) -> Calibration {
        Calibration {
            schema: CALIBRATION_SCHEMA_VERSION,
            fsbench_version: "0.1.0".into(),
            date: date.into(),
            host: HostInfo { hostname: "lab1".into(), cpu_model: "cpu".into(), cpu_count: 2, ..HostInfo::default() },
            scenario: "s".into(),
            scenario_sha256: "00".into(),
            gated_sha256: None,
            runs: vec![],
            cells: vec![],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::tests_support::sample;
    use super::*;

    #[test]
    fn a_calibration_from_another_host_or_too_old_is_not_used() {
        let c = sample("2026-11-01T00:00:00Z");
        let here = c.host.clone();
        assert_eq!(c.usable_for(&[(&here, "2026-11-20T00:00:00Z")]), Ok(()));
        let e = c.usable_for(&[(&here, "2026-12-05T00:00:00Z")]).unwrap_err();
        assert!(e.contains("34 days") && e.contains("fsbench calibrate"), "{e}");
        let other = HostInfo { hostname: "lab2".into(), ..here.clone() };
        assert!(
            c.usable_for(&[(&here, "2026-11-02T00:00:00Z"), (&other, "2026-11-02T00:00:00Z")])
                .unwrap_err()
                .contains("another host")
        );
        // Another kernel on the same machine is what a gate compares: still usable.
        let kernel = HostInfo { kernel_release: "6.99".into(), ..here.clone() };
        assert_eq!(c.usable_for(&[(&kernel, "2026-11-02T00:00:00Z")]), Ok(()));
        assert!(sample("yesterday").usable_for(&[(&here, "2026-11-02T00:00:00Z")]).is_err());
    }

    #[test]
    fn a_calibration_is_used_only_for_runs_of_its_scenario_text() {
        let mut c = sample("2026-11-01T00:00:00Z");
        c.scenario_sha256 = "aa11".into();
        assert_eq!(c.holds_for_text(&[("baseline", "AA11"), ("candidate", "aa11")]), Ok(()));
        let e = c.holds_for_text(&[("baseline", "aa11"), ("candidate", "bb22")]).unwrap_err();
        assert!(e.contains("another scenario text") && e.contains("candidate bb22") && !e.contains("baseline"), "{e}");
        // The text without calibrate's own rounds override, as a plain `run` writes it.
        c.gated_sha256 = Some("cc33".into());
        assert_eq!(c.holds_for_text(&[("baseline", "cc33"), ("candidate", "aa11")]), Ok(()));
        assert!(
            c.holds_for_text(&[("baseline", "dd44"), ("candidate", "cc33")]).unwrap_err().contains("baseline dd44")
        );
    }
}
