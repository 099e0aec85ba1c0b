//! Steps reports in seed 002's layout: per (label, fs) and iteration, one
//! time(1)-style line per step; plus flags for iteration-dependent steps.
//!
//! Flag rule (a step "changes across iterations"): with at least two
//! iterations, let e_i be the step's elapsed times, m their median and
//! MAD = 1.4826 · median(|e_i − m|) (scaled to estimate σ for normal noise).
//! Nothing is flagged unless max − min ≥ 100 ms: time(1) prints centiseconds,
//! and a sync that takes 10 ms once and 50 ms another time is writeback
//! jitter, not a change of behaviour. Above that, the step is flagged for any of:
//! 1. a *shift*: max/min > 1.5 and there is an iteration k after which every
//!    time is at least 1.5× every time before it (or at most 1/1.5×) — the
//!    filesystem behaves differently from then on, however noisy each side is;
//! 2. an *outlier*: max/min > 1.5 and some e_i lies more than 3·MAD from m
//!    (with MAD = 0, any deviation counts);
//! 3. a *trend*: over all iterations, or else over iterations 2.. (the steady
//!    ones, when iteration 1 ran on a fresh filesystem), at least 3 times that
//!    strictly grow (or strictly shrink) from each iteration to the next, with
//!    a total change |last/first − 1| ≥ 20%. It is reported with its
//!    least-squares slope and total change (`+52% over 5 iterations`). By chance
//!    alone, 5 noisy iterations are strictly monotonic 2 times in 120; the 20%
//!    and 100 ms floors keep that from flagging noise.
//!
//! A step can be both shifted and trending (ext2's staircase from 0.84 s to
//! 15.65 s is both). `!` ends the time(1) line of a flagged step in each
//! iteration the finding is about: from the shift on, the outliers, every
//! iteration of a trend after its first.
//!
//! It is a finding to look at, not a verdict: e.g. ext4 (noload, barrier=0)
//! untars in 0.5 s on a fresh filesystem but in 6–13 s after `rm -rf` of the
//! same tree — a shift at iteration 2 that MAD alone misses, because the slow
//! iterations are themselves noisy.

use crate::model::TextFormat;
use schemars::JsonSchema;
use serde::Serialize;

use crate::model::{CellStatus, StepTiming, StepsCopy, Timeline};
use crate::results::LoadedRun;

/// Smallest max−min spread (µs) that can be flagged.
pub const FLAG_MIN_SPREAD_US: u64 = 100_000;
/// Smallest max/min ratio that can be flagged.
pub const FLAG_MIN_RATIO: f64 = 1.5;
/// Outlier distance from the median, in scaled MADs.
pub const FLAG_MADS: f64 = 3.0;
/// Smallest total change |last/first − 1| of a monotonic trend that is flagged.
pub const FLAG_TREND_CHANGE: f64 = 0.20;
/// Fewest iterations that can make a trend.
pub const FLAG_TREND_MIN_POINTS: usize = 3;

/// All iterations of one (label, configuration).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StepsGroup {
    /// Run label.
    pub label: String,
    /// Configuration name: the fs, plus layout/quota/tasks where the run varies them.
    pub config: String,
    /// Filesystem type.
    pub fs: String,
    /// `iterations[i][j]`: step j of iteration i.
    pub iterations: Vec<Vec<StepTiming>>,
    /// Steps whose elapsed time changes across iterations.
    pub flags: Vec<StepFlag>,
    /// Dirty memory and device activity across the iterations, when monitored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Timeline>,
    /// Problems with the loop itself (an `rm_rf` that misses the unpacked tree).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// With `tasks = N > 1`: the copies that ran at once (`iterations` is their aggregate).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub copies: Vec<StepsCopy>,
}

/// The line under a configuration that ran N copies at once: how the aggregate is made and
/// how the copies overlapped in time.
pub fn copies_line(copies: &[StepsCopy]) -> String {
    let first_start = copies.iter().map(|c| c.started_unix_us).min().unwrap_or(0);
    let last_start = copies.iter().map(|c| c.started_unix_us).max().unwrap_or(0);
    let first_end = copies.iter().map(|c| c.finished_unix_us).min().unwrap_or(0);
    let overlap = first_end.saturating_sub(last_start) as f64 / 1e6;
    format!(
        "{} copies at once, started within {:.1} ms of each other, all running together for {overlap:.2} s; \
         each step's first line: slowest copy's elapsed, CPU summed over copies",
        copies.len(),
        (last_start - first_start) as f64 / 1e3
    )
}

/// A step whose elapsed time depends on the iteration.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StepFlag {
    /// Step index.
    pub step: usize,
    /// Step label (`tar zxf linux-2.5.63.tar.gz`).
    pub label: String,
    /// Elapsed seconds per iteration.
    pub elapsed_s: Vec<f64>,
    /// max/min (infinite when the shortest is 0: `null` in JSON).
    #[schemars(with = "Option<f64>")]
    pub ratio: f64,
    /// The first iteration (from 1) of a new regime, when the change is a shift.
    pub shift_at: Option<usize>,
    /// Iterations (from 1) more than 3 MADs from the median, when max/min > 1.5.
    #[serde(default)]
    pub outliers: Vec<usize>,
    /// A monotonic trend, when there is one.
    #[serde(default)]
    pub trend: Option<Trend>,
}

/// A step that grows (or shrinks) from each iteration to the next.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
pub struct Trend {
    /// First iteration of the trend, from 1.
    pub from: usize,
    /// Last iteration of the trend, from 1.
    pub to: usize,
    /// Least-squares slope in seconds per iteration.
    pub slope_s: f64,
    /// last/first − 1 over the trend.
    pub change: f64,
}

impl Trend {
    /// `+52% over 5 iterations (slope +0.31 s/iteration)`.
    pub fn describe(&self) -> String {
        format!(
            "{:+.0}% over {} iterations ({}..{}, slope {:+.2} s/iteration)",
            self.change * 100.0,
            self.to - self.from + 1,
            self.from,
            self.to,
            self.slope_s
        )
    }
}

impl StepFlag {
    /// One line for humans.
    pub fn describe(&self) -> String {
        let per_it = self
            .elapsed_s
            .iter()
            .enumerate()
            .map(|(i, e)| format!("#{}: {e:.2}s", i + 1))
            .collect::<Vec<_>>()
            .join(", ");
        let trend = self.trend.map(|t| format!("trend {}", t.describe()));
        let what = match (self.shift_at, trend) {
            (Some(k), Some(t)) => format!("changes from iteration {k} on, {t}"),
            (Some(k), None) => format!("changes from iteration {k} on"),
            (None, Some(t)) => t,
            (None, None) => format!("elapsed varies {:.1}x across iterations", self.ratio),
        };
        format!("iteration-dependent: `{}` {what} ({per_it})", self.label)
    }

    /// Whether the `!` mark belongs on this step's line in `iteration` (from 1).
    pub fn marks(&self, iteration: usize) -> bool {
        self.shift_at.is_some_and(|k| iteration >= k)
            || self.outliers.contains(&iteration)
            || self.trend.is_some_and(|t| iteration > t.from && iteration <= t.to)
    }
}

/// Flag steps whose elapsed time changes across iterations (rule in the module docs).
pub fn flag_steps(iterations: &[Vec<StepTiming>]) -> Vec<StepFlag> {
    let nsteps = iterations.iter().map(|i| i.len()).max().unwrap_or(0);
    let mut flags = Vec::new();
    for j in 0..nsteps {
        let e: Vec<u64> = iterations.iter().filter_map(|it| it.get(j)).map(|s| s.elapsed_us).collect();
        if e.len() < 2 {
            continue;
        }
        let (min, max) = (*e.iter().min().unwrap(), *e.iter().max().unwrap());
        if max - min < FLAG_MIN_SPREAD_US {
            continue;
        }
        let ratio = if min == 0 { f64::INFINITY } else { max as f64 / min as f64 };
        let ef: Vec<f64> = e.iter().map(|v| *v as f64).collect();
        let (mut shift_at, mut outliers) = (None, Vec::new());
        if ratio > FLAG_MIN_RATIO {
            shift_at = shift_point(&ef);
            let m = crate::stats::median(&ef);
            let mad = 1.4826 * crate::stats::median(&ef.iter().map(|v| (v - m).abs()).collect::<Vec<_>>());
            outliers = (0..ef.len()).filter(|i| (ef[*i] - m).abs() > FLAG_MADS * mad).map(|i| i + 1).collect();
        }
        let trend = trend(&ef);
        if shift_at.is_some() || !outliers.is_empty() || trend.is_some() {
            let label = iterations
                .iter()
                .find_map(|it| it.get(j))
                .map(|s| s.label.escaped(TextFormat::Terminal).into_owned())
                .unwrap_or_default();
            let elapsed_s = ef.iter().map(|v| v / 1e6).collect();
            flags.push(StepFlag { step: j, label, elapsed_s, ratio, shift_at, outliers, trend });
        }
    }
    flags
}

/// A strictly monotonic run over all times, or else over the times from the second on
/// (µs in, seconds out), with a total change of at least FLAG_TREND_CHANGE.
fn trend(e: &[f64]) -> Option<Trend> {
    [0usize, 1].into_iter().find_map(|from| {
        let v = e.get(from..)?;
        if v.len() < FLAG_TREND_MIN_POINTS || v[0] == 0.0 {
            return None;
        }
        let up = v.windows(2).all(|w| w[1] > w[0]);
        let down = v.windows(2).all(|w| w[1] < w[0]);
        let (first, last) = (v[0], v[v.len() - 1]);
        let change = last / first - 1.0;
        if !(up || down) || change.abs() < FLAG_TREND_CHANGE || (last - first).abs() < FLAG_MIN_SPREAD_US as f64 {
            return None;
        }
        let n = v.len() as f64;
        let xm = (n - 1.0) / 2.0;
        let ym = v.iter().sum::<f64>() / n;
        let sxy: f64 = v.iter().enumerate().map(|(i, y)| (i as f64 - xm) * (y - ym)).sum();
        let sxx: f64 = (0..v.len()).map(|i| (i as f64 - xm).powi(2)).sum();
        Some(Trend { from: from + 1, to: e.len(), slope_s: sxy / sxx / 1e6, change })
    })
}

/// The first iteration (from 1) after which every time is at least FLAG_MIN_RATIO
/// times every earlier one, or at most 1/FLAG_MIN_RATIO of it; the earliest such split.
fn shift_point(e: &[f64]) -> Option<usize> {
    (1..e.len()).find_map(|k| {
        let (before, after) = e.split_at(k);
        let max = |v: &[f64]| v.iter().copied().fold(f64::MIN, f64::max);
        let min = |v: &[f64]| v.iter().copied().fold(f64::MAX, f64::min);
        let slower = min(after) >= FLAG_MIN_RATIO * max(before);
        let faster = max(after) * FLAG_MIN_RATIO <= min(before);
        (slower || faster).then_some(k + 1)
    })
}

/// `  [disturbed: other processes used 0.62 CPU; left out of statistics]`, after a seed line.
pub fn disturbed_note(d: &crate::model::Disturbance) -> String {
    format!("  [disturbed: other processes and steal used {:.2} CPU; left out of statistics]", d.share)
}

/// Group the steps cells of labelled runs, in run then plan order.
pub fn build_groups(runs: &[(&str, &LoadedRun)]) -> Vec<StepsGroup> {
    let mut groups = Vec::new();
    for (label, run) in runs {
        let ok: Vec<_> = run.cells.iter().filter(|c| c.status == CellStatus::Ok && c.steps.is_some()).collect();
        let all = run.meta.planned_cells.iter().chain(run.cells.iter().map(|c| &c.params));
        let mut layouts = std::collections::HashSet::new();
        let mut quotas = std::collections::HashSet::new();
        let mut tasks = std::collections::HashSet::new();
        for p in all {
            layouts.insert(p.layout);
            quotas.insert(p.quota);
            tasks.insert(p.tasks);
        }
        let member_iterations = run
            .cells
            .iter()
            .any(|c| c.pairing.is_some())
            .then(|| crate::report::paired::pair_settings(&run.meta.scenario_text, &run.meta.scenario_origin))
            .and_then(|s| s.steps_iterations);
        for c in ok {
            let p = &c.params;
            let mut config = p.fs.clone();
            if layouts.len() > 1 {
                config.push_str(&format!("-{}", p.layout));
            }
            if quotas.len() > 1 {
                config.push_str(&format!("-{}", p.quota.seed_name()));
            }
            if tasks.len() > 1 {
                config.push_str(&format!("-t{}", p.tasks));
            }
            let iterations = c.steps.as_ref().map(|s| s.iterations.clone()).unwrap_or_default();
            let copies = c.steps.as_ref().map(|s| s.copies.clone()).unwrap_or_default();
            let flags = flag_steps(&iterations);
            let timeline = c.steps.as_ref().and_then(|s| s.timeline.clone());
            // A paired cell holds its members one after the other, each from a fresh filesystem.
            let per = c.pairing.as_ref().and(member_iterations).map(|n| n as usize);
            let warnings = crate::workload::steps::loop_warnings::members_loop_warnings(&iterations, per);
            groups.push(StepsGroup {
                label: label.to_string(),
                config,
                fs: p.fs.clone(),
                iterations,
                flags,
                timeline,
                warnings,
                copies,
            });
        }
    }
    groups
}

/// Seed 002 text: `<label>:` then per configuration `<fs>:` and per iteration its lines.
pub fn seed_text(groups: &[StepsGroup]) -> String {
    let mut out = String::new();
    let mut last_label = None;
    for g in groups {
        if last_label != Some(&g.label) {
            out.push_str("---------------------------------------------------------------------\n");
            out.push_str(&format!("{}:\n", g.label));
            last_label = Some(&g.label);
        }
        out.push_str(&format!("{}:\n", g.config));
        if !g.copies.is_empty() {
            let line = format!("({})", copies_line(&g.copies));
            out.push_str(&crate::text::wrap(&line, crate::report::markup::PLAIN_WIDTH, " "));
            out.push('\n');
        }
        for (i, it) in g.iterations.iter().enumerate() {
            out.push_str(&format!("iteration {}:\n", i + 1));
            for (j, s) in it.iter().enumerate() {
                out.push_str(&s.seed_line());
                if g.flags.iter().any(|f| f.step == j && f.marks(i + 1)) {
                    out.push_str(" !");
                }
                if let Some(d) = s.disturbance.as_ref().filter(|d| d.disturbed) {
                    out.push_str(&disturbed_note(d));
                }
                out.push('\n');
                for c in &g.copies {
                    if let Some(t) = c.iterations.get(i).and_then(|it| it.get(j)) {
                        out.push_str(&format!("  task {}: {}\n", c.task, t.seed_line()));
                    }
                }
            }
        }
        for f in &g.flags {
            out.push_str(&format!("! {}\n", f.describe()));
        }
        for w in &g.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn it(elapsed_ms: &[u64]) -> Vec<Vec<StepTiming>> {
        elapsed_ms
            .iter()
            .map(|e| {
                vec![StepTiming {
                    label: "tar zxf x.tar.gz".into(),
                    op: "untar".into(),
                    user_us: 0,
                    system_us: 0,
                    elapsed_us: e * 1000,
                    max_rss_kib: 0,
                    ..StepTiming::default()
                }]
            })
            .collect()
    }

    #[test]
    fn untar_after_rm_is_flagged() {
        // The machine-facts observation: 0.85 s fresh, 6-8 s after rm -rf.
        let f = flag_steps(&it(&[850, 7100, 6800, 7900, 7200]));
        assert_eq!(f.len(), 1);
        assert!(f[0].ratio > 9.0 && f[0].describe().contains("#1: 0.85s"));
    }

    #[test]
    fn a_shift_with_noisy_slow_iterations_is_flagged() {
        // Measured here: ext4 noload,barrier=0 over loop over tmpfs, kernel-untar scenario.
        // The slow iterations' own spread hides iteration 1 from a MAD test.
        let f = flag_steps(&it(&[470, 6480, 13340, 7130, 10380]));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].shift_at, Some(2));
        assert!(f[0].describe().contains("changes from iteration 2 on"), "{}", f[0].describe());
        // ext2 shows it from the third iteration.
        assert_eq!(flag_steps(&it(&[500, 520, 6000, 9000, 7000]))[0].shift_at, Some(3));
    }

    #[test]
    fn noise_is_not_flagged() {
        assert!(flag_steps(&it(&[14090, 14390, 14820, 14100, 14500])).is_empty());
        // Big ratio but tiny absolute spread: jitter of a near-zero step.
        assert!(flag_steps(&it(&[2, 9, 3, 2, 2])).is_empty());
        // A single iteration cannot vary.
        assert!(flag_steps(&it(&[5000])).is_empty());
    }

    #[test]
    fn sync_jump_in_seed_is_flagged() {
        // Seed 002, ext3 sync: 0:08.14 on 2.5.60 vs 0:15.11 — as iterations it would be
        // flagged against a steady background.
        assert_eq!(flag_steps(&it(&[960, 1000, 980, 8140, 990])).len(), 1);
    }

    #[test]
    fn a_steady_growth_is_a_trend_and_a_small_sync_blip_is_not() {
        // btrfs untar, +52% over five iterations: no shift, no outlier, but a trend.
        let f = flag_steps(&it(&[10_000, 11_500, 12_800, 14_000, 15_200]));
        assert_eq!(f.len(), 1, "{f:?}");
        let t = f[0].trend.unwrap();
        assert_eq!((t.from, t.to), (1, 5));
        assert!((t.change - 0.52).abs() < 1e-9 && (t.slope_s - 1.29).abs() < 0.01, "{t:?}");
        assert!(f[0].describe().contains("+52% over 5 iterations"), "{}", f[0].describe());
        assert!(!f[0].marks(1) && f[0].marks(2) && f[0].marks(5));
        // A 40 ms sync blip on a 10 ms sync.
        assert!(flag_steps(&it(&[10, 12, 50, 11, 10])).is_empty());
        // Noise around 14 s that happens to rise is below 20% in total.
        assert!(flag_steps(&it(&[14_090, 14_200, 14_390, 14_500, 14_820])).is_empty());
    }

    #[test]
    fn a_staircase_is_both_a_shift_and_a_trend() {
        // ext2 in the issue: 0.84 s -> 15.65 s over five iterations.
        let f = flag_steps(&it(&[840, 4_100, 8_200, 12_000, 15_650]));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].shift_at, Some(2));
        assert!(f[0].trend.is_some());
        assert!(
            f[0].describe().contains("changes from iteration 2 on, trend +1763% over 5 iterations"),
            "{}",
            f[0].describe()
        );
        // A trend only among the steady iterations, after a fast fresh first one.
        let f = flag_steps(&it(&[500, 6_000, 7_000, 8_000]));
        assert_eq!(f[0].trend.map(|t| t.from), Some(1));
        let f = flag_steps(&it(&[9_000, 6_000, 7_000, 8_000]));
        assert_eq!(f[0].trend.map(|t| (t.from, t.to)), Some((2, 4)));
    }
}
