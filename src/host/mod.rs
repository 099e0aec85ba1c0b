//! The machine around a measurement (ground floor, no command line): CPU totals
//! from /proc/stat for disturbance accounting, and the environment preflight
//! (governor, THP, load, busy neighbours, ...) recorded in `run.json`.

pub mod cpu;
pub mod environment;
pub mod identity;
pub mod memory;
pub mod pair_load;
pub mod task_uids;

/// Set in a qemu guest's environment for the fsbench that runs there (its cells then
/// know they run in a guest: no profiler, no mount namespace of their own).
pub const IN_GUEST_ENV: &str = "FSBENCH_IN_GUEST";

/// Whether fsbench runs as root (effective uid 0).
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}
