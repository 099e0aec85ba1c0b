//! Exports for the dashboards CI users already run: github-action-benchmark's custom JSON
//! (`customBiggerIsBetter` / `customSmallerIsBetter`: an array of `{name, unit, value, range,
//! extra}`) and Bencher's Metric Format (`{benchmark: {measure: {value, lower_value,
//! upper_value}}}`).
//!
//! Pure: runs in, JSON values out. Each number is over the samples of the metric catalogue
//! ([`crate::catalogue::samples`]: a lat_fs cell's undisturbed repetitions or rounds' means,
//! a step's steady undisturbed iterations, a fio cell's undisturbed repetitions), with the
//! direction the catalogue gives it (`total_loops`, `iops` and `bw` bigger is better, times
//! and latencies smaller): the mean, the run's value `history` and the gate state, with the
//! 95% confidence interval of that mean (Student's t, cut at zero: every measure is a
//! positive quantity; none from a single sample, where one sample cannot bound a mean).

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::catalogue::{Direction, Metric, samples};
use crate::model::{CellResult, CellStatus, FIO_METRICS, FioMetric};
use crate::monitor::latency::Percentile;
use crate::results::LoadedRun;
use crate::stats::{positive_mean_interval, summarize};

/// One exported number.
#[derive(Debug, Clone, PartialEq)]
pub struct Measure {
    /// Benchmark name: the cell id, with the step (`step2 untar linux.tar.gz`) for step cells,
    /// prefixed by the run's label when several runs are exported.
    pub benchmark: String,
    /// Measure name: `total_loops`, `latency_p50`/`p90`/`p99`, `elapsed`, fio's `iops`, `bw`,
    /// `p99`, `clat_mean`.
    pub measure: &'static str,
    /// Unit: `loops/ms`, `us`, `s`, `IOPS`, `MiB/s`.
    pub unit: &'static str,
    /// Which way is better (github-action-benchmark takes one direction per file:
    /// `customBiggerIsBetter` or `customSmallerIsBetter`).
    pub direction: Direction,
    /// The mean of the samples: the run's value of the metric, as `history` and the gate state it.
    pub value: f64,
    /// The 95% confidence interval of the mean, at or above zero; `None` from one sample.
    pub ci95: Option<(f64, f64)>,
    /// Samples behind it.
    pub n: usize,
    /// The run it comes from.
    pub run: String,
}

/// Every measure of `runs` (names prefixed by the run's label when there are several).
pub fn measures(runs: &[LoadedRun]) -> Vec<Measure> {
    let mut out = Vec::new();
    for run in runs {
        let prefix = if runs.len() > 1 { format!("{}/", run.label()) } else { String::new() };
        let run_name = run.meta.run_id.clone();
        for cell in run.cells.iter().filter(|c| c.status == CellStatus::Ok) {
            cell_measures(cell, &prefix, &run_name, &mut out);
        }
    }
    out
}

fn cell_measures(cell: &CellResult, prefix: &str, run: &str, out: &mut Vec<Measure>) {
    let mut push = |benchmark: String, measure: &'static str, metric: Metric, s: crate::model::Summary| {
        if s.n == 0 || !s.mean.is_finite() {
            return;
        }
        out.push(Measure {
            benchmark,
            measure,
            unit: metric.ascii_unit(),
            direction: metric.direction(),
            value: s.mean,
            ci95: positive_mean_interval(&s),
            n: s.n,
            run: run.to_string(),
        });
    };
    if let Some(l) = &cell.latfs {
        if let Some(p) = super::latfs::tables::point_of(cell) {
            push(format!("{prefix}{}", cell.id), "total_loops", Metric::TotalLoops, p.summary);
        }
        if l.latency_dist.is_some() {
            for (p, name) in
                [(Percentile::P50, "latency_p50"), (Percentile::P90, "latency_p90"), (Percentile::P99, "latency_p99")]
            {
                if let Some(point) = super::latfs::tables::point_by(cell, Some(p)) {
                    push(format!("{prefix}{}", cell.id), name, Metric::Latency(p), point.summary);
                }
            }
        }
    }
    if cell.steps.is_some() {
        for q in samples(cell, Metric::Elapsed) {
            let Some(step) = &q.step else { continue };
            let benchmark = format!("{prefix}{} step{} {}", cell.id, step.index + 1, step.label);
            push(benchmark, "elapsed", Metric::Elapsed, summarize(&q.samples));
        }
    }
    if cell.fio.is_some() {
        // The figures `gate --metric` names.
        for m in FIO_METRICS.iter().filter_map(|n| FioMetric::parse(n)) {
            for q in samples(cell, Metric::Fio(m)) {
                push(format!("{prefix}{}", cell.id), m.name(), Metric::Fio(m), summarize(&q.samples));
            }
        }
    }
}

/// Why an export would be empty: a CI job would publish a benchmark with nothing in it.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EmptyExport {
    /// No cell of the runs was measured (status ok) with a number to export.
    #[error("nothing to export: no cell of the runs was measured")]
    NothingMeasured,
    /// github-action-benchmark: no measure has the direction asked for.
    #[error(
        "--better {asked}: none of the runs' measures is {asked}-is-better; they measure {other} \
         (--better {other_word})"
    )]
    NoneThatWay {
        /// The direction asked for, as `--better` takes it.
        asked: &'static str,
        /// The measures of the other direction, by name (`total_loops`).
        other: String,
        /// The other direction, as `--better` takes it.
        other_word: &'static str,
    },
}

/// One entry of github-action-benchmark's custom format.
#[derive(Debug, Serialize)]
struct ActionEntry<'a> {
    name: String,
    unit: &'a str,
    value: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    range: Option<String>,
    extra: String,
}

/// The tooltip of one measure: what the value is, its interval (or why there is none) and its run.
fn extra(m: &Measure) -> String {
    let interval = match m.ci95 {
        Some((lo, hi)) => format!("95% CI of the mean [{}, {}]", short(lo), short(hi)),
        None => "no interval from one sample".to_string(),
    };
    format!("mean of {n}; {interval}\nrun {run}", n = m.n, run = m.run)
}

/// github-action-benchmark's array for the measures of one `direction` (the action's `tool`
/// is `customBiggerIsBetter` for [`Direction::HigherIsBetter`], `customSmallerIsBetter`
/// otherwise); `range` is `± ` the interval's half width, absent without an interval.
/// An array that would be empty is an error that names the measures there are.
pub fn github_action_benchmark(measures: &[Measure], direction: Direction) -> Result<Value, EmptyExport> {
    let entries: Vec<ActionEntry> = measures
        .iter()
        .filter(|m| m.direction == direction)
        .map(|m| ActionEntry {
            // The action keys its charts by name alone: the measure goes into it.
            name: format!("{} {}", m.benchmark, m.measure),
            unit: m.unit,
            value: m.value,
            range: m.ci95.map(|(lo, hi)| format!("± {}", short((hi - lo) / 2.0))),
            extra: extra(m),
        })
        .collect();
    if entries.is_empty() {
        if measures.is_empty() {
            return Err(EmptyExport::NothingMeasured);
        }
        let mut other: Vec<&str> = Vec::new();
        for m in measures.iter().map(|m| m.measure) {
            if !other.contains(&m) {
                other.push(m);
            }
        }
        let other_word = measures[0].direction.word();
        return Err(EmptyExport::NoneThatWay { asked: direction.word(), other: other.join(", "), other_word });
    }
    Ok(serde_json::to_value(entries).expect("plain data serializes"))
}

/// Bencher Metric Format: every measure, by benchmark then measure, with `lower_value` and
/// `upper_value` the interval of the mean (absent without one). Nothing measured is an error.
pub fn bencher(measures: &[Measure]) -> Result<Value, EmptyExport> {
    if measures.is_empty() {
        return Err(EmptyExport::NothingMeasured);
    }
    let mut doc = Map::new();
    for m in measures {
        let bench = doc.entry(m.benchmark.clone()).or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(b) = bench {
            let value = match m.ci95 {
                Some((lo, hi)) => json!({ "value": m.value, "lower_value": lo, "upper_value": hi }),
                None => json!({ "value": m.value }),
            };
            b.insert(m.measure.to_string(), value);
        }
    }
    Ok(Value::Object(doc))
}

/// Six significant figures: enough for a tooltip, short enough to read.
fn short(x: f64) -> String {
    let s = format!("{x:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() || s == "-" { "0".into() } else { s.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(direction: Direction, value: f64) -> Measure {
        Measure {
            benchmark: "ext4-M-qoff-t1-open_close".into(),
            measure: if direction == Direction::HigherIsBetter { "total_loops" } else { "latency_p99" },
            unit: if direction == Direction::HigherIsBetter { "loops/ms" } else { "us" },
            direction,
            value,
            ci95: Some((value - 1.5, value + 1.5)),
            n: 5,
            run: "20261101T000000Z-host".into(),
        }
    }

    /// The documented example of github-action-benchmark's custom tools: an array of objects
    /// with a string `name` and `unit`, a number `value`, and optional string `range` and `extra`.
    const ACTION_EXAMPLE: &str = r#"[
        {"name": "My Custom Smaller Is Better Benchmark - CPU Load", "unit": "Percent", "value": 50},
        {"name": "My Custom Smaller Is Better Benchmark - Memory Used", "unit": "Megabytes", "value": 100,
         "range": "3", "extra": "Value for Tooltip: 25\nOptional Num #2: 100\nAnything Else!"}
    ]"#;

    /// Bencher's documented BMF example.
    const BMF_EXAMPLE: &str = r#"{
        "benchmark_name": {
            "latency": {"value": 88.0, "lower_value": 87.42, "upper_value": 88.88},
            "throughput": {"value": 5.55, "lower_value": 3.14, "upper_value": 6.30}
        },
        "/bin/sh -c ./my_build_script.sh": {"build-time": {"value": 87.0}},
        "my_binary": {"file-size": {"value": 42.0}}
    }"#;

    /// The shape the action reads (`extractCustomBenchmarkResult`): what the example holds.
    fn action_shape_errors(doc: &Value) -> Vec<String> {
        let Some(entries) = doc.as_array() else { return vec!["not an array".into()] };
        let mut bad = Vec::new();
        for (i, e) in entries.iter().enumerate() {
            let Some(o) = e.as_object() else {
                bad.push(format!("{i}: not an object"));
                continue;
            };
            for k in o.keys() {
                if !["name", "unit", "value", "range", "extra"].contains(&k.as_str()) {
                    bad.push(format!("{i}: unknown key {k}"));
                }
            }
            if !o.get("name").is_some_and(Value::is_string) || !o.get("unit").is_some_and(Value::is_string) {
                bad.push(format!("{i}: name and unit must be strings"));
            }
            if !o.get("value").is_some_and(Value::is_number) {
                bad.push(format!("{i}: value must be a number"));
            }
            for k in ["range", "extra"] {
                if o.get(k).is_some_and(|v| !v.is_string()) {
                    bad.push(format!("{i}: {k} must be a string"));
                }
            }
        }
        bad
    }

    /// BMF's JSON Schema: benchmark -> measure -> {value (required), lower_value, upper_value}, numbers.
    fn bmf_shape_errors(doc: &Value) -> Vec<String> {
        let Some(benches) = doc.as_object() else { return vec!["not an object".into()] };
        let mut bad = Vec::new();
        for (b, measures) in benches {
            let Some(measures) = measures.as_object().filter(|_| !b.is_empty()) else {
                bad.push(format!("{b}: not an object"));
                continue;
            };
            for (name, metric) in measures {
                let Some(o) = metric.as_object().filter(|_| !name.is_empty()) else {
                    bad.push(format!("{b}/{name}: not an object"));
                    continue;
                };
                if !o.get("value").is_some_and(Value::is_number) {
                    bad.push(format!("{b}/{name}: value must be a number"));
                }
                for k in ["lower_value", "upper_value"] {
                    if o.get(k).is_some_and(|v| !v.is_number()) {
                        bad.push(format!("{b}/{name}: {k} must be a number"));
                    }
                }
            }
        }
        bad
    }

    #[test]
    fn the_checks_accept_the_formats_documented_examples() {
        assert_eq!(action_shape_errors(&serde_json::from_str(ACTION_EXAMPLE).unwrap()), Vec::<String>::new());
        assert_eq!(bmf_shape_errors(&serde_json::from_str(BMF_EXAMPLE).unwrap()), Vec::<String>::new());
        // And they do refuse what the tools would not read.
        assert!(!action_shape_errors(&json!([{"name": "x", "unit": "s", "value": "1"}])).is_empty());
        assert!(!bmf_shape_errors(&json!({"b": {"m": {"lower_value": 1.0}}})).is_empty());
    }

    #[test]
    fn github_action_benchmark_takes_one_direction_per_file_in_the_documented_shape() {
        let all = [m(Direction::HigherIsBetter, 100.0), m(Direction::LowerIsBetter, 12.5)];
        let bigger = github_action_benchmark(&all, Direction::HigherIsBetter).unwrap();
        assert_eq!(action_shape_errors(&bigger), Vec::<String>::new());
        assert_eq!(bigger.as_array().unwrap().len(), 1);
        assert_eq!(bigger[0]["name"], "ext4-M-qoff-t1-open_close total_loops");
        assert_eq!(bigger[0]["unit"], "loops/ms");
        assert_eq!(bigger[0]["value"], 100.0);
        assert_eq!(bigger[0]["range"], "± 1.5");
        assert!(bigger[0]["extra"].as_str().unwrap().contains("[98.5, 101.5]"));
        let smaller = github_action_benchmark(&all, Direction::LowerIsBetter).unwrap();
        assert_eq!(smaller[0]["name"], "ext4-M-qoff-t1-open_close latency_p99");
    }

    /// A measured fio cell with three undisturbed repetitions (1000, 2000, 4000 IOPS of 4 KiB)
    /// and a disturbed one that must not count.
    fn fio_run() -> LoadedRun {
        use crate::model::*;
        let rep = |index: u32, iops: f64, disturbed: bool| FioRepetition {
            index,
            total: FioJobStats {
                all: FioDirection {
                    iops,
                    bw_bytes: iops * 4096.0,
                    total_ios: 1000,
                    clat_ns: FioLatency { mean: 1e9 / iops, p99: 2e9 / iops, ..Default::default() },
                },
                ..Default::default()
            },
            disturbance: disturbed.then(|| Disturbance { disturbed: true, ..Default::default() }),
            ..Default::default()
        };
        let params = CellParams {
            fs: "xfs".into(),
            layout: Layout::S,
            quota: QuotaMode::Off,
            tasks: 1,
            test: None,
            fio: Default::default(),
            kernel: None,
        };
        let reps = vec![rep(0, 1000.0, false), rep(1, 4000.0, false), rep(2, 2000.0, false), rep(3, 9e9, true)];
        let cell = CellResult {
            fio: Some(FioResult { repetitions: reps, ..Default::default() }),
            ..CellResult::new(&params, CellStatus::Ok, "")
        };
        LoadedRun {
            dir: "results/fio/r1".into(),
            meta: crate::results::RunMeta { run_id: "r1".into(), ..Default::default() },
            cells: vec![cell],
            problems: vec![],
        }
    }

    #[test]
    fn a_fio_cell_exports_the_gate_s_figures_each_in_its_direction() {
        let run = fio_run();
        let id = run.cells[0].id.clone();
        let all = measures(std::slice::from_ref(&run));
        // The means of the three undisturbed repetitions (1000, 4000 and 2000 IOPS).
        let got: Vec<(&str, &str, Direction, String, usize)> =
            all.iter().map(|m| (m.measure, m.unit, m.direction, format!("{:.3}", m.value), m.n)).collect();
        let mean = |v: [f64; 3]| format!("{:.3}", v.iter().sum::<f64>() / 3.0);
        let mib = 4096.0 / (1024.0 * 1024.0);
        assert_eq!(
            got,
            [
                ("iops", "IOPS", Direction::HigherIsBetter, mean([1000.0, 4000.0, 2000.0]), 3),
                ("bw", "MiB/s", Direction::HigherIsBetter, mean([1000.0 * mib, 4000.0 * mib, 2000.0 * mib]), 3),
                ("p99", "us", Direction::LowerIsBetter, mean([2000.0, 500.0, 1000.0]), 3),
                ("clat_mean", "us", Direction::LowerIsBetter, mean([1000.0, 250.0, 500.0]), 3),
            ]
        );
        let bigger = github_action_benchmark(&all, Direction::HigherIsBetter).unwrap();
        assert_eq!(action_shape_errors(&bigger), Vec::<String>::new());
        let names: Vec<&str> = bigger.as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
        assert_eq!(names, [format!("{id} iops"), format!("{id} bw")]);
        let smaller = github_action_benchmark(&all, Direction::LowerIsBetter).unwrap();
        assert_eq!(smaller.as_array().unwrap().len(), 2);
        let doc = bencher(&all).unwrap();
        assert_eq!(bmf_shape_errors(&doc), Vec::<String>::new());
        assert_eq!(doc[&id]["iops"]["value"], 7000.0 / 3.0);
        let ci = (doc[&id]["iops"]["lower_value"].as_f64().unwrap(), doc[&id]["iops"]["upper_value"].as_f64().unwrap());
        assert!(ci.0 < 2333.4 && 2333.3 < ci.1, "the interval of the mean 2333.3: {ci:?}");
    }

    #[test]
    fn bencher_holds_every_measure_with_its_interval_in_the_documented_shape() {
        let all = [m(Direction::HigherIsBetter, 100.0), m(Direction::LowerIsBetter, 12.5)];
        let doc = bencher(&all).unwrap();
        assert_eq!(bmf_shape_errors(&doc), Vec::<String>::new());
        let cell = &doc["ext4-M-qoff-t1-open_close"];
        assert_eq!(cell["total_loops"], json!({"value": 100.0, "lower_value": 98.5, "upper_value": 101.5}));
        assert_eq!(cell["latency_p99"]["value"], 12.5);
    }

    /// Issue 38 item 4: one sample gave `range: "± 0"` and `[17.07, 17.07]` (Bencher: lower =
    /// upper = value) where the gate says the interval is unbounded. One sample has no interval.
    #[test]
    fn one_sample_exports_no_interval_rather_than_a_zero_width_one() {
        let mut run = fio_run();
        let f = run.cells[0].fio.as_mut().unwrap();
        f.repetitions.truncate(1);
        let all = measures(std::slice::from_ref(&run));
        assert!(all.iter().all(|m| m.n == 1 && m.ci95.is_none()), "{all:?}");
        let bigger = github_action_benchmark(&all, Direction::HigherIsBetter).unwrap();
        assert_eq!(action_shape_errors(&bigger), Vec::<String>::new());
        assert!(bigger[0].get("range").is_none(), "{bigger}");
        assert!(bigger[0]["extra"].as_str().unwrap().starts_with("mean of 1; no interval from one sample"), "{bigger}");
        let doc = bencher(&all).unwrap();
        assert_eq!(bmf_shape_errors(&doc), Vec::<String>::new());
        assert_eq!(doc[&run.cells[0].id]["iops"], json!({"value": 1000.0}));
    }

    /// Issue 38 item 13: `IOPS -22108..58540` at n = 2. The mean of a positive quantity has
    /// no interval below zero.
    #[test]
    fn two_far_apart_samples_give_an_interval_cut_at_zero() {
        let mut run = fio_run();
        let f = run.cells[0].fio.as_mut().unwrap();
        f.repetitions.truncate(2);
        f.repetitions[1].total.all.iops = 35000.0;
        let all = measures(std::slice::from_ref(&run));
        let iops = all.iter().find(|m| m.measure == "iops").unwrap();
        let (lo, hi) = iops.ci95.expect("two samples have an interval");
        assert!(lo == 0.0 && hi > 35000.0, "{lo} {hi}");
        assert!(all.iter().all(|m| m.ci95.is_some_and(|(lo, _)| lo >= 0.0)), "{all:?}");
    }

    /// Issue 38 item 21: `--better lower` on a lat_fs run without latencies wrote `[]`, and CI
    /// published an empty benchmark; and `value` was the median beside the mean's interval.
    #[test]
    fn an_export_with_nothing_that_way_is_an_error_and_the_value_is_the_interval_s_mean() {
        let all = [m(Direction::HigherIsBetter, 100.0)];
        let err = github_action_benchmark(&all, Direction::LowerIsBetter).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--better lower: none of the runs' measures is lower-is-better; they measure total_loops (--better higher)"
        );
        assert_eq!(github_action_benchmark(&[], Direction::HigherIsBetter), Err(EmptyExport::NothingMeasured));
        assert_eq!(bencher(&[]), Err(EmptyExport::NothingMeasured));
        // Skewed samples (1000, 4000, 2000 IOPS): the value is the mean the interval is of, not the median.
        let run = fio_run();
        let all = measures(std::slice::from_ref(&run));
        let iops = all.iter().find(|m| m.measure == "iops").unwrap();
        let s = summarize(&[1000.0, 4000.0, 2000.0]);
        assert_eq!((iops.value, iops.ci95.unwrap().1), (s.mean, s.ci95_high));
        assert_ne!(iops.value, s.median);
    }
}
