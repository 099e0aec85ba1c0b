//! What a lat_fs cell measured: per-task samples, repetitions, rounds and the result.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Counters, Disturbance, LatencyDist, Summary};

/// Per-task sample of one lat_fs repetition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TaskSample {
    /// Task number, from 0.
    pub task: u32,
    /// Iterations of the loop completed in the timed window.
    pub iterations: u64,
    /// Length of the timed window in nanoseconds.
    pub window_ns: u64,
    /// User CPU time of the worker in microseconds (rusage from wait4).
    pub user_us: u64,
    /// System CPU time of the worker in microseconds (rusage from wait4).
    pub sys_us: u64,
}

impl TaskSample {
    /// Loops per millisecond of this task: lmbench's per-worker `loops`.
    pub fn loops_per_ms(&self) -> f64 {
        if self.window_ns == 0 {
            return 0.0;
        }
        self.iterations as f64 / (self.window_ns as f64 / 1e6)
    }
}

/// One repetition of a lat_fs cell: all tasks timed together.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LatfsRepetition {
    /// Per-task samples.
    pub tasks: Vec<TaskSample>,
    /// Sum over tasks of loops per millisecond (the seed's `total_loops`).
    pub total_loops_per_ms: f64,
    /// Mean latency of one loop iteration in microseconds, averaged over tasks.
    pub latency_us: f64,
    /// Other processes' CPU use during the repetition; absent when not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbance: Option<Disturbance>,
    /// Kernel counters over the repetition (start barrier to the last result), when monitored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<Counters>,
    /// Latency of every timed iteration, merged over tasks (`latency = "histogram"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_dist: Option<LatencyDist>,
    /// The round (`workload.rounds`) this repetition ran in, from 0; absent in round 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub round: u32,
}

impl LatfsRepetition {
    /// Whether this repetition counts in statistics (it was not disturbed).
    pub fn counts(&self) -> bool {
        !self.disturbance.as_ref().is_some_and(|d| d.disturbed)
    }
}

/// The samples a cell's statistics are over, from its repetitions and a value of each
/// (`None`: the repetition has none, e.g. no histogram).
///
/// Undisturbed repetitions only. With one round, each repetition's value. With several
/// rounds (`workload.rounds`), the mean of each round's values, in round order: the
/// repetitions of one round share a provisioned filesystem and a stretch of the machine's
/// time, so they vary less than rounds do, and an interval over them would claim more
/// than the data shows (multi-level repetition, Kalibera and Jones 2013). A round
/// without a counted value gives no sample.
pub fn round_samples(reps: &[LatfsRepetition], value: impl Fn(&LatfsRepetition) -> Option<f64>) -> Vec<f64> {
    let counted = || reps.iter().filter(|r| r.counts()).filter_map(|r| value(r).map(|v| (r.round, v)));
    let first = reps.first().map_or(0, |r| r.round);
    if reps.iter().all(|r| r.round == first) {
        return counted().map(|(_, v)| v).collect();
    }
    let mut by_round: std::collections::BTreeMap<u32, (f64, usize)> = Default::default();
    for (round, v) in counted() {
        let e = by_round.entry(round).or_default();
        e.0 += v;
        e.1 += 1;
    }
    by_round.values().map(|(sum, n)| sum / *n as f64).collect()
}

/// Why a lat_fs cell stopped repeating.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// A fixed number of repetitions, all done.
    Fixed,
    /// The 95% CI half-width of the mean reached the target (`repetitions.ci`).
    CiTarget,
    /// `repetitions.max` undisturbed repetitions without reaching the CI target.
    MaxRepetitions,
    /// Disturbed repetitions used up `max_reruns` before enough undisturbed ones were taken.
    RerunBudget,
}

/// Everything a lat_fs cell measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LatfsResult {
    /// Every repetition, in order, disturbed ones included (marked).
    pub repetitions: Vec<LatfsRepetition>,
    /// Statistics of `total_loops_per_ms` over the undisturbed repetitions (over the
    /// rounds' means with several rounds: [`round_samples`]).
    pub total_loops: Summary,
    /// Statistics of `latency_us`, over the same samples as `total_loops`.
    pub latency_us: Summary,
    /// Why the cell stopped repeating (in its last round); absent in results of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<StopReason>,
    /// Repetitions run again because they were disturbed (over all rounds).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reruns: u32,
    /// CPU each task was pinned to (`[workload] pin = "spread"`), by task; empty when not pinned.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pinned_cpus: Vec<u32>,
    /// Latency of every timed iteration, merged over tasks and the undisturbed repetitions
    /// (`latency = "histogram"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_dist: Option<LatencyDist>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl LatfsResult {
    /// Rounds stored (`workload.rounds`): one more than the last repetition's round.
    pub fn rounds_done(&self) -> u32 {
        self.repetitions.iter().map(|r| r.round + 1).max().unwrap_or(0)
    }

    /// [`round_samples`] of this result's repetitions.
    pub fn samples(&self, value: impl Fn(&LatfsRepetition) -> Option<f64>) -> Vec<f64> {
        round_samples(&self.repetitions, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rep(round: u32, loops: f64, disturbed: bool) -> LatfsRepetition {
        let disturbance = disturbed.then(|| Disturbance { disturbed: true, ..Disturbance::default() });
        LatfsRepetition { round, total_loops_per_ms: loops, disturbance, ..LatfsRepetition::default() }
    }

    #[test]
    fn statistics_are_over_repetitions_in_one_round_and_over_round_means_in_several() {
        let loops = |r: &LatfsRepetition| Some(r.total_loops_per_ms);
        // One round: every undisturbed repetition, in order.
        let one = [rep(0, 10.0, false), rep(0, 99.0, true), rep(0, 12.0, false)];
        assert_eq!(round_samples(&one, loops), vec![10.0, 12.0]);
        // Three rounds: one sample per round, its undisturbed repetitions' mean; a round whose
        // repetitions were all disturbed gives none.
        let three = [
            rep(0, 10.0, false),
            rep(0, 14.0, false),
            rep(1, 20.0, false),
            rep(1, 500.0, true),
            rep(2, 7.0, true),
            rep(3, 30.0, false),
            rep(3, 33.0, false),
            rep(3, 36.0, false),
        ];
        assert_eq!(round_samples(&three, loops), vec![12.0, 20.0, 33.0]);
        // A value a repetition lacks (no histogram) is no sample.
        assert!(round_samples(&three, |_| None).is_empty());
        let r = LatfsResult { repetitions: three.to_vec(), ..LatfsResult::default() };
        assert_eq!(r.rounds_done(), 4);
        assert_eq!(LatfsResult::default().rounds_done(), 0);
    }
}
