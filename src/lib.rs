//! fsbench: filesystem benchmarks described in TOML scenario files.
//!
//! Data flows one way through one module per stage:
//! `scenario` (parse, validate) -> `plan` (expand the matrix) -> `provision`
//! (real filesystems, RAII teardown) -> `workload` (lat_fs loops, timed steps)
//! -> `results` (self-describing files) -> `report` (tables, plots, compare).
//! `runner` drives one run through these stages; `cli` maps the command line onto it.

pub mod app;
pub mod bundle;
pub mod exit;
pub mod fixture;
pub mod gate;
pub mod model;
pub mod plan;
pub mod provision;
pub mod qemu;
pub mod report;
pub mod results;
pub mod runner;
pub mod scenario;
pub mod shard;
pub mod signals;
pub mod stats;
pub mod text;
pub mod workload;
