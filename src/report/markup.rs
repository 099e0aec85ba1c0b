//! Report markup: headings, lists, tables and notes written as plain aligned text or as Markdown.

use super::format::{aligned, markdown};

/// Writes the blocks of a report, so a renderer walks its tables once and each format only decides the layout.
pub trait Markup {
    /// A heading: level 1 is the report's title, 2 a section, 3 a single table.
    fn heading(&mut self, level: usize, text: &str);
    /// One line of a list; consecutive items make one list.
    fn item(&mut self, text: &str);
    /// A paragraph of running text.
    fn paragraph(&mut self, text: &str);
    /// A table under a header row: the first column left-aligned, the others (numbers) right-aligned.
    fn table(&mut self, header: &[String], rows: &[Vec<String>]);
    /// A remark on the table just written.
    fn note(&mut self, text: &str);
    /// Lines whose breaks and indentation must be kept; nothing at all when `text` is empty.
    fn preformatted(&mut self, text: &str);
    /// A plot (an SVG document) with its caption; formats that cannot hold one leave it out.
    fn figure(&mut self, _svg: &str, _caption: &str) {}
    /// `text` set off as important, to be put inside another block.
    fn strong(&self, text: &str) -> String;
    /// `text` with its `*` (the significance mark) shown as a character, not read as emphasis.
    fn literal(&self, text: &str) -> String;
    /// The report written so far.
    fn finish(self: Box<Self>) -> String;
}

/// Plain text in the seed's layout: aligned columns, a blank line after each block but the run list.
#[derive(Debug, Default)]
pub struct Plain {
    out: String,
    // The blank line after a table waits for the next block, so that notes stay directly under it.
    table_open: bool,
}

impl Plain {
    fn close_table(&mut self) {
        if std::mem::take(&mut self.table_open) {
            self.out.push('\n');
        }
    }
}

/// Columns a plain text report's prose wraps at: it is piped into logs, mails and PR
/// comments as often as it is read on a terminal, so it does not depend on one.
pub const PLAIN_WIDTH: usize = 100;

/// Each line of `text` wrapped at [`PLAIN_WIDTH`], continuations indented by two spaces.
fn wrap_prose(text: &str) -> String {
    text.lines().map(|l| crate::text::wrap(l, PLAIN_WIDTH, "  ")).collect::<Vec<_>>().join("\n")
}

impl Markup for Plain {
    fn heading(&mut self, _level: usize, text: &str) {
        // The seed marks no levels: every heading is a line of its own.
        self.close_table();
        self.out.push_str(text);
        self.out.push_str("\n\n");
    }

    fn item(&mut self, text: &str) {
        // No blank line between or after items: the run list reads as one block of header lines.
        self.close_table();
        self.out.push_str(&wrap_prose(text));
        self.out.push('\n');
    }

    fn paragraph(&mut self, text: &str) {
        self.close_table();
        self.out.push_str(&wrap_prose(text));
        self.out.push_str("\n\n");
    }

    fn table(&mut self, header: &[String], rows: &[Vec<String>]) {
        self.close_table();
        self.out.push_str(&aligned(header, rows));
        self.table_open = true;
    }

    fn note(&mut self, text: &str) {
        self.out.push_str(&wrap_prose(text));
        self.out.push('\n');
    }

    fn preformatted(&mut self, text: &str) {
        // Already laid out for a terminal: written as it is, its own blank lines included.
        self.close_table();
        self.out.push_str(text);
    }

    fn strong(&self, text: &str) -> String {
        // A terminal has no emphasis; the words alone must carry it.
        text.to_string()
    }

    fn literal(&self, text: &str) -> String {
        text.to_string()
    }

    fn finish(mut self: Box<Self>) -> String {
        self.close_table();
        self.out
    }
}

/// GitHub-flavoured Markdown: one blank line between blocks.
#[derive(Debug, Default)]
pub struct Markdown {
    out: String,
    // Items directly after items continue one list: a blank line between them would make a loose list.
    in_list: bool,
}

impl Markdown {
    /// Separate a new block from the one before it.
    fn block(&mut self) {
        if !self.out.is_empty() {
            self.out.push('\n');
        }
        self.in_list = false;
    }
}

impl Markup for Markdown {
    fn heading(&mut self, level: usize, text: &str) {
        self.block();
        self.out.push_str(&format!("{} {}\n", "#".repeat(level), inline(text)));
    }

    fn item(&mut self, text: &str) {
        if !self.in_list {
            self.block();
            self.in_list = true;
        }
        self.out.push_str(&format!("- {}\n", inline(text)));
    }

    fn paragraph(&mut self, text: &str) {
        self.block();
        self.out.push_str(&crate::text::escape_markdown_inline_keep_lines(text));
        self.out.push('\n');
    }

    fn table(&mut self, header: &[String], rows: &[Vec<String>]) {
        self.block();
        self.out.push_str(&markdown(header, rows));
    }

    fn note(&mut self, text: &str) {
        // A paragraph of its own: a line right under a table would be read as one more row.
        self.paragraph(text);
    }

    fn preformatted(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.block();
        // A fence longer than any run of backticks inside, so that no line of the text
        // (a label that reads "```") can close the block early.
        let fence = "`".repeat(longest_backtick_run(text).max(2) + 1);
        self.out.push_str(&fence);
        self.out.push('\n');
        self.out.push_str(text);
        // The closing fence only closes on a line of its own.
        if !text.ends_with('\n') {
            self.out.push('\n');
        }
        self.out.push_str(&fence);
        self.out.push('\n');
    }

    fn strong(&self, text: &str) -> String {
        format!("**{text}**")
    }

    fn literal(&self, text: &str) -> String {
        text.replace('*', "\\*")
    }

    fn finish(self: Box<Self>) -> String {
        self.out
    }
}

/// One line of Markdown text: values in it may not open HTML, links or blocks.
fn inline(text: &str) -> std::borrow::Cow<'_, str> {
    crate::text::escape_markdown_inline(text)
}

/// The most backticks in a row anywhere in `text`.
fn longest_backtick_run(text: &str) -> usize {
    text.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    /// The same walk through both exporters.
    fn walk(mut m: Box<dyn Markup>) -> String {
        m.heading(1, "Results for x");
        m.item("run a");
        let w = m.strong("warning:");
        m.item(&format!("{w} w"));
        m.heading(2, "section");
        m.table(&s(&["#nr_task", "a"]), &[s(&["1", "2.0000"])]);
        m.note("noisy");
        let mark = m.literal("2.0*");
        m.table(&s(&["#nr_task", "a/b"]), &[s(&["1", &mark])]);
        m.preformatted("footer\n");
        m.finish()
    }

    #[test]
    fn plain_notes_sit_under_their_table_and_blocks_end_in_a_blank_line() {
        let want = "Results for x\n\nrun a\nwarning: w\nsection\n\n#nr_task       a\n1         2.0000\nnoisy\n\n\
                    #nr_task   a/b\n1         2.0*\n\nfooter\n";
        assert_eq!(walk(Box::new(Plain::default())), want);
    }

    #[test]
    fn markdown_separates_blocks_by_one_blank_line_and_keeps_lists_tight() {
        let want = "# Results for x\n\n- run a\n- **warning:** w\n\n## section\n\n| #nr_task | a |\n| :--- | ---: |\n\
                    | 1 | 2.0000 |\n\nnoisy\n\n| #nr_task | a/b |\n| :--- | ---: |\n| 1 | 2.0\\* |\n\n```\nfooter\n```\n";
        assert_eq!(walk(Box::new(Markdown::default())), want);
        // An empty footer leaves no empty code block behind.
        let mut m: Box<dyn Markup> = Box::new(Markdown::default());
        m.heading(1, "t");
        m.preformatted("");
        assert_eq!(m.finish(), "# t\n");
    }

    #[test]
    fn values_in_markdown_blocks_cannot_open_html_links_or_close_a_fence() {
        let mut m: Box<dyn Markup> = Box::new(Markdown::default());
        m.heading(2, "x <img src=y>");
        m.item("[a](b)");
        m.preformatted("```\n## injected\n");
        let out = m.finish();
        assert_eq!(out, "## x &lt;img src=y&gt;\n\n- [a]\\(b)\n\n````\n```\n## injected\n````\n");
    }
}
