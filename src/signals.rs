//! SIGINT/SIGTERM/SIGHUP: turn the first signal into a flag that the stages poll, so
//! that every guard is released on the normal path. A second signal does not
//! abort either: cleanup must finish, or mounts and loop devices stay behind.
//! SIGHUP is the closed terminal or dropped ssh session: as common as Ctrl-C.
//!
//! The signal may reach the main process alone (`kill <pid>`, `docker stop`,
//! systemd, Kubernetes): children are not expected to see it. Every stage that
//! waits for a child or loops over a tree polls [`interrupted`] at least every
//! [`POLL`] and stops the child itself. The stages say what they are doing
//! ([`enter`]), so that a second signal reports what fsbench is really waiting for.
//!
//! Children start with the default dispositions ([`default_in_child`], called by every
//! spawn): a forked child runs fsbench's handler until it execs, and a signal landing
//! there would only set a flag in the child's copy of memory, lost at exec; and a
//! disposition fsbench inherited as ignored (a CI runner started in the background
//! without job control ignores SIGINT, `nohup` ignores SIGHUP) would otherwise pass
//! to every worker, so that an interrupt sent to a worker was silently dropped.

use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::Once;
use std::sync::atomic::{AtomicI32, AtomicU8, AtomicUsize, Ordering};
use std::time::Duration;

use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};

static COUNT: AtomicUsize = AtomicUsize::new(0);
static ACTIVITY: AtomicU8 = AtomicU8::new(Activity::Other as u8);
static INSTALL: Once = Once::new();
/// The process that installed the handlers; any other pid running the handler is a
/// child forked from it that has not exec'd yet.
static INSTALLER: AtomicI32 = AtomicI32::new(0);

/// The signals fsbench handles, and that every child gets back at their default.
const HANDLED: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// How often a stage that waits (for a child, a pipe, a guest) checks [`interrupted`]:
/// the bound on how long a signal to the main process alone goes unnoticed.
pub const POLL: Duration = Duration::from_millis(50);

/// What the process is doing, for the message a repeated signal prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Activity {
    /// Anything else: parsing, writing results, reporting.
    Other = 0,
    /// Creating images, loop devices, filesystems and mounts.
    Provisioning = 1,
    /// A workload (lat_fs workers, steps, an exec child) is being stopped.
    Measuring = 2,
    /// Unmounting, detaching loop devices, removing scratch files.
    Releasing = 3,
    /// A qemu guest is running the cells.
    Guest = 4,
}

impl Activity {
    fn from_u8(v: u8) -> Activity {
        match v {
            1 => Activity::Provisioning,
            2 => Activity::Measuring,
            3 => Activity::Releasing,
            4 => Activity::Guest,
            _ => Activity::Other,
        }
    }

    /// What a repeated signal prints while the process is doing this (static: the handler cannot allocate).
    fn second_signal_message(self) -> &'static [u8] {
        match self {
            Activity::Other => b"\nfsbench: already stopping: finishing the result files (nothing is being measured)\n",
            Activity::Provisioning => {
                b"\nfsbench: already stopping: provisioning stops at its next object, then everything made so far is released\n"
            }
            Activity::Measuring => {
                b"\nfsbench: already stopping: the workload stops at its next file (lat_fs workers and exec children are killed); the cell is not stored\n"
            }
            Activity::Releasing => {
                b"\nfsbench: already stopping: unmounting and detaching loop devices (kill -9 leaves them for the next run to clean)\n"
            }
            Activity::Guest => b"\nfsbench: already stopping: the qemu guest is being killed\n",
        }
    }
}

/// Restores the previous [`Activity`] when dropped.
#[must_use = "the activity lasts as long as the guard"]
pub struct ActivityGuard {
    previous: u8,
}

impl Drop for ActivityGuard {
    fn drop(&mut self) {
        ACTIVITY.store(self.previous, Ordering::SeqCst);
    }
}

/// Say what the process is doing until the guard is dropped.
pub fn enter(activity: Activity) -> ActivityGuard {
    ActivityGuard { previous: ACTIVITY.swap(activity as u8, Ordering::SeqCst) }
}

/// What the process says it is doing (see [`enter`]).
pub fn activity() -> Activity {
    Activity::from_u8(ACTIVITY.load(Ordering::SeqCst))
}

extern "C" fn on_signal(sig: libc::c_int) {
    // Only async-signal-safe work here: atomics, getpid, signal, kill and write(2).
    // SAFETY: getpid(2) is async-signal-safe.
    if unsafe { libc::getpid() } != INSTALLER.load(Ordering::SeqCst) {
        // A child between fork and exec: the flag would die with its copy of memory.
        // Take the default action instead (the signal is blocked inside its handler, so
        // the re-sent one is delivered, and kills, as soon as this handler returns).
        // SAFETY: signal(2) and kill(2) are async-signal-safe.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::kill(libc::getpid(), sig);
        }
        return;
    }
    let n = COUNT.fetch_add(1, Ordering::SeqCst);
    let msg: &[u8] = if n == 0 {
        b"\nfsbench: interrupted: stopping the work and releasing mounts and loop devices\n"
    } else {
        Activity::from_u8(ACTIVITY.load(Ordering::SeqCst)).second_signal_message()
    };
    // SAFETY: write(2) is async-signal-safe; msg is a static buffer.
    unsafe { libc::write(libc::STDERR_FILENO, msg.as_ptr().cast(), msg.len()) };
}

/// Install the SIGINT/SIGTERM/SIGHUP handlers (once per process; safe with threads).
pub fn install() {
    INSTALL.call_once(|| {
        // Before the handlers: a signal must never find them without knowing whose they are.
        INSTALLER.store(std::process::id() as i32, Ordering::SeqCst);
        // SA_RESTART: system calls in progress finish; the flag is polled between steps
        // and, where a stage waits, at least every POLL (poll(2) is never restarted).
        let action = SigAction::new(SigHandler::Handler(on_signal), SaFlags::SA_RESTART, SigSet::empty());
        for sig in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
            // SAFETY: the handler only touches atomics and calls write(2).
            unsafe { sigaction(sig, &action) }.expect("installing a handler cannot fail for SIGINT/SIGTERM/SIGHUP");
        }
    });
}

/// Make `cmd`'s child start with SIGINT, SIGTERM and SIGHUP at their default action and
/// no signal blocked ([`reset_in_child`] first thing after fork). Every process fsbench
/// spawns goes through this (the contained ones through
/// [`crate::workload::child::contain`]), so that an interrupt sent to a child is never lost.
pub fn default_in_child(cmd: &mut Command) -> &mut Command {
    // SAFETY: reset_in_child only calls async-signal-safe functions and allocates nothing.
    unsafe { cmd.pre_exec(reset_in_child) }
}

/// In a freshly forked child (between fork and exec): SIGINT, SIGTERM and SIGHUP back to
/// their default action, whatever fsbench inherited or installed, and an empty signal
/// mask. A signal that arrived before this ran was taken by the handler's child branch
/// (see `on_signal`), so none is lost. Only async-signal-safe calls; allocates nothing.
pub fn reset_in_child() -> std::io::Result<()> {
    for sig in HANDLED {
        // SAFETY: signal(2) with SIG_DFL is async-signal-safe and takes no pointers.
        if unsafe { libc::signal(sig, libc::SIG_DFL) } == libc::SIG_ERR {
            return Err(std::io::Error::last_os_error());
        }
    }
    // SAFETY: an empty set, filled by sigemptyset, and no old set asked for.
    unsafe {
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        if libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Whether SIGINT, SIGTERM or SIGHUP has arrived since [`install`].
pub fn interrupted() -> bool {
    COUNT.load(Ordering::SeqCst) > 0
}

/// How many SIGINT/SIGTERM/SIGHUP signals have arrived.
pub fn count() -> usize {
    COUNT.load(Ordering::SeqCst)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every spawn outside tests passes through [`default_in_child`] (directly or through
    /// `contain`) within ten lines of its `Command::new`: a new spawn that forgets it
    /// would bring back the lost interrupt.
    #[test]
    fn every_command_fsbench_spawns_resets_its_signals() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut stack = vec![root.join("src")];
        let mut spawns = 0;
        let mut bad = Vec::new();
        while let Some(dir) = stack.pop() {
            for path in std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()) {
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                if path.extension().is_none_or(|e| e != "rs") || path.ends_with("signals.rs") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                // Test modules sit at the end of their file; their children are the test's.
                let code = text.split("#[cfg(test)]").next().unwrap_or("");
                let lines: Vec<&str> = code.lines().collect();
                for (n, line) in lines.iter().enumerate() {
                    if !line.contains("Command::new(") || line.trim_start().starts_with("//") {
                        continue;
                    }
                    spawns += 1;
                    let near = lines[n..lines.len().min(n + 10)].join("\n");
                    if !near.contains("default_in_child(") && !near.contains("contain(") {
                        bad.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
                    }
                }
            }
        }
        assert!(spawns >= 10, "the search found only {spawns} spawns: is it still looking at src/?");
        assert!(bad.is_empty(), "spawned without signals::default_in_child:\n{}", bad.join("\n"));
    }

    #[test]
    fn activity_guard_restores_the_previous_activity() {
        let before = activity();
        let outer = enter(Activity::Provisioning);
        {
            let _inner = enter(Activity::Releasing);
            assert_eq!(activity(), Activity::Releasing);
        }
        assert_eq!(activity(), Activity::Provisioning);
        drop(outer);
        assert_eq!(activity(), before);
    }

    #[test]
    fn second_signal_messages_never_claim_cleanup_while_measuring() {
        let m = String::from_utf8_lossy(Activity::Measuring.second_signal_message()).into_owned();
        assert!(m.contains("killed") && m.contains("not stored"), "{m}");
        for a in [Activity::Other, Activity::Provisioning, Activity::Releasing, Activity::Guest] {
            assert!(a.second_signal_message().ends_with(b"\n"));
            assert_eq!(Activity::from_u8(a as u8), a);
        }
    }
}
