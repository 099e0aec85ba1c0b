//! Result fixtures for the report, gate and results tests: seed 000 parsed, run directories written by hand.

use std::path::{Path, PathBuf};

use fsbench::model::*;
use fsbench::results::{HostInfo, RunMeta, sha256_hex};
use fsbench::stats::summarize;

/// Seed 000 as published.
pub const SEED000: &str = include_str!("../data/seed000/000_2378ba66e3aa0691.txt");

/// One table of the seed: section fs/layout, test, header and rows as tab-split fields.
#[derive(Debug, Clone)]
pub struct SeedTable {
    pub fs: String,
    pub layout: Layout,
    pub test: LatfsTest,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// Parse every table of seed 000.
pub fn parse_seed000() -> Vec<SeedTable> {
    let mut out = Vec::new();
    let (mut fs, mut layout, mut test) = (String::new(), Layout::M, LatfsTest::OpenClose);
    let lines: Vec<&str> = SEED000.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        if let Some(rest) = l.strip_prefix("Results for ").and_then(|r| r.split_once(" mounttype:")) {
            fs = rest.0.to_string();
            layout = if rest.1 == "M" { Layout::M } else { Layout::S };
        } else if let Some(t) = l.strip_prefix("lat_fs_") {
            test = t.parse().unwrap();
        } else if l.starts_with("#nr_task\t") {
            let header = l.split('\t').map(String::from).collect();
            let mut rows = Vec::new();
            while i + 1 < lines.len() && !lines[i + 1].is_empty() {
                i += 1;
                rows.push(lines[i].split('\t').map(String::from).collect());
            }
            out.push(SeedTable { fs: fs.clone(), layout, test, header, rows });
        }
        i += 1;
    }
    out
}

/// A scenario text for a lat_fs run; `extra` is appended to `[workload]`.
pub fn latfs_scenario_text(name: &str, extra: &str) -> String {
    format!(
        "schema = 1\nname = \"{name}\"\n[matrix]\nfs = [\"ext2\", \"ext4\"]\nlayout = [\"M\", \"S\"]\nquota = [\"off\", \"on\"]\ntasks = [1, 2, 4, 8]\n\
         [filesystems.ext4]\nmount = [\"usrquota\", \"grpquota\", \"barrier=0\", \"noload\"]\n[backing]\nkind = \"tmpfs-loop\"\n\
         [workload]\nkind = \"lat_fs\"\nquota_refs = 2\n{extra}"
    )
}

/// A run.json for tests.
pub fn meta(label: Option<&str>, scenario: &str, text: &str, workload: &str, planned: Vec<CellParams>) -> RunMeta {
    RunMeta {
        schema: RESULT_SCHEMA_VERSION,
        tool_version: "0.1.0".into(),
        run_id: format!("20101111T120000Z-{}", label.unwrap_or("host")),
        scenario_name: scenario.into(),
        scenario_origin: "scenarios/quota-smp.toml".into(),
        scenario_text: text.into(),
        scenario_sha256: sha256_hex(text.as_bytes()),
        workload: serde_json::from_value(serde_json::Value::from(workload)).expect("`lat_fs` or `steps`"),
        label: label.map(String::from),
        host: HostInfo {
            hostname: "xeon-w5580".into(),
            kernel_release: "2.6.37-rc1".into(),
            kernel_version: "#1 SMP".into(),
            kernel_cmdline: "ro".into(),
            cpu_model: "Intel(R) Xeon(R) CPU W5580".into(),
            cpu_count: 8,
            memory_bytes: 8 << 30,
        },
        started: "2010-11-11T12:00:00Z".into(),
        finished: Some("2010-11-11T13:00:00Z".into()),
        planned_cells: planned,
        interrupted: false,
        shard: None,
        environment: None,
        order: None,
        derived: None,
        meta: Default::default(),
        archive: None,
        pair_seed: None,
        kernels: Vec::new(),
    }
}

/// An ok lat_fs cell with one repetition per sample value.
pub fn latfs_cell(params: CellParams, samples: &[f64]) -> CellResult {
    let reps: Vec<LatfsRepetition> = samples
        .iter()
        .map(|v| LatfsRepetition {
            tasks: (0..params.tasks)
                .map(|t| TaskSample { task: t, iterations: 1000, window_ns: 1_000_000_000, user_us: 1, sys_us: 1 })
                .collect(),
            total_loops_per_ms: *v,
            latency_us: 1000.0 / v,
            ..LatfsRepetition::default()
        })
        .collect();
    let fs = FilesystemInfo {
        fs: params.fs.clone(),
        device: Some("/dev/loop3".into()),
        mountpoint: "/tmp/fsbench/mnt/0".into(),
        mkfs_argv: vec![format!("mkfs.{}", params.fs), "-q".into(), "/dev/loop3".into()],
        mount_options_requested: vec!["usrquota".into(), "grpquota".into()],
        ..Default::default()
    };
    CellResult {
        schema: RESULT_SCHEMA_VERSION,
        id: params.id(),
        params,
        status: CellStatus::Ok,
        skip: None,
        error: None,
        notes: Vec::new(),
        filesystems: vec![fs],
        latfs: Some(LatfsResult {
            total_loops: summarize(samples),
            latency_us: summarize(&reps.iter().map(|r| r.latency_us).collect::<Vec<_>>()),
            repetitions: reps,
            stopped: None,
            reruns: 0,
            pinned_cpus: Vec::new(),
            latency_dist: None,
        }),
        steps: None,
        fio: None,
        ops: None,
        pairing: None,
        cgroup: None,
        profile: None,
        pair_profiles: Vec::new(),
        started: "2010-11-11T12:00:00Z".into(),
        finished: "2010-11-11T12:00:05Z".into(),
    }
}

/// Write a run directory by hand, as a user or another lab would have it.
pub fn write_run(dir: &Path, meta: &RunMeta, cells: &[CellResult]) -> PathBuf {
    std::fs::create_dir_all(dir.join("cells")).unwrap();
    std::fs::write(dir.join("run.json"), serde_json::to_vec_pretty(meta).unwrap()).unwrap();
    for c in cells {
        std::fs::write(dir.join("cells").join(format!("{}.json", c.id)), serde_json::to_vec_pretty(c).unwrap())
            .unwrap();
    }
    dir.to_path_buf()
}

/// The seed's cells of one label: (params, value) for every table cell of columns `<label>-...`.
pub fn seed_cells(tables: &[SeedTable], label: &str) -> Vec<(CellParams, f64)> {
    let mut out = Vec::new();
    for t in tables {
        for (ci, h) in t.header.iter().enumerate().skip(1) {
            let Some(rest) = h.strip_prefix(&format!("{label}-")) else { continue };
            let quota = if rest.ends_with("qon") { QuotaMode::On } else { QuotaMode::Off };
            for row in &t.rows {
                let params = CellParams {
                    fs: t.fs.clone(),
                    layout: t.layout,
                    quota,
                    tasks: row[0].parse().unwrap(),
                    test: Some(t.test),
                    fio: Default::default(),
                    kernel: None,
                };
                out.push((params, row[ci].parse().unwrap()));
            }
        }
    }
    out
}

/// Write seed 000's run of `label` (one repetition per cell) into `dir`.
pub fn write_seed_run(dir: &Path, label: &str) -> PathBuf {
    let tables = parse_seed000();
    let cells: Vec<CellResult> = seed_cells(&tables, label).into_iter().map(|(p, v)| latfs_cell(p, &[v])).collect();
    let planned = cells.iter().map(|c| c.params.clone()).collect();
    let m = meta(Some(label), "quota-smp", &latfs_scenario_text("quota-smp", "repetitions = 1\n"), "lat_fs", planned);
    write_run(dir, &m, &cells)
}

/// Seed 002 as published.
pub const SEED002: &str = include_str!("../data/seed002/002_32937eb8789570ca.txt");

/// The run label of a seed 002 kernel heading: labels cannot hold the seed's ` elevator=as`.
pub fn seed002_label(kernel: &str) -> &str {
    kernel.split_whitespace().next().unwrap_or(kernel)
}

/// One time(1) line of seed 002 (`tar zxf x 4.83user 5.86system 0:14.09elapsed 75%CPU`) as a step timing.
pub fn parse_time_line(line: &str) -> StepTiming {
    let f: Vec<&str> = line.split(' ').collect();
    let n = f.len();
    let secs = |s: &str, suffix: &str| -> u64 {
        let v = s.strip_suffix(suffix).unwrap();
        let (a, b) = v.split_once('.').unwrap();
        a.parse::<u64>().unwrap() * 1_000_000 + b.parse::<u64>().unwrap() * 10_000
    };
    let (m, s) = f[n - 2].strip_suffix("elapsed").unwrap().split_once(':').unwrap();
    let label = f[..n - 4].join(" ");
    let op = match f[0] {
        "rm" => "rm_rf",
        "tar" => "untar",
        other => other,
    };
    let mut t = StepTiming {
        label: label.into(),
        op: op.into(),
        user_us: secs(f[n - 4], "user"),
        system_us: secs(f[n - 3], "system"),
        elapsed_us: m.parse::<u64>().unwrap() * 60_000_000 + secs(&format!("{s}x"), "x"),
        max_rss_kib: 0,
        ..Default::default()
    };
    // time(1) prints centiseconds but computes %CPU from milliseconds: pick the first
    // milliseconds inside the printed centiseconds that give the printed percentage.
    let (u, sy, e) = (t.user_us, t.system_us, t.elapsed_us);
    let cpu = f[n - 1].strip_suffix("%CPU").unwrap().parse::<u64>().ok();
    'search: for de in 0..10 {
        for du in 0..10 {
            for ds in 0..10 {
                let c = StepTiming {
                    user_us: u + du * 1000,
                    system_us: sy + ds * 1000,
                    elapsed_us: e + de * 1000,
                    ..t.clone()
                };
                if c.cpu_percent() == cpu {
                    t = c;
                    break 'search;
                }
            }
        }
    }
    t
}

/// One kernel of seed 002: its heading and, per filesystem, the three time(1) lines.
pub type Seed002Kernel = (String, Vec<(String, Vec<String>)>);

/// Seed 002's data: per kernel heading, per filesystem, its three time(1) lines.
pub fn parse_seed002() -> Vec<Seed002Kernel> {
    let body = &SEED002[SEED002.find("-----\n2.5.60:").unwrap()..];
    let mut out: Vec<Seed002Kernel> = Vec::new();
    for l in body.lines() {
        if l.starts_with("---") {
            continue;
        }
        if l == "-" {
            break;
        }
        if let Some(head) = l.strip_suffix(':') {
            if head.starts_with("2.5.") {
                out.push((head.to_string(), Vec::new()));
            } else {
                out.last_mut().unwrap().1.push((head.to_string(), Vec::new()));
            }
        } else {
            out.last_mut().unwrap().1.last_mut().unwrap().1.push(l.to_string());
        }
    }
    out
}

/// The scenario a seed 002 run would have had.
pub fn steps_scenario_text(name: &str) -> String {
    format!(
        "schema = 1\nname = \"{name}\"\n[matrix]\nfs = [\"reiserfs\", \"reiser4\", \"ext3\", \"xfs\"]\nlayout = [\"S\"]\n\
         [backing]\nkind = \"tmpfs-loop\"\n[archive]\ngenerate = \"linux-2.5.63\"\n[workload]\nkind = \"steps\"\niterations = 5\n\
         steps = [{{ op = \"rm_rf\", path = \"linux-2.5.63\" }}, {{ op = \"untar\" }}, {{ op = \"sync\" }}]\n"
    )
}

/// An ok steps cell with these iterations.
pub fn steps_cell(fs: &str, iterations: Vec<Vec<StepTiming>>) -> CellResult {
    let params = CellParams {
        fs: fs.into(),
        layout: Layout::S,
        quota: QuotaMode::Off,
        tasks: 1,
        test: None,
        fio: Default::default(),
        kernel: None,
    };
    CellResult {
        schema: RESULT_SCHEMA_VERSION,
        id: params.id(),
        params,
        status: CellStatus::Ok,
        skip: None,
        error: None,
        notes: Vec::new(),
        filesystems: vec![FilesystemInfo {
            fs: fs.into(),
            mountpoint: "/mnt/test".into(),
            mkfs_argv: vec![format!("mkfs.{fs}"), "/dev/hda3".into()],
            ..Default::default()
        }],
        latfs: None,
        steps: Some(StepsResult { iterations, ..Default::default() }),
        fio: None,
        ops: None,
        pairing: None,
        cgroup: None,
        profile: None,
        pair_profiles: Vec::new(),
        started: "2003-02-28T12:00:00Z".into(),
        finished: "2003-02-28T12:05:00Z".into(),
    }
}

/// Write seed 002's run of one kernel heading (one iteration per cell: the seed's 5th run) into `dir`.
pub fn write_seed002_run(dir: &Path, kernel: &str) -> PathBuf {
    let data = parse_seed002();
    let (_, fss) = data.iter().find(|(k, _)| k == kernel).unwrap();
    let cells: Vec<CellResult> = fss
        .iter()
        .map(|(fs, lines)| steps_cell(fs, vec![lines.iter().map(|l| parse_time_line(l)).collect()]))
        .collect();
    let planned = cells.iter().map(|c| c.params.clone()).collect();
    let label = seed002_label(kernel);
    let mut m = meta(Some(label), "kernel-untar", &steps_scenario_text("kernel-untar"), "steps", planned);
    m.host.kernel_release = label.into();
    write_run(dir, &m, &cells)
}

/// One step's times in milliseconds.
pub fn step(label: &str, op: &str, user_ms: u64, sys_ms: u64, elapsed_ms: u64) -> StepTiming {
    StepTiming {
        label: label.into(),
        op: op.into(),
        user_us: user_ms * 1000,
        system_us: sys_ms * 1000,
        elapsed_us: elapsed_ms * 1000,
        max_rss_kib: 0,
        ..StepTiming::default()
    }
}

/// Write a kernel-untar steps run into `dir`: for each `(fs, untar)` one cell whose iteration i
/// times rm -rf, tar zxf (`untar[i] * 10 + 5000` ms elapsed) and sync.
pub fn write_untar_run(dir: &Path, label: &str, per_fs: &[(&str, [u64; 3])]) -> PathBuf {
    let mut cells = Vec::new();
    for (fs, untar) in per_fs {
        let p = CellParams {
            fs: fs.to_string(),
            layout: Layout::M,
            quota: QuotaMode::Off,
            tasks: 1,
            test: None,
            fio: Default::default(),
            kernel: None,
        };
        let iterations = untar
            .iter()
            .map(|u| {
                vec![
                    step("rm -rf linux-2.5.63", "rm_rf", 20, 1710, 2160),
                    step("tar zxf linux-2.5.63.tar.gz", "untar", 4830, 5860, *u * 10 + 5000),
                    step("sync", "sync", 0, 30, 960),
                ]
            })
            .collect();
        let mut c = latfs_cell(p.clone(), &[1.0]);
        c.latfs = None;
        c.steps = Some(StepsResult { iterations, ..StepsResult::default() });
        cells.push(c);
    }
    let planned = cells.iter().map(|c| c.params.clone()).collect();
    write_run(dir, &meta(Some(label), "kernel-untar", "name='kernel-untar'", "steps", planned), &cells)
}

/// A lat_fs scenario text of a paired run: `fs` arms compared (`[compare] arms = "fs"`),
/// one layout, quota off, one task; `extra` is appended (a `[gate]` section, `pairs`).
pub fn paired_scenario_text(name: &str, arms: &[&str], tests: &[&str], extra: &str) -> String {
    let list = |v: &[&str]| v.iter().map(|a| format!("\"{a}\"")).collect::<Vec<_>>().join(", ");
    let variants: String =
        arms.iter().skip(1).map(|a| format!("[filesystems.{a}]\ntype = \"{}\"\n", arms[0])).collect();
    format!(
        "schema = 1\nname = \"{name}\"\n[matrix]\nfs = [{}]\nlayout = [\"S\"]\nquota = [\"off\"]\ntasks = [1]\ntest = [{}]\n\
         {variants}[backing]\nkind = \"tmpfs-loop\"\n[workload]\nkind = \"lat_fs\"\nrepetitions = 1\n[compare]\narms = \"fs\"\n{extra}",
        list(arms),
        list(tests)
    )
}

/// `cell` as arm `arm` of `arms` (axis `fs`) in pair group `group`: its repetition `i` is
/// round `i`, the member of pair slot `i`; `dropped` slots are recorded as dropped (give
/// no sample for them), and the group stopped for `stop`.
pub fn as_pair_member(
    mut cell: CellResult,
    arms: &[&str],
    arm: usize,
    group: &str,
    dropped: &[u32],
    stop: Option<pairing::PairStop>,
) -> CellResult {
    let mut slots = (0u32..).filter(|s| !dropped.contains(s));
    let mut pairs = Vec::new();
    if let Some(l) = cell.latfs.as_mut() {
        for (i, r) in l.repetitions.iter_mut().enumerate() {
            r.round = i as u32;
            let slot = slots.next().unwrap();
            let order = if slot % 2 == 0 { vec![0, 1] } else { vec![1, 0] };
            pairs.push(pairing::PairSlot { slot, order, round: i as u32, common_load: false });
        }
    }
    cell.pairing = Some(pairing::CellPairing {
        axis: "fs".into(),
        arms: arms.iter().map(|a| a.to_string()).collect(),
        arm,
        group: group.into(),
        seed: 42,
        pairs,
        dropped: dropped
            .iter()
            .map(|&slot| pairing::DroppedPair { slot, reason: format!("{}-{group}: disturbed", arms[1]) })
            .collect(),
        stop,
        stop_reason: None,
    });
    cell
}

/// Write a paired lat_fs run into `dir`: per test, one cell per arm with one member value
/// per pair (`values[arm]`), dropped slots `dropped`, and `extra` appended to the scenario.
pub fn write_paired_run(
    dir: &Path,
    label: &str,
    arms: &[&str],
    groups: &[(LatfsTest, Vec<Vec<f64>>)],
    dropped: &[u32],
    extra: &str,
) -> PathBuf {
    let mut cells = Vec::new();
    for (test, values) in groups {
        let group = format!("S-qoff-t1-{}", test.name());
        for (arm, fs) in arms.iter().enumerate() {
            let p = CellParams {
                fs: fs.to_string(),
                layout: Layout::S,
                quota: QuotaMode::Off,
                tasks: 1,
                test: Some(*test),
                fio: Default::default(),
                kernel: None,
            };
            let cell = latfs_cell(p, &values[arm]);
            cells.push(as_pair_member(cell, arms, arm, &group, dropped, Some(pairing::PairStop::MaxPairs)));
        }
    }
    let tests: Vec<&str> = groups.iter().map(|(t, _)| t.name()).collect();
    let text = paired_scenario_text("paired", arms, &tests, extra);
    let planned = cells.iter().map(|c| c.params.clone()).collect();
    write_run(dir, &meta(Some(label), "paired", &text, "lat_fs", planned), &cells)
}
