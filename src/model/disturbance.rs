//! Other processes' CPU use during one measured window.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How much other processes used the CPUs during one measured window (see `host::cpu`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Disturbance {
    /// Wall time of the window in µs (a lat_fs repetition from spawn to reap, or one step).
    pub wall_us: u64,
    /// The run's own CPU time in the window: fsbench and every process under it
    /// (workers, copies, exec'd commands), with their reaped children, µs.
    pub own_cpu_us: u64,
    /// Kernel threads and interrupts (writeback, loop workers, journal threads:
    /// mostly work the run's own I/O caused), µs. Recorded, not a disturbance.
    #[serde(default)]
    pub kernel_cpu_us: u64,
    /// CPU time of other processes: /proc/stat process time minus `own_cpu_us`
    /// and the kernel threads' time, µs.
    pub foreign_cpu_us: u64,
    /// Steal time of all CPUs (a virtual machine's CPUs given to others), µs.
    pub steal_us: u64,
    /// `(foreign_cpu_us + steal_us) / wall_us`, in CPUs: how busy the others were,
    /// whether or not they competed with the run (see `contention_us`).
    pub share: f64,
    /// `contention_us / wall_us` exceeded the threshold, by at least
    /// `host::cpu::MIN_TICKS` clock ticks (results written before contention was
    /// recorded judged `share` instead): the sample is kept but left out of the statistics.
    pub disturbed: bool,
    /// CPUs the run needed during the window: one per task (lat_fs worker or steps copy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needed_cpus: Option<u32>,
    /// CPUs online during the window (the `cpuN` lines of /proc/stat).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub online_cpus: Option<u32>,
    /// Foreign CPU time that did not fit into the CPUs the run left idle, plus steal
    /// time, µs (`host::cpu::contention_us`): what the threshold is compared with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contention_us: Option<u64>,
    /// The threshold `disturbed` was judged at, in CPUs (`workload.disturbance`); absent in
    /// results written before it was recorded (then `host::cpu::DEFAULT_THRESHOLD`). The
    /// pair rule (`host::pair_load`) judges a pair's members' difference at it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f64>,
}
