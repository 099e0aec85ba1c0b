//! What the command layer asks of the qemu stage: one plain request.

use std::path::Path;

use crate::scenario::{KernelSpec, Scenario};

/// A request to run a scenario's cells under other kernels, one qemu guest each.
pub struct KernelsRequest<'a> {
    /// The scenario, loaded once by the caller; the guest gets its text.
    pub scenario: &'a Scenario,
    /// The kernels, in order.
    pub kernels: &'a [KernelSpec],
    /// `--only` filters, passed on to the guest's run.
    pub only: &'a [String],
    /// The order the guest's run takes its cells in (`run --order`).
    pub order: crate::runner::CellOrder,
    /// How many cells each guest runs (for its deadlines).
    pub cells: usize,
    /// The results root; each kernel's run directory is adopted under it.
    pub out: &'a Path,
    /// No progress lines from the guests.
    pub quiet: bool,
    /// The guests profile as the scenario says; `false` turns a profiling scenario's
    /// profiled repetition off (a paired member past [`crate::profile::PROFILED_PAIRS`]).
    pub profile: bool,
}
