//! `fsbench bisect`: which candidate kernel of an ordered list (the good one first, the
//! bad one last) brought a regression, each step a paired comparison.
//!
//! - [`search`]: the bisection itself, pure over a [`search::StepJudge`]: endpoints
//!   confirmed first, midpoints judged bad / good / unknown against the good endpoint,
//!   skipped candidates stepped around, the culprit confirmed against its predecessor.
//! - [`step`]: one step's three-valued answer from the paired verdict.
//! - [`cells`]: a step judged over several cells, Holm-adjusted (`--all-cells`).
//! - [`log`]: the bisect log (`bisect.json`), written after every step, read to resume.
//! - [`judge_pairs`]: steps as in-memory pair groups through the runner's pair machinery.
//! - [`judge_kernels`]: steps as kernel-paired runs in qemu, each stored in the bisection's
//!   directory.
//! - [`step_profile`]: what a step's stored run says of its profiles, in the log; the step's run opened.
//! - [`setup`]: the candidates, the judged cell and the first log, checked before anything boots.
//! - [`simulate`]: the simulation the benchmark and the tests run (no root, no qemu).
//! - [`drive`]: a bisection run to its conclusion, its directory and its summary text.
//! - [`estimate`]: what a bisection will cost, before it starts.
//! - [`git`]: the candidates of a git range (`--git TREE --range GOOD..BAD`), a commit exported.
//! - [`build_cache`]: candidates built by the user's command, cached by commit and build configuration.
//! - [`build_prune`]: what a build cache holds, and pruning what fsbench made in it.
//! - [`judge_build`]: steps whose candidates are built when the search first needs them.

pub mod build_cache;
pub mod build_prune;
pub mod cells;
pub mod drive;
pub mod estimate;
pub mod git;
pub mod judge_build;
pub mod judge_kernels;
pub mod judge_pairs;
pub mod log;
pub mod report;
pub mod search;
pub mod setup;
pub mod simulate;
pub mod step;
pub mod step_profile;

/// Fewest pairs a bisection step takes by default.
pub const DEFAULT_MIN_PAIRS: u32 = 6;

/// Most pairs a bisection step takes by default (its budget for an `unknown` to become
/// decided); a scenario's `[compare] arms = "kernel"` pairs or `--max-pairs` set another.
pub const DEFAULT_MAX_PAIRS: u32 = 192;

/// Most cells a bisection judges together (`--all-cells`).
pub const MAX_CELLS: usize = 10_000;
