//! The checked-in JSON Schemas match the types; regenerate with `FSBENCH_BLESS=1 cargo test --test results_schema`.

fn check(path: &str, generated: String) {
    let full = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    if std::env::var_os("FSBENCH_BLESS").is_some() {
        std::fs::write(&full, &generated).unwrap();
    }
    let on_disk = std::fs::read_to_string(&full).unwrap_or_default();
    assert!(on_disk == generated, "{path} is stale: the result types changed; run `FSBENCH_BLESS=1 cargo test --test results_schema` and commit it");
}

#[test]
fn result_schema_is_current() {
    check("schemas/result.schema.json", fsbench::results::result_schema_json());
}

#[test]
fn run_schema_is_current() {
    check("schemas/run.schema.json", fsbench::results::run_schema_json());
}
