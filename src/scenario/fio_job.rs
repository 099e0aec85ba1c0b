//! A fio job as the scenario gave it: its text, where that text sits in the scenario
//! (or its job file), and the text read line by line exactly as fio reads a job file
//! (`__parse_jobs_ini` in fio's init.c, `strip_blank_*` in parse.c, fio 3.x): the one
//! place fsbench reads fio's job-file format.
//!
//! What fio does, and so what this does:
//! - before the first section, a line is trimmed of blanks at both ends and cut at its
//!   first `;` and then at its first `#`; what is left must be empty or a header;
//! - inside a section, a line whose first character other than a blank or a control
//!   character is `;` or `#` is a comment; otherwise it is trimmed in front, and a line
//!   that then starts with `[` is the next header (so headers may be indented);
//! - a header is `[` and up to 255 more bytes, of which the last one is dropped,
//!   whatever it is (`[a]` is `a`, `[ global]` is ` global`, `[a] x` is `a] `);
//! - a section is fio's global section when its name *starts with* `global`
//!   (`strncmp(name, "global", 6)`): `[globalx]` is global, `[ global]` is a job;
//! - an option line is cut at its first `;` and `#` and trimmed at the end; a line that
//!   starts with `include` (any line: fio compares a prefix) includes the file named
//!   after the next byte; otherwise the name is what comes before the first `=`.
//!
//! fio judges the options themselves (`fio --parse-only`, `workload::fio::check`); the
//! positions kept here let its answer point back at the scenario line.

use super::ScenarioError;

/// Longest line fio reads as one (`OPT_LEN_MAX` less the newline): fio splits a longer
/// line into several, which this reader does not mirror, so such a line is refused.
pub const MAX_LINE_BYTES: usize = 8190;

/// The name fio gives its global section (compared as a prefix, as fio does).
pub const GLOBAL: &str = "global";

/// A fio job text with the position of its first character in the file it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FioJob {
    /// The job text as written.
    pub text: String,
    /// The file it was written in (the scenario, or the job file), as errors name it.
    pub origin: String,
    /// The scenario key that holds it: `workload.job` or `workload.job_file`.
    pub key: String,
    /// 1-based line of the text's first line in `origin`.
    pub first_line: usize,
    /// 1-based column of the text's first character in `origin` (later lines start at column 1).
    pub first_column: usize,
}

/// What one line of a job text is to fio.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineKind {
    /// Blank, or a comment: fio skips it.
    Skipped,
    /// A section header, with the name fio reads from it.
    Header {
        /// The section's name as fio has it (the job's name, and its files' names).
        name: String,
        /// Whether fio takes it for its global section.
        global: bool,
    },
    /// An option line.
    Option {
        /// The name, before the first `=`, trimmed.
        name: String,
        /// What follows the first `=`, trimmed; `None` for a bare option (`time_based`).
        value: Option<String>,
    },
    /// An `include` line: fio reads the options of the named file here.
    Include {
        /// The file name as fio takes it.
        file: String,
    },
    /// A line fio would refuse or read in a way this reader does not mirror (why).
    Invalid(String),
}

/// One line of a job text as fio reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobLine {
    /// 0-based line of the job text.
    pub line: usize,
    /// The section it is in (its header's line for a header); `None` before any header.
    pub section: Option<usize>,
    /// What it is.
    pub kind: LineKind,
}

/// One section of a job: `[randwrite]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The name fio reads from its header.
    pub name: String,
    /// Whether fio takes it for its global section.
    pub global: bool,
    /// 0-based line of its header.
    pub line: usize,
}

/// One option line of a job: `bs=4k` in section `randwrite`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobOption {
    /// The section it is in (`global` for fio's global section); empty before any header.
    pub section: String,
    /// The option name, as written (fio's names are lowercase).
    pub name: String,
    /// The value after `=`, trimmed; `None` for a bare option (`time_based`).
    pub value: Option<String>,
    /// 0-based line of the job text.
    pub line: usize,
}

/// C's `isspace` in the C locale.
fn c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

/// C's `iscntrl` in the C locale.
fn c_cntrl(b: u8) -> bool {
    b < 0x20 || b == 0x7f
}

/// fio's `strip_blank_front`.
fn strip_front(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|b| c_space(**b)).count();
    &s[n..]
}

/// fio's `strip_blank_end`: cut at the first `;`, then at the first `#`, then drop
/// trailing blanks and control characters.
fn strip_end(s: &[u8]) -> &[u8] {
    let s = s.iter().position(|b| *b == b';').map_or(s, |i| &s[..i]);
    let s = s.iter().position(|b| *b == b'#').map_or(s, |i| &s[..i]);
    let n = s.iter().rev().take_while(|b| c_space(**b) || c_cntrl(**b)).count();
    &s[..s.len() - n]
}

/// fio's `is_empty_or_comment`.
fn empty_or_comment(s: &[u8]) -> bool {
    for &b in s {
        if b == b';' || b == b'#' {
            return true;
        }
        if !c_space(b) && !c_cntrl(b) {
            return false;
        }
    }
    true
}

/// The section name fio reads from a header line already stripped at both ends and
/// starting with `[`: `sscanf(p, "[%255[^\n]]", name)`, then its last byte dropped.
fn header_name(p: &[u8]) -> Option<String> {
    let rest = &p[1..];
    if rest.is_empty() {
        return None;
    }
    let taken = &rest[..rest.len().min(255)];
    Some(String::from_utf8_lossy(&taken[..taken.len() - 1]).into_owned())
}

/// A header line (stripped at both ends, starting with `[`) as fio reads it.
fn header(p: &[u8]) -> LineKind {
    match header_name(p) {
        Some(name) => LineKind::Header { global: name.as_bytes().starts_with(GLOBAL.as_bytes()), name },
        None => LineKind::Invalid("fio reads `[` alone as an option outside any section".into()),
    }
}

/// What fio cannot be trusted to read as this reader does: control characters (fio
/// takes some for blanks, a NUL ends its line) and lines longer than fio reads at once.
fn unmirrored(raw: &[u8]) -> Option<String> {
    let body = raw.strip_suffix(b"\r").unwrap_or(raw);
    if body.len() > MAX_LINE_BYTES {
        return Some(format!("the line is longer than {MAX_LINE_BYTES} bytes (fio would read it as several)"));
    }
    body.iter()
        .find(|b| c_cntrl(**b) && **b != b'\t')
        .map(|b| format!("the line contains the control character {:?}", char::from(*b)))
}

impl FioJob {
    /// Every line of the job as fio reads it, in order.
    pub fn lines(&self) -> Vec<JobLine> {
        let mut out = Vec::new();
        let mut section: Option<usize> = None;
        for (i, raw) in self.text.lines().enumerate() {
            let raw = raw.as_bytes();
            let kind = if let Some(why) = unmirrored(raw) {
                LineKind::Invalid(why)
            } else if section.is_none() {
                let p = strip_end(strip_front(raw));
                if empty_or_comment(p) {
                    LineKind::Skipped
                } else if p.first() == Some(&b'[') {
                    header(p)
                } else {
                    LineKind::Invalid("fio reads it as an option outside any section".into())
                }
            } else if empty_or_comment(raw) {
                LineKind::Skipped
            } else {
                let p = strip_front(raw);
                if p.first() == Some(&b'[') { header(strip_end(p)) } else { option(strip_end(p)) }
            };
            if matches!(kind, LineKind::Header { .. }) {
                section = Some(i);
            }
            out.push(JobLine { line: i, section, kind });
        }
        out
    }

    /// The job's sections in order, as fio names them (its global sections included).
    pub fn sections(&self) -> Vec<Section> {
        self.lines()
            .into_iter()
            .filter_map(|l| match l.kind {
                LineKind::Header { name, global } => Some(Section { name, global, line: l.line }),
                _ => None,
            })
            .collect()
    }

    /// Every option line, in order, with its section's name.
    pub fn options(&self) -> Vec<JobOption> {
        let lines = self.lines();
        let name_of = |at: Option<usize>| match at.map(|i| &lines[i].kind) {
            Some(LineKind::Header { name, .. }) => name.clone(),
            _ => String::new(),
        };
        lines
            .iter()
            .filter_map(|l| match &l.kind {
                LineKind::Option { name, value } => Some(JobOption {
                    section: name_of(l.section),
                    name: name.clone(),
                    value: value.clone(),
                    line: l.line,
                }),
                _ => None,
            })
            .collect()
    }

    /// 1-based line and column in [`FioJob::origin`] of the first non-blank character of job line `line` (0-based).
    pub fn position(&self, line: usize) -> (usize, usize) {
        let text = self.text.lines().nth(line).unwrap_or("");
        let indent = text.chars().take_while(|c| c.is_whitespace()).count();
        if line == 0 { (self.first_line, self.first_column + indent) } else { (self.first_line + line, 1 + indent) }
    }

    /// An error about job line `line` (0-based), located in the scenario or job file.
    pub fn error_at(&self, line: usize, message: impl Into<String>, help: Option<String>) -> ScenarioError {
        let (l, c) = self.position(line);
        // A hostile line can be long: the snippet shows its start.
        let text: String = self.text.lines().nth(line).unwrap_or("").chars().take(160).collect();
        let text = crate::text::escape_control(&text);
        let snippet = format!("{l:>4} | {text}\n     | {}^", " ".repeat(c.saturating_sub(1).min(text.len())));
        ScenarioError {
            origin: self.origin.clone(),
            line: Some(l),
            column: Some(c),
            key: Some(self.key.clone()),
            message: message.into(),
            help,
            snippet: Some(snippet),
        }
    }

    /// The 0-based job line whose option text is `option` (`bogus=3`, as fio quotes it), if any.
    pub fn line_of(&self, option: &str) -> Option<usize> {
        let want = option.trim();
        let name = want.split('=').next().unwrap_or(want).trim();
        let opts = self.options();
        // The exact line first; else the first line of that option (fio may re-spell the value).
        opts.iter()
            .find(|o| match &o.value {
                Some(v) => format!("{}={v}", o.name) == want,
                None => o.name == want,
            })
            .or_else(|| opts.iter().find(|o| o.name == name))
            .map(|o| o.line)
    }
}

/// An option line (cut and trimmed at both ends) as fio reads it.
fn option(p: &[u8]) -> LineKind {
    let text = String::from_utf8_lossy(p);
    // fio compares the first seven bytes only: `includes=x` includes the file `x`.
    if p.starts_with(b"include") {
        return LineKind::Include { file: text.get("include".len() + 1..).unwrap_or("").to_string() };
    }
    match text.split_once('=') {
        Some((n, v)) => LineKind::Option { name: n.trim().to_string(), value: Some(v.trim().to_string()) },
        None => LineKind::Option { name: text.trim().to_string(), value: None },
    }
}

/// A section's name as errors show it: `[name]`, its control characters escaped.
pub fn shown_section(name: &str) -> String {
    format!("`[{}]`", crate::text::escape_control(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(text: &str) -> FioJob {
        FioJob {
            text: text.into(),
            origin: "s.toml".into(),
            key: "workload.job".into(),
            first_line: 10,
            first_column: 1,
        }
    }

    fn names(text: &str) -> Vec<(String, bool)> {
        job(text).sections().into_iter().map(|s| (s.name, s.global)).collect()
    }

    #[test]
    fn options_are_read_with_their_sections_and_lines() {
        let j = job("[global]\nioengine=psync\n; a comment\n[w]\n  bs = 4k\ntime_based\n");
        let o = j.options();
        assert_eq!(names(&j.text), [("global".to_string(), true), ("w".to_string(), false)]);
        assert_eq!(
            (o[0].section.as_str(), o[0].name.as_str(), o[0].value.as_deref()),
            ("global", "ioengine", Some("psync"))
        );
        assert_eq!((o[1].name.as_str(), o[1].value.as_deref(), o[1].line), ("bs", Some("4k"), 4));
        assert_eq!((o[2].name.as_str(), o[2].value.as_deref()), ("time_based", None));
        assert_eq!(j.position(4), (14, 3));
        assert_eq!(j.line_of("bs=4k"), Some(4));
        assert_eq!(j.line_of("bs=8k"), Some(4));
        let e = j.error_at(4, "unknown fio option `bs`", None);
        assert!(e.to_string().starts_with("s.toml:14:3: unknown fio option `bs`"), "{e}");
    }

    /// Security review, round three: fsbench trimmed `[ global]` to `global` where fio
    /// does not, so fio ran it as a job without fsbench's `runtime`. The names here are
    /// what `fio --parse-only` reports for each header (checked by hand with fio 3.33).
    #[test]
    fn headers_are_read_as_fio_reads_them() {
        let s = |n: &str, g: bool| (n.to_string(), g);
        assert_eq!(names("[ global]\n"), [s(" global", false)]);
        assert_eq!(names("[global ]\n"), [s("global ", true)]);
        assert_eq!(names("[globalx]\n"), [s("globalx", true)]);
        assert_eq!(names("[Global]\n"), [s("Global", false)]);
        assert_eq!(names("  [a]  \n[b] ; c\n"), [s("a", false), s("b", false)]);
        assert_eq!(names("[a] x\n"), [s("a] ", false)]);
        assert_eq!(names("[a\n"), [s("", false)]);
        assert_eq!(names("[a;b]\n"), [s("", false)]);
        assert_eq!(names("[../../x/NAME]\n"), [s("../../x/NAME", false)]);
        // Inside a section an indented header starts the next one.
        assert_eq!(names("[a]\nbs=4k\n   [b]\n"), [s("a", false), s("b", false)]);
        // A name of more than 254 bytes is cut as fio's sscanf cuts it.
        assert_eq!(names(&format!("[{}]\n", "n".repeat(300))), [s(&"n".repeat(254), false)]);
        // `[` alone, an option before any section, control characters: not read as fio would be trusted to.
        for bad in ["[\n", "bs=4k\n[a]\n", "[a\x01b]\n", "[a]\nbs=4k\x00\n"] {
            assert!(job(bad).lines().iter().any(|l| matches!(l.kind, LineKind::Invalid(_))), "{bad:?}");
        }
    }

    #[test]
    fn comments_includes_and_cut_lines_are_read_as_fio_reads_them() {
        let j = job("[a]\n  ; c\n\t# c\nbs=4k ; trailing\nfilename=x#y\ninclude other.fio\nincludes=x\n\r\n");
        let kinds: Vec<LineKind> = j.lines().into_iter().map(|l| l.kind).collect();
        let opt = |n: &str, v: &str| LineKind::Option { name: n.into(), value: Some(v.into()) };
        assert_eq!(kinds[1], LineKind::Skipped);
        assert_eq!(kinds[2], LineKind::Skipped);
        assert_eq!(kinds[3], opt("bs", "4k"));
        assert_eq!(kinds[4], opt("filename", "x"));
        assert_eq!(kinds[5], LineKind::Include { file: "other.fio".into() });
        assert_eq!(kinds[6], LineKind::Include { file: "=x".into() });
        assert_eq!(kinds[7], LineKind::Skipped);
    }
}
