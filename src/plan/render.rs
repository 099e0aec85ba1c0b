//! A plan as text: its table of cells (needs, and whether each can run here) and what a
//! paired plan's groups cost. Pure functions: the host checks are made by the caller.

use std::collections::BTreeMap;
use std::time::Duration;

use super::{
    Cell, PairGroup, Plan, TCG_SECS_PER_BOOT, cell_cost, estimate, kernel_arm_cells, kernel_run_estimate, needs,
    pair_groups, pair_reruns, profiled_estimate,
};
use crate::model::SkipReason;
use crate::scenario::{Backing, CompareSpec, Scenario};

/// Render a plan as a table `width` columns wide: one row per cell, its needs and whether
/// it can run here (`verdicts`, one per cell of `plan`, from the caller's host check).
pub fn render_plan_table(
    s: &Scenario,
    plan: &Plan,
    verdicts: &[Option<SkipReason>],
    width: u16,
    compact: bool,
) -> String {
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
    let mut skipped: BTreeMap<String, (usize, Option<String>)> = BTreeMap::new();
    for r in verdicts.iter().flatten() {
        skipped.entry(r.reason.clone()).or_insert((0, r.remedy.clone())).0 += 1;
    }
    let number = |reason: &str| skipped.keys().position(|k| k == reason).map_or(0, |i| i + 1);
    for (c, verdict) in plan.cells.iter().zip(verdicts) {
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
    let profiled = profiled_estimate(s);
    let est = (estimate(s) + profiled) * (total - skip_count) as u32;
    // The prose around the table wraps to the same width, so a piped plan fits its columns.
    let w = usize::from(width);
    let wrap = |t: &str| crate::text::wrap(t, w, "    ");
    let mut out =
        format!("{}\n{table}\n", wrap(&format!("scenario {} ({}): {}", s.name, s.source.origin, s.description)));
    let rounds = match crate::workload::kind::of(&s.workload).rounds() {
        Some(n) if n > 1 => format!(", each in {n} rounds (provisioned afresh every round)"),
        _ => String::new(),
    };
    // Under other kernels the cells run in guests: a boot per kernel, and the guest's work.
    let estimated = if s.kernels.is_empty() {
        let with = if profiled.is_zero() { "" } else { " (one profiled repetition per cell included)" };
        format!("estimated {} of measurement{with}", crate::text::human_duration(est))
    } else {
        let (low, high) = kernel_run_estimate(s, total, s.kernels.len());
        format!(
            "estimated {}–{} with {} guest boot(s) under TCG (about {:.0}–{:.0} s each, docs/qemu.md; faster under KVM)",
            crate::text::human_duration(low),
            crate::text::human_duration(high),
            s.kernels.len(),
            TCG_SECS_PER_BOOT.0,
            TCG_SECS_PER_BOOT.1
        )
    };
    out.push_str(&wrap(&format!(
        "{}: {} ready, {skip_count} will be skipped here{rounds}; {estimated}",
        crate::text::cell_count(total),
        total - skip_count,
    )));
    out.push('\n');
    if let Some(note) = crate::workload::kind::of(&s.workload).plan_note() {
        out.push_str(&wrap(&note));
        out.push('\n');
    }
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
         worst, each on top of the times above (about {:.0}–{:.0} s a boot under TCG on a 2-core host, docs/qemu.md); \
         what each guest kernel supports is checked inside it",
        TCG_SECS_PER_BOOT.0, TCG_SECS_PER_BOOT.1
    );
    out.push_str(&crate::text::wrap(&text, usize::from(width), "    "));
    out.push('\n');
    out
}

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
