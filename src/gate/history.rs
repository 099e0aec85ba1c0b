//! `gate --history N`: a candidate run judged against the last N runs of its scenario on
//! its host, whose run means measure the spread between runs directly, so no calibration
//! and no rounds are needed.
//!
//! Per compared quantity, each history run gives its mean (of its repetitions, or of its
//! rounds' means) and the candidate its own; the change and its 95% prediction interval are
//! `ln c − mean ln h ± t(N−1) · s · sqrt(1 + 1/N)` ([`crate::stats::between_run::history_change`]),
//! judged by the same rule as every gate ([`Verdict::decide`]). Fewer than
//! [`MIN_HISTORY_RUNS`] history runs are refused; a quantity fewer of them measured is
//! inconclusive, with the count in its note.
//!
//! A history made in one burst (its runs all started within [`MIN_HISTORY_SPAN_SECS`])
//! shows the spread of minutes, not the spread between the nights it is meant to stand
//! for: seven quickstart runs 17 s apart gated an A/A candidate at a higher load
//! `-19.2% [-24.6%, -13.4%] regressed` (new users' report, issue #38, item 2). So with a
//! usable calibration the spread of a run's mean is never taken below the calibrated one
//! (always, not only for bursts), and without one a burst history decides nothing:
//! every verdict but `missing` is `inconclusive`, with a note naming why and what to do.

use super::{GateOptions, GateReport, GateRow, Series, Verdict, gate_spec_of, metric_for, series_of};
use crate::calibration::{Calibration, CellCalibration};
use crate::exit::InputError;
use crate::results::LoadedRun;
use crate::scenario::GateSpec;
use crate::stats::between_run::history_change_floored;
use crate::stats::summarize;

/// Fewest history runs a history gate judges by: with 4 runs, `t(3) = 3.18` and a spread
/// estimated from 3 degrees of freedom make an interval too wide to decide a few percent.
pub const MIN_HISTORY_RUNS: usize = 5;

/// A history whose runs all started within this many seconds (6 hours) of each other was
/// made in one burst: its spread between runs is that of one stretch of the machine's time
/// (one load, one thermal state), and a gate against it cannot decide without a calibration.
/// Six hours: a nightly or per-push history spans more by its tenth run; a loop of runs
/// made to seed a history rarely does.
pub const MIN_HISTORY_SPAN_SECS: u64 = 6 * 3600;

/// Seconds from the first to the last start of `history`; `None` when a start time is not
/// RFC 3339 UTC (then the span is not known and no burst is claimed).
pub fn history_span_secs(history: &[LoadedRun]) -> Option<u64> {
    let starts: Option<Vec<u64>> = history.iter().map(|r| crate::results::unix_from_rfc3339(&r.meta.started)).collect();
    let starts = starts?;
    Some(starts.iter().max()? - starts.iter().min()?)
}

/// The row note of a decision withheld because the history was made in one burst.
fn burst_note(runs: usize, span: u64) -> String {
    format!(
        "the history's {runs} runs started within {} of each other: a history made in one burst understates the \
         spread between runs that separate days show, so it cannot decide; run `fsbench calibrate SCENARIO` on this \
         host (its spread between runs then bounds the interval), or gate against a history whose runs span at least \
         {} hours",
        crate::text::human_duration(std::time::Duration::from_secs(span)),
        MIN_HISTORY_SPAN_SECS / 3600
    )
}

/// The calibrated variance of one run's log mean (with the run level's degrees of freedom)
/// for a side of `rounds` rounds and `samples` samples: `σ²_run + σ²_round/r + σ²_rep/(r·k)`,
/// k the repetitions per round (with several rounds the samples are the rounds' means and k
/// is not known: taken as 1, which can only widen the floor).
fn calibrated_floor(cell: &CellCalibration, rounds: u32, samples: usize) -> (f64, usize) {
    let l = &cell.levels;
    let r = f64::from(rounds.max(1));
    let k = if rounds >= 2 { 1.0 } else { samples.max(1) as f64 };
    (l.run.variance + l.round.variance / r + l.repetition.variance / (r * k), l.run.df)
}

/// Runs eligible as `candidate`'s history: same scenario name, same host name, measuring
/// the same quantities (the comparability rule of `compare`), started before it, the
/// candidate itself left out (by run id, so a copy of it in another directory is too).
/// In start order, each run once; the caller keeps the last N.
///
/// Runs made under other conditions are left out and counted in the returned notes: a
/// scenario text that differs from the candidate's (`--set` a mount option, another
/// duration), and `fsbench calibrate`'s runs (label `calibration`). One such run in the
/// window would make the gate blind for the next N nights.
pub fn history_runs(candidate: &LoadedRun, all: Vec<LoadedRun>) -> (Vec<LoadedRun>, Vec<String>) {
    let mut kept: Vec<LoadedRun> = all
        .into_iter()
        .filter(|r| {
            r.meta.run_id != candidate.meta.run_id
                && r.meta.scenario_name == candidate.meta.scenario_name
                && r.meta.host.hostname == candidate.meta.host.hostname
                && r.meta.started.as_str() <= candidate.meta.started.as_str()
                && crate::history::load::comparable(r, candidate)
        })
        .collect();
    kept.sort_by(|a, b| (&a.meta.started, &a.meta.run_id).cmp(&(&b.meta.started, &b.meta.run_id)));
    kept.dedup_by(|a, b| a.meta.run_id == b.meta.run_id);
    let before = kept.len();
    let calibration = |r: &LoadedRun| r.meta.label.as_deref() == Some("calibration");
    let n_calibration = kept.iter().filter(|r| calibration(r)).count();
    kept.retain(|r| !calibration(r));
    let n_other_text = kept.iter().filter(|r| r.meta.scenario_text != candidate.meta.scenario_text).count();
    kept.retain(|r| r.meta.scenario_text == candidate.meta.scenario_text);
    let mut notes = Vec::new();
    if n_other_text > 0 {
        notes.push(format!(
            "left out {n_other_text} of {before} earlier run(s) whose scenario text differs from the candidate's \
             (measured under other conditions)"
        ));
    }
    if n_calibration > 0 {
        notes.push(format!("left out {n_calibration} run(s) of `fsbench calibrate` (label calibration)"));
    }
    (kept, notes)
}

/// Judge `candidate` against `history` (already chosen: [`history_runs`], the last N).
///
/// `calibration` (one [`crate::calibration::store::find_for`] found usable) bounds each
/// row's spread from below; without it a burst history ([`MIN_HISTORY_SPAN_SECS`]) decides
/// nothing.
pub fn evaluate_history(
    history: &[LoadedRun],
    candidate: &LoadedRun,
    opts: &GateOptions,
    calibration: Option<&Calibration>,
) -> anyhow::Result<GateReport> {
    if history.len() < MIN_HISTORY_RUNS {
        return Err(InputError::anyhow(format!(
            "--history: {} earlier run(s) of {} on {} comparable with the candidate, fewer than the {MIN_HISTORY_RUNS} \
             a history gate needs to estimate the spread between runs; run the scenario more often, or gate \
             against one baseline (`--baseline RUN`)",
            history.len(),
            candidate.meta.scenario_name,
            candidate.meta.host.hostname
        )));
    }
    let mut warnings = Vec::new();
    let metric =
        metric_for(candidate.meta.workload, opts.metric.as_deref()).map_err(|e| InputError::anyhow(e.to_string()))?;
    let spec = match opts.threshold {
        Some(t) => GateSpec { threshold: t, per_key: Default::default() },
        None => gate_spec_of(candidate, &mut warnings),
    };
    let burst = history_span_secs(history).filter(|span| *span < MIN_HISTORY_SPAN_SECS);
    let mut withheld = 0;
    let mean = |s: &Series| (!s.samples.is_empty()).then(|| s.samples.iter().sum::<f64>() / s.samples.len() as f64);
    let past: Vec<Vec<Series>> =
        history.iter().map(|r| r.cells.iter().flat_map(|c| series_of(c, metric)).collect()).collect();
    let mut rows = Vec::new();
    for c in candidate.cells.iter().flat_map(|c| series_of(c, metric)) {
        let means: Vec<f64> =
            past.iter().filter_map(|run| run.iter().find(|s| s.name == c.name).and_then(mean)).collect();
        let threshold = spec.threshold_for(&c.key);
        let (change, verdict, note) = match mean(&c) {
            None => (
                None,
                Verdict::Missing,
                Some(c.note.clone().map_or("candidate: no samples".into(), |n| format!("candidate: {n}"))),
            ),
            Some(_) if means.len() < MIN_HISTORY_RUNS => (
                None,
                Verdict::Inconclusive,
                Some(format!(
                    "{} of {} history runs measured it: at least {MIN_HISTORY_RUNS} needed",
                    means.len(),
                    history.len()
                )),
            ),
            Some(m) => {
                let cell = calibration.and_then(|cal| cal.cell(&c.name, metric.name()));
                let floor = cell.map(|cell| calibrated_floor(cell, c.rounds, c.samples.len()));
                let ch = history_change_floored(&means, m, floor);
                let mut note = ch.is_none().then(|| "a value is not positive: no log ratio".to_string());
                let mut verdict = Verdict::decide(ch, threshold, metric.direction());
                if let Some(span) = burst
                    && cell.is_none()
                    && verdict != Verdict::Missing
                {
                    withheld += 1;
                    verdict = Verdict::Inconclusive;
                    note = Some(burst_note(history.len(), span));
                }
                (ch, verdict, note)
            }
        };
        rows.push(GateRow {
            name: c.name.clone(),
            metric,
            key: c.key.clone(),
            threshold,
            baseline: summarize(&means),
            candidate: summarize(&c.samples),
            change,
            verdict,
            note,
        });
    }
    if let Some(span) = burst
        && withheld > 0
    {
        warnings.push(format!("{withheld} comparison(s) inconclusive: {}", burst_note(history.len(), span)));
    }
    let absent = super::unmeasured::unmeasured_rows(candidate, "candidate", metric, &spec, &rows, &mut warnings);
    rows.extend(absent);
    let name = |r: &LoadedRun| r.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let first_last = match (history.first(), history.last()) {
        (Some(f), Some(l)) => format!("{} .. {}", name(f), name(l)),
        _ => String::new(),
    };
    Ok(GateReport {
        baseline: format!("history of {} runs: {first_last}", history.len()),
        candidate: name(candidate),
        rows,
        warnings,
        paired: None,
    })
}
