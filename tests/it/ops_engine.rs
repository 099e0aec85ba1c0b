//! The op-mix engine on a real tmpfs mount: filebench's varmail loop runs with the
//! loop's op ratios, and ENOSPC mid-window is a failure naming the op, worker and file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use fsbench::workload::ops::spec::*;
use fsbench::workload::ops::{OpsError, run};
use nix::mount::{MntFlags, MsFlags, mount, umount2};

/// A tmpfs mounted on a temporary directory, unmounted on drop.
struct Tmpfs(PathBuf, #[allow(dead_code)] tempfile::TempDir);

impl Tmpfs {
    fn new(size: &str) -> Tmpfs {
        let d = tempfile::tempdir().unwrap();
        mount(Some("tmpfs"), d.path(), Some("tmpfs"), MsFlags::empty(), Some(format!("size={size}").as_str())).unwrap();
        Tmpfs(d.path().to_path_buf(), d)
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = umount2(&self.0, MntFlags::MNT_DETACH);
    }
}

fn varmail(entries: u64, mean: f64) -> OpsSpec {
    let lp = vec![
        Op::Delete { fileset: 0 },
        Op::Create { fileset: 0, slot: 1 },
        Op::Append { slot: 1, len: AppendLen::Uniform(16 << 10), io_size: 16 << 10, fileset: None },
        Op::Fsync { slot: 1 },
        Op::Close { slot: 1 },
        Op::Open { fileset: 0, slot: 1, pick: Pick::RoundRobin },
        Op::Read { slot: 1, len: ReadLen::Whole, io_size: 1 << 20 },
        Op::Append { slot: 1, len: AppendLen::Uniform(16 << 10), io_size: 16 << 10, fileset: None },
        Op::Fsync { slot: 1 },
        Op::Close { slot: 1 },
        Op::Open { fileset: 0, slot: 1, pick: Pick::RoundRobin },
        Op::Read { slot: 1, len: ReadLen::Whole, io_size: 1 << 20 },
        Op::Close { slot: 1 },
    ];
    OpsSpec {
        filesets: vec![FilesetSpec {
            name: "bigfileset".into(),
            entries,
            dir_width: 1_000_000.0,
            dir_gamma: 1.5,
            size: SizeDist::Gamma { mean, shape: 1.5 },
            prealloc_percent: 80,
            reuse: false,
            read_only: false,
        }],
        groups: vec![ThreadGroup { name: "filereader".into(), threads: 16, processes: None, flow: Flow::Loop(lp) }],
        stop: Stop { duration: Some(Duration::from_millis(500)), ..Stop::default() },
        seed: 1,
    }
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn varmail_on_tmpfs_runs_the_loop_composition() {
    skip_unless_root!();
    let fs = Tmpfs::new("256m");
    let w = run(fs.path(), &varmail(1000, 16384.0), 0, &|| false).unwrap();
    let r = &w.repetition;
    let n = |op: &str| r.ops.iter().find(|o| o.op == op).map_or(0, |o| o.count) as f64;
    let loops = n("create");
    assert!(loops > 100.0, "{loops} loops in 0.5 s");
    // Per loop: 1 delete, 1 create, 2 appends, 2 fsyncs, 3 closes, 2 opens, 2 reads; a
    // window cut mid-loop leaves at most one partial loop per worker (16).
    for (op, k) in [("delete", 1.0), ("append", 2.0), ("fsync", 2.0), ("close", 3.0), ("open", 2.0), ("read", 2.0)] {
        assert!((n(op) - k * loops).abs() <= k * loops * 0.01 + 16.0 * k, "{op}: {} for {loops} loops", n(op));
    }
    assert_eq!(w.filesets[0].leaf_dirs, 1, "varmail's fileset is one flat directory");
    let files = std::fs::read_dir(fs.path().join("bigfileset/00000001/00000001")).unwrap().count();
    assert!((700..=900).contains(&files), "{files} files");
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn a_full_filesystem_fails_the_window_naming_op_worker_and_file() {
    skip_unless_root!();
    // 2 MiB of tmpfs, 100 files of 16 KiB preallocated at 80%: the appends fill it.
    // The appends grow the files until the filesystem is full, long before the minute is up.
    let fs = Tmpfs::new("2m");
    let mut s = varmail(100, 16384.0);
    s.stop.duration = Some(Duration::from_secs(60));
    let e = run(fs.path(), &s, 0, &|| false).err().expect("ENOSPC");
    let msg = e.to_string();
    assert!(matches!(e, OpsError::Op { .. } | OpsError::Build { .. }), "{msg}");
    assert!(msg.contains("No space left on device"), "{msg}");
    assert!(msg.contains("bigfileset/00000001/00000001/"), "{msg}");
    if let OpsError::Op { op, worker, .. } = &e {
        assert!(["create", "append"].contains(op), "{msg}");
        assert!(worker.starts_with("filereader#"), "{msg}");
    }
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn a_full_filesystem_fails_a_worker_process_naming_op_worker_and_file() {
    skip_unless_root!();
    // As above, with the 16 workers in 4 processes of 4 threads: the error comes back
    // from the child over its pipe and names the worker as group#process.thread.
    let fs = Tmpfs::new("2m");
    let mut s = varmail(100, 16384.0);
    s.stop.duration = Some(Duration::from_secs(60));
    (s.groups[0].threads, s.groups[0].processes) = (4, Some(4));
    let e = run(fs.path(), &s, 0, &|| false).err().expect("ENOSPC");
    let msg = e.to_string();
    assert!(msg.contains("No space left on device"), "{msg}");
    assert!(msg.contains("bigfileset/00000001/00000001/"), "{msg}");
    match &e {
        OpsError::Op { op, worker, .. } => {
            assert!(["create", "append"].contains(op), "{msg}");
            let (p, t) = worker.strip_prefix("filereader#").and_then(|w| w.split_once('.')).expect(&msg);
            assert!(p.parse::<u32>().unwrap() < 4 && t.parse::<u32>().unwrap() < 4, "{msg}");
        }
        // The fileset itself did not fit.
        OpsError::Build { .. } => {}
        other => panic!("{other}"),
    }
}
