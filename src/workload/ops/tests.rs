//! The engine on a real directory (any filesystem; the root test on tmpfs is in
//! `tests/it/ops_engine.rs`): op counts follow the loops, the filesets are built and
//! reused as declared, and nothing is made outside the cell.

use std::time::Duration;

use super::spec::*;
use super::*;

fn fileset(name: &str, entries: u64, width: f64, prealloc: u32) -> FilesetSpec {
    FilesetSpec {
        name: name.into(),
        entries,
        dir_width: width,
        dir_gamma: 1.5,
        size: SizeDist::Gamma { mean: 4096.0, shape: 1.5 },
        prealloc_percent: prealloc,
        reuse: false,
        read_only: false,
    }
}

/// filebench's fileserver loop, on fileset 0 with slot 1.
fn fileserver_loop() -> Vec<Op> {
    vec![
        Op::Create { fileset: 0, slot: 1 },
        Op::WriteWhole { slot: 1, io_size: 1 << 20 },
        Op::Close { slot: 1 },
        Op::Open { fileset: 0, slot: 1, pick: Pick::RoundRobin },
        Op::Append { slot: 1, len: AppendLen::Uniform(16 << 10), io_size: 16 << 10, fileset: None },
        Op::Close { slot: 1 },
        Op::Open { fileset: 0, slot: 1, pick: Pick::RoundRobin },
        Op::Read { slot: 1, len: ReadLen::Whole, io_size: 1 << 20 },
        Op::Close { slot: 1 },
        Op::Delete { fileset: 0 },
        Op::Stat { fileset: 0, pick: Pick::RoundRobin },
    ]
}

fn spec(flow: Flow, threads: u32, stop: Stop) -> OpsSpec {
    OpsSpec {
        filesets: vec![fileset("bigfileset", 400, 20.0, 80)],
        groups: vec![ThreadGroup { name: "filereader".into(), threads, processes: None, flow }],
        stop,
        seed: 42,
    }
}

fn count(w: &Window, op: &str) -> u64 {
    w.repetition.ops.iter().find(|o| o.op == op).map_or(0, |o| o.count)
}

#[test]
fn a_loop_run_n_times_counts_every_op_n_times() {
    let dir = tempfile::tempdir().unwrap();
    let stop = Stop { loops: Some(25), ..Stop::default() };
    let w = run(dir.path(), &spec(Flow::Loop(fileserver_loop()), 3, stop), 0, &|| false).unwrap();
    let r = &w.repetition;
    assert_eq!(r.stop, "loops");
    assert_eq!(r.loops, 75);
    for (op, per_loop) in
        [("create", 1), ("write", 1), ("close", 3), ("open", 2), ("append", 1), ("read", 1), ("delete", 1), ("stat", 1)]
    {
        assert_eq!(count(&w, op), 75 * per_loop, "{op}");
    }
    // The report lists kinds in the order the loop first names them.
    let names: Vec<&str> = r.ops.iter().map(|o| o.op.as_str()).collect();
    assert_eq!(names, ["create", "write", "close", "open", "append", "read", "delete", "stat"]);
    assert_eq!(r.total.count, 75 * 11);
    // Appends write 1..=16 KiB each; writes write the entries' declared sizes.
    let append = r.ops.iter().find(|o| o.op == "append").unwrap();
    assert!(append.bytes >= 75 && append.bytes <= 75 * 16384);
    assert!(r.ops.iter().all(|o| o.latency.count == o.count && o.total_ns > 0));
    assert!(r.cpu_user_s + r.cpu_sys_s > 0.0);
    let f = &w.filesets[0];
    assert_eq!(f.entries, 400);
    assert!((280..=360).contains(&f.preallocated), "{}", f.preallocated);
    assert_eq!(f.size_histogram.iter().map(|b| b[1]).sum::<u64>(), 400);
}

#[test]
fn a_timed_window_keeps_the_loop_composition() {
    let dir = tempfile::tempdir().unwrap();
    let stop = Stop { duration: Some(Duration::from_millis(300)), ..Stop::default() };
    let w = run(dir.path(), &spec(Flow::Loop(fileserver_loop()), 4, stop), 0, &|| false).unwrap();
    let r = &w.repetition;
    assert_eq!(r.stop, "duration");
    assert!(r.elapsed_s >= 0.3 && r.elapsed_s < 2.0, "{}", r.elapsed_s);
    // A window cut mid-loop leaves at most one partial loop per worker.
    let creates = count(&w, "create") as f64;
    assert!(creates > 20.0);
    for (op, per_loop) in [("close", 3.0), ("open", 2.0), ("stat", 1.0)] {
        let ratio = count(&w, op) as f64 / creates;
        assert!((ratio - per_loop).abs() <= per_loop * 0.01 + 4.0 * 3.0 / creates, "{op}: {ratio}");
    }
}

#[test]
fn create_until_full_stops_everyone_at_the_first_done() {
    // filebench's createfiles: create, write, close until no entry is left.
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec(
        Flow::Loop(vec![
            Op::Create { fileset: 0, slot: 1 },
            Op::WriteWhole { slot: 1, io_size: 1 << 20 },
            Op::Close { slot: 1 },
        ]),
        4,
        Stop { first_done: true, duration: Some(Duration::from_secs(30)), ..Stop::default() },
    );
    s.filesets[0].prealloc_percent = 0;
    let w = run(dir.path(), &s, 0, &|| false).unwrap();
    assert_eq!(w.repetition.stop, "first_done");
    assert_eq!(w.filesets[0].preallocated, 0);
    let created = count(&w, "create");
    // The first worker done is the one that found no free entry left: all 400 were made.
    assert_eq!(created, 400);
    // The others stopped where they were: at most one create each not yet closed.
    assert!((created - 4..=created).contains(&count(&w, "close")));
    assert_eq!(std::fs::read_dir(dir.path().join("bigfileset")).unwrap().count(), 1);
}

#[test]
fn every_op_kind_runs_and_is_counted() {
    let dir = tempfile::tempdir().unwrap();
    let lp = vec![
        Op::Open { fileset: 0, slot: 0, pick: Pick::Uniform },
        Op::Read { slot: 0, len: ReadLen::Bytes(100), io_size: 10 },
        Op::Append { slot: 0, len: AppendLen::Fixed(10), io_size: 10, fileset: None },
        Op::Fsync { slot: 0 },
        Op::Fdatasync { slot: 0 },
        Op::Truncate { slot: 0, size: 5 },
        Op::Close { slot: 0 },
        Op::Stat { fileset: 0, pick: Pick::Zipf(1.1) },
        Op::Rename { fileset: 0 },
        Op::Link { fileset: 0 },
        Op::Symlink { fileset: 0 },
        Op::Mkdir { fileset: 0 },
        Op::Readdir { fileset: 0 },
        Op::Rmdir { fileset: 0 },
        Op::Chmod { fileset: 0, mode: 0o600 },
        Op::Chown { fileset: 0, uid: nix::unistd::geteuid().as_raw(), gid: nix::unistd::getegid().as_raw() },
        Op::Delete { fileset: 0 },
        Op::Delete { fileset: 0 },
        Op::Delay(Duration::from_micros(10)),
    ];
    let s = spec(Flow::Loop(lp), 2, Stop { loops: Some(5), ..Stop::default() });
    let w = run(dir.path(), &s, 0, &|| false).unwrap();
    for op in OP_NAMES.iter().filter(|n| !["create", "write"].contains(n)) {
        let per_loop = if *op == "delete" { 2 } else { 1 };
        assert_eq!(count(&w, op), 10 * per_loop, "{op}");
    }
    let read = w.repetition.ops.iter().find(|o| o.op == "read").unwrap();
    assert!(read.bytes <= 10 * 100);
    // The delay is not an op of the total.
    assert_eq!(w.repetition.total.count, 10 * 18);
}

#[test]
fn a_mix_draws_transactions_by_weight() {
    let dir = tempfile::tempdir().unwrap();
    let flow = Flow::Mix(vec![
        (3.0, vec![Op::Stat { fileset: 0, pick: Pick::Uniform }]),
        (1.0, vec![Op::Readdir { fileset: 0 }]),
    ]);
    let w = run(dir.path(), &spec(flow, 1, Stop { loops: Some(4000), ..Stop::default() }), 0, &|| false).unwrap();
    let stats = count(&w, "stat") as f64;
    assert_eq!(stats as u64 + count(&w, "readdir"), 4000);
    assert!((stats / 4000.0 - 0.75).abs() < 0.03, "{stats}");
}

#[test]
fn a_reused_fileset_is_taken_as_the_last_repetition_left_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec(Flow::Loop(vec![Op::Delete { fileset: 0 }]), 1, Stop { loops: Some(10), ..Stop::default() });
    s.filesets[0].reuse = true;
    let first = run(dir.path(), &s, 0, &|| false).unwrap();
    let second = run(dir.path(), &s, 1, &|| false).unwrap();
    assert!(!first.filesets[0].reused && second.filesets[0].reused);
    assert_eq!(second.filesets[0].preallocated, first.filesets[0].preallocated - 10);
    // Without reuse the tree is rebuilt from the seed.
    s.filesets[0].reuse = false;
    let third = run(dir.path(), &s, 2, &|| false).unwrap();
    assert_eq!(third.filesets[0].preallocated, first.filesets[0].preallocated);
}

#[test]
fn a_planted_link_in_place_of_the_fileset_is_refused_and_never_followed() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("bigfileset")).unwrap();
    let s = spec(Flow::Loop(fileserver_loop()), 1, Stop { loops: Some(1), ..Stop::default() });
    let e = run(dir.path(), &s, 0, &|| false).err().expect("a link where the fileset goes fails the build");
    assert!(e.to_string().contains("bigfileset"), "{e}");
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0, "nothing made through the link");
}

#[test]
fn an_interrupt_stops_the_workers() {
    let dir = tempfile::tempdir().unwrap();
    let s =
        spec(Flow::Loop(fileserver_loop()), 2, Stop { duration: Some(Duration::from_secs(600)), ..Stop::default() });
    let polls = std::sync::atomic::AtomicU32::new(0);
    // Interrupt on the fifth poll of the window (the build polls too, once per thousand files).
    let cancel = || polls.fetch_add(1, std::sync::atomic::Ordering::Relaxed) >= 5;
    let e = run(dir.path(), &s, 0, &cancel).err().expect("interrupted");
    assert!(matches!(e, OpsError::Interrupted), "{e}");
}

/// dbench's own loadfile (the `dbench` package's) parses whole, every line an op.
#[test]
fn the_dbench_package_client_txt_parses_when_installed() {
    let Ok(text) = std::fs::read_to_string("/usr/share/dbench/client.txt") else {
        eprintln!("skipped: /usr/share/dbench/client.txt is absent (install the dbench package)");
        return;
    };
    let lf = crate::scenario::loadfile_parse::parse(&text, "client.txt").unwrap_or_else(|e| panic!("{e}"));
    let peak = replay::peak_handles(&lf);
    assert!(
        (1..crate::scenario::loadfile_spec::MAX_OPEN_HANDLES).contains(&peak),
        "client.txt holds {peak} handles at most"
    );
    let lines = text.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')).count();
    assert_eq!(lf.ops.len(), lines);
    assert!(lf.ops.iter().any(|o| !o.expect_ok));
}

/// The fds a client needs: its handle table at its fullest, every NTCreateX counted.
#[test]
fn peak_handles_counts_creates_open_at_once() {
    let text = "NTCreateX \"\\a\" 0x40 0x5 1 NT_STATUS_OK\nNTCreateX \"\\b\" 0x40 0x1 2 NT_STATUS_OBJECT_NAME_NOT_FOUND\n\
                Close 1 NT_STATUS_OK\nNTCreateX \"\\c\" 0x40 0x5 3 NT_STATUS_OK\nClose 3 NT_STATUS_OK\n";
    assert_eq!(replay::peak_handles(&crate::scenario::loadfile_parse::parse(text, "t").unwrap()), 2);
}

#[test]
fn a_count_of_ops_stops_each_worker_at_exactly_that_many() {
    let dir = tempfile::tempdir().unwrap();
    let w = run(
        dir.path(),
        &spec(Flow::Loop(fileserver_loop()), 3, Stop { ops: Some(100), ..Stop::default() }),
        0,
        &|| false,
    )
    .unwrap();
    assert_eq!(w.repetition.stop, "ops");
    assert_eq!(w.repetition.total.count, 300);
    // 100 ops are 9 whole loops of 11 and one op of the tenth, per worker.
    assert_eq!(w.repetition.loops, 27);
}

#[test]
fn a_count_of_bytes_stops_each_worker_once_it_has_moved_them() {
    let dir = tempfile::tempdir().unwrap();
    let lp = vec![
        Op::Open { fileset: 0, slot: 1, pick: Pick::RoundRobin },
        Op::Append { slot: 1, len: AppendLen::Fixed(4096), io_size: 4096, fileset: None },
        Op::Close { slot: 1 },
    ];
    let stop = Stop { bytes: Some(1 << 20), duration: Some(Duration::from_secs(600)), ..Stop::default() };
    let w = run(dir.path(), &spec(Flow::Loop(lp), 3, stop), 0, &|| false).unwrap();
    assert_eq!(w.repetition.stop, "bytes");
    // 256 appends of 4 KiB each reach 1 MiB exactly: the worker stops right after.
    assert_eq!(count(&w, "append"), 3 * 256);
    assert_eq!(w.repetition.total.bytes, 3 << 20);
}

#[test]
fn a_rate_caps_the_loops_and_records_every_start() {
    let dir = tempfile::tempdir().unwrap();
    let stop = Stop {
        duration: Some(Duration::from_millis(400)),
        rate: Some(Rate { per_s: 100.0, unit: RateUnit::Loops }),
        ..Stop::default()
    };
    let lp = vec![Op::Stat { fileset: 0, pick: Pick::RoundRobin }];
    let w = run(dir.path(), &spec(Flow::Loop(lp), 2, stop), 0, &|| false).unwrap();
    let r = &w.repetition;
    // Start k of a worker is due k/100 s after its first: within the window at most
    // rate × window + 1 start, and one more for a first start a little before the window's clock.
    let cap = 2.0 * (100.0 * r.elapsed_s + 2.0);
    assert!((r.loops as f64) <= cap, "{} loops in {} s", r.loops, r.elapsed_s);
    assert!(r.loops >= 2, "every worker starts once at once");
    let p = r.pace.as_ref().expect("pace figures under a rate");
    assert_eq!((p.rate_per_s, p.unit.as_str()), (100.0, "loops"));
    // A start the stop interrupts mid-loop is not a loop: at most one per worker.
    assert!(p.starts >= r.loops && p.starts <= r.loops + 2, "{p:?}");
    assert_eq!(p.lateness.count, p.starts);
    assert!(p.lateness.max_ns >= p.lateness.p99_ns && p.lateness.mean_ns >= 0.0, "{p:?}");
}

#[test]
fn a_worker_slower_than_its_rate_starts_at_once_and_its_lateness_grows() {
    let dir = tempfile::tempdir().unwrap();
    // Each loop sleeps 1 ms; the pace asks for one every 0.1 ms: start k begins at least
    // k × 1 ms after the first and is due at k × 0.1 ms.
    let stop = Stop { loops: Some(20), rate: Some(Rate { per_s: 10_000.0, unit: RateUnit::Ops }), ..Stop::default() };
    let w =
        run(dir.path(), &spec(Flow::Loop(vec![Op::Delay(Duration::from_millis(1))]), 1, stop), 0, &|| false).unwrap();
    let p = w.repetition.pace.as_ref().unwrap();
    assert_eq!(p.starts, 20);
    assert!(p.behind >= 19, "{p:?}");
    assert!(p.lateness.max_ns >= 19 * 900_000 * 99 / 100, "{p:?}");
    assert_eq!(w.repetition.stop, "loops");
}

/// Every regular file beneath `dir`, read whole.
fn files_beneath(dir: &std::path::Path) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let t = e.file_type().unwrap();
        if t.is_dir() {
            out.extend(files_beneath(&e.path()));
        } else if t.is_file() {
            out.push(std::fs::read(e.path()).unwrap());
        }
    }
    out
}

#[test]
fn an_append_with_an_io_size_writes_in_chunks_of_it_and_counts_as_one_op() {
    // Each write(2) of a chunk starts at the start of the engine's write pattern, so a
    // file's bytes show where the calls began: 1,300 bytes in chunks of 512 are the
    // pattern's first 512, 512 and 276 bytes (three calls); without an io_size, one call
    // writes the pattern's first 1,300.
    let pattern = build::pattern(1300);
    for (io_size, want) in [
        (512, [&pattern[..512], &pattern[..512], &pattern[..276]].concat()),
        (1300, pattern.clone()),
        (100, pattern[..100].repeat(13)),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let lp = vec![
            Op::Create { fileset: 0, slot: 0 },
            Op::Append { slot: 0, len: AppendLen::Fixed(1300), io_size, fileset: None },
            Op::Close { slot: 0 },
        ];
        let mut s = spec(Flow::Loop(lp), 2, Stop { loops: Some(5), ..Stop::default() });
        s.filesets[0].prealloc_percent = 0;
        let w = run(dir.path(), &s, 0, &|| false).unwrap();
        assert_eq!(count(&w, "append"), 10, "io_size {io_size}: one op per append, whatever its calls");
        let append = w.repetition.ops.iter().find(|o| o.op == "append").unwrap();
        assert_eq!(append.bytes, 10 * 1300, "io_size {io_size}");
        let files = files_beneath(&dir.path().join("bigfileset"));
        assert_eq!(files.len(), 10, "io_size {io_size}");
        for f in &files {
            assert!(f == &want, "io_size {io_size}: a file of {} bytes is not the chunks' pattern", f.len());
        }
    }
}

#[test]
fn what_workers_do_in_the_warm_up_is_not_in_the_window() {
    // Five entries and a loop of creates: every worker runs out of files long before an
    // hour's warm-up ends, so everything they did was warm-up, and none of it is counted.
    let dir = tempfile::tempdir().unwrap();
    let lp = vec![Op::Create { fileset: 0, slot: 0 }, Op::Close { slot: 0 }];
    let stop =
        Stop { duration: Some(Duration::from_secs(1)), warmup: Some(Duration::from_secs(3600)), ..Stop::default() };
    let mut s = spec(Flow::Loop(lp), 2, stop);
    s.filesets[0].entries = 5;
    s.filesets[0].prealloc_percent = 0;
    let w = run(dir.path(), &s, 0, &|| false).unwrap();
    assert_eq!(files_beneath(&dir.path().join("bigfileset")).len(), 5, "the warm-up made the files");
    let r = &w.repetition;
    assert_eq!((count(&w, "create"), count(&w, "close"), r.loops, r.total.count), (0, 0, 0, 0));
    assert_eq!((r.elapsed_s, r.warmup_s), (0.0, Some(3600.0)));
    assert_eq!(r.stop, "out_of_files");
}

#[test]
fn the_window_after_a_warm_up_runs_its_whole_duration() {
    let dir = tempfile::tempdir().unwrap();
    let lp = vec![Op::Stat { fileset: 0, pick: Pick::RoundRobin }];
    let stop = Stop {
        duration: Some(Duration::from_millis(200)),
        warmup: Some(Duration::from_millis(200)),
        ..Stop::default()
    };
    let w = run(dir.path(), &spec(Flow::Loop(lp), 2, stop), 0, &|| false).unwrap();
    let r = &w.repetition;
    assert_eq!(r.warmup_s, Some(0.2));
    // The duration counts from the end of the warm-up: the window is at least that long.
    assert!(r.elapsed_s >= 0.2, "{} s", r.elapsed_s);
    assert!(count(&w, "stat") > 0 && r.total.count == count(&w, "stat") && r.loops == count(&w, "stat"));
}

#[test]
fn a_loadfile_client_after_a_warm_up_counts_only_the_window() {
    let text = "NTCreateX \"\\clients\\client1\\f\" 0x0 0x5 1 NT_STATUS_OK\n\
                WriteX 1 0 4096 4096 NT_STATUS_OK\n\
                ReadX 1 0 4096 4096 NT_STATUS_OK\n\
                Close 1 NT_STATUS_OK\n\
                QUERY_PATH_INFORMATION \"\\clients\\client1\\g\" 1004 NT_STATUS_OBJECT_NAME_NOT_FOUND\n";
    let lf = crate::scenario::loadfile_parse::parse(text, "t.txt").unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("clients/client1")).unwrap();
    std::fs::create_dir_all(dir.path().join("clients/client2")).unwrap();
    let stop = Stop {
        duration: Some(Duration::from_millis(200)),
        warmup: Some(Duration::from_millis(200)),
        ..Stop::default()
    };
    let s = OpsSpec {
        filesets: vec![],
        groups: vec![ThreadGroup {
            name: "dbench".into(),
            threads: 2,
            processes: None,
            flow: Flow::Loadfile(std::sync::Arc::new(lf)),
        }],
        stop,
        seed: 1,
    };
    let w = run(dir.path(), &s, 0, &|| false).unwrap();
    let r = &w.repetition;
    assert_eq!(r.warmup_s, Some(0.2));
    assert!(r.elapsed_s >= 0.2, "{} s", r.elapsed_s);
    // The client's own counts start afresh with its account: the same ops, bytes and
    // expected errors (one in five ops) in both.
    let l = r.loadfile.as_ref().unwrap();
    assert!(l.ops > 0);
    assert_eq!(l.ops, r.total.count);
    assert_eq!(l.clients.iter().map(|c| c.bytes).sum::<u64>(), r.total.bytes);
    assert_eq!(l.expected_errors, count(&w, "Qpathinfo"));
    assert_eq!(l.status_mismatches, 0);
}

#[test]
fn an_append_up_to_a_size_never_takes_a_file_past_it() {
    // postmark's append: 1..=(limit − size) bytes, none once the file has the limit.
    for (start, appended_some) in [(9000, true), (10_000, false)] {
        let dir = tempfile::tempdir().unwrap();
        let lp = vec![
            Op::Open { fileset: 0, slot: 0, pick: Pick::RoundRobin },
            Op::Append { slot: 0, len: AppendLen::UpTo(10_000), io_size: 512, fileset: None },
            Op::Close { slot: 0 },
        ];
        let mut s = spec(Flow::Loop(lp), 1, Stop { loops: Some(60), ..Stop::default() });
        s.filesets[0].entries = 20;
        s.filesets[0].prealloc_percent = 100;
        s.filesets[0].size = SizeDist::Fixed(start);
        let w = run(dir.path(), &s, 0, &|| false).unwrap();
        assert_eq!(count(&w, "append"), 60);
        let sizes: Vec<u64> = files_beneath(&dir.path().join("bigfileset")).iter().map(|f| f.len() as u64).collect();
        assert_eq!(sizes.len(), 20);
        assert!(sizes.iter().all(|&n| (start..=10_000).contains(&n)), "{sizes:?}");
        let appended = w.repetition.ops.iter().find(|o| o.op == "append").unwrap().bytes;
        assert_eq!(appended, sizes.iter().map(|n| n - start).sum::<u64>());
        assert_eq!(appended > 0, appended_some, "{appended} bytes from {start}");
    }
}
