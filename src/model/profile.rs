//! What a cell's profile was: asked for in the scenario (`[workload] profile = "cpu"`),
//! recorded in one separate repetition of the cell, stored beside its result.
//!
//! The folded stacks themselves are a file of their own (`profiles/<cell-id>.folded`,
//! one `frame;frame;frame count` line per distinct stack): the cell file only says how
//! they were taken, or why they were not.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What to profile in each cell (`[workload] profile`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProfileMode {
    /// On-CPU stacks, kernel and user, of the cell's workers, sampled at a fixed frequency.
    Cpu,
    /// The on-CPU stacks and, from the same window, where the workers were blocked off the
    /// CPU (`cpu+offcpu`): each `sched_switch` away from a worker that was not runnable,
    /// weighted by the microseconds until it ran again.
    #[serde(rename = "cpu+offcpu")]
    CpuOffcpu,
    /// `cpu`, and the kernel threads' on-CPU stacks beside the workers' (`cpu+kthreads`):
    /// the journal thread, the loop device's and the block layer's workers, writeback,
    /// which do a filesystem's flushes, commits and I/O on the workers' behalf.
    #[serde(rename = "cpu+kthreads")]
    CpuKthreads,
    /// `cpu+offcpu` with the kernel threads: their on-CPU stacks and their uninterruptible
    /// waits (I/O, locks), not their sleeps waiting for work (`cpu+offcpu+kthreads`).
    #[serde(rename = "cpu+offcpu+kthreads")]
    CpuOffcpuKthreads,
}

impl ProfileMode {
    /// Every mode, in the order the scenario reference lists them.
    pub const ALL: [ProfileMode; 4] =
        [ProfileMode::Cpu, ProfileMode::CpuOffcpu, ProfileMode::CpuKthreads, ProfileMode::CpuOffcpuKthreads];

    /// The scenario's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ProfileMode::Cpu => "cpu",
            ProfileMode::CpuOffcpu => "cpu+offcpu",
            ProfileMode::CpuKthreads => "cpu+kthreads",
            ProfileMode::CpuOffcpuKthreads => "cpu+offcpu+kthreads",
        }
    }

    /// The mode spelled `text` in a scenario.
    pub fn parse(text: &str) -> Option<ProfileMode> {
        ProfileMode::ALL.into_iter().find(|m| m.as_str() == text)
    }

    /// Off-CPU stacks too.
    pub fn offcpu(self) -> bool {
        matches!(self, ProfileMode::CpuOffcpu | ProfileMode::CpuOffcpuKthreads)
    }

    /// The kernel threads too, system-wide.
    pub fn kthreads(self) -> bool {
        matches!(self, ProfileMode::CpuKthreads | ProfileMode::CpuOffcpuKthreads)
    }
}

/// How a cell's profile was taken, or why it was not (`profile` of a cell file).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CellProfile {
    /// Why the cell ran unprofiled (`perf is not installed ...`); `None` when it was profiled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_profiled: Option<String>,
    /// The sampled event: `cycles` where the CPU has a PMU, `cpu-clock` where not (VMs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// Sampling frequency, samples per second per CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency_hz: Option<u32>,
    /// Release of the kernel whose symbols the stacks name (`uname -r`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_release: Option<String>,
    /// GNU build id of that kernel (`perf buildid-list -k`), where it could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_build_id: Option<String>,
    /// The recorder (`perf version 6.1.187`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorder: Option<String>,
    /// Samples of the cell's workers kept in the folded stacks (the remainder line included).
    #[serde(default)]
    pub samples: u64,
    /// Distinct stacks stored.
    #[serde(default)]
    pub stacks: u64,
    /// Stacks merged into the remainder line to keep the file within its cap (the coldest).
    #[serde(default)]
    pub merged_stacks: u64,
    /// The folded-stacks file, relative to the run directory (`profiles/<cell-id>.folded`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The folded stacks, held until the store writes them into [`CellProfile::file`];
    /// never part of the cell file itself (the report reads the file, leniently).
    #[serde(skip)]
    #[schemars(skip)]
    pub folded: String,
    /// When the cell was loaded back: why its folded stacks could not be used (missing,
    /// garbled, too large); never part of the cell file.
    #[serde(skip)]
    #[schemars(skip)]
    pub unreadable: Option<String>,
    /// What a stack's count is: absent for samples of [`CellProfile::event`];
    /// `us_blocked` for an off-CPU profile (microseconds off the CPU while not runnable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<String>,
    /// `cpu+offcpu`: where the workers waited in the same window, as a profile of its own
    /// (`weight` `us_blocked`, stored as `profiles/<cell-id>.offcpu.folded`), or why not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offcpu: Option<Box<CellProfile>>,
    /// `cpu+offcpu`: microseconds the workers were switched out while still runnable
    /// (preempted: waiting for a CPU, not for the filesystem), not in the off-CPU stacks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runnable_us: Option<u64>,
    /// Paired runs: which profiled member of its cell this is (0 for the first). The
    /// members profiled k-th in the arms of one pair group ran in the same stretch of the
    /// pair schedule, so the profile diff pairs them by this index; absent in unpaired runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pair: Option<u32>,
}

/// [`CellProfile::weight`] of an off-CPU profile.
pub const WEIGHT_US_BLOCKED: &str = "us_blocked";

impl CellProfile {
    /// A cell that ran unprofiled, and why.
    pub fn not_profiled(why: impl Into<String>) -> CellProfile {
        CellProfile { not_profiled: Some(why.into()), ..CellProfile::default() }
    }
}
