//! A small JSON Schema validator for the subset schemars writes (draft 2020-12: type, enum,
//! const, properties, required, additionalProperties, items, prefixItems, minItems, maxItems,
//! $ref into $defs, oneOf, anyOf, allOf, minimum, maximum). A full validator crate would bring ~40 crates (URL and Unicode
//! tables) into every test build for four documents. Any other validation keyword in a
//! schema fails the check instead of being skipped silently.

use serde_json::Value;

/// Annotations that constrain nothing.
const ANNOTATIONS: &[&str] = &[
    "$schema",
    "$defs",
    "title",
    "description",
    "default",
    "format",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
];
const KEYWORDS: &[&str] = &[
    "type",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "$ref",
    "oneOf",
    "anyOf",
    "allOf",
    "minimum",
    "maximum",
];

/// Every place where `doc` breaks `schema`, as `/json/pointer: what`; empty when it conforms.
pub fn validate(schema: &Value, doc: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    check(schema, schema, doc, "", &mut errors);
    errors
}

fn type_ok(t: &str, v: &Value) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        other => panic!("unknown JSON Schema type {other}"),
    }
}

fn check(root: &Value, schema: &Value, v: &Value, at: &str, errors: &mut Vec<String>) {
    let s = match schema {
        Value::Bool(true) => return,
        Value::Bool(false) => return errors.push(format!("{at}: nothing is allowed here")),
        Value::Object(s) => s,
        other => panic!("{at}: a schema must be an object or a boolean, not {other}"),
    };
    for k in s.keys() {
        assert!(ANNOTATIONS.contains(&k.as_str()) || KEYWORDS.contains(&k.as_str()), "unsupported keyword {k} at {at}");
    }
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let name = r.strip_prefix("#/$defs/").unwrap_or_else(|| panic!("unsupported $ref {r}"));
        check(root, &root["$defs"][name], v, at, errors);
    }
    if let Some(t) = s.get("type") {
        let types: Vec<&str> = match t {
            Value::String(t) => vec![t.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => panic!("bad type at {at}"),
        };
        if !types.iter().any(|t| type_ok(t, v)) {
            errors.push(format!("{at}: {} is not of type {}", short(v), types.join(" or ")));
            return;
        }
    }
    if let Some(e) = s.get("enum").and_then(Value::as_array)
        && !e.contains(v)
    {
        errors.push(format!("{at}: {} is not one of {}", short(v), Value::Array(e.clone())));
    }
    if let Some(c) = s.get("const")
        && c != v
    {
        errors.push(format!("{at}: {} is not {c}", short(v)));
    }
    if let Some(n) = v.as_f64() {
        if let Some(min) = s.get("minimum").and_then(Value::as_f64)
            && n < min
        {
            errors.push(format!("{at}: {n} < minimum {min}"));
        }
        if let Some(max) = s.get("maximum").and_then(Value::as_f64)
            && n > max
        {
            errors.push(format!("{at}: {n} > maximum {max}"));
        }
    }
    if let Value::Object(obj) = v {
        let props = s.get("properties").and_then(Value::as_object);
        for req in s.get("required").and_then(Value::as_array).into_iter().flatten() {
            let req = req.as_str().unwrap();
            if !obj.contains_key(req) {
                errors.push(format!("{at}: required `{req}` is missing"));
            }
        }
        for (k, val) in obj {
            let here = format!("{at}/{k}");
            match props.and_then(|p| p.get(k)) {
                Some(sub) => check(root, sub, val, &here, errors),
                None => match s.get("additionalProperties") {
                    Some(Value::Bool(false)) => errors.push(format!("{here}: not allowed")),
                    Some(sub) => check(root, sub, val, &here, errors),
                    None => {}
                },
            }
        }
    }
    if let Value::Array(items) = v {
        // Tuples: `prefixItems` for the first elements, `items` for the rest.
        let prefix = s.get("prefixItems").map(|p| p.as_array().expect("prefixItems is an array"));
        let skip = prefix.map_or(0, Vec::len);
        for (i, (item, sub)) in items.iter().zip(prefix.into_iter().flatten()).enumerate() {
            check(root, sub, item, &format!("{at}/{i}"), errors);
        }
        if let Some(sub) = s.get("items") {
            for (i, item) in items.iter().enumerate().skip(skip) {
                check(root, sub, item, &format!("{at}/{i}"), errors);
            }
        }
        if let Some(min) = s.get("minItems").and_then(Value::as_u64)
            && (items.len() as u64) < min
        {
            errors.push(format!("{at}: {} items < minItems {min}", items.len()));
        }
        if let Some(max) = s.get("maxItems").and_then(Value::as_u64)
            && (items.len() as u64) > max
        {
            errors.push(format!("{at}: {} items > maxItems {max}", items.len()));
        }
    }
    let branch_errors = |sub: &Value| {
        let mut e = Vec::new();
        check(root, sub, v, at, &mut e);
        e
    };
    if let Some(all) = s.get("allOf").and_then(Value::as_array) {
        for sub in all {
            check(root, sub, v, at, errors);
        }
    }
    if let Some(any) = s.get("anyOf").and_then(Value::as_array) {
        let failed: Vec<Vec<String>> = any.iter().map(branch_errors).collect();
        if failed.iter().all(|e| !e.is_empty()) {
            errors.push(format!("{at}: {} matches none of anyOf{}", short(v), why(&failed)));
        }
    }
    if let Some(one) = s.get("oneOf").and_then(Value::as_array) {
        let failed: Vec<Vec<String>> = one.iter().map(branch_errors).collect();
        let n = failed.iter().filter(|e| e.is_empty()).count();
        if n != 1 {
            errors.push(format!("{at}: {} matches {n} of oneOf, not exactly 1{}", short(v), why(&failed)));
        }
    }
}

/// A value as an error message shows it: cut, since a document can be megabytes.
fn short(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(80) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s,
    }
}

/// Why each alternative failed, its first errors indented under the message.
fn why(failed: &[Vec<String>]) -> String {
    let mut out = String::new();
    for (i, e) in failed.iter().enumerate().filter(|(_, e)| !e.is_empty()) {
        out.push_str(&format!("\n  alternative {i}: {}", e.iter().take(3).cloned().collect::<Vec<_>>().join("; ")));
    }
    out
}
