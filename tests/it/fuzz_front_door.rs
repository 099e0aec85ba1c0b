//! The front door, fuzzed: mutations of the bundled scenarios, `--set` overrides,
//! bundles and result files. Whatever the input, no panic and no hang; a scenario
//! rejection is a located `ScenarioError`, a result file rejection a named problem.
//! Case counts keep the whole file well under a minute in a debug build.

use std::io::Write;
use std::path::{Path, PathBuf};

use fsbench::report::Format;
use fsbench::results::{LoadedRun, load_run};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use crate::support::crate_root;
use crate::support::report::{latfs_cell, latfs_scenario_text, meta};

/// Every scenario text shipped with fsbench or its tests: the seeds of the mutations.
fn seed_scenarios() -> Vec<String> {
    let mut out = Vec::new();
    for dir in ["scenarios", "tests/bad_scenarios"] {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(crate_root().join(dir))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        paths.sort();
        out.extend(paths.iter().map(|p| std::fs::read_to_string(p).unwrap()));
    }
    assert!(out.len() > 10, "the seeds are there");
    out
}

/// Fragments a mutation splices in: TOML syntax, keys, units, extremes.
const TOKENS: &[&str] = &[
    "[",
    "]",
    "{",
    "}",
    "=",
    "\"",
    "'",
    ",",
    "\n",
    "#",
    "[[kernels]]",
    "[matrix]",
    "[workload]",
    "[archive]",
    "tasks = [0]",
    "tasks = [4294967296]",
    "fs = []",
    "duration = \"1e308s\"",
    "image_size = \"99999999TiB\"",
    "repetitions = -1",
    "iterations = 9223372036854775807",
    "scale = 1e308",
    "scale = nan",
    "path = \"../../etc\"",
    "kind = \"dir\"",
    "kind = \"steps\"",
    "op = \"exec\"",
    "\u{0}",
    "\u{202e}",
    "é",
    "\t",
    "schema = 2",
    "1GiB",
    "300ms",
    "inf",
    "-0",
    "0x10",
    "true",
];

/// A mutation: (kind, position fraction, length, token index, byte).
type Mutation = (u8, f64, usize, usize, u8);

fn mutate(text: &str, muts: &[Mutation]) -> String {
    let mut b = text.as_bytes().to_vec();
    for &(kind, pos, len, tok, byte) in muts {
        let at = ((b.len() as f64) * pos) as usize;
        let at = at.min(b.len());
        match kind % 4 {
            0 => {
                let end = (at + len).min(b.len());
                b.drain(at..end);
            }
            1 => {
                let t = TOKENS[tok % TOKENS.len()].as_bytes();
                b.splice(at..at, t.iter().copied());
            }
            2 if at < b.len() => b[at] = byte,
            _ => {
                // Duplicate a slice: repeated keys and tables.
                let end = (at + len).min(b.len());
                let dup = b[at..end].to_vec();
                b.splice(at..at, dup);
            }
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

fn mutations() -> impl Strategy<Value = Vec<Mutation>> {
    prop::collection::vec((any::<u8>(), 0.0..1.0f64, 0usize..40, any::<usize>(), any::<u8>()), 1..6)
}

const SET_KEYS: &[&str] = &[
    "workload.duration",
    "workload.repetitions",
    "workload.iterations",
    "matrix.tasks",
    "matrix.fs",
    "backing.kind",
    "backing.image_size",
    "archive.scale",
    "archive.on_target",
    "name",
    "schema",
    "nosuch.key",
    "matrix",
    "",
];
const SET_VALUES: &[&str] =
    &["1ms", "0", "-1", "[1, 2]", "[]", "\"dir\"", "dir", "1e309", "true", "[\"ext4\"", "{", "x\ny", "99999999999"];

#[test]
fn mutated_scenarios_and_overrides_never_panic_and_rejections_are_located() {
    let seeds = seed_scenarios();
    let mut runner =
        TestRunner::new(Config { cases: fuzz_cases(4000), failure_persistence: None, ..Config::default() });
    let strategy = (0..seeds.len(), mutations(), prop::collection::vec((0..SET_KEYS.len(), 0..SET_VALUES.len()), 0..3));
    runner
        .run(&strategy, |(seed, muts, sets)| {
            let text = mutate(&seeds[seed], &muts);
            let sets: Vec<String> = sets.iter().map(|&(k, v)| format!("{}={}", SET_KEYS[k], SET_VALUES[v])).collect();
            match fsbench::scenario::parse_overridden(&text, "fuzz.toml", Path::new("/nonexistent"), &sets) {
                Ok(s) => {
                    // A valid scenario expands (bounded) without panicking.
                    let _ = fsbench::plan::plan_for(&s, &[]);
                }
                Err(e) => {
                    prop_assert!(!e.message.is_empty(), "an empty rejection for {text:?}");
                    prop_assert!(
                        e.line.is_some() || e.key.is_some() || e.origin.starts_with("--set"),
                        "rejection without a location: {e}\n{text}"
                    );
                }
            }
            Ok(())
        })
        .unwrap();
}

/// `default` cases, or `FSBENCH_FUZZ_CASES` of them (the nightly run, `benches/fuzz.sh`).
fn fuzz_cases(default: u32) -> u32 {
    std::env::var("FSBENCH_FUZZ_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(default)
}

/// A good lat_fs run to mutate: run.json and one cell file, as JSON values.
fn seed_run() -> (serde_json::Value, serde_json::Value) {
    use fsbench::model::{CellParams, LatfsTest, Layout, QuotaMode};
    let p = CellParams {
        fs: "ext4".into(),
        layout: Layout::S,
        quota: QuotaMode::Off,
        tasks: 2,
        test: Some(LatfsTest::Chown),
        fio: Default::default(),
        kernel: None,
    };
    let text = latfs_scenario_text("fuzz", "");
    let m = meta(Some("BASE"), "fuzz", &text, "lat_fs", vec![p.clone()]);
    let c = latfs_cell(p, &[100.0, 101.0, 99.5]);
    (serde_json::to_value(&m).unwrap(), serde_json::to_value(&c).unwrap())
}

/// Replace one leaf (chosen by `pick`) of a JSON value with `with`.
fn replace_leaf(v: &mut serde_json::Value, pick: &mut usize, with: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::Object(m) => m.values_mut().any(|x| replace_leaf(x, pick, with)),
        serde_json::Value::Array(a) => a.iter_mut().any(|x| replace_leaf(x, pick, with)),
        leaf => {
            if *pick == 0 {
                *leaf = with.clone();
                return true;
            }
            *pick -= 1;
            false
        }
    }
}

fn hostile_values() -> Vec<serde_json::Value> {
    use serde_json::json;
    vec![
        json!(1.7976931348623157e308),
        json!(-1.7976931348623157e308),
        json!(5e-324),
        json!(-1),
        json!(0),
        json!(4294967295u64),
        json!(18446744073709551615u64),
        json!(null),
        json!(""),
        json!("\u{1b}[2J\n"),
        json!([]),
        json!({}),
        json!(true),
        json!("ext4/../../x"),
        // Text no renderer may obey or choke on: Markdown blocks, HTML, a long label.
        json!("x\n## fsbench gate: no regression\n<img src=x>\n| a |"),
        json!("L".repeat(65_536)),
        json!("é".repeat(4_097)),
    ]
}

/// Everything that reads result files, on one loaded run (and the run against itself).
fn read_everything(run: &LoadedRun) {
    for f in [Format::Table, Format::Markdown, Format::Csv, Format::Json] {
        let _ = fsbench::report::render_run(run, f);
    }
    let both = vec![("A".to_string(), run.clone()), ("B".to_string(), run.clone())];
    let _ = fsbench::report::render_compare(&both, Format::Table);
    let opts = fsbench::gate::GateOptions { threshold: None, metric: None, allow_missing: false };
    let _ = fsbench::gate::evaluate(run, run, &opts);
    if let Ok(groups) = fsbench::shard::merge::group_runs(vec![run.clone()]) {
        for g in &groups {
            if let Ok(hosts) = fsbench::shard::merge::merge_by_host(g) {
                let _ = fsbench::shard::merge::render_group(&hosts, Format::Table);
            }
        }
    }
}

#[test]
fn mutated_result_files_never_panic_in_report_compare_gate_or_merge() {
    let (m, c) = seed_run();
    let hostile = hostile_values();
    let tmp = tempfile::tempdir().unwrap();
    let mut runner = TestRunner::new(Config { cases: fuzz_cases(600), failure_persistence: None, ..Config::default() });
    let strategy = (any::<bool>(), 0usize..200, 0..hostile.len(), prop::collection::vec(any::<u8>(), 0..3));
    let n = std::cell::Cell::new(0u32);
    runner
        .run(&strategy, |(in_meta, pick, value, garbage)| {
            n.set(n.get() + 1);
            let (mut m, mut c) = (m.clone(), c.clone());
            let target = if in_meta { &mut m } else { &mut c };
            let mut left = pick;
            replace_leaf(target, &mut left, &hostile[value]);
            let dir = tmp.path().join(format!("r{}", n.get()));
            std::fs::create_dir_all(dir.join("cells")).unwrap();
            std::fs::write(dir.join("run.json"), serde_json::to_vec(&m).unwrap()).unwrap();
            let mut cell = serde_json::to_vec(&c).unwrap();
            cell.extend_from_slice(&garbage);
            // Named by the id as the store names it, unless the id is no file name (the loader
            // reads every `*.json` in `cells/`).
            let id = c["id"].as_str().filter(|i| fsbench::text::is_plain_name(i)).unwrap_or("x");
            std::fs::write(dir.join("cells").join(format!("{id}.json")), cell).unwrap();
            match load_run(&dir) {
                Ok(run) => {
                    for p in &run.problems {
                        prop_assert!(p.contains(".json"), "a problem names its file: {p}");
                    }
                    read_everything(&run);
                }
                Err(e) => prop_assert!(e.to_string().contains("run.json"), "names run.json: {e}"),
            }
            std::fs::remove_dir_all(&dir).unwrap();
            Ok(())
        })
        .unwrap();
}

#[test]
fn mutated_bundles_are_refused_without_panicking() {
    let tmp = tempfile::tempdir().unwrap();
    let good = tmp.path().join("good.fsbench");
    fsbench::bundle::pack::pack(&crate_root().join("scenarios/quickstart.toml"), None, &good).unwrap();
    // Mutate the tar stream (inside the gzip), so mutations reach the manifest and entries.
    let mut tar = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::MultiGzDecoder::new(std::fs::File::open(&good).unwrap()), &mut tar)
        .unwrap();
    let mut runner = TestRunner::new(Config { cases: 400, failure_persistence: None, ..Config::default() });
    let strategy = prop::collection::vec((0.0..1.0f64, any::<u8>(), any::<bool>()), 1..8);
    let n = std::cell::Cell::new(0u32);
    runner
        .run(&strategy, |muts| {
            n.set(n.get() + 1);
            let mut b = tar.clone();
            for (pos, byte, truncate) in muts {
                let at = ((b.len() as f64) * pos) as usize;
                if truncate {
                    b.truncate(at);
                } else if at < b.len() {
                    b[at] = byte;
                }
            }
            let path = tmp.path().join(format!("m{}.fsbench", n.get()));
            let mut gz =
                flate2::write::GzEncoder::new(std::fs::File::create(&path).unwrap(), flate2::Compression::fast());
            gz.write_all(&b).unwrap();
            gz.finish().unwrap();
            if let Ok(ob) = fsbench::bundle::open_bundle(&path, None) {
                // Opened means every checksum matched: then its scenario parses or is a located error.
                let _ = ob.scenario("bundle", &[]);
            }
            std::fs::remove_file(&path).unwrap();
            Ok(())
        })
        .unwrap();
}
