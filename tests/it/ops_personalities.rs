//! The shipped personalities run the loops of filebench's shipped workload files
//! (`workloads/*.f` of filebench 1.5): for each, the measured op counts per loop equal the
//! flowops of the `.f` file within ±1%, at a small scale and a fixed number of loops, and
//! the bytes per op equal what the `.f` determines (a fixed file size written whole; an
//! `appendfilerand` of up to 16 KiB, 8 KiB on average) within ±2%.

use fsbench::scenario::{Workload, load};
use fsbench::workload::ops::run;
use fsbench::workload::ops::spec::{OpsWorkload, Stop};

fn personality(name: &str, scale_down: u64, loops: u64) -> OpsWorkload {
    let s = load(&crate::support::crate_root().join(format!("scenarios/{name}.toml"))).unwrap();
    let Workload::Ops(mut o) = s.workload else { panic!("{name} is not an ops scenario") };
    for f in &mut o.spec.filesets {
        f.entries = (f.entries / scale_down).max(1);
    }
    o.spec.stop = Stop { loops: Some(loops), duration: None, ..Stop::default() };
    o
}

/// Run `name` and compare each op's count per loop with filebench's flowops.
fn check(name: &str, scale_down: u64, loops: u64, per_loop: &[(&str, f64)]) -> fsbench::workload::ops::Window {
    let o = personality(name, scale_down, loops);
    let dir = tempfile::tempdir().unwrap();
    let w = run(dir.path(), &o.spec, 0, &|| false).unwrap();
    let r = &w.repetition;
    assert_eq!(r.stop, "loops", "{name}");
    let total_loops = r.loops as f64;
    let workers: u32 = o.spec.groups.iter().map(|g| g.threads).sum();
    assert_eq!(r.loops, loops * workers as u64, "{name}");
    for (op, k) in per_loop {
        let n = r.ops.iter().find(|s| s.op == *op).map_or(0, |s| s.count) as f64;
        assert!(
            (n / total_loops - k).abs() <= k * 0.01,
            "{name}: {op} {n} over {total_loops} loops, want {k} per loop"
        );
    }
    let kinds: Vec<&str> = r.ops.iter().map(|s| s.op.as_str()).collect();
    assert_eq!(kinds.len(), per_loop.len(), "{name}: op kinds {kinds:?}");
    w
}

/// Bytes per op of kind `op`, and how many ran.
fn bytes_per_op(w: &fsbench::workload::ops::Window, op: &str) -> (f64, u64) {
    let s = w.repetition.ops.iter().find(|s| s.op == op).expect("the op ran");
    (s.bytes as f64 / s.count as f64, s.count)
}

/// `appendfilerand` of `iosize=16k`: uniform in 1..=16384 bytes, mean 8192.5.
const APPEND_MEAN: f64 = 8192.5;

#[test]
fn fileserver_runs_filebench_fileserver_f() {
    // createfile, writewholefile, closefile, openfile, appendfilerand, closefile, openfile,
    // readwholefile, closefile, deletefile, statfile.
    let want = [
        ("create", 1.0),
        ("write", 1.0),
        ("close", 3.0),
        ("open", 2.0),
        ("append", 1.0),
        ("read", 1.0),
        ("delete", 1.0),
        ("stat", 1.0),
    ];
    // 10,000 / 25 = 400 entries, 320 preallocated: at most 320 + 50 exist at once (each of
    // the 50 threads holds one it created until its delete), so a create always finds one of
    // the 80 free. At 1/50 (40 free) more than 40 threads between create and delete leave a
    // create none, and the run ends `out_of_files` as filebench's does.
    check("fileserver", 25, 10, &want);
}

#[test]
fn varmail_runs_filebench_varmail_f() {
    // deletefile, createfile, appendfilerand, fsync, closefile, openfile, readwholefile,
    // appendfilerand, fsync, closefile, openfile, readwholefile, closefile.
    let want = [
        ("delete", 1.0),
        ("create", 1.0),
        ("append", 2.0),
        ("fsync", 2.0),
        ("close", 3.0),
        ("open", 2.0),
        ("read", 2.0),
    ];
    check("varmail", 5, 20, &want);
}

#[test]
fn webserver_runs_filebench_webserver_f() {
    // Ten times openfile, readwholefile, closefile; one appendfilerand to the log.
    // At full size (1,000 files for 100 threads): at a tenth, 100 files for 100 threads, a
    // thread could find every file busy under load and end `out_of_files` (a CI run did).
    check("webserver", 1, 5, &[("open", 10.0), ("read", 10.0), ("close", 10.0), ("append", 1.0)]);
}

#[test]
fn webproxy_runs_filebench_webproxy_f() {
    // deletefile, createfile, appendfilerand, closefile, five times openfile, readwholefile, closefile.
    let want = [("delete", 1.0), ("create", 1.0), ("append", 1.0), ("close", 6.0), ("open", 5.0), ("read", 5.0)];
    check("webproxy", 50, 5, &want);
}

#[test]
fn webproxy_appends_write_8_kib_on_average() {
    // 100 threads, 50 loops, one appendfilerand of 16k each: 5,000 appends, whose mean has a
    // standard error of 16384 / sqrt(12 × 5000) = 67 bytes (0.8%): ±2% is 2.4 of them.
    let want = [("delete", 1.0), ("create", 1.0), ("append", 1.0), ("close", 6.0), ("open", 5.0), ("read", 5.0)];
    let w = check("webproxy", 50, 50, &want);
    let (per, n) = bytes_per_op(&w, "append");
    assert_eq!(n, 5000);
    assert!((per / APPEND_MEAN - 1.0).abs() <= 0.02, "{per} bytes per append");
}

#[test]
fn createfiles_runs_filebench_createfiles_f() {
    // createfile, writewholefile, closefile.
    let w = check("createfiles", 50, 20, &[("create", 1.0), ("write", 1.0), ("close", 1.0)]);
    // writewholefile of a 16k file: 16,384 bytes per loop, exactly.
    assert_eq!(bytes_per_op(&w, "write"), (16384.0, 20 * 16));
    assert_eq!(w.repetition.total.bytes, 20 * 16 * 16384);
}

#[test]
fn postmark_transactions_read_or_append_then_create_or_delete() {
    let o = personality("postmark", 1, 2000);
    let dir = tempfile::tempdir().unwrap();
    let w = run(dir.path(), &o.spec, 0, &|| false).unwrap();
    let n = |op: &str| w.repetition.ops.iter().find(|s| s.op == op).map_or(0, |s| s.count);
    assert_eq!(w.repetition.loops, 2000);
    // Every transaction opens a file and reads or appends to it (bias 5: half each) ...
    assert_eq!(n("open"), 2000);
    assert_eq!(n("read") + n("append"), 2000);
    assert!((900..=1100).contains(&n("read")), "{}", n("read"));
    // ... then creates or deletes one, half each.
    assert_eq!(n("create") + n("delete"), 2000);
    assert!((900..=1100).contains(&n("create")), "{}", n("create"));
    assert_eq!(w.filesets[0].entries, 1000);
}
