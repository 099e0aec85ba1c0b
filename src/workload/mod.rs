//! The workloads that run on provisioned filesystems: lmbench's lat_fs loops,
//! timed step sequences (rm -rf / tar zxf / sync) and fio jobs, a folder each.
//!
//! [`kind`] is the one interface through which each answers its own questions (rounds,
//! expected duration, member value, default metric, how it runs on a cell) and the one
//! dispatch over the kinds; the rest of fsbench names no workload kind.

pub mod child;
pub mod child_cgroup;
pub mod fio;
pub mod kind;
pub mod latfs;
pub mod ops;
pub mod reruns;
pub mod rusage;
pub mod steps;
pub mod untar;
