//! The profile diff of a comparison (`compare`, and the gate's HTML page): for each cell
//! profiled in the reference run and in another, the functions whose total share changed
//! beyond the profile's sampling noise, grown and shrunk ([`crate::profile::diff`]), and
//! in the HTML page a differential flame graph (red grew, blue shrank).

use super::markup::Markup;
use super::profiles::{TOP, folded_of};
use crate::profile::diff::{self, ALPHA, FunctionChange, MIN_PP};
use crate::profile::flame;
use crate::results::LoadedRun;

/// `+1.2`: percentage points with a sign.
fn pp(v: f64) -> String {
    format!("{v:+.1}")
}

fn rows(changes: &[FunctionChange]) -> Vec<Vec<String>> {
    changes
        .iter()
        .map(|c| {
            vec![
                c.name.clone(),
                format!("{:.1}", c.a_pct),
                format!("{:.1}", c.b_pct),
                pp(c.delta_pp),
                format!("{:.1} → {:.1}", c.self_pct.0, c.self_pct.1),
                if c.p < 1e-4 { "<0.0001".into() } else { format!("{:.4}", c.p) },
            ]
        })
        .collect()
}

/// The profile changes of every run against the first; nothing when no cell has two profiles.
pub(super) fn write(m: &mut dyn Markup, runs: &[(&str, &LoadedRun)], flame_graphs: bool) {
    let Some(((base_label, base), others)) = runs.split_first() else { return };
    let mut heading = false;
    for (label, run) in others {
        for a_cell in &base.cells {
            let Some(b_cell) = run.cells.iter().find(|c| c.id == a_cell.id) else { continue };
            let (Some(pa), Some(pb)) = (&a_cell.profile, &b_cell.profile) else { continue };
            if !heading {
                m.heading(2, "Profile changes");
                m.paragraph(&format!(
                    "Functions whose total share (on the stack: itself and its callees) changed between the runs, in \
                     percentage points of each profile's samples. Single-profile differences: one profiled \
                     repetition per cell and run, so only sampling noise is tested (two-proportion z-test per \
                     function, Holm-adjusted, p < {ALPHA}, at least {MIN_PP} points); a change within it is not listed."
                ));
                heading = true;
            }
            let title = format!("{} ({base_label} → {label})", a_cell.id);
            let (fa, fb) = match (folded_of(pa), folded_of(pb)) {
                (Ok(a), Ok(b)) => (a, b),
                (Err(why), _) => {
                    m.note(&format!("{title}: {base_label}: {why}"));
                    continue;
                }
                (_, Err(why)) => {
                    m.note(&format!("{title}: {label}: {why}"));
                    continue;
                }
            };
            let d = diff::diff(&fa, &fb, TOP);
            m.heading(3, &format!("Profile diff of {title}"));
            m.paragraph(&format!(
                "{} → {} samples; {} functions tested, {} grew and {} shrank beyond the noise",
                d.samples.0,
                d.samples.1,
                d.tested,
                d.grown.len(),
                d.shrunk.len()
            ));
            let header = |what: &str| {
                vec![
                    format!("function ({what})"),
                    format!("{base_label} total %"),
                    format!("{label} total %"),
                    "change pp".into(),
                    "self %".into(),
                    "p (Holm)".into(),
                ]
            };
            if !d.grown.is_empty() {
                m.table(&header("grew"), &rows(&d.grown));
            }
            if !d.shrunk.is_empty() {
                m.table(&header("shrank"), &rows(&d.shrunk));
            }
            if flame_graphs
                && let Some(svg) = diff::differential_svg(&fa, &fb, &format!("fsbench profile diff: {title}"))
            {
                m.figure(
                    &flame::as_image(&svg),
                    &format!("Differential flame graph of {title}: red grew, blue shrank"),
                );
            }
        }
    }
}
