//! The HTML report: one self-contained page (tables, inline SVG plots, gate verdicts,
//! provenance and environment) that opens offline, attaches to a PR or a mail, and prints.
//!
//! Pure: runs in, text out. The tables come from the same walk as the terminal and
//! Markdown reports ([`Markup`]); only the layout is this file's. Every text from a
//! result file is escaped for HTML and its control characters shown, not obeyed; a
//! Content-Security-Policy forbids the page any script or any load from elsewhere.

use std::fmt::Write as _;

use serde_json::Value;

use super::markup::Markup;
use super::{WorkloadReport, all_problems, not_measured, plot, run_list, scenario_name, text_footer};
use crate::results::LoadedRun;

/// Gate verdicts shown near the top of a page, already worded by the gate.
#[derive(Debug, Clone, Default)]
pub struct Verdicts {
    /// One line: `1 regressed, 0 improved, 3 unchanged, 0 missing`.
    pub summary: String,
    /// Whether any cell regressed.
    pub regressed: bool,
    /// Column names of the verdict table.
    pub header: Vec<String>,
    /// One row per compared cell or step.
    pub rows: Vec<Vec<String>>,
    /// The gate's warnings.
    pub warnings: Vec<String>,
}

// Private-use characters mark `strong` spans inside a block's text until the block is
// escaped; a stray one (from hostile input) can only ever open or close one balanced span.
const STRONG_OPEN: char = '\u{e000}';
const STRONG_CLOSE: char = '\u{e001}';

/// `text` as HTML text or attribute content: markup characters as entities, control
/// characters shown as `\u{1b}`, `strong` marks as balanced `<strong>` tags.
pub fn escape(text: &str) -> String {
    let text = crate::text::escape_control_multiline(text);
    let mut out = String::with_capacity(text.len() + 16);
    let mut open = false;
    for c in text.chars() {
        if let Some(e) = crate::text::html_entity(c) {
            out.push_str(e);
            continue;
        }
        match c {
            STRONG_OPEN if !open => {
                out.push_str("<strong>");
                open = true;
            }
            STRONG_CLOSE if open => {
                out.push_str("</strong>");
                open = false;
            }
            STRONG_OPEN | STRONG_CLOSE => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    if open {
        out.push_str("</strong>");
    }
    out
}

/// Whether a table cell holds a number (with the report's marks `*`, `?`, `%`, `!`),
/// to be right-aligned; everything else reads better left-aligned.
fn numeric(cell: &str) -> bool {
    let t = cell.trim_end_matches(['*', '?', '%', '!', 's']);
    !t.is_empty()
        && t.chars().all(|c| c.is_ascii_digit() || ".+-:eE".contains(c))
        && t.chars().any(|c| c.is_ascii_digit())
}

/// HTML blocks behind the report's [`Markup`], and the document around them on `finish`.
#[derive(Debug, Default)]
pub struct Html {
    title: String,
    body: String,
    in_list: bool,
    headings: Vec<(usize, String)>,
    /// Where the front matter (title, run list) ends: the contents list goes there.
    front_end: Option<usize>,
}

impl Html {
    fn block(&mut self) {
        if std::mem::take(&mut self.in_list) {
            self.body.push_str("</ul>\n");
        }
    }

    /// Start a block of the body proper: anything but the title and the run list under it.
    fn body_block(&mut self) {
        self.block();
        self.front_end.get_or_insert(self.body.len());
    }
}

impl Markup for Html {
    fn heading(&mut self, level: usize, text: &str) {
        let level = level.clamp(1, 6);
        if level == 1 {
            self.block();
        } else {
            self.body_block();
        }
        if level == 1 && self.title.is_empty() {
            self.title = text.to_string();
        }
        self.headings.push((level, text.to_string()));
        let id = self.headings.len();
        let _ = writeln!(self.body, "<h{level} id=\"s{id}\">{}</h{level}>", escape(text));
    }

    fn item(&mut self, text: &str) {
        if !self.in_list {
            self.block();
            self.body.push_str("<ul>\n");
            self.in_list = true;
        }
        let _ = writeln!(self.body, "<li>{}</li>", escape(text));
    }

    fn paragraph(&mut self, text: &str) {
        self.body_block();
        let _ = writeln!(self.body, "<p>{}</p>", escape(text));
    }

    fn table(&mut self, header: &[String], rows: &[Vec<String>]) {
        self.body_block();
        self.body.push_str("<table>\n<thead><tr>");
        for h in header {
            let _ = write!(self.body, "<th scope=\"col\">{}</th>", escape(h));
        }
        self.body.push_str("</tr></thead>\n<tbody>\n");
        for row in rows {
            // A verdict tints its row: red for a regression, amber where the data could not tell.
            let tint = if row.iter().any(|c| c == "regressed") {
                "<tr class=\"bad\">"
            } else if row.iter().any(|c| c == "inconclusive") {
                "<tr class=\"unsure\">"
            } else {
                "<tr>"
            };
            self.body.push_str(tint);
            for (i, c) in row.iter().enumerate() {
                let class = match (numeric(c), c.ends_with('*')) {
                    (true, true) => " class=\"num sig\"",
                    (true, false) => " class=\"num\"",
                    _ => "",
                };
                let tag = if i == 0 { "th scope=\"row\"" } else { "td" };
                let close = if i == 0 { "th" } else { "td" };
                let _ = write!(self.body, "<{tag}{class}>{}</{close}>", escape(c));
            }
            self.body.push_str("</tr>\n");
        }
        self.body.push_str("</tbody>\n</table>\n");
    }

    fn note(&mut self, text: &str) {
        self.body_block();
        let _ = writeln!(self.body, "<p class=\"note\">{}</p>", escape(text));
    }

    fn preformatted(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.body_block();
        let _ = writeln!(self.body, "<pre>{}</pre>", escape(text.trim_end_matches('\n')));
    }

    fn figure(&mut self, svg: &str, caption: &str) {
        self.body_block();
        // Our own plotters output, whose texts plotters escapes; what precedes the root element
        // (an XML declaration) has no place inside HTML.
        let svg = svg.find("<svg").map(|i| &svg[i..]).unwrap_or("");
        let _ = writeln!(
            self.body,
            "<figure>\n{}\n<figcaption>{}</figcaption>\n</figure>",
            crate::text::escape_control_multiline(svg.trim_end()),
            escape(caption)
        );
    }

    fn strong(&self, text: &str) -> String {
        format!("{STRONG_OPEN}{}{STRONG_CLOSE}", text.replace([STRONG_OPEN, STRONG_CLOSE], ""))
    }

    fn literal(&self, text: &str) -> String {
        text.to_string()
    }

    fn finish(mut self: Box<Self>) -> String {
        self.block();
        let mut toc = String::new();
        // A contents list of the sections, so a page of 32 tables can be walked.
        let sections: Vec<_> = self.headings.iter().enumerate().filter(|(_, (l, _))| *l == 2).collect();
        if sections.len() > 2 {
            toc.push_str("<nav><h2>Contents</h2>\n<ul>\n");
            for (i, (_, t)) in sections {
                let _ = writeln!(toc, "<li><a href=\"#s{}\">{}</a></li>", i + 1, escape(t));
            }
            toc.push_str("</ul>\n</nav>\n");
        }
        // The contents go right after the title and the run list, before any other block.
        let split = self.front_end.unwrap_or(self.body.len());
        let (head, rest) = self.body.split_at(split);
        page(&self.title, &format!("{head}{toc}{rest}"))
    }
}

/// A whole page around `body` (HTML already escaped): the title, the Content-Security-Policy
/// that forbids any script or load from elsewhere, the report's style sheet and its footer.
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"fsbench {version}\">\n<title>{title}</title>\n<style>\n{CSS}</style>\n</head>\n\
         <body>\n<main>\n{body}</main>\n<footer>Written by fsbench {version}. Self-contained: no script, \
         nothing loaded from elsewhere.</footer>\n</body>\n</html>\n",
        version = escape(concat!(env!("CARGO_PKG_VERSION"), " (", env!("FSBENCH_COMMIT"), ")")),
        title = escape(title),
    )
}

const CSS: &str = r#":root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: #1b1f24;
  background: #fff; margin: 0 auto; max-width: 1100px; padding: 1.5rem; }
h1 { font-size: 1.6rem; border-bottom: 2px solid #d0d7de; padding-bottom: .3rem; }
h2 { font-size: 1.3rem; margin-top: 2rem; border-bottom: 1px solid #d0d7de; padding-bottom: .2rem; }
h3 { font-size: 1.05rem; margin: 1.4rem 0 .4rem; }
ul { padding-left: 1.4rem; }
table { border-collapse: collapse; margin: .4rem 0 .8rem; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #d0d7de; padding: .2rem .55rem; text-align: left; vertical-align: top; }
thead th { background: #eef1f4; }
tbody th { font-weight: 600; }
tbody tr:nth-child(even) { background: #f8f9fa; }
.num { text-align: right; font-family: ui-monospace, "DejaVu Sans Mono", monospace; white-space: nowrap; }
.sig { font-weight: 700; color: #0b4f8a; }
tr.bad { background: #ffe4e4 !important; }
tr.unsure { background: #fff3cd !important; }
p.note { color: #57606a; font-size: .92em; margin: .2rem 0 .8rem; }
figure { margin: .6rem 0 1.6rem; }
figure svg { max-width: 100%; height: auto; border: 1px solid #eaeef2; }
figcaption { color: #57606a; font-size: .9em; }
pre { background: #f6f8fa; padding: .6rem; font-size: .85em; white-space: pre-wrap; word-break: break-word; }
nav ul { columns: 2; }
footer { color: #57606a; font-size: .85em; margin-top: 3rem; border-top: 1px solid #d0d7de; padding-top: .5rem; }
@page { margin: 15mm; }
@media print {
  body { max-width: none; padding: 0; font-size: 10pt; }
  nav { display: none; }
  h2, h3 { break-after: avoid; }
  table, figure { break-inside: avoid; }
  figure svg { border: none; }
  a { color: inherit; text-decoration: none; }
}
"#;

/// The page of `runs` with the workload's `body` (ratios to the first when comparing), with
/// `verdicts` when a gate judged them.
pub(super) fn render(
    runs: &[(&str, &LoadedRun)],
    warnings: &[String],
    body: Box<dyn WorkloadReport + '_>,
    verdicts: Option<&Verdicts>,
) -> Result<String, plot::PlotError> {
    let mut m = Html::default();
    m.heading(1, &format!("Results for {}", scenario_name(runs)));
    run_list(&mut m, runs, warnings);
    if let Some(v) = verdicts {
        gate_section(&mut m, v);
    }
    body.write_html(&mut m)?;
    super::paired::write_sections(&mut m, &super::paired_runs(runs), runs.len() > 1);
    super::profiles::write(&mut m, runs, true);
    super::profile_diff::write(&mut m, runs, true);
    let footer = text_footer(&not_measured(runs), &all_problems(runs));
    if !footer.is_empty() {
        m.heading(2, "Not measured");
        m.preformatted(&footer);
    }
    provenance(&mut m, runs);
    Ok(Box::new(m).finish())
}

fn gate_section(m: &mut dyn Markup, v: &Verdicts) {
    m.heading(2, if v.regressed { "Gate: regression" } else { "Gate: no regression" });
    let summary = m.strong(&v.summary);
    m.paragraph(&summary);
    m.table(&v.header, &v.rows);
    for w in &v.warnings {
        m.note(&format!("warning: {w}"));
    }
}

/// Where each run came from: run.json field by field (so what a newer fsbench records
/// shows up without this page knowing it), the filesystems as built, the scenario text.
fn provenance(m: &mut dyn Markup, runs: &[(&str, &LoadedRun)]) {
    m.heading(2, "Provenance and environment");
    for (label, run) in runs {
        m.heading(3, &format!("{label}: {}", run.dir.display()));
        let mut fields = Vec::new();
        if let Ok(Value::Object(map)) = serde_json::to_value(&run.meta) {
            for (k, v) in map {
                match k.as_str() {
                    // Shown below as the text itself / as a count: a field per cell would drown the rest.
                    "scenario_text" => {}
                    "planned_cells" => {
                        fields.push(vec!["planned_cells".into(), v.as_array().map_or(0, |a| a.len()).to_string()])
                    }
                    _ => flatten(&k, &v, &mut fields),
                }
            }
        }
        fields.push(vec!["cells stored".into(), run.cells.len().to_string()]);
        m.table(&["run.json".into(), "value".into()], &fields);
        let fs = filesystems(run);
        if !fs.is_empty() {
            m.table(
                &["filesystem", "device or directory", "mkfs", "mount options asked", "in effect", "cells"]
                    .map(String::from),
                &fs,
            );
        }
        m.preformatted(&format!("# scenario as run ({})\n{}", run.meta.scenario_origin, run.meta.scenario_text));
    }
}

/// A JSON value as `key.sub[0] = value` rows; scalars as they read.
fn flatten(key: &str, v: &Value, out: &mut Vec<Vec<String>>) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                flatten(&format!("{key}.{k}"), v, out);
            }
        }
        Value::Array(a) if a.iter().all(|x| !x.is_object() && !x.is_array()) => {
            out.push(vec![key.to_string(), a.iter().map(scalar).collect::<Vec<_>>().join(" ")])
        }
        Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                flatten(&format!("{key}[{i}]"), v, out);
            }
        }
        v => out.push(vec![key.to_string(), scalar(v)]),
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        v => v.to_string(),
    }
}

/// The distinct filesystems of a run as built (type, where, mkfs, options), with how many cells used each.
fn filesystems(run: &LoadedRun) -> Vec<Vec<String>> {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut counts: Vec<usize> = Vec::new();
    for c in &run.cells {
        for f in &c.filesystems {
            let where_ = f.device.clone().unwrap_or_else(|| f.mountpoint.clone());
            // mkfs without its device argument: the same mkfs on loop3 and loop4 is one line.
            let mkfs: Vec<&str> =
                f.mkfs_argv.iter().map(String::as_str).filter(|a| Some(*a) != f.device.as_deref()).collect();
            let effect = [f.mount_options.as_str(), f.super_options.as_str()]
                .iter()
                .filter(|s| !s.is_empty())
                .copied()
                .collect::<Vec<_>>()
                .join(" | ");
            let row = vec![
                f.fs.clone(),
                if f.device.is_some() { "loop device".into() } else { where_ },
                if f.existing_dir {
                    "none: an existing directory, its own filesystem measured".into()
                } else if mkfs.is_empty() {
                    "-".into()
                } else {
                    mkfs.join(" ")
                },
                if f.mount_options_requested.is_empty() { "-".into() } else { f.mount_options_requested.join(",") },
                if effect.is_empty() { "-".into() } else { effect },
            ];
            match rows.iter().position(|r| *r == row) {
                Some(i) => counts[i] += 1,
                None => {
                    rows.push(row);
                    counts.push(1);
                }
            }
        }
    }
    rows.into_iter()
        .zip(counts)
        .map(|(mut r, n)| {
            r.push(n.to_string());
            r
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_from_results_cannot_become_markup() {
        assert_eq!(escape("<script>a&b</script>"), "&lt;script&gt;a&amp;b&lt;/script&gt;");
        assert_eq!(escape("x\"'\u{1b}[31m"), "x&quot;&#39;\\u{1b}[31m");
        // Stray strong marks from hostile text stay balanced.
        assert_eq!(escape("\u{e001}a\u{e000}b"), "\u{fffd}a<strong>b</strong>");
        let m = Html::default();
        assert_eq!(escape(&format!("{} w", m.strong("warning:"))), "<strong>warning:</strong> w");
    }

    /// Friction 9 of issue 26: inconclusive rows looked like settled ones on the page.
    #[test]
    fn verdict_rows_are_tinted_regressed_red_and_inconclusive_amber() {
        let mut m: Box<dyn Markup> = Box::new(Html::default());
        let row = |v: &str| vec!["ext4-t1".to_string(), "+1.0%".into(), v.to_string()];
        let rows = [row("regressed"), row("inconclusive"), row("unchanged")];
        m.table(&["cell".into(), "change".into(), "verdict".into()], &rows);
        let page = m.finish();
        assert!(page.contains(
            "<tr class=\"bad\"><th scope=\"row\">ext4-t1</th><td class=\"num\">+1.0%</td><td>regressed</td>"
        ));
        assert!(page.contains(
            "<tr class=\"unsure\"><th scope=\"row\">ext4-t1</th><td class=\"num\">+1.0%</td><td>inconclusive</td>"
        ));
        assert!(page.contains("<tr><th scope=\"row\">ext4-t1</th><td class=\"num\">+1.0%</td><td>unchanged</td>"));
        assert!(page.contains("tr.unsure { background:"));
    }

    #[test]
    fn numbers_align_right_and_words_left() {
        assert!(numeric("2.0000*") && numeric("12") && numeric("0:02.16") && numeric("80%") && numeric("1.5s"));
        assert!(!numeric("ext4") && !numeric("-") && !numeric("untar") && !numeric("?"));
    }

    #[test]
    fn a_page_is_one_document_without_scripts_or_outside_loads() {
        let mut m: Box<dyn Markup> = Box::new(Html::default());
        m.heading(1, "Results for <x>");
        m.item("run a");
        m.heading(2, "sec");
        m.table(&["#nr_task".into(), "a".into()], &[vec!["1".into(), "2.0*".into()]]);
        m.figure("<?xml version=\"1.0\"?><svg width=\"1\"></svg>", "cap");
        let page = m.finish();
        assert!(page.starts_with("<!DOCTYPE html>") && page.ends_with("</html>\n"));
        assert!(page.contains("<title>Results for &lt;x&gt;</title>"));
        assert!(page.contains("<td class=\"num sig\">2.0*</td>"));
        assert!(page.contains("<figure>\n<svg width=\"1\"></svg>") && !page.contains("<?xml"));
        assert!(!page.contains("<script") && !page.contains("http://") && !page.contains("https://"));
    }
}
