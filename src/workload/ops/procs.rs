//! Worker processes (`processes = P` on a group): filebench runs each process instance as
//! its own process, so its workers have their own fd table and address space. Each is
//! forked before any worker thread of the window exists in fsbench, runs its workers as
//! threads with the same [`Worker`] code, shares the fileset pick words and the control
//! words ([`super::gate`]) through shared mappings, and sends its workers' figures back
//! over a pipe ([`super::wire`]). The parent reaps every child on every path: done,
//! error, interruption, a crash; a child dies with its parent (PR_SET_PDEATHSIG).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use super::error::OpsError;
use super::gate::Control;
use super::outcome::WorkerOut;
use super::spec::Stop;
use super::wire::{Fail, MAX_REPORT, Out, Report};
use super::worker::Worker;

/// A forked worker process as the parent sees it.
struct Kid {
    pid: libc::pid_t,
    /// `group#p`.
    label: String,
    workers: usize,
    /// The read end of its report pipe, until end of file.
    pipe: Option<OwnedFd>,
    report: Vec<u8>,
    /// Why it is not read: the report grew past the cap.
    too_big: bool,
    /// Its wait status, once reaped.
    status: Option<libc::c_int>,
}

/// The worker processes of one window.
pub struct Procs {
    kids: Vec<Kid>,
    /// The reference every child's end times are counted from (taken before any fork).
    base: Instant,
}

impl Procs {
    /// None yet; end times will be counted from `base`.
    pub fn new(base: Instant) -> Procs {
        Procs { kids: Vec::new(), base }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.kids.is_empty()
    }

    /// Workers over every process.
    pub fn workers(&self) -> usize {
        self.kids.iter().map(|k| k.workers).sum()
    }

    /// Fork process `label` (`group#p`) running `workers` under the window's control words.
    /// Call before this process starts any thread that could hold a lock the child needs.
    pub fn fork(
        &mut self,
        label: String,
        workers: Vec<Worker<'_>>,
        ctl: &Control,
        limits: Stop,
    ) -> Result<(), OpsError> {
        let fail = |what: &str, e: std::io::Error| OpsError::Worker {
            worker: label.clone(),
            message: format!("{what} its worker process: {e}"),
        };
        let mut fds = [0; 2];
        // SAFETY: pipe2 fills two fds.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(fail("making the pipe of", std::io::Error::last_os_error()));
        }
        // SAFETY: both fds are fresh and ours.
        let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        let n = workers.len();
        // SAFETY: the child only runs `child`, which never returns and ends in _exit.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(fail("forking", std::io::Error::last_os_error()));
        }
        if pid == 0 {
            drop(rd);
            child(wr, parent, &label, workers, ctl, limits, self.base);
        }
        drop(wr);
        // SAFETY: F_SETFL on our own fd.
        unsafe { libc::fcntl(rd.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
        self.kids.push(Kid {
            pid,
            label,
            workers: n,
            pipe: Some(rd),
            report: Vec::new(),
            too_big: false,
            status: None,
        });
        Ok(())
    }

    /// Read what the children sent, waiting up to `wait` for something; reap each child
    /// whose pipe has ended.
    pub fn poll(&mut self, wait: Duration) {
        let mut pfds: Vec<libc::pollfd> = self
            .kids
            .iter()
            .filter_map(|k| k.pipe.as_ref())
            .map(|p| libc::pollfd { fd: p.as_raw_fd(), events: libc::POLLIN, revents: 0 })
            .collect();
        if pfds.is_empty() {
            // Every child is done: wait as a poll would (fsbench's own threads may still run).
            std::thread::sleep(wait);
            return;
        }
        // SAFETY: pfds is a valid array of its length.
        unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, wait.as_millis().min(1000) as i32) };
        let mut buf = vec![0u8; 64 << 10];
        for k in self.kids.iter_mut().filter(|k| k.pipe.is_some()) {
            let fd = k.pipe.as_ref().map_or(-1, |p| p.as_raw_fd());
            let ended = loop {
                // SAFETY: buf is writable for its length.
                let r = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
                if r > 0 {
                    let r = r as usize;
                    if k.report.len() + r > MAX_REPORT {
                        k.too_big = true;
                        // SAFETY: our own child, not reaped yet.
                        unsafe { libc::kill(k.pid, libc::SIGKILL) };
                        break true;
                    }
                    k.report.extend_from_slice(&buf[..r]);
                    continue;
                }
                if r == 0 {
                    break true;
                }
                let e = std::io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EINTR) => continue,
                    Some(libc::EAGAIN) => break false,
                    _ => break true,
                }
            };
            if ended {
                k.pipe = None;
                k.reap();
            }
        }
    }

    /// Whether every child has ended and been reaped.
    pub fn all_done(&self) -> bool {
        self.kids.iter().all(|k| k.status.is_some())
    }

    /// Whether a child ended without a clean exit (killed, crashed, a report too big):
    /// its workers will never arrive or finish, so the others are stopped.
    pub fn failed(&self) -> bool {
        self.kids.iter().any(|k| k.status.is_some_and(|s| !clean(s)) || k.too_big)
    }

    /// Kill every child still running (they are reaped by [`Procs::poll`]).
    pub fn kill_all(&self) {
        for k in self.kids.iter().filter(|k| k.status.is_none()) {
            // SAFETY: our own child, not reaped yet.
            unsafe { libc::kill(k.pid, libc::SIGKILL) };
        }
    }

    /// Each worker's figures or error with its process's pid, once [`Procs::all_done`];
    /// a child that failed as a whole is one error naming its group and process.
    pub fn finish(mut self) -> Vec<(u32, Result<WorkerOut, OpsError>)> {
        let base = self.base;
        let mut outs = Vec::new();
        for k in std::mem::take(&mut self.kids) {
            let whole = |message: String| (k.pid as u32, Err(OpsError::Worker { worker: k.label.clone(), message }));
            let status = k.status.unwrap_or(0);
            if k.too_big {
                outs.push(whole(format!("worker process (pid {}) sent a report over {MAX_REPORT} bytes", k.pid)));
                continue;
            }
            if libc::WIFSIGNALED(status) {
                let sig = libc::WTERMSIG(status);
                outs.push(whole(format!(
                    "worker process (pid {}) was killed by signal {sig} ({})",
                    k.pid,
                    signame(sig)
                )));
                continue;
            }
            if !clean(status) {
                outs.push(whole(format!(
                    "worker process (pid {}) exited with status {}",
                    k.pid,
                    libc::WEXITSTATUS(status)
                )));
                continue;
            }
            match serde_json::from_slice::<Report>(&k.report) {
                Ok(r) if r.workers.len() == k.workers => {
                    for w in r.workers {
                        let o = match w {
                            Ok(o) => o.into_worker_out(base).ok_or_else(|| OpsError::Worker {
                                worker: k.label.clone(),
                                message: "worker process sent malformed figures".into(),
                            }),
                            Err(f) => Err(f.into_error()),
                        };
                        outs.push((r.pid, o));
                    }
                }
                _ => outs.push(whole(format!("worker process (pid {}) sent an unreadable report", k.pid))),
            }
        }
        outs
    }
}

impl Kid {
    /// Wait for the child (its pipe ended: it is exiting or dead).
    fn reap(&mut self) {
        if self.status.is_some() {
            return;
        }
        let mut status = 0;
        loop {
            // SAFETY: our own child.
            let r = unsafe { libc::waitpid(self.pid, &mut status, 0) };
            if r == self.pid {
                self.status = Some(status);
                return;
            }
            if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                // Not ours to wait for any more (reaped elsewhere): nothing is left of it.
                self.status = Some(status);
                return;
            }
        }
    }
}

impl Drop for Procs {
    /// Every path out of a window ends here: no child outlives it.
    fn drop(&mut self) {
        self.kill_all();
        for k in &mut self.kids {
            k.pipe = None;
            k.reap();
        }
    }
}

fn clean(status: libc::c_int) -> bool {
    libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
}

fn signame(sig: libc::c_int) -> &'static str {
    match sig {
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        libc::SIGABRT => "SIGABRT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGPIPE => "SIGPIPE",
        _ => "signal",
    }
}

/// The forked child: run `workers` as threads, send their figures on `pipe`, exit. Only
/// what is safe after fork in a multi-threaded parent: no std lock another thread could
/// hold (no printing), glibc's malloc (fork-safe), thread creation, system calls.
fn child(
    pipe: OwnedFd,
    parent: libc::pid_t,
    label: &str,
    workers: Vec<Worker<'_>>,
    ctl: &Control,
    limits: Stop,
    base: Instant,
) -> ! {
    // SAFETY: prctl, getppid and signal are async-signal-safe; the name is NUL-terminated.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
        // The parent died before the line above: nobody would stop or reap us.
        if libc::getppid() != parent {
            libc::_exit(1);
        }
        // A Ctrl-C reaches the whole process group: the parent stops us through `ctl`.
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        libc::signal(libc::SIGTERM, libc::SIG_IGN);
        libc::prctl(libc::PR_SET_NAME, PROCESS_NAME.as_ptr() as libc::c_ulong);
    }
    let names: Vec<String> = workers.iter().map(|w| w.name.clone()).collect();
    let mut results: Vec<Result<WorkerOut, OpsError>> = Vec::new();
    std::thread::scope(|scope| {
        let mut handles = Vec::new();
        for w in workers {
            let name = w.name.clone();
            let h = std::thread::Builder::new()
                .name(format!("{}{}", super::WORKER_THREAD_PREFIX, w.index))
                .stack_size(256 << 10)
                .spawn_scoped(scope, move || {
                    let r = w.run(&ctl.stop, &ctl.warming, limits, || ctl.arrive_and_wait());
                    ctl.finished();
                    r
                });
            match h {
                Ok(h) => handles.push(Some(h)),
                Err(e) => {
                    handles.push(None);
                    results.push(Err(OpsError::Worker { worker: name, message: e.to_string() }));
                    ctl.stop.store(true, std::sync::atomic::Ordering::Relaxed);
                    ctl.call_off();
                    break;
                }
            }
        }
        let mut joined = Vec::new();
        for h in handles.into_iter().flatten() {
            joined.push(h.join().unwrap_or_else(|_| {
                Err(OpsError::Worker { worker: label.to_string(), message: "worker thread panicked".into() })
            }));
        }
        // The spawned workers first, in order; a failed spawn's error after them.
        joined.append(&mut results);
        results = joined;
    });
    // Workers never spawned (a spawn failed) report as stopped by it.
    while results.len() < names.len() {
        let worker = names[results.len()].clone();
        results.push(Err(OpsError::Worker { worker, message: "not started: another worker could not be".into() }));
    }
    let report = Report {
        // SAFETY: getpid has no preconditions.
        pid: unsafe { libc::getpid() } as u32,
        workers: results
            .iter()
            .zip(&names)
            .map(|(r, name)| match r {
                Ok(o) => Ok(Out::of(o, base)),
                Err(e) => Err(Fail::of(e, name)),
            })
            .collect(),
    };
    let code = match serde_json::to_vec(&report) {
        Ok(bytes) => {
            if write_all(pipe.as_raw_fd(), &bytes) {
                0
            } else {
                3
            }
        }
        Err(_) => 4,
    };
    // SAFETY: leave without running the parent's exit handlers or destructors.
    unsafe { libc::_exit(code) }
}

/// The name a worker process carries (`ps`, `/proc/<pid>/comm`).
pub const PROCESS_NAME: &std::ffi::CStr = c"fsbench-ops";

fn write_all(fd: libc::c_int, mut bytes: &[u8]) -> bool {
    while !bytes.is_empty() {
        // SAFETY: bytes is readable for its length.
        let r = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if r < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return false;
        }
        bytes = &bytes[r as usize..];
    }
    true
}
