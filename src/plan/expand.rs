//! Matrix expansion: a scenario becomes an ordered list of cells.

use std::collections::BTreeMap;

use super::{Cell, Plan};
use crate::model::CellParams;
use crate::scenario::Scenario;

/// Expand a scenario into all its cells, in run order.
pub fn expand(s: &Scenario) -> Plan {
    let m = &s.matrix;
    let tests: Vec<Option<crate::model::LatfsTest>> =
        if m.test.is_empty() { vec![None] } else { m.test.iter().copied().map(Some).collect() };
    let sweeps = fio_sweeps(&m.fio);
    let mut cells =
        Vec::with_capacity(m.fs.len() * m.layout.len() * m.quota.len() * m.tasks.len() * tests.len() * sweeps.len());
    for fs in &m.fs {
        for &layout in &m.layout {
            for &quota in &m.quota {
                for &tasks in &m.tasks {
                    for &test in &tests {
                        for fio in &sweeps {
                            let index = cells.len();
                            let params = CellParams {
                                fs: fs.clone(),
                                layout,
                                quota,
                                tasks,
                                test,
                                fio: fio.clone(),
                                kernel: None,
                            };
                            cells.push(Cell { index, params });
                        }
                    }
                }
            }
        }
    }
    Plan { scenario: s.name.clone(), cells }
}

/// Every combination of the fio sweep values, the last axis innermost; one empty
/// combination when nothing is swept.
fn fio_sweeps(axes: &[crate::scenario::FioAxis]) -> Vec<BTreeMap<String, String>> {
    let mut out = vec![BTreeMap::new()];
    for axis in axes {
        out = out
            .into_iter()
            .flat_map(|done| {
                axis.values.iter().map(move |v| {
                    let mut next = done.clone();
                    next.insert(axis.option.clone(), v.clone());
                    next
                })
            })
            .collect();
    }
    out
}

/// Every cell once per kernel of a kernel-paired run (`-kernel=LABEL` in its id), in plan
/// order with the kernels innermost; the indices are positions in this list.
pub fn kernel_arm_cells(cells: &[Cell], labels: &[String]) -> Vec<Cell> {
    cells
        .iter()
        .flat_map(|c| labels.iter().map(move |l| (c, l)))
        .enumerate()
        .map(|(index, (c, l))| Cell { index, params: CellParams { kernel: Some(l.clone()), ..c.params.clone() } })
        .collect()
}
