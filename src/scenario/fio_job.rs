//! A fio job as the scenario gave it: its text, where that text sits in the scenario
//! (or its job file), and fio's job-file format read into sections and options.
//!
//! Only what fsbench needs to know about the format is read here: `[section]`
//! headers, `name=value` and bare `name` options, `;` and `#` comments. fio itself
//! judges the options (`fio --parse-only`, `workload::fio::check`); the positions kept
//! here let its answer point back at the scenario line.

use super::ScenarioError;

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

impl FioJob {
    /// The job's sections in order, by name (`global` included).
    pub fn sections(&self) -> Vec<String> {
        let mut out = Vec::new();
        for line in self.text.lines() {
            if let Some(name) = section_header(line) {
                out.push(name.to_string());
            }
        }
        out
    }

    /// Every option line, in order, with its section.
    pub fn options(&self) -> Vec<JobOption> {
        let mut section = String::new();
        let mut out = Vec::new();
        for (i, raw) in self.text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
                continue;
            }
            if let Some(name) = section_header(raw) {
                section = name.to_string();
                continue;
            }
            let (name, value) = match line.split_once('=') {
                Some((n, v)) => (n.trim(), Some(v.trim().to_string())),
                None => (line, None),
            };
            out.push(JobOption { section: section.clone(), name: name.to_string(), value, line: i });
        }
        out
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
        let text = self.text.lines().nth(line).unwrap_or("");
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

/// The name in a `[name]` header line, if `line` is one.
fn section_header(line: &str) -> Option<&str> {
    let t = line.trim();
    t.strip_prefix('[')?.strip_suffix(']').map(str::trim)
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

    #[test]
    fn options_are_read_with_their_sections_and_lines() {
        let j = job("[global]\nioengine=psync\n; a comment\n[w]\n  bs = 4k\ntime_based\n");
        let o = j.options();
        assert_eq!(j.sections(), vec!["global", "w"]);
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
}
