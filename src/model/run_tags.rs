//! `run --meta KEY=VALUE`: what a user records about a run (a commit, a branch, a lab), by key.

use std::collections::BTreeMap;

/// Keys and values of `run --meta`, sorted by key.
pub type RunTags = BTreeMap<String, String>;

/// Longest `--meta` key, in bytes.
pub const MAX_TAG_KEY: usize = 64;
/// Longest `--meta` value, in characters.
pub const MAX_TAG_VALUE: usize = 256;
/// Most `--meta` pairs one run records (a bound on what a loaded run.json may hold, too).
pub const MAX_TAGS: usize = 64;

/// What a `--meta` key may be, for error messages.
pub const TAG_KEY_RULE: &str = "1 to 64 characters from A-Z a-z 0-9 _ . -";

/// Whether `key` is a valid `--meta` key: [`TAG_KEY_RULE`].
pub fn is_valid_tag_key(key: &str) -> bool {
    !key.is_empty() && key.len() <= MAX_TAG_KEY && key.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
}

/// Why `value` is not a valid `--meta` value, or `None` when it is: printable (no control or
/// bidirectional-override characters, which would rewrite a reader's terminal), at most
/// [`MAX_TAG_VALUE`] characters.
pub fn tag_value_problem(value: &str) -> Option<String> {
    if value.chars().count() > MAX_TAG_VALUE {
        return Some(format!("longer than {MAX_TAG_VALUE} characters"));
    }
    if crate::text::escape_control(value) != value {
        return Some("holds control characters".into());
    }
    None
}

/// Parse one `KEY=VALUE` argument of `--meta`; the message says what is wrong.
pub fn parse_tag(arg: &str) -> Result<(String, String), String> {
    let Some((key, value)) = arg.split_once('=') else {
        return Err(format!("`{}`: expected KEY=VALUE (no `=` found)", crate::text::escape_control(arg)));
    };
    if !is_valid_tag_key(key) {
        return Err(format!("key `{}`: use {TAG_KEY_RULE}", crate::text::escape_control(key)));
    }
    if let Some(problem) = tag_value_problem(value) {
        return Err(format!("value of `{key}`: {problem}"));
    }
    Ok((key.to_string(), value.to_string()))
}

/// Parse every `--meta` argument; a key given twice is an error (which one would win is a guess).
pub fn parse_tags(args: &[String]) -> Result<RunTags, String> {
    let mut tags = RunTags::new();
    for arg in args {
        let (k, v) = parse_tag(arg)?;
        if tags.insert(k.clone(), v).is_some() {
            return Err(format!("key `{k}` given twice"));
        }
    }
    if tags.len() > MAX_TAGS {
        return Err(format!("{} keys; at most {MAX_TAGS}", tags.len()));
    }
    Ok(tags)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_pairs_parse_and_the_value_may_hold_equals_signs() {
        let t = parse_tags(&["commit=abc123".into(), "note=a=b c".into()]).unwrap();
        assert_eq!(t["commit"], "abc123");
        assert_eq!(t["note"], "a=b c");
        assert_eq!(parse_tag("empty=").unwrap().1, "");
    }

    #[test]
    fn bad_pairs_say_why() {
        assert!(parse_tag("commit").unwrap_err().contains("no `=`"));
        assert!(parse_tag("=x").unwrap_err().contains("key ``"));
        assert!(parse_tag("a b=x").unwrap_err().contains("key `a b`"));
        assert!(parse_tag(&format!("{}=x", "k".repeat(65))).unwrap_err().contains("1 to 64"));
        assert!(parse_tag("k=a\u{1b}[2J").unwrap_err().contains("control"));
        assert!(parse_tag("k=\u{202e}x").unwrap_err().contains("control"));
        assert!(parse_tag(&format!("k={}", "é".repeat(257))).unwrap_err().contains("256"));
        assert!(parse_tag(&format!("k={}", "é".repeat(256))).is_ok());
        assert!(parse_tags(&["a=1".into(), "a=2".into()]).unwrap_err().contains("twice"));
    }
}
