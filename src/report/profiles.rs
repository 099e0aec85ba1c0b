//! The profiles of a report's cells (`[workload] profile`): for each profiled cell, its
//! top functions by total share (itself and its callees) and by self share (on the CPU
//! itself), and in the HTML page its flame graph; for `cpu+offcpu`, the same of the time
//! its workers were blocked off the CPU. A cell whose stored profile cannot be
//! read says so ("no profile: ..."); a cell run unprofiled says why in its notes.

use super::markup::Markup;
use crate::model::CellProfile;
use crate::profile::folded::{Folded, parse_untrusted};
use crate::profile::{flame, shares};
use crate::results::LoadedRun;

/// How many functions each table lists.
pub const TOP: usize = 10;

/// A loaded cell's profile as folded stacks, or why there is none to show.
pub fn folded_of(p: &CellProfile) -> Result<Folded, String> {
    if let Some(why) = &p.not_profiled {
        return Err(format!("not profiled: {why}"));
    }
    if let Some(why) = &p.unreadable {
        return Err(format!("no profile: {why}"));
    }
    parse_untrusted(p.folded.as_bytes()).map_err(|e| format!("no profile: {e}"))
}

/// `12.3`: a share in percent with one decimal.
fn pct(v: f64) -> String {
    format!("{v:.1}")
}

/// The profiles section: nothing when no cell of `runs` has a profile record.
pub(super) fn write(m: &mut dyn Markup, runs: &[(&str, &LoadedRun)], flame_graphs: bool) {
    let profiled: Vec<_> = runs
        .iter()
        .flat_map(|(label, run)| run.cells.iter().filter_map(move |c| c.profile.as_ref().map(|p| (*label, c, p))))
        .filter(|(_, _, p)| p.not_profiled.is_none())
        .collect();
    if profiled.is_empty() {
        return;
    }
    m.heading(2, "Profiles");
    m.paragraph(
        "On-CPU stacks of each cell's workers in one separate, uncounted repetition (with `+kthreads`, the \
         kernel threads' too, each rooted at its kind in brackets: `[jbd2]`, `[kworker]`). total: share of \
         samples with the function on the stack (itself and its callees); self: share with it on the CPU itself.",
    );
    for (label, cell, p) in profiled {
        let title = if runs.len() > 1 { format!("{label} {}", cell.id) } else { cell.id.clone() };
        let f = match folded_of(p) {
            Ok(f) => f,
            Err(why) => {
                m.note(&format!("{title}: {why}"));
                continue;
            }
        };
        m.heading(3, &format!("Profile of {title}"));
        m.paragraph(&format!(
            "{} samples of {} at {} Hz, kernel {}{}",
            f.samples(),
            p.event.as_deref().unwrap_or("?"),
            p.frequency_hz.map_or("?".into(), |h| h.to_string()),
            p.kernel_release.as_deref().unwrap_or("?"),
            if p.merged_stacks > 0 {
                format!("; {} cold stacks merged to fit the cap", p.merged_stacks)
            } else {
                String::new()
            }
        ));
        let all = shares::shares(&f);
        let rows = |v: Vec<shares::FunctionShare>, self_first: bool| -> Vec<Vec<String>> {
            v.into_iter()
                .map(|s| {
                    let (a, b) = if self_first { (s.self_pct, s.total_pct) } else { (s.total_pct, s.self_pct) };
                    vec![s.name, pct(a), pct(b)]
                })
                .collect()
        };
        m.table(
            &["function (by total)".into(), "total %".into(), "self %".into()],
            &rows(shares::top_total(&all, TOP), false),
        );
        m.table(
            &["function (by self)".into(), "self %".into(), "total %".into()],
            &rows(shares::top_self(&all, TOP), true),
        );
        if flame_graphs && let Some(svg) = flame::flame_svg(&f, &format!("fsbench profile: {title}")) {
            m.figure(&flame::as_image(&svg), &format!("Flame graph of {title} (width: share of samples)"));
        }
        if let Some(off) = &p.offcpu {
            write_offcpu(m, &title, off, flame_graphs);
        }
    }
}

/// A `cpu+offcpu` cell's off-CPU stacks: where its workers were blocked, by time.
fn write_offcpu(m: &mut dyn Markup, title: &str, p: &CellProfile, flame_graphs: bool) {
    let f = match folded_of(p) {
        Ok(f) => f,
        Err(why) => {
            m.note(&format!("{title}: off-CPU: {why}"));
            return;
        }
    };
    let ms = |us: u64| format!("{:.1}", us as f64 / 1e3);
    m.heading(3, &format!("Off-CPU of {title}"));
    m.paragraph(&format!(
        "{} ms blocked off the CPU (summed over the workers; from {}), {} ms more preempted while runnable \
         (waiting for a CPU, not counted below). total: share of the blocked time with the function on the \
         stack; functions on every stack (the scheduler, the system-call entry) are left out.",
        ms(f.samples()),
        p.event.as_deref().unwrap_or("?"),
        ms(p.runnable_us.unwrap_or(0))
    ));
    let all = shares::shares(&f);
    // The trunk every stack shares says nothing about where they differ.
    let below_the_trunk: Vec<shares::FunctionShare> = all.into_iter().filter(|s| s.total_pct < 99.95).collect();
    let rows: Vec<Vec<String>> = shares::top_total(&below_the_trunk, TOP)
        .into_iter()
        .map(|s| {
            let blocked = (s.total_pct / 100.0 * f.samples() as f64) as u64;
            vec![s.name, pct(s.total_pct), ms(blocked)]
        })
        .collect();
    m.table(&["function (by total)".into(), "total %".into(), "ms blocked".into()], &rows);
    if flame_graphs && let Some(svg) = flame::flame_svg(&f, &format!("fsbench off-CPU: {title}")) {
        m.figure(&flame::as_image(&svg), &format!("Off-CPU flame graph of {title} (width: share of the time blocked)"));
    }
}
