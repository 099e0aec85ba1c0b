//! `--set path=value` overrides applied to the TOML document before validation.
//!
//! Overrides edit the document itself (with toml_edit, which keeps the rest of
//! the text as written), so an overridden value goes through exactly the same
//! parsing and validation as one written in the file. Errors under an
//! overridden key name the `--set` option instead of a file position.

use std::str::FromStr;

use super::error::ScenarioError;

fn usage(origin: &str, message: String, help: Option<String>) -> ScenarioError {
    ScenarioError { origin: origin.to_string(), line: None, column: None, key: None, message, help, snippet: None }
}

/// Parse the value of `--set key=value`: a TOML value if it is one, else a string.
fn parse_value(raw: &str) -> toml_edit::Value {
    match toml_edit::Value::from_str(raw.trim()) {
        Ok(v) => v,
        Err(_) => toml_edit::Value::from(raw),
    }
}

/// Apply `--set` overrides to scenario text. Returns the new text and the applied
/// `(path, value)` pairs (for error messages).
pub fn apply(text: &str, origin: &str, overrides: &[String]) -> Result<(String, Vec<(String, String)>), ScenarioError> {
    // A syntax error in the file is the file's, located as without --set.
    let mut doc = toml_edit::DocumentMut::from_str(text).map_err(|e| {
        let mut err = usage(origin, format!("invalid TOML: {}", e.message().trim_end()), None);
        if let Some(span) = e.span() {
            let (line, column) = super::error::line_col(text, span.start);
            (err.line, err.column) = (Some(line), Some(column));
            err.snippet = Some(super::error::snippet(text, span));
        }
        err
    })?;
    let mut applied = Vec::new();
    for raw in overrides {
        let opt = format!("--set {raw}");
        let Some((path, value)) = raw.split_once('=') else {
            return Err(usage(
                &opt,
                "expected `--set PATH=VALUE`".into(),
                Some("e.g. --set workload.duration=200ms".into()),
            ));
        };
        let path = path.trim();
        let keys: Vec<&str> = path.split('.').collect();
        if path.is_empty() || keys.iter().any(|k| k.is_empty()) {
            return Err(usage(
                &opt,
                format!("invalid key path `{path}`"),
                Some("use a dotted path such as `workload.duration`".into()),
            ));
        }
        let mut new_value = parse_value(value);
        let mut table = doc.as_table_mut();
        for (i, key) in keys[..keys.len() - 1].iter().enumerate() {
            let entry = table.entry(key).or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()));
            if let Some(inline) = entry.as_inline_table().cloned() {
                *entry = toml_edit::Item::Table(inline.into_table());
            }
            table = entry
                .as_table_mut()
                .ok_or_else(|| usage(&opt, format!("`{}` is a value, not a table", keys[..=i].join(".")), None))?;
        }
        let last = keys[keys.len() - 1];
        // An axis given one value is an axis of one: `--set matrix.fs=ext4`.
        if table.get(last).is_some_and(|it| it.is_array()) && !new_value.is_array() {
            let mut arr = toml_edit::Array::new();
            arr.push(new_value);
            new_value = toml_edit::Value::Array(arr);
        }
        // Switching the backing kind drops the options that belong to the old kind.
        if path == "backing.kind" {
            match new_value.as_str() {
                Some("tmpfs-loop") => {
                    table.remove("path");
                }
                Some(_) => {
                    table.remove("image_size");
                }
                None => {}
            }
        }
        // A real archive replaces a generated one and the reverse: `--set archive.path=FILE`
        // is the whole edit (steps that say `{archive.top}` and no `archive` follow it).
        match path {
            "archive.path" => {
                for k in ["generate", "scale", "seed"] {
                    table.remove(k);
                }
            }
            "archive.generate" => {
                table.remove("path");
            }
            _ => {}
        }
        table.insert(last, toml_edit::Item::Value(new_value));
        applied.push((path.to_string(), value.to_string()));
    }
    Ok((doc.to_string(), applied))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "schema = 1\nname = \"t\" # keep\n[matrix]\nfs = [\"ext4\"]\n[backing]\nkind = \"tmpfs-loop\"\nimage_size = \"1GiB\"\n[workload]\nkind = \"lat_fs\"\n";

    #[test]
    fn values_are_typed_like_toml() {
        let (text, _) = apply(
            TEXT,
            "t",
            &["workload.repetitions=3".into(), "workload.duration=200ms".into(), "matrix.tasks=[1,2]".into()],
        )
        .unwrap();
        assert!(text.contains("repetitions = 3"), "{text}");
        assert!(text.contains("duration = \"200ms\""), "{text}");
        assert!(text.contains("tasks = [1,2]"), "{text}");
        assert!(text.contains("# keep"), "comments survive: {text}");
    }

    #[test]
    fn a_scalar_for_an_axis_becomes_a_one_value_axis() {
        let (text, _) = apply(TEXT, "t", &["matrix.fs=xfs".into()]).unwrap();
        assert!(text.contains("fs = [\"xfs\"]"), "{text}");
    }

    #[test]
    fn switching_backing_kind_drops_foreign_keys() {
        let (text, _) = apply(TEXT, "t", &["backing.kind=dir".into()]).unwrap();
        assert!(!text.contains("image_size"), "{text}");
    }

    #[test]
    fn a_real_archive_replaces_a_generated_one() {
        let text = "schema = 1\n[archive]\ngenerate = \"linux-2.5.63\"\nscale = 0.1\non_target = true\n";
        let (t, _) = apply(text, "t", &["archive.path=/srv/linux-6.1.tar.gz".into()]).unwrap();
        assert!(!t.contains("generate") && !t.contains("scale") && t.contains("on_target"), "{t}");
        assert!(t.contains("path = \"/srv/linux-6.1.tar.gz\""), "{t}");
        let (back, _) = apply(&t, "t", &["archive.generate=linux-2.5.63".into()]).unwrap();
        assert!(!back.contains("path ="), "{back}");
    }

    #[test]
    fn malformed_overrides_are_usage_errors() {
        let e = apply(TEXT, "t", &["workload.duration".into()]).unwrap_err();
        assert_eq!(e.origin, "--set workload.duration");
        let e = apply(TEXT, "t", &["name.x=1".into()]).unwrap_err();
        assert!(e.message.contains("`name` is a value"), "{e}");
    }
}
