//! `fsbench submit k8s` writes a manifest with the shape of a batch/v1 indexed Job
//! (a structural check of the JSON `kubectl apply -f` reads; there is no cluster here).

use serde_json::Value;

use crate::support::{crate_root, fsbench};

/// The objects of the manifest: one JSON document, a `v1` `List` (kubectl applies its items).
fn documents(json: &str) -> Vec<Value> {
    let list: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("bad JSON ({e}):\n{json}"));
    assert_eq!(list["apiVersion"], "v1", "{list:#}");
    assert_eq!(list["kind"], "List", "{list:#}");
    list["items"].as_array().unwrap_or_else(|| panic!("items is not a list: {list:#}")).clone()
}

fn submit(shards: &str, extra: &[&str]) -> (String, String, i32) {
    let out = fsbench()
        .current_dir(crate_root())
        .args(["submit", "k8s", "scenarios/quickstart.toml", "--shards", shards])
        .args(extra)
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

fn str_at<'a>(v: &'a Value, path: &str) -> &'a str {
    v.pointer(path).and_then(Value::as_str).unwrap_or_else(|| panic!("{path} is not a string in {v:#}"))
}

#[test]
fn manifest_is_an_indexed_batch_v1_job() {
    let (json, stderr, code) = submit("6", &["--image", "registry.example/fsbench:1.0"]);
    assert_eq!(code, 0, "{stderr}");
    let docs = documents(&json);
    assert_eq!(docs.len(), 2, "a ConfigMap with the scenario, then the Job");
    let (cm, job) = (&docs[0], &docs[1]);

    assert_eq!(str_at(cm, "/apiVersion"), "v1");
    assert_eq!(str_at(cm, "/kind"), "ConfigMap");
    let scenario = std::fs::read_to_string(crate_root().join("scenarios/quickstart.toml")).unwrap();
    assert_eq!(str_at(cm, "/data/scenario.toml"), scenario, "the scenario text travels verbatim");

    // The batch/v1 Job schema's required shape.
    assert_eq!(str_at(job, "/apiVersion"), "batch/v1");
    assert_eq!(str_at(job, "/kind"), "Job");
    let name = str_at(job, "/metadata/name");
    assert!(
        name.len() <= 63 && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
        "{name}"
    );
    let spec = &job["spec"];
    assert_eq!(str_at(spec, "/completionMode"), "Indexed");
    assert_eq!(spec["completions"], 6);
    assert_eq!(spec["parallelism"], 6);
    assert!(spec["completions"].is_u64() && spec["backoffLimit"].is_u64(), "integers, not strings");
    let pod = &spec["template"]["spec"];
    assert!(matches!(str_at(pod, "/restartPolicy"), "Never" | "OnFailure"), "a Job's pods may not restart Always");
    let containers = pod["containers"].as_array().expect("containers is a list");
    assert_eq!(containers.len(), 1);
    let c = &containers[0];
    assert_eq!(str_at(c, "/name"), "fsbench");
    assert_eq!(str_at(c, "/image"), "registry.example/fsbench:1.0");
    let command: Vec<&str> = c["command"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    assert_eq!(&command[..2], ["fsbench", "run"]);
    assert!(!command.iter().any(|a| a.starts_with("--shard")), "the index comes from JOB_COMPLETION_INDEX");
    assert_eq!(c["securityContext"]["privileged"], true, "fsbench mounts filesystems");

    let env: Vec<&Value> = c["env"].as_array().unwrap().iter().collect();
    let count = env.iter().find(|e| e["name"] == "FSBENCH_SHARD_COUNT").expect("FSBENCH_SHARD_COUNT");
    assert_eq!(count["value"], "6", "env values are strings in the schema");
    let key = env.iter().find(|e| e["name"] == "FSBENCH_RUN_KEY").expect("FSBENCH_RUN_KEY");
    assert!(str_at(key, "/valueFrom/fieldRef/fieldPath").contains("controller-uid"));

    // Every mount names a declared volume, and the results volume is mounted where --out points.
    let volumes: Vec<&str> = pod["volumes"].as_array().unwrap().iter().map(|v| str_at(v, "/name")).collect();
    for m in c["volumeMounts"].as_array().unwrap() {
        assert!(volumes.contains(&str_at(m, "/name")), "mount of undeclared volume {m}");
        assert!(str_at(m, "/mountPath").starts_with('/'));
    }
    let out_at = command.iter().position(|a| *a == "--out").map(|i| command[i + 1]).expect("--out");
    let results_mount = c["volumeMounts"].as_array().unwrap().iter().find(|m| m["name"] == "results").unwrap();
    assert_eq!(str_at(results_mount, "/mountPath"), out_at);
    let scenario_volume = pod["volumes"].as_array().unwrap().iter().find(|v| v["name"] == "scenario").unwrap();
    assert_eq!(str_at(scenario_volume, "/configMap/name"), str_at(cm, "/metadata/name"));
    // The ConfigMap mounted at /etc/fsbench holds scenario.toml, the file the command runs.
    assert!(command.contains(&"/etc/fsbench/scenario.toml"));
}

#[test]
fn manifest_goes_to_a_file_and_zero_shards_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("job.json");
    let (_, stderr, code) = submit("3", &["--output", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    let docs = documents(&std::fs::read_to_string(&file).unwrap());
    assert_eq!(docs[1]["spec"]["completions"], 3);
    let (_, stderr, code) = submit("0", &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--shards must be at least 1"), "{stderr}");
}
