//! The checked-in JSON Schemas must match the types they are generated from.
//! Regenerate with `FSBENCH_BLESS=1 cargo test --test it schemas::`.

use crate::support::crate_root;

fn check(file: &str, generated: String) {
    let path = crate_root().join(file);
    if std::env::var_os("FSBENCH_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == generated,
        "{file} is stale: regenerate it with `FSBENCH_BLESS=1 cargo test --test it schemas::`"
    );
}

#[test]
fn scenario_schema_is_current() {
    check("schemas/scenario.schema.json", fsbench::scenario::file::scenario_schema_json());
}

#[test]
fn every_bundled_scenario_points_editors_at_the_schema() {
    for name in ["quickstart", "quota-smp", "kernel-untar", "quota-qemu"] {
        let text = std::fs::read_to_string(crate_root().join(format!("scenarios/{name}.toml"))).unwrap();
        assert!(
            text.starts_with("#:schema ../schemas/scenario.schema.json"),
            "{name}.toml must start with the #:schema line"
        );
    }
}

#[test]
fn result_schema_is_current() {
    check("schemas/result.schema.json", fsbench::results::result_schema_json());
}

#[test]
fn run_schema_is_current() {
    check("schemas/run.schema.json", fsbench::results::run_schema_json());
}

#[test]
fn command_output_schemas_are_current() {
    for (file, text) in fsbench::output::schemas() {
        check(&format!("schemas/{file}"), text);
    }
}

/// `fsbench <args>` printed JSON that conforms to `schemas/<schema>`; the document.
fn conforms(schema: &str, args: &[&str], ok_codes: &[i32]) -> serde_json::Value {
    let out = crate::support::fsbench().current_dir(crate_root()).args(args).output().unwrap();
    assert!(
        ok_codes.contains(&out.status.code().unwrap_or(-1)),
        "{args:?}: exit {:?}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    conforming(schema, &out.stdout, &format!("{args:?}"))
}

/// `stdout` of `what` is one JSON document that conforms to `schemas/<schema>`; the document.
pub(crate) fn conforming(schema: &str, stdout: &[u8], what: &str) -> serde_json::Value {
    let doc: serde_json::Value = serde_json::from_slice(stdout).unwrap_or_else(|e| panic!("{what}: {e}"));
    let schema_doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(crate_root().join("schemas").join(schema)).unwrap()).unwrap();
    let errors = crate::support::jsonschema::validate(&schema_doc, &doc);
    assert!(errors.is_empty(), "{what} breaks {schema}:\n{}", errors.join("\n"));
    assert_eq!(doc["schema"], 1, "{what}: documents carry their version");
    doc
}

#[test]
fn doctor_list_plan_validate_and_gate_json_conform_to_their_schemas() {
    let doc = conforms("doctor.schema.json", &["doctor", "--json"], &[0]);
    assert!(doc["capabilities"].as_array().unwrap().iter().any(|c| c["name"] == "root"));
    let doc = conforms("list.schema.json", &["list", "--json"], &[0]);
    assert!(doc["scenarios"].as_array().unwrap().iter().any(|s| s["name"] == "quota-smp"));
    let doc = conforms("plan.schema.json", &["plan", "scenarios/quota-smp.toml", "--json"], &[0]);
    assert_eq!(doc["cells"].as_array().unwrap().len(), 128);
    conforms("plan.schema.json", &["plan", "scenarios/kernel-untar.toml", "--format", "json"], &[0]);
    let doc = conforms(
        "validate.schema.json",
        &["validate", "scenarios/quickstart.toml", "tests/bad_scenarios/filesystems-typo.toml", "--json"],
        &[2],
    );
    assert_eq!(doc["files"][0]["ok"], true);
    assert!(doc["files"][1]["error"].as_str().unwrap().contains("did you mean `ext4`"), "{doc}");
    let tmp = tempfile::tempdir().unwrap();
    let a = crate::support::report::write_seed_run(&tmp.path().join("a"), "BASE");
    let b = crate::support::report::write_seed_run(&tmp.path().join("b"), "V3");
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let doc = conforms("gate.schema.json", &["gate", "--baseline", a, "--candidate", b, "--json"], &[0, 1]);
    assert_eq!(doc["report"]["rows"].as_array().unwrap().len(), 128);
}

#[test]
fn the_schema_check_can_fail() {
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(crate_root().join("schemas/doctor.schema.json")).unwrap())
            .unwrap();
    let v = crate::support::jsonschema::validate;
    assert!(!v(&schema, &serde_json::json!({"schema": 1, "capabilities": "x", "interrupted": false})).is_empty());
    assert!(!v(&schema, &serde_json::json!({"schema": 1, "interrupted": false})).is_empty());
    let row = serde_json::json!({"name": "root", "state": "ok", "detail": "", "remedy": 3});
    assert!(!v(&schema, &serde_json::json!({"schema": 1, "capabilities": [row], "interrupted": false})).is_empty());
}
