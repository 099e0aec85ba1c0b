//! The machine around a measurement (ground floor, no command line): CPU totals
//! from /proc/stat for disturbance accounting, and the environment preflight
//! (governor, THP, load, busy neighbours, ...) recorded in `run.json`.

pub mod cpu;
pub mod environment;
pub mod identity;
pub mod memory;
pub mod task_uids;
