//! The one interface through which a workload answers its own questions, and the one
//! dispatch that names the workload kinds.
//!
//! The runner, the plan, qemu, bundles, provisioning, the gate, history and the reports ask
//! a workload what only it knows — its rounds, how long a cell takes, how a member of a
//! pair is valued, which metric its comparisons read, what a cell needs from the host, how
//! it runs on a provisioned cell — through [`WorkloadAnswers`] (a configured workload, from
//! the scenario) and [`KindAnswers`] (a kind alone, from a stored run's `workload`). They
//! reach it through [`of`] and [`of_kind`], the dispatch. Besides it, only the two places
//! below the workloads that must turn on the kind do (`scenario/validate/by_kind.rs`, which
//! builds the specs, and `report/by_kind.rs`, which picks a renderer). fio keeps its engines
//! the same way: its core names none.
//!
//! # Adding a workload kind
//! A new kind `ops` touches its own folder, this dispatch, and its report:
//! 1. **Its folder** `src/workload/ops/`: the workload itself, and `answers.rs` with
//!    `impl WorkloadAnswers for OpsSpec` (every method without a default must be answered:
//!    [`WorkloadAnswers::kind`], [`WorkloadAnswers::cell_estimate`],
//!    [`WorkloadAnswers::guest_cell_work`], [`WorkloadAnswers::member_value`],
//!    [`WorkloadAnswers::round_value`], [`WorkloadAnswers::run_cell`]; the others default to
//!    "this kind has none") and `impl KindAnswers for OpsKind` ([`KindAnswers::default_metric`]
//!    and [`KindAnswers::metric`] required).
//! 2. **The dispatch**: its variant in [`crate::scenario::Workload`] (holding `OpsSpec`) and
//!    in [`crate::model::WorkloadKind`] (its `run.json` name, with `name()`), its unit struct
//!    `pub struct OpsKind;` here and one arm in each `match` of this file, and one in each
//!    `match` of `src/scenario/validate/by_kind.rs` (validation sits below the workloads:
//!    there its validate room `src/scenario/validate/ops.rs` builds `OpsSpec` from
//!    `[workload]`, and the gate keys, archive use, rounds and iterations per member are
//!    read from the spec).
//! 3. **Its report**: `src/report/ops/` (an `impl WorkloadReport`) and its arm in
//!    `src/report/by_kind.rs`.
//!
//! A layout rule (`src/layout_rules.rs`) fails when a non-test line anywhere else names a
//! workload variant.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::catalogue::Metric;
use crate::model::{CellParams, CellResult, SkipReason, WorkloadKind};
use crate::monitor::Watch;
use crate::scenario::{FioJob, GateSpec, PAIR_RERUNS_WITHOUT_BUDGET, Workload};

/// A measured member of a pair: its value for the sequential stop, and the load its
/// windows saw (judged against its partners' by [`crate::host::pair_load::pair_load`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    /// The member's value (loops/ms, IOPS, ops/s, seconds per iteration).
    pub value: f64,
    /// The load it saw, per quantity its pair is judged on: one for a member's repetitions
    /// (lat_fs, fio, op mixes), one per step for steps (judged step by step).
    pub loads: Vec<crate::host::pair_load::MemberLoad>,
}

/// What a configured workload (its scenario's `[workload]`) answers about itself.
pub trait WorkloadAnswers {
    /// The questions of its kind that need no options.
    fn kind(&self) -> &'static dyn KindAnswers;

    /// `workload.rounds` (times the whole matrix runs, each round provisioning every cell
    /// afresh), or `None` for a kind without rounds: its cells run once.
    fn rounds(&self) -> Option<u32> {
        None
    }

    /// Expected run time of one cell over all its rounds, excluding provisioning (plans,
    /// progress, the cost of a paired run).
    fn cell_estimate(&self) -> Duration;

    /// The work of one cell a guest's hang timeout scales with (kernel runs under qemu).
    fn guest_cell_work(&self) -> Duration;

    /// Void pairs a pair group may run again; a kind without a budget of its own takes
    /// [`PAIR_RERUNS_WITHOUT_BUDGET`].
    fn pair_reruns(&self) -> u32 {
        PAIR_RERUNS_WITHOUT_BUDGET
    }

    /// Iterations one member of a pair adds to its cell, for a kind whose members are
    /// slices of the cell's iterations rather than rounds; `None` otherwise.
    fn iterations_per_member(&self) -> Option<u32> {
        None
    }

    /// What a measured member contributes to its pair: its value over all its samples,
    /// disturbed ones included, and the load they saw; or why it voids the pair (starting
    /// with [`CellResult::measured`], the status ladder of a member). Whether the load voids
    /// the pair is its partner's business too: [`crate::host::pair_load`] decides.
    fn member_value(&self, r: &CellResult) -> Result<Member, String>;

    /// The value round (member) `round` of a stored cell contributed to its pair, as
    /// [`WorkloadAnswers::member_value`] computed it (a resumed paired run's pairs).
    fn round_value(&self, r: &CellResult, round: u32) -> Result<f64, String>;

    /// The gate threshold a pair group whose baseline member is `baseline` decides with.
    fn pair_threshold(&self, gate: &GateSpec, _baseline: &CellParams) -> f64 {
        gate.threshold_for(self.kind().default_metric().name())
    }

    /// Why kernel-paired runs (`--paired --kernel`) cannot take this kind yet, or `None`.
    fn kernel_pairs_refused(&self) -> Option<&'static str> {
        None
    }

    /// What a cell needs from the host beyond its filesystems, as the plan lists it
    /// (`fio`, `exec`), appended to `needs`; `dir_backing`: the cell runs in an existing
    /// directory (no root needed for the filesystems).
    fn add_needs(&self, _needs: &mut Vec<String>, _dir_backing: bool) {}

    /// A line `plan` prints under its table about what one cell of this workload builds
    /// and costs (an op mix's files, bytes, memory and build time); `None`: nothing to add.
    fn plan_note(&self) -> Option<String> {
        None
    }

    /// Why the host cannot run this cell (`root` says whether fsbench runs as root), found
    /// without touching anything; `None` when the workload has no objection.
    fn cannot_run(&self, _p: &CellParams, _root: bool) -> Option<SkipReason> {
        None
    }

    /// The uid each of `tasks` tasks runs as (lmbench's `-U`), so that provisioning gives
    /// each task directory to its uid; `None`: the tasks run as fsbench. A workload that
    /// wants uids it cannot have (`as_root` false) says so in `notes`.
    fn task_uids(&self, _tasks: u32, _as_root: bool, _notes: &mut Vec<String>) -> Option<Vec<u32>> {
        None
    }

    /// The commands it runs on the host (`exec` steps), as command lines: what a bundle or
    /// a run from another host must be allowed to run.
    fn commands(&self) -> Vec<String> {
        Vec::new()
    }

    /// Programs a guest needs besides the filesystem tools (`fio`, an `exec` step's program).
    fn guest_tools(&self) -> Vec<String> {
        Vec::new()
    }

    /// The job it hands another program, as written with where (fio's job): a bundle
    /// carries its file (`workload.job_file`) and judges its options; `None`: it has none.
    fn job(&self) -> Option<&FioJob> {
        None
    }

    /// Untimed time before each measured window (calibration's time per sample).
    fn warmup(&self) -> Duration {
        Duration::ZERO
    }

    /// The workload as a cell's profiled repetition runs it (`[workload] profile`): once
    /// (one repetition, one iteration), with no reruns and no disturbance judgement; its
    /// numbers are thrown away. `None`: this kind is not profiled.
    fn profiled_once(&self) -> Option<Workload> {
        None
    }

    /// Whether the profiled repetition of a cell of `tasks` tasks runs in fsbench's own
    /// process (then the profile follows fsbench's threads, not its children).
    fn runs_in_process(&self, _tasks: u32, _in_cgroup: bool) -> bool {
        false
    }

    /// The name prefix of the worker threads of an in-process workload that names them
    /// (`ops-`): its profile is those threads', not the supervising thread's.
    fn worker_threads(&self) -> Option<&'static str> {
        None
    }

    /// The workload as a member of a pair runs it: a disturbed repetition is neither rerun
    /// nor waited out, since the pair judges its members' load together
    /// ([`crate::workload::reruns`], [`crate::host::pair_load`]); `None`: as configured.
    fn pair_member(&self) -> Option<Workload> {
        None
    }

    /// Run the workload once on a provisioned cell, storing its measurements, notes and a
    /// `disturbed` status in `r`.
    fn run_cell(&self, at: &mut CellRun<'_>, r: &mut CellResult) -> anyhow::Result<()>;
}

/// What a workload kind answers without its options: from a stored run's `workload` alone.
pub trait KindAnswers: Sync {
    /// The metric a comparison of its cells reads unless told otherwise (gate, paired report).
    fn default_metric(&self) -> Metric;

    /// The metric `--metric NAME` names for its runs (`None`: the default), or the names it
    /// takes, for the error.
    fn metric(&self, requested: Option<&str>) -> Result<Metric, &'static str>;

    /// The metrics a paired run's cells are compared on, the default first (history).
    fn paired_metrics(&self) -> Vec<Metric> {
        vec![self.default_metric()]
    }
}

/// A provisioned cell, as a workload runs on it ([`WorkloadAnswers::run_cell`]).
pub struct CellRun<'a> {
    /// The cell.
    pub params: &'a CellParams,
    /// The root of the cell's (first) filesystem.
    pub target: &'a Path,
    /// One directory per task: its own filesystem (layout M) or a directory of the shared one (S).
    pub task_dirs: &'a [PathBuf],
    /// The cell has a cgroup: every process started for it joins it.
    pub in_cgroup: bool,
    /// fsbench runs as root.
    pub as_root: bool,
    /// fsbench's own executable, re-executed as a worker.
    pub exe: &'a Path,
    /// A directory of the run's work directory for this cell's scratch files (not under test).
    pub scratch: PathBuf,
    /// The cell's block devices, read around every repetition or step.
    pub watch: Option<&'a Watch>,
    /// Says what the cell is doing (`repetition 2/5`).
    pub phase: &'a dyn Fn(&str),
    /// Whether the run was interrupted (SIGINT, SIGTERM).
    pub cancel: &'a dyn Fn() -> bool,
    /// The scenario's `[archive]` put where a workload running on `dir` reads it: the
    /// directory holding it (staged once per run, copied onto `dir` when `on_target`), or
    /// `None` when the scenario has no archive.
    pub stage_archive: &'a mut dyn FnMut(&Path) -> anyhow::Result<Option<PathBuf>>,
    /// The archive came in a bundle: unpacked with limits, never trusted.
    pub untrusted_archive: bool,
}

/// The answers of the configured workload `w`: the one dispatch over the scenario's kinds.
pub fn of(w: &Workload) -> &dyn WorkloadAnswers {
    match w {
        Workload::Latfs(l) => l,
        Workload::Steps(s) => s,
        Workload::Fio(f) => f,
        Workload::Ops(o) => o,
    }
}

/// The lat_fs kind; its answers are in `latfs/answers.rs`.
pub struct LatfsKind;
/// The steps kind; its answers are in `steps/answers.rs`.
pub struct StepsKind;
/// The fio kind; its answers are in `fio/answers.rs`.
pub struct FioKind;
/// The op-mix kind; its answers are in `ops/answers.rs`.
pub struct OpsKind;

/// The answers of the kind `k` (a stored run's `workload`): the one dispatch over its kinds.
pub fn of_kind(k: WorkloadKind) -> &'static dyn KindAnswers {
    match k {
        WorkloadKind::LatFs => &LatfsKind,
        WorkloadKind::Steps => &StepsKind,
        WorkloadKind::Fio => &FioKind,
        WorkloadKind::Ops => &OpsKind,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::CellStatus;

    /// One scenario of each kind, as shipped in `scenarios/`.
    fn scenarios() -> Vec<crate::scenario::Scenario> {
        let texts = [
            ("quota-smp.toml", include_str!("../../scenarios/quota-smp.toml")),
            ("kernel-untar.toml", include_str!("../../scenarios/kernel-untar.toml")),
            ("fio-randwrite.toml", include_str!("../../scenarios/fio-randwrite.toml")),
            ("varmail.toml", include_str!("../../scenarios/varmail.toml")),
        ];
        texts.iter().map(|(origin, text)| crate::scenario::parse_str(text, origin).unwrap()).collect()
    }

    #[test]
    fn a_kind_answers_alike_through_its_spec_and_through_its_run_json_name() {
        let kinds: Vec<WorkloadKind> = scenarios().iter().map(|s| s.workload.kind()).collect();
        assert_eq!(kinds, [WorkloadKind::LatFs, WorkloadKind::Steps, WorkloadKind::Fio, WorkloadKind::Ops]);
        for s in scenarios() {
            let (spec, kind) = (of(&s.workload).kind(), of_kind(s.workload.kind()));
            let own = kind.default_metric();
            assert_eq!(spec.default_metric(), own, "{}", s.name);
            // The default is what `--metric` names when given none, and its own name names it.
            assert_eq!(kind.metric(None), Ok(own), "{}", s.name);
            assert_eq!(kind.metric(Some(own.name())), Ok(own), "{}", s.name);
            assert!(kind.metric(Some("no_such_metric")).is_err(), "{}", s.name);
            assert_eq!(kind.paired_metrics().first(), Some(&own), "{}", s.name);
        }
    }

    #[test]
    fn every_kind_voids_a_pair_with_a_failed_or_skipped_member_in_the_same_words_and_leaves_disturbance_to_the_pair() {
        let p = crate::plan::expand(&scenarios()[0]).cells[0].params.clone();
        for s in scenarios() {
            let answers = of(&s.workload);
            let value = |r: &CellResult| answers.member_value(r).map(|m| m.value);
            let mut r = CellResult::new(&p, CellStatus::Failed, "t");
            r.error = Some("mkfs.ext4: no space".into());
            assert_eq!(value(&r), Err("failed: mkfs.ext4: no space".into()), "{}", s.name);
            r.status = CellStatus::Skipped;
            assert_eq!(value(&r), Err("skipped".into()), "{}", s.name);
            // A disturbed cell measured something: its partner's load decides
            // (`host::pair_load`); without the kind's samples it is no member either way.
            for status in [CellStatus::Disturbed, CellStatus::Ok] {
                r.status = status;
                let why = value(&r).unwrap_err();
                assert!(why.starts_with("no "), "{}: {why}", s.name);
            }
        }
    }

    #[test]
    fn only_the_kind_with_rounds_has_them_and_only_steps_members_are_slices_of_iterations() {
        let [latfs, steps, fio, ops] = <[_; 4]>::try_from(scenarios()).ok().unwrap();
        assert_eq!(of(&ops.workload).rounds(), None);
        assert_eq!(of(&ops.workload).iterations_per_member(), None);
        assert_eq!(of(&latfs.workload).rounds(), Some(1));
        assert_eq!(of(&steps.workload).rounds(), None);
        assert_eq!(of(&fio.workload).rounds(), None);
        assert_eq!(of(&steps.workload).iterations_per_member(), Some(5));
        assert_eq!(of(&latfs.workload).iterations_per_member(), None);
        assert!(of(&steps.workload).kernel_pairs_refused().is_some());
        assert!(of(&fio.workload).job().is_some() && of(&latfs.workload).job().is_none());
    }
}
