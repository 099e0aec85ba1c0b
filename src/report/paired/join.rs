//! A loaded paired run joined back into pairs, and each pair group's statistics per
//! candidate arm and metric: the one place `report`, `compare` and `gate RUN` read pairs.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use crate::catalogue::{Metric, member_samples, seconds, step_pair_samples};
use crate::model::pairing::{CellPairing, DroppedPair, MAX_PAIRS, PairStop};
use crate::model::{CellResult, StepTiming, TextFormat};
use crate::results::LoadedRun;
use crate::scenario::GateSpec;
use crate::stats::Change;
use crate::stats::paired::{alpha_per_look, change_of_log_ratios, look_schedule, wilcoxon};
use crate::verdict::Verdict;

use super::settings::PairSettings;

/// Every pair group of one paired run, compared arm by arm against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct PairedRun {
    /// The run's label (`run` when it has none).
    pub label: String,
    /// The run directory's name.
    pub run: String,
    /// The matrix axis whose values are the arms (`fs`).
    pub axis: String,
    /// The arm values; the first is the baseline.
    pub arms: Vec<String>,
    /// The metric compared (`total_loops`, `elapsed`, a latency percentile).
    pub metric: String,
    /// Which way the metric is worse (`lower is worse`).
    pub worse: String,
    /// `compare.pairs.min` of the run's scenario (6 when it does not say).
    pub min_pairs: u32,
    /// `compare.pairs.max` of the run's scenario (32, or `min` when larger, when it does not say).
    pub max_pairs: u32,
    /// The pair counts at which the run looked at its verdicts.
    pub looks: Vec<u32>,
    /// Confidence level of every interval: `1 - 0.05 / looks` (Bonferroni over the looks),
    /// the level the run's sequential stop used.
    pub level: f64,
    /// One comparison per pair group, candidate arm and compared quantity (a steps cell's steps).
    pub comparisons: Vec<PairedComparison>,
    /// What could not be read as pairs (cells of another axis, a scenario without settings).
    pub warnings: Vec<String>,
}

/// One candidate arm against the baseline in one pair group, on one quantity.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct PairedComparison {
    /// The candidate's cell id (`ext4-nodelalloc-S-qoff-t1-chown`), with `#j op` for step j of a steps cell.
    pub name: String,
    /// The pair group (`S-qoff-t1-chown`): the cell id without the arm.
    pub group: String,
    /// Steps: the step compared, `#j op` (`#1 untar`, j from 0); absent for lat_fs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// The `[gate]` key the threshold came from (lat_fs test or step op).
    pub key: String,
    /// The baseline's arm value.
    pub baseline: String,
    /// The candidate's arm value.
    pub candidate: String,
    /// Pairs with a value on both sides: the statistics' n.
    pub pairs: usize,
    /// Each pair's `ln(candidate / baseline)`, in slot order.
    pub log_ratios: Vec<f64>,
    /// The baseline member's value in each of those pairs (loops/ms, µs or seconds).
    pub baseline_values: Vec<f64>,
    /// The candidate member's value in each of those pairs.
    pub candidate_values: Vec<f64>,
    /// Schedule slots that gave no pair, and why (as the run recorded them).
    pub dropped: Vec<DroppedPair>,
    /// Pairs of the group whose members ran under common load: kept, their disturbed
    /// samples included (`host::pair_load`).
    pub common_load: usize,
    /// Slots one side holds and the other does not, or whose member has no usable value.
    pub unmatched: Vec<u32>,
    /// `exp(mean log ratio) - 1` with its t interval at [`PairedRun::level`]; absent without pairs.
    pub change: Option<Change>,
    /// Wilcoxon's signed-rank test with the Hodges–Lehmann interval (absent below 6 pairs).
    pub signed_rank: Option<SignedRankCheck>,
    /// Why the pair group stopped, as the run recorded it; absent while it had not.
    pub stop: Option<PairStop>,
    /// With `stop = member_failed`: the arm that failed and its error, as recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// The threshold the verdict is at, as a fraction.
    pub threshold: f64,
    /// The gate's verdict (`Verdict::decide`) on `change` at `threshold`.
    pub verdict: Verdict,
    /// Why, when not obvious (too few pairs, a side missing, unmatched slots).
    pub note: Option<String>,
}

/// The robustness check of a paired comparison, as ratios less 1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
pub struct SignedRankCheck {
    /// Pairs with a non-zero log ratio (the test's n).
    pub n: usize,
    /// Two-sided p-value of Wilcoxon's signed-rank test.
    pub p: f64,
    /// Hodges–Lehmann estimate of the ratio, less 1.
    pub hl: f64,
    /// Lower end of its distribution-free interval at [`PairedRun::level`], less 1 (`null`: unbounded).
    #[schemars(with = "Option<f64>")]
    pub ci_low: f64,
    /// Upper end, less 1 (`null`: unbounded).
    #[schemars(with = "Option<f64>")]
    pub ci_high: f64,
}

/// What a paired run is read with: the metric, its thresholds and the run's pair settings.
#[derive(Debug, Clone)]
pub struct PairedOptions<'a> {
    /// The metric: `total_loops` or a latency percentile for lat_fs, `elapsed` for steps.
    pub metric: Metric,
    /// Thresholds per lat_fs test or step op.
    pub spec: &'a GateSpec,
    /// The run's `[compare]` bounds and steps iterations per member.
    pub settings: PairSettings,
}

/// `run` joined into pairs and compared; `None` when no cell of it took part in a pair
/// group (an unpaired run).
///
/// Slot `s` of the baseline's cell and slot `s` of a candidate's cell of the same group
/// are one pair. Each member is one round of its cell: for lat_fs, the mean of that
/// round's repetitions (the pair was judged as a whole); for steps (which record no round), the round's
/// `iterations` iterations in the cell's order (round `r` is iterations
/// `r·I .. (r+1)·I`, `I` the scenario's `workload.iterations`), paired per iteration
/// position over the steady iterations of both members: the pair's log ratio is the mean
/// of `ln(B_k / A_k)` over those positions `k`, so a pair is one sample however many
/// iterations it holds.
pub fn join_pairs(label: &str, run: &LoadedRun, opts: &PairedOptions) -> Option<PairedRun> {
    let first = run.cells.iter().find_map(|c| c.pairing.as_ref())?;
    let (min, max) = (opts.settings.min_pairs, opts.settings.max_pairs);
    let alpha = alpha_per_look(min, max);
    let mut out = PairedRun {
        label: label.to_string(),
        run: run.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        axis: first.axis.clone(),
        arms: first.arms.clone(),
        metric: opts.metric.name().to_string(),
        worse: opts.metric.direction().worse().to_string(),
        min_pairs: min,
        max_pairs: max,
        looks: look_schedule(min, max),
        level: 1.0 - alpha,
        comparisons: Vec::new(),
        warnings: opts.settings.warnings.clone(),
    };
    // Groups in the order of their first cell (the plan's order).
    let mut groups: Vec<(&str, Vec<(&CellResult, &CellPairing)>)> = Vec::new();
    for cell in &run.cells {
        let Some(p) = &cell.pairing else { continue };
        // The statistics grow with the square of the pairs (Walsh averages): a cell file
        // claiming more than any run can take is not read as pairs.
        if p.pairs.len() > MAX_PAIRS as usize || p.dropped.len() > MAX_PAIRS as usize {
            out.warnings.push(format!("{}: more than {MAX_PAIRS} pair slots: left out", cell.id));
            continue;
        }
        if p.axis != out.axis || p.arms != out.arms || p.arm >= p.arms.len() {
            out.warnings.push(format!(
                "{}: its pairing (arms {} = {:?}, arm {}) is not the run's ({} = {:?}): left out",
                cell.id, p.axis, p.arms, p.arm, out.axis, out.arms
            ));
            continue;
        }
        match groups.iter_mut().find(|(g, _)| *g == p.group) {
            Some((_, members)) => members.push((cell, p)),
            None => groups.push((&p.group, vec![(cell, p)])),
        }
    }
    for (group, members) in &groups {
        let of_arm = |arm: usize| members.iter().find(|(_, p)| p.arm == arm).copied();
        let baseline = of_arm(0);
        // One warning per group however many arms a (hostile) cell file names.
        let mut absent: Vec<&str> = Vec::new();
        for arm in 1..out.arms.len() {
            let Some(candidate) = of_arm(arm) else {
                absent.push(&out.arms[arm]);
                continue;
            };
            let ctx = Side { group, baseline: &out.arms[0], candidate: &out.arms[arm], alpha, opts };
            out.comparisons.extend(ctx.compare(baseline, candidate));
        }
        if let (Some((b, _)), false) = (baseline, absent.is_empty()) {
            let arms = crate::text::some_of(&absent, 3);
            out.warnings.push(format!("pair group {group}: no cell of arm {arms} beside {}", b.id));
        }
    }
    Some(out)
}

/// One candidate arm of one group being compared.
struct Side<'a> {
    group: &'a str,
    baseline: &'a str,
    candidate: &'a str,
    alpha: f64,
    opts: &'a PairedOptions<'a>,
}

/// The members' values of one pair on one quantity and its log ratio; `None` when a
/// member has no usable value.
type PairValues = Option<(f64, f64, f64)>;

/// The [`PairValues`] of the pair with these baseline and candidate rounds, and whether it
/// ran under common load.
type PairFn<'a> = Box<dyn Fn(u32, u32, bool) -> PairValues + 'a>;

impl Side<'_> {
    fn compare(
        &self,
        baseline: Option<(&CellResult, &CellPairing)>,
        (cand, cp): (&CellResult, &CellPairing),
    ) -> Vec<PairedComparison> {
        let Some((base, bp)) = baseline else {
            return vec![self.row(
                cand.id.clone(),
                self.key_of(cand, None),
                Vec::new(),
                Vec::new(),
                Default::default(),
                Some(format!("no baseline cell (arm `{}`) in the run", self.baseline)),
            )];
        };
        let slots = Slots::of(bp, cp);
        let stop = bp.stop.or(cp.stop);
        let stop_reason = bp.stop_reason.clone().or_else(|| cp.stop_reason.clone());
        let mut dropped: Vec<DroppedPair> = Vec::new();
        for d in bp.dropped.iter().chain(&cp.dropped) {
            if !dropped.iter().any(|x| x.slot == d.slot) {
                dropped.push(d.clone());
            }
        }
        dropped.sort_by_key(|d| d.slot);
        let quantities: Vec<(String, Option<String>, String, PairFn)> = match self.opts.metric {
            Metric::TotalLoops | Metric::Latency(_) => {
                let metric = self.opts.metric;
                let value = move |c: &CellResult, round: u32, common| member_value(c, round, metric, common);
                let f = move |rb: u32, rc: u32, common| pair_of(value(base, rb, common)?, value(cand, rc, common)?);
                vec![(cand.id.clone(), None, self.key_of(cand, None), Box::new(f))]
            }
            Metric::Elapsed => {
                let per = self.opts.settings.steps_iterations.or_else(|| steps_per_round(base, bp));
                let width = [base, cand]
                    .iter()
                    .filter_map(|c| c.steps.as_ref())
                    .flat_map(|s| s.iterations.iter().map(Vec::len))
                    .max()
                    .unwrap_or(0);
                (0..width)
                    .map(|j| {
                        // A candidate that never ran (its arm failed) names no step: the baseline does.
                        let op = Some(self.key_of(cand, Some(j)))
                            .filter(|k| !k.is_empty())
                            .unwrap_or_else(|| self.key_of(base, Some(j)));
                        let f = move |rb: u32, rc: u32, _common: bool| {
                            let per = per?;
                            steps_pair(steps_member(base, rb, per)?, steps_member(cand, rc, per)?, j)
                        };
                        let step = format!("#{j} {op}");
                        let row: (String, Option<String>, String, PairFn) =
                            (format!("{}{step}", cand.id), Some(step), op, Box::new(f));
                        row
                    })
                    .collect()
            }
            Metric::Ops(m) => {
                let value = move |c: &CellResult, round: u32, common| member_value(c, round, Metric::Ops(m), common);
                let f = move |rb: u32, rc: u32, common| pair_of(value(base, rb, common)?, value(cand, rc, common)?);
                vec![(cand.id.clone(), None, self.key_of(cand, None), Box::new(f))]
            }
            Metric::Fio(m) => {
                let value = move |c: &CellResult, round: u32, common| member_value(c, round, Metric::Fio(m), common);
                let f = move |rb: u32, rc: u32, common| pair_of(value(base, rb, common)?, value(cand, rc, common)?);
                vec![(cand.id.clone(), None, self.key_of(cand, None), Box::new(f))]
            }
        };
        let mut rows = Vec::new();
        for (name, step, key, pair) in quantities {
            let mut unmatched = slots.one_sided.clone();
            let mut values = Vec::new();
            for &(slot, rb, rc, common) in &slots.both {
                match pair(rb, rc, common) {
                    Some(v) => values.push(v),
                    None => unmatched.push(slot),
                }
            }
            unmatched.sort_unstable();
            let mut note = Vec::new();
            if !unmatched.is_empty() {
                note.push(format!(
                    "slot{} {} on one side only or without a usable member: left out",
                    if unmatched.len() == 1 { "" } else { "s" },
                    unmatched.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
                ));
            }
            if slots.common_load > 0 {
                note.push(format!(
                    "{} of {} pairs ran under common load (kept: both members saw about the same load)",
                    slots.common_load,
                    slots.both.len()
                ));
            }
            if matches!(self.opts.metric, Metric::Elapsed) && self.opts.settings.steps_iterations.is_none() {
                note.push("iterations per member unknown (scenario unreadable): guessed from the rounds".into());
            }
            if let (Some(PairStop::MemberFailed), Some(why)) = (stop, &stop_reason) {
                note.push(format!("the group stopped: {}", crate::text::escape_control(why)));
            }
            let note = (!note.is_empty()).then(|| note.join("; "));
            let mut row = self.row(name, key, values, dropped.clone(), unmatched, note);
            row.stop = stop;
            row.common_load = slots.common_load;
            row.stop_reason.clone_from(&stop_reason);
            row.step = step;
            rows.push(row);
        }
        rows
    }

    /// The threshold key of a cell: its lat_fs test, or step `j`'s op.
    fn key_of(&self, cell: &CellResult, step: Option<usize>) -> String {
        match step {
            None => cell.params.test.map(|t| t.name().to_string()).unwrap_or_default(),
            Some(j) => cell
                .steps
                .as_ref()
                .and_then(|s| s.iterations.iter().find_map(|it| it.get(j)))
                .map(|t| t.op.escaped(TextFormat::Terminal).into_owned())
                .unwrap_or_default(),
        }
    }

    fn row(
        &self,
        name: String,
        key: String,
        values: Vec<(f64, f64, f64)>,
        dropped: Vec<DroppedPair>,
        unmatched: Vec<u32>,
        note: Option<String>,
    ) -> PairedComparison {
        let threshold = self.opts.spec.threshold_for(&key);
        let log_ratios: Vec<f64> = values.iter().map(|v| v.2).collect();
        let change = change_of_log_ratios(&log_ratios, self.alpha);
        let signed_rank = wilcoxon(&log_ratios, self.alpha).map(|w| SignedRankCheck {
            n: w.n,
            p: w.p,
            hl: w.hl,
            ci_low: w.ci_low,
            ci_high: w.ci_high,
        });
        let verdict = Verdict::decide(change, threshold, self.opts.metric.direction());
        let few = (log_ratios.len() == 1).then(|| "1 pair: no interval".to_string());
        PairedComparison {
            name,
            group: self.group.to_string(),
            step: None,
            key,
            baseline: self.baseline.to_string(),
            candidate: self.candidate.to_string(),
            pairs: log_ratios.len(),
            baseline_values: values.iter().map(|v| v.0).collect(),
            candidate_values: values.iter().map(|v| v.1).collect(),
            log_ratios,
            dropped,
            common_load: 0,
            unmatched,
            change,
            signed_rank,
            stop: None,
            stop_reason: None,
            threshold,
            verdict,
            note: note.or(few).or_else(|| (verdict == Verdict::Missing).then(|| "no pairs".to_string())),
        }
    }
}

/// The slots of a baseline and a candidate cell: those both hold (slot, baseline round,
/// candidate round, whether either side says the pair ran under common load), and those
/// only one holds.
struct Slots {
    both: Vec<(u32, u32, u32, bool)>,
    one_sided: Vec<u32>,
    /// Pairs under common load among `both`.
    common_load: usize,
}

impl Slots {
    fn of(b: &CellPairing, c: &CellPairing) -> Slots {
        let rounds = |p: &CellPairing| {
            p.pairs.iter().map(|s| (s.slot, (s.round, s.common_load))).collect::<BTreeMap<u32, (u32, bool)>>()
        };
        let (rb, rc) = (rounds(b), rounds(c));
        let both: Vec<(u32, u32, u32, bool)> =
            rb.iter().filter_map(|(s, (r, x))| rc.get(s).map(|(q, y)| (*s, *r, *q, *x || *y))).collect();
        let common_load = both.iter().filter(|b| b.3).count();
        let one_sided = rb.keys().filter(|s| !rc.contains_key(s)).chain(rc.keys().filter(|s| !rb.contains_key(s)));
        Slots { both, one_sided: one_sided.copied().collect(), common_load }
    }
}

/// A pair's (baseline, candidate, log ratio) when both values are positive and finite.
fn pair_of(b: f64, c: f64) -> PairValues {
    (b.is_finite() && c.is_finite() && b > 0.0 && c > 0.0).then(|| (b, c, (c / b).ln()))
}

/// A lat_fs, fio or op-mix member's value: the mean of its round's samples by the
/// catalogue's rule for a pair's member ([`member_samples`]: a pair under common load keeps
/// its disturbed repetitions).
fn member_value(cell: &CellResult, round: u32, metric: Metric, common_load: bool) -> Option<f64> {
    let values = member_samples(cell, metric, round, common_load);
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// A steps member: round `round`'s `per` iterations of the cell.
fn steps_member(cell: &CellResult, round: u32, per: u32) -> Option<&[Vec<StepTiming>]> {
    let its = &cell.steps.as_ref()?.iterations;
    let (from, to) = (round as usize * per as usize, (round as usize + 1) * per as usize);
    its.get(from..to)
}

/// Iterations per member when the scenario does not say: the cell's iterations over its rounds.
fn steps_per_round(cell: &CellResult, p: &CellPairing) -> Option<u32> {
    let rounds = p.pairs.iter().map(|s| s.round.saturating_add(1)).max()?;
    let n = cell.steps.as_ref()?.iterations.len() as u32;
    (n > 0 && n.is_multiple_of(rounds)).then_some(n / rounds)
}

/// Step `j` of two members paired per iteration position over the positions the catalogue's
/// rule keeps ([`step_pair_samples`]: steady in both, and not disturbed unlike each other):
/// the mean elapsed seconds of each and the mean of the per-position log ratios.
fn steps_pair(a: &[Vec<StepTiming>], b: &[Vec<StepTiming>], j: usize) -> PairValues {
    let mut logs = Vec::new();
    let (mut ea, mut eb) = (0.0, 0.0);
    for (_, x, y) in step_pair_samples(a, b, j) {
        if x.elapsed_us == 0 || y.elapsed_us == 0 {
            continue;
        }
        logs.push((y.elapsed_us as f64 / x.elapsed_us as f64).ln());
        ea += seconds(x);
        eb += seconds(y);
    }
    let n = logs.len() as f64;
    (n > 0.0).then(|| (ea / n, eb / n, logs.iter().sum::<f64>() / n))
}
