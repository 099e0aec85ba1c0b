//! The plan: a scenario's matrix expanded into an ordered list of cells, narrowed by
//! `--only`, with what each cell needs and costs, its pair groups, and the plan's text.
//!
//! [`expand()`] makes the cells (fs outermost, then `layout`, `quota`, `tasks`, `test` and
//! the fio option sweeps innermost, in alphabetical order of the option, each axis in the
//! order its values are written). The order is stable: it is the order cells run in, the
//! order of result files, and the basis of `--only` and sharding. [`filter`] reads `--only`,
//! [`cost`] says what a cell needs and how long it takes, [`pairs`] groups the cells of a
//! paired run, and [`render`] turns a plan into text (a pure function: data in, text out).

pub mod cost;
pub mod expand;
pub mod filter;
pub mod pairs;
pub mod render;
#[cfg(test)]
mod tests;

use crate::exit::InputError;
use crate::model::CellParams;
use crate::scenario::Scenario;

pub use cost::{TCG_SECS_PER_BOOT, cell_cost, estimate, kernel_run_estimate, needs, pair_reruns, profiled_estimate};
pub use expand::{expand, kernel_arm_cells};
pub use filter::{CellFilter, axis_value, kernel_filters};
pub use pairs::{PairGroup, pair_groups};
pub use render::{render_kernel_pairing, render_pairing, render_plan_table};

/// The expanded matrix of one scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Scenario name.
    pub scenario: String,
    /// Cells in run order.
    pub cells: Vec<Cell>,
}

/// One cell of the plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// Position in the full (unfiltered) expansion, from 0.
    pub index: usize,
    /// Axis values.
    pub params: CellParams,
}

impl Cell {
    /// Stable identifier (`ext4-S-qoff-t2-chown`).
    pub fn id(&self) -> String {
        self.params.id()
    }
}

/// The axis names `--only` accepts: the scenario's matrix axes.
pub use crate::scenario::AXES;

/// Expand a scenario and keep the cells that `--only` filters select.
pub fn plan_for(s: &Scenario, only: &[String]) -> anyhow::Result<Plan> {
    let plan = expand(s);
    let filter = CellFilter::parse(only, &plan).map_err(anyhow::Error::new)?;
    let plan = filter.apply(plan);
    if plan.cells.is_empty() {
        return Err(InputError::anyhow("--only matches no cell (each value exists, but not in one combination)"));
    }
    Ok(plan)
}
