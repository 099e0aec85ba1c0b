//! What new users tripped over, round three (issue 38): each test pins one item, end to
//! end through the CLI, and failed before its fix.

use crate::support::{crate_root, fsbench};

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

// Item 15: `gate paired-nodelalloc` said "not a run directory (no run.json)" about a path
// that does not exist, and `report paired-nodelalloc` said "does not exist": neither
// suggested `paired-nodelalloc@latest`.
#[test]
fn a_scenario_name_given_as_a_run_suggests_its_latest_run() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("results");
    crate::support::report::write_seed_run(&root.join("paired-nodelalloc/r1"), "BASE");
    for cmd in ["gate", "report"] {
        let out = fsbench().current_dir(tmp.path()).args([cmd, "paired-nodelalloc"]).output().unwrap();
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {err}");
        assert!(err.contains("paired-nodelalloc: does not exist"), "{cmd}: {err}");
        assert!(err.contains("`paired-nodelalloc@latest`"), "{cmd}: {err}");
        assert!(!err.contains("no run.json"), "{cmd}: {err}");
    }
}

// Item 33: `run scenarios/quota.toml` said only "os error 2", where key errors get a
// "did you mean"; two scenarios hold the name.
#[test]
fn a_missing_scenario_file_names_the_scenarios_like_it() {
    let out = fsbench().current_dir(crate_root()).args(["run", "scenarios/quota.toml"]).output().unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("scenarios/quota-qemu.toml") && err.contains("scenarios/quota-smp.toml"), "{err}");
}

// Item 32: damaged bundles got the libraries' raw words (`invalid gzip header` for a .toml
// given to `bundle verify`; `numeric field was not a number: … when getting cksum for`
// followed by the file's own bytes for a gzip'd file that is no tar).
#[test]
fn a_file_that_is_no_bundle_is_called_not_a_bundle_or_damaged() {
    let tmp = tempfile::tempdir().unwrap();
    let gz = tmp.path().join("scenario.fsb");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut enc, &std::fs::read(crate_root().join("scenarios/quickstart.toml")).unwrap())
        .unwrap();
    std::fs::write(&gz, enc.finish().unwrap()).unwrap();
    for file in [crate_root().join("scenarios/quickstart.toml"), gz] {
        let out = fsbench().args(["bundle", "verify"]).arg(&file).output().unwrap();
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("not a bundle, or damaged"), "{err}");
        assert!(!err.contains("#:schema"), "the file's own text is not echoed: {err}");
    }
}
