//! Result files come from other hosts, labs and bundles: every number and count in
//! them is bounded before anything renders, compares, gates or allocates from it.
//! A value outside these bounds is bad input (the file is reported, exit 2), so that
//! no renderer has to survive `1.8e308` loops/ms (a plot whose axis never ends) and no
//! merge allocates `u32::MAX` shard slots.

use crate::model::pairing::{CellPairing, MAX_PAIRS};
use crate::model::{CellResult, LatfsResult, StepsResult, Summary};

use super::{RunMeta, RunShard};

/// The largest magnitude of any measured number (loops/ms, µs, ns, iterations, KiB):
/// 1e15 ns is eleven days, 1e15 loops/ms is a billion times any real filesystem.
pub const MAX_VALUE: f64 = 1e15;
/// Most cells a run may plan (the matrix cap of the scenario language is far lower).
pub const MAX_CELLS: usize = 1_000_000;
/// Most shards a run may be split into (Slurm's own array size limit is lower).
pub const MAX_SHARDS: u32 = 100_000;
/// Most repetitions, iterations, steps or tasks a cell file may hold.
pub use crate::model::MAX_SAMPLES;
/// Most arms a paired cell may name (a comparison of more is no longer a pair).
pub const MAX_ARMS: usize = 16;
/// Longest arm value, group key or dropped-pair reason in a paired cell's record.
pub const MAX_PAIRING_TEXT: usize = 4096;
/// Largest result file read into memory (a real cell file is a few KiB).
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// A bound violated: the dotted field and what is wrong with it.
pub type Violation = (String, String);

fn number(field: impl Into<String>, v: f64) -> Result<(), Violation> {
    if v.is_finite() && v.abs() <= MAX_VALUE {
        return Ok(());
    }
    Err((field.into(), format!("{v} is not a plausible measurement (finite, at most {MAX_VALUE:e} in magnitude)")))
}

fn count(field: impl Into<String>, n: usize, max: usize) -> Result<(), Violation> {
    if n <= max {
        return Ok(());
    }
    Err((field.into(), format!("{n} entries, more than the {max} a result file may hold")))
}

fn summary(field: &str, s: &Summary) -> Result<(), Violation> {
    count(format!("{field}.n"), s.n, MAX_SAMPLES)?;
    for (name, v) in [
        ("median", s.median),
        ("mean", s.mean),
        ("stddev", s.stddev),
        ("min", s.min),
        ("max", s.max),
        ("ci95_low", s.ci95_low),
        ("ci95_high", s.ci95_high),
        ("cv", s.cv),
    ] {
        number(format!("{field}.{name}"), v)?;
    }
    Ok(())
}

fn latfs(l: &LatfsResult) -> Result<(), Violation> {
    count("latfs.repetitions", l.repetitions.len(), MAX_SAMPLES)?;
    summary("latfs.total_loops", &l.total_loops)?;
    summary("latfs.latency_us", &l.latency_us)?;
    for (i, r) in l.repetitions.iter().enumerate() {
        let at = format!("latfs.repetitions[{i}]");
        number(format!("{at}.total_loops_per_ms"), r.total_loops_per_ms)?;
        number(format!("{at}.latency_us"), r.latency_us)?;
        count(format!("{at}.tasks"), r.tasks.len(), MAX_SAMPLES)?;
        for (j, t) in r.tasks.iter().enumerate() {
            for (name, v) in
                [("iterations", t.iterations), ("window_ns", t.window_ns), ("user_us", t.user_us), ("sys_us", t.sys_us)]
            {
                number(format!("{at}.tasks[{j}].{name}"), v as f64)?;
            }
        }
    }
    Ok(())
}

fn steps(s: &StepsResult) -> Result<(), Violation> {
    count("steps.iterations", s.iterations.len(), MAX_SAMPLES)?;
    for (i, it) in s.iterations.iter().enumerate() {
        count(format!("steps.iterations[{i}]"), it.len(), MAX_SAMPLES)?;
        for (j, t) in it.iter().enumerate() {
            for (name, v) in [
                ("user_us", t.user_us),
                ("system_us", t.system_us),
                ("elapsed_us", t.elapsed_us),
                ("max_rss_kib", t.max_rss_kib),
            ] {
                number(format!("steps.iterations[{i}][{j}].{name}"), v as f64)?;
            }
        }
    }
    Ok(())
}

fn text(field: impl Into<String>, t: &str) -> Result<(), Violation> {
    if t.len() <= MAX_PAIRING_TEXT {
        return Ok(());
    }
    Err((field.into(), format!("{} bytes, more than the {MAX_PAIRING_TEXT} allowed", t.len())))
}

/// A paired cell's record: bounded counts, an arm that exists, orders that are
/// permutations of the arms, each slot once, and every pair's round among the cell's.
fn pairing(p: &CellPairing, c: &CellResult) -> Result<(), Violation> {
    let bad = |field: &str, why: String| Err((format!("pairing.{field}"), why));
    if !crate::scenario::AXES.contains(&p.axis.as_str()) && p.axis != crate::scenario::KERNEL_ARMS {
        return bad("axis", format!("`{}` is not a matrix axis (nor `kernel`)", crate::text::escape_control(&p.axis)));
    }
    if !(2..=MAX_ARMS).contains(&p.arms.len()) {
        return bad("arms", format!("{} arms: expected 2 to {MAX_ARMS}", p.arms.len()));
    }
    for (i, a) in p.arms.iter().enumerate() {
        text(format!("pairing.arms[{i}]"), a)?;
    }
    text("pairing.group", &p.group)?;
    if let Some(why) = &p.stop_reason {
        text("pairing.stop_reason", why)?;
    }
    if p.arm >= p.arms.len() {
        return bad("arm", format!("arm {} of {} arms", p.arm, p.arms.len()));
    }
    count("pairing.pairs", p.pairs.len(), MAX_PAIRS as usize)?;
    count("pairing.dropped", p.dropped.len(), MAX_PAIRS as usize)?;
    let rounds = match (&c.latfs, &c.fio, &c.ops) {
        (Some(l), _, _) => l.rounds_done(),
        (None, Some(f), _) => f.rounds_done(),
        (None, None, Some(o)) => o.rounds_done(),
        (None, None, None) => 0,
    };
    let has_round = |round: u32| {
        c.latfs.as_ref().is_some_and(|l| l.repetitions.iter().any(|r| r.round == round))
            || c.fio.as_ref().is_some_and(|f| f.repetitions.iter().any(|r| r.round == round))
            || c.ops.as_ref().is_some_and(|o| o.repetitions.iter().any(|r| r.round == round))
    };
    let mut slots = std::collections::BTreeSet::new();
    for (i, pair) in p.pairs.iter().enumerate() {
        let at = format!("pairs[{i}]");
        if pair.slot >= MAX_PAIRS || !slots.insert(pair.slot) {
            return bad(&format!("{at}.slot"), format!("slot {}: out of range or given twice", pair.slot));
        }
        let mut order = pair.order.clone();
        order.sort_unstable();
        if order != (0..p.arms.len()).collect::<Vec<_>>() {
            return bad(
                &format!("{at}.order"),
                format!("{:?} is not an order of the {} arms", pair.order, p.arms.len()),
            );
        }
        // Steps record no round (a member is its round's slice of the iterations, which
        // the paired reader checks); lat_fs and fio repetitions carry theirs.
        let rounds_recorded = c.latfs.is_some() || c.fio.is_some() || c.ops.is_some();
        if rounds_recorded && (pair.round >= rounds || !has_round(pair.round)) {
            return bad(
                &format!("{at}.round"),
                format!("round {} is not among the cell's {rounds} rounds", pair.round),
            );
        }
    }
    for (i, d) in p.dropped.iter().enumerate() {
        if d.slot >= MAX_PAIRS || !slots.insert(d.slot) {
            return bad(&format!("dropped[{i}].slot"), format!("slot {}: out of range or given twice", d.slot));
        }
        text(format!("pairing.dropped[{i}].reason"), &d.reason)?;
    }
    Ok(())
}

/// Check every measured number and sample count of a cell file, and its pairing.
pub fn check_cell(c: &CellResult) -> Result<(), Violation> {
    count("filesystems", c.filesystems.len(), MAX_SAMPLES)?;
    if let Some(k) = &c.params.kernel {
        kernel_label("params.kernel", k)?;
    }
    if let Some(p) = &c.pairing {
        pairing(p, c)?;
    }
    if let Some(l) = &c.latfs {
        latfs(l)?;
    }
    if let Some(s) = &c.steps {
        steps(s)?;
    }
    if let Some(o) = &c.ops {
        ops(o)?;
    }
    Ok(())
}

/// An op-mix cell: bounded repetitions, op lines, filesets and histogram buckets; finite figures.
fn ops(o: &crate::model::OpsResult) -> Result<(), Violation> {
    count("ops.repetitions", o.repetitions.len(), MAX_SAMPLES)?;
    count("ops.filesets", o.filesets.len(), 1024)?;
    summary("ops.ops_per_s", &o.ops_per_s)?;
    summary("ops.p99_us", &o.p99_us)?;
    summary("ops.mb_per_s", &o.mb_per_s)?;
    for (i, f) in o.filesets.iter().enumerate() {
        count(format!("ops.filesets[{i}].size_histogram"), f.size_histogram.len(), 128)?;
    }
    for (i, r) in o.repetitions.iter().enumerate() {
        let at = format!("ops.repetitions[{i}]");
        count(format!("{at}.ops"), r.ops.len(), 64)?;
        for (name, v) in [("elapsed_s", r.elapsed_s), ("cpu_user_s", r.cpu_user_s), ("cpu_sys_s", r.cpu_sys_s)] {
            number(format!("{at}.{name}"), v)?;
        }
        for (j, s) in r.ops.iter().chain([&r.total]).enumerate() {
            number(format!("{at}.ops[{j}].ops_per_s"), s.ops_per_s)?;
            number(format!("{at}.ops[{j}].mb_per_s"), s.mb_per_s)?;
            count(
                format!("{at}.ops[{j}].latency.buckets"),
                s.latency.buckets.len(),
                crate::monitor::latency::MAX_BUCKETS,
            )?;
        }
        count(
            format!("{at}.loop_latency.buckets"),
            r.loop_latency.buckets.len(),
            crate::monitor::latency::MAX_BUCKETS,
        )?;
    }
    Ok(())
}

/// A kernel's label as `--kernel` accepts it: 1 to 64 of A-Z a-z 0-9 . _ - +.
fn kernel_label(field: &str, l: &str) -> Result<(), Violation> {
    if !l.is_empty() && l.len() <= 64 && l.chars().all(|c| c.is_ascii_alphanumeric() || "._-+".contains(c)) {
        return Ok(());
    }
    Err((field.into(), "not a kernel label (1 to 64 of A-Z a-z 0-9 . _ - +)".into()))
}

fn shard(s: &RunShard, planned: usize) -> Result<(), Violation> {
    if s.count == 0 || s.count > MAX_SHARDS {
        return Err(("shard.count".into(), format!("{} shards: expected 1 to {MAX_SHARDS}", s.count)));
    }
    if s.index == 0 || s.index > s.count {
        return Err(("shard.index".into(), format!("shard {} of {}: expected 1 to {}", s.index, s.count, s.count)));
    }
    count("shard.total_cells", s.total_cells, MAX_CELLS)?;
    if s.cell_indices.len() != planned {
        return Err((
            "shard.cell_indices".into(),
            format!("{} indices for {planned} planned cells: expected one per planned cell", s.cell_indices.len()),
        ));
    }
    if let Some(i) = s.cell_indices.iter().find(|&&i| i >= s.total_cells) {
        return Err((
            "shard.cell_indices".into(),
            format!("index {i} is outside the {} cells of the plan", s.total_cells),
        ));
    }
    Ok(())
}

/// Check the counts of `run.json`: planned cells and the shard record.
pub fn check_run(m: &RunMeta) -> Result<(), Violation> {
    count("planned_cells", m.planned_cells.len(), MAX_CELLS)?;
    if let Some(s) = &m.shard {
        shard(s, m.planned_cells.len())?;
    }
    count("meta", m.meta.len(), crate::model::run_tags::MAX_TAGS)?;
    count("kernels", m.kernels.len(), super::MAX_RUN_KERNELS)?;
    for (i, k) in m.kernels.iter().enumerate() {
        kernel_label(&format!("kernels[{i}].label"), &k.label)?;
    }
    for (i, p) in m.planned_cells.iter().enumerate() {
        if let Some(k) = &p.kernel {
            kernel_label(&format!("planned_cells[{i}].kernel"), k)?;
        }
    }
    // A run.json from elsewhere holds the same `--meta` pairs `run` would accept, or none.
    for (k, v) in &m.meta {
        if let Err(e) = crate::model::run_tags::parse_tag(&format!("{k}={v}")) {
            return Err((format!("meta.{}", crate::text::escape_control(k)), e));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f64_max_in_a_summary_is_refused_on_load() {
        let s = Summary { n: 1, median: f64::MAX, ..Default::default() };
        let (field, msg) = summary("latfs.total_loops", &s).unwrap_err();
        assert_eq!(field, "latfs.total_loops.median");
        assert!(msg.contains("plausible"), "{msg}");
        assert!(number("x", f64::NAN).is_err() && number("x", f64::INFINITY).is_err());
        assert!(number("x", 1e6).is_ok() && number("x", -3.5).is_ok());
    }

    #[test]
    fn a_hostile_pairing_is_refused_on_load() {
        use crate::model::pairing::{DroppedPair, PairSlot};
        use crate::model::{CellParams, CellStatus, LatfsRepetition};
        let reps = (0..2).map(|round| LatfsRepetition { round, ..Default::default() }).collect();
        let good = CellResult {
            schema: crate::model::RESULT_SCHEMA_VERSION,
            id: "ext4-S-qoff-t1-chown".into(),
            params: CellParams {
                fs: "ext4".into(),
                layout: crate::model::Layout::S,
                quota: crate::model::QuotaMode::Off,
                tasks: 1,
                test: None,
                fio: Default::default(),
                kernel: None,
            },
            status: CellStatus::Ok,
            skip: None,
            error: None,
            notes: vec![],
            filesystems: vec![],
            latfs: Some(crate::workload::latfs::result(reps)),
            steps: None,
            cgroup: None,
            profile: None,
            pair_profiles: Vec::new(),
            fio: None,
            ops: None,
            pairing: Some(CellPairing {
                axis: "fs".into(),
                arms: vec!["ext4".into(), "ext4-nodelalloc".into()],
                arm: 1,
                group: "S-qoff-t1-chown".into(),
                seed: 3,
                pairs: vec![
                    PairSlot { slot: 0, order: vec![0, 1], round: 0, common_load: false },
                    PairSlot { slot: 2, order: vec![1, 0], round: 1, common_load: false },
                ],
                dropped: vec![DroppedPair { slot: 1, reason: "ext4-S-qoff-t1-chown: disturbed".into() }],
                stop: None,
                stop_reason: None,
            }),
            started: String::new(),
            finished: String::new(),
        };
        assert_eq!(check_cell(&good), Ok(()));
        let field = |f: &dyn Fn(&mut CellPairing)| {
            let mut c = good.clone();
            f(c.pairing.as_mut().unwrap());
            check_cell(&c).unwrap_err().0
        };
        assert_eq!(field(&|p| p.arm = 2), "pairing.arm");
        assert_eq!(field(&|p| p.arms = vec!["x".into(); 17]), "pairing.arms");
        assert_eq!(field(&|p| p.arms.truncate(1)), "pairing.arms");
        assert_eq!(field(&|p| p.axis = "compiler".into()), "pairing.axis");
        let mut bad_kernel = good.clone();
        bad_kernel.params.kernel = Some("../\u{1b}[31m".into());
        assert_eq!(check_cell(&bad_kernel).unwrap_err().0, "params.kernel");
        assert_eq!(field(&|p| p.pairs[1].round = 2), "pairing.pairs[1].round");
        assert_eq!(field(&|p| p.pairs[1].order = vec![1, 1]), "pairing.pairs[1].order");
        assert_eq!(field(&|p| p.pairs[1].slot = 0), "pairing.pairs[1].slot");
        assert_eq!(field(&|p| p.dropped[0].slot = 2), "pairing.dropped[0].slot");
        assert_eq!(field(&|p| p.group = "g".repeat(5000)), "pairing.group");
        assert_eq!(field(&|p| p.stop_reason = Some("r".repeat(5000))), "pairing.stop_reason");
        assert_eq!(
            field(&|p| p.pairs = (0..MAX_PAIRS + 1)
                .map(|slot| PairSlot { slot, order: vec![0, 1], round: 0, common_load: false })
                .collect()),
            "pairing.pairs"
        );
    }

    #[test]
    fn a_huge_shard_count_from_run_json_is_refused_before_allocating() {
        let s = RunShard { index: 1, count: u32::MAX, key: "k".into(), total_cells: 2, cell_indices: vec![0] };
        assert_eq!(shard(&s, 1).unwrap_err().0, "shard.count");
        let s = RunShard { index: 3, count: 2, key: "k".into(), total_cells: 2, cell_indices: vec![0] };
        assert_eq!(shard(&s, 1).unwrap_err().0, "shard.index");
        let s = RunShard { index: 1, count: 2, key: "k".into(), total_cells: 2, cell_indices: vec![5] };
        assert_eq!(shard(&s, 1).unwrap_err().0, "shard.cell_indices");
        let s = RunShard { index: 1, count: 2, key: "k".into(), total_cells: 2, cell_indices: vec![1] };
        assert!(shard(&s, 1).is_ok());
    }
}
