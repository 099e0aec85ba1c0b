//! Matrix expansion: a scenario becomes an ordered list of cells.
//!
//! Cells are the cartesian product of the axes, expanded with `fs` outermost,
//! then `layout`, `quota`, `tasks`, `test` and the fio option sweeps innermost (in
//! alphabetical order of the option), each axis in the order its values are written. The order is stable: it is the order cells run in,
//! the order of result files, and the basis of `--only` and sharding.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::exit::InputError;
use crate::model::{CellParams, Layout, QuotaImpl, QuotaMode, SkipReason};
use crate::scenario::{Backing, CompareSpec, Scenario, Workload, units::format_size};

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

/// What a cell needs from the host, as short phrases (`root`, `mkfs.xfs`, ...).
pub fn needs(s: &Scenario, p: &CellParams) -> Vec<String> {
    let mut needs = Vec::new();
    match &s.backing {
        Backing::TmpfsLoop { .. } => {
            needs.push("root".to_string());
            let images = if p.layout == Layout::M { p.tasks } else { 1 };
            let size = s.backing.image_size(p.layout).unwrap_or(0);
            needs.push(format!("{images}×{} loop", format_size(size)));
            needs.push(format!("mkfs.{}", s.fs_type(&p.fs)));
        }
        Backing::Device { path } => {
            needs.push("root".to_string());
            needs.push(format!("--allow-device {}", path.display()));
            needs.push(format!("mkfs.{}", s.fs_type(&p.fs)));
        }
        Backing::Dir { path } if path.as_os_str().is_empty() => needs.push("private dir".into()),
        Backing::Dir { path } => needs.push(format!("dir {}", path.display())),
    }
    if p.quota == QuotaMode::On {
        let how = match s.filesystems.get(&p.fs).map(|f| f.quota).unwrap_or_default() {
            QuotaImpl::Files => "quota (quotacheck, QFMT_V2)",
            QuotaImpl::Feature => "quota (ext4 feature)",
        };
        needs.push(how.into());
    }
    crate::workload::kind::of(&s.workload).add_needs(&mut needs, matches!(s.backing, Backing::Dir { .. }));
    needs
}

/// Estimated run time of one cell (for plans and progress), over all its rounds, excluding provisioning.
pub fn estimate(s: &Scenario) -> Duration {
    crate::workload::kind::of(&s.workload).cell_estimate()
}

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

/// How a cell would fare on this host.
pub type HostCheck<'a> = dyn Fn(&Scenario, &CellParams) -> Option<SkipReason> + 'a;

/// Render a plan as a table `width` columns wide: one row per cell, its needs and whether it can run here.
pub fn render_plan_table(s: &Scenario, plan: &Plan, check: &HostCheck, width: u16, compact: bool) -> String {
    use comfy_table::{ColumnConstraint, ContentArrangement, Table, Width, presets};
    let mut table = Table::new();
    table
        .load_style(if compact { presets::NOTHING } else { presets::UTF8_FULL_CONDENSED })
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(width);
    let has_test = plan.cells.iter().any(|c| c.params.test.is_some());
    // Compact (piped): without the columns the cell name already spells out, and with
    // skip reasons by number (listed below the table), so a cell takes one line.
    let mut header = vec!["#", "cell"];
    if !compact {
        header.extend(["fs", "layout", "quota", "tasks"]);
        if has_test {
            header.push("test");
        }
        header.extend(["needs", "here"]);
    } else {
        header.extend(["here", "needs"]);
    }
    table.set_header(header);
    let verdicts: Vec<Option<SkipReason>> = plan.cells.iter().map(|c| check(s, &c.params)).collect();
    let mut skipped: BTreeMap<String, (usize, Option<String>)> = BTreeMap::new();
    for r in verdicts.iter().flatten() {
        skipped.entry(r.reason.clone()).or_insert((0, r.remedy.clone())).0 += 1;
    }
    let number = |reason: &str| skipped.keys().position(|k| k == reason).map_or(0, |i| i + 1);
    for (c, verdict) in plan.cells.iter().zip(&verdicts) {
        let p = &c.params;
        let here = match verdict {
            None => "ready".to_string(),
            Some(r) if compact => format!("skip {}", number(&r.reason)),
            Some(r) => format!("skip: {}", crate::text::first_line_cut(&r.reason, 48)),
        };
        let mut row = vec![c.index.to_string(), c.id()];
        if !compact {
            row.extend([p.fs.clone(), p.layout.to_string(), p.quota.to_string(), p.tasks.to_string()]);
            if has_test {
                row.push(p.test.map(|t| t.name().to_string()).unwrap_or_default());
            }
            row.push(needs(s, p).join(", "));
            row.push(here);
        } else {
            row.push(here);
            row.push(needs(s, p).join(", "));
        }
        table.add_row(row);
    }
    // A cell name is never broken mid-word: its column is as wide as the longest.
    let longest = plan.cells.iter().map(|c| c.id().chars().count()).max().unwrap_or(4);
    if let Some(col) = table.column_mut(1) {
        // The width comfy-table bounds includes the padding on both sides.
        col.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(longest as u16 + 2)));
    }
    let total = plan.cells.len();
    let skip_count: usize = skipped.values().map(|(n, _)| n).sum();
    let est = estimate(s) * (total - skip_count) as u32;
    // The prose around the table wraps to the same width, so a piped plan fits its columns.
    let w = usize::from(width);
    let wrap = |t: &str| crate::text::wrap(t, w, "    ");
    let mut out =
        format!("{}\n{table}\n", wrap(&format!("scenario {} ({}): {}", s.name, s.source.origin, s.description)));
    let rounds = match crate::workload::kind::of(&s.workload).rounds() {
        Some(n) if n > 1 => format!(", each in {n} rounds (provisioned afresh every round)"),
        _ => String::new(),
    };
    out.push_str(&wrap(&format!(
        "{}: {} ready, {skip_count} will be skipped here{rounds}; estimated {} of measurement",
        crate::text::cell_count(total),
        total - skip_count,
        crate::text::human_duration(est)
    )));
    out.push('\n');
    out.push_str(&wrap("layout M: one filesystem per task; layout S: one filesystem shared by all tasks."));
    out.push('\n');
    if matches!(s.backing, Backing::Dir { .. }) {
        // The matrix still names filesystems, but nothing is built: say what will be measured.
        out.push_str(&wrap(
            "backing dir: nothing is formatted or mounted; cells run on the filesystem the directory is on \
             (cells of another type are skipped), without the scenario's mkfs and mount options.",
        ));
        out.push('\n');
    }
    for (i, (reason, (n, remedy))) in skipped.iter().enumerate() {
        out.push('\n');
        let which = if compact { format!("skip {}", i + 1) } else { "skipped".to_string() };
        out.push_str(&wrap(&format!("{which} ({}): {reason}", crate::text::cell_count(*n))));
        if let Some(r) = remedy {
            out.push('\n');
            out.push_str(&wrap(&format!("  remedy: {r}")));
        }
        out.push('\n');
    }
    out
}

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

/// What it costs to prepare one filesystem image (mkfs, mount, umount) on
/// loop-over-tmpfs; measured order of magnitude for ext4 with eager init on
/// these machines. Only relative sizes matter for balancing.
const IMAGE_COST: Duration = Duration::from_millis(300);

/// Estimated wall time of one cell: the workload estimate plus provisioning,
/// which grows with the number of filesystems (layout M makes one per task).
pub fn cell_cost(s: &Scenario, cell: &Cell) -> Duration {
    let images = match (&s.backing, cell.params.layout) {
        (Backing::Dir { .. }, _) => 0,
        (_, Layout::M) => cell.params.tasks.max(1),
        (_, Layout::S) => 1,
    };
    (estimate(s) + IMAGE_COST * images).max(Duration::from_millis(1))
}

/// Void pairs a pair group may run again: the workload's own budget
/// (`workload.max_reruns` for lat_fs), or [`crate::scenario::PAIR_RERUNS_WITHOUT_BUDGET`].
pub fn pair_reruns(w: &Workload) -> u32 {
    crate::workload::kind::of(w).pair_reruns()
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

/// What `plan` says of a paired scenario: the arms, the pair bounds and the looks, the
/// pair groups, the cells in none, and what the groups cost at best (every group decided
/// at `min` pairs) and at worst (`max` pairs and every rerun spent); `None` without `[compare]`.
pub fn render_pairing(s: &Scenario, plan: &Plan, width: u16) -> Option<String> {
    let spec = s.compare.as_ref()?;
    let arms = s.matrix.axis_values(&spec.arms).unwrap_or_default();
    Some(render_groups(s, spec, &plan.cells, &arms, width))
}

/// [`render_pairing`] of a kernel-paired run: the plan's cells under each of `labels`
/// (the baseline first), paired as `spec` says.
pub fn render_kernel_pairing(s: &Scenario, spec: &CompareSpec, plan: &Plan, labels: &[String], width: u16) -> String {
    let cells = kernel_arm_cells(&plan.cells, labels);
    let mut out = render_groups(s, spec, &cells, labels, width);
    let members = pair_groups(&cells, spec, labels).iter().map(|g| g.members.len() as u32).sum::<u32>();
    let (best, worst) = (members * spec.min_pairs, members * (spec.max_pairs + pair_reruns(&s.workload)));
    let text = format!(
        "every member is one cell in a freshly booted qemu guest under its kernel: {best} boots at best, {worst} at \
         worst, each on top of the times above (about {}–{} s a boot under TCG on a 2-core host, docs/qemu.md); \
         what each guest kernel supports is checked inside it",
        TCG_BOOT_SECS.0, TCG_BOOT_SECS.1
    );
    out.push_str(&crate::text::wrap(&text, usize::from(width), "    "));
    out.push('\n');
    out
}

/// What one guest boot costs a kernel-paired member under TCG, in seconds, as measured on
/// the development machine kind (docs/qemu.md): for `plan`'s arithmetic only.
const TCG_BOOT_SECS: (u32, u32) = (10, 15);

/// The pairing text of `cells` paired on `spec.arms` with values `arms`.
fn render_groups(s: &Scenario, spec: &CompareSpec, cells: &[Cell], arms: &[String], width: u16) -> String {
    let groups = pair_groups(cells, spec, arms);
    let reruns = pair_reruns(&s.workload);
    let cost = |g: &PairGroup| g.members.iter().map(|c| cell_cost(s, c)).sum::<Duration>();
    let best: Duration = groups.iter().map(|g| cost(g) * spec.min_pairs).sum();
    let worst: Duration = groups.iter().map(|g| cost(g) * (spec.max_pairs + reruns)).sum();
    let looks: Vec<String> =
        crate::stats::paired::look_schedule(spec.min_pairs, spec.max_pairs).iter().map(u32::to_string).collect();
    let wrap = |t: &str| crate::text::wrap(t, usize::from(width), "    ");
    let mut out = String::from("\n");
    out.push_str(&wrap(&format!(
        "paired: arms {} = {} (baseline first); {}–{} pairs per group, verdict looked at after {} pairs",
        spec.arms,
        arms.join(", "),
        spec.min_pairs,
        spec.max_pairs,
        looks.join(", ")
    )));
    out.push('\n');
    let keys: Vec<&str> = groups.iter().map(|g| g.key.as_str()).collect();
    out.push_str(&wrap(&format!("pair groups ({}): {}", groups.len(), keys.join(", "))));
    out.push('\n');
    out.push_str(&wrap(&format!(
        "pairs take about {} at best (every group decided after {} pairs) and {} at worst ({} pairs and {} void pairs rerun per group)",
        crate::text::human_duration(best),
        spec.min_pairs,
        crate::text::human_duration(worst),
        spec.max_pairs,
        reruns
    )));
    out.push('\n');
    let grouped: std::collections::BTreeSet<usize> =
        groups.iter().flat_map(|g| g.members.iter().map(|c| c.index)).collect();
    let lone: Vec<String> = cells.iter().filter(|c| !grouped.contains(&c.index)).map(Cell::id).collect();
    if !lone.is_empty() {
        out.push_str(&wrap(&format!("in no complete pair group, run unpaired: {}", lone.join(", "))));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_filters_are_picked_out_of_only_and_must_stand_alone() {
        let only = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (rest, k) = kernel_filters(&only(&["fs=ext4", "kernel=A,B", " kernel = C"])).unwrap();
        assert_eq!(rest, ["fs=ext4"]);
        assert_eq!(k, [vec!["A".to_string(), "B".to_string()], vec!["C".to_string()]]);
        let e = kernel_filters(&only(&["kernel=A,fs=ext4"])).unwrap_err();
        assert!(e.0.contains("an --only of its own"), "{}", e.0);
        // An axis named first keeps the option for the cells (and `kernel` there is unknown).
        assert_eq!(kernel_filters(&only(&["fs=ext4,kernel=A"])).unwrap().0, ["fs=ext4,kernel=A"]);
    }

    #[test]
    fn a_paired_plan_names_its_groups_and_what_the_pairs_cost() {
        let text = include_str!("../scenarios/paired-nodelalloc.toml");
        let s = crate::scenario::parse_str(text, "paired-nodelalloc.toml").unwrap();
        let plan = plan_for(&s, &["test=chown,open_close".to_string()]).unwrap();
        let out = render_pairing(&s, &plan, 200).unwrap();
        assert!(out.contains("paired: arms fs = ext4, ext4-nodelalloc (baseline first); 6–32 pairs per group, verdict looked at after 6, 9, 14, 21, 32 pairs"), "{out}");
        assert!(out.contains("pair groups (2): S-qoff-t1-open_close, S-qoff-t1-chown"), "{out}");
        assert!(
            out.contains("at best (every group decided after 6 pairs)")
                && out.contains("(32 pairs and 3 void pairs rerun per group)"),
            "{out}"
        );
        assert!(!out.contains("unpaired"), "{out}");
        let narrowed = plan_for(&s, &["test=chown".to_string(), "fs=ext4".to_string()]).unwrap();
        let out = render_pairing(&s, &narrowed, 200).unwrap();
        assert!(out.contains("pair groups (0)") && out.contains("run unpaired: ext4-S-qoff-t1-chown"), "{out}");
        let unpaired = Scenario { compare: None, ..s };
        assert_eq!(render_pairing(&unpaired, &plan, 200), None);
    }

    #[test]
    fn a_paired_steps_plan_names_its_groups_and_costs_its_members_with_their_reruns() {
        let text = "schema = 1\nname = \"t\"\n[matrix]\nfs = [\"ext4\", \"xfs\"]\ntasks = [1, 2]\n[backing]\nkind = \"dir\"\n\
                    path = \"/tmp\"\n[workload]\nkind = \"steps\"\niterations = 2\nsteps = [{ op = \"sync\" }]\n\
                    [compare]\narms = \"fs\"\npairs = { min = 2, max = 4 }\n";
        let s = crate::scenario::parse_str(text, "t.toml").unwrap();
        let plan = plan_for(&s, &[]).unwrap();
        let out = render_pairing(&s, &plan, 200).unwrap();
        assert!(out.contains("pair groups (2): S-qoff-t1, S-qoff-t2"), "{out}");
        // Dir backing: a member costs its steps' estimate, 2 s per step and iteration.
        let member = estimate(&s);
        assert_eq!(member, Duration::from_secs(4));
        let best = crate::text::human_duration(member * 2 * 2 * 2);
        let worst = crate::text::human_duration(member * 2 * 2 * (4 + 3));
        assert!(out.contains(&format!("pairs take about {best} at best")), "{out}");
        assert!(out.contains(&format!("and {worst} at worst (4 pairs and 3 void pairs rerun per group)")), "{out}");
    }

    fn scenario(matrix: &str) -> Scenario {
        let text = format!(
            "schema = 1\nname = \"t\"\n[matrix]\n{matrix}\n[backing]\nkind = \"dir\"\npath = \"/tmp\"\n[workload]\nkind = \"lat_fs\"\n"
        );
        crate::scenario::parse_str(&text, "t.toml").unwrap()
    }

    #[test]
    fn expansion_order_is_fs_layout_quota_tasks_test() {
        let s = scenario(
            "fs = [\"ext4\", \"ext2\"]\nlayout = [\"M\", \"S\"]\ntasks = [1, 2]\ntest = [\"chown\", \"open_close\"]",
        );
        let ids: Vec<String> = expand(&s).cells.iter().map(Cell::id).collect();
        assert_eq!(ids.len(), 16);
        assert_eq!(ids[0], "ext4-M-qoff-t1-chown");
        assert_eq!(ids[1], "ext4-M-qoff-t1-open_close");
        assert_eq!(ids[2], "ext4-M-qoff-t2-chown");
        assert_eq!(ids[4], "ext4-S-qoff-t1-chown");
        assert_eq!(ids[8], "ext2-M-qoff-t1-chown");
    }

    #[test]
    fn only_filters_with_and_across_keys_or_within() {
        let s = scenario("fs = [\"ext4\", \"ext2\"]\ntasks = [1, 2, 4]");
        let plan = expand(&s);
        let f = CellFilter::parse(&["fs=ext4,tasks=1,tasks=4".into()], &plan).unwrap();
        let kept = f.apply(plan.clone());
        assert_eq!(kept.cells.len(), 8);
        assert!(kept.cells.iter().all(|c| c.params.fs == "ext4" && c.params.tasks != 2));
        let f = CellFilter::parse(&["quota=qoff".into(), "test=lat_fs_chown".into()], &plan).unwrap();
        assert_eq!(f.apply(plan.clone()).cells.len(), 6);
    }

    #[test]
    fn a_bare_value_in_only_continues_the_key_before_it() {
        let s = scenario("fs = [\"ext4\", \"ext2\"]\ntasks = [1, 2, 4]");
        let plan = expand(&s);
        let short = CellFilter::parse(&["fs=ext2,ext4,tasks=1,4".into()], &plan).unwrap();
        let long = CellFilter::parse(&["fs=ext2,fs=ext4,tasks=1,tasks=4".into()], &plan).unwrap();
        assert_eq!(short, long);
        assert_eq!(short.apply(plan.clone()).cells.len(), 16);
        let e = CellFilter::parse(&["ext4,tasks=1".into()], &plan).unwrap_err();
        assert!(e.0.contains("expected AXIS=VALUE first, found `ext4`"), "{}", e.0);
        // A continued value is checked like any other.
        let e = CellFilter::parse(&["fs=ext4,xfs".into()], &plan).unwrap_err();
        assert!(e.0.contains("no cell has fs=xfs"), "{}", e.0);
    }

    #[test]
    fn only_rejects_unknown_axes_and_absent_values() {
        let s = scenario("fs = [\"ext4\"]");
        let plan = expand(&s);
        let e = CellFilter::parse(&["taks=1".into()], &plan).unwrap_err();
        assert!(e.0.contains("did you mean `tasks`"), "{}", e.0);
        let e = CellFilter::parse(&["fs=xfs".into()], &plan).unwrap_err();
        assert!(e.0.contains("no cell has fs=xfs (this scenario's values: ext4)"), "{}", e.0);
    }

    #[test]
    fn quota_smp_has_128_cells() {
        let s = crate::scenario::parse_str(crate::scenario::file::embedded("quota-smp").unwrap().text, "q").unwrap();
        assert_eq!(expand(&s).cells.len(), 128);
    }
}
