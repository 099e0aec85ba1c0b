//! One profiled window: `perf record` attached to fsbench itself with its events
//! disabled, enabled through perf's control FIFO (the ack is the barrier: the workers
//! start only after perf samples), inherited by every worker fsbench forks from then on,
//! stopped with SIGINT; then `perf script` folded by `inferno` into the workers' stacks.
//!
//! Why `perf record -p <fsbench> --inherit` and not `-a` or a cgroup: only fsbench's own
//! descendants (and, for in-process steps, fsbench's own threads) are sampled, so
//! the idle loop and other people's processes never enter the profile, and no cgroup has
//! to exist (a cell's cgroup is optional, and perf's cgroup filter needs the perf_event
//! controller). A `+kthreads` profile adds a second, system-wide (`-a`) session beside
//! it, of which only the kernel threads' samples are kept ([`Target::System`]): the
//! threads that do a filesystem's commits, flushes and writeback belong to no process of
//! ours. Why the `perf` program and not `perf_event_open` directly: perf unwinds
//! kernel and user stacks and symbolises both (kallsyms, ELF, JIT maps) through one
//! tool every kernel developer already trusts; `inferno` folds its script output (the
//! same code as `inferno-collapse-perf`), so no symboliser or folder is written here.

use std::fs;
use std::io::{BufReader, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use inferno::collapse::Collapse;

use super::capability::Recorder;
use super::folded::Folded;
use super::offcpu::OffCpu;
use super::whose::Whose;

/// How long perf may take to attach and acknowledge `enable`, or to write its data after SIGINT.
const PERF_DEADLINE: Duration = Duration::from_secs(60);
/// Largest `perf script` output folded (its lines are folded as they stream; this bounds time).
const MAX_SCRIPT_BYTES: u64 = 4 << 30;

/// `perf record` running with its events enabled; [`Session::finish`] stops it.
pub struct Session {
    child: Option<Child>,
    scratch: PathBuf,
    stderr: PathBuf,
    /// Off-CPU stacks recorded too (`sched_switch` and switch events): the sampling
    /// event's name as perf prints it then.
    offcpu: Option<String>,
    /// SIGINT sent ([`Session::interrupt`]).
    interrupted: bool,
    /// How [`Session::stop`] ended, once it has.
    stopped: Option<Result<(), String>>,
}

/// What a session samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// fsbench (this pid) and everything it starts from then on (`-p`, inherited).
    Process(u32),
    /// Every CPU (`-a`): for the kernel threads, which no process of ours starts.
    System,
}

impl Session {
    /// Start perf on `target` in `scratch` (made, 0700) and return once it samples.
    pub fn start(
        rec: &Recorder,
        frequency_hz: u32,
        target: Target,
        scratch: &Path,
        offcpu: bool,
    ) -> Result<Session, String> {
        fs::create_dir_all(scratch).map_err(|e| format!("cannot make {}: {e}", scratch.display()))?;
        let (ctl, ack) = (scratch.join("ctl.fifo"), scratch.join("ack.fifo"));
        for f in [&ctl, &ack] {
            let _ = fs::remove_file(f);
            nix::unistd::mkfifo(f.as_path(), nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR)
                .map_err(|e| format!("cannot make {}: {e}", f.display()))?;
        }
        // Read-write opens of a FIFO never block; ours keep both ends alive for perf.
        let open = |p: &Path| {
            fs::OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(p)
                .map_err(|e| format!("cannot open {}: {e}", p.display()))
        };
        let (mut ctl_fd, mut ack_fd) = (open(&ctl)?, open(&ack)?);
        let stderr = scratch.join("perf.stderr");
        let err_file = fs::File::create(&stderr).map_err(|e| format!("cannot make {}: {e}", stderr.display()))?;
        let mut cmd = Command::new(&rec.perf);
        crate::signals::default_in_child(&mut cmd);
        cmd.args(["record", "--quiet", "-g", "--no-buildid-cache", "-D", "-1"]);
        if offcpu {
            // The frequency on the sampling event only: the tracepoint records every switch.
            cmd.args(["-e", &on_cpu_event(rec, frequency_hz), "-e", super::offcpu::EVENT, "--switch-events"]);
        } else {
            cmd.arg(format!("-F{frequency_hz}")).args(["-e", rec.event]);
        }
        cmd.arg(format!("--control=fifo:{},{}", ctl.display(), ack.display()))
            .arg(match target {
                Target::Process(pid) => format!("-p{pid}"),
                Target::System => "-a".to_string(),
            })
            .arg("-o")
            .arg(scratch.join("perf.data"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err_file);
        plain_child(&mut cmd);
        let child = cmd.spawn().map_err(|e| format!("cannot start perf: {e}"))?;
        let offcpu = offcpu.then(|| on_cpu_event(rec, frequency_hz));
        let mut s = Session {
            child: Some(child),
            scratch: scratch.to_path_buf(),
            stderr,
            offcpu,
            interrupted: false,
            stopped: None,
        };
        ctl_fd.write_all(b"enable\n").map_err(|e| format!("cannot write to perf's control fifo: {e}"))?;
        s.wait_for_ack(&mut ack_fd)?;
        Ok(s)
    }

    /// Wait for perf's `ack` of `enable`; perf dying first is an error with its stderr.
    fn wait_for_ack(&mut self, ack: &mut fs::File) -> Result<(), String> {
        let started = Instant::now();
        let mut got = Vec::new();
        while started.elapsed() < PERF_DEADLINE {
            let mut p = libc::pollfd { fd: ack.as_raw_fd(), events: libc::POLLIN, revents: 0 };
            // SAFETY: one valid pollfd for the duration of the call.
            if unsafe { libc::poll(&mut p, 1, 100) } > 0 {
                let mut buf = [0u8; 64];
                if let Ok(n) = ack.read(&mut buf) {
                    got.extend_from_slice(&buf[..n]);
                    if got.windows(3).any(|w| w == b"ack") {
                        return Ok(());
                    }
                }
            }
            if let Some(c) = self.child.as_mut()
                && let Ok(Some(status)) = c.try_wait()
            {
                self.child = None;
                return Err(format!("perf record exited before sampling ({status}): {}", self.stderr_tail()));
            }
            if crate::signals::interrupted() {
                return Err("interrupted".into());
            }
        }
        Err(format!("perf record did not start sampling within {}s: {}", PERF_DEADLINE.as_secs(), self.stderr_tail()))
    }

    /// Stop perf (SIGINT: it writes its data and exits) and check that it wrote them;
    /// a second call does nothing. Sessions that run side by side are all stopped before
    /// any is folded, so that none records the others' folding.
    pub fn stop(&mut self) -> Result<(), String> {
        self.interrupt();
        let Some(mut child) = self.child.take() else {
            return self.stopped.clone().unwrap_or_else(|| Err("perf is not running".into()));
        };
        let started = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(s)) => break s,
                Ok(None) if started.elapsed() < PERF_DEADLINE => {
                    let fd = crate::workload::child::pidfd(child.id() as libc::pid_t);
                    if let Ok(fd) = fd {
                        let mut p = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
                        // SAFETY: one valid pollfd for the duration of the call.
                        unsafe { libc::poll(&mut p, 1, 200) };
                    }
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    let why = Err(format!("perf record did not stop within {}s", PERF_DEADLINE.as_secs()));
                    self.stopped = Some(why.clone());
                    return why;
                }
            }
        };
        // perf exits with SIGINT's status or 0 after a SIGINT, depending on its version.
        let wrote = if self.scratch.join("perf.data").is_file() {
            Ok(())
        } else {
            Err(format!("perf record wrote no data ({status}): {}", self.stderr_tail()))
        };
        self.stopped = Some(wrote.clone());
        wrote
    }

    /// Tell perf to stop sampling (SIGINT), without waiting for it to write its data: sessions
    /// side by side are all told first, so that none samples the wait for another's exit.
    pub fn interrupt(&mut self) {
        if let Some(child) = self.child.as_ref().filter(|_| !self.interrupted) {
            // SAFETY: kill with a pid we own as an unreaped child.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
            self.interrupted = true;
        }
    }

    /// Stop perf ([`Session::stop`]), fold its samples of `whose`, and (off-CPU sessions)
    /// their off-CPU stacks, or why those could not be had.
    pub fn finish(mut self, rec: &Recorder, whose: Whose) -> Result<(Folded, Option<Result<OffCpu, String>>), String> {
        self.stop()?;
        let data = self.scratch.join("perf.data");
        let on = fold_script(rec, &data, whose, self.offcpu.as_deref())?;
        let off = self.offcpu.is_some().then(|| fold_offcpu_script(rec, &data, whose));
        Ok((on, off))
    }

    fn stderr_tail(&self) -> String {
        tail_of(&self.stderr)
    }
}

/// The last line perf wrote to the file `path` (its stderr), escaped and cut, for an error;
/// only the file's last 2,000 bytes are read, whatever perf wrote before them.
fn tail_of(path: &Path) -> String {
    use std::io::{Seek, SeekFrom};
    let mut text = Vec::new();
    if let Ok(mut f) = fs::File::open(path) {
        let len = f.metadata().map_or(0, |m| m.len());
        let _ = f.seek(SeekFrom::Start(len.saturating_sub(2000))).and_then(|_| f.take(2000).read_to_end(&mut text));
    }
    let text = String::from_utf8_lossy(&text).into_owned();
    let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no message");
    crate::text::first_line_cut(&crate::text::escape_control(last.trim()), 300)
}

/// `perf script`'s stderr for `data`: a file beside it (removed with the session's scratch).
fn script_stderr(data: &Path) -> Result<fs::File, String> {
    let path = data.with_extension("script.stderr");
    fs::File::create(&path).map_err(|e| format!("cannot make {}: {e}", path.display()))
}

impl Drop for Session {
    /// A session given up (an error, a panic) leaves no perf behind, and no scratch.
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = fs::remove_dir_all(&self.scratch);
    }
}

/// A child of our own: its own process group (the terminal's Ctrl-C is fsbench's to
/// handle), signal dispositions and mask as a fresh program expects, killed with fsbench.
fn plain_child(cmd: &mut Command) {
    cmd.process_group(0);
    // SAFETY: between fork and exec: sigaction, sigprocmask and prctl only, no allocation.
    unsafe {
        cmd.pre_exec(|| {
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT, libc::SIGPIPE, libc::SIGCHLD] {
                libc::signal(sig, libc::SIG_DFL);
            }
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
            crate::workload::child::arm_parent_death()
        })
    };
}

/// `perf script` of `data`, folded as it streams, keeping only the samples of `whose`
/// (the workers, or the in-process thread), their root frame the process's name.
pub fn fold_script(rec: &Recorder, data: &Path, whose: Whose, event: Option<&str>) -> Result<Folded, String> {
    let mut cmd = Command::new(&rec.perf);
    crate::signals::default_in_child(&mut cmd);
    cmd.args(["script", "--no-inline", "-F", "comm,pid,tid,time,event,ip,sym,dso", "-i"])
        .arg(data)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(script_stderr(data)?);
    plain_child(&mut cmd);
    let mut child = cmd.spawn().map_err(|e| format!("cannot start perf script: {e}"))?;
    let out = child.stdout.take().ok_or("perf script has no output")?;
    let mut folded = Vec::new();
    let mut opts = inferno::collapse::perf::Options::default();
    opts.include_tid = true;
    // Only the sampling event's stacks where the script holds sched_switch too (else
    // inferno keeps the first event it sees, the only one).
    opts.event_filter = event.map(str::to_string);
    let mut folder = inferno::collapse::perf::Folder::from(opts);
    let r = folder.collapse(BufReader::new(out.take(MAX_SCRIPT_BYTES)), &mut folded);
    let status = child.wait().map_err(|e| format!("perf script: {e}"))?;
    r.map_err(|e| format!("cannot fold perf script's output: {e}"))?;
    if !status.success() {
        return Err(format!("perf script failed ({status}): {}", tail_of(&data.with_extension("script.stderr"))));
    }
    Ok(keep_cell_samples(&String::from_utf8_lossy(&folded), whose))
}

/// The sampling event of an off-CPU session as given to perf and as `perf script` names
/// it: its frequency as a term (`cpu-clock/freq=999/`), so that the tracepoint beside it
/// takes every switch.
fn on_cpu_event(rec: &Recorder, frequency_hz: u32) -> String {
    format!("{}/freq={frequency_hz}/", rec.event)
}

/// The off-CPU stacks of `whose` in `data` ([`super::offcpu`]).
fn fold_offcpu_script(rec: &Recorder, data: &Path, whose: Whose) -> Result<OffCpu, String> {
    let mut cmd = Command::new(&rec.perf);
    crate::signals::default_in_child(&mut cmd);
    cmd.args(["script", "--no-inline", "--show-switch-events", "-F", "comm,pid,tid,time,event,trace,ip,sym", "-i"])
        .arg(data)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(script_stderr(data)?);
    plain_child(&mut cmd);
    let mut child = cmd.spawn().map_err(|e| format!("cannot start perf script: {e}"))?;
    let out = child.stdout.take().ok_or("perf script has no output")?;
    let r = super::offcpu::fold(BufReader::new(out.take(MAX_SCRIPT_BYTES)), whose);
    let status = child.wait().map_err(|e| format!("perf script: {e}"))?;
    let o = r.map_err(|e| format!("cannot read perf script's switch events: {e}"))?;
    if !status.success() {
        return Err(format!("perf script failed ({status}): {}", tail_of(&data.with_extension("script.stderr"))));
    }
    Ok(o)
}

/// The folded lines (root frame `comm-pid/tid`) of the cell's samples, the root frame
/// cut back to the process's name so that the workers' stacks merge.
pub fn keep_cell_samples(folded: &str, whose: Whose) -> Folded {
    let mut stacks = Vec::new();
    for line in folded.lines() {
        let Some((stack, n)) = line.rsplit_once(' ') else { continue };
        let Ok(n) = n.parse::<u64>() else { continue };
        let mut frames = stack.split(';');
        let Some(root) = frames.next() else { continue };
        let Some((comm, ids)) = root.rsplit_once('-') else { continue };
        let pid = ids.split_once('/').map_or(ids, |(pid, _tid)| pid);
        let Ok(pid) = pid.parse::<u32>() else { continue };
        let Some(root) = whose.root(pid, comm) else { continue };
        let mut all = vec![root];
        all.extend(frames.map(str::to_string));
        stacks.push((all, n));
    }
    Folded { stacks }.normalise()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_carries_the_last_line_perf_wrote_read_from_the_files_tail_only() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("stderr");
        let mut text = "Warning: lost 1 chunk\n".repeat(100_000);
        text.push_str("failed to open perf.data: \x1b[31mPermission denied\n\n");
        std::fs::write(&path, text).unwrap();
        assert_eq!(tail_of(&path), "failed to open perf.data: \\u{1b}[31mPermission denied");
        assert_eq!(tail_of(&d.path().join("missing")), "no message");
    }

    #[test]
    fn only_the_workers_samples_are_kept_and_merged_by_process_name() {
        let folded = "fsbench-100/100;do_poll 7\n\
                      fsbench-100/101;fsbench::steps;untar 5\n\
                      fsbench-200/200;open_close;do_sys_open 9\n\
                      fsbench-201/201;open_close;do_sys_open 3\n";
        let w = keep_cell_samples(folded, Whose::Workers { pid: 100, own_process: false, threads: None });
        assert_eq!(w.stacks[0], (vec!["fsbench".to_string(), "open_close".into(), "do_sys_open".into()], 12));
        assert_eq!(w.samples(), 12, "the supervisor's 12 samples are left out: {w:?}");
        let w = keep_cell_samples(folded, Whose::Workers { pid: 100, own_process: true, threads: None });
        assert!(w.stacks.iter().any(|(s, n)| s.last().unwrap() == "untar" && *n == 5));
        assert_eq!(w.samples(), 24, "in-process: every thread of fsbench is the workload");
    }
}
