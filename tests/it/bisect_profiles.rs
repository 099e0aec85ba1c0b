//! A bisection whose steps carry profiles, without qemu: every step is a kernel-paired run
//! through the runner (`run_kernel_paired`, the results writer) whose members come from a
//! scripted executor standing in for the guests: loops per ms of the candidate's level,
//! and for the first 8 pairs of each arm a perf-style folded profile of lat_fs open_close,
//! its stacks' counts drawn with noise, each stored under its pair index as the qemu
//! member stores a guest's. V2 and V3 are "booted with `slub_debug`": 30% slower, and
//! their profiles gain the slab debugging checks under `kmem_cache_alloc` and
//! `kmem_cache_free`. V3's guest has no perf. The step's measure is read back from the
//! stored run as a real bisection's is (`judge_kernels::step_of_run`), so the log's
//! profile entry and the report's diffs are the real code's over the stored files.

use std::path::{Path, PathBuf};

use fsbench::bisect::search::{Conclusion, StepJudge};
use fsbench::bisect::step::StepMeasure;
use fsbench::model::{CellProfile, CellResult, CellStatus, LatfsRepetition};
use fsbench::plan::Cell;
use fsbench::runner::{CellExecutor, KernelPairedRequest, Phase, run_kernel_paired};

const OPEN: &str = "lat_fs;__libc_open64;entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_openat;\
                    do_sys_openat2;do_filp_open;path_openat";
const CLOSE: &str = "lat_fs;__close;entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_close;__fput";

/// The stacks of a plain kernel's open_close profile, with their weights.
fn plain_stacks() -> Vec<(String, f64)> {
    vec![
        (format!("{OPEN};link_path_walk.part.0;walk_component;lookup_fast"), 300.0),
        (format!("{OPEN};alloc_empty_file;kmem_cache_alloc;memset_orig"), 120.0),
        (format!("{OPEN};do_dentry_open;ext4_file_open;dquot_file_open"), 150.0),
        (format!("{CLOSE};ext4_release_file"), 100.0),
        (format!("{CLOSE};kmem_cache_free"), 80.0),
        ("lat_fs;main;lat_open_close".into(), 50.0),
    ]
}

/// The stacks under `slub_debug=FZPU`: the plain ones and the slab checks.
fn debug_stacks() -> Vec<(String, f64)> {
    let mut s = plain_stacks();
    s.push((
        format!("{OPEN};alloc_empty_file;kmem_cache_alloc;___slab_alloc;alloc_debug_processing;check_object"),
        400.0,
    ));
    s.push((format!("{CLOSE};kmem_cache_free;free_to_partial_list;free_debug_processing;check_object"), 300.0));
    s
}

/// The total share (percent) of `function` in `stacks`' weights: what the diff should see.
fn share(stacks: &[(String, f64)], function: &str) -> f64 {
    let total: f64 = stacks.iter().map(|(_, w)| w).sum();
    let with: f64 = stacks.iter().filter(|(s, _)| s.split(';').any(|f| f == function)).map(|(_, w)| w).sum();
    100.0 * with / total
}

/// A small deterministic generator (xorshift), uniform in [-1, 1).
struct Noise(u64);
impl Noise {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
}

/// Stands in for the guests of one step: a member of kernel `Vk` runs at its level, and
/// the first 8 of each arm carry a profile (numbered per arm, as `qemu::member` numbers them).
struct Guests {
    noise: Noise,
    profiled: std::collections::BTreeMap<String, u32>,
}

fn slow(label: &str) -> bool {
    label == "V2" || label == "V3"
}

impl CellExecutor for Guests {
    fn measure(&mut self, cell: &Cell, _phase: &Phase) -> CellResult {
        let label = cell.params.kernel.clone().unwrap();
        let level = if slow(&label) { 70.0 } else { 100.0 };
        let mut r = CellResult::new(&cell.params, CellStatus::Ok, "2026-12-05T12:00:00Z");
        let rep =
            LatfsRepetition { total_loops_per_ms: level * (1.0 + 0.01 * self.noise.next()), ..Default::default() };
        r.latfs = Some(fsbench::workload::latfs::result(vec![rep]));
        let done = self.profiled.entry(cell.params.id()).or_default();
        if *done < fsbench::profile::PROFILED_PAIRS {
            let mut p = if label == "V3" {
                CellProfile::not_profiled("the qemu guest has no perf: the host had none to pack into it")
            } else {
                let stacks = if slow(&label) { debug_stacks() } else { plain_stacks() };
                // A window of a fixed length: about the same samples whatever the kernel.
                let scale = 1000.0 / stacks.iter().map(|(_, w)| w).sum::<f64>();
                let counts: Vec<(String, u64)> = stacks
                    .into_iter()
                    .map(|(s, w)| (s, (w * scale * (1.0 + 0.05 * self.noise.next())).round() as u64))
                    .collect();
                CellProfile {
                    event: Some("cpu-clock".into()),
                    frequency_hz: Some(999),
                    kernel_release: Some("6.1.0-50-amd64".into()),
                    samples: counts.iter().map(|(_, c)| c).sum(),
                    stacks: counts.len() as u64,
                    folded: counts.iter().map(|(s, c)| format!("{s} {c}\n")).collect(),
                    file: Some(String::new()),
                    ..Default::default()
                }
            };
            p.pair = Some(*done);
            fsbench::profile::name_files(&mut p, &r.id);
            r.profile = Some(p);
            *done += 1;
        }
        r
    }
}

/// Every step a kernel-paired run of the two candidates stored under the bisection's
/// directory, its measure read back from the stored run.
struct Judge<'a> {
    scenario: &'a fsbench::scenario::Scenario,
    cells: &'a [Cell],
    dir: PathBuf,
    seed: u64,
}

impl StepJudge for Judge<'_> {
    fn judge(&mut self, b: usize, c: usize) -> anyhow::Result<Option<StepMeasure>> {
        self.seed += 1;
        let labels = vec![format!("V{b}"), format!("V{c}")];
        let mut guests = Guests { noise: Noise(0x9e37_79b9_7f4a_7c15 ^ self.seed), profiled: Default::default() };
        let req = KernelPairedRequest {
            scenario: self.scenario,
            cells: self.cells,
            labels: labels.clone(),
            out: self.dir.clone(),
            quiet: true,
            environment: None,
        };
        let kernels = |_: &Guests| {
            labels
                .iter()
                .map(|l| fsbench::results::RunKernel { label: l.clone(), image: format!("/k/{l}"), accel: None })
                .collect()
        };
        let o = run_kernel_paired(req, &mut guests, &kernels)?;
        fsbench::bisect::judge_kernels::step_of_run(&self.dir, &o.dir).map(Some)
    }
}

const SCENARIO: &str = r#"schema = 1
name = "slab"
[matrix]
fs = ["ext4"]
layout = ["S"]
quota = ["off"]
tasks = [1]
test = ["open_close"]
[backing]
kind = "dir"
path = "/tmp"
[workload]
kind = "lat_fs"
profile = "cpu"
[compare]
arms = "kernel"
pairs = { min = 8, max = 16 }
seed = 11
[gate]
threshold = "5%"
"#;

/// A bisection of V0..V3 under `d` whose culprit is V2; its directory.
fn bisected(d: &Path) -> PathBuf {
    let s = fsbench::scenario::parse_str(SCENARIO, "slab.toml").unwrap();
    let cells = fsbench::plan::expand(&s).cells;
    let kernels: Vec<_> = (0..4).map(|i| fsbench::qemu::parse_kernel_arg(&format!("V{i}=/k/V{i}")).unwrap()).collect();
    let spec = fsbench::runner::kernel_compare(&s, &["V0".into(), "V1".into()]).unwrap();
    let mut log = fsbench::bisect::setup::new_log(&s, &cells, &spec, 11, &kernels);
    let dir = fsbench::bisect::drive::create_dir(d, &s.name).unwrap();
    let mut judge = Judge { scenario: &s, cells: &cells, dir: dir.path.clone(), seed: 0 };
    let c = fsbench::bisect::drive::run(&mut judge, &mut log, &dir, true).unwrap();
    assert_eq!(c, Conclusion::Culprit { candidate: 2 }, "{:#?}", log.steps);
    dir.path.clone()
}

fn report(dir: &Path, extra: &[&str]) -> String {
    let out = crate::support::fsbench().arg("report").arg(dir).args(extra).output().unwrap();
    assert!(out.status.success(), "{extra:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_culprit_steps_profile_diff_names_the_slab_checks_in_the_log_the_report_and_the_mail() {
    let d = tempfile::tempdir().unwrap();
    let dir = bisected(d.path());
    let (plain, debug) = (plain_stacks(), debug_stacks());
    let grew = share(&debug, "check_object") - share(&plain, "check_object");
    let shrank = share(&debug, "lookup_fast") - share(&plain, "lookup_fast");
    assert!(grew > 30.0 && shrank < -10.0, "{grew} {shrank}");

    // The log: every step says whether it was profiled; the culprit's confirmation (V2
    // against V1) lists check_object first among the grown, by about the expected points.
    let stored = std::fs::read(dir.join("bisect.json")).unwrap();
    let log = crate::schemas::conforming("bisect.schema.json", &stored, "bisect.json");
    assert_eq!(log["culprit"], "V2");
    let steps = log["steps"].as_array().unwrap();
    let step = |c: &str, b: &str| {
        let pos = |l: &str| l[1..].parse::<u64>().unwrap();
        steps
            .iter()
            .rfind(|s| s["candidate"] == pos(c) && s["baseline"] == pos(b))
            .unwrap_or_else(|| panic!("no step {c} against {b}: {steps:#?}"))
    };
    let culprit = &step("V2", "V1")["measure"]["profile"];
    assert_eq!(culprit["profiled"], true, "{culprit:#}");
    let diff = &culprit["diffs"][0];
    assert_eq!((diff["judged"].as_str(), diff["pairs"].as_u64()), (Some("across_pairs"), Some(8)), "{diff:#}");
    assert_eq!(diff["grown"][0]["function"], "check_object", "{diff:#}");
    let pp = diff["grown"][0]["change_pp"].as_f64().unwrap();
    assert!((pp - grew).abs() < 3.0, "check_object grew {pp} points, {grew} expected");
    assert!(diff["grown"][0]["p"].as_f64().unwrap() < 0.05);
    let lookup = diff["shrunk"].as_array().unwrap().iter().find(|f| f["function"] == "lookup_fast");
    let lookup = lookup.unwrap_or_else(|| panic!("lookup_fast not among the shrunk: {diff:#}"));
    assert!((lookup["change_pp"].as_f64().unwrap() - shrank).abs() < 3.0, "{lookup:#}");
    assert!(diff["grown"].as_array().unwrap().len() <= 5 && diff["shrunk"].as_array().unwrap().len() <= 5);
    // The same kernel against itself: profiled, nothing beyond the noise.
    let same = &step("V1", "V0")["measure"]["profile"];
    assert_eq!(same["profiled"], true, "{same:#}");
    assert_eq!(same["diffs"][0]["grown"].as_array().map(Vec::len), Some(0), "{same:#}");
    assert_eq!(same["diffs"][0]["shrunk"].as_array().map(Vec::len), Some(0), "{same:#}");
    // V3's guest had no perf: the endpoints' step says so and lists nothing.
    let endpoints = &step("V3", "V0")["measure"]["profile"];
    assert_eq!(endpoints["profiled"], false, "{endpoints:#}");
    assert!(endpoints["why_not"].as_str().unwrap().contains("V3: not profiled: the qemu guest has no perf"));

    // The report: the culprit step's diff first, as the why, then the other steps'.
    let text = report(&dir, &[]);
    let why = text.find("Why: the profile diff of the culprit's step").unwrap_or_else(|| panic!("{text}"));
    let steps_at = text.find("Steps").unwrap();
    assert!(why < steps_at, "{text}");
    let why_text = &text[why..steps_at];
    assert!(why_text.contains("V2 against V1, bad"), "{why_text}");
    let grew_at = why_text.find("function (grew)").unwrap();
    let shrank_at = why_text.find("function (shrank)").unwrap();
    let check = why_text.find("check_object").unwrap();
    assert!(grew_at < check && check < shrank_at, "check_object not in the grown table:\n{why_text}");
    assert!(why_text[shrank_at..].contains("lookup_fast"), "{why_text}");
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("Profile diff of step 2 (midpoint): V1 against V0, good"), "{text}");
    assert!(words.contains("0 grew and 0 shrank"), "{text}");
    // The steps' table: each step's largest change (V1 against V0: none; V3's: not profiled).
    for cell in ["profile: largest change", "no change beyond the noise", "check_object +4", "not profiled"] {
        assert!(words.contains(cell), "{cell}: {text}");
    }
    let v3 = "step 1 (endpoints): V3 against V0, bad: no profile diff: V3: not profiled: the qemu guest has no perf";
    assert!(words.contains(v3), "{text}");

    // The mail: the why right after the conclusion, in 80 columns.
    let mail = report(&dir, &["--format", "email"]);
    assert!(mail.lines().all(|l| l.chars().count() <= 80), "{mail}");
    let why = mail.find("why: the profile of step").unwrap_or_else(|| panic!("{mail}"));
    assert!(why < mail.find("steps (each").unwrap(), "{mail}");
    let first = mail[why..].lines().find(|l| l.contains("  p ")).unwrap();
    assert!(mail.contains("V2 against V1: bad, ratio") && mail.contains("profile: check_object +"), "{mail}");
    assert!(first.contains("check_object") && first.trim_start().starts_with('+'), "{mail}");

    // The page: the culprit step's differential flame graph, no script.
    let page = d.path().join("bisect.html");
    report(&dir, &["--html", page.to_str().unwrap()]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("Why: the profile diff") && html.contains("check_object"), "page");
    assert!(html.contains("Differential flame graph") && !html.contains("<script"), "page");
}
