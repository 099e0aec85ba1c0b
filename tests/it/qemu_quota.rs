//! Quota under another kernel, end to end: a small quota scenario runs under a real Debian kernel
//! in qemu, the quota-on cells ran with quota on (read back inside the guest),
//! and `fsbench compare` puts the host run and the guest run side by side.
//!
//! Needs root (the host run formats loop devices), qemu-system-x86_64 and a
//! kernel in `FSBENCH_TEST_KERNEL` (scripts/test.sh downloads one). With
//! FSBENCH_REQUIRE_ROOT_TESTS set it must not skip.

use std::path::{Path, PathBuf};

use crate::support::{crate_root, is_root, skip};

/// The kernel image to boot, or None after skipping `test` (see [`skip`]).
pub(crate) fn kernel_or_skip(test: &str) -> Option<PathBuf> {
    let why = if !is_root() {
        "needs root (the host run uses loop devices and mount)".to_string()
    } else if fsbench::qemu::vm::find_qemu().is_none() {
        "qemu-system-x86_64 not installed (apt-get install qemu-system-x86)".to_string()
    } else {
        match std::env::var_os("FSBENCH_TEST_KERNEL").map(PathBuf::from) {
            Some(k) if k.is_file() => return Some(k),
            Some(k) => format!("FSBENCH_TEST_KERNEL={} is not a file", k.display()),
            None => "FSBENCH_TEST_KERNEL is not set (scripts/test.sh downloads a Debian kernel)".to_string(),
        }
    };
    skip(test, &why);
    None
}

/// Run fsbench and show its command line and stderr in the test's output.
fn run_fsbench(args: &[&str]) -> std::process::Output {
    let out = crate::support::fsbench().args(args).output().unwrap();
    eprintln!("$ fsbench {}\n{}", args.join(" "), String::from_utf8_lossy(&out.stderr));
    out
}

/// The one run directory under `<out>/quota-qemu/` whose run.json has this label.
fn run_dir(out: &Path, label: &str) -> PathBuf {
    let runs: Vec<PathBuf> = std::fs::read_dir(out.join("quota-qemu"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let meta: serde_json::Value = serde_json::from_slice(&std::fs::read(p.join("run.json")).unwrap()).unwrap();
            meta["label"] == label
        })
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs[0].clone()
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn quota_scenario_runs_under_a_debian_kernel_and_compares_with_the_host() {
    let Some(kernel) = kernel_or_skip(&test_name!()) else { return };
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("results");
    let out_s = out.to_str().unwrap();
    let work = t.path().join("work");
    let scenario = crate_root().join("scenarios/quota-qemu.toml");
    let scenario = scenario.to_str().unwrap();

    // The host kernel: quota-off cells only (it lacks quota format v2).
    let host = run_fsbench(&[
        "run",
        scenario,
        "--out",
        out_s,
        "--workdir",
        work.to_str().unwrap(),
        "--label",
        "HOST",
        "--only",
        "quota=off",
        "-q",
        // What is tested is the kernel path, not the noise: on a loaded CI host every
        // repetition was once judged disturbed and the run gave no number (exit 1).
        "--set",
        "workload.disturbance=off",
    ]);
    assert_eq!(host.status.code(), Some(0));

    // The guest kernel: every cell, quota on included.
    let started = std::time::Instant::now();
    // --strict under kernels counts the guests' skipped cells: none here, so it passes.
    let deb = format!("DEB={}", kernel.display());
    let guest = run_fsbench(&[
        "run",
        scenario,
        "--out",
        out_s,
        "--kernel",
        &deb,
        "--strict",
        "--set",
        "workload.disturbance=off",
    ]);
    let elapsed = started.elapsed();
    assert_eq!(guest.status.code(), Some(0), "guest run failed");
    eprintln!("guest run (16 cells) took {elapsed:?}");

    let dir = run_dir(&out, "DEB");
    let meta: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("run.json")).unwrap()).unwrap();
    // Host info is the guest's own uname, not the host's.
    let host_release = nix::sys::utsname::uname().unwrap().release().to_string_lossy().into_owned();
    let guest_release = meta["host"]["kernel_release"].as_str().unwrap();
    assert_ne!(guest_release, host_release);
    assert!(kernel.to_string_lossy().ends_with(guest_release), "{guest_release} vs {}", kernel.display());
    assert!(meta["host"]["kernel_cmdline"].as_str().unwrap().contains("fsbench.accel="));

    let mut on = 0;
    for e in std::fs::read_dir(dir.join("cells")).unwrap() {
        let c: serde_json::Value = serde_json::from_slice(&std::fs::read(e.unwrap().path()).unwrap()).unwrap();
        let id = c["id"].as_str().unwrap();
        assert_eq!(c["status"], "ok", "{id}: {c}");
        let states: Vec<&str> =
            c["filesystems"].as_array().unwrap().iter().map(|f| f["quota_state"].as_str().unwrap_or("")).collect();
        if c["params"]["quota"] == "on" {
            on += 1;
            assert!(states.iter().all(|s| *s == "user=on group=on"), "{id}: quota state {states:?}");
        } else {
            assert!(states.iter().all(|s| *s == "user=off group=off"), "{id}: quota state {states:?}");
        }
        assert!(c["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().contains("ran in qemu")), "{id}");
    }
    assert_eq!(on, 8, "ext4+ext2 x 1,2 tasks x 2 tests with quota on");

    // compare: host kernel vs guest kernel on the quota-off cells.
    let hdir = run_dir(&out, "HOST");
    let cmp = run_fsbench(&["compare", &format!("HOST={}", hdir.display()), &format!("DEB={}", dir.display())]);
    assert_eq!(cmp.status.code(), Some(0));
    let text = String::from_utf8_lossy(&cmp.stdout);
    eprintln!("{text}");
    assert!(text.contains("HOST") && text.contains("DEB"), "{text}");
    assert!(text.contains("ext4-S-qoff") || text.contains("ext4"), "{text}");
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn a_kernel_without_init_panics_and_the_panic_reaches_the_user() {
    let Some(kernel) = kernel_or_skip(&test_name!()) else { return };
    let t = tempfile::tempdir().unwrap();
    // A later rdinit= wins: the kernel finds no init and panics; with panic=-1 and -no-reboot qemu exits.
    let arg = format!("BROKEN={},cmdline=rdinit=/no-such-init init=/no-such-init", kernel.display());
    let out = run_fsbench(&[
        "run",
        "quickstart",
        "--only",
        "fs=ext4,tasks=1,test=open_close",
        "--out",
        t.path().to_str().unwrap(),
        "--kernel",
        &arg,
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Kernel panic"), "{stderr}");
}

/// Seed 000 explained (`scenarios/quota-explain.toml`): under a kernel with quota format v2,
/// quota off against on as the arms of one paired run, every pair profiled in the guest;
/// the profile diff of chown and of create_unlink has the quota code at its top.
#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn quota_on_is_explained_by_the_quota_code_in_the_profile_diff() {
    let Some(kernel) = kernel_or_skip(&test_name!()) else { return };
    if let Err(why) = fsbench::profile::detect(&fsbench::profile::Probe::host()) {
        return skip(&test_name!(), &format!("no profiler here: {why}"));
    }
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("results");
    let scenario = crate_root().join("scenarios/quota-explain.toml");
    let deb = format!("DEB={}", kernel.display());
    let guest = run_fsbench(&[
        "run",
        scenario.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--workdir",
        t.path().join("work").to_str().unwrap(),
        "--kernel",
        &deb,
        "-q",
        "--set",
        "workload.disturbance=off",
    ]);
    assert_eq!(guest.status.code(), Some(0), "guest run failed");
    let runs: Vec<PathBuf> = std::fs::read_dir(out.join("quota-explain")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let report = crate::support::fsbench().arg("report").arg(&runs[0]).output().unwrap();
    assert!(report.status.success(), "{}", String::from_utf8_lossy(&report.stderr));
    let text = String::from_utf8_lossy(&report.stdout).into_owned();
    for test in ["chown", "create_unlink"] {
        let title = format!("Profile diff of ext4-S-t1-{test} (off → on)");
        let at = text.find(&title).unwrap_or_else(|| panic!("no {title}:\n{text}"));
        let section = &text[at..];
        let section =
            &section[..section[title.len()..].find("Profile diff of").map_or(section.len(), |i| i + title.len())];
        assert!(section.contains("across 8 pairs of profiles"), "{section}");
        let grown = section.find("function (grew)").unwrap_or_else(|| panic!("nothing grew:\n{section}"));
        let top = section[grown..].lines().nth(1).and_then(|l| l.split_whitespace().next()).unwrap_or("");
        assert!(top.contains("dquot") || top.starts_with("dq"), "{test}: the top grown function is {top}:\n{section}");
    }
}
