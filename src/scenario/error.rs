//! ScenarioError and how it renders: origin:line:col, a source snippet with a caret, did-you-mean help.

use std::fmt;
use std::ops::Range;

/// A scenario that cannot be used: where (origin, line, column, key) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file (or `<embedded:..>`, or `--set ...`).
    pub origin: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
    /// Dotted key path (`matrix.tasks`), when known.
    pub key: Option<String>,
    /// What is wrong, as a lowercase fragment.
    pub message: String,
    /// A suggestion ("did you mean `tasks`?"), when we have one.
    pub help: Option<String>,
    /// The source line and a caret under the offending span, when known.
    pub snippet: Option<String>,
}

impl std::error::Error for ScenarioError {}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.origin)?;
        if let (Some(l), Some(c)) = (self.line, self.column) {
            write!(f, ":{l}:{c}")?;
        }
        write!(f, ": {}", self.message)?;
        if let Some(key) = &self.key {
            let last = key.rsplit(['.', '[']).next().unwrap_or(key).trim_end_matches(']');
            if !self.message.contains(&format!("`{key}`")) && !self.message.contains(&format!("`{last}`")) {
                write!(f, " (key `{key}`)")?;
            }
        }
        if let Some(snippet) = &self.snippet {
            write!(f, "\n{snippet}")?;
        }
        if let Some(help) = &self.help {
            write!(f, "\n  = help: {help}")?;
        }
        Ok(())
    }
}

/// 1-based line and (character) column of a byte offset.
pub(super) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rfind('\n').map(|i| offset - i - 1).unwrap_or(offset);
    (line, before[before.len() - col..].chars().count() + 1)
}

/// The line holding `span` with a caret under it, as rustc prints it.
pub(super) fn snippet(text: &str, span: Range<usize>) -> String {
    let start = span.start.min(text.len());
    let line_start = text[..start].rfind('\n').map(|i| i + 1).unwrap_or(0);
    let line_end = text[start..].find('\n').map(|i| start + i).unwrap_or(text.len());
    let line = &text[line_start..line_end];
    let (lineno, col) = line_col(text, start);
    let width = text[start..span.end.min(line_end).max(start)].chars().count().max(1);
    let num = lineno.to_string();
    let pad = " ".repeat(num.len());
    format!("{pad} |\n{num} | {line}\n{pad} | {}{}", " ".repeat(col - 1), "^".repeat(width))
}

/// The nearest candidate to `name`, if it is close enough to be a likely typo.
pub fn suggest<'c>(name: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    candidates
        .into_iter()
        // The name itself is never its own fix.
        .filter(|c| *c != name)
        .map(|c| (strsim::damerau_levenshtein(&name.to_ascii_lowercase(), &c.to_ascii_lowercase()), c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 3) && *d < c.len().max(name.len()))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// [`suggest`] worded as a help line.
pub(crate) fn did_you_mean(name: &str, candidates: &[&str]) -> Option<String> {
    suggest(name, candidates.iter().copied()).map(|c| format!("did you mean `{c}`?"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_are_only_for_near_misses() {
        assert_eq!(suggest("taks", ["fs", "tasks", "test"]), Some("tasks"));
        assert_eq!(suggest("zzzz", ["fs", "tasks", "test"]), None);
        assert_eq!(suggest("ext44", ["ext4", "ext2"]), Some("ext4"));
        assert_eq!(suggest("etx4", ["etx4"]), None, "never the misspelt name itself");
    }
}
