//! fsbench: filesystem benchmarks described in TOML scenario files.
//!
//! Data flows one way through one module per stage:
//! `scenario` (parse, validate) -> `plan` (expand the matrix) -> `provision`
//! (real filesystems, RAII teardown) -> `workload` (lat_fs loops, timed steps, untar, fio
//! jobs; `monitor` counts what the kernel did meanwhile) -> `results` (self-describing files)
//! -> `report` (tables, plots, compare) -> `gate` (verdicts, in the words of `verdict`, on the
//! metrics of `catalogue`: each metric's unit, direction and which samples of a cell it reads).
//! `history` reads every run of a scenario as series, `calibration` the spread between runs.
//! `profile` records where a cell's workers spent their CPU (perf, folded stacks) and `bisect`
//! finds which of an ordered list of kernels brought a regression, a paired run per step.
//! `runner` drives one run through these stages from a plain `RunRequest`; `qemu`,
//! `shard` and `bundle` carry runs to other kernels, machines and labs; `fixture` generates
//! the synthetic kernel tree the untar steps unpack.
//! `app` is the command line on top: the only module that knows the argument parser, prints command
//! output or picks exit codes. `model`, `text`, `exit`, `signals`, `stats`, `host` (the machine around
//! a measurement), `beneath` (opening beneath a directory without following links) and `rng` (the
//! one random-number generator) are the ground floor.
//!
//! # Where to start reading
//!
//! - **A run**: [`runner::run`] takes a [`runner::RunRequest`] (a loaded scenario and the
//!   options of `fsbench run`), plans the cells, provisions each one, runs its workload and
//!   writes one result file per cell as it goes. The types it produces are in [`model`].
//! - **A report**: [`report`] renders loaded results as tables, plots and HTML; its renderers
//!   are pure (results in, bytes out), and `app::report` is the command that loads and prints.
//! - **The gate**: [`gate`] turns a comparison of two runs into verdicts, with the interval
//!   computed in [`stats`]; `app::gate` maps the verdicts to exit codes for CI. Two separate
//!   runs of one round each are judged with the spread between runs that [`calibration`]
//!   measured (`fsbench calibrate`), or against a history of runs (`gate --history N`).
//!   The rule itself is written once: the verdict in [`verdict`], and in [`catalogue`] each
//!   metric, which way is better and which samples of a cell it reads (steady, undisturbed),
//!   which gate, compare, history, export and the paired join all call.
//! - **A fio cell**: [`workload::fio`] composes the scenario's job per cell, has fio check it
//!   before anything is provisioned, runs it once per repetition and reads its JSON into
//!   typed figures ([`model`]'s `FioResult`).
//! - **History**: [`history`] loads every run of a scenario, splits them where the scenario
//!   changed what is measured, and renders one series per cell and metric (table, CSV,
//!   HTML charts), with change points; its index keeps finished runs in SQLite.
//!
//! # A word used everywhere: seed
//!
//! "Seed 000" and "seed 002", or "the seed", are the two source documents fsbench reproduces,
//! kept in `tests/data/`: seed 000 is a set of lmbench lat_fs tables (the lat_fs workload,
//! [`report`]'s table layout), seed 002 an LKML post timing `rm -rf; tar zxf; sync` (the
//! steps workload, time(1) lines). "As the seed did" means as that document did. The only
//! other seeds are random-number seeds, always named as such: `run --order random --seed N`
//! and the fixture generator's seed ([`fixture`]).

pub mod app;
pub mod beneath;
pub mod bisect;
pub mod bundle;
pub mod calibration;
pub mod catalogue;
pub mod exit;
pub mod fixture;
pub mod gate;
pub mod history;
pub mod host;
pub mod model;
pub mod monitor;
pub mod plan;
pub mod profile;
pub mod provision;
pub mod qemu;
pub mod report;
pub mod results;
pub mod rng;
pub mod runner;
pub mod scenario;
pub mod shard;
pub mod signals;
pub mod stats;
pub mod text;
pub mod verdict;
pub mod workload;

#[cfg(test)]
mod layout_rules;
