//! The op-mix engine's own cost per op (issue 37: "an op-only engine microbenchmark shows
//! the engine's own CPU per op ≤ 3% of the syscall time, measured against a bare loop of
//! the same system calls").
//!
//! `cargo bench --bench ops_overhead`: for each op class, one worker of the engine
//! (`workload::ops::run`, a scenario's `[workload]` parsed as any scenario is) and a bare
//! Rust loop of the same system calls on the same kind of files (names made once, no
//! clock, no accounting, no picking), in turn, ROUNDS times, each for WINDOW_MS, in one
//! directory of OPS_BENCH_DIR (default /dev/shm: tmpfs, where the calls are cheapest and
//! the engine's share largest). Prints, per class, the CPU time per op of each (the
//! worker thread's user + system time over its ops: preemption by other processes does
//! not count) and the wall time per op, and the engine's overhead, engine / bare - 1,
//! pair by pair (median, min, max). Target: CPU overhead ≤ 3%.
//!
//! Knobs (environment): ROUNDS=7 WINDOW_MS=1000 OPS_BENCH_DIR=/dev/shm CLASSES=stat,...

use std::ffi::CString;
use std::path::Path;
use std::time::{Duration, Instant};

use fsbench::scenario::{Workload, parse_str};
use fsbench::workload::ops;

const ENTRIES: usize = 1000;

/// An op class: the engine's loop, and the bare loop's body.
struct Class {
    name: &'static str,
    /// Size of the files.
    size: &'static str,
    /// Percent of the entries that exist at the start.
    prealloc: u32,
    /// The engine's loop (TOML).
    ops: &'static str,
    /// Ops one bare iteration counts.
    per_iter: u64,
}

const CLASSES: &[Class] = &[
    Class { name: "stat", size: "4KiB", prealloc: 100, ops: r#"{ op = "stat", fileset = "s" }"#, per_iter: 1 },
    Class {
        name: "open_close",
        size: "4KiB",
        prealloc: 100,
        ops: r#"{ op = "open", fileset = "s", fd = 1 }, { op = "close", fd = 1 }"#,
        per_iter: 2,
    },
    Class {
        name: "create_delete",
        size: "4KiB",
        prealloc: 50,
        ops: r#"{ op = "create", fileset = "s", fd = 1 }, { op = "close", fd = 1 }, { op = "delete", fileset = "s" }"#,
        per_iter: 3,
    },
    Class {
        name: "read_4k",
        size: "4KiB",
        prealloc: 100,
        ops: r#"{ op = "open", fileset = "s", fd = 1 }, { op = "read", fd = 1, io_size = "64KiB" }, { op = "close", fd = 1 }"#,
        per_iter: 3,
    },
];

fn scenario(c: &Class, window: Duration) -> ops::OpsSpec {
    let text = format!(
        "schema = 1\nname = \"ops-overhead\"\n[matrix]\nfs = [\"tmpfs\"]\n[backing]\nkind = \"tmpfs-loop\"\nimage_size = \"1GiB\"\n\
         [workload]\nkind = \"ops\"\nduration = \"{}ms\"\nrepetitions = 1\nseed = 1\n\
         [[workload.fileset]]\nname = \"s\"\nentries = {ENTRIES}\ndir_width = 1000000\nsize = \"{}\"\nprealloc = {}\n\
         [[workload.group]]\nname = \"w\"\nthreads = 1\nloop = [ {} ]\n",
        window.as_millis(),
        c.size,
        c.prealloc,
        c.ops
    );
    match parse_str(&text, "ops_overhead").expect("the bench's scenario parses").workload {
        Workload::Ops(w) => w.spec,
        _ => unreachable!("kind = ops"),
    }
}

/// CPU time of the calling thread, nanoseconds.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Per op: (CPU ns, wall ns), and the ops.
struct Figures {
    cpu_ns: f64,
    wall_ns: f64,
    ops: u64,
}

fn engine(dir: &Path, spec: &ops::OpsSpec, rep: u32) -> Figures {
    let w = ops::run(dir, spec, rep, &|| false).expect("the engine runs");
    let r = &w.repetition;
    let n = r.total.count.max(1);
    Figures {
        cpu_ns: (r.cpu_user_s + r.cpu_sys_s) * 1e9 / n as f64,
        wall_ns: r.elapsed_s * 1e9 / n as f64,
        ops: r.total.count,
    }
}

fn check(r: libc::c_int, what: &str) -> libc::c_int {
    assert!(r >= 0, "{what}: {}", std::io::Error::last_os_error());
    r
}

/// The bare loop: the same system calls with the same flags on `ENTRIES` files of `size`
/// bytes (`prealloc` percent of them existing) in one directory.
fn bare(dir: &Path, c: &Class, size: usize, window: Duration) -> Figures {
    let path = dir.join("bare");
    let _ = std::fs::remove_dir_all(&path);
    std::fs::create_dir(&path).expect("bare dir");
    let dfd = check(
        // SAFETY: a valid C string.
        unsafe {
            libc::open(
                CString::new(path.as_os_str().as_encoded_bytes()).unwrap().as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        },
        "open dir",
    );
    let names: Vec<CString> = (1..=ENTRIES).map(|i| CString::new(format!("{i:08}")).unwrap()).collect();
    let mut exists = vec![false; ENTRIES];
    let data = vec![0x5au8; size.max(1)];
    let every = 100 / c.prealloc.max(1) as usize;
    for (i, name) in names.iter().enumerate() {
        if i % every == 0 {
            // SAFETY: valid C string and buffer.
            let fd = check(
                unsafe { libc::openat(dfd, name.as_ptr(), libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC, 0o644) },
                "prealloc",
            );
            // SAFETY: `data` has `size` bytes.
            check(unsafe { libc::write(fd, data.as_ptr().cast(), size) } as i32, "prealloc write");
            // SAFETY: our fd.
            unsafe { libc::close(fd) };
            exists[i] = true;
        }
    }
    let mut rbuf = vec![0u8; 64 << 10];
    let flags_open = libc::O_RDWR | libc::O_CLOEXEC | libc::O_NOFOLLOW;
    let flags_create = libc::O_CREAT | libc::O_EXCL | libc::O_RDWR | libc::O_CLOEXEC | libc::O_NOFOLLOW;
    let (mut rr, mut free) = (0usize, 0usize);
    let next_existing = |exists: &[bool], rr: &mut usize| {
        while !exists[*rr % ENTRIES] {
            *rr += 1;
        }
        let i = *rr % ENTRIES;
        *rr += 1;
        i
    };
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let (mut iters, t0, cpu0) = (0u64, Instant::now(), thread_cpu_ns());
    loop {
        // One clock read per 64 iterations: the bare loop pays (almost) nothing but the calls.
        for _ in 0..64 {
            match c.name {
                "stat" => {
                    let i = next_existing(&exists, &mut rr);
                    // SAFETY: valid C string and stat buffer.
                    check(
                        unsafe { libc::fstatat(dfd, names[i].as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) },
                        "fstatat",
                    );
                }
                "open_close" | "read_4k" => {
                    let i = next_existing(&exists, &mut rr);
                    // SAFETY: valid C string.
                    let fd = check(unsafe { libc::openat(dfd, names[i].as_ptr(), flags_open, 0) }, "openat");
                    if c.name == "read_4k" {
                        let mut off = 0i64;
                        loop {
                            // SAFETY: rbuf has its length.
                            let n = unsafe { libc::pread(fd, rbuf.as_mut_ptr().cast(), rbuf.len(), off) };
                            assert!(n >= 0, "pread");
                            if n == 0 {
                                break;
                            }
                            off += n as i64;
                        }
                    }
                    // SAFETY: our fd.
                    unsafe { libc::close(fd) };
                }
                "create_delete" => {
                    while exists[free % ENTRIES] {
                        free += 1;
                    }
                    let f = free % ENTRIES;
                    // SAFETY: valid C string.
                    let fd = check(unsafe { libc::openat(dfd, names[f].as_ptr(), flags_create, 0o644) }, "create");
                    exists[f] = true;
                    // SAFETY: our fd.
                    unsafe { libc::close(fd) };
                    let d = next_existing(&exists, &mut rr);
                    // SAFETY: valid C string.
                    check(unsafe { libc::unlinkat(dfd, names[d].as_ptr(), 0) }, "unlinkat");
                    exists[d] = false;
                }
                other => unreachable!("{other}"),
            }
        }
        iters += 64;
        if t0.elapsed() >= window {
            break;
        }
    }
    let (wall, cpu) = (t0.elapsed(), thread_cpu_ns() - cpu0);
    // SAFETY: our fd.
    unsafe { libc::close(dfd) };
    let _ = std::fs::remove_dir_all(&path);
    let n = iters * c.per_iter;
    Figures { cpu_ns: cpu as f64 / n as f64, wall_ns: wall.as_nanos() as f64 / n as f64, ops: n }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

fn main() {
    let env = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.to_string());
    let rounds: u32 = env("ROUNDS", "7").parse().expect("ROUNDS");
    let window = Duration::from_millis(env("WINDOW_MS", "1000").parse().expect("WINDOW_MS"));
    let base = env("OPS_BENCH_DIR", "/dev/shm");
    let wanted = env("CLASSES", "stat,open_close,create_delete,read_4k");
    let dir = tempfile::Builder::new().prefix("fsbench-ops-overhead.").tempdir_in(&base).expect("bench dir");
    println!(
        "# {} rounds of {} ms, engine then bare loop, 1 worker, {ENTRIES} files in one directory under {base}",
        rounds,
        window.as_millis()
    );
    println!(
        "{:<14} {:>10} {:>10} {:>10} {:>10} {:>22} {:>22}",
        "class", "eng_cpu", "bare_cpu", "eng_wall", "bare_wall", "cpu_overhead med[min,max]", "wall_overhead med"
    );
    for c in CLASSES.iter().filter(|c| wanted.split(',').any(|w| w == c.name)) {
        let spec = scenario(c, window);
        let size = 4096;
        let (mut ec, mut bc, mut ew, mut bw, mut oc, mut ow) = (vec![], vec![], vec![], vec![], vec![], vec![]);
        for r in 0..rounds {
            let e = engine(dir.path(), &spec, r);
            let b = bare(dir.path(), c, size, window);
            assert!(e.ops > 0 && b.ops > 0);
            oc.push(e.cpu_ns / b.cpu_ns - 1.0);
            ow.push(e.wall_ns / b.wall_ns - 1.0);
            ec.push(e.cpu_ns);
            bc.push(b.cpu_ns);
            ew.push(e.wall_ns);
            bw.push(b.wall_ns);
        }
        let (lo, hi) = (oc.iter().copied().fold(f64::MAX, f64::min), oc.iter().copied().fold(f64::MIN, f64::max));
        println!(
            "{:<14} {:>8.0}ns {:>8.0}ns {:>8.0}ns {:>8.0}ns {:>8.1}% [{:.1}, {:.1}] {:>20.1}%",
            c.name,
            median(&mut ec),
            median(&mut bc),
            median(&mut ew),
            median(&mut bw),
            median(&mut oc) * 100.0,
            lo * 100.0,
            hi * 100.0,
            median(&mut ow) * 100.0
        );
    }
}
