//! The worker process: untimed setup, the start barrier, warm-up, the timed loop.
//!
//! Runs as `fsbench __latfs-worker --key=value...` (see [`super::protocol`]).
//! The loop bodies call libc directly on a path and buffer prepared during
//! setup, so an iteration makes exactly the reference's system calls and no
//! allocation; the clock (vDSO, no system call) is read once per batch.

use std::ffi::CString;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use nix::errno::Errno;

use super::protocol::{WorkerConfig, WorkerMessage};
use crate::model::LatfsTest;

/// The file each loop works on, in the task's directory (lmbench's name).
pub const TEST_FILE: &str = "test";

/// Why an fchown to another owner may fail, added to its error.
const NEEDS_CAP_CHOWN: &str = " (the chown test needs root: CAP_CHOWN)";

/// How long one batch of iterations between two clock reads should last.
/// At ~1 µs per iteration and ~25 ns per clock read this keeps the clock's
/// share far below 0.1%, while the window overshoots its length by at most this.
const BATCH_TARGET: Duration = Duration::from_micros(100);

/// Why the worker failed: the errno of the call that failed (0 if none) and what it was doing.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Failure {
    errno: i32,
    what: String,
}

impl Failure {
    fn sys(errno: Errno, what: impl Into<String>) -> Failure {
        Failure { errno: errno as i32, what: format!("{}: {}", what.into(), errno) }
    }

    fn other(what: impl Into<String>) -> Failure {
        Failure { errno: 0, what: what.into() }
    }
}

/// How a worker process ended; the command layer turns it into the exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerEnd {
    /// Its arguments were malformed.
    BadArguments,
    /// It measured its window and reported the count.
    Measured,
    /// A system call failed; the protocol line names it.
    Failed,
}

/// Entry point of the hidden `__latfs-worker` subcommand.
///
/// Every outcome is reported on stdout as one protocol line, so the parent
/// can name the failing call and its errno.
pub fn worker_main(args: &[String]) -> WorkerEnd {
    let config = match WorkerConfig::from_args(args) {
        Ok(c) => c,
        Err(e) => {
            send(&WorkerMessage::Error { errno: 0, what: e.to_string() });
            return WorkerEnd::BadArguments;
        }
    };
    match run_worker(&config) {
        Ok((iterations, window, hist)) => {
            let latency = hist.map(|h| crate::monitor::latency::buckets(&h));
            send(&WorkerMessage::Result { iterations, window_ns: window.as_nanos() as u64, latency });
            WorkerEnd::Measured
        }
        Err(f) => {
            send(&WorkerMessage::Error { errno: f.errno, what: f.what });
            WorkerEnd::Failed
        }
    }
}

/// Write one protocol line in a single write(2); a vanished parent is not our problem.
fn send(msg: &WorkerMessage) {
    let line = msg.to_string();
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(line.as_bytes());
    let _ = out.flush();
}

/// Iterations, the window, and the latency histogram when asked for one.
type Measured = (u64, Duration, Option<Histogram<u64>>);

fn run_worker(c: &WorkerConfig) -> Result<Measured, Failure> {
    if let Some(cpu) = c.cpu {
        // Before any setup, so the loop's caches and its first page faults are on its CPU.
        let mut set = nix::sched::CpuSet::new();
        set.set(cpu as usize).map_err(|e| Failure::sys(e, format!("pin to CPU {cpu}")))?;
        nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set)
            .map_err(|e| Failure::sys(e, format!("pin to CPU {cpu} (sched_setaffinity)")))?;
    }
    nix::unistd::chdir(&c.dir).map_err(|e| Failure::sys(e, format!("chdir to {}", c.dir.display())))?;
    let (uid, gid) = match c.ids {
        Some(ids) => ids,
        None => (nix::unistd::geteuid().as_raw(), nix::unistd::getegid().as_raw()),
    };
    // lmbench -U: the chown loop stays privileged (changing a file's owner needs
    // CAP_CHOWN) and fchown()s to the task's ids; the others run as the task's
    // ids so the files they create are charged to it. Effective ids only,
    // group first (after seteuid we could no longer change it).
    if c.ids.is_some() && c.test != LatfsTest::Chown {
        nix::unistd::setegid(gid.into())
            .map_err(|e| Failure::sys(e, format!("switch to gid {gid} (setegid; per-task ids need root)")))?;
        nix::unistd::seteuid(uid.into())
            .map_err(|e| Failure::sys(e, format!("switch to uid {uid} (seteuid; per-task ids need root)")))?;
        // Changing credentials clears the parent-death signal: arm it again, so a
        // SIGKILLed fsbench does not leave this worker holding its mount busy.
        crate::workload::child::arm_parent_death()
            .map_err(|e| Failure::sys(Errno::from_raw(e.raw_os_error().unwrap_or(0)), "prctl(PR_SET_PDEATHSIG)"))?;
    }
    let mut refs = take_quota_refs(c.quota_refs, uid, gid, "")?;
    if c.test == LatfsTest::Chown {
        refs.extend(take_quota_refs(c.quota_refs, uid + 1, gid + 1, NEEDS_CAP_CHOWN)?);
    }
    let mut body = LoopBody::setup(c.test, c.open_for_write, uid, gid)?;
    // Allocated before the barrier: recording into it never allocates.
    let mut hist = c.histogram.then(crate::monitor::latency::histogram);
    send(&WorkerMessage::Ready);
    wait_for_start()?;
    let (iterations, window) = body.measure(c.warmup, c.duration, hist.as_mut())?;
    drop(body);
    drop(refs);
    Ok((iterations, window, hist))
}

/// Block until the parent's start byte arrives on stdin; EOF means the run was called off.
fn wait_for_start() -> Result<(), Failure> {
    let mut byte = [0u8; 1];
    match std::io::stdin().lock().read(&mut byte) {
        Ok(1) => Ok(()),
        Ok(_) => Err(Failure::other("the parent closed the start barrier before the start")),
        Err(e) => Err(Failure::sys(Errno::from_raw(e.raw_os_error().unwrap_or(0)), "read the start barrier")),
    }
}

/// lmbench -L: open a file, fchown it to the ids, unlink it and keep it open,
/// so that the ids hold `n` extra quota references for the whole run.
/// `hint` is appended to an fchown failure (why it may have failed).
fn take_quota_refs(n: u32, uid: u32, gid: u32, hint: &str) -> Result<Vec<OwnedFd>, Failure> {
    let mut fds = Vec::with_capacity(n as usize);
    for i in 0..n {
        let name = format!(".quota-ref-{uid}-{i}");
        let fd = open_owned(&name, libc::O_WRONLY | libc::O_CREAT)
            .map_err(|e| Failure::sys(e, format!("create quota reference `{name}`")))?;
        fchown(fd.as_raw_fd(), uid, gid)
            .map_err(|e| Failure::sys(e, format!("fchown quota reference `{name}` to {uid}:{gid}{hint}")))?;
        unlink(&name).map_err(|e| Failure::sys(e, format!("unlink quota reference `{name}`")))?;
        fds.push(fd);
    }
    Ok(fds)
}

/// What one timed iteration works on, prepared during setup.
enum LoopBody {
    /// `open(test, flags)`; `close`.
    OpenClose { path: CString, flags: libc::c_int },
    /// `open(test, flags|O_CREAT, 0666)`; `close`; `unlink(test)`.
    CreateUnlink { path: CString, flags: libc::c_int },
    /// `fchown(fd, uid, gid)`; `fchown(fd, uid+1, gid+1)`.
    Chown { fd: OwnedFd, uid: u32, gid: u32 },
    /// `pwrite(fd, buf, 4096, 40960)`; `ftruncate(fd, 8192)`.
    WriteTruncate { fd: OwnedFd, buf: Vec<u8> },
}

impl LoopBody {
    /// The reference's untimed setup of each test, in the current directory.
    fn setup(test: LatfsTest, open_for_write: bool, uid: u32, gid: u32) -> Result<LoopBody, Failure> {
        let path = CString::new(TEST_FILE).expect("no NUL in the file name");
        let flags = if open_for_write { libc::O_WRONLY } else { libc::O_RDONLY };
        // A file left by an earlier repetition (or another uid) would change
        // what the loop measures or make it fail; start from none.
        match unlink(TEST_FILE) {
            Ok(()) | Err(Errno::ENOENT) => {}
            Err(e) => return Err(Failure::sys(e, format!("remove stale `{TEST_FILE}`"))),
        }
        let create = || {
            open_owned(TEST_FILE, libc::O_WRONLY | libc::O_CREAT)
                .map_err(|e| Failure::sys(e, format!("create `{TEST_FILE}`")))
        };
        Ok(match test {
            LatfsTest::OpenClose => {
                drop(create()?);
                LoopBody::OpenClose { path, flags }
            }
            LatfsTest::CreateUnlink => LoopBody::CreateUnlink { path, flags: flags | libc::O_CREAT },
            LatfsTest::Chown => {
                let fd = create()?;
                // Try both owners once, so that a missing CAP_CHOWN is named
                // here rather than as a failure inside the timed loop.
                for (u, g) in [(uid + 1, gid + 1), (uid, gid)] {
                    fchown(fd.as_raw_fd(), u, g)
                        .map_err(|e| Failure::sys(e, format!("fchown `{TEST_FILE}` to {u}:{g}{NEEDS_CAP_CHOWN}")))?;
                }
                LoopBody::Chown { fd, uid, gid }
            }
            LatfsTest::WriteTruncate => LoopBody::WriteTruncate { fd: create()?, buf: vec![0u8; 4096] },
        })
    }

    /// Warm up, then time the loop; returns iterations and the exact window. With a
    /// histogram, every iteration's latency is recorded in it as well.
    fn measure(
        &mut self,
        warmup: Duration,
        duration: Duration,
        hist: Option<&mut Histogram<u64>>,
    ) -> Result<(u64, Duration), Failure> {
        // One monomorphised loop per test: the match is outside the hot path.
        let r = match self {
            LoopBody::OpenClose { path, flags } => {
                let (p, fl) = (path.as_ptr(), *flags);
                run_loop(warmup, duration, hist, || unsafe {
                    let fd = libc::open(p, fl);
                    if fd < 0 {
                        return Err("open");
                    }
                    if libc::close(fd) != 0 {
                        return Err("close");
                    }
                    Ok(())
                })
            }
            LoopBody::CreateUnlink { path, flags } => {
                let (p, fl) = (path.as_ptr(), *flags);
                run_loop(warmup, duration, hist, || unsafe {
                    let fd = libc::open(p, fl, 0o666 as libc::c_uint);
                    if fd < 0 {
                        return Err("open(O_CREAT)");
                    }
                    if libc::close(fd) != 0 {
                        return Err("close");
                    }
                    if libc::unlink(p) != 0 {
                        return Err("unlink");
                    }
                    Ok(())
                })
            }
            LoopBody::Chown { fd, uid, gid } => {
                let (fd, u, g) = (fd.as_raw_fd(), *uid, *gid);
                run_loop(warmup, duration, hist, || unsafe {
                    if libc::fchown(fd, u, g) != 0 {
                        return Err("fchown to uid");
                    }
                    if libc::fchown(fd, u + 1, g + 1) != 0 {
                        return Err("fchown to uid+1");
                    }
                    Ok(())
                })
            }
            LoopBody::WriteTruncate { fd, buf } => {
                let (fd, b) = (fd.as_raw_fd(), buf.as_ptr().cast::<libc::c_void>());
                run_loop(warmup, duration, hist, || unsafe {
                    let n = libc::pwrite(fd, b, 4096, 40960);
                    if n != 4096 {
                        if n >= 0 {
                            // A short write sets no errno; do not report a stale one.
                            Errno::clear();
                            return Err("pwrite (short write)");
                        }
                        return Err("pwrite");
                    }
                    if libc::ftruncate(fd, 8192) != 0 {
                        return Err("ftruncate");
                    }
                    Ok(())
                })
            }
        };
        r.map_err(|(call, errno)| {
            if errno == Errno::UnknownErrno {
                Failure::other(format!("{call} on `{TEST_FILE}` in the timed loop"))
            } else {
                Failure::sys(errno, format!("{call} on `{TEST_FILE}` in the timed loop"))
            }
        })
    }
}

/// Run `op` for `warmup`, then count iterations over a window of at least
/// `duration`, reading the clock once per batch. The batch size comes from the
/// warm-up's rate so that a batch lasts about [`BATCH_TARGET`].
#[inline(always)]
fn time_loop<F>(warmup: Duration, duration: Duration, mut op: F) -> Result<(u64, Duration), (&'static str, Errno)>
where
    F: FnMut() -> Result<(), &'static str>,
{
    // The errno is read only on the failure path, right after the failing call.
    let mut step = || op().map_err(|call| (call, Errno::last()));
    let start = Instant::now();
    let mut warm: u64 = 0;
    let mut now;
    // Warm-up is untimed, so a clock read per iteration costs nothing that counts.
    loop {
        step()?;
        warm += 1;
        now = Instant::now();
        if now.duration_since(start) >= warmup {
            break;
        }
    }
    let batch = batch_size(warm, now.duration_since(start));
    let t0 = now;
    let mut iterations: u64 = 0;
    loop {
        for _ in 0..batch {
            step()?;
        }
        iterations += batch;
        let elapsed = Instant::now().duration_since(t0);
        if elapsed >= duration {
            return Ok((iterations, elapsed));
        }
    }
}

/// Pick the loop once, outside the hot path: the counted loop (the default, untouched
/// by histogram mode) or the loop that times every iteration.
#[inline(always)]
fn run_loop<F>(
    warmup: Duration,
    duration: Duration,
    hist: Option<&mut Histogram<u64>>,
    op: F,
) -> Result<(u64, Duration), (&'static str, Errno)>
where
    F: FnMut() -> Result<(), &'static str>,
{
    match hist {
        None => time_loop(warmup, duration, op),
        Some(h) => time_loop_histogram(warmup, duration, h, op),
    }
}

/// Like [`time_loop`], but reads the clock (vDSO `clock_gettime(CLOCK_MONOTONIC)`,
/// no system call) after every iteration and records the time since the previous
/// read: each iteration's latency, back to back, so one clock read per iteration.
#[inline(always)]
fn time_loop_histogram<F>(
    warmup: Duration,
    duration: Duration,
    hist: &mut Histogram<u64>,
    mut op: F,
) -> Result<(u64, Duration), (&'static str, Errno)>
where
    F: FnMut() -> Result<(), &'static str>,
{
    let mut step = || op().map_err(|call| (call, Errno::last()));
    let start = Instant::now();
    let mut now;
    loop {
        step()?;
        now = Instant::now();
        if now.duration_since(start) >= warmup {
            break;
        }
    }
    let t0 = now;
    let mut prev = t0;
    let mut iterations: u64 = 0;
    loop {
        step()?;
        let t = Instant::now();
        hist.saturating_record(t.duration_since(prev).as_nanos() as u64);
        prev = t;
        iterations += 1;
        let elapsed = t.duration_since(t0);
        if elapsed >= duration {
            return Ok((iterations, elapsed));
        }
    }
}

/// Iterations per clock read: as many as fit in [`BATCH_TARGET`] at the warm-up rate, at least 1.
fn batch_size(warm_iterations: u64, warm_elapsed: Duration) -> u64 {
    let ns = warm_elapsed.as_nanos().max(1);
    let batch = warm_iterations as u128 * BATCH_TARGET.as_nanos() / ns;
    batch.clamp(1, 1 << 20) as u64
}

fn open_owned(name: &str, flags: libc::c_int) -> Result<OwnedFd, Errno> {
    let c = CString::new(std::ffi::OsStr::new(name).as_bytes()).map_err(|_| Errno::EINVAL)?;
    // SAFETY: a valid NUL-terminated path; the returned descriptor is ours alone.
    let fd: RawFd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC, 0o666 as libc::c_uint) };
    if fd < 0 {
        return Err(Errno::last());
    }
    // SAFETY: open just returned this descriptor and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn fchown(fd: RawFd, uid: u32, gid: u32) -> Result<(), Errno> {
    // SAFETY: plain system call on a descriptor we own.
    Errno::result(unsafe { libc::fchown(fd, uid, gid) }).map(drop)
}

fn unlink(name: &str) -> Result<(), Errno> {
    nix::unistd::unlink(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_is_about_100us_of_work() {
        // 1 µs per iteration -> 100 per batch.
        assert_eq!(batch_size(300_000, Duration::from_millis(300)), 100);
        // Slower than the target: one iteration per clock read.
        assert_eq!(batch_size(3, Duration::from_millis(300)), 1);
        // Zero warm-up cannot divide by zero.
        assert!(batch_size(1, Duration::ZERO) >= 1);
    }

    #[test]
    fn time_loop_counts_and_stops_after_the_window() {
        let mut calls = 0u64;
        let (n, window) = time_loop(Duration::from_millis(5), Duration::from_millis(20), || {
            calls += 1;
            Ok(())
        })
        .unwrap();
        assert!(window >= Duration::from_millis(20));
        assert!(n > 0 && n < calls, "window iterations {n} exclude warm-up ({calls} calls)");
    }

    #[test]
    fn histogram_loop_records_every_iteration() {
        let mut h = crate::monitor::latency::histogram();
        let (n, window) = time_loop_histogram(Duration::from_millis(2), Duration::from_millis(20), &mut h, || {
            std::hint::black_box(0u64);
            Ok(())
        })
        .unwrap();
        assert!(window >= Duration::from_millis(20));
        assert_eq!(h.len(), n, "one latency per counted iteration");
        // Latencies add up to the window (each is the time since the previous clock read).
        let sum: f64 = h.mean() * h.len() as f64;
        assert!((sum / window.as_nanos() as f64 - 1.0).abs() < 0.05, "sum {sum} window {window:?}");
    }

    #[test]
    fn time_loop_reports_the_failing_call() {
        let mut left = 10;
        let r = time_loop(Duration::ZERO, Duration::from_secs(10), || {
            left -= 1;
            if left == 0 { Err("open") } else { Ok(()) }
        });
        assert_eq!(r.unwrap_err().0, "open");
    }
}
