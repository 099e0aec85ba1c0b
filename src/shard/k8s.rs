//! `fsbench submit k8s`: a Kubernetes indexed Job (batch/v1) running the shards.
//!
//! The manifest has two documents: a ConfigMap carrying the scenario text, and
//! the Job (`completionMode: Indexed`, `completions` = `parallelism` = N). Each
//! pod gets `JOB_COMPLETION_INDEX` from Kubernetes and `FSBENCH_SHARD_COUNT=N`
//! from the manifest, and `FSBENCH_RUN_KEY` from the Job's controller-uid label
//! so that `fsbench merge` groups one Job's shards. Pods are privileged (fsbench
//! mounts tmpfs and loop devices) and see the host's `/dev` (loop devices appear
//! there). Results go to a PersistentVolumeClaim `fsbench-results`, which must be
//! ReadWriteMany if pods land on several nodes; `fsbench merge` reads it afterwards.

use serde_json::{Value, json};

/// Name of the PersistentVolumeClaim the pods write results to.
pub const RESULTS_CLAIM: &str = "fsbench-results";
/// Where the results volume is mounted in the pods.
pub const RESULTS_MOUNT: &str = "/results";

/// A Kubernetes object name: lowercase alphanumerics and `-`, at most 63 characters, alphanumeric ends.
pub fn dns_name(s: &str) -> String {
    let mut out: String =
        s.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
    out.truncate(63);
    let out = out.trim_matches('-').to_string();
    if out.is_empty() { "fsbench".into() } else { out }
}

/// The two manifest documents (ConfigMap, Job) as JSON values.
pub fn manifest(scenario_name: &str, scenario_text: &str, shards: u32, image: &str) -> Vec<Value> {
    // "fsbench-" + name + "-scenario" stays within 63 characters.
    let name = dns_name(&format!("fsbench-{}", &dns_name(scenario_name)[..dns_name(scenario_name).len().min(45)]));
    let config = format!("{name}-scenario");
    let labels = json!({ "app.kubernetes.io/name": "fsbench", "fsbench/scenario": dns_name(scenario_name) });
    let config_map = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": { "name": config, "labels": labels },
        "data": { "scenario.toml": scenario_text },
    });
    let job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": { "name": name, "labels": labels },
        "spec": {
            "completionMode": "Indexed",
            "completions": shards,
            "parallelism": shards,
            // A retried shard would measure its cells twice (merge reports it as duplicated): no retries.
            "backoffLimit": 0,
            "template": {
                "metadata": { "labels": labels },
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{
                        "name": "fsbench",
                        "image": image,
                        "command": ["fsbench", "run", "/etc/fsbench/scenario.toml", "--out", RESULTS_MOUNT, "--quiet"],
                        "env": [
                            { "name": super::env::SHARD_COUNT_VAR, "value": shards.to_string() },
                            { "name": super::env::RUN_KEY_VAR, "valueFrom": { "fieldRef": {
                                "fieldPath": "metadata.labels['batch.kubernetes.io/controller-uid']" } } },
                        ],
                        "securityContext": { "privileged": true },
                        "volumeMounts": [
                            { "name": "results", "mountPath": RESULTS_MOUNT },
                            { "name": "scenario", "mountPath": "/etc/fsbench", "readOnly": true },
                            { "name": "dev", "mountPath": "/dev" },
                        ],
                    }],
                    "volumes": [
                        { "name": "results", "persistentVolumeClaim": { "claimName": RESULTS_CLAIM } },
                        { "name": "scenario", "configMap": { "name": config } },
                        { "name": "dev", "hostPath": { "path": "/dev" } },
                    ],
                },
            },
        },
    });
    vec![config_map, job]
}

/// Render JSON values as a multi-document YAML stream (block style; strings double-quoted as in JSON,
/// which YAML reads the same way, so no value can change type or meaning).
pub fn to_yaml(docs: &[Value]) -> String {
    let mut out = String::new();
    for (i, d) in docs.iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        emit(&mut out, d, 0);
    }
    out
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => serde_json::to_string(s).expect("strings serialize"),
        Value::Object(m) if m.is_empty() => "{}".into(),
        Value::Array(a) if a.is_empty() => "[]".into(),
        other => other.to_string(),
    }
}

fn is_block(v: &Value) -> bool {
    matches!(v, Value::Object(m) if !m.is_empty()) || matches!(v, Value::Array(a) if !a.is_empty())
}

fn key(k: &str) -> String {
    if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || "._-/".contains(c)) {
        k.to_string()
    } else {
        scalar(&Value::String(k.into()))
    }
}

fn emit(out: &mut String, v: &Value, indent: usize) {
    let pad = " ".repeat(indent);
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, v) in m {
                if is_block(v) {
                    out.push_str(&format!("{pad}{}:\n", key(k)));
                    emit(out, v, indent + 2);
                } else {
                    out.push_str(&format!("{pad}{}: {}\n", key(k), scalar(v)));
                }
            }
        }
        Value::Array(a) if !a.is_empty() => {
            for item in a {
                if is_block(item) {
                    // The first line of the item goes after `- `, the rest stays indented under it.
                    let mut inner = String::new();
                    emit(&mut inner, item, indent + 2);
                    out.push_str(&format!("{pad}- {}", &inner[indent + 2..]));
                } else {
                    out.push_str(&format!("{pad}- {}\n", scalar(item)));
                }
            }
        }
        other => out.push_str(&format!("{pad}{}\n", scalar(other))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_dns_labels() {
        assert_eq!(dns_name("Quota_SMP"), "quota-smp");
        assert_eq!(dns_name("--"), "fsbench");
        assert!(dns_name(&"x".repeat(100)).len() <= 63);
    }

    #[test]
    fn yaml_of_nested_values() {
        let v = json!({"a": {"b": [1, {"c": "x y", "d": []}], "e": true}, "f": "1"});
        assert_eq!(to_yaml(&[v]), "a:\n  b:\n    - 1\n    - c: \"x y\"\n      d: []\n  e: true\nf: \"1\"\n");
    }
}
