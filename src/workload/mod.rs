//! The workloads that run on provisioned filesystems: lmbench's lat_fs loops,
//! timed step sequences (rm -rf / tar zxf / sync) and fio jobs.

pub mod child;
pub mod child_cgroup;
pub mod fio;
pub mod kind;
pub mod latfs;
pub mod ops;
pub mod rusage;
pub mod steps;
pub mod untar;
