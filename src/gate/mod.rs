//! The CI regression gate: baseline vs candidate, per-cell verdicts (the command layer turns them into an exit code).
//!
//! Decision rule (criterion's, made honest about "cannot tell"): for every
//! comparison the gate computes the relative change of the means,
//! `(mean_c - mean_b) / mean_b`, and its 95% confidence interval: Fieller's
//! interval of the ratio of the means, less 1 ([`relative_change`]; the interval,
//! and when it is unbounded, is stated once, in [`crate::stats`]). With a
//! threshold `T` and the metric's direction of "worse" ([`crate::catalogue::Direction`]), a comparison is
//! - **regressed** when the whole interval lies beyond `T` in the worse
//!   direction (fewer `total_loops`, more `elapsed`);
//! - **improved** when the whole interval lies beyond `T` in the better direction;
//! - **unchanged** when the whole interval lies inside `[-T, +T]`: the data
//!   rule out a change as large as the threshold;
//! - **inconclusive** otherwise: the interval straddles `-T` or `+T`, so the
//!   data cannot tell a change beyond the threshold from noise. An unbounded
//!   interval (e.g. fewer than two samples on a side) is never unchanged: it is
//!   inconclusive;
//! - **missing** when the cell (or step) exists on one side only, or a side has
//!   no samples (skipped, failed or disturbed cell).
//!
//! When either side ran fewer than two rounds its samples show only the spread within
//! one run: the interval then carries the calibrated between-run spread, or the
//! comparison is inconclusive without a calibration ([`between_run`]). `gate --history N`
//! judges a candidate against earlier runs instead ([`history`]).
//!
//! The rule is [`Verdict::decide`], the one place it is written. A regression
//! fails the gate; what inconclusive and missing do to the exit status is the
//! command layer's policy (`--inconclusive`, `--bisect`).
//!
//! What is compared, on the samples the metric catalogue takes of each cell
//! ([`crate::catalogue::samples`]: steady, undisturbed):
//! - lat_fs cells by cell id on `total_loops` (loops/ms, higher is better, one sample per
//!   undisturbed repetition, or per round with several rounds), or with `--metric p50|p90|
//!   p99|p99.9|max` on that latency percentile of each repetition's histogram (µs, lower is
//!   better; runs with `latency = "histogram"`);
//! - steps cells per (cell id, step index) on `elapsed` in seconds (lower is better, one
//!   sample per undisturbed *steady* iteration: every iteration whose `rm_rf` removed
//!   something, from the second on when that is not recorded — iteration 1's `rm -rf` of
//!   nothing measures no filesystem work);
//! - fio cells by cell id on `iops` (default), or `--metric bw|p99|clat_mean` (IOPS and MiB/s
//!   higher is better, µs lower), one sample per undisturbed repetition.
//!
//! Threshold: `--threshold` for everything, else the baseline scenario's
//! `[gate]` section (per lat_fs test or step op), else 5%.

use serde::Serialize;

use crate::catalogue::Metric;
use crate::exit::InputError;
use crate::model::{CellResult, CellStatus, Summary, WorkloadKind};
use crate::results::LoadedRun;
use crate::scenario::GateSpec;
use crate::stats::summarize;
pub use crate::stats::{Change, relative_change};
pub use crate::verdict::Verdict;
pub(crate) use crate::verdict::gate_spec_of;
pub use paired::evaluate_paired;
pub use render::{Fails, render_junit, render_markdown, render_table, table_cells};

pub mod between_run;
pub mod email;
pub mod history;
mod paired;
mod render;
mod unmeasured;
pub mod why;

/// Why the gate cannot run.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    /// `--metric` names something this workload does not measure.
    #[error("--metric {metric}: the {workload} workload measures `{expected}`")]
    Metric {
        /// Requested metric.
        metric: String,
        /// Workload of the runs.
        workload: String,
        /// The metric it has.
        expected: &'static str,
    },
}

/// One compared quantity: a lat_fs cell, or one step of a steps cell.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct GateRow {
    /// `ext4-M-qoff-t1-chown` or `ext4-M-qoff-t1#2 untar` for steps.
    pub name: String,
    /// The metric compared, by its `--metric` name (`total_loops`, `elapsed`, `p99`).
    #[schemars(with = "String")]
    pub metric: Metric,
    /// The `[gate]` key the threshold came from (lat_fs test or step op).
    pub key: String,
    /// Threshold used, as a fraction.
    pub threshold: f64,
    /// Baseline samples summarised (`n = 0` when missing).
    pub baseline: Summary,
    /// Candidate samples summarised.
    pub candidate: Summary,
    /// The change, when both sides have samples.
    pub change: Option<Change>,
    /// The verdict.
    pub verdict: Verdict,
    /// Why, when not obvious (missing side, too few samples).
    pub note: Option<String>,
}

/// The gate's findings.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct GateReport {
    /// Baseline run directory name (`gate RUN`: the run's, with the baseline arm: `RUN (fs = ext4)`).
    pub baseline: String,
    /// Candidate run directory name (`gate RUN`: the run's, with the candidate arms).
    pub candidate: String,
    /// Every comparison, in the baseline's cell order, then candidate-only ones.
    pub rows: Vec<GateRow>,
    /// Warnings from the compatibility check and threshold lookup.
    pub warnings: Vec<String>,
    /// `gate RUN` of a paired run: its pairs, statistics and interval level (`paired.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paired: Option<crate::report::paired::PairedRun>,
}

impl GateReport {
    /// Number of rows with this verdict.
    pub fn count(&self, v: Verdict) -> usize {
        self.rows.iter().filter(|r| r.verdict == v).count()
    }
}

/// How to gate.
#[derive(Debug, Clone, PartialEq)]
pub struct GateOptions {
    /// `--threshold` as a fraction; overrides the scenario.
    pub threshold: Option<f64>,
    /// `--metric`, checked against the workload.
    pub metric: Option<String>,
    /// `--allow-missing`: cells without samples on both sides do not fail the gate
    /// (the exit policy is the command's; the report shows them either way).
    pub allow_missing: bool,
}

/// One side's samples of one comparison, keyed by name.
pub(crate) struct Series {
    /// The row name: the cell id, or `<cell id>#<step index> <op>`.
    pub(crate) name: String,
    /// The `[gate]` key its threshold comes from.
    pub(crate) key: String,
    /// Repetitions of one round, or the rounds' means ([`crate::model::round_samples`]).
    pub(crate) samples: Vec<f64>,
    /// Rounds the samples span: 1 for steps and one-round lat_fs cells.
    pub(crate) rounds: u32,
    /// Why there are no samples, when not obvious.
    pub(crate) note: Option<String>,
}

/// The compared quantities of one cell on `metric` (the catalogue's samples), each with why
/// it has no samples when the cell was not measured.
pub(crate) fn series_of(cell: &CellResult, metric: Metric) -> Vec<Series> {
    let not_ok = match cell.status {
        CellStatus::Ok => None,
        other => Some(format!(
            "cell is {}",
            serde_json::to_value(other).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
        )),
    };
    crate::catalogue::samples(cell, metric)
        .into_iter()
        .map(|q| {
            let note = not_ok.clone().or_else(|| {
                (matches!(metric, Metric::Latency(_)) && q.samples.is_empty() && cell.latfs.is_some())
                    .then(|| "no latency histogram: run with `latency = \"histogram\"`".to_string())
            });
            Series { name: q.name, key: q.key, samples: q.samples, rounds: q.rounds, note }
        })
        .collect()
}

fn metric_for(workload: WorkloadKind, requested: Option<&str>) -> Result<Metric, GateError> {
    crate::workload::kind::of_kind(workload).metric(requested).map_err(|expected| GateError::Metric {
        metric: requested.unwrap_or_default().into(),
        workload: workload.to_string(),
        expected,
    })
}

/// Compare two loaded runs, without a calibration ([`evaluate_calibrated`]).
pub fn evaluate(baseline: &LoadedRun, candidate: &LoadedRun, opts: &GateOptions) -> anyhow::Result<GateReport> {
    evaluate_calibrated(baseline, candidate, opts, None)
}

/// Compare two loaded runs; a comparison where a side ran one round uses `calibration`'s
/// between-run spread, or is inconclusive without one ([`between_run`]).
pub fn evaluate_calibrated(
    baseline: &LoadedRun,
    candidate: &LoadedRun,
    opts: &GateOptions,
    calibration: Option<&crate::calibration::Calibration>,
) -> anyhow::Result<GateReport> {
    let pair = vec![("baseline".to_string(), baseline.clone()), ("candidate".to_string(), candidate.clone())];
    let mut warnings = crate::report::check_compatible(&pair).map_err(|e| InputError::anyhow(e.to_string()))?;
    let metric =
        metric_for(baseline.meta.workload, opts.metric.as_deref()).map_err(|e| InputError::anyhow(e.to_string()))?;
    let spec = match opts.threshold {
        Some(t) => GateSpec { threshold: t, per_key: Default::default() },
        None => gate_spec_of(baseline, &mut warnings),
    };
    for (side, run) in [("baseline", baseline), ("candidate", candidate)] {
        for p in &run.problems {
            warnings.push(format!("{side}: {p}"));
        }
    }
    let mut base: Vec<Series> = baseline.cells.iter().flat_map(|c| series_of(c, metric)).collect();
    let mut cand: Vec<Series> = candidate.cells.iter().flat_map(|c| series_of(c, metric)).collect();
    // A paired run stores each member as a round of its cell, but members measured minutes
    // apart in one run are not independent runs: taken as rounds they made two A/A paired
    // runs `regressed` (new users' report, round three). Each paired side counts as one
    // round, so only a calibration's between-run spread can decide.
    for (side, run, series) in [("baseline", baseline, &mut base), ("candidate", candidate, &mut cand)] {
        if crate::report::paired::is_paired(run) {
            series.iter_mut().for_each(|s| s.rounds = crate::verdict::rounds_between_runs(true, s.rounds));
            warnings.push(format!(
                "the {side} is a paired run: its members are rounds of one run, not separate runs, so it counts as \
                 one round here; gate a paired run by itself (`fsbench gate RUN`), or calibrate the spread between runs"
            ));
        }
    }
    if let Metric::Latency(p) = metric
        && base.iter().chain(&cand).all(|s| s.samples.is_empty())
    {
        return Err(InputError::anyhow(format!(
            "--metric {}: neither run recorded a latency histogram; run with `latency = \"histogram\"` in [workload] \
             (or `--set workload.latency=histogram`), or gate on total_loops",
            p.name()
        )));
    }
    let mut rows = Vec::new();
    let row = |name: &str, key: &str, (b, rb): (&[f64], u32), (c, rc): (&[f64], u32), note: Option<String>| {
        let threshold = spec.threshold_for(key);
        let (bs, cs) = (between_run::Side { samples: b, rounds: rb }, between_run::Side { samples: c, rounds: rc });
        let (change, mut v, why) = between_run::judge(name, metric, bs, cs, threshold, calibration);
        let note = note
            .or_else(|| {
                (v == Verdict::Inconclusive && !b.is_empty() && b.iter().all(|x| *x == 0.0))
                    .then(|| "the baseline measured 0 (below the clock's resolution): no relative change".to_string())
            })
            .or(why)
            .or_else(|| {
                (v == Verdict::Inconclusive && (b.len() < 2 || c.len() < 2))
                    .then(|| "fewer than 2 samples on a side: cannot be significant".to_string())
            });
        if b.is_empty() || c.is_empty() {
            v = Verdict::Missing;
        }
        GateRow {
            name: name.into(),
            metric,
            key: key.into(),
            threshold,
            baseline: summarize(b),
            candidate: summarize(c),
            change,
            verdict: v,
            note,
        }
    };
    for b in &base {
        match cand.iter().find(|c| c.name == b.name) {
            Some(c) => {
                let note = match (&b.note, &c.note) {
                    (Some(n), _) if b.samples.is_empty() => Some(format!("baseline: {n}")),
                    (_, Some(n)) if c.samples.is_empty() => Some(format!("candidate: {n}")),
                    _ if b.samples.is_empty() || c.samples.is_empty() => Some("no samples".into()),
                    _ => None,
                };
                rows.push(row(&b.name, &b.key, (&b.samples, b.rounds), (&c.samples, c.rounds), note));
            }
            None => {
                rows.push(row(&b.name, &b.key, (&b.samples, b.rounds), (&[], 1), Some("not in the candidate".into())))
            }
        }
    }
    for c in cand.iter().filter(|c| !base.iter().any(|b| b.name == c.name)) {
        rows.push(row(&c.name, &c.key, (&[], 1), (&c.samples, c.rounds), Some("not in the baseline".into())));
    }
    let absent = unmeasured::unmeasured_rows(candidate, "candidate", metric, &spec, &rows, &mut warnings);
    rows.extend(absent);
    let undecided = rows.iter().filter(|r| r.note.as_deref() == Some(between_run::WITHIN_RUN_ONLY)).count();
    if undecided > 0 {
        warnings.push(between_run::remedies(undecided));
    }
    let name = |r: &LoadedRun| r.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(GateReport { baseline: name(baseline), candidate: name(candidate), rows, warnings, paired: None })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::Direction;

    fn ch(mean: f64, lo: f64, hi: f64) -> Option<Change> {
        Some(Change { mean, ci_low: lo, ci_high: hi })
    }

    #[test]
    fn verdict_table() {
        use Direction::{HigherIsBetter as Up, LowerIsBetter as Down};
        use Verdict::*;
        let inf = f64::INFINITY;
        // (change, direction, expected) at a 5% threshold.
        let table = [
            (ch(-0.10, -0.12, -0.08), Up, Regressed),
            (ch(-0.10, -0.12, -0.08), Down, Improved),
            (ch(0.10, 0.08, 0.12), Down, Regressed),
            (ch(0.10, 0.08, 0.12), Up, Improved),
            (ch(0.01, -0.02, 0.04), Up, Unchanged),
            (ch(0.0, -0.05, 0.05), Up, Unchanged),
            // The seed of this rule: -12.1% [-28.6%, +4.4%] is not "unchanged".
            (ch(-0.121, -0.286, 0.044), Up, Inconclusive),
            (ch(-0.121, -0.286, 0.044), Down, Inconclusive),
            (ch(0.02, -0.01, 0.07), Up, Inconclusive),
            (ch(0.0, -0.06, 0.06), Down, Inconclusive),
            // Beyond the threshold on one end only, yet the whole CI is on the bad side: still straddles.
            (ch(-0.06, -0.08, -0.04), Up, Inconclusive),
            // Non-finite bounds are never unchanged.
            (ch(0.0, -inf, inf), Up, Inconclusive),
            (ch(0.0, f64::NAN, 0.01), Up, Inconclusive),
            (ch(-0.5, -inf, -0.2), Up, Regressed),
            (None, Up, Missing),
        ];
        for (i, (c, d, want)) in table.into_iter().enumerate() {
            assert_eq!(Verdict::decide(c, 0.05, d), want, "row {i}: {c:?} {d:?}");
        }
    }

    #[test]
    fn tight_ten_percent_drop_regresses_and_wide_is_inconclusive() {
        let b = [1000.0, 1001.0, 999.0, 1000.5, 999.5];
        let c = [900.0, 901.0, 899.0, 900.5, 899.5];
        let ch = relative_change(&b, &c).unwrap();
        assert!((ch.mean + 0.1).abs() < 1e-9);
        assert_eq!(Verdict::decide(Some(ch), 0.05, Direction::HigherIsBetter), Verdict::Regressed);
        assert_eq!(Verdict::decide(Some(ch), 0.05, Direction::LowerIsBetter), Verdict::Improved);
        let bw = [1000.0, 1300.0, 700.0, 1150.0, 850.0];
        let cw = [900.0, 1200.0, 600.0, 1050.0, 750.0];
        assert_eq!(Verdict::decide(relative_change(&bw, &cw), 0.05, Direction::HigherIsBetter), Verdict::Inconclusive);
        let same = [1000.0, 1001.0, 999.0, 1000.5, 999.5];
        assert_eq!(Verdict::decide(relative_change(&b, &same), 0.05, Direction::HigherIsBetter), Verdict::Unchanged);
    }

    #[test]
    fn single_samples_are_inconclusive_never_regressed_or_unchanged() {
        let up = Direction::HigherIsBetter;
        assert_eq!(Verdict::decide(relative_change(&[100.0], &[50.0]), 0.05, up), Verdict::Inconclusive);
        assert_eq!(Verdict::decide(relative_change(&[100.0], &[100.0]), 0.05, up), Verdict::Inconclusive);
        assert_eq!(Verdict::decide(relative_change(&[], &[1.0]), 0.05, up), Verdict::Missing);
        // A step faster than the clock's microsecond: no relative change, but not missing either.
        assert_eq!(Verdict::decide(relative_change(&[0.0, 0.0], &[1.0, 1.0]), 0.05, up), Verdict::Inconclusive);
        assert_eq!(Verdict::decide(relative_change(&[0.0], &[0.0]), 0.05, up), Verdict::Inconclusive);
        assert_eq!(Verdict::decide(relative_change(&[0.0, 0.0], &[0.0, 0.0]), 0.05, up), Verdict::Unchanged);
    }

    #[test]
    fn gate_table_is_read_without_the_rest_of_the_scenario() {
        let spec = crate::verdict::gate_table_only(
            "name = 1\n[archive]\npath = \"/nowhere\"\n[gate]\nthreshold = \"3%\"\nthresholds = { untar = \"10%\" }\n",
        )
        .unwrap();
        assert!(
            (spec.threshold_for("sync") - 0.03).abs() < 1e-12 && (spec.threshold_for("untar") - 0.10).abs() < 1e-12
        );
        assert!(crate::verdict::gate_table_only("[gate]\nthreshold = \"five\"\n").is_err());
    }

    #[test]
    fn xml_is_escaped() {
        assert_eq!(render::xml_escape("a<b & \"c\"\u{1}"), "a&lt;b &amp; &quot;c&quot;?");
    }
}
