//! The bad-scenario corpus: every malformed file gets a positioned error, exit 2, no panic.

use assert_cmd::prelude::*;

use crate::support::{crate_root, fsbench};

#[test]
fn every_bad_scenario_is_rejected_with_its_expected_message() {
    let dir = crate_root().join("tests/bad_scenarios");
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    cases.sort();
    assert!(cases.len() >= 25, "the corpus has {} cases, want at least 25", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let expected = std::fs::read_to_string(case.with_extension("expected"))
            .unwrap_or_else(|_| panic!("{} has no .expected file", case.display()));
        // Run from the crate root so the reported path is the relative one in .expected.
        let out = fsbench()
            .current_dir(crate_root())
            .arg("validate")
            .arg(case.strip_prefix(crate_root()).unwrap())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.code() != Some(2) {
            failures.push(format!("{}: exit {:?}, want 2\n{stderr}", case.display(), out.status.code()));
        }
        if stderr.contains("panicked") {
            failures.push(format!("{}: panicked\n{stderr}", case.display()));
        }
        for line in expected.lines().filter(|l| !l.trim().is_empty()) {
            if !stderr.contains(line) {
                failures.push(format!("{}: missing `{line}` in:\n{stderr}", case.display()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn bundled_scenarios_validate() {
    let mut cmd = fsbench();
    cmd.current_dir(crate_root()).arg("validate");
    for name in ["quickstart", "quota-smp", "kernel-untar", "quota-qemu"] {
        cmd.arg(format!("scenarios/{name}.toml"));
    }
    cmd.assert().success();
}

#[test]
fn set_and_only_errors_are_usage_errors() {
    let run = |args: &[&str]| fsbench().current_dir(crate_root()).args(args).output().unwrap();
    let out = run(&["plan", "scenarios/quota-smp.toml", "--set", "workload.duration=2xs"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--set workload.duration=2xs: unknown duration unit `xs`"));
    let out = run(&["plan", "scenarios/quota-smp.toml", "--only", "taks=1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown axis `taks`, did you mean `tasks`?"));
    let out = run(&["plan", "scenarios/quota-smp.toml", "--frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&["validate", "does/not/exist.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does/not/exist.toml: cannot read scenario"));
}

#[test]
fn plan_of_quota_smp_lists_128_cells() {
    let out = fsbench()
        .current_dir(crate_root())
        .args(["plan", "scenarios/quota-smp.toml", "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["cells"].as_array().unwrap().len(), 128);
}

/// `fsbench import`: a filebench file outside the subset, a missing file, a name that is
/// no scenario name and an existing output file are refused with exit 2; a good file
/// becomes a scenario `plan` reads.
#[test]
fn import_refuses_what_it_cannot_convert_and_writes_what_fsbench_reads() {
    let t = tempfile::tempdir().unwrap();
    let bad = t.path().join("bad.f");
    std::fs::write(&bad, "define process name=p\n{\nthread name=t\n{\nflowop semblock name=x\n}\n}\n").unwrap();
    let good = t.path().join("mail.f");
    std::fs::write(
        &good,
        "set $dir=/tmp\ndefine fileset name=set1,path=$dir,size=16k,entries=50,prealloc=80\n\
         define process name=p,instances=1\n{\nthread name=t,instances=2\n{\n\
         flowop openfile name=o,filesetname=set1,fd=1\nflowop readwholefile name=r,fd=1,iosize=1m\n\
         flowop closefile name=c,fd=1\n}\n}\nrun 2\n",
    )
    .unwrap();
    let out_file = t.path().join("mail.toml");
    for (args, want) in [
        (vec!["import", bad.to_str().unwrap()], "line 5: flowop `semblock` is not in the subset"),
        (vec!["import", "/nonexistent/x.f"], "cannot be read"),
        (vec!["import", good.to_str().unwrap(), "--name", "a b"], "scenario name `a b`"),
    ] {
        let out = fsbench().args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
    fsbench().args(["import", good.to_str().unwrap(), "-o", out_file.to_str().unwrap()]).assert().success();
    fsbench().args(["plan", out_file.to_str().unwrap()]).assert().success();
    let again = fsbench().args(["import", good.to_str().unwrap(), "-o", out_file.to_str().unwrap()]).output().unwrap();
    assert_eq!(again.status.code(), Some(2), "an existing output file is never overwritten");
}
