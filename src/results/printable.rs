//! Every string of a loaded result file, capped in length and made safe to print.
//!
//! Result files travel between labs (bundles, shared result trees), so their text
//! is someone else's bytes: a label holding terminal escapes would rewrite the
//! screen of whoever runs `report`, `compare` or `gate`, and one holding a newline
//! would start its own blocks (`## fsbench gate: no regression`) in a Markdown
//! summary. So no field is trusted by name: the parsed JSON document is walked
//! before it becomes typed data, and every string in it (object keys included)
//! is checked against its length cap and has its control characters escaped
//! ([`crate::text::escape_control`]: no newline survives). A field added to the
//! format later is covered without anyone listing it.
//!
//! The one exception is [`RAW_FIELD`], the scenario text: it is parsed and
//! hashed, never printed raw, so it keeps its bytes (and only gets a larger cap).

use serde_json::Value;

use crate::text::escape_control;

/// Longest name, label, identifier or option (`label`, `fs`, `op`, host names,
/// cell ids, mount options), in characters: far past any real one, and short
/// enough that no renderer has to lay out a line of megabytes.
pub const MAX_NAME_CHARS: usize = 4 << 10;
/// Longest message (`error`, `notes`, `reason`, `remedy`, `kernel_cmdline`), in
/// characters: a message may quote a tool's stderr.
pub const MAX_MESSAGE_CHARS: usize = 64 << 10;
/// Longest scenario text, in bytes (a real scenario is a few KiB).
pub const MAX_SCENARIO_BYTES: usize = 1 << 20;
/// The field kept byte for byte: the scenario a run recorded, hashed and parsed again.
pub const RAW_FIELD: &str = "scenario_text";
/// Fields that hold messages rather than names, capped at [`MAX_MESSAGE_CHARS`].
const MESSAGE_FIELDS: [&str; 5] = ["error", "notes", "reason", "remedy", "kernel_cmdline"];

/// A string over its cap: the dotted field and what is wrong with it.
pub(super) type TooLong = (String, String);

/// Check every string in `doc` against its cap and escape its control characters in
/// place; the first string over its cap is returned with its dotted path.
pub(super) fn guard_strings(doc: &mut Value) -> Result<(), TooLong> {
    walk(doc, &mut String::new(), None)
}

/// `key` is the object key the value sits under (an array's items inherit it).
fn walk(v: &mut Value, path: &mut String, key: Option<&str>) -> Result<(), TooLong> {
    match v {
        Value::String(s) => guard(s, path, key),
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                walk(item, path, key)?;
                path.truncate(len);
            }
            Ok(())
        }
        Value::Object(map) => {
            for (k, item) in map.iter_mut() {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(&escape_control(k));
                check_len(k, MAX_NAME_CHARS, path, "a name")?;
                walk(item, path, Some(k))?;
                path.truncate(len);
            }
            // Keys are text too (`queue` settings are a map): one that changes when
            // escaped is moved to its escaped form.
            let bad: Vec<String> = map.keys().filter(|k| escape_control(k).len() != k.len()).cloned().collect();
            for k in bad {
                let item = map.remove(&k).expect("key listed above");
                map.insert(escape_control(&k), item);
            }
            Ok(())
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => Ok(()),
    }
}

fn guard(s: &mut String, path: &str, key: Option<&str>) -> Result<(), TooLong> {
    match key {
        Some(RAW_FIELD) => {
            if s.len() > MAX_SCENARIO_BYTES {
                return Err((
                    path.to_string(),
                    format!("{} bytes, more than the {MAX_SCENARIO_BYTES} a scenario text may hold", s.len()),
                ));
            }
            Ok(())
        }
        Some(k) if MESSAGE_FIELDS.contains(&k) => {
            check_len(s, MAX_MESSAGE_CHARS, path, "a message")?;
            escape_in_place(s);
            Ok(())
        }
        _ => {
            check_len(s, MAX_NAME_CHARS, path, "a name or label")?;
            escape_in_place(s);
            Ok(())
        }
    }
}

fn check_len(s: &str, max: usize, path: &str, what: &str) -> Result<(), TooLong> {
    // Bytes bound characters from above: most strings never need counting.
    if s.len() > max && s.chars().count() > max {
        return Err((
            if path.is_empty() { "(whole file)".into() } else { path.to_string() },
            format!("{} characters, more than the {max} {what} may hold", s.chars().count()),
        ));
    }
    Ok(())
}

fn escape_in_place(s: &mut String) {
    // Escaping only ever lengthens a string: an unchanged length means nothing to escape.
    let shown = escape_control(s);
    if shown.len() != s.len() {
        *s = shown;
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_string_loses_its_escapes_but_not_its_text() {
        let mut doc = json!({"label": "EVIL\u{1b}[2J", "steps": [{"op": "a\n## x", "label": "plain"}],
            "queue": {"k\n": "v\u{7}"}, "scenario_text": "[a]\nb = 1\n"});
        guard_strings(&mut doc).unwrap();
        assert_eq!(doc["label"], "EVIL\\u{1b}[2J");
        assert_eq!(doc["steps"][0]["op"], "a\\n## x");
        assert_eq!(doc["steps"][0]["label"], "plain");
        assert_eq!(doc["queue"]["k\\n"], "v\\u{7}");
        assert_eq!(doc["scenario_text"], "[a]\nb = 1\n", "the scenario keeps its bytes");
    }

    #[test]
    fn a_string_past_its_cap_is_named_with_its_path() {
        let mut doc = json!({"steps": [{"label": "x".repeat(MAX_NAME_CHARS + 1)}]});
        let (field, msg) = guard_strings(&mut doc).unwrap_err();
        assert_eq!(field, "steps[0].label");
        assert!(msg.contains("4097 characters") && msg.contains("4096"), "{msg}");
        let mut ok = json!({"error": "e".repeat(MAX_NAME_CHARS + 1), "label": "é".repeat(MAX_NAME_CHARS)});
        guard_strings(&mut ok).unwrap();
    }
}
