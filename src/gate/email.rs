//! `gate --email FILE`: the gate as a plain-text mail of at most 80 columns, for a kernel
//! developer's inbox or a list: a `Subject:` naming the verdicts and the worst regression,
//! what was gated against what, the verdict table, and (for two lat_fs runs) the
//! comparison mail's `%stddev %change` table with the profile's most changed functions
//! ([`crate::report::email`]); for a paired run, each arm's profile diff against its
//! group's baseline, judged across the pairs; ending with how to reproduce the gate.
//! Pure: the report and its runs in, text out; names from result files are escaped.

use std::fmt::Write as _;

use super::{GateReport, GateRow, Verdict};
use crate::results::LoadedRun;
use crate::text::escape_control;

/// Widest line (the comparison mail's).
const WIDTH: usize = crate::report::email::WIDTH;

/// The regressed row whose change is largest (the sign of a regression depends on the
/// metric: fewer loops, more seconds), with its change and interval as text.
fn worst_regression(rep: &GateReport) -> Option<(&GateRow, String)> {
    let pct = |x: f64| format!("{:+.1}%", x * 100.0);
    rep.rows
        .iter()
        .filter(|r| r.verdict == Verdict::Regressed)
        .filter_map(|r| r.change.map(|c| (r, c)))
        .max_by(|a, b| a.1.mean.abs().total_cmp(&b.1.mean.abs()))
        .map(|(r, c)| (r, format!("{} [{}, {}]", pct(c.mean), pct(c.ci_low), pct(c.ci_high))))
}

/// The mail's subject: the verdicts, and the worst regression where there is one.
pub fn subject(rep: &GateReport) -> String {
    let candidate = escape_control(&rep.candidate);
    let s = match worst_regression(rep) {
        Some((r, change)) => format!(
            "[fsbench] {candidate}: {} regressed, worst {} {} {change}",
            rep.count(Verdict::Regressed),
            escape_control(&r.name),
            r.metric.name()
        ),
        None if rep.count(Verdict::Missing) > 0 => {
            format!("[fsbench] {candidate}: no regression seen, {} missing", rep.count(Verdict::Missing))
        }
        None => format!("[fsbench] {candidate}: no regression ({} inconclusive)", rep.count(Verdict::Inconclusive)),
    };
    crate::text::first_line_cut(&s, WIDTH - "Subject: ".len())
}

/// The mail: subject line, blank line, body. `reproduce` is the gate's command line.
pub fn render_email(rep: &GateReport, runs: &[(String, LoadedRun)], reproduce: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Subject: {}\n", subject(rep));
    let what = format!(
        "fsbench's gate of {} against {}: {}.",
        escape_control(&rep.candidate),
        escape_control(&rep.baseline),
        super::render::summary_line(rep)
    );
    let _ = writeln!(out, "{}\n", crate::text::wrap(&what, WIDTH, ""));
    verdict_rows(&mut out, rep);
    for w in &rep.warnings {
        let _ = writeln!(out, "{}", crate::text::wrap(&format!("warning: {}", escape_control(w)), WIDTH, "  "));
    }
    // The numbers behind the verdict, as the 0-day bot mails them, where two lat_fs runs were gated.
    let pair: Vec<(&str, &LoadedRun)> = runs.iter().map(|(l, r)| (l.as_str(), r)).collect();
    // Its machine, parameters and numbers; not its headline, whose "regression" is any
    // drop, where the verdict above is the gate's.
    if rep.paired.is_none()
        && let Ok(details) = crate::report::email::render(&pair)
        && let Some(at) = details.find("testcase:")
    {
        let _ = writeln!(out, "\n{}\n", "-".repeat(WIDTH));
        out.push_str(&details[at..]);
    }
    // A paired run's arms: what changed in their profiles, judged across the pairs.
    if rep.paired.is_some() {
        for cd in super::why::profile_diffs(rep, runs) {
            let _ = writeln!(out, "\n{}", crate::text::wrap(&format!("perf-profile of {}:", cd.title), WIDTH, "  "));
            crate::report::email::profile_rows(&mut out, cd.outcome);
        }
    }
    out.push_str("\nThe gate:\n\n");
    out.push_str(&shell_lines(&escape_control(reproduce)));
    out.lines().map(|l| crate::text::first_line_cut(l, WIDTH)).collect::<Vec<_>>().join("\n") + "\n"
}

/// One line per comparison, 0-day style: verdict, change, interval, cell (and its note).
fn verdict_rows(out: &mut String, rep: &GateReport) {
    let (header, rows, _) = super::table_cells(rep);
    // The columns of `table_cells`: cell, metric, baseline, candidate, change, CI, verdict.
    let ci = header.get(5).map_or("CI", String::as_str);
    let _ = writeln!(out, "{:<13} {:>8} {:<20} cell", "verdict", "change", ci);
    let mut metrics: Vec<&str> = Vec::new();
    for (cells, r) in rows.iter().zip(&rep.rows) {
        let [name, metric, _, _, change, interval, verdict] = cells.as_slice() else { continue };
        let _ = writeln!(out, "{verdict:<13} {change:>8} {interval:<20} {}", escape_control(name));
        if let Some(note) = &r.note {
            let _ = writeln!(out, "{}", crate::text::wrap(&format!("  {}", escape_control(note)), WIDTH, "    "));
        }
        if !metrics.contains(&metric.as_str()) {
            metrics.push(metric);
        }
    }
    let _ = writeln!(out, "{}", crate::text::wrap(&format!("metric: {}", metrics.join("; ")), WIDTH, "  "));
}

/// A command line as shell lines of at most 80 columns, continued with `\`.
fn shell_lines(command: &str) -> String {
    let mut lines: Vec<String> = vec!["        ".into()];
    for word in command.split(' ') {
        let last = lines.last_mut().expect("one line at least");
        if last.trim().is_empty() || last.chars().count() + word.chars().count() + 3 <= WIDTH {
            if !last.trim().is_empty() {
                last.push(' ');
            }
            last.push_str(word);
        } else {
            last.push_str(" \\");
            lines.push(format!("                {word}"));
        }
    }
    lines.join("\n") + "\n"
}
