//! Small text helpers shared by the renderers: aligned columns, Markdown, CSV.

use std::borrow::Cow;

/// What a report is rendered as. The library's own enum: the command line maps
/// its flag onto it, so nothing below the command layer depends on the argument parser.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Terminal tables in the seed's layout.
    #[default]
    Table,
    /// Markdown tables.
    Markdown,
    /// Comma-separated values.
    Csv,
    /// JSON.
    Json,
}

/// A number as the seed prints it: four decimals.
pub fn fmt4(x: f64) -> String {
    format!("{x:.4}")
}

/// A ratio's interval: `[0.9912, 1.0514]`, or `[1.2000, ∞)` when open above.
pub fn interval(low: f64, high: f64) -> String {
    if high.is_finite() { format!("[{}, {}]", fmt4(low), fmt4(high)) } else { format!("[{}, ∞)", fmt4(low)) }
}

/// Columns aligned with two spaces between them: the first column left-aligned,
/// the others right-aligned (they hold numbers), so splitting a line on
/// whitespace gives back exactly the seed's tab-separated fields.
pub fn aligned(header: &[String], rows: &[Vec<String>]) -> String {
    let ncol = header.len();
    let mut width = vec![0usize; ncol];
    for row in std::iter::once(header).chain(rows.iter().map(|r| r.as_slice())) {
        for (i, c) in row.iter().enumerate().take(ncol) {
            width[i] = width[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(header).chain(rows.iter().map(|r| r.as_slice())) {
        let mut line = String::new();
        for (i, c) in row.iter().enumerate().take(ncol) {
            // Padded by hand: `format!`'s width stops at 65,535 and panics past it,
            // and a column is as wide as the longest label a result file holds.
            let fill = " ".repeat(width[i].saturating_sub(c.chars().count()));
            if i == 0 {
                line.push_str(c);
                line.push_str(&fill);
            } else {
                line.push_str("  ");
                line.push_str(&fill);
                line.push_str(c);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Tab-separated lines exactly as seed 000 printed its tables.
pub fn tab_separated(header: &[String], rows: &[Vec<String>]) -> String {
    let mut out = header.join("\t");
    out.push('\n');
    for r in rows {
        out.push_str(&r.join("\t"));
        out.push('\n');
    }
    out
}

/// A GitHub-flavoured Markdown table; numeric columns right-aligned. Each cell is one
/// line of inline text ([`markdown_cell`]): a value cannot end the table or start a block.
pub fn markdown(header: &[String], rows: &[Vec<String>]) -> String {
    let esc = markdown_cell;
    let mut out = format!("| {} |\n", header.iter().map(|h| esc(h)).collect::<Vec<_>>().join(" | "));
    out.push('|');
    for i in 0..header.len() {
        out.push_str(if i == 0 { " :--- |" } else { " ---: |" });
    }
    out.push('\n');
    for r in rows {
        out.push_str(&format!("| {} |\n", r.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | ")));
    }
    out
}

pub use crate::text::escape_markdown_cell as markdown_cell;

/// One CSV record: each field neutralised against formulas ([`csv_neutral`]), then RFC 4180
/// quoting where needed.
pub fn csv_record(fields: &[String]) -> String {
    let mut out = fields
        .iter()
        .map(|f| csv_neutral(f))
        .map(|f| {
            if f.contains([',', '"', '\n', '\r']) { format!("\"{}\"", f.replace('"', "\"\"")) } else { f.into_owned() }
        })
        .collect::<Vec<_>>()
        .join(",");
    out.push('\n');
    out
}

/// A CSV field that a spreadsheet will not run as a formula: text beginning with `=`, `+`, `-`,
/// `@`, a tab or a carriage return gets a leading `'` (OWASP's advice). Numbers (`-1.5`, `+3`)
/// are left as they are, so they stay numbers, and so is a lone character (the run list's `-`
/// for "no label"): one character is no formula.
fn csv_neutral(field: &str) -> Cow<'_, str> {
    let starts_like_formula = field.len() > 1 && field.starts_with(['=', '+', '-', '@', '\t', '\r']);
    if starts_like_formula && field.parse::<f64>().is_err() {
        Cow::Owned(format!("'{field}"))
    } else {
        Cow::Borrowed(field)
    }
}

/// A float for CSV: empty when absent.
pub fn csv_num(x: Option<f64>) -> String {
    x.map(|v| format!("{v}")).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn aligned_splits_back_into_fields() {
        let out = aligned(&s(&["#nr_task", "BASE-ext2-M-qoff"]), &[s(&["1", "948.1667"]), s(&["8", "15674.1247"])]);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "#nr_task  BASE-ext2-M-qoff");
        assert_eq!(lines[1], "1                 948.1667");
        assert_eq!(lines[2].split_whitespace().collect::<Vec<_>>(), ["8", "15674.1247"]);
    }

    #[test]
    fn csv_cells_that_a_spreadsheet_would_run_are_neutralised_and_numbers_stay_numbers() {
        // A label or step from someone else's result file, opened in a spreadsheet, must not
        // become `=HYPERLINK(...)` or a DDE call: the leading `'` makes it text.
        let rec = csv_record(&s(&["=HYPERLINK(\"http://x\")", "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\tx", "a=b"]));
        assert_eq!(rec, "\"'=HYPERLINK(\"\"http://x\"\")\",'+cmd|' /C calc'!A0,'-2+3,'@SUM(A1),'\tx,a=b\n");
        assert_eq!(csv_record(&s(&["-1.5000", "+3", "-0", "1e-3", "-", "--"])), "-1.5000,+3,-0,1e-3,-,'--\n");
    }

    #[test]
    fn csv_quotes_only_when_needed() {
        assert_eq!(csv_record(&s(&["a", "b,c", "d\"e"])), "a,\"b,c\",\"d\"\"e\"\n");
        assert_eq!(fmt4(764.5), "764.5000");
    }

    #[test]
    fn markdown_escapes_pipes() {
        let md = markdown(&s(&["a", "b"]), &[s(&["x|y", "1"])]);
        assert!(md.contains("x\\|y"));
        assert!(md.contains("| :--- | ---: |"));
        let md = markdown(&s(&["a"]), &[s(&["x\n## y <img src=z>"])]);
        assert!(md.contains("| x ## y &lt;img src=z&gt; |") && md.lines().count() == 3, "{md}");
    }

    #[test]
    fn a_column_wider_than_format_allows_is_padded_without_panicking() {
        let long = "x".repeat(70_000);
        let out = aligned(&s(&["#nr_task", "a"]), &[s(&[&long, "1"])]);
        assert!(out.lines().nth(1).unwrap().ends_with("  1") && out.lines().next().unwrap().ends_with("  a"));
    }
}
