//! Human-readable counts and durations, shared by every stage that talks to people.

use std::borrow::Cow;
use std::time::Duration;

/// A count of cells as words: `1 cell`, `2 cells`.
pub fn cell_count(n: usize) -> String {
    plural(n, "cell", "cells")
}

/// The old name of [`cell_count`], kept so that code written against it still builds.
#[deprecated(note = "renamed to `cell_count`")]
pub fn cells(n: usize) -> String {
    cell_count(n)
}

/// `1 file`, `3 files`: a count with the noun that agrees with it.
pub fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 { format!("1 {one}") } else { format!("{n} {many}") }
}

/// `a, b, c` or, past `max` names, `a, b, c and 4 more`.
pub fn some_of(names: &[&str], max: usize) -> String {
    if names.len() <= max {
        return names.join(", ");
    }
    format!("{} and {} more", names[..max].join(", "), names.len() - max)
}

/// `1h02m`, `3m05s`, `12s`.
pub fn human_duration(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}s", s.max(if d.is_zero() { 0 } else { 1 }))
    }
}

/// The first line of a message, cut to `max` characters with an ellipsis.
pub fn first_line_cut(text: &str, max: usize) -> String {
    let first = text.lines().next().unwrap_or(text);
    if first.chars().count() > max {
        format!("{}…", first.chars().take(max - 1).collect::<String>())
    } else {
        first.to_string()
    }
}

/// `text` word-wrapped to `width` columns, continuation lines starting with `indent`; a word
/// longer than a line stays whole. For prose under tables that a pipe would not wrap.
pub fn wrap(text: &str, width: usize, indent: &str) -> String {
    let body = text.trim_start_matches(' ');
    // The first line keeps its own indentation (`  remedy: ...`).
    let mut line = text[..text.len() - body.len()].to_string();
    let mut out = String::new();
    let mut has_word = false;
    for word in body.split(' ') {
        if has_word && line.chars().count() + 1 + word.chars().count() > width {
            out.push_str(line.trim_end());
            out.push('\n');
            line = indent.to_string();
        } else if has_word {
            line.push(' ');
        }
        line.push_str(word);
        has_word = true;
    }
    out.push_str(&line);
    out
}

/// `text` safe to print on a terminal: control characters (C0, DEL, C1, and the
/// bidirectional overrides that can make a line read as something else) are
/// shown escaped (`\u{1b}`, `\n`), everything else as is. For any text that comes
/// from a bundle or a result file: labels, host names, notes, errors, argv.
pub fn escape_control(text: &str) -> String {
    escape_where(text, |_| true).into_owned()
}

/// [`escape_control`] for text of several lines (a scenario, an SVG, a note): newlines
/// and tabs stay as they are, every other control character is shown escaped.
pub fn escape_control_multiline(text: &str) -> Cow<'_, str> {
    escape_where(text, |c| c != '\n' && c != '\t')
}

/// `text` safe inside one line of Markdown: the characters that would make structure
/// there are shown as characters. `<` and `>` become entities (no inline HTML such as
/// `<img src=...>`, no autolinks), `](` is broken so no `[text](url)` link or image
/// forms, and a line break becomes a space so nothing can start a block of its own
/// (`## heading`, `| row |`, `> quote`). Table cells also need `|` escaped
/// (`report::format::markdown` does that). Everything else is left as it reads.
pub fn escape_markdown_inline(text: &str) -> Cow<'_, str> {
    escape_markdown(text, false)
}

/// `text` as the inside of a Markdown table cell: [`escape_markdown_inline`], and `|`
/// shown rather than read as the cell's end.
pub fn escape_markdown_cell(text: &str) -> String {
    escape_markdown_inline(text).replace('|', "\\|")
}

/// The entity HTML needs for `c` in text or an attribute value, if any.
pub fn html_entity(c: char) -> Option<&'static str> {
    match c {
        '&' => Some("&amp;"),
        '<' => Some("&lt;"),
        '>' => Some("&gt;"),
        '"' => Some("&quot;"),
        '\'' => Some("&#39;"),
        _ => None,
    }
}

/// `text` as HTML text or an attribute value: markup characters as entities and
/// control characters shown escaped ([`escape_control_multiline`]).
pub fn escape_html(text: &str) -> String {
    let text = escape_control_multiline(text);
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match html_entity(c) {
            Some(e) => out.push_str(e),
            None => out.push(c),
        }
    }
    out
}

/// [`escape_markdown_inline`] for a paragraph of several lines the program laid out
/// itself: its line breaks stay (values loaded from result files hold none).
pub fn escape_markdown_inline_keep_lines(text: &str) -> Cow<'_, str> {
    escape_markdown(text, true)
}

fn escape_markdown(text: &str, keep_lines: bool) -> Cow<'_, str> {
    let breaks: &[char] = if keep_lines { &[] } else { &['\n', '\r'] };
    if !text.contains(['<', '>']) && !text.contains(breaks) && !text.contains("](") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    let mut after_bracket = false;
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\n' | '\r' if !keep_lines => out.push(' '),
            '(' if after_bracket => out.push_str("\\("),
            c => out.push(c),
        }
        after_bracket = c == ']';
    }
    Cow::Owned(out)
}

/// `text` with the control characters `escaped(c)` selects shown as `\u{..}` escapes.
fn escape_where(text: &str, escaped: impl Fn(char) -> bool) -> Cow<'_, str> {
    let bad =
        |c: char| (c.is_control() && escaped(c)) || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    if !text.chars().any(bad) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if bad(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Whether `name` (from a result or bundle file) may become one path component:
/// 1 to 128 characters of A-Z a-z 0-9 `.` `_` `-` `+` (labels may hold `+`), not starting with `.`.
pub fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && !name.starts_with('.')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "._-+".contains(c))
}

/// Bytes as `1.5 GiB`, for the parts of a sum.
pub fn bytes_short(bytes: u64) -> String {
    let units = [("TiB", 1u64 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    match units.iter().find(|(_, m)| bytes >= *m) {
        Some((u, m)) => format!("{:.1} {u}", bytes as f64 / *m as f64),
        None => format!("{bytes} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_wraps_at_words_with_an_indent() {
        assert_eq!(wrap("aaa bbb ccc", 7, "  "), "aaa bbb\n  ccc");
        assert_eq!(wrap("short", 80, "  "), "short");
        assert_eq!(wrap("  remedy: do it", 12, "    "), "  remedy: do\n    it");
        assert_eq!(wrap("averyveryverylongword x", 5, ""), "averyveryverylongword\nx");
        assert!(wrap(&"word ".repeat(50), 100, "    ").lines().all(|l| l.chars().count() <= 100));
    }

    #[test]
    fn a_long_list_of_names_is_cut_with_a_count() {
        assert_eq!(some_of(&["a", "b"], 3), "a, b");
        assert_eq!(some_of(&["a", "b", "c", "d", "e"], 3), "a, b, c and 2 more");
    }

    #[test]
    fn control_characters_are_shown_not_obeyed() {
        assert_eq!(escape_control_multiline("plain\ttext\n"), "plain\ttext\n");
        assert_eq!(escape_control("a\x1b[2Jb\u{7f}"), "a\\u{1b}[2Jb\\u{7f}");
        assert_eq!(escape_control_multiline("a\nb\tc\x1b"), "a\nb\tc\\u{1b}");
        assert_eq!(escape_control("x\u{202e}y\u{9b}"), "x\\u{202e}y\\u{9b}");
    }

    #[test]
    fn markdown_structure_from_a_value_is_shown_not_obeyed() {
        assert_eq!(escape_markdown_inline("ext4 [s] 2.5.60"), "ext4 [s] 2.5.60");
        assert_eq!(escape_markdown_inline("a\n## x"), "a ## x");
        assert_eq!(escape_markdown_inline("<img src=x>"), "&lt;img src=x&gt;");
        assert_eq!(escape_markdown_inline("[a](http://x) ![i](y)"), "[a]\\(http://x) ![i]\\(y)");
    }

    #[test]
    fn counts_and_durations_read_naturally() {
        assert_eq!(cell_count(1), "1 cell");
        assert_eq!(cell_count(0), "0 cells");
        assert_eq!(human_duration(Duration::from_millis(300)), "1s");
        assert_eq!(human_duration(Duration::ZERO), "0s");
        assert_eq!(human_duration(Duration::from_secs(185)), "3m05s");
        assert_eq!(human_duration(Duration::from_secs(3720)), "1h02m");
        assert_eq!(first_line_cut("abcdef\nxyz", 4), "abc…");
    }

    #[test]
    fn control_characters_are_shown_escaped() {
        assert_eq!(escape_control("plain ünïcode"), "plain ünïcode");
        assert!(is_plain_name("ext4-M-lat_fs_chown") && !is_plain_name("../x") && !is_plain_name("a/b"));
        assert!(!is_plain_name(".hidden") && !is_plain_name(""));
        assert_eq!(escape_control("a\x1b[2Jb\nc\u{202e}d\u{85}"), "a\\u{1b}[2Jb\\nc\\u{202e}d\\u{85}");
    }
}
