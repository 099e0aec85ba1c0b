//! Human-readable counts and durations, shared by every stage that talks to people.

use std::time::Duration;

/// `1 cell`, `2 cells`.
pub fn cells(n: usize) -> String {
    plural(n, "cell", "cells")
}

/// `1 file`, `3 files`: a count with the noun that agrees with it.
pub fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 { format!("1 {one}") } else { format!("{n} {many}") }
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

/// `text` with control characters (C0 but newline and tab, DEL, C1) and bidirectional
/// overrides shown as `\x1b` / `\u{202e}`, so text from other people's files cannot move
/// a terminal's cursor or reorder what a reader sees.
pub fn escape_control(text: &str) -> std::borrow::Cow<'_, str> {
    fn bad(c: char) -> bool {
        (c.is_control() && c != '\n' && c != '\t') || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    }
    if !text.chars().any(bad) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if bad(c) && (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if bad(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
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
    fn control_characters_are_shown_not_obeyed() {
        assert_eq!(escape_control("plain\ttext\n"), "plain\ttext\n");
        assert_eq!(escape_control("a\x1b[2Jb\u{7f}"), "a\\x1b[2Jb\\x7f");
        assert_eq!(escape_control("x\u{202e}y\u{9b}"), "x\\u{202e}y\\u{9b}");
    }

    #[test]
    fn counts_and_durations_read_naturally() {
        assert_eq!(cells(1), "1 cell");
        assert_eq!(cells(0), "0 cells");
        assert_eq!(human_duration(Duration::from_millis(300)), "1s");
        assert_eq!(human_duration(Duration::ZERO), "0s");
        assert_eq!(human_duration(Duration::from_secs(185)), "3m05s");
        assert_eq!(human_duration(Duration::from_secs(3720)), "1h02m");
        assert_eq!(first_line_cut("abcdef\nxyz", 4), "abc…");
    }
}
