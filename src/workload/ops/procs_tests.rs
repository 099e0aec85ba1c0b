//! Groups of worker processes (`processes`): the workers run in distinct forked
//! processes, their counts follow the loops as threads' do, no two workers in any two
//! processes hold one file, and every child is reaped however the window ends.

use std::cell::Cell;
use std::sync::Mutex;

use super::spec::*;
use super::*;

/// The tests that look for this test process's worker processes in /proc run one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn fileset(entries: u64, prealloc: u32) -> FilesetSpec {
    FilesetSpec {
        name: "set".into(),
        entries,
        dir_width: 20.0,
        dir_gamma: 1.5,
        size: SizeDist::Fixed(4096),
        prealloc_percent: prealloc,
        reuse: false,
        read_only: false,
    }
}

fn spec(entries: u64, prealloc: u32, processes: u32, threads: u32, ops: Vec<Op>, stop: Stop) -> OpsSpec {
    OpsSpec {
        filesets: vec![fileset(entries, prealloc)],
        groups: vec![ThreadGroup { name: "g".into(), threads, processes: Some(processes), flow: Flow::Loop(ops) }],
        stop,
        seed: 7,
    }
}

/// This process's children that are worker processes, zombies included.
fn worker_children() -> Vec<u32> {
    let me = std::process::id();
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let Some(close) = stat.rfind(')') else { continue };
        let comm = &stat[stat.find('(').map_or(0, |i| i + 1)..close];
        let ppid = stat[close + 1..].split_whitespace().nth(1).and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(me) && comm == procs::PROCESS_NAME.to_str().unwrap() {
            pids.push(pid);
        }
    }
    pids
}

/// Run the window of `s` in a fresh directory, alone among this module's tests, checking
/// that it leaves no worker process behind, however it ended.
fn run_alone(s: &OpsSpec, cancel: &dyn Fn() -> bool) -> Result<Window, OpsError> {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), s, 0, cancel);
    assert!(worker_children().is_empty(), "every worker process is reaped");
    out
}

fn count(w: &Window, op: &str) -> u64 {
    w.repetition.ops.iter().find(|o| o.op == op).map_or(0, |o| o.count)
}

#[test]
fn three_processes_of_two_threads_run_six_workers_in_three_pids() {
    let ops = vec![
        Op::Open { fileset: 0, slot: 1, pick: Pick::RoundRobin },
        Op::Read { slot: 1, len: ReadLen::Whole, io_size: 1 << 20 },
        Op::Close { slot: 1 },
        Op::Stat { fileset: 0, pick: Pick::RoundRobin },
        // A sleep is a context switch, where the kernel adds up the thread's CPU time
        // (getrusage(RUSAGE_THREAD) does not count the time since the last one).
        Op::Delay(Duration::from_micros(10)),
    ];
    let s = spec(100, 100, 3, 2, ops, Stop { loops: Some(40), ..Stop::default() });
    let w = run_alone(&s, &|| false).unwrap();
    let r = &w.repetition;
    assert_eq!(r.threads, 6);
    // Three distinct pids reported figures, none of them this process.
    assert_eq!(r.processes, Some(3));
    assert_eq!((r.stop.as_str(), r.loops), ("loops", 240));
    for (op, per_loop) in [("open", 1), ("read", 1), ("close", 1), ("stat", 1), ("delay", 1)] {
        assert_eq!(count(&w, op), 240 * per_loop, "{op}");
    }
    assert_eq!(r.ops.iter().find(|o| o.op == "read").unwrap().bytes, 240 * 4096);
    assert!(r.ops.iter().all(|o| o.latency.count == o.count && o.total_ns > 0));
    assert!(r.cpu_user_s + r.cpu_sys_s > 0.0, "the CPU time of the children's worker threads is counted");
    assert!(r.elapsed_s > 0.0);
}

#[test]
fn workers_in_different_processes_never_hold_one_file() {
    // 8 workers in 4 processes create, rename and delete in a fileset of 64 entries, half
    // of them existing (enough free ones that a create always finds one): two workers on
    // one entry would fail a create with EEXIST or a delete or rename with ENOENT, and
    // end the window with that error.
    let ops = vec![
        Op::Create { fileset: 0, slot: 1 },
        Op::Append { slot: 1, len: AppendLen::Fixed(100), io_size: 100, fileset: None },
        Op::Close { slot: 1 },
        Op::Rename { fileset: 0 },
        Op::Delete { fileset: 0 },
    ];
    let s = spec(64, 50, 4, 2, ops, Stop { loops: Some(300), ..Stop::default() });
    let w = run_alone(&s, &|| false).unwrap();
    assert_eq!((w.repetition.stop.as_str(), w.repetition.loops), ("loops", 2400));
    assert_eq!(w.repetition.processes, Some(4));
    assert_eq!(count(&w, "create"), 2400);
    assert_eq!(count(&w, "close"), 2400);
    assert_eq!(count(&w, "rename"), 2400);
    assert_eq!(count(&w, "delete"), 2400);
}

#[test]
fn an_interrupt_stops_and_reaps_every_worker_process() {
    let ops = vec![Op::Stat { fileset: 0, pick: Pick::RoundRobin }];
    let s = spec(20, 100, 3, 2, ops, Stop { duration: Some(Duration::from_secs(3600)), ..Stop::default() });
    // Interrupt once the three processes are seen running.
    let seen = Cell::new(0);
    let cancel = || {
        seen.set(seen.get().max(worker_children().len()));
        seen.get() == 3
    };
    let e = run_alone(&s, &cancel).err().expect("interrupted");
    assert!(matches!(e, OpsError::Interrupted), "{e}");
    assert_eq!(seen.get(), 3);
}

#[test]
fn a_worker_process_killed_fails_the_window_naming_its_group_and_process() {
    let ops = vec![Op::Stat { fileset: 0, pick: Pick::RoundRobin }];
    let s = spec(20, 100, 3, 1, ops, Stop { duration: Some(Duration::from_secs(3600)), ..Stop::default() });
    let killed = Cell::new(None);
    let cancel = || {
        let kids = worker_children();
        if killed.get().is_none() && kids.len() == 3 {
            let pid = *kids.iter().min().unwrap();
            // SAFETY: a child of this process, not reaped (it is listed).
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            killed.set(Some(pid));
        }
        false
    };
    let e = run_alone(&s, &cancel).err().expect("a failed window");
    let msg = e.to_string();
    let pid = killed.get().expect("killed one");
    assert!(matches!(e, OpsError::Worker { ref worker, .. } if worker.starts_with("g#")), "{msg}");
    assert!(msg.contains(&format!("worker process (pid {pid}) was killed by signal 9 (SIGKILL)")), "{msg}");
}

#[test]
fn an_op_failing_in_a_worker_process_names_the_op_the_worker_and_the_file() {
    // A read-only fileset: the write fails with EBADF in the first loop of every worker.
    let ops = vec![
        Op::Open { fileset: 0, slot: 1, pick: Pick::RoundRobin },
        Op::WriteWhole { slot: 1, io_size: 4096 },
        Op::Close { slot: 1 },
    ];
    let mut s = spec(20, 100, 2, 2, ops, Stop { loops: Some(10), ..Stop::default() });
    s.filesets[0].read_only = true;
    let e = run_alone(&s, &|| false).err().expect("EBADF");
    let msg = e.to_string();
    let OpsError::Op { op, worker, path, source } = &e else { panic!("{msg}") };
    assert_eq!(*op, "write");
    assert!(["g#0.0", "g#0.1", "g#1.0", "g#1.1"].contains(&worker.as_str()), "{msg}");
    assert!(path.starts_with("set/"), "{msg}");
    assert_eq!(source.raw_os_error(), Some(libc::EBADF), "{msg}");
}

#[test]
fn a_group_of_threads_and_a_group_of_processes_share_one_window() {
    let create = vec![Op::Create { fileset: 0, slot: 1 }, Op::Close { slot: 1 }, Op::Delete { fileset: 0 }];
    let stat = vec![Op::Stat { fileset: 0, pick: Pick::Uniform }];
    let s = OpsSpec {
        filesets: vec![fileset(64, 50)],
        groups: vec![
            ThreadGroup { name: "t".into(), threads: 2, processes: None, flow: Flow::Loop(create.clone()) },
            ThreadGroup { name: "p".into(), threads: 1, processes: Some(2), flow: Flow::Loop(create) },
            ThreadGroup { name: "s".into(), threads: 1, processes: Some(1), flow: Flow::Loop(stat) },
        ],
        stop: Stop { loops: Some(200), ..Stop::default() },
        seed: 3,
    };
    let w = run_alone(&s, &|| false).unwrap();
    let r = &w.repetition;
    assert_eq!((r.threads, r.processes, r.loops), (5, Some(3), 1000));
    assert_eq!((count(&w, "create"), count(&w, "delete"), count(&w, "stat")), (800, 800, 200));
}

#[test]
fn worker_processes_keep_the_warm_up_out_of_the_window() {
    // As threads do: five entries, creates only, an hour's warm-up: every worker in every
    // process runs out of files within it, and nothing of it is counted.
    let ops = vec![Op::Create { fileset: 0, slot: 0 }, Op::Close { slot: 0 }];
    let stop =
        Stop { duration: Some(Duration::from_secs(1)), warmup: Some(Duration::from_secs(3600)), ..Stop::default() };
    let w = run_alone(&spec(5, 0, 2, 2, ops, stop), &|| false).unwrap();
    let r = &w.repetition;
    assert_eq!((count(&w, "create"), r.loops, r.total.count), (0, 0, 0));
    assert_eq!((r.warmup_s, r.stop.as_str(), r.processes), (Some(3600.0), "out_of_files", Some(2)));
    // The warm-up's end reaches the processes: the window after it is counted.
    let ops = vec![Op::Stat { fileset: 0, pick: Pick::RoundRobin }];
    let stop = Stop {
        duration: Some(Duration::from_millis(200)),
        warmup: Some(Duration::from_millis(200)),
        ..Stop::default()
    };
    let w = run_alone(&spec(20, 100, 2, 1, ops, stop), &|| false).unwrap();
    let r = &w.repetition;
    assert!(r.elapsed_s >= 0.2, "{} s", r.elapsed_s);
    assert!(count(&w, "stat") > 0 && r.loops == count(&w, "stat"));
}

#[test]
fn the_first_worker_done_in_one_process_stops_the_workers_of_every_process() {
    // One process creates until its fileset is full (filebench's createfiles); two others
    // stat a second, full fileset and are never done on their own. The creator's end stops
    // them through the stop flag the processes share, long before the minute is up.
    let create =
        vec![Op::Create { fileset: 0, slot: 1 }, Op::WriteWhole { slot: 1, io_size: 1 << 20 }, Op::Close { slot: 1 }];
    let stat = vec![Op::Stat { fileset: 1, pick: Pick::RoundRobin }];
    let s = OpsSpec {
        filesets: vec![fileset(200, 0), FilesetSpec { name: "full".into(), ..fileset(20, 100) }],
        groups: vec![
            ThreadGroup { name: "c".into(), threads: 1, processes: Some(1), flow: Flow::Loop(create) },
            ThreadGroup { name: "s".into(), threads: 1, processes: Some(2), flow: Flow::Loop(stat) },
        ],
        stop: Stop { first_done: true, duration: Some(Duration::from_secs(60)), ..Stop::default() },
        seed: 5,
    };
    let w = run_alone(&s, &|| false).unwrap();
    let r = &w.repetition;
    assert_eq!((r.stop.as_str(), r.processes), ("first_done", Some(3)));
    assert!(r.elapsed_s < 30.0, "the stat processes ran on: {} s", r.elapsed_s);
    assert_eq!((count(&w, "create"), count(&w, "close")), (200, 200));
    assert!(count(&w, "stat") > 0);
}
