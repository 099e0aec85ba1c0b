//! Every child fsbench starts begins with SIGINT, SIGTERM and SIGHUP at their default
//! action and no signal blocked, whatever fsbench inherited or installed. These tests
//! change this process's own dispositions, so they live alone in this test binary and
//! run in order inside one test function.
//!
//! The story: a CI run failed `sigint_reaching_the_workers_is_an_interruption` (a SIGINT
//! sent to a lat_fs worker was lost, the run finished normally after 2 x 5 s). The test
//! process had been started in the background by a shell without job control, which
//! ignores SIGINT in its background jobs; an ignored disposition survives fork and exec,
//! so every worker ignored SIGINT too. Reproduced here with the disposition set by hand.
//! The second window: between fork and exec a child still runs fsbench's own handler,
//! so a signal landing there only set a flag in the child's copy of memory.

#[macro_use]
mod support;

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use fsbench::model::LatfsTest;
use fsbench::signals;
use fsbench::workload::child::contain;
use fsbench::workload::latfs::{self, LatfsRun};

/// Bits of SIGHUP (1), SIGINT (2) and SIGTERM (15) in /proc's signal masks.
const HANDLED_BITS: u64 = (1 << (libc::SIGHUP - 1)) | (1 << (libc::SIGINT - 1)) | (1 << (libc::SIGTERM - 1));

/// `SigIgn` and `SigBlk` of the process `cmd` (a `cat /proc/self/status`) runs as.
fn ignored_and_blocked(cmd: &mut Command) -> (u64, u64) {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let field = |name: &str| {
        let line = text.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("no {name} in {text}"));
        u64::from_str_radix(line[name.len()..].trim(), 16).unwrap()
    };
    (field("SigIgn:"), field("SigBlk:"))
}

fn status_cat() -> Command {
    let mut cmd = Command::new("cat");
    cmd.arg("/proc/self/status");
    cmd
}

fn set_disposition(sig: libc::c_int, handler: libc::sighandler_t) {
    // SAFETY: setting a disposition to SIG_IGN or SIG_DFL; no handler code involved.
    unsafe { libc::signal(sig, handler) };
}

/// Block (or unblock) SIGTERM in the calling thread: the mask a forked child starts with.
fn block_sigterm(block: bool) {
    let mut set = nix::sys::signal::SigSet::empty();
    set.add(nix::sys::signal::Signal::SIGTERM);
    let how = if block { nix::sys::signal::SigmaskHow::SIG_BLOCK } else { nix::sys::signal::SigmaskHow::SIG_UNBLOCK };
    nix::sys::signal::pthread_sigmask(how, Some(&set), None).unwrap();
}

#[test]
fn children_start_with_default_signal_dispositions() {
    // 1. Inherited ignores and a blocked SIGTERM do not reach fsbench's children.
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        set_disposition(sig, libc::SIG_IGN);
    }
    block_sigterm(true);
    // The control: a child spawned without the hook inherits all of it, so the checks
    // below can fail.
    let (ign, blk) = ignored_and_blocked(&mut status_cat());
    assert_eq!(ign & HANDLED_BITS, HANDLED_BITS, "the control child should inherit the ignores: {ign:x}");
    assert_ne!(blk & (1 << (libc::SIGTERM - 1)), 0, "the control child should inherit the mask: {blk:x}");
    for (how, mut cmd) in [("default_in_child", status_cat()), ("contain", status_cat())] {
        if how == "contain" {
            contain(&mut cmd);
        } else {
            signals::default_in_child(&mut cmd);
        }
        let (ign, blk) = ignored_and_blocked(&mut cmd);
        assert_eq!(ign & HANDLED_BITS, 0, "{how}: the child ignores {ign:x}");
        assert_eq!(blk, 0, "{how}: the child starts with signals blocked: {blk:x}");
    }
    block_sigterm(false);

    // 2. The CI failure, end to end: SIGINT ignored in this process, sent to a lat_fs
    // worker held at its barrier: the worker dies of it and the run is interrupted.
    sigint_to_a_worker_is_not_lost_when_fsbench_ignores_sigint();

    // 3. A signal between fork and exec, with fsbench's handlers installed: the child
    // takes the default action instead of setting a flag in its own memory and running on.
    signals::install();
    for how in ["default_in_child", "contain"] {
        let mut cmd = Command::new("true");
        // Registered first, so it runs before the hook: the signal lands in the window
        // where the child still has fsbench's handler.
        // SAFETY: getpid and kill are async-signal-safe; nothing is allocated.
        unsafe {
            cmd.pre_exec(|| {
                libc::kill(libc::getpid(), libc::SIGINT);
                Ok(())
            });
        }
        if how == "contain" {
            contain(&mut cmd);
        } else {
            signals::default_in_child(&mut cmd);
        }
        let status = cmd.status().unwrap();
        assert_eq!(status.signal(), Some(libc::SIGINT), "{how}: the child ran on to exec `true`: {status:?}");
    }
    assert!(!signals::interrupted(), "the child's signal reached fsbench's flag");
}

fn sigint_to_a_worker_is_not_lost_when_fsbench_ignores_sigint() {
    set_disposition(libc::SIGINT, libc::SIG_IGN);
    let (tmp, dirs) = support::latfs::task_dirs(2);
    let mut spec = support::latfs::spec(false, Duration::from_secs(5));
    spec.repetitions = 1;
    // Task 1 is held in its setup (its first quota reference is a FIFO nobody reads), so
    // task 0 waits at the start barrier: alive until it is signalled.
    let uid = nix::unistd::geteuid().as_raw();
    nix::unistd::mkfifo(&dirs[1].join(format!(".quota-ref-{uid}-0")), nix::sys::stat::Mode::from_bits_truncate(0o666))
        .unwrap();
    let arg = format!("--dir={}", dirs[0].display());
    let killer = std::thread::spawn(move || {
        let find = || worker_with_arg(&arg);
        let pid = support::poll(Duration::from_secs(60), Duration::from_millis(5), find).expect("worker of task 0");
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGINT).unwrap();
        let died = support::poll(Duration::from_secs(20), Duration::from_millis(5), || (!alive(pid)).then_some(()));
        if died.is_none() {
            // Lost: end the run now rather than at the setup timeout.
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        }
        died.is_some()
    });
    let e = latfs::run(&LatfsRun { test: LatfsTest::OpenClose, spec: &spec, task_dirs: &dirs, exe: support::exe() })
        .unwrap_err();
    assert!(killer.join().unwrap(), "the SIGINT to the worker was lost (it inherited SIGINT ignored): {e}");
    assert!(e.is_interrupted(), "{e}");
    assert_eq!(e.task(), Some(0), "{e}");
    set_disposition(libc::SIGINT, libc::SIG_DFL);
    drop(tmp);
}

/// The pid of the process whose command line holds `arg`.
fn worker_with_arg(arg: &str) -> Option<i32> {
    std::fs::read_dir("/proc").unwrap().filter_map(|e| e.ok()?.file_name().into_string().ok()?.parse().ok()).find(
        |pid: &i32| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|b| b.split(|&c| c == 0).any(|a| a == arg.as_bytes()))
                .unwrap_or(false)
        },
    )
}

/// Whether `pid` is still running (a zombie has died).
fn alive(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("stat")) else {
        return false;
    };
    !stat.rsplit_once(')').map(|(_, r)| r.trim_start().starts_with('Z')).unwrap_or(true)
}
