//! Kernels as the arms of a paired run (`run --kernel A=… --kernel B=… --paired`): what is
//! refused before anything boots, what `plan` shows, members whose guest gives nothing
//! void their pairs (a stand-in qemu), and, under a real Debian kernel booted twice per
//! pair, one paired run that `gate` reads.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::support::fsbench;

/// A one-cell lat_fs scenario paired on the kernel, `pairs` min = max = 2; `extra` is
/// appended to `[workload]` (before `[compare]`).
fn scenario(dir: &Path, extra: &str, compare: &str) -> PathBuf {
    let text = format!(
        "schema = 1\nname = \"kernel-pairs\"\n[matrix]\nfs = [\"ext4\"]\nlayout = [\"S\"]\nquota = [\"off\"]\n\
         tasks = [1]\ntest = [\"open_close\"]\n[filesystems.ext4]\nmkfs = [\"-E\", \"lazy_itable_init=0,lazy_journal_init=0\"]\n\
         [backing]\nkind = \"tmpfs-loop\"\nimage_size = \"64MiB\"\n[workload]\nkind = \"lat_fs\"\nwarmup = \"10ms\"\n\
         duration = \"100ms\"\nrepetitions = 1\ndisturbance = \"off\"\n{extra}{compare}"
    );
    // A file per call: a test makes several variants in one directory.
    let n = std::fs::read_dir(dir).unwrap().count();
    let p = dir.join(format!("kernel-pairs-{n}.toml"));
    std::fs::write(&p, text).unwrap();
    p
}

const KERNEL_COMPARE: &str = "[compare]\narms = \"kernel\"\npairs = { min = 2, max = 2 }\nseed = 1\n";

fn run_out(args: &[&str]) -> (Option<i32>, String, String) {
    let o = fsbench().args(args).stdin(Stdio::null()).output().unwrap();
    let (out, err) = (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned());
    eprintln!("$ fsbench {}\n{err}", args.join(" "));
    (o.status.code(), out, err)
}

#[test]
fn what_a_kernel_paired_run_cannot_do_is_refused_before_anything_boots() {
    let t = tempfile::tempdir().unwrap();
    let s = scenario(t.path(), "", "");
    let s = s.to_str().unwrap();
    let out = t.path().join("results");
    let out = out.to_str().unwrap();
    let (code, _, err) = run_out(&["run", s, "--out", out, "--kernel", "A=/x", "--paired"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("two or more"), "{err}");
    let (code, _, err) = run_out(&["run", s, "--out", out, "--paired"]);
    assert_eq!(code, Some(2), "{err}");
    let (code, _, err) = run_out(&["run", s, "--out", out, "--kernel", "A=/x", "--kernel", "A=/y", "--paired"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("given twice"), "{err}");
    let rounds = scenario(t.path(), "rounds = 2\n", "");
    let (code, _, err) =
        run_out(&["run", rounds.to_str().unwrap(), "--out", out, "--kernel", "A=/x", "--kernel", "B=/x", "--paired"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("rounds = 2"), "{err}");
    let on_fs = t.path().join("fs.toml");
    std::fs::write(
        &on_fs,
        std::fs::read_to_string(s)
            .unwrap()
            .replace("fs = [\"ext4\"]", "fs = [\"ext4\", \"ext2\"]")
            .replace("disturbance = \"off\"\n", "disturbance = \"off\"\n[compare]\narms = \"fs\"\n"),
    )
    .unwrap();
    let (code, _, err) =
        run_out(&["run", on_fs.to_str().unwrap(), "--out", out, "--kernel", "A=/x", "--kernel", "B=/x", "--paired"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("pairs the values of `fs`"), "{err}");
    let (code, _, err) = run_out(&["run", "--resume", out, "--paired"]);
    assert_eq!(code, Some(2), "{err}");
    let (code, _, err) =
        run_out(&["run", s, "--out", out, "--kernel", "A=/x", "--kernel", "B=/x", "--paired", "--shard", "1/2"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--shard"), "{err}");
    // `[compare] arms = "kernel"` on the host alone, and under kernels without --paired.
    let kc = scenario(t.path(), "", KERNEL_COMPARE);
    let (code, _, err) = run_out(&["run", kc.to_str().unwrap(), "--out", out]);
    assert_eq!(code, Some(2), "{err}");
    let (code, _, err) = run_out(&["run", kc.to_str().unwrap(), "--out", out, "--kernel", "A=/x"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("add --paired"), "{err}");
    assert!(!Path::new(out).exists(), "a refused run made no run directory");
}

#[test]
fn plan_shows_the_kernel_pair_groups() {
    let t = tempfile::tempdir().unwrap();
    let s = scenario(t.path(), "", "");
    let (code, stdout, err) =
        run_out(&["plan", s.to_str().unwrap(), "--kernel", "OLD=/x", "--kernel", "NEW=/y", "--paired"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(stdout.contains("paired: arms kernel = OLD, NEW (baseline first); 6–32 pairs per group"), "{stdout}");
    assert!(stdout.contains("pair groups (1): ext4-S-qoff-t1-open_close"), "{stdout}");
    assert!(stdout.contains("freshly booted qemu guest"), "{stdout}");
    // One group of two arms: 6 pairs at best, 32 and lat_fs's 3 reruns at worst, a boot a member.
    let words = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("12 boots at best, 70 at worst"), "{stdout}");
    // `--only kernel=…` picks the arms out of the kernels, in their order.
    let three = ["--kernel", "OLD=/x", "--kernel", "MID=/x", "--kernel", "NEW=/y", "--paired"];
    let (code, stdout, err) =
        run_out(&[&["plan", s.to_str().unwrap(), "--only", "kernel=NEW,OLD"][..], &three[..]].concat());
    assert_eq!(code, Some(0), "{err}");
    assert!(stdout.contains("paired: arms kernel = OLD, NEW (baseline first)"), "{stdout}");
    let (code, _, err) = run_out(&[&["plan", s.to_str().unwrap(), "--only", "kernel=NEXT"][..], &three[..]].concat());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no kernel is labelled `NEXT`"), "{err}");
}

/// A fake kernel tree (image + empty modules.dep) and a stand-in qemu that panics at once.
fn fake_kernel(root: &Path) -> (PathBuf, PathBuf) {
    std::fs::create_dir_all(root.join("k/boot")).unwrap();
    std::fs::create_dir_all(root.join("k/lib/modules/9.9.9")).unwrap();
    std::fs::write(root.join("k/lib/modules/9.9.9/modules.dep"), "").unwrap();
    let image = root.join("k/boot/vmlinuz-9.9.9");
    std::fs::write(&image, b"not really a kernel").unwrap();
    let qemu = root.join("qemu");
    std::fs::write(&qemu, "#!/bin/sh\necho '[    1.0] Kernel panic - not syncing: fake'\nexit 0\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&qemu, std::fs::Permissions::from_mode(0o755)).unwrap();
    (image, qemu)
}

#[test]
fn a_member_whose_guest_gives_nothing_voids_its_pair_and_the_run_says_why() {
    let t = tempfile::tempdir().unwrap();
    let (image, qemu) = fake_kernel(t.path());
    let s = scenario(t.path(), "max_reruns = 0\n", KERNEL_COMPARE);
    let out = t.path().join("results");
    let work = t.path().join("work");
    let kernel = |l: &str| format!("{l}={}", image.display());
    let o = fsbench()
        .args(["run", s.to_str().unwrap(), "--paired", "-q", "--kernel", &kernel("A"), "--kernel", &kernel("B")])
        .arg("--out")
        .arg(&out)
        .arg("--workdir")
        .arg(&work)
        .env("FSBENCH_QEMU", &qemu)
        .env("FSBENCH_QEMU_BOOT_TIMEOUT", "5")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    let runs: Vec<PathBuf> = std::fs::read_dir(out.join("kernel-pairs")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(runs.len(), 1, "one run for the whole paired run: {runs:?}");
    let meta: serde_json::Value = serde_json::from_slice(&std::fs::read(runs[0].join("run.json")).unwrap()).unwrap();
    assert_eq!(meta["pair_seed"], 1);
    assert_eq!(meta["kernels"][1]["label"], "B");
    for k in ["A", "B"] {
        let cell = runs[0].join(format!("cells/ext4-S-qoff-t1-open_close-kernel={k}.json"));
        let c: serde_json::Value = serde_json::from_slice(&std::fs::read(&cell).unwrap()).unwrap();
        assert_eq!(c["status"], "failed", "{c}");
        assert!(c["error"].as_str().unwrap().contains("Kernel panic - not syncing: fake"), "{c}");
        assert_eq!(c["pairing"]["axis"], "kernel");
        assert_eq!(c["pairing"]["dropped"].as_array().unwrap().len(), 2, "{c}");
        assert_eq!(c["pairing"]["pairs"].as_array().unwrap().len(), 0, "{c}");
    }
    // Nothing of the members' guests stays behind: no scratch in the work root, no staging.
    let left: Vec<PathBuf> = std::fs::read_dir(&work)
        .map(|rd| rd.map(|e| e.unwrap().path()).filter(|p| !p.ends_with(".journal")).collect())
        .unwrap_or_default();
    assert!(left.iter().all(|p| !p.to_string_lossy().contains("member-")), "{left:?}");

    // `--resume` of a paired run whose files another user changed: refused, nothing rewritten.
    // (A paired run is never resumed: its pairs are decided in one invocation.)
    let cell = runs[0].join("cells/ext4-S-qoff-t1-open_close-kernel=A.json");
    let before = std::fs::read(&cell).unwrap();
    if crate::support::is_root() {
        std::os::unix::fs::chown(&cell, Some(65534), Some(65534)).unwrap();
    }
    let resume = |extra: &[&str]| {
        let o = fsbench()
            .args(["run", "--resume"])
            .arg(&runs[0])
            .args(extra)
            .arg("--workdir")
            .arg(&work)
            .env("FSBENCH_QEMU", &qemu)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned())
    };
    for extra in [&[][..], &["--paired"][..], &["--paired", "--kernel", &kernel("A"), "--kernel", &kernel("B")][..]] {
        let (code, err) = resume(extra);
        assert_eq!(code, Some(2), "{extra:?}: {err}");
    }
    assert_eq!(std::fs::read(&cell).unwrap(), before, "a refused resume rewrote a cell");
}

#[test]
fn ctrl_c_during_a_member_stops_qemu_and_keeps_the_run() {
    let t = tempfile::tempdir().unwrap();
    let (image, qemu) = fake_kernel(t.path());
    // A guest that hangs after saying something: the member is in flight when the signal comes.
    std::fs::write(
        &qemu,
        format!("#!/bin/sh\necho $$ > '{}'\necho booting\nexec sleep 600\n", t.path().join("pid").display()),
    )
    .unwrap();
    let s = scenario(t.path(), "", KERNEL_COMPARE);
    let out = t.path().join("results");
    let kernel = |l: &str| format!("{l}={}", image.display());
    let child = fsbench()
        .args(["run", s.to_str().unwrap(), "--paired", "-q", "--kernel", &kernel("A"), "--kernel", &kernel("B")])
        .arg("--out")
        .arg(&out)
        .arg("--workdir")
        .arg(t.path().join("work"))
        .env("FSBENCH_QEMU", &qemu)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = crate::support::poll(std::time::Duration::from_secs(60), std::time::Duration::from_millis(50), || {
        std::fs::read_to_string(t.path().join("pid")).ok()?.trim().parse::<i32>().ok()
    })
    .expect("the stand-in qemu never started");
    std::thread::sleep(std::time::Duration::from_millis(300));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{stderr}");
    assert!(nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_err(), "qemu (pid {pid}) still runs");
    assert!(stderr.contains("not resumed: run it again"), "{stderr}");
    let runs: Vec<PathBuf> = std::fs::read_dir(out.join("kernel-pairs")).unwrap().map(|e| e.unwrap().path()).collect();
    let meta: serde_json::Value = serde_json::from_slice(&std::fs::read(runs[0].join("run.json")).unwrap()).unwrap();
    assert_eq!(meta["interrupted"], true, "{meta}");
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn one_kernel_under_two_labels_is_one_paired_run_that_gate_reads() {
    let Some(image) = crate::qemu_quota::kernel_or_skip(&test_name!()) else { return };
    let t = tempfile::tempdir().unwrap();
    // Profiled too: each guest profiles its member with the host's perf packed into it.
    let s = scenario(t.path(), "profile = \"cpu\"\n", KERNEL_COMPARE);
    let out = t.path().join("results");
    let work = t.path().join("work");
    let kernel = |l: &str| format!("{l}={}", image.display());
    let host_perf = fsbench::profile::detect(&fsbench::profile::Probe::host()).is_ok();
    let started = std::time::Instant::now();
    let o = fsbench()
        .args(["run", s.to_str().unwrap(), "--paired", "--kernel", &kernel("A"), "--kernel", &kernel("B")])
        .arg("--out")
        .arg(&out)
        .arg("--workdir")
        .arg(&work)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    eprintln!("{stderr}\n(4 boots in {:?})", started.elapsed());
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    let runs: Vec<PathBuf> = std::fs::read_dir(out.join("kernel-pairs")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let run = &runs[0];
    let meta: serde_json::Value = serde_json::from_slice(&std::fs::read(run.join("run.json")).unwrap()).unwrap();
    assert_eq!(meta["pair_seed"], 1);
    for (i, k) in ["A", "B"].iter().enumerate() {
        assert_eq!(meta["kernels"][i]["label"], *k);
        assert_eq!(meta["kernels"][i]["image"], image.display().to_string());
        assert!(["kvm", "tcg"].contains(&meta["kernels"][i]["accel"].as_str().unwrap()), "{meta}");
        let cell = run.join(format!("cells/ext4-S-qoff-t1-open_close-kernel={k}.json"));
        let c: serde_json::Value = serde_json::from_slice(&std::fs::read(&cell).unwrap()).unwrap();
        assert_eq!(c["status"], "ok", "{c}");
        assert_eq!(c["params"]["kernel"], *k);
        let p = &c["pairing"];
        assert_eq!((p["axis"].as_str(), p["arm"].as_u64()), (Some("kernel"), Some(i as u64)), "{c}");
        assert_eq!(p["pairs"].as_array().unwrap().len(), 2, "{c}");
        let notes = c["notes"].to_string();
        assert!(notes.contains("ran in qemu (") && notes.contains(&format!("under kernel {k}")), "{notes}");
        // The guest kernel's symbols, named by the guest kernel's release: never the host's.
        let prof = &c["profile"];
        if host_perf {
            let release = image.file_name().unwrap().to_string_lossy().trim_start_matches("vmlinuz-").to_string();
            assert_eq!(prof["kernel_release"].as_str(), Some(release.as_str()), "{prof}");
            let file = run.join(format!("profiles/ext4-S-qoff-t1-open_close-kernel={k}.folded"));
            assert_eq!(prof["file"].as_str(), Some(file.strip_prefix(run).unwrap().to_str().unwrap()), "{prof}");
            let folded = std::fs::read_to_string(&file).unwrap();
            assert!(folded.contains("do_syscall_64"), "no kernel frames in the guest's profile:\n{folded}");
        } else {
            assert!(prof["not_profiled"].as_str().is_some_and(|w| w.contains("guest has no perf")), "{prof}");
        }
    }
    let run_s = run.to_str().unwrap();
    let (code, stdout, err) = run_out(&["gate", run_s]);
    assert!(matches!(code, Some(0 | 1 | 3)), "gate exited {code:?}: {stdout}\n{err}");
    let row = stdout.lines().find(|l| l.contains("ext4-S-qoff-t1-open_close-kernel=B")).unwrap_or_else(|| {
        panic!("no verdict row for kernel B in\n{stdout}\n{err}");
    });
    assert!(["regressed", "improved", "unchanged", "inconclusive"].iter().any(|v| row.contains(v)), "{row}");
    let (code, stdout, err) = run_out(&["report", run_s]);
    assert_eq!(code, Some(0), "{err}");
    assert!(stdout.contains("A-ext4-S-qoff") && stdout.contains("B-ext4-S-qoff"), "{stdout}");
    assert!(stdout.contains("Arms of `kernel`: A (baseline), B"), "{stdout}");
}

/// Untried surfaces of a kernel-paired run, tried: settings a scenario or `--kernel` can reach
/// (guest memory, CPUs) and image paths reached through links another user controls. Each is
/// refused before any boot, naming the kernel and what to change, with exit 2.
#[test]
fn kernel_settings_beyond_the_host_and_images_behind_foreign_links_are_refused_before_boot() {
    let t = tempfile::tempdir().unwrap();
    let (image, qemu) = fake_kernel(t.path());
    let s = scenario(t.path(), "", KERNEL_COMPARE);
    let run = |a: &str, b: &str| {
        let o = fsbench()
            .args(["run", s.to_str().unwrap(), "--paired", "-q", "--kernel", a, "--kernel", b])
            .arg("--out")
            .arg(t.path().join("results"))
            .arg("--workdir")
            .arg(t.path().join("work"))
            .env("FSBENCH_QEMU", &qemu)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned())
    };
    let good = format!("A={}", image.display());
    for (b, says) in [
        (format!("B={},memory=1TiB", image.display()), "guest memory"),
        (format!("B={},cpus=256", image.display()), "cpus 256"),
    ] {
        let (code, err) = run(&good, &b);
        assert_eq!(code, Some(2), "{b}: {err}");
        assert!(err.contains("kernel `B`") && err.contains(says), "{b}: {err}");
    }
    if crate::support::is_root() {
        // A link another user owns: they could re-point it between the check and qemu's open.
        let link = t.path().join("their-vmlinuz");
        std::os::unix::fs::symlink(&image, &link).unwrap();
        std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
        let (code, err) = run(&good, &format!("B={}", link.display()));
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("symbolic link owned by uid 65534"), "{err}");
        // The image in a directory another user can write: they could rename another file over it.
        let drop_box = t.path().join("drop");
        std::fs::create_dir(&drop_box).unwrap();
        std::fs::copy(&image, drop_box.join("vmlinuz-9.9.9")).unwrap();
        std::os::unix::fs::chown(&drop_box, Some(65534), Some(65534)).unwrap();
        let (code, err) = run(
            &good,
            &format!(
                "B={},modules={}",
                drop_box.join("vmlinuz-9.9.9").display(),
                t.path().join("k/lib/modules/9.9.9").display()
            ),
        );
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("owned by uid 65534"), "{err}");
    }
    // Nothing was booted: no member scratch, no run stored.
    assert!(!t.path().join("results/kernel-pairs").exists());
}

/// SIGKILL in the middle of a kernel-paired run: no handler runs. qemu dies with fsbench
/// (parent-death signal); the initramfs and member scratch stay in the work root, and the next
/// run on that work root removes them.
#[test]
fn sigkill_during_a_member_leaves_no_qemu_and_the_next_run_cleans_the_debris() {
    let t = tempfile::tempdir().unwrap();
    let (image, qemu) = fake_kernel(t.path());
    std::fs::write(
        &qemu,
        format!("#!/bin/sh\necho $$ > '{}'\necho booting\nexec sleep 600\n", t.path().join("pid").display()),
    )
    .unwrap();
    let s = scenario(t.path(), "", KERNEL_COMPARE);
    let work = t.path().join("work");
    let kernel = |l: &str| format!("{l}={}", image.display());
    let mut child = fsbench()
        .args(["run", s.to_str().unwrap(), "--paired", "-q", "--kernel", &kernel("A"), "--kernel", &kernel("B")])
        .arg("--out")
        .arg(t.path().join("results"))
        .arg("--workdir")
        .arg(&work)
        .env("FSBENCH_QEMU", &qemu)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The barrier: the stand-in qemu has written its pid, so a member is in flight.
    let pid = crate::support::poll(std::time::Duration::from_secs(60), std::time::Duration::from_millis(20), || {
        std::fs::read_to_string(t.path().join("pid")).ok()?.trim().parse::<i32>().ok()
    })
    .expect("the stand-in qemu never started");
    child.kill().unwrap();
    child.wait().unwrap();
    let alive = |pid: i32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| !s.rsplit_once(')').is_some_and(|(_, r)| r.trim_start().starts_with('Z')))
            .unwrap_or(false)
    };
    let gone = crate::support::poll(std::time::Duration::from_secs(10), std::time::Duration::from_millis(10), || {
        (!alive(pid)).then_some(())
    });
    assert!(gone.is_some(), "qemu (pid {pid}) outlived a SIGKILLed fsbench");
    let debris = |w: &Path| -> Vec<String> {
        walkdir::WalkDir::new(w)
            .into_iter()
            .filter_map(Result::ok)
            .map(|e| e.path().display().to_string())
            .filter(|p| p != &w.display().to_string())
            .collect()
    };
    let before = debris(&work);
    assert!(!before.is_empty(), "the killed run left nothing to clean: the test sees nothing");
    // The next run on the same work root (a quick one on the host) cleans what the killed one left.
    let o = fsbench()
        .args([
            "run",
            "scenarios/quickstart.toml",
            "--set",
            "backing.kind=dir",
            "--only",
            "fs=ext4,tasks=1,test=open_close",
        ])
        .args([
            "--set",
            "workload.warmup=0ms",
            "--set",
            "workload.duration=20ms",
            "--set",
            "workload.repetitions=1",
            "-q",
        ])
        .arg("--out")
        .arg(t.path().join("results-next"))
        .arg("--workdir")
        .arg(&work)
        .current_dir(crate::support::crate_root())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    // 0, or 1 when a loaded machine disturbed the tiny cell: either way it ran, after cleaning.
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{err}");
    assert!(err.contains("cleaned up after an earlier run"), "{err}");
    let after: Vec<String> = debris(&work).into_iter().filter(|p| !p.ends_with(".journal")).collect();
    assert!(after.is_empty(), "left after the next run: {after:?} (the killed run left {before:?})");
}
