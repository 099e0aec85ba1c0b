//! Profiles of real cells (`run --profile`): one profiled repetition per cell under
//! `perf record`, its workers' folded stacks stored beside the result, the timed
//! repetitions untouched; and a host without perf runs the cell unprofiled and says why.

use std::path::Path;

use fsbench::model::CellResult;

use crate::support::kernel::assert_no_leaks;
use crate::support::sandbox::Sandbox;
use crate::support::skip;

fn only_cell(run: &Path) -> CellResult {
    let mut cells: Vec<CellResult> = std::fs::read_dir(run.join("cells"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| serde_json::from_str(&std::fs::read_to_string(e.path()).unwrap()).unwrap())
        .collect();
    assert_eq!(cells.len(), 1);
    cells.pop().unwrap()
}

fn perf_works() -> Result<(), String> {
    fsbench::profile::detect(&fsbench::profile::Probe::host()).map(drop)
}

const ARGS: [&str; 11] = [
    "run",
    "scenarios/quickstart.toml",
    "--only",
    "fs=ext4,tasks=1,test=write_truncate",
    "--set",
    "workload.warmup=20ms",
    "--set",
    "workload.duration=300ms",
    "--set",
    "workload.repetitions=2",
    "--profile",
];

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn a_profiled_write_truncate_cell_stores_its_workers_ext4_write_path_and_keeps_its_repetitions() {
    skip_unless_root!();
    if let Err(why) = perf_works() {
        return skip(&test_name!(), &format!("no profiler here: {why}"));
    }
    let sb = Sandbox::new("fsbench-prof-");
    let out = sb.fsbench(&ARGS).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_no_leaks(sb.path());
    // perf's scratch (its data, its control FIFOs) went with the run's work directory.
    let left: Vec<_> = walkdir::WalkDir::new(sb.work()).min_depth(1).into_iter().filter_map(|e| e.ok()).collect();
    assert!(left.is_empty(), "left in the work root: {left:?}");
    let run = sb.runs().pop().unwrap();
    let cell = only_cell(&run);
    // The profiled repetition is not one of the timed ones.
    assert_eq!(cell.latfs.as_ref().unwrap().repetitions.len(), 2, "{:?}", cell.notes);
    let p = cell.profile.expect("a profile record");
    assert_eq!(p.not_profiled, None, "{:?}", cell.notes);
    assert!(matches!(p.event.as_deref(), Some("cpu-clock" | "cycles")), "{p:?}");
    assert_eq!(p.frequency_hz, Some(999));
    assert!(p.kernel_release.is_some() && p.samples > 0, "{p:?}");
    let file = p.file.expect("the folded stacks' file");
    assert_eq!(file, "profiles/ext4-S-qoff-t1-write_truncate.folded");
    let text = std::fs::read_to_string(run.join(&file)).unwrap();
    assert!(text.len() <= fsbench::profile::folded::MAX_STORED_BYTES);
    let folded = fsbench::profile::folded::parse_untrusted(text.as_bytes()).unwrap();
    assert_eq!(folded.samples(), p.samples);
    // The worker's pwrite/ftruncate loop on ext4, kernel frames symbolised; never the idle loop.
    assert!(text.lines().any(|l| l.contains("ext4_")), "{text}");
    assert!(!text.contains("do_idle") && !text.contains("cpuidle"), "{text}");
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn without_perf_the_cell_runs_unprofiled_and_says_why() {
    skip_unless_root!();
    let sb = Sandbox::new("fsbench-prof-");
    // A PATH without perf (but with mkfs and mount).
    let bin = sb.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for tool in ["mkfs.ext4", "mke2fs", "mkfs.ext2", "dumpe2fs", "mount", "umount", "losetup"] {
        if let Ok(p) = which(tool) {
            std::os::unix::fs::symlink(p, bin.join(tool)).unwrap();
        }
    }
    let out = sb.fsbench(&ARGS).env("PATH", &bin).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_no_leaks(sb.path());
    let run = sb.runs().pop().unwrap();
    let cell = only_cell(&run);
    assert_eq!(cell.latfs.as_ref().unwrap().repetitions.len(), 2);
    let why = cell.profile.and_then(|p| p.not_profiled).expect("a reason");
    assert!(why.contains("perf is not installed"), "{why}");
    assert!(cell.notes.iter().any(|n| n.starts_with("not profiled: perf is not installed")), "{:?}", cell.notes);
    assert!(!run.join("profiles").exists());
}

fn which(tool: &str) -> Result<std::path::PathBuf, ()> {
    for dir in ["/usr/sbin", "/usr/bin", "/sbin", "/bin"] {
        let p = Path::new(dir).join(tool);
        if p.exists() {
            return Ok(p);
        }
    }
    Err(())
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn data_journal_against_data_ordered_grows_the_journalled_write_path_and_shrinks_delalloc() {
    skip_unless_root!();
    if let Err(why) = perf_works() {
        return skip(&test_name!(), &format!("no profiler here: {why}"));
    }
    let sb = Sandbox::new("fsbench-prof-");
    for mode in ["ordered", "journal"] {
        let mount = format!("filesystems.ext4.mount=[\"barrier=0\",\"data={mode}\"]");
        let mut args = ARGS.to_vec();
        // A 3 s window: enough samples of the worker on a loaded 2-CPU host for the test per function.
        args.extend([
            "--label",
            mode,
            "--set",
            &mount,
            "--set",
            "workload.duration=3s",
            "--set",
            "workload.repetitions=1",
        ]);
        let out = sb.fsbench(&args).output().unwrap();
        assert!(out.status.success(), "{mode}: {}", String::from_utf8_lossy(&out.stderr));
    }
    assert_no_leaks(sb.path());
    let mut runs = sb.runs();
    runs.sort();
    let out = crate::support::fsbench().arg("compare").args(&runs).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let section = &text[text.find("Profile diff of ext4-S-qoff-t1-write_truncate").expect(&text)..];
    let grown = &section[section.find("function (grew)").expect(section)..];
    let grown = &grown[..grown.find("\n\n").unwrap_or(grown.len())];
    // The journalled write path: ext4_write_begin in place of the delayed-allocation
    // ext4_da_write_begin, ext4_journalled_write_end, jbd2_*. Ranked by change in points,
    // the block allocation it brings (ext4_map_blocks, ext4_mb_new_blocks) often fills the
    // rest of the top 10 before ext4_journalled_write_end (about +7 points) is reached.
    assert!(["ext4_write_begin", "ext4_journalled_write_end", "jbd2_"].iter().any(|f| grown.contains(f)), "{section}");
    let shrunk = &section[section.find("function (shrank)").expect(section)..];
    assert!(shrunk.contains("ext4_da_write_begin") || shrunk.contains("ext4_da_write_end"), "{section}");
}

/// An op mix (`kind = "ops"`, whose workers are threads of fsbench) is profiled too: one
/// uncounted repetition, its create path in the stored stacks, the timed repetitions kept.
#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn an_op_mix_cell_is_profiled_in_process_and_keeps_its_repetitions() {
    skip_unless_root!();
    if let Err(why) = perf_works() {
        return skip(&test_name!(), &format!("no profiler here: {why}"));
    }
    let sb = Sandbox::new("fsbench-prof-ops-");
    let args = [
        "run",
        "scenarios/createfiles.toml",
        "--set",
        "workload.scale=0.05",
        "--set",
        "workload.repetitions=2",
        "--set",
        "backing.image_size=256MiB",
        "--profile",
    ];
    let out = sb.fsbench(&args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_no_leaks(sb.path());
    let run = sb.runs().pop().unwrap();
    let cell = only_cell(&run);
    assert_eq!(cell.ops.as_ref().unwrap().repetitions.len(), 2, "{:?}", cell.notes);
    let p = cell.profile.expect("a profile record");
    assert_eq!(p.not_profiled, None, "{:?}", cell.notes);
    assert!(p.samples > 0, "{p:?}");
    let text = std::fs::read_to_string(run.join(p.file.expect("the folded stacks' file"))).unwrap();
    // The workers create and write files on ext4: its create path is among the stacks.
    assert!(text.lines().any(|l| l.contains("ext4_")), "{text}");
}

/// Run the varmail `scenario` (relative to the crate root, or absolute) at 1/20 scale for
/// one 1 s window with `profile = "cpu+offcpu"`; its run directory and its one cell.
fn varmail_on_and_off_cpu(sb: &Sandbox, scenario: &Path) -> (std::path::PathBuf, CellResult) {
    let args = [
        "run",
        scenario.to_str().unwrap(),
        "--set",
        "workload.profile=\"cpu+offcpu\"",
        "--set",
        "workload.scale=0.05",
        "--set",
        "workload.duration=1s",
        "--set",
        "workload.repetitions=1",
        "--set",
        "backing.image_size=256MiB",
    ];
    let out = sb.fsbench(&args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_no_leaks(sb.path());
    let run = sb.runs().pop().unwrap();
    let cell = only_cell(&run);
    (run, cell)
}

/// An op mix whose group runs in worker processes (`processes = 2`) is profiled in them:
/// perf follows the forked processes, and both profiles keep their workers' threads alone
/// (merged as `ops`), not fsbench's supervisor nor each process's main thread, which only
/// starts the workers and sends their figures back.
#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn an_op_mix_in_worker_processes_is_profiled_in_its_workers_threads() {
    skip_unless_root!();
    if let Err(why) = perf_works() {
        return skip(&test_name!(), &format!("no profiler here: {why}"));
    }
    let sb = Sandbox::new("fsbench-prof-procs-");
    let text = std::fs::read_to_string(crate::support::crate_root().join("scenarios/varmail.toml"))
        .unwrap()
        .replace("threads = 16\n", "threads = 2\nprocesses = 2\n");
    assert!(text.contains("processes = 2"), "scenarios/varmail.toml changed: {text}");
    let scenario = sb.path().join("varmail-procs.toml");
    std::fs::write(&scenario, text).unwrap();
    let (run, cell) = varmail_on_and_off_cpu(&sb, &scenario);
    assert_eq!(cell.ops.as_ref().unwrap().repetitions[0].processes, Some(2), "{:?}", cell.notes);
    let p = cell.profile.expect("a profile record");
    assert_eq!(p.not_profiled, None, "{:?}", cell.notes);
    let off = p.offcpu.expect("an off-CPU record");
    assert_eq!(off.not_profiled, None, "{off:?}");
    for file in [p.file.expect("on-CPU stacks"), off.file.expect("off-CPU stacks")] {
        let text = std::fs::read_to_string(run.join(&file)).unwrap();
        assert!(!text.is_empty(), "{file}: no stacks");
        assert!(text.lines().all(|l| l.starts_with("ops;")), "{file}: {text}");
        assert!(text.lines().any(|l| l.contains("ext4_")), "{file}: {text}");
    }
}

/// `profile = "cpu+offcpu"`: the same window's off-CPU stacks, weighted by the time the
/// workers were blocked: a mail server's mix (varmail) waits in fsync; the report shows it.
#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn an_off_cpu_profile_shows_where_the_workers_waited() {
    skip_unless_root!();
    if let Err(why) = perf_works() {
        return skip(&test_name!(), &format!("no profiler here: {why}"));
    }
    let sb = Sandbox::new("fsbench-prof-off-");
    let (run, cell) = varmail_on_and_off_cpu(&sb, Path::new("scenarios/varmail.toml"));
    let p = cell.profile.expect("a profile record");
    assert_eq!(p.not_profiled, None, "{:?}", cell.notes);
    let off = p.offcpu.expect("an off-CPU record");
    assert_eq!(off.not_profiled, None, "{off:?}");
    assert_eq!((off.event.as_deref(), off.weight.as_deref()), (Some("sched:sched_switch"), Some("us_blocked")));
    assert!(off.samples > 0 && off.runnable_us.is_some(), "{off:?}");
    let text = std::fs::read_to_string(run.join(off.file.unwrap())).unwrap();
    // The workers (threads `ops-N`, merged as `ops`), not the supervising thread, waiting in fsync.
    assert!(text.lines().all(|l| l.starts_with("ops;")), "{text}");
    assert!(text.lines().any(|l| l.contains("fsync") && l.contains("schedule")), "{text}");
    let report = crate::support::fsbench().arg("report").arg(&run).output().unwrap();
    let said = String::from_utf8_lossy(&report.stdout);
    assert!(said.contains("Off-CPU of ext4-S-qoff-t1") && said.contains("ms blocked"), "{said}");
}
