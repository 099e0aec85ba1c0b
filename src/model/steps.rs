//! What a steps cell measured: each step timed as time(1) does, per iteration and per copy.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Counters, Disturbance, TextFormat, Timeline, UntrustedText};

/// The timing of one step, as time(1) reports it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StepTiming {
    /// The command the step stands for, as the seed printed it (`tar zxf linux-2.5.63.tar.gz`).
    pub label: UntrustedText,
    /// The op name (`untar`).
    pub op: UntrustedText,
    /// User CPU microseconds: of the fsbench process (all threads), or for `exec` of the
    /// command and its waited-for descendants only.
    pub user_us: u64,
    /// System CPU microseconds, of the same processes as `user_us`.
    pub system_us: u64,
    /// Elapsed wall-clock microseconds from a monotonic clock.
    pub elapsed_us: u64,
    /// Maximum resident set size in KiB: the fsbench process's peak so far, or the command's for `exec`.
    #[serde(default)]
    pub max_rss_kib: u64,
    /// Other processes' CPU use during the step; a disturbed step is left out of the statistics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbance: Option<Disturbance>,
    /// Entries the step removed (`rm_rf`) or created (`untar`); absent for other ops and older results.
    /// Tells a steady iteration (one whose `rm_rf` removed the tree) from the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entries: Option<u64>,
    /// When the step started, in milliseconds on the clock of [`StepsResult::timeline`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_ms: Option<u64>,
    /// Kernel counters over the step, when monitored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<Counters>,
}

impl StepTiming {
    /// Whether this step's timing counts in statistics (it was not disturbed).
    pub fn counts(&self) -> bool {
        !self.disturbance.as_ref().is_some_and(|d| d.disturbed)
    }
}

impl StepTiming {
    /// CPU percentage as GNU time computes it: (user+system)/elapsed in whole
    /// milliseconds, truncated; `None` when elapsed rounds to 0 ms (time prints `?%`).
    pub fn cpu_percent(&self) -> Option<u64> {
        let v = self.elapsed_us / 1000;
        let u = self.user_us / 1000 + self.system_us / 1000;
        (v > 0).then(|| u * 100 / v)
    }

    /// The measurement in GNU time's default format, without the command:
    /// `0.02user 1.71system 0:02.16elapsed 80%CPU`. Values truncate as time(1) does.
    pub fn time_format(&self) -> String {
        fn secs(us: u64) -> String {
            format!("{}.{:02}", us / 1_000_000, (us % 1_000_000) / 10_000)
        }
        let e = self.elapsed_us;
        let (es, ecs) = (e / 1_000_000, (e % 1_000_000) / 10_000);
        let elapsed = if es >= 3600 {
            format!("{}:{:02}:{:02}", es / 3600, (es % 3600) / 60, es % 60)
        } else {
            format!("{}:{:02}.{:02}", es / 60, es % 60, ecs)
        };
        let cpu = match self.cpu_percent() {
            Some(p) => format!("{p}%"),
            None => "?%".into(),
        };
        format!("{}user {}system {}elapsed {}CPU", secs(self.user_us), secs(self.system_us), elapsed, cpu)
    }

    /// One line as seed 002 printed it: `<label> <time_format>`.
    pub fn seed_line(&self) -> String {
        format!("{} {}", self.label.escaped(TextFormat::Terminal), self.time_format())
    }
}

/// Everything a steps cell measured: `iterations[i][j]` is step j of iteration i.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StepsResult {
    /// Every iteration, every step, in order. With `tasks = N > 1`, the aggregate of the
    /// copies: per step, the slowest copy's elapsed time and the CPU times summed.
    pub iterations: Vec<Vec<StepTiming>>,
    /// Dirty memory and device activity sampled across all iterations, when monitored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Timeline>,
    /// With `tasks = N > 1`: each copy of the step sequence as it ran, at the same time.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub copies: Vec<StepsCopy>,
}

/// One of the concurrent copies of a steps cell (`tasks = N`), timed like time(1) in its own process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StepsCopy {
    /// Task number, from 0.
    pub task: u32,
    /// When the copy's first step started, µs since the Unix epoch (wall clock: comparable across copies).
    pub started_unix_us: u64,
    /// When the copy's last step finished, µs since the Unix epoch.
    pub finished_unix_us: u64,
    /// The copy's iterations, as [`StepsResult::iterations`] of a single copy.
    pub iterations: Vec<Vec<StepTiming>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing(user_us: u64, system_us: u64, elapsed_us: u64) -> StepTiming {
        StepTiming {
            label: "tar zxf linux-2.5.63.tar.gz".into(),
            op: "untar".into(),
            user_us,
            system_us,
            elapsed_us,
            max_rss_kib: 0,
            ..StepTiming::default()
        }
    }

    #[test]
    fn time_format_matches_seed_002() {
        // From the seed: "tar zxf linux-2.5.63.tar.gz 4.83user 5.86system 0:14.09elapsed 75%CPU"
        let t = timing(4_830_000, 5_860_000, 14_090_000);
        assert_eq!(t.seed_line(), "tar zxf linux-2.5.63.tar.gz 4.83user 5.86system 0:14.09elapsed 75%CPU");
        assert_eq!(timing(0, 30_000, 960_000).time_format(), "0.00user 0.03system 0:00.96elapsed 3%CPU");
    }

    #[test]
    fn time_format_truncates_and_switches_to_hours() {
        assert_eq!(timing(19_999, 0, 65_999_999).time_format(), "0.01user 0.00system 1:05.99elapsed 0%CPU");
        assert_eq!(timing(0, 0, 3_723_000_000).time_format(), "0.00user 0.00system 1:02:03elapsed 0%CPU");
        assert_eq!(timing(1, 1, 999).time_format(), "0.00user 0.00system 0:00.00elapsed ?%CPU");
    }
}
