//! Scenario texts compared by meaning, for `compare` and `gate`.
//!
//! Two runs are *comparable* when they measured the same quantities: the same
//! workload kind and, for steps, the same steps in the same order (the gate
//! pairs steps by position), and for lat_fs at least one test in common. All
//! else that may differ between two labs (mount options, mkfs arguments, the
//! backing, timing knobs, where the archive lies) is shown key by key
//! (`filesystems.ext4.mount: + "nodelalloc"`) and the comparison proceeds.
//! Archives are identified by their sha256 (recorded in `run.json`), never by
//! path: `bundle pack` rewrites `[archive] path` to `fixtures/...`, and another
//! lab keeps its tarball elsewhere.

use toml::Value;

/// One side of a comparison: a run's label, stored scenario text and archive checksum.
#[derive(Debug, Clone, Copy)]
pub struct Side<'a> {
    /// The run's label (`THEIRS`).
    pub label: &'a str,
    /// The scenario text stored in its `run.json`.
    pub text: &'a str,
    /// sha256 of the real archive it used, when recorded.
    pub archive_sha256: Option<&'a str>,
}

/// What two scenario texts have in common, by meaning.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Comparability {
    /// One line per differing key, `key: change`, in key order.
    pub differences: Vec<String>,
    /// Why the runs measured different quantities, when they did (the comparison is refused).
    pub refusal: Option<String>,
}

/// Compare two stored scenario texts key by key and decide whether they measure the same.
pub fn compare(a: &Side<'_>, b: &Side<'_>) -> Result<Comparability, String> {
    let pa: toml::Table = a.text.parse().map_err(|e: toml::de::Error| format!("{}: {}", a.label, e.message()))?;
    let pb: toml::Table = b.text.parse().map_err(|e: toml::de::Error| format!("{}: {}", b.label, e.message()))?;
    let mut changes = Vec::new();
    diff_table("", &pa, &pb, &mut changes);
    let mut differences = Vec::new();
    for (key, change) in &changes {
        if key == "archive.path" {
            // The path names a place on each machine; the bytes are what was measured.
            match (a.archive_sha256, b.archive_sha256) {
                (Some(x), Some(y)) if x == y => {
                    differences.push(format!("{key}: {change} (same archive: sha256 {})", short(x)));
                    continue;
                }
                _ => {}
            }
        }
        differences.push(format!("{key}: {change}"));
    }
    if let (Some(x), Some(y)) = (a.archive_sha256, b.archive_sha256)
        && x != y
    {
        differences.push(format!("archive sha256: {} → {} (different archives)", short(x), short(y)));
    }
    let refusal = measured_refusal(a, b, &pa, &pb, &changes);
    Ok(Comparability { differences, refusal })
}

/// The measured quantities: workload kind, steps (by position), lat_fs tests (in common).
fn measured_refusal(
    a: &Side<'_>,
    b: &Side<'_>,
    pa: &toml::Table,
    pb: &toml::Table,
    changes: &[(String, String)],
) -> Option<String> {
    let get = |t: &toml::Table, sec: &str, key: &str| t.get(sec).and_then(|s| s.get(key)).cloned();
    let (ka, kb) = (get(pa, "workload", "kind"), get(pb, "workload", "kind"));
    if ka != kb {
        return Some(format!(
            "they measure different workloads: {} runs {}, {} runs {}",
            a.label,
            shown(ka.as_ref()),
            b.label,
            shown(kb.as_ref())
        ));
    }
    let steps: Vec<&(String, String)> = changes.iter().filter(|(k, _)| k.starts_with("workload.steps")).collect();
    if !steps.is_empty() {
        return Some(format!(
            "they time different steps (steps are compared by position): {}",
            steps.iter().map(|(k, c)| format!("{k}: {c}")).collect::<Vec<_>>().join("; ")
        ));
    }
    let tests = |t: &toml::Table| get(t, "matrix", "test").and_then(|v| v.as_array().cloned());
    if let (Some(ta), Some(tb)) = (tests(pa), tests(pb))
        && !ta.iter().any(|t| tb.contains(t))
    {
        return Some(format!(
            "they share no lat_fs test: {} has {}, {} has {}",
            a.label,
            Value::Array(ta),
            b.label,
            Value::Array(tb)
        ));
    }
    None
}

fn short(s: &str) -> &str {
    &s[..s.len().min(12)]
}

fn shown(v: Option<&Value>) -> String {
    v.map_or_else(|| "(unset)".into(), |v| v.to_string())
}

/// A key as written in a dotted path: bare when it can be, quoted otherwise.
fn key_part(k: &str) -> String {
    if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        k.to_string()
    } else {
        Value::String(k.to_string()).to_string()
    }
}

fn join(prefix: &str, k: &str) -> String {
    if prefix.is_empty() { key_part(k) } else { format!("{prefix}.{}", key_part(k)) }
}

fn diff_table(prefix: &str, a: &toml::Table, b: &toml::Table, out: &mut Vec<(String, String)>) {
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        diff_value(&join(prefix, k), a.get(k), b.get(k), out);
    }
}

fn diff_value(key: &str, a: Option<&Value>, b: Option<&Value>, out: &mut Vec<(String, String)>) {
    match (a, b) {
        (Some(x), Some(y)) if x == y => {}
        (Some(Value::Table(x)), Some(Value::Table(y))) => diff_table(key, x, y, out),
        (Some(Value::Array(x)), Some(Value::Array(y))) => {
            let tables = |v: &[Value]| v.iter().any(|e| e.is_table());
            if tables(x) || tables(y) {
                // Arrays of tables (steps, kernels) are positional.
                for i in 0..x.len().max(y.len()) {
                    diff_value(&format!("{key}[{i}]"), x.get(i), y.get(i), out);
                }
            } else {
                // Lists of options: what was added and removed, in order.
                let mut parts: Vec<String> = x.iter().filter(|e| !y.contains(e)).map(|e| format!("- {e}")).collect();
                parts.extend(y.iter().filter(|e| !x.contains(e)).map(|e| format!("+ {e}")));
                if parts.is_empty() {
                    parts.push(format!("order {} → {}", Value::Array(x.clone()), Value::Array(y.clone())));
                }
                out.push((key.to_string(), parts.join(", ")));
            }
        }
        (Some(x), Some(y)) => out.push((key.to_string(), format!("{x} → {y}"))),
        (Some(x), None) => out.push((key.to_string(), format!("- {x}"))),
        (None, Some(y)) => out.push((key.to_string(), format!("+ {y}"))),
        (None, None) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side<'a>(label: &'a str, text: &'a str, sha: Option<&'a str>) -> Side<'a> {
        Side { label, text, archive_sha256: sha }
    }

    const BASE: &str = "name = 'k'\n[filesystems.ext4]\nmount = ['noload']\n[archive]\npath = '/data/l.tar.gz'\n\
                        [workload]\nkind = 'steps'\niterations = 5\nsteps = [{ op = 'rm_rf', path = 'l' }, { op = 'untar', archive = 'l.tar.gz' }]\n";

    #[test]
    fn differences_are_named_key_by_key_and_do_not_refuse() {
        let b = BASE.replace("['noload']", "['noload', 'nodelalloc']").replace("iterations = 5", "iterations = 3");
        let c = compare(&side("THEIRS", BASE, None), &side("OURS", &b, None)).unwrap();
        assert_eq!(c.differences, ["filesystems.ext4.mount: + \"nodelalloc\"", "workload.iterations: 5 → 3"]);
        assert_eq!(c.refusal, None);
    }

    #[test]
    fn archives_are_identified_by_sha256_not_path() {
        let b = BASE.replace("/data/l.tar.gz", "fixtures/l.tar.gz");
        let sha = "ab".repeat(32);
        let c = compare(&side("A", BASE, Some(&sha)), &side("B", &b, Some(&sha))).unwrap();
        assert_eq!(c.refusal, None);
        assert!(c.differences[0].contains("same archive: sha256 abababababab"), "{:?}", c.differences);
        let other = "cd".repeat(32);
        let c = compare(&side("A", BASE, Some(&sha)), &side("B", &b, Some(&other))).unwrap();
        assert!(c.differences.iter().any(|d| d.contains("different archives")), "{:?}", c.differences);
        assert_eq!(c.refusal, None);
    }

    #[test]
    fn different_measured_quantities_refuse_saying_why() {
        let b = BASE.replace("{ op = 'untar', archive = 'l.tar.gz' }", "{ op = 'sync' }");
        let c = compare(&side("A", BASE, None), &side("B", &b, None)).unwrap();
        let r = c.refusal.unwrap();
        assert!(r.contains("different steps") && r.contains("workload.steps[1].op: \"untar\" → \"sync\""), "{r}");
        let l = "[matrix]\ntest = ['chown']\n[workload]\nkind = 'lat_fs'\n";
        let c = compare(&side("A", BASE, None), &side("B", l, None)).unwrap();
        assert!(c.refusal.unwrap().contains("different workloads: A runs \"steps\", B runs \"lat_fs\""));
        let m = "[matrix]\ntest = ['open_close']\n[workload]\nkind = 'lat_fs'\n";
        let c = compare(&side("A", l, None), &side("B", m, None)).unwrap();
        assert!(c.refusal.unwrap().contains("share no lat_fs test"));
        let both = "[matrix]\ntest = ['open_close', 'chown']\n[workload]\nkind = 'lat_fs'\n";
        assert_eq!(compare(&side("A", l, None), &side("B", both, None)).unwrap().refusal, None);
    }
}
