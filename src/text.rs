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

/// `text` safe to print on a terminal: control characters (C0, DEL, C1, and the
/// bidirectional overrides that can make a line read as something else) are
/// shown escaped (`\u{1b}`, `\n`), everything else as is. For any text that comes
/// from a bundle or a result file: labels, host names, notes, errors, argv.
pub fn escape_control(text: &str) -> String {
    let bad = |c: char| c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    if !text.chars().any(bad) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if bad(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
