//! The metric catalogue: every metric fsbench compares, with its name, its unit, which way
//! it is better ([`Direction`], the crate's only one), and the one rule that takes a cell's
//! samples for it ([`samples`]). `gate`, `compare`, `history`, `export`, the paired join
//! and `calibration` all read a cell's numbers here, so they state one number for one run.
//!
//! # The samples rule
//!
//! A cell's samples of a metric are its **steady, undisturbed** measurements:
//!
//! - **lat_fs** (`total_loops`, a latency percentile from `latency = "histogram"`): one value
//!   per undisturbed repetition; with several rounds (`workload.rounds`), the mean of each
//!   round's undisturbed repetitions, one sample per round ([`crate::model::round_samples`]).
//!   A percentile is read from each repetition's own histogram.
//! - **steps** (`elapsed`, per step): one value per *steady* iteration that was not
//!   disturbed. Steady ([`Iterations::Steady`]) is every iteration whose `rm_rf` removed
//!   something, or from the second on when that is not recorded (iteration 1's `rm -rf` of
//!   nothing measures no filesystem work); a cell of one iteration keeps it.
//! - **fio** (`iops`, `bw`, `p99`, `clat_mean`): one value per undisturbed repetition.
//!
//! A run's value of a metric (what `history` plots and `export` writes beside its median) is
//! the mean of these samples; a paired member's value is the mean of its round's samples
//! ([`round_samples`], [`step_samples`]).

use serde::Serialize;

use crate::model::{CellResult, FioMetric, StepTiming, TextFormat};
use crate::monitor::latency::Percentile;

mod iterations;

pub use iterations::Iterations;

/// Every unit a metric has ([`Metric::unit`]): lat_fs loops, step times, latencies, fio IOPS
/// and bandwidth. A reader that keeps units as `&'static str` (history's index) maps text
/// read back to one of these.
pub const UNITS: [&str; 5] = ["loops/ms", "s", "µs", "IOPS", "MiB/s"];

/// Which way a metric gets better. Serialized as `higher` / `lower`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub enum Direction {
    /// More is better (loops per millisecond, IOPS, bandwidth): worse means lower.
    #[serde(rename = "higher")]
    HigherIsBetter,
    /// Less is better (elapsed time, latency): worse means higher.
    #[serde(rename = "lower")]
    LowerIsBetter,
}

impl Direction {
    /// The direction in one word, as `history`'s files and index store it: `higher`, `lower`.
    pub fn word(self) -> &'static str {
        match self {
            Direction::HigherIsBetter => "higher",
            Direction::LowerIsBetter => "lower",
        }
    }

    /// The direction named by [`Direction::word`].
    pub fn from_word(word: &str) -> Option<Direction> {
        match word {
            "higher" => Some(Direction::HigherIsBetter),
            "lower" => Some(Direction::LowerIsBetter),
            _ => None,
        }
    }

    /// The direction of "better" in words, for reports: `higher is better`.
    pub fn better(self) -> &'static str {
        match self {
            Direction::HigherIsBetter => "higher is better",
            Direction::LowerIsBetter => "lower is better",
        }
    }

    /// The direction of "worse" in words, for reports: `lower is worse`.
    pub fn worse(self) -> &'static str {
        match self {
            Direction::HigherIsBetter => "lower is worse",
            Direction::LowerIsBetter => "higher is worse",
        }
    }
}

/// A metric a cell is compared on; serialized as its `--metric` name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// lat_fs loops per ms over all tasks (higher is better).
    TotalLoops,
    /// Wall-clock time of a step in seconds (lower is better).
    Elapsed,
    /// A percentile of lat_fs operation latency in µs, from `latency = "histogram"` runs
    /// (lower is better): `--metric p99`.
    Latency(Percentile),
    /// A fio cell's figure per repetition: `--metric iops|bw|p99|clat_mean`.
    Fio(FioMetric),
    /// An op-mix cell's figure per repetition: `--metric ops|p99|mbps`.
    Ops(crate::model::OpsMetric),
}

impl Serialize for Metric {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl Metric {
    /// Name as given to `--metric`.
    pub fn name(self) -> &'static str {
        match self {
            Metric::TotalLoops => "total_loops",
            Metric::Elapsed => "elapsed",
            Metric::Latency(p) => p.name(),
            Metric::Fio(m) => m.name(),
            Metric::Ops(m) => m.name(),
        }
    }

    /// Name of the measure in `history` and `export`, where a lat_fs latency percentile
    /// sits beside fio's `p99`: `latency_p99`; otherwise [`Metric::name`].
    pub fn measure_name(self) -> String {
        match self {
            Metric::Latency(p) => format!("latency_{}", p.name()),
            m => m.name().to_string(),
        }
    }

    /// Which way is better for this metric.
    pub fn direction(self) -> Direction {
        match self {
            Metric::TotalLoops | Metric::Fio(FioMetric::Iops | FioMetric::Bw) => Direction::HigherIsBetter,
            Metric::Elapsed | Metric::Latency(_) | Metric::Fio(FioMetric::P99 | FioMetric::ClatMean) => {
                Direction::LowerIsBetter
            }
            Metric::Ops(m) if m.higher_is_better() => Direction::HigherIsBetter,
            Metric::Ops(_) => Direction::LowerIsBetter,
        }
    }

    /// Unit of the samples as printed: `loops/ms`, `s`, `µs`, `IOPS`, `MiB/s`.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::TotalLoops => "loops/ms",
            Metric::Elapsed => "s",
            Metric::Latency(_) => "µs",
            Metric::Fio(m) => m.unit(),
            Metric::Ops(m) => m.unit(),
        }
    }

    /// [`Metric::unit`] in ASCII (`us` for `µs`), for dashboards that take plain names.
    pub fn ascii_unit(self) -> &'static str {
        match self.unit() {
            "µs" => "us",
            u => u,
        }
    }

    /// The metric column: name, unit and which way is worse (`elapsed [s], higher is worse`).
    pub fn described(self) -> String {
        format!("{} [{}], {}", self.name(), self.unit(), self.direction().worse())
    }

    /// This metric's value in one lat_fs repetition (`None`: it has no histogram).
    fn of_latfs(self, r: &crate::model::LatfsRepetition) -> Option<f64> {
        match self {
            Metric::Latency(p) => r.latency_dist.as_ref().map(|d| p.of(d) as f64 / 1e3),
            _ => Some(r.total_loops_per_ms),
        }
    }
}

/// The step a [`Quantity`] is: its index in the iteration and what names it.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Index of the step in an iteration, from 0.
    pub index: usize,
    /// Its op (`untar`), escaped for the terminal: the `[gate]` key.
    pub op: String,
    /// Its label (`tar zxf linux-2.5.63.tar.gz`), escaped for the terminal.
    pub label: String,
}

/// One compared quantity of a cell on a metric: the whole cell, or one step of a steps cell.
#[derive(Debug, Clone, PartialEq)]
pub struct Quantity {
    /// The name comparisons match on: the cell id, or `<cell id>#<step index> <op>`.
    pub name: String,
    /// The `[gate]` key its threshold comes from: the lat_fs test, the step op, the fio metric.
    pub key: String,
    /// The step, for a steps cell.
    pub step: Option<Step>,
    /// Its samples by the rule of this module.
    pub samples: Vec<f64>,
    /// Rounds the samples span: 1 for steps, fio and one-round lat_fs cells.
    pub rounds: u32,
}

impl Quantity {
    /// The mean of the samples: a run's value of this quantity (`None` without samples).
    pub fn mean(&self) -> Option<f64> {
        (!self.samples.is_empty()).then(|| self.samples.iter().sum::<f64>() / self.samples.len() as f64)
    }
}

/// THE samples rule: the quantities of `cell` on `metric` with their samples (see the module
/// documentation). One quantity for lat_fs and fio, one per step for steps; a cell without
/// the metric's workload gives one quantity without samples. The cell's status is not read:
/// a cell that failed or was skipped simply has no samples.
pub fn samples(cell: &CellResult, metric: Metric) -> Vec<Quantity> {
    let rounds = cell.latfs.as_ref().map_or(1, |l| l.rounds_done().max(1));
    let test = || cell.params.test.map(|t| t.name().to_string()).unwrap_or_default();
    let whole = |key: String, samples: Vec<f64>| Quantity { name: cell.id.clone(), key, step: None, samples, rounds };
    match metric {
        Metric::TotalLoops | Metric::Latency(_) => {
            let samples = cell.latfs.as_ref().map(|l| l.samples(|r| metric.of_latfs(r))).unwrap_or_default();
            vec![whole(test(), samples)]
        }
        Metric::Fio(m) => {
            let samples = cell
                .fio
                .as_ref()
                .map(|f| f.repetitions.iter().filter(|x| x.counts()).map(|x| m.of(x)).collect())
                .unwrap_or_default();
            vec![whole(m.name().to_string(), samples)]
        }
        Metric::Ops(m) => {
            let samples = cell
                .ops
                .as_ref()
                .map(|o| o.repetitions.iter().filter(|x| x.counts()).map(|x| m.of(x)).collect())
                .unwrap_or_default();
            vec![whole(m.name().to_string(), samples)]
        }
        Metric::Elapsed => {
            let Some(st) = &cell.steps else { return vec![whole(String::new(), Vec::new())] };
            let width = st.iterations.iter().map(Vec::len).max().unwrap_or(0);
            (0..width)
                .map(|j| {
                    let first = st.iterations.iter().find_map(|it| it.get(j));
                    let text = |t: Option<&crate::model::UntrustedText>| {
                        t.map(|x| x.escaped(TextFormat::Terminal).into_owned()).unwrap_or_default()
                    };
                    let (op, label) = (text(first.map(|t| &t.op)), text(first.map(|t| &t.label)));
                    Quantity {
                        name: format!("{}#{j} {op}", cell.id),
                        key: op.clone(),
                        step: Some(Step { index: j, op, label }),
                        samples: step_samples(&st.iterations, j).into_iter().map(|(_, t)| seconds(t)).collect(),
                        rounds: 1,
                    }
                })
                .collect()
        }
    }
}

/// The rule for one step of a steps member or cell: step `j` of the steady iterations, less
/// the disturbed ones, as (iteration from 0, timing).
pub fn step_samples(iterations: &[Vec<StepTiming>], j: usize) -> Vec<(usize, &StepTiming)> {
    Iterations::Steady.step_samples(iterations, j)
}

/// The rule for step `j` of a steps pair (members `a` and `b`): the iteration positions
/// steady in both whose step-`j` windows the pair rule keeps ([`crate::host::pair_load`]:
/// quiet, or loaded alike; a step disturbed in one member only is left out, its other steps
/// stay), as (position from 0, `a`'s timing, `b`'s timing).
pub fn step_pair_samples<'a>(
    a: &'a [Vec<StepTiming>],
    b: &'a [Vec<StepTiming>],
    j: usize,
) -> Vec<(usize, &'a StepTiming, &'a StepTiming)> {
    use crate::host::pair_load::{MemberLoad, pair_load};
    let steady_b = Iterations::Steady.select(b);
    Iterations::Steady
        .select(a)
        .into_iter()
        .filter(|k| steady_b.contains(k))
        .filter_map(|k| Some((k, a.get(k)?.get(j)?, b.get(k)?.get(j)?)))
        .filter(|(_, x, y)| {
            let load = |t: &StepTiming| MemberLoad::of(t.disturbance.as_ref());
            pair_load(&[load(x), load(y)]).counts()
        })
        .collect()
}

/// The rule for one round of a lat_fs or fio cell (a paired member): the undisturbed
/// repetitions of round `round`, one value each. Steps members are read by [`step_samples`].
pub fn round_samples(cell: &CellResult, metric: Metric, round: u32) -> Vec<f64> {
    match metric {
        Metric::TotalLoops | Metric::Latency(_) => cell
            .latfs
            .iter()
            .flat_map(|l| &l.repetitions)
            .filter(|r| r.round == round && r.counts())
            .filter_map(|r| metric.of_latfs(r))
            .collect(),
        Metric::Fio(m) => cell
            .fio
            .iter()
            .flat_map(|f| &f.repetitions)
            .filter(|r| r.round == round && r.counts())
            .map(|r| m.of(r))
            .collect(),
        Metric::Ops(m) => cell
            .ops
            .iter()
            .flat_map(|o| &o.repetitions)
            .filter(|r| r.round == round && r.counts())
            .map(|r| m.of(r))
            .collect(),
        Metric::Elapsed => Vec::new(),
    }
}

/// The rule for one round of a lat_fs, fio or op-mix cell that was a pair's member: its
/// undisturbed repetitions ([`round_samples`]), or, when the pair ran under common load
/// (`common_load`), every repetition of the round, disturbed ones included. A pair is judged
/// as a whole, not each member alone: the runner kept it only when its members' loads did not
/// void it ([`crate::host::pair_load`]), and load both saw cancels in their ratio. (A quiet
/// pair's members have no disturbed repetition, so for them both rules read the same.)
pub fn member_samples(cell: &CellResult, metric: Metric, round: u32, common_load: bool) -> Vec<f64> {
    if !common_load {
        return round_samples(cell, metric, round);
    }
    match metric {
        Metric::TotalLoops | Metric::Latency(_) => cell
            .latfs
            .iter()
            .flat_map(|l| &l.repetitions)
            .filter(|r| r.round == round)
            .filter_map(|r| metric.of_latfs(r))
            .collect(),
        Metric::Fio(m) => {
            cell.fio.iter().flat_map(|f| &f.repetitions).filter(|r| r.round == round).map(|r| m.of(r)).collect()
        }
        Metric::Ops(m) => {
            cell.ops.iter().flat_map(|o| &o.repetitions).filter(|r| r.round == round).map(|r| m.of(r)).collect()
        }
        Metric::Elapsed => Vec::new(),
    }
}

/// A step's elapsed time in seconds.
pub fn seconds(t: &StepTiming) -> f64 {
    t.elapsed_us as f64 / 1e6
}

#[cfg(test)]
mod tests;
