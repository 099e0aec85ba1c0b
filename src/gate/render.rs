//! The gate's report as text: the terminal table, Markdown and JUnit XML (the mail is
//! [`super::email`]).

use std::fmt::Write as _;

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};

use super::{GateReport, GateRow, Metric, Verdict};
use crate::model::Summary;

fn pct(x: f64) -> String {
    if x.is_infinite() { if x > 0.0 { "+inf".into() } else { "-inf".into() } } else { format!("{:+.1}%", x * 100.0) }
}

fn num(s: &Summary, metric: Metric) -> String {
    if s.n == 0 { "-".into() } else { format!("{:.4} {}", s.median, metric.unit()) }
}

fn cells_of(r: &GateRow) -> [String; 7] {
    let (change, ci) = match r.change {
        Some(c) => (pct(c.mean), format!("[{}, {}]", pct(c.ci_low), pct(c.ci_high))),
        None => ("-".into(), "-".into()),
    };
    [
        r.name.clone(),
        r.metric.described(),
        num(&r.baseline, r.metric),
        num(&r.candidate, r.metric),
        change,
        ci,
        r.verdict.name().into(),
    ]
}

/// The interval's name: `95% CI`, or a paired run's level (`99% CI`).
fn ci_name(rep: &GateReport) -> String {
    match &rep.paired {
        Some(p) => format!("{} CI", crate::report::paired::percent(p.level)),
        None => "95% CI".into(),
    }
}

/// The full table's columns.
fn header(rep: &GateReport) -> [String; 7] {
    let change = if rep.paired.is_some() { "paired change" } else { "change of means" };
    ["cell", "metric", "baseline median", "candidate median", change, &ci_name(rep), "verdict"].map(String::from)
}

pub(super) fn summary_line(rep: &GateReport) -> String {
    format!(
        "{} regressed, {} improved, {} unchanged, {} inconclusive, {} missing",
        rep.count(Verdict::Regressed),
        rep.count(Verdict::Improved),
        rep.count(Verdict::Unchanged),
        rep.count(Verdict::Inconclusive),
        rep.count(Verdict::Missing)
    )
}

/// What the verdicts mean, one sentence per line, shared by the Markdown and terminal texts.
fn rule(rep: &GateReport) -> String {
    let of = if rep.paired.is_some() { "paired change" } else { "change of means" };
    format!(
        "regressed/improved: the whole {} of the {of} lies beyond the threshold; \
         unchanged: the whole CI lies inside ±threshold; inconclusive: the CI straddles the threshold (the data cannot tell)",
        ci_name(rep)
    )
}

/// The verdict table as plain cells (header, one row per comparison) and the summary line,
/// for renderers of other formats (the HTML report).
pub fn table_cells(rep: &GateReport) -> (Vec<String>, Vec<Vec<String>>, String) {
    let header = header(rep).to_vec();
    let rows = rep.rows.iter().map(|r| cells_of(r).to_vec()).collect();
    (header, rows, summary_line(rep))
}

/// The terminal table, laid out for `width` columns, plus the rule and a summary line.
///
/// Narrower than the other formats' table so that it fits a pipe's 100 columns: what each
/// metric is (unit, which way is worse) is said once under the table instead of on every
/// row, the medians go without their unit, the change and its interval share a column, and
/// the metric column is left out when every row has the same metric.
pub fn render_table(rep: &GateReport, width: u16) -> String {
    let mut metrics: Vec<Metric> = Vec::new();
    for r in &rep.rows {
        if !metrics.contains(&r.metric) {
            metrics.push(r.metric);
        }
    }
    let one_metric = metrics.len() <= 1;
    let change = format!("change [{}]", ci_name(rep));
    let mut header = vec!["cell", "metric", "baseline", "candidate", change.as_str(), "verdict"];
    if one_metric {
        header.remove(1);
    }
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED)
        .set_content_arrangement(comfy_table::ContentArrangement::Dynamic)
        .set_width(width)
        .set_header(header);
    // Names and verdicts are read whole; the numbers' column gives way first.
    for i in [0, t.column_count() - 1] {
        if let Some(c) = t.column_mut(i) {
            c.set_constraint(comfy_table::ColumnConstraint::ContentWidth);
        }
    }
    for r in &rep.rows {
        let median = |s: &Summary| if s.n == 0 { "-".to_string() } else { format!("{:.4}", s.median) };
        let change = match r.change {
            Some(c) => format!("{} [{}, {}]", pct(c.mean), pct(c.ci_low), pct(c.ci_high)),
            None => "-".into(),
        };
        let mut row =
            vec![r.name.clone(), r.metric.name().to_string(), median(&r.baseline), median(&r.candidate), change];
        row.push(r.verdict.name().into());
        if one_metric {
            row.remove(1);
        }
        t.add_row(row);
    }
    let described: Vec<String> = metrics.iter().map(|m| m.described()).collect();
    let wrap = |text: &str| crate::text::wrap(text, width as usize, "  ");
    // Why a row is missing or cannot be significant: the table has no room for it.
    let notes: String =
        rep.rows.iter().filter_map(|r| r.note.as_ref().map(|n| wrap(&format!("{}: {n}", r.name)) + "\n")).collect();
    let (medians, change) = match rep.paired {
        Some(_) => ("medians of the pair members", "the paired ratio less 1"),
        None => ("medians", "of the means"),
    };
    let paired = rep.paired.as_ref().map(|p| format!("\n{}", crate::report::paired::section_text(p, false)));
    format!(
        "{t}\n{notes}{}\n{}\ngate: {}\n{}",
        wrap(&format!("metric: {}; baseline, candidate: {medians}; change: {change}", described.join("; "))),
        wrap(&rule(rep)),
        summary_line(rep),
        paired.unwrap_or_default()
    )
}

/// A Markdown summary for a CI job summary or a PR comment.
pub fn render_markdown(rep: &GateReport, fails: Fails, diffs: &[crate::report::profile_diff::CellDiff]) -> String {
    let mut s = String::new();
    let status = if rep.count(Verdict::Regressed) > 0 {
        "❌ regression"
    } else if fails.missing && rep.count(Verdict::Missing) > 0 {
        // The job exits 1 on missing cells: the summary must not say "no regression" in green.
        "❌ cells missing (not measured on one side)"
    } else if fails.inconclusive && rep.count(Verdict::Inconclusive) > 0 {
        "❌ inconclusive comparisons (--inconclusive fail)"
    } else if rep.count(Verdict::Inconclusive) > 0 {
        "⚠️ no regression found, some comparisons inconclusive"
    } else {
        "✅ no regression"
    };
    let _ = writeln!(s, "## fsbench gate: {status}\n");
    // Labels, cell names and warnings come from result files: one line of inline text each.
    let esc = crate::report::format::markdown_cell;
    let _ = writeln!(
        s,
        "Baseline {}, candidate {}: {}.\n",
        code_span(&rep.baseline),
        code_span(&rep.candidate),
        summary_line(rep)
    );
    let _ = writeln!(s, "Verdicts: {}.\n", rule(rep));
    let header = header(rep);
    let _ = writeln!(s, "| {} | threshold | worse when |", header.join(" | "));
    let _ = writeln!(s, "|{}", "---|".repeat(header.len() + 2));
    for r in &rep.rows {
        let mut c = cells_of(r).map(|x| esc(&x));
        if matches!(r.verdict, Verdict::Regressed | Verdict::Inconclusive) {
            c[6] = format!("**{}**", c[6]);
        }
        // Why a cell is missing, as JUnit says it: the reader of a red job needs it.
        if let (Verdict::Missing, Some(n)) = (r.verdict, &r.note) {
            c[6] = format!("**missing**: {}", esc(n));
        }
        let worse =
            if r.metric.direction() == crate::catalogue::Direction::HigherIsBetter { "lower" } else { "higher" };
        let _ = writeln!(s, "| {} | {} | {worse} |", c.join(" | "), pct(r.threshold).trim_start_matches('+'));
    }
    for m in metrics_of(rep) {
        let _ = writeln!(s, "\n`{}`: {}.", m.name(), m.direction().worse());
    }
    for w in &rep.warnings {
        let _ = writeln!(s, "\n> warning: {}", esc(w));
    }
    if let Some(p) = &rep.paired {
        let _ = write!(s, "\n{}", crate::report::paired::section_text(p, true));
    }
    let why = super::why::render_markdown(diffs);
    if !why.is_empty() {
        let _ = write!(s, "\n{why}");
    }
    s
}

/// `text` as a Markdown code span: delimited by more backticks than it holds in a row,
/// so a label with a backtick cannot end the span and be read as Markdown (nor a line
/// break in it end the paragraph).
fn code_span(text: &str) -> String {
    let text = text.replace(['\n', '\r'], " ");
    let run = text.split(|c: char| c != '`').map(str::len).max().unwrap_or(0);
    let ticks = "`".repeat(run + 1);
    let pad = if run > 0 { " " } else { "" };
    format!("{ticks}{pad}{text}{pad}{ticks}")
}

/// The metrics of a report's rows, each once, in order of appearance.
fn metrics_of(rep: &GateReport) -> Vec<Metric> {
    let mut out: Vec<Metric> = Vec::new();
    for r in &rep.rows {
        if !out.contains(&r.metric) {
            out.push(r.metric);
        }
    }
    out
}

pub(super) fn xml_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            // Control characters are not allowed in XML 1.0.
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r') => o.push('?'),
            c => o.push(c),
        }
    }
    o
}

/// Which verdicts besides `regressed` fail the gate, so the CI reports say what the exit
/// status does.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fails {
    /// `--inconclusive fail`.
    pub inconclusive: bool,
    /// Missing cells fail unless `--allow-missing` (or `--bisect`).
    pub missing: bool,
}

/// JUnit XML: one `<testcase>` per comparison, `<failure>` when regressed (and when
/// inconclusive or missing, if those fail the gate), `<skipped>` when missing is allowed.
pub fn render_junit(rep: &GateReport, policy: Fails) -> String {
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let fails = |v: Verdict| {
        v == Verdict::Regressed
            || (policy.inconclusive && v == Verdict::Inconclusive)
            || (policy.missing && v == Verdict::Missing)
    };
    let n = rep.rows.len();
    let f = rep.rows.iter().filter(|r| fails(r.verdict)).count();
    let k = if policy.missing { 0 } else { rep.count(Verdict::Missing) };
    let _ =
        writeln!(s, "<testsuites name=\"fsbench gate\" tests=\"{n}\" failures=\"{f}\" skipped=\"{k}\" errors=\"0\">");
    let suite = xml_escape(&format!("fsbench gate {} vs {}", rep.baseline, rep.candidate));
    let _ = writeln!(s, "  <testsuite name=\"{suite}\" tests=\"{n}\" failures=\"{f}\" skipped=\"{k}\" errors=\"0\">");
    for r in &rep.rows {
        let c = cells_of(r);
        let detail = format!(
            "{}: baseline median {}, candidate median {}, change {} ({} {}), threshold {}: {}{}",
            r.metric.described(),
            c[2],
            c[3],
            c[4],
            ci_name(rep),
            c[5],
            pct(r.threshold),
            r.verdict.name(),
            r.note.as_ref().map(|n| format!(" ({n})")).unwrap_or_default()
        );
        let _ = write!(
            s,
            "    <testcase classname=\"fsbench.gate.{}\" name=\"{}\"",
            xml_escape(r.metric.name()),
            xml_escape(&r.name)
        );
        match r.verdict {
            Verdict::Regressed => {
                let _ = writeln!(
                    s,
                    ">\n      <failure message=\"regressed\" type=\"regression\">{}</failure>\n    </testcase>",
                    xml_escape(&detail)
                );
            }
            Verdict::Inconclusive if policy.inconclusive => {
                let _ = writeln!(
                    s,
                    ">\n      <failure message=\"inconclusive\" type=\"inconclusive\">{}</failure>\n    </testcase>",
                    xml_escape(&detail)
                );
            }
            // A CI page must show a failed test on a job that fails for a missing cell.
            Verdict::Missing if policy.missing => {
                let _ = writeln!(
                    s,
                    ">\n      <failure message=\"missing\" type=\"missing\">{}</failure>\n    </testcase>",
                    xml_escape(&detail)
                );
            }
            Verdict::Missing => {
                let _ = writeln!(s, ">\n      <skipped message=\"{}\"/>\n    </testcase>", xml_escape(&detail));
            }
            _ => {
                let _ = writeln!(s, ">\n      <system-out>{}</system-out>\n    </testcase>", xml_escape(&detail));
            }
        }
    }
    s.push_str("  </testsuite>\n</testsuites>\n");
    s
}
