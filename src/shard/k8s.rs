//! `fsbench submit k8s`: a Kubernetes indexed Job (batch/v1) running the shards.
//!
//! The manifest is JSON, which `kubectl apply -f` reads as it reads YAML: a `v1` `List`
//! of two objects, a ConfigMap carrying the scenario text, and the Job (`completionMode: Indexed`, `completions` = `parallelism` = N). Each
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

/// The manifest as a `kubectl apply -f` file: a `v1` `List` of the ConfigMap and the Job,
/// pretty-printed JSON ending in a newline.
pub fn manifest_json(scenario_name: &str, scenario_text: &str, shards: u32, image: &str) -> String {
    let list = json!({
        "apiVersion": "v1",
        "kind": "List",
        "items": manifest(scenario_name, scenario_text, shards, image),
    });
    serde_json::to_string_pretty(&list).expect("JSON values serialize") + "\n"
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
}
