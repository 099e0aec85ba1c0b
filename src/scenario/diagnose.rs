//! Locating keys and spans in the TOML text, so every scenario error can point at file:line:column.

use std::ops::Range;

use super::error::{ScenarioError, did_you_mean, line_col, snippet};

/// One step of a key path: a table key or an array index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Seg {
    Key(String),
    Index(usize),
}

fn path_str(path: &[Seg]) -> String {
    let mut s = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Seg::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

/// Build a path from `"workload.steps"` plus extra segments.
pub(super) fn p(base: &str) -> Vec<Seg> {
    base.split('.').filter(|s| !s.is_empty()).map(|s| Seg::Key(s.to_string())).collect()
}

/// `path` extended by one segment, so validators can build paths in an expression.
pub(super) fn with(mut path: Vec<Seg>, seg: Seg) -> Vec<Seg> {
    path.push(seg);
    path
}

/// Everything needed to turn a position or a key path into a good error.
pub(super) struct Ctx<'a> {
    text: &'a str,
    origin: &'a str,
    doc: Option<toml_edit::Document<&'a str>>,
    /// `--set` overrides by dotted path: errors under them name the option, not the file.
    overrides: &'a [(String, String)],
}

impl<'a> Ctx<'a> {
    /// A context for `text`; a document that does not parse just means errors without positions.
    pub(super) fn new(text: &'a str, origin: &'a str, overrides: &'a [(String, String)]) -> Self {
        Ctx { text, origin, doc: toml_edit::Document::parse(text).ok(), overrides }
    }

    fn error_at(
        &self,
        span: Option<Range<usize>>,
        key: Option<String>,
        message: String,
        help: Option<String>,
    ) -> ScenarioError {
        let overridden = key.as_ref().and_then(|k| {
            self.overrides
                .iter()
                .find(|(p, _)| k == p || k.starts_with(&format!("{p}.")) || k.starts_with(&format!("{p}[")))
        });
        if let Some((path, value)) = overridden {
            return ScenarioError {
                origin: format!("--set {path}={value}"),
                line: None,
                column: None,
                key,
                message,
                help,
                snippet: None,
            };
        }
        let (line, column, snippet) = match span {
            Some(span) => {
                let (l, c) = line_col(self.text, span.start);
                (Some(l), Some(c), Some(snippet(self.text, span)))
            }
            None => (None, None, None),
        };
        ScenarioError { origin: self.origin.to_string(), line, column, key, message, help, snippet }
    }

    /// Where the value at `path` starts in the text: 1-based line and column, and the text from there on.
    pub(super) fn value_start(&self, path: &[Seg]) -> Option<(usize, usize, &'a str)> {
        let span = self.span_of(path, false)?;
        let (l, c) = line_col(self.text, span.start);
        Some((l, c, &self.text[span.start..]))
    }

    /// The file (or `<embedded:..>`) errors name.
    pub(super) fn origin(&self) -> &'a str {
        self.origin
    }

    /// An error about the value at `path` (or, if `on_key`, about the key itself).
    pub(super) fn at(
        &self,
        path: &[Seg],
        on_key: bool,
        message: impl Into<String>,
        help: Option<String>,
    ) -> ScenarioError {
        let span = self.span_of(path, on_key);
        self.error_at(span, Some(path_str(path)), message.into(), help)
    }

    /// An error about the value at `path`.
    pub(super) fn value(&self, path: &[Seg], message: impl Into<String>) -> ScenarioError {
        self.at(path, false, message, None)
    }

    /// An error about the value at `path`, with a help line.
    pub(super) fn value_help(
        &self,
        path: &[Seg],
        message: impl Into<String>,
        help: impl Into<String>,
    ) -> ScenarioError {
        self.at(path, false, message, Some(help.into()))
    }

    /// Span of the value (or key) at `path`; falls back to the deepest existing parent.
    fn span_of(&self, path: &[Seg], on_key: bool) -> Option<Range<usize>> {
        let doc = self.doc.as_ref()?;
        let mut item = doc.as_item();
        let mut best = None;
        for (i, seg) in path.iter().enumerate() {
            let last = i + 1 == path.len();
            let next = match seg {
                Seg::Key(k) => {
                    let kv = item.as_table_like().and_then(|t| t.get_key_value(k));
                    match kv {
                        Some((key, v)) => {
                            if last && on_key {
                                return key.span().or(best);
                            }
                            best = key.span().or(best);
                            Some(v)
                        }
                        None => None,
                    }
                }
                Seg::Index(idx) => item.get(*idx),
            };
            match next {
                Some(n) => {
                    item = n;
                    if let Some(s) = n.span() {
                        best = Some(s);
                    }
                }
                None => break,
            }
        }
        best
    }

    /// Key path of the deepest key whose value contains `offset` (for serde errors).
    fn path_at(&self, offset: usize) -> Vec<Seg> {
        let mut path = Vec::new();
        let Some(doc) = self.doc.as_ref() else { return path };
        let mut item = doc.as_item();
        'outer: loop {
            if let Some(t) = item.as_table_like() {
                for (k, v) in t.iter() {
                    let key_span = t.get_key_value(k).and_then(|(key, _)| key.span());
                    let in_key = key_span.as_ref().is_some_and(|s| s.contains(&offset));
                    let in_value = v.span().is_some_and(|s| s.contains(&offset)) || sub_contains(v, offset);
                    if in_key || in_value {
                        path.push(Seg::Key(k.to_string()));
                        item = v;
                        continue 'outer;
                    }
                }
            } else if let Some(arr) = item.as_array() {
                for (i, v) in arr.iter().enumerate() {
                    if v.span().is_some_and(|s| s.contains(&offset)) {
                        path.push(Seg::Index(i));
                        // Inline tables inside arrays: look for the key inside.
                        if let Some(t) = v.as_inline_table() {
                            for (k, vv) in t.iter() {
                                let ks = t.key(k).and_then(|kk| kk.span());
                                if ks.is_some_and(|s| s.contains(&offset))
                                    || vv.span().is_some_and(|s| s.contains(&offset))
                                {
                                    path.push(Seg::Key(k.to_string()));
                                }
                            }
                        }
                        break 'outer;
                    }
                }
            } else if let Some(aot) = item.as_array_of_tables() {
                for (i, t) in aot.iter().enumerate() {
                    if t.span().is_some_and(|s| s.contains(&offset)) {
                        path.push(Seg::Index(i));
                        break 'outer;
                    }
                }
            }
            break;
        }
        path
    }
}

/// Whether some descendant of a table item spans `offset` (standard tables have no span of their own).
fn sub_contains(item: &toml_edit::Item, offset: usize) -> bool {
    match item.as_table_like() {
        Some(t) if item.is_table() => t.iter().any(|(k, v)| {
            t.get_key_value(k).and_then(|(key, _)| key.span()).is_some_and(|s| s.contains(&offset))
                || v.span().is_some_and(|s| s.contains(&offset))
                || sub_contains(v, offset)
        }),
        _ => false,
    }
}

/// For a key whose value carries a unit (given a bare number, `workload.duration = 200`),
/// what such a value looks like: serde's "expected a string" does not say.
fn value_with_unit_help(key: &str) -> Option<String> {
    let (what, example) = if key == "workload.warmup" || key == "workload.duration" {
        ("a duration with its unit", "200ms")
    } else if key.starts_with("backing.image_size") || key.ends_with(".memory") {
        ("a size with its unit", "2GiB")
    } else if key.starts_with("gate.threshold") || key.ends_with(".ci") {
        ("a percentage", "5%")
    } else {
        return None;
    };
    Some(format!("write {what}, such as `{example}` (quoted in the file: `\"{example}\"`)"))
}

/// Turn a serde/toml error into a positioned error with a key path and a suggestion.
pub(super) fn from_toml_error(ctx: &Ctx, e: &toml::de::Error) -> ScenarioError {
    let msg = e.message().trim().to_string();
    let span = e.span();
    // A span that starts the document is about the root table (e.g. a missing top-level key).
    let whole_doc =
        span.as_ref().is_some_and(|s| s.start == 0 && (s.end == 0 || s.end + 1 >= ctx.text.trim_end().len()));
    let path = match &span {
        Some(s) if !whole_doc => ctx.path_at(s.start),
        _ => Vec::new(),
    };
    let key = (!path.is_empty()).then(|| path_str(&path));
    // serde: "unknown field `taks`, expected one of `fs`, `layout`, ..."
    if let Some(rest) = msg.strip_prefix("unknown field `") {
        let (name, tail) = rest.split_once('`').unwrap_or((rest, ""));
        let expected: Vec<&str> = tail.split('`').skip(1).step_by(2).collect();
        let table = path.len().checked_sub(1).map(|n| path_str(&path[..n])).filter(|s| !s.is_empty());
        let where_ = table.map(|t| format!(" in [{t}]")).unwrap_or_default();
        let help = did_you_mean(name, &expected)
            .or_else(|| (!expected.is_empty()).then(|| format!("valid keys here: {}", expected.join(", "))));
        return ctx.error_at(span, key, format!("unknown key `{name}`{where_}"), help);
    }
    if let Some(rest) = msg.strip_prefix("missing field `") {
        let name = rest.split('`').next().unwrap_or(rest);
        let table = path_str(&path);
        let full = if table.is_empty() { name.to_string() } else { format!("{table}.{name}") };
        let span = if path.is_empty() { None } else { span };
        return ctx.error_at(span, Some(full.clone()), format!("missing key `{full}`"), None);
    }
    if msg.starts_with("invalid type") || msg.starts_with("invalid value") {
        let what = key.clone().map(|k| format!("wrong type for `{k}`: ")).unwrap_or_default();
        let help = key.as_deref().filter(|_| msg.ends_with("expected a string")).and_then(value_with_unit_help);
        return ctx.error_at(span, key, format!("{what}{msg}"), help);
    }
    // TOML syntax errors: keep the parser's words.
    ctx.error_at(span, key, format!("invalid TOML: {msg}"), None)
}
