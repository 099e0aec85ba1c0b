//! The dbench loadfile parser: NBENCH-style lines (`[timestamp] Op args… NT_STATUS_…`)
//! turned into [`Loadfile`] data. The text is hostile until proven otherwise: a path
//! with `..`, `.`, `/`, NUL or a control character, a size or offset past the caps, an
//! unknown op, a line cut short, or a file over the size or line caps is refused with
//! its line number; nothing here touches the filesystem.

use super::loadfile_spec::*;

/// Why a loadfile was refused: the 1-based line (0: the file as a whole) and what.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadfileError {
    /// 1-based line number; 0 for the file as a whole.
    pub line: u32,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for LoadfileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 { write!(f, "{}", self.message) } else { write!(f, "line {}: {}", self.line, self.message) }
    }
}

/// Parse `text` (read from `origin`). Blank lines and `#` comments are skipped.
pub fn parse(text: &str, origin: &str) -> Result<Loadfile, LoadfileError> {
    if text.len() as u64 > MAX_LOADFILE_BYTES {
        return Err(whole(format!("is larger than {} MiB", MAX_LOADFILE_BYTES >> 20)));
    }
    let mut ops = Vec::new();
    for (i, raw) in text.split('\n').enumerate() {
        if i >= MAX_LOADFILE_LINES {
            return Err(whole(format!("has more than {MAX_LOADFILE_LINES} lines")));
        }
        let line = i as u32 + 1;
        let l = raw.strip_suffix('\r').unwrap_or(raw);
        if let Some(op) = parse_line(l).map_err(|message| LoadfileError { line, message })? {
            ops.push(LoadOp { line, call: op.0, expect_ok: op.1 });
        }
    }
    if ops.is_empty() {
        return Err(whole("has no ops".into()));
    }
    Ok(Loadfile { origin: origin.to_string(), ops, resolve: Default::default() })
}

fn whole(message: String) -> LoadfileError {
    LoadfileError { line: 0, message }
}

/// One line: `None` for a blank or comment line.
fn parse_line(l: &str) -> Result<Option<(Call, bool)>, String> {
    if l.len() > MAX_LINE_BYTES {
        return Err(format!("is longer than {MAX_LINE_BYTES} bytes"));
    }
    if let Some(c) = l.chars().find(|&c| c.is_control() && c != '\t') {
        return Err(format!("contains the control character {:?}", c));
    }
    let t = l.trim();
    if t.is_empty() || t.starts_with('#') {
        return Ok(None);
    }
    let mut toks = tokens(t)?;
    // dbench 4 loadfiles may start each line with a timestamp (for --target-rate): not paced here.
    if toks.first().is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || b == b'.')) {
        toks.remove(0);
    }
    let Some(name) = toks.first().cloned() else { return Err("has a timestamp but no op".into()) };
    let Some(status) = toks.pop().filter(|s| s.starts_with("NT_STATUS_")) else {
        return Err(format!("`{name}` does not end with a status (NT_STATUS_OK or an error): a truncated line?"));
    };
    let a = &toks[1..];
    let want = |n: usize, max: usize, usage: &str| -> Result<(), String> {
        if a.len() < n || a.len() > max {
            Err(format!("`{name}` takes {usage}, found {} argument(s)", a.len()))
        } else {
            Ok(())
        }
    };
    let call = match name.as_str() {
        "NTCreateX" => {
            want(4, 4, "path, create options, disposition and handle")?;
            let opts = num(&a[1], "create options", u32::MAX as u64)?;
            let disposition = num(&a[2], "disposition", 5)? as u32;
            Call::Create { path: path(&a[0])?, directory: opts & 1 != 0, disposition, handle: handle(&a[3])? }
        }
        "Close" => {
            want(1, 1, "a handle")?;
            Call::Close { handle: handle(&a[0])? }
        }
        "Rename" => {
            want(2, 2, "the old and new paths")?;
            Call::Rename { from: path(&a[0])?, to: path(&a[1])? }
        }
        "Unlink" => {
            want(1, 2, "a path and attributes")?;
            Call::Unlink { path: path(&a[0])? }
        }
        "Deltree" | "Mkdir" | "Rmdir" => {
            want(1, 1, "a path")?;
            let p = path(&a[0])?;
            match name.as_str() {
                "Deltree" => Call::Deltree { path: p },
                "Mkdir" => Call::Mkdir { path: p },
                _ => Call::Rmdir { path: p },
            }
        }
        "QUERY_PATH_INFORMATION" => {
            want(2, 2, "a path and a level")?;
            num(&a[1], "level", u32::MAX as u64)?;
            Call::QueryPath { path: path(&a[0])? }
        }
        "QUERY_FILE_INFORMATION" | "SET_FILE_INFORMATION" | "Flush" => {
            let n = if name == "Flush" { 1 } else { 2 };
            want(n, n, if n == 1 { "a handle" } else { "a handle and a level" })?;
            let h = handle(&a[0])?;
            if n == 2 {
                num(&a[1], "level", u32::MAX as u64)?;
            }
            match name.as_str() {
                "QUERY_FILE_INFORMATION" => Call::QueryFile { handle: h },
                "SET_FILE_INFORMATION" => Call::SetFile { handle: h },
                _ => Call::Flush { handle: h },
            }
        }
        "QUERY_FS_INFORMATION" => {
            want(1, 1, "a level")?;
            num(&a[0], "level", u32::MAX as u64)?;
            Call::QueryFs
        }
        "FIND_FIRST" => {
            want(4, 4, "a pattern, level, maximum count and count")?;
            for (v, what) in [(&a[1], "level"), (&a[2], "maximum count"), (&a[3], "count")] {
                num(v, what, u32::MAX as u64)?;
            }
            let mut p = path(&a[0])?;
            let pattern = p.parts.pop().expect("a path has a component");
            if p.parts.is_empty() {
                return Err("FIND_FIRST needs a directory above its pattern".into());
            }
            p.per_client = p.per_client && p.parts.len() >= 2;
            Call::Find { dir: p, pattern }
        }
        "ReadX" | "WriteX" => {
            want(4, 4, "a handle, offset, size and returned size")?;
            let (h, offset) = (handle(&a[0])?, num(&a[1], "offset", MAX_OFFSET)?);
            let size = num(&a[2], "size", MAX_IO_BYTES)?;
            num(&a[3], "returned size", MAX_IO_BYTES)?;
            if name == "ReadX" {
                Call::Read { handle: h, offset, size }
            } else {
                Call::Write { handle: h, offset, size }
            }
        }
        "LockX" | "UnlockX" => {
            want(3, 3, "a handle, offset and length")?;
            let (h, offset) = (handle(&a[0])?, num(&a[1], "offset", MAX_OFFSET)?);
            let len = num(&a[2], "length", MAX_OFFSET)?;
            if name == "LockX" {
                Call::Lock { handle: h, offset, len }
            } else {
                Call::Unlock { handle: h, offset, len }
            }
        }
        other => {
            let keys: Vec<&str> = crate::scenario::op_kinds::LOADFILE_OPS.iter().map(|(key, _)| *key).collect();
            let hint = crate::scenario::error::did_you_mean(other, &keys)
                .unwrap_or_else(|| format!("ops: {}", keys.join(", ")));
            return Err(format!("unknown op `{other}` ({hint})"));
        }
    };
    Ok(Some((call, status == "NT_STATUS_OK")))
}

/// Split on blanks; `"…"` is one token (no escapes inside).
fn tokens(t: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut rest = t;
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            return Ok(out);
        }
        if let Some(q) = rest.strip_prefix('"') {
            let Some(end) = q.find('"') else { return Err("has a quote that is not closed: a truncated line?".into()) };
            out.push(q[..end].to_string());
            rest = &q[end + 1..];
        } else {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            out.push(rest[..end].to_string());
            rest = &rest[end..];
        }
    }
}

/// A decimal or `0x` number no larger than `max`.
fn num(s: &str, what: &str, max: u64) -> Result<u64, String> {
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse::<u64>(),
    }
    .map_err(|_| format!("{what} `{s}` is not a number"))?;
    if v > max {
        return Err(format!("{what} {v} is larger than {max}"));
    }
    Ok(v)
}

fn handle(s: &str) -> Result<Handle, String> {
    Ok(num(s, "handle", u32::MAX as u64)? as Handle)
}

/// A share path `\a\b\c` as components beneath the cell.
fn path(s: &str) -> Result<LoadPath, String> {
    let Some(rest) = s.strip_prefix('\\') else {
        return Err(format!("path `{s}` does not start with `\\` (a share path, as dbench's)"));
    };
    let mut parts = Vec::new();
    for c in rest.split('\\') {
        if c.is_empty() {
            continue;
        }
        if c == "." || c == ".." {
            return Err(format!("path `{s}` has a `{c}` component"));
        }
        if c.contains('/') {
            return Err(format!("path `{s}` has a `/` in a component (an absolute or nested Unix path)"));
        }
        if c.chars().any(|ch| ch.is_control()) {
            return Err(format!("path `{}` has a control character", s.escape_debug()));
        }
        if c.len() > 255 {
            return Err(format!("path `{s}` has a component longer than 255 bytes"));
        }
        parts.push(c.to_string());
    }
    if parts.is_empty() {
        return Err(format!("path `{s}` names the share's root"));
    }
    if parts.len() > MAX_PATH_PARTS {
        return Err(format!("path `{s}` has more than {MAX_PATH_PARTS} components"));
    }
    let per_client =
        parts.len() >= 2 && parts[0].eq_ignore_ascii_case("clients") && parts[1].eq_ignore_ascii_case("client1");
    Ok(LoadPath { parts, per_client })
}

/// Whether `name` matches a FIND_FIRST pattern, case-insensitively: `*` any run, `?` one
/// character, and the DOS forms `<` (as `*`), `>` (as `?`) and `"` (as `.`).
pub fn matches(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern
        .chars()
        .map(|c| match c {
            '<' => '*',
            '>' => '?',
            '"' => '.',
            c => c.to_ascii_lowercase(),
        })
        .collect();
    let n: Vec<char> = name.chars().map(|c| c.to_ascii_lowercase()).collect();
    // Iterative wildcard match with one backtrack point (linear in practice, no recursion).
    let (mut pi, mut ni, mut star, mut mark) = (0usize, 0usize, None, 0usize);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
#[path = "loadfile_parse_tests.rs"]
mod tests;
