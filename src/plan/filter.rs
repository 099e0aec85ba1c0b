//! `--only`: which cells of a plan run, and the kernels a kernel-paired run keeps.

use std::collections::BTreeMap;

use super::{AXES, Plan};
use crate::exit::InputError;
use crate::model::CellParams;

/// A parsed `--only` filter: for each axis, the values allowed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CellFilter {
    /// One group per `--only` option; a cell must match every group.
    groups: Vec<BTreeMap<String, Vec<String>>>,
}

/// The value a cell has on `axis`, spelt as its id spells it (`ext4`, `M`, `on`, `4`, `chown`).
pub fn axis_value(p: &CellParams, axis: &str) -> String {
    match axis {
        "fs" => p.fs.clone(),
        "layout" => p.layout.to_string(),
        "quota" => p.quota.to_string(),
        "tasks" => p.tasks.to_string(),
        "test" => p.test.map(|t| t.name().to_string()).unwrap_or_default(),
        crate::scenario::KERNEL_ARMS => p.kernel.clone().unwrap_or_default(),
        _ => axis.strip_prefix("fio.").and_then(|o| p.fio.get(o)).cloned().unwrap_or_default(),
    }
}

/// Normalise what users type for a value (`qon`, `lat_fs_chown`) to how cells spell it.
fn normalise(axis: &str, value: &str) -> String {
    match (axis, value) {
        ("quota", "qoff") => "off".into(),
        ("quota", "qon") => "on".into(),
        ("test", v) => v.strip_prefix("lat_fs_").unwrap_or(v).to_string(),
        ("layout", v) => v.to_ascii_uppercase(),
        (_, v) => v.to_string(),
    }
}

impl CellFilter {
    /// Parse `--only` options against a plan; unknown axes and values no cell has are errors.
    pub fn parse(options: &[String], plan: &Plan) -> Result<CellFilter, InputError> {
        let mut groups = Vec::new();
        for opt in options {
            let mut group: BTreeMap<String, Vec<String>> = BTreeMap::new();
            // `fs=xfs,btrfs,tasks=1`: a part without `=` is one more value of the axis before it.
            let mut last_axis: Option<&str> = None;
            for part in opt.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let (axis, value) = match (part.split_once('='), last_axis) {
                    (Some((a, v)), _) => (a.trim(), v),
                    (None, Some(a)) => (a, part),
                    (None, None) => {
                        return Err(InputError(format!(
                            "--only {opt}: expected AXIS=VALUE first, found `{part}` (e.g. --only fs=ext2,ext4,tasks=1)"
                        )));
                    }
                };
                last_axis = Some(axis);
                // `fio.<option>`: a fio sweep; a name no cell has fails below, as a value would.
                if !AXES.contains(&axis) && !axis.starts_with("fio.") {
                    let hint = crate::scenario::suggest(axis, AXES.iter().copied())
                        .map(|s| format!(", did you mean `{s}`?"))
                        .unwrap_or_else(|| format!(" (axes: {})", AXES.join(", ")));
                    return Err(InputError(format!("--only {opt}: unknown axis `{axis}`{hint}")));
                }
                let value = normalise(axis, value.trim());
                // The axis's values in plan order, each once (for the error message).
                let mut seen = std::collections::BTreeSet::new();
                let present: Vec<String> =
                    plan.cells.iter().map(|c| axis_value(&c.params, axis)).filter(|v| seen.insert(v.clone())).collect();
                if !present.contains(&value) {
                    return Err(InputError(format!(
                        "--only {opt}: no cell has {axis}={value} (this scenario's values: {})",
                        present.join(", ")
                    )));
                }
                group.entry(axis.to_string()).or_default().push(value);
            }
            groups.push(group);
        }
        Ok(CellFilter { groups })
    }

    /// Whether a cell passes the filter.
    pub fn matches(&self, p: &CellParams) -> bool {
        self.groups.iter().all(|g| g.iter().all(|(axis, values)| values.contains(&axis_value(p, axis))))
    }

    /// Keep only matching cells (indices stay those of the full expansion).
    pub fn apply(&self, plan: Plan) -> Plan {
        Plan { scenario: plan.scenario, cells: plan.cells.into_iter().filter(|c| self.matches(&c.params)).collect() }
    }
}

/// `--only kernel=A,B` picked out of the `--only` options: the options left for the cells,
/// and the kernel labels each `kernel=` option allows (a kernel must be in every one). An
/// option naming `kernel` names nothing else (`--only kernel=A,B --only fs=ext4`).
pub fn kernel_filters(options: &[String]) -> Result<(Vec<String>, Vec<Vec<String>>), InputError> {
    let axis = crate::scenario::KERNEL_ARMS;
    let mut rest = Vec::new();
    let mut kernels = Vec::new();
    for opt in options {
        let first = opt.split(',').map(str::trim).find(|p| !p.is_empty()).unwrap_or("");
        if first.split_once('=').map(|(a, _)| a.trim()) != Some(axis) {
            rest.push(opt.clone());
            continue;
        }
        let mut labels = Vec::new();
        for part in opt.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let label = match part.split_once('=') {
                Some((a, v)) if a.trim() == axis => v.trim(),
                Some(_) => {
                    return Err(InputError(format!(
                        "--only {opt}: give `{axis}=` in an --only of its own (e.g. --only {axis}=A,B --only fs=ext4)"
                    )));
                }
                None => part,
            };
            labels.push(label.to_string());
        }
        kernels.push(labels);
    }
    Ok((rest, kernels))
}
