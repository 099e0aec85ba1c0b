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

use std::sync::Once;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::time::Duration;

use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};

static COUNT: AtomicUsize = AtomicUsize::new(0);
static ACTIVITY: AtomicU8 = AtomicU8::new(Activity::Other as u8);
static INSTALL: Once = Once::new();

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

extern "C" fn on_signal(_sig: libc::c_int) {
    // Only async-signal-safe work here: atomics and write(2).
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
        // SA_RESTART: system calls in progress finish; the flag is polled between steps
        // and, where a stage waits, at least every POLL (poll(2) is never restarted).
        let action = SigAction::new(SigHandler::Handler(on_signal), SaFlags::SA_RESTART, SigSet::empty());
        for sig in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
            // SAFETY: the handler only touches atomics and calls write(2).
            unsafe { sigaction(sig, &action) }.expect("installing a handler cannot fail for SIGINT/SIGTERM/SIGHUP");
        }
    });
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
