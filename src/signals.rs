//! SIGINT/SIGTERM/SIGHUP: turn the first signal into a flag that the stages poll, so
//! that every guard is released on the normal path. A second signal does not
//! abort either: cleanup must finish, or mounts and loop devices stay behind.
//! SIGHUP is the closed terminal or dropped ssh session: as common as Ctrl-C.

use std::sync::Once;
use std::sync::atomic::{AtomicUsize, Ordering};

use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};

static COUNT: AtomicUsize = AtomicUsize::new(0);
static INSTALL: Once = Once::new();

extern "C" fn on_signal(_sig: libc::c_int) {
    // Only async-signal-safe work here: an atomic and write(2).
    let n = COUNT.fetch_add(1, Ordering::SeqCst);
    let msg: &[u8] = if n == 0 {
        b"\nfsbench: interrupted, cleaning up\n"
    } else {
        b"\nfsbench: still cleaning up (mounts and loop devices must be released first)\n"
    };
    // SAFETY: write(2) is async-signal-safe; msg is a static buffer.
    unsafe { libc::write(libc::STDERR_FILENO, msg.as_ptr().cast(), msg.len()) };
}

/// Install the SIGINT/SIGTERM/SIGHUP handlers (once per process; safe with threads).
pub fn install() {
    INSTALL.call_once(|| {
        // SA_RESTART: system calls in progress finish; the flag is polled between steps.
        let action = SigAction::new(SigHandler::Handler(on_signal), SaFlags::SA_RESTART, SigSet::empty());
        for sig in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
            // SAFETY: the handler only touches an atomic and calls write(2).
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
