//! fsbench: filesystem benchmarks described in TOML scenario files.
//!
//! Data flows one way through one module per stage:
//! `scenario` (parse, validate) -> `plan` (expand the matrix) -> `provision`
//! (real filesystems, RAII teardown) -> `workload` (lat_fs loops, timed steps)
//! -> `results` (self-describing files) -> `report` (tables, plots, compare) -> `gate`.
//! `runner` drives one run through these stages from a plain `RunRequest`; `qemu`,
//! `shard` and `bundle` carry runs to other kernels, machines and labs.
//! `app` is the command line on top: the only module that knows the argument parser, prints command
//! output or picks exit codes. `model`, `text`, `exit`, `signals`, `stats`, `host` (the machine around
//! a measurement) and `beneath` (opening beneath a directory without following links) are the ground floor.

pub mod app;
pub mod beneath;
pub mod bundle;
pub mod exit;
pub mod fixture;
pub mod gate;
pub mod host;
pub mod model;
pub mod monitor;
pub mod output;
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

#[cfg(test)]
mod layout_rules;
