//! The signal flag lives alone in this test binary: raising SIGINT here must
//! not make other tests believe the run was interrupted.

use fsbench::signals;
use nix::sys::signal::{Signal, raise};

#[test]
fn first_and_second_signal_set_the_flag_and_do_not_kill() {
    signals::install();
    signals::install(); // idempotent
    assert!(!signals::interrupted());
    raise(Signal::SIGTERM).unwrap();
    assert!(signals::interrupted());
    raise(Signal::SIGINT).unwrap();
    assert_eq!(signals::count(), 2, "the second signal is counted, not fatal");
}
