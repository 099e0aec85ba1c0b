//! A paired run whose arms are kernels (`run --kernel A=… --kernel B=… --paired`): every
//! cell of the plan once per kernel (`-kernel=LABEL` in its id), the cells that differ only
//! in the kernel a pair group, run by [`paired_run::run_paired`] like the groups of a matrix
//! axis. How a member is measured is the caller's [`CellExecutor`]'s business (a fresh qemu
//! guest per member); here are the cells, the `[compare]` the run uses, and the results
//! directory: one run, a cell file after every pair, `run.json` with the pair seed and the
//! kernels.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Context;

use super::cell::CellExecutor;
use super::{RunOutcome, interrupted, paired_run, rounds};
use crate::exit::InputError;
use crate::model::CellResult;
use crate::plan::Cell;
use crate::results::{RunKernel, RunWriter};
use crate::scenario::{CompareSpec, DEFAULT_MAX_PAIRS, DEFAULT_MIN_PAIRS, KERNEL_ARMS, Scenario};

/// A kernel-paired run, as plain values.
pub struct KernelPairedRequest<'a> {
    /// The scenario, loaded once by the caller.
    pub scenario: &'a Scenario,
    /// The plan's cells (after `--only`), without a kernel.
    pub cells: &'a [Cell],
    /// The kernels' labels, the baseline first.
    pub labels: Vec<String>,
    /// The results root: the run goes to `<out>/<scenario>/<run-id>/`.
    pub out: PathBuf,
    /// No progress display.
    pub quiet: bool,
    /// The environment preflight taken before the run, recorded in `run.json`.
    pub environment: Option<crate::host::environment::Environment>,
}

/// The `[compare]` of a kernel-paired run: the scenario's pair bounds and seed when it
/// has `[compare] arms = "kernel"`, else the defaults (6 to 32 pairs, a drawn seed).
/// Refuses (exit 2) a scenario whose `[compare]` pairs a matrix axis, fewer than two
/// kernels or a label twice, rounds, and what a paired run cannot do.
pub fn kernel_compare(s: &Scenario, labels: &[String]) -> anyhow::Result<CompareSpec> {
    if labels.len() < 2 {
        return Err(InputError::anyhow(format!(
            "--paired pairs kernels: give two or more (`--kernel A=IMAGE --kernel B=IMAGE` or [[kernels]]), not {}",
            labels.len()
        )));
    }
    if let Some(twice) = labels.iter().enumerate().find_map(|(i, l)| labels[..i].contains(l).then_some(l)) {
        return Err(InputError::anyhow(format!(
            "--paired: kernel label `{twice}` is given twice; each arm needs a label of its own"
        )));
    }
    if let Some(c) = s.compare.as_ref().filter(|c| c.arms != KERNEL_ARMS) {
        return Err(InputError::anyhow(format!(
            "--paired pairs the kernels, but the scenario's [compare] pairs the values of `{}`: \
             use `arms = \"{KERNEL_ARMS}\"` or remove [compare] to pair kernels",
            c.arms
        )));
    }
    if let Some(rounds) = crate::workload::kind::of(&s.workload).rounds().filter(|&n| n > 1) {
        return Err(InputError::anyhow(format!(
            "--paired with `workload.rounds = {rounds}`: in a paired run the pairs are the rounds; remove `rounds`"
        )));
    }
    paired_run::refuse_kernel_paired(s)?;
    Ok(match &s.compare {
        Some(c) => c.clone(),
        None => CompareSpec {
            arms: KERNEL_ARMS.into(),
            min_pairs: DEFAULT_MIN_PAIRS,
            max_pairs: DEFAULT_MAX_PAIRS,
            seed: None,
        },
    })
}

/// Run a kernel-paired run: the pair groups of the cells under `req.labels`, each member
/// measured by `exec`, stored in one new run directory as each pair finishes. `kernels`
/// says what to record of the kernels in `run.json` (asked again at the end, when the
/// executor knows which accelerator each ran with).
pub fn run_kernel_paired<E: CellExecutor>(
    req: KernelPairedRequest,
    exec: &mut E,
    kernels: &dyn Fn(&E) -> Vec<RunKernel>,
) -> anyhow::Result<RunOutcome> {
    let scenario = req.scenario;
    let spec = kernel_compare(scenario, &req.labels)?;
    let cells = crate::plan::kernel_arm_cells(req.cells, &req.labels);
    let planned: Vec<_> = cells.iter().map(|c| c.params.clone()).collect();
    let mut writer = RunWriter::create(&req.out, scenario, None, &planned)
        .with_context(|| format!("cannot create a run directory under {}", req.out.display()))?;
    let seed = spec.seed.unwrap_or_else(paired_run::draw_seed);
    let started = writer
        .record(req.environment, None)
        .and_then(|()| writer.record_pair_seed(seed))
        .and_then(|()| writer.record_kernels(kernels(exec)));
    if let Err(e) = started {
        writer.abandon();
        return Err(anyhow::Error::new(e).context("cannot record the run in run.json"));
    }
    let run = paired_run::PairedRun { scenario, spec: &spec, seed, quiet: req.quiet, arms: req.labels.clone() };
    let mut stored: BTreeMap<String, CellResult> = BTreeMap::new();
    let mut store = |r: &CellResult| writer.write_cell(r).map(drop).context("cannot store a cell result");
    let paired = paired_run::run_paired(&run, &cells, &mut stored, exec, &mut store, &interrupted)?;
    let tally = rounds::Tally::of(&paired.ran, &stored);

    let _finishing = crate::signals::enter(crate::signals::Activity::Other);
    let was_interrupted = interrupted();
    writer.record_kernels(kernels(exec)).context("cannot record the kernels in run.json")?;
    let dir = writer.dir().to_path_buf();
    writer.finish(was_interrupted).context("cannot finish run.json")?;
    Ok(RunOutcome {
        dir,
        measured: tally.measured,
        failed: tally.failed,
        skipped: tally.skipped,
        without_statistics: tally.without_statistics,
        previously_done: 0,
        interrupted: was_interrupted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CellStatus, LatfsRepetition};

    fn scenario(extra: &str) -> Scenario {
        let text = format!(
            "schema = 1\nname = \"kp\"\n[matrix]\nfs = [\"ext4\"]\ntest = [\"chown\"]\n[backing]\nkind = \"dir\"\n\
             path = \"/tmp\"\n[workload]\nkind = \"lat_fs\"\n{extra}"
        );
        crate::scenario::parse_str(&text, "kp.toml").unwrap()
    }

    fn labels(l: &[&str]) -> Vec<String> {
        l.iter().map(|s| s.to_string()).collect()
    }

    fn refusal(s: &Scenario, l: &[&str]) -> String {
        let e = kernel_compare(s, &labels(l)).unwrap_err();
        assert!(e.downcast_ref::<InputError>().is_some(), "not an input error (exit 2): {e:#}");
        format!("{e:#}")
    }

    #[test]
    fn what_a_kernel_paired_run_cannot_do_is_refused_before_it_starts() {
        let plain = scenario("");
        assert!(refusal(&plain, &["A"]).contains("two or more"));
        assert!(refusal(&plain, &[]).contains("two or more"));
        assert!(refusal(&plain, &["A", "B", "A"]).contains("`A` is given twice"));
        let on_fs = crate::scenario::parse_str(
            "schema = 1\nname = \"kp\"\n[matrix]\nfs = [\"ext4\", \"ext2\"]\ntest = [\"chown\"]\n[backing]\n\
             kind = \"dir\"\npath = \"/tmp\"\n[workload]\nkind = \"lat_fs\"\n[compare]\narms = \"fs\"\n",
            "kp.toml",
        )
        .unwrap();
        assert!(refusal(&on_fs, &["A", "B"]).contains("pairs the values of `fs`"));
        assert!(refusal(&scenario("rounds = 3\n"), &["A", "B"]).contains("rounds = 3"));
    }

    #[test]
    fn the_scenarios_kernel_compare_sets_the_bounds_and_without_one_the_defaults_apply() {
        let spec = kernel_compare(&scenario(""), &labels(&["A", "B"])).unwrap();
        assert_eq!(
            spec,
            CompareSpec {
                arms: "kernel".into(),
                min_pairs: DEFAULT_MIN_PAIRS,
                max_pairs: DEFAULT_MAX_PAIRS,
                seed: None
            }
        );
        let s = scenario("[compare]\narms = \"kernel\"\npairs = { min = 2, max = 2 }\nseed = 5\n");
        let spec = kernel_compare(&s, &labels(&["A", "B"])).unwrap();
        assert_eq!((spec.arms.as_str(), spec.min_pairs, spec.max_pairs, spec.seed), ("kernel", 2, 2, Some(5)));
    }

    /// Measures every member as one repetition of `loops[kernel]` loops/ms, and counts calls.
    struct Scripted {
        loops: Vec<(&'static str, f64)>,
        calls: Vec<String>,
    }

    impl CellExecutor for Scripted {
        fn measure(&mut self, cell: &Cell, _phase: &super::super::Phase) -> CellResult {
            self.calls.push(cell.id());
            let kernel = cell.params.kernel.as_deref().unwrap();
            let v = self.loops.iter().find(|(k, _)| *k == kernel).unwrap().1;
            let mut r = super::CellResult::new(&cell.params, CellStatus::Ok, "2026-01-01T00:00:00Z");
            let rep = LatfsRepetition { total_loops_per_ms: v, ..LatfsRepetition::default() };
            r.latfs = Some(crate::workload::latfs::result(vec![rep]));
            r
        }
    }

    #[test]
    fn a_kernel_paired_run_stores_one_run_whose_cells_pair_the_kernels() {
        let s = scenario("[compare]\narms = \"kernel\"\npairs = { min = 2, max = 2 }\nseed = 9\n");
        let out = tempfile::tempdir().unwrap();
        let plan = crate::plan::expand(&s);
        let mut exec = Scripted { loops: vec![("BASE", 100.0), ("NEW", 80.0)], calls: Vec::new() };
        let record = |e: &Scripted| {
            vec![RunKernel { label: "BASE".into(), image: "/k/a".into(), accel: Some(format!("{}", e.calls.len())) }]
        };
        let req = KernelPairedRequest {
            scenario: &s,
            cells: &plan.cells,
            labels: labels(&["BASE", "NEW"]),
            out: out.path().to_path_buf(),
            quiet: true,
            environment: None,
        };
        let o = run_kernel_paired(req, &mut exec, &record).unwrap();
        // 2 pairs of 2 members, each a call of its own (a fresh guest each, in the real executor).
        assert_eq!(exec.calls.len(), 4);
        assert_eq!((o.measured, o.failed, o.interrupted), (2, 0, false));
        let run = crate::results::load_run(&o.dir).unwrap();
        assert!(run.problems.is_empty(), "{:?}", run.problems);
        assert_eq!(run.meta.pair_seed, Some(9));
        // The kernels as the executor knew them at the end.
        assert_eq!(run.meta.kernels[0].accel.as_deref(), Some("4"));
        let ids: Vec<&str> = run.cells.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["ext4-S-qoff-t1-chown-kernel=BASE", "ext4-S-qoff-t1-chown-kernel=NEW"]);
        for (arm, c) in run.cells.iter().enumerate() {
            let p = c.pairing.as_ref().unwrap();
            assert_eq!((p.axis.as_str(), p.arm, p.group.as_str(), p.seed), ("kernel", arm, "ext4-S-qoff-t1-chown", 9));
            assert_eq!(p.arms, ["BASE", "NEW"]);
            assert_eq!(p.pairs.len(), 2);
            assert_eq!(c.latfs.as_ref().unwrap().rounds_done(), 2);
        }
        assert_eq!(run.meta.planned_cells.len(), 2);
    }
}
