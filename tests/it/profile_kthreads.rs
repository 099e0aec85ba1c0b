//! `profile = "cpu+offcpu+kthreads"` on a real paired run: the kernel threads' stacks
//! (journal commits, the loop device's flushes) beside the workers', and what
//! `barrier=0` takes away seen where it happens. ext4 on a loop device over a file on the
//! host's disk (on tmpfs a flush costs nothing), default mount against `barrier=0`,
//! `rm -rf / untar / sync` steps four times a window, 8 profiled pairs: the off-CPU diff
//! lists the flush side as shrunk in the kernel threads: the journal commit waiting for
//! its flushed block (`jbd2_journal_commit_transaction` in `kjournald2`) or the loop
//! device fsyncing its backing file (`loop_process_work`).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::kernel::assert_no_leaks;
use crate::support::sandbox::Sandbox;
use crate::support::skip;

/// A loop device over a sparse file, detached however the test ends.
struct DiskLoop(PathBuf);

impl DiskLoop {
    fn attach(image: &Path, bytes: u64) -> DiskLoop {
        std::fs::File::create(image).unwrap().set_len(bytes).unwrap();
        let out = Command::new("losetup").args(["-f", "--show"]).arg(image).output().unwrap();
        assert!(out.status.success(), "losetup: {}", String::from_utf8_lossy(&out.stderr));
        DiskLoop(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
    }
}

impl Drop for DiskLoop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.0).status();
    }
}

/// The filesystem type that holds `dir` (`findmnt -T`).
fn fs_type_of(dir: &Path) -> String {
    let out = Command::new("findmnt").args(["-n", "-o", "FSTYPE", "-T"]).arg(dir).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn scenario(device: &Path) -> String {
    format!(
        r#"schema = 1
name = "flush"
[matrix]
fs = ["barrier", "nobarrier"]
layout = ["S"]
tasks = [1]
[filesystems.barrier]
type = "ext4"
mkfs = ["-E", "lazy_itable_init=0,lazy_journal_init=0"]
[filesystems.nobarrier]
type = "ext4"
mkfs = ["-E", "lazy_itable_init=0,lazy_journal_init=0"]
mount = ["barrier=0"]
[backing]
kind = "device"
path = "{}"
[archive]
generate = "linux-2.5.63"
scale = 0.05
on_target = true
[workload]
kind = "steps"
iterations = 1
steps = [
{}]
disturbance = "off"
profile = "cpu+offcpu+kthreads"
[compare]
arms = "fs"
pairs = {{ min = 8, max = 8 }}
seed = 1
"#,
        device.display(),
        // Four commits a window: one (a 50 ms window) left the diff undecided beside a
        // loaded CI run sharing the disk, where one commit's wait ranged from 4 to 45 ms.
        "  { op = \"rm_rf\", path = \"{archive.top}\" },\n  { op = \"untar\" },\n  { op = \"sync\" },\n".repeat(4)
    )
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn barrier_off_shrinks_the_flush_side_in_the_kernel_threads() {
    skip_unless_root!();
    if let Err(why) = fsbench::profile::detect(&fsbench::profile::Probe::host()) {
        return skip(&test_name!(), &format!("no profiler here: {why}"));
    }
    // The image on the host's disk, not on a tmpfs: /var/tmp is the disk's on this machine.
    let disk = tempfile::Builder::new().prefix("fsbench-test-flush-").tempdir_in("/var/tmp").unwrap();
    let fs_type = fs_type_of(disk.path());
    if fs_type == "tmpfs" || fs_type.is_empty() {
        return skip(&test_name!(), &format!("/var/tmp is on `{fs_type}`: a flush there costs nothing"));
    }
    let dev = DiskLoop::attach(&disk.path().join("img"), 512 << 20);
    let sb = Sandbox::new("fsbench-prof-kthreads-");
    let (run, _) = sb.run_scenario_with("flush.toml", &scenario(&dev.0), &["--allow-device", dev.0.to_str().unwrap()]);
    assert_no_leaks(sb.path());

    // The kernel threads are in the stored profiles, merged by kind: the journal thread's
    // commit waits for its I/O in the barrier arm, off the CPU.
    let off = std::fs::read_to_string(run.join("profiles/barrier-S-qoff-t1.offcpu.folded")).unwrap();
    assert!(off.lines().any(|l| l.starts_with("[jbd2];") && l.contains("jbd2_journal_commit_transaction")), "{off}");
    assert!(off.lines().any(|l| l.starts_with("fsbench;")), "the worker's own waits stay: {off}");
    assert!(!off.lines().any(|l| l.starts_with("perf;") || l.starts_with("[swapper")), "{off}");

    let report = crate::support::fsbench().arg("report").arg(&run).output().unwrap();
    assert!(report.status.success(), "{}", String::from_utf8_lossy(&report.stderr));
    let text = String::from_utf8_lossy(&report.stdout);
    let at = text.find("Off-CPU profile diff of S-qoff-t1 (barrier → nobarrier)").expect(&text);
    let section = &text[at..];
    assert!(section.contains("across 8 pairs of profiles"), "{section}");
    // The flush side shrank where it happens, in the kernel threads: a listed shrunk
    // function (or one on its listed call path) that the barrier arm's kernel threads
    // wait in under the journal commit (kjournald2: its flushed commit block) or the loop
    // device's worker (loop_process_work: a flush is an fsync of the backing file). The
    // diff names them by the functions that carry the change (bit_wait_io, ext4_sync_file,
    // file_write_and_wait_range, ...), its call path cut where a caller stops carrying it.
    // The worker's own `sync` (`ext4_sync_fs` → `jbd2_log_wait_commit`) is listed too on
    // a quiet host, but beside a loaded CI run sharing the disk it drowned in other waits
    // in 2 runs of 5, while the kernel threads' flush was listed in every one.
    let shrunk = shrunk_paths(section);
    let flush_stacks: Vec<Vec<String>> = barrier_offcpu_stacks(&run)
        .into_iter()
        .filter(|s| s[0].starts_with('[') && s.iter().any(|f| f == "kjournald2" || f == "loop_process_work"))
        .collect();
    assert!(!flush_stacks.is_empty(), "the barrier arm has no kernel thread's flush stack");
    let in_flush = |name: &str| flush_stacks.iter().any(|s| s.iter().skip(1).any(|f| f == name));
    assert!(shrunk.iter().any(|f| in_flush(f)), "none of {shrunk:?} is on a kernel thread's flush path:\n{section}");
}

/// Every off-CPU stack (frames, root first) of the barrier arm's profiled pairs.
fn barrier_offcpu_stacks(run: &Path) -> Vec<Vec<String>> {
    let mut stacks = Vec::new();
    for e in std::fs::read_dir(run.join("profiles")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("barrier-") && name.ends_with(".offcpu.folded") {
            for line in std::fs::read_to_string(e.path()).unwrap().lines() {
                let stack = line.rsplit_once(' ').map_or(line, |(s, _)| s);
                stacks.push(stack.split(';').map(str::to_string).collect());
            }
        }
    }
    stacks
}

/// The shrunk functions of a diff section: the rows of its `function (shrank)` table, and
/// the callers on each one's `Call paths` entry (`f ← caller ← caller …+2`).
fn shrunk_paths(section: &str) -> Vec<String> {
    let table = &section[section.find("function (shrank)").expect(section)..];
    let table = &table[..table.find("\n\n").unwrap_or(table.len())];
    let listed: Vec<String> =
        table.lines().skip(1).filter_map(|l| l.split_whitespace().next()).map(str::to_string).collect();
    let mut names = listed.clone();
    if let Some(at) = section.find("Call paths:") {
        let paths = section[at..].split("\n\n").nth(1).unwrap_or("");
        // An entry's first line starts at the margin; its continuation lines are indented.
        let mut current = false;
        for line in paths.lines() {
            if !line.starts_with(' ') {
                current = listed.iter().any(|n| Some(n.as_str()) == line.split_whitespace().next());
            }
            if current {
                let frames = line.split('←').map(str::trim).filter(|f| !f.is_empty() && !f.starts_with('…'));
                names.extend(frames.map(|f| f.split_whitespace().next().unwrap_or(f).to_string()));
            }
        }
    }
    names
}
