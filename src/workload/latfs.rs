//! The lmbench lat_fs loops: N worker processes, a start barrier, a timed window.

/// Entry point of the hidden `__latfs-worker` subcommand; returns the exit code.
pub fn worker_main(_args: &[String]) -> i32 {
    eprintln!("error: the lat_fs worker is not built yet (issue 4)");
    crate::exit::FAILURE
}
