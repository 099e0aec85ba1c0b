//! Why the verdicts came out as they did, where the runs were profiled: the profile diff
//! of every gated cell profiled on both sides ([`crate::report::profile_diff`]), under the
//! terminal table ([`render_text`]) and in the Markdown summary ([`render_markdown`]).
//! The mail lists the same diffs in its own layout ([`super::email`]).
//!
//! Which diffs: a paired run's, between its arms across the pairs both profiled; two runs',
//! between the runs' first profiles of each cell; a gate against history has no profiles
//! to set side by side, so none.

use std::fmt::Write as _;

use super::GateReport;
use crate::profile::diff::Judged;
use crate::report::email::PROFILE_ROWS;
use crate::report::markup::{Markdown, Markup};
use crate::report::profile_diff::{self, CellDiff, Kind};
use crate::results::LoadedRun;
use crate::text::escape_control;

/// The on-CPU profile diffs behind `rep`, of the `runs` it gated (the baseline first).
pub fn profile_diffs(rep: &GateReport, runs: &[(String, LoadedRun)]) -> Vec<CellDiff> {
    if rep.paired.is_some() {
        return runs.iter().flat_map(|(_, run)| profile_diff::between_arms(run, Kind::OnCpu)).collect();
    }
    match runs {
        [(la, a), (lb, b)] => profile_diff::between_runs(&[(la.as_str(), a), (lb.as_str(), b)], Kind::OnCpu),
        _ => Vec::new(),
    }
}

/// The diffs for the terminal: per cell a line saying how it was judged, then the most
/// grown and the most shrunk functions (change in points of the total share, with the
/// interval across the pairs where there is one), each line at most `width` columns.
pub fn render_text(diffs: &[CellDiff], width: usize) -> String {
    if diffs.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    let intro = "Profile changes: total share of the samples (the function and its callees), change in points \
                 B less A; only changes beyond the noise. `fsbench report` shows the tables and flame graphs.";
    let _ = writeln!(out, "\n{}", crate::text::wrap(intro, width, ""));
    for cd in diffs {
        let _ = writeln!(out, "\n{}", crate::text::wrap(&cd.title, width, "  "));
        let d = match &cd.outcome {
            Ok((d, _, _)) => d,
            Err(why) => {
                let _ = writeln!(out, "{}", crate::text::wrap(&format!("  not compared: {why}"), width, "    "));
                continue;
            }
        };
        let how = match d.judged {
            Judged::AcrossPairs(n) => format!("across {n} pairs of profiles, 95% interval"),
            Judged::SingleProfile => "one profile a side: sampling noise only".into(),
            Judged::Untested => "untested: noise included".into(),
        };
        let _ = writeln!(
            out,
            "{}",
            crate::text::wrap(
                &format!(
                    "  {how}; {} grew and {} shrank beyond the noise{}",
                    d.beyond.0,
                    d.beyond.1,
                    match d.carried.0 + d.carried.1 {
                        0 => String::new(),
                        1 => " (1 caller carried by a callee not listed)".into(),
                        n => format!(" ({n} callers carried by a callee not listed)"),
                    }
                ),
                width,
                "    "
            )
        );
        for (what, changes) in [("grew", &d.grown), ("shrank", &d.shrunk)] {
            for c in changes.iter().take(PROFILE_ROWS) {
                // The interval column only where the diff was judged across pairs.
                let interval = match (d.judged, c.interval_pp) {
                    (Judged::AcrossPairs(_), Some((lo, hi))) => format!(" {:<15}", format!("[{lo:+.1}, {hi:+.1}]")),
                    (Judged::AcrossPairs(_), None) => format!(" {:<15}", "-"),
                    _ => String::new(),
                };
                let change = format!("{:+.1}", c.delta_pp);
                let line = format!("  {what:<6} {change:>6}{interval} {}", escape_control(&c.name));
                let _ = writeln!(out, "{}", crate::text::first_line_cut(&line, width));
            }
        }
        if d.grown.is_empty() && d.shrunk.is_empty() {
            let _ = writeln!(out, "  no function's share changed beyond the noise");
        }
    }
    out
}

/// The diffs for a CI summary: a section with each cell's sentence and tables, as the
/// report writes them (no flame graphs: a job summary shows no SVG).
pub fn render_markdown(diffs: &[CellDiff]) -> String {
    if diffs.is_empty() {
        return String::new();
    }
    let mut m: Box<dyn Markup> = Box::new(Markdown::default());
    m.heading(3, "Profile changes");
    m.paragraph(
        "Functions whose total share of the samples (the function and its callees) changed beyond the noise, \
         in percentage points.",
    );
    for cd in diffs {
        profile_diff::write_one(m.as_mut(), cd, Kind::OnCpu, false);
    }
    m.finish()
}
