//! Variants as axis values, run for real and compared side by side.

use crate::support::kernel::assert_no_leaks;
use crate::support::sandbox::{Sandbox, cell_json};
use crate::support::{crate_root, fsbench};

const SCENARIO: &str = r#"schema = 1
name = "variants"
[matrix]
fs = ["ext4", "ext4-nodelalloc"]
[filesystems.ext4]
mkfs = ["-E", "lazy_itable_init=0,lazy_journal_init=0"]
queue = { scheduler = "none" }
[filesystems.ext4-nodelalloc]
type = "ext4"
mkfs = ["-E", "lazy_itable_init=0,lazy_journal_init=0"]
mount = ["nodelalloc"]
queue = { scheduler = "mq-deadline", read_ahead_kb = 64 }
[sysctl]
# Set to the value it has (the machine is shared): the path through journal, read-back and restore is what is tested.
"vm.dirty_ratio" = DIRTY
[backing]
kind = "tmpfs-loop"
image_size = "64MiB"
[archive]
path = "ARCHIVE"
[workload]
kind = "steps"
iterations = 3
steps = [
  { op = "rm_rf", path = "linux-2.5.63" },
  { op = "untar", archive = "linux-2.5.63-small.tar.gz" },
  { op = "sync" },
]
"#;

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn a_variant_axis_runs_with_its_own_mount_options_and_compares() {
    skip_unless_root!();
    let sb = Sandbox::new("fsbench-variants-");
    let archive = crate_root().join("fixtures/linux-2.5.63-small.tar.gz");
    let scenario = sb.path().join("variants.toml");
    let dirty = std::fs::read_to_string("/proc/sys/vm/dirty_ratio").unwrap().trim().to_string();
    let text = SCENARIO.replace("ARCHIVE", archive.to_str().unwrap()).replace("DIRTY", &dirty);
    std::fs::write(&scenario, text).unwrap();
    let plan = fsbench().arg("plan").arg(&scenario).output().unwrap();
    let plan_out = String::from_utf8_lossy(&plan.stdout);
    assert!(plan.status.success(), "{plan_out}{}", String::from_utf8_lossy(&plan.stderr));
    assert!(plan_out.contains("ext4-nodelalloc") && plan_out.contains("mkfs.ext4"), "{plan_out}");
    for label in ["A", "B"] {
        let out = sb.fsbench(&["run", scenario.to_str().unwrap(), "--label", label]).output().unwrap();
        assert!(
            out.status.success(),
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let runs = sb.runs();
    assert_eq!(runs.len(), 2);
    let cell = cell_json(&runs[0], "ext4-nodelalloc-S-qoff-t1");
    assert_eq!(cell["status"], "ok", "{cell:#}");
    let fs = &cell["filesystems"][0];
    assert_eq!(fs["fs"], "ext4", "the variant made an ext4: {fs:#}");
    assert!(fs["mkfs_argv"][0].as_str().unwrap().ends_with("mkfs.ext4"), "{fs:#}");
    assert!(fs["super_options"].as_str().unwrap().contains("nodelalloc"), "{fs:#}");
    // The scheduler and read-ahead were set on its loop device and read back.
    assert_eq!(fs["queue"]["scheduler"], "mq-deadline", "{fs:#}");
    assert_eq!(fs["queue"]["read_ahead_kb"], "64", "{fs:#}");
    assert!(cell["notes"].to_string().contains(&format!("sysctl vm.dirty_ratio = {dirty}")), "{cell:#}");
    let plain = cell_json(&runs[0], "ext4-S-qoff-t1");
    assert!(!plain["filesystems"][0]["super_options"].as_str().unwrap().contains("nodelalloc"));
    assert_eq!(plain["filesystems"][0]["queue"]["scheduler"], "none");

    let args: Vec<String> = ["A", "B"].iter().zip(&runs).map(|(l, r)| format!("{l}={}", r.display())).collect();
    let cmp = fsbench().arg("compare").args(&args).output().unwrap();
    let text = String::from_utf8_lossy(&cmp.stdout);
    assert!(cmp.status.success(), "{text}{}", String::from_utf8_lossy(&cmp.stderr));
    let untar = &text[text.find("step 2: tar zxf").unwrap()..];
    assert!(untar.lines().any(|l| l.starts_with("ext4-nodelalloc ") && l.contains('±')), "{text}");
    // Steady iterations: 2 and 3 (iteration 1's rm_rf removed nothing).
    assert!(text.contains("iterations 2,3"), "{text}");
    let gate = fsbench().args(["gate", "--baseline"]).arg(&runs[0]).arg("--candidate").arg(&runs[1]).output().unwrap();
    let g = String::from_utf8_lossy(&gate.stdout);
    assert!(g.contains("ext4-nodelalloc-S-qoff-t1#1 untar") && g.contains("metric: elapsed [s]"), "{g}");
    assert_no_leaks(sb.path());
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn a_scheduler_the_kernel_lacks_skips_the_cell_with_its_answer() {
    skip_unless_root!();
    let sb = Sandbox::new("fsbench-variants-");
    let archive = crate_root().join("fixtures/linux-2.5.63-small.tar.gz");
    let scenario = sb.path().join("sched.toml");
    let text = SCENARIO
        .replace("ARCHIVE", archive.to_str().unwrap())
        .replace("DIRTY", std::fs::read_to_string("/proc/sys/vm/dirty_ratio").unwrap().trim())
        .replace("queue = { scheduler = \"none\" }", "queue = { scheduler = \"cfq\" }");
    std::fs::write(&scenario, text).unwrap();
    let out = sb.fsbench(&["run", scenario.to_str().unwrap(), "--only", "fs=ext4"]).output().unwrap();
    let run = &sb.runs()[0];
    let cell = cell_json(run, "ext4-S-qoff-t1");
    assert_eq!(cell["status"], "skipped", "{cell:#}\n{}", String::from_utf8_lossy(&out.stderr));
    let reason = cell["skip"]["reason"].as_str().unwrap();
    assert!(reason.contains("scheduler = cfq") && reason.contains("/queue/scheduler"), "{reason}");
    assert!(cell["skip"]["remedy"].as_str().unwrap().contains("mq-deadline"), "{cell:#}");
    assert_no_leaks(sb.path());
}

/// New users' report: `validate` warned "no mkfs.ext4-nodelalloc on this host" for every
/// variant, while `plan` said ready and `run` measured it: tools are looked up by type.
#[test]
fn validate_looks_up_a_variants_tools_by_its_type() {
    if !crate::support::kernel::have_mkfs("ext4", "validate_looks_up_a_variants_tools_by_its_type") {
        return;
    }
    let sb = Sandbox::new("fsbench-variants-validate-");
    let archive = crate_root().join("fixtures/linux-2.5.63-small.tar.gz");
    let scenario = sb.path().join("variants.toml");
    std::fs::write(&scenario, SCENARIO.replace("ARCHIVE", archive.to_str().unwrap()).replace("DIRTY", "20")).unwrap();
    let out = fsbench().arg("validate").arg(&scenario).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("mkfs.ext4-nodelalloc"), "{err}");
}
