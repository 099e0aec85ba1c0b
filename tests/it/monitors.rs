//! The monitors on real kernel objects: a loop device's counters under a known write
//! load, a kernel-untar cell's timeline, per-repetition counters of a quota-smp-like
//! cell, and latency percentiles of all four lat_fs loops.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use fsbench::model::{CellResult, FilesystemInfo};
use fsbench::monitor::Watch;
use fsbench::provision::loopdev::LoopDevice;

use crate::support::kernel::{assert_no_leaks, have_mkfs};
use crate::support::sandbox::Sandbox;
use crate::support::{fsbench, skip};

fn cells(run: &Path) -> Vec<CellResult> {
    let mut out: Vec<CellResult> = std::fs::read_dir(run.join("cells"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .map(|e| serde_json::from_str(&std::fs::read_to_string(e.path()).unwrap()).unwrap())
        .collect();
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out
}

fn the_run(sb: &Sandbox) -> std::path::PathBuf {
    let runs = sb.runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs[0].clone()
}

fn run_ok(sb: &Sandbox, args: &[&str]) {
    let out = sb.fsbench(args).output().unwrap();
    assert!(out.status.success(), "fsbench {args:?}: {}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn o_direct_writes_of_n_mib_show_at_least_n_mib_written_on_the_loop_device() {
    skip_unless_root!();
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("img");
    std::fs::File::create(&image).unwrap().set_len(64 << 20).unwrap();
    let dev = match LoopDevice::attach(&image) {
        Ok(d) => d,
        Err(e) => return skip(&test_name!(), &format!("no loop device: {e}")),
    };
    let fs = FilesystemInfo { device: Some(dev.path().to_string_lossy().into_owned()), ..Default::default() };
    let watch = Watch::for_filesystems(&[fs]);
    assert_eq!(watch.devices.len(), 1, "the loop device is watched");
    assert_eq!(watch.devices[0].name, dev.name());

    const MIB: usize = 1 << 20;
    const N: usize = 8;
    // O_DIRECT needs an aligned buffer: a Vec of u64 is 8-aligned, so over-allocate and align by hand.
    let mut raw = vec![0u8; MIB + 4096];
    let off = raw.as_ptr().align_offset(4096);
    let buf = &mut raw[off..off + MIB];
    buf.fill(0x5a);
    let before = watch.snapshot();
    let mut f = std::fs::OpenOptions::new().write(true).custom_flags(libc::O_DIRECT).open(dev.path()).unwrap();
    for _ in 0..N {
        f.write_all(buf).unwrap();
    }
    f.sync_all().unwrap();
    drop(f);
    let c = before.delta(&watch.snapshot());
    dev.detach().unwrap();

    let d = &c.devices[0];
    assert!(c.bytes_written() >= (N * MIB) as u64, "wrote {N} MiB, the device counted {} bytes", c.bytes_written());
    // Other helpers' loop devices are not ours: the count is this device's alone, so not wildly more.
    assert!(c.bytes_written() < (2 * N * MIB) as u64, "{c:?}");
    assert!(d.write_ios >= 1 && d.write_ios <= (N * MIB / 512) as u64, "{d:?}");
    assert!(c.window_us > 0 && c.context_switches.is_some() && c.vm.is_some(), "{c:?}");
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn kernel_untar_on_ext2_records_device_and_dirty_memory_per_step_and_plots_the_timeline() {
    skip_unless_root!();
    if !have_mkfs("ext2", &test_name!()) {
        return;
    }
    let sb = Sandbox::new("fsbench-mon-");
    run_ok(
        &sb,
        &[
            "run",
            "scenarios/kernel-untar.toml",
            "--only",
            "fs=ext2",
            "--set",
            "archive.scale=0.1",
            "--set",
            "workload.iterations=2",
        ],
    );
    assert_no_leaks(sb.path());
    let run = the_run(&sb);
    let cell = cells(&run).pop().unwrap();
    let steps = cell.steps.expect("a steps cell");
    let timeline = steps.timeline.as_ref().expect("monitors are on by default");
    assert_eq!(timeline.devices.len(), 1, "the cell's loop device: {timeline:?}");
    assert!(timeline.samples.len() >= 2 * 3, "at least a sample per step boundary");
    for (i, it) in steps.iterations.iter().enumerate() {
        let untar = &it[1];
        let sync = &it[2];
        let (u, s) = (untar.counters.as_ref().unwrap(), sync.counters.as_ref().unwrap());
        // The untar dirties the page cache (the tree is ~16 MB); sync pushes it to the device.
        assert!(u.peak_dirty_kib.unwrap() > 0, "iteration {}: {u:?}", i + 1);
        assert!(u.bytes_written() + s.bytes_written() > 4_000_000, "iteration {}: untar {u:?} sync {s:?}", i + 1);
        assert!(s.write_ios() > 0, "{s:?}");
        assert!(untar.start_ms.unwrap() <= sync.start_ms.unwrap());
    }

    let report = fsbench().arg("report").arg(&run).output().unwrap();
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(text.contains("devices and dirty memory per step"), "{text}");
    assert!(text.contains("peak dirty MB") && text.contains("util %"), "{text}");
    let csv = fsbench().args(["report", "--format", "csv"]).arg(&run).output().unwrap();
    let csv = String::from_utf8_lossy(&csv.stdout);
    assert!(csv.lines().next().unwrap().ends_with("mb_written,write_ios,peak_dirty_mb,util_percent"), "{csv}");
    let md = fsbench().args(["report", "--format", "markdown"]).arg(&run).output().unwrap();
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(md.contains("| CPU | MB written | write IOs | peak dirty MB | util % |"), "{md}");
    let json = fsbench().args(["report", "--format", "json"]).arg(&run).output().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert!(json["groups"][0]["timeline"]["samples"].as_array().is_some_and(|s| !s.is_empty()), "{json}");
    assert!(json["groups"][0]["iterations"][0][2]["counters"]["devices"][0]["write_ios"].as_u64().unwrap() > 0);
    let plots = sb.path().join("plots");
    let p = fsbench().arg("report").arg(&run).arg("--plot").arg(&plots).output().unwrap();
    assert!(p.status.success());
    let png = std::fs::read(plots.join("run-ext2-timeline.png")).expect("a timeline plot");
    assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000);
    let svg = std::fs::read_to_string(plots.join("run-ext2-timeline.svg")).unwrap();
    assert!(svg.contains("Dirty MB") && svg.contains("untar"), "labels and step boundaries are drawn");
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn a_quota_smp_like_cell_records_write_ios_for_every_repetition() {
    skip_unless_root!();
    let sb = Sandbox::new("fsbench-mon-");
    run_ok(
        &sb,
        &[
            "run",
            "scenarios/quota-smp.toml",
            "--only",
            "fs=ext2,layout=M,quota=off,tasks=2,test=write_truncate",
            "--set",
            "workload.warmup=10ms",
            "--set",
            "workload.duration=50ms",
            "--set",
            "workload.repetitions=3",
        ],
    );
    assert_no_leaks(sb.path());
    let run = the_run(&sb);
    let cell = cells(&run).pop().unwrap();
    let l = cell.latfs.expect("a lat_fs cell");
    assert_eq!(l.repetitions.len(), 3);
    for r in &l.repetitions {
        let c = r.counters.as_ref().expect("counters per repetition");
        // Layout M with 2 tasks: two filesystems, two loop devices.
        assert_eq!(c.devices.len(), 2, "{c:?}");
        assert_ne!(c.devices[0].device, c.devices[1].device);
        // The window spans the warm-up and the timed part.
        assert!(c.window_us >= 60_000, "{c:?}");
    }
    let report = fsbench().arg("report").arg(&run).output().unwrap();
    let text = String::from_utf8_lossy(&report.stdout);
    // Three numbers in the per-repetition column, whatever they are; a cell whose devices
    // saw no write in any repetition is left out of the table and counted below it.
    match text.lines().find(|l| l.contains("ext2-M-qoff-t2-write_truncate") && l.starts_with("run ")) {
        Some(row) => {
            let ios: Vec<&str> = row.split_whitespace().skip(2).take(3).collect();
            assert!(ios.iter().all(|w| w.parse::<u64>().is_ok()), "{row}");
        }
        None => assert!(
            text.contains("block devices saw no write and no busy time in any repetition")
                || text.contains("No cell's block devices saw a write or busy time in any repetition"),
            "{text}"
        ),
    }
    assert!(text.contains("Kernel counters per repetition"), "{text}");
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn histogram_mode_gives_percentiles_for_all_four_tests_and_gates_on_p99() {
    // The chown loop needs CAP_CHOWN; backing `dir` needs nothing else.
    skip_unless_root!();
    let sb = Sandbox::new("fsbench-mon-");
    let args = [
        "run",
        "scenarios/quickstart.toml",
        "--only",
        "fs=ext4,tasks=1",
        "--set",
        "backing.kind=dir",
        "--set",
        "workload.latency=histogram",
        // Every timed iteration is counted below: no repetition may be set aside as disturbed.
        "--set",
        "workload.disturbance=off",
        "--set",
        "workload.warmup=10ms",
        "--set",
        "workload.duration=50ms",
        "--set",
        "workload.repetitions=2",
    ];
    run_ok(&sb, &args);
    let run = the_run(&sb);
    let all = cells(&run);
    let measured: Vec<&CellResult> = all.iter().filter(|c| c.latfs.is_some()).collect();
    assert_eq!(measured.len(), 4, "{all:#?}");
    for c in &measured {
        let l = c.latfs.as_ref().unwrap();
        let d = l.latency_dist.as_ref().expect("a merged distribution");
        let iterations: u64 = l.repetitions.iter().flat_map(|r| &r.tasks).map(|t| t.iterations).sum();
        assert_eq!(d.count, iterations, "{}: every timed iteration is in the histogram", c.id);
        assert!(d.min_ns > 0 && d.p50_ns <= d.p90_ns && d.p90_ns <= d.p99_ns, "{}: {d:?}", c.id);
        assert!(d.p99_ns <= d.p999_ns && d.p999_ns <= d.max_ns, "{}: {d:?}", c.id);
        assert!(l.repetitions.iter().all(|r| r.latency_dist.is_some()));
    }
    let report = fsbench().arg("report").arg(&run).output().unwrap();
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(text.contains("p99.9 µs"), "{text}");
    let gate = fsbench()
        .args(["gate", "--metric", "p99", "--baseline"])
        .arg(&run)
        .arg("--candidate")
        .arg(&run)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&gate.stdout);
    assert_eq!(gate.status.code(), Some(0), "{out}{}", String::from_utf8_lossy(&gate.stderr));
    assert!(out.contains("p99"), "{out}");
    let cmp = fsbench()
        .args(["compare", "--metric", "p99"])
        .arg(format!("A={}", run.display()))
        .arg(format!("B={}", run.display()))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&cmp.stdout);
    assert!(cmp.status.success(), "{}", String::from_utf8_lossy(&cmp.stderr));
    assert!(text.contains("p99 latency of one operation in µs") && text.contains("A-ext4-S-qoff"), "{text}");
    let bad = fsbench()
        .args(["gate", "--metric", "p42", "--baseline"])
        .arg(&run)
        .arg("--candidate")
        .arg(&run)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("p99.9"), "the error lists the percentiles");
}
