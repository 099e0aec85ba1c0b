//! Pair groups: the cells of a paired run that differ only in the arm axis.

use super::{Cell, axis_value};
use crate::model::CellParams;
use crate::scenario::CompareSpec;

/// Cells that differ only in the arm: one member per arm, baseline first.
#[derive(Debug, Clone, PartialEq)]
pub struct PairGroup<'c> {
    /// The group's cell id with the arm left out (`S-qoff-t1-chown` for arms = fs).
    pub key: String,
    /// One cell per arm, in the order of the arm axis's values.
    pub members: Vec<&'c Cell>,
}

/// The pair groups of `cells` for arms on `spec.arms` with values `arm_values` (the
/// baseline first), in the order their first member appears; a group missing an arm
/// (narrowed away by `--only`) is left out, since it has nothing to pair.
pub fn pair_groups<'c>(cells: &'c [Cell], spec: &CompareSpec, arm_values: &[String]) -> Vec<PairGroup<'c>> {
    let mut groups: Vec<(String, Vec<Option<&Cell>>)> = Vec::new();
    for cell in cells {
        let value = arm_value(cell, &spec.arms);
        let Some(arm) = arm_values.iter().position(|v| *v == value) else { continue };
        let key = group_key(cell, &spec.arms);
        let slot = match groups.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                groups.push((key, vec![None; arm_values.len()]));
                groups.len() - 1
            }
        };
        groups[slot].1[arm] = Some(cell);
    }
    groups
        .into_iter()
        .filter_map(|(key, m)| m.into_iter().collect::<Option<Vec<_>>>().map(|members| PairGroup { key, members }))
        .collect()
}

fn arm_value(cell: &Cell, axis: &str) -> String {
    axis_value(&cell.params, axis)
}

/// The cell's id parts without the arm's: what all members of a group share.
fn group_key(cell: &Cell, axis: &str) -> String {
    // Kernel arms: the cell as the plan made it, before it was given a kernel.
    if axis == crate::scenario::KERNEL_ARMS {
        return CellParams { kernel: None, ..cell.params.clone() }.id();
    }
    let p = &cell.params;
    let parts = [
        ("fs", p.fs.clone()),
        ("layout", p.layout.to_string()),
        ("quota", format!("q{}", p.quota)),
        ("tasks", format!("t{}", p.tasks)),
        ("test", p.test.map(|t| t.name().to_string()).unwrap_or_default()),
    ];
    parts.iter().filter(|(a, v)| *a != axis && !v.is_empty()).map(|(_, v)| v.as_str()).collect::<Vec<_>>().join("-")
}
