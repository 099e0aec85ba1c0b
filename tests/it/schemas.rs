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
