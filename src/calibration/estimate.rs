//! From A/A runs of one build to a [`Calibration`]: per cell (and per step) the log values
//! grouped by run and round, their variance components, and what a repetition and a round cost.

use std::collections::BTreeMap;

use super::{CALIBRATION_SCHEMA_VERSION, Calibration, CellCalibration};
use crate::catalogue::{Metric, round_samples, samples};
use crate::results::LoadedRun;
use crate::stats::variance_components::{RunValues, variance_components};

/// One compared quantity's values over the runs, and what its repetitions cost.
#[derive(Default)]
struct Gathered {
    metric: &'static str,
    key: String,
    runs: Vec<RunValues>,
    repetition_seconds: Vec<f64>,
}

/// The calibration of `runs` (A/A runs of one scenario on one host, oldest first), dated
/// `date`. `warmup_seconds` is the lat_fs warmup each repetition spends before its window.
/// A quantity without two runs that each have repetitions gets no entry; a value that is not
/// positive has no logarithm and is left out.
pub fn estimate(runs: &[LoadedRun], warmup_seconds: f64, date: String) -> Calibration {
    let mut by_name: BTreeMap<String, Gathered> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut round_seconds: Vec<f64> = Vec::new();
    for run in runs {
        let mut rep_seconds_of_run = 0.0;
        let mut cell_rounds = 0u32;
        for cell in &run.cells {
            if let Some(l) = &cell.latfs {
                let g = gathered(&mut by_name, &mut order, &cell.id, Metric::TotalLoops.name());
                g.key = cell.params.test.map(|t| t.name().to_string()).unwrap_or_default();
                for r in &l.repetitions {
                    // Disturbed repetitions took their time too; only counted ones are values.
                    let window = r.tasks.iter().map(|t| t.window_ns).max().unwrap_or(0) as f64 / 1e9;
                    rep_seconds_of_run += window + warmup_seconds;
                    if r.counts() && r.total_loops_per_ms > 0.0 {
                        g.repetition_seconds.push(window + warmup_seconds);
                    }
                }
                // The values are each round's samples by the catalogue's rule, as logarithms.
                let rounds: Vec<Vec<f64>> = (0..l.rounds_done())
                    .map(|k| round_samples(cell, Metric::TotalLoops, k).into_iter().filter(|x| *x > 0.0).map(f64::ln))
                    .map(|logs| logs.collect::<Vec<f64>>())
                    .filter(|logs| !logs.is_empty())
                    .collect();
                cell_rounds += l.rounds_done();
                g.runs.push(rounds);
            } else if cell.steps.is_some() {
                // A step's steady iterations are its repetitions, all in the run's one round.
                for s in samples(cell, Metric::Elapsed) {
                    let g = gathered(&mut by_name, &mut order, &s.name, Metric::Elapsed.name());
                    g.key = s.key.clone();
                    let logs: Vec<f64> = s.samples.iter().filter(|x| **x > 0.0).map(|x| x.ln()).collect();
                    g.repetition_seconds.extend(s.samples.iter().copied());
                    g.runs.push(vec![logs]);
                }
            }
        }
        // What a round costs besides its repetitions: the run's wall time over its cell
        // rounds, less the repetitions' share (lat_fs only: steps cells run one round).
        let wall = match (&run.meta.finished, crate::results::unix_from_rfc3339(&run.meta.started)) {
            (Some(f), Some(s)) => crate::results::unix_from_rfc3339(f).map(|f| f.saturating_sub(s) as f64),
            _ => None,
        };
        if let Some(wall) = wall
            && cell_rounds > 0
        {
            round_seconds.push(((wall - rep_seconds_of_run) / cell_rounds as f64).max(0.0));
        }
    }
    let mean = |v: &[f64]| if v.is_empty() { 0.0 } else { v.iter().sum::<f64>() / v.len() as f64 };
    let round_cost = mean(&round_seconds);
    let cells = order
        .iter()
        .filter_map(|name| {
            let g = &by_name[name];
            let levels = variance_components(&g.runs)?;
            let lat_fs = g.metric == Metric::TotalLoops.name();
            Some(CellCalibration {
                name: name.clone(),
                metric: g.metric.to_string(),
                key: g.key.clone(),
                levels,
                repetition_seconds: mean(&g.repetition_seconds),
                round_seconds: if lat_fs { round_cost } else { 0.0 },
            })
        })
        .collect();
    let first = runs.first();
    Calibration {
        schema: CALIBRATION_SCHEMA_VERSION,
        fsbench_version: env!("CARGO_PKG_VERSION").to_string(),
        date,
        host: first.map(|r| r.meta.host.clone()).unwrap_or_default(),
        scenario: first.map(|r| r.meta.scenario_name.clone()).unwrap_or_default(),
        scenario_sha256: first.map(|r| r.meta.scenario_sha256.clone()).unwrap_or_default(),
        // The caller knows the text without its own overrides; until it says, only this one.
        gated_sha256: None,
        runs: runs.iter().map(|r| r.meta.run_id.clone()).collect(),
        cells,
    }
}

fn gathered<'a>(
    by_name: &'a mut BTreeMap<String, Gathered>,
    order: &mut Vec<String>,
    name: &str,
    metric: &'static str,
) -> &'a mut Gathered {
    if !by_name.contains_key(name) {
        order.push(name.to_string());
    }
    by_name.entry(name.to_string()).or_insert_with(|| Gathered { metric, ..Gathered::default() })
}
