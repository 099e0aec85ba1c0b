//! The profile diff of one cell between a baseline A and a candidate B: the functions
//! whose total share (itself and its callees) changed most, in percentage points, and
//! only those whose change is beyond the noise.
//!
//! - **Across pairs** ([`paired_diff`]): a paired run profiles each arm once per pair for
//!   its first pairs ([`super::PROFILED_PAIRS`]), so a function's change is judged like
//!   the metric's: per pair, B's share less A's; the mean of those differences with its
//!   Student t 95% interval, and a one-sample t test per function
//!   ([`crate::stats::paired::mean_difference_p`]), Holm-adjusted over the functions
//!   tested. The run-to-run noise of a profile is in the test. Only functions with a mean
//!   share of at least [`MIN_PP`] on one side are tested (no other can change by that
//!   much), which keeps the Holm family to the functions that matter.
//! - **Single profile** ([`diff`]): one profile per side (an unpaired run, or two runs
//!   compared) leaves only the profile's own sampling noise to judge: a function's share
//!   is `k` of `n` samples, and a two-proportion z-test per function, Holm-adjusted over
//!   every function of the cell, keeps those with p < [`ALPHA`] and a change of at least
//!   [`MIN_PP`] points. Such a diff is a **single-profile difference**: a second profile
//!   of the same build may differ by more than sampling alone (run-to-run noise is not
//!   tested), and reports say so. An off-CPU profile's weights are microseconds blocked,
//!   not samples, so one such profile per side is not tested at all ([`Judged::Untested`]):
//!   its changes of at least [`MIN_PP`] points are listed as they are, and said to be.

use std::collections::{BTreeSet, HashMap};

use super::carried::{self, CallChanges};
use super::folded::Folded;
use super::shares::{below_counts, counts};

/// Family-wise error rate of the per-function tests of one cell.
pub const ALPHA: f64 = 0.05;
/// The smallest change listed, in percentage points of the samples.
pub const MIN_PP: f64 = 0.5;

/// One function's change in total share from A to B.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionChange {
    /// The function (a frame as folded: escaped when it was read).
    pub name: String,
    /// Total share in A, percent.
    pub a_pct: f64,
    /// Total share in B, percent.
    pub b_pct: f64,
    /// `b_pct - a_pct`, percentage points.
    pub delta_pp: f64,
    /// Self share in A and in B, percent.
    pub self_pct: (f64, f64),
    /// Holm-adjusted p-value: of the two-proportion test, or across pairs of the paired t test.
    pub p: f64,
    /// Across pairs: the 95% t interval of the mean change, percentage points.
    pub interval_pp: Option<(f64, f64)>,
    /// The callers whose change this function carries, nearest first: its call path up to
    /// where the change stops showing ([`super::carried`]).
    pub carries: Vec<String>,
}

/// What changed in one cell's profile from A to B.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProfileDiff {
    /// Samples of A and of B.
    pub samples: (u64, u64),
    /// Functions whose share grew beyond the noise, largest change first.
    pub grown: Vec<FunctionChange>,
    /// Functions whose share shrank beyond the noise, largest change first.
    pub shrunk: Vec<FunctionChange>,
    /// Functions tested (present in either profile; across pairs, those with a mean
    /// share of at least [`MIN_PP`] on one side).
    pub tested: usize,
    /// How the changes were told from the noise.
    pub judged: Judged,
    /// How many functions grew and shrank beyond the noise, before the `top` cut.
    pub beyond: (usize, usize),
    /// Of those, how many are callers whose change one callee carries, shown on its call
    /// path instead of on their own ([`super::carried`]).
    pub carried: (usize, usize),
}

/// How a [`ProfileDiff`] told its changes from the noise.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Judged {
    /// One profile per side, by the sampling noise of its counts (two-proportion z-test).
    #[default]
    SingleProfile,
    /// Across this many pairs of profiles (paired t test).
    AcrossPairs(usize),
    /// Not at all: one profile per side whose weights are not samples (an off-CPU
    /// profile's microseconds blocked), so no sampling test applies; the changes of at
    /// least [`MIN_PP`] points are listed as they are.
    Untested,
}

/// The diff of `a` and `b`, the `top` largest changes each way (a single-profile difference).
pub fn diff(a: &Folded, b: &Folded, top: usize) -> ProfileDiff {
    let changes = diff_all(a, b);
    let raw_p: Vec<Option<f64>> = changes.iter().map(|c| c.p.is_finite().then_some(c.p)).collect();
    let base = ProfileDiff { samples: (a.samples(), b.samples()), tested: changes.len(), ..Default::default() };
    ranked(changes, &raw_p, top, base, &call_changes(&[(a, b)]))
}

/// For each function within [`carried::REACH`] frames below another, the mean change
/// over `pairs` (one pair: its change) of the share of samples with it there, in points,
/// and the nearest it was below.
fn call_changes(pairs: &[(&Folded, &Folded)]) -> CallChanges {
    let mut out = CallChanges::new();
    let n = pairs.len() as f64;
    for (a, b) in pairs {
        for (f, sign) in [(a, -1.0), (b, 1.0)] {
            let all = f.samples();
            for ((caller, callee), below) in below_counts(f, carried::REACH) {
                let e = out.entry((caller.to_string(), callee.to_string())).or_insert((0.0, below.nearest));
                e.0 += sign * pct(below.samples, all) / n;
                e.1 = e.1.min(below.nearest);
            }
        }
    }
    out
}

/// Every function of `a` or `b` with its change and the unadjusted p of its
/// two-proportion test (NaN where there is none).
fn diff_all(a: &Folded, b: &Folded) -> Vec<FunctionChange> {
    let (na, nb) = (a.samples(), b.samples());
    let (ca, cb) = (counts(a), counts(b));
    let names: BTreeSet<&str> = ca.keys().chain(cb.keys()).copied().collect();
    names
        .into_iter()
        .map(|name| {
            let (sa, ta) = ca.get(name).copied().unwrap_or_default();
            let (sb, tb) = cb.get(name).copied().unwrap_or_default();
            FunctionChange {
                name: name.to_string(),
                a_pct: pct(ta, na),
                b_pct: pct(tb, nb),
                delta_pp: pct(tb, nb) - pct(ta, na),
                self_pct: (pct(sa, na), pct(sb, nb)),
                p: crate::stats::two_proportion_p(ta, na, tb, nb).unwrap_or(f64::NAN),
                interval_pp: None,
                carries: Vec::new(),
            }
        })
        .collect()
}

/// The diff across pairs: `pairs[i]` is A's and B's profile of pair i. Fewer than two
/// pairs judge nothing across pairs: the single-profile [`diff`] of the first, or with
/// `samples` false (weights that are not samples) its [`Judged::Untested`] changes.
pub fn paired_diff(pairs: &[(&Folded, &Folded)], top: usize, samples: bool) -> ProfileDiff {
    match pairs {
        [] => return ProfileDiff::default(),
        [(a, b)] if samples => return diff(a, b, top),
        [(a, b)] => {
            // Every function, by the size of its change alone.
            let all = diff_all(a, b);
            let base = ProfileDiff {
                samples: (a.samples(), b.samples()),
                tested: all.len(),
                judged: Judged::Untested,
                ..Default::default()
            };
            let big = all.into_iter().filter(|c| c.delta_pp.abs() >= MIN_PP).collect();
            return listed(big, top, base, &call_changes(&[(a, b)]));
        }
        _ => {}
    }
    // Per pair and side: (self, total) shares in percent by function.
    let shares = |f: &Folded| {
        let n = f.samples();
        counts(f).into_iter().map(|(k, (s, t))| (k.to_string(), (pct(s, n), pct(t, n)))).collect()
    };
    let per_pair: Vec<(Shares, Shares)> = pairs.iter().map(|(a, b)| (shares(a), shares(b))).collect();
    let names: BTreeSet<&str> =
        per_pair.iter().flat_map(|(a, b)| a.keys().chain(b.keys())).map(String::as_str).collect();
    let n = pairs.len() as f64;
    let mean = |v: &[f64]| v.iter().sum::<f64>() / n;
    let mut changes = Vec::new();
    let mut raw_p = Vec::new();
    for name in names {
        let side = |m: &Shares| m.get(name).copied().unwrap_or_default();
        let a: Vec<(f64, f64)> = per_pair.iter().map(|(a, _)| side(a)).collect();
        let b: Vec<(f64, f64)> = per_pair.iter().map(|(_, b)| side(b)).collect();
        let total = |v: &[(f64, f64)]| mean(&v.iter().map(|x| x.1).collect::<Vec<_>>());
        let own = |v: &[(f64, f64)]| mean(&v.iter().map(|x| x.0).collect::<Vec<_>>());
        let (a_pct, b_pct) = (total(&a), total(&b));
        if a_pct.max(b_pct) < MIN_PP {
            continue;
        }
        let d: Vec<f64> = a.iter().zip(&b).map(|(x, y)| y.1 - x.1).collect();
        let s = crate::stats::summarize(&d);
        raw_p.push(crate::stats::paired::mean_difference_p(&d));
        changes.push(FunctionChange {
            name: name.to_string(),
            a_pct,
            b_pct,
            delta_pp: s.mean,
            self_pct: (own(&a), own(&b)),
            p: 1.0,
            interval_pp: Some((s.ci95_low, s.ci95_high)),
            carries: Vec::new(),
        });
    }
    let samples = pairs.iter().fold((0, 0), |(x, y), (a, b)| (x + a.samples(), y + b.samples()));
    let base =
        ProfileDiff { samples, tested: changes.len(), judged: Judged::AcrossPairs(pairs.len()), ..Default::default() };
    ranked(changes, &raw_p, top, base, &call_changes(pairs))
}

/// A profile's (self, total) shares in percent, by function.
type Shares = HashMap<String, (f64, f64)>;

/// Percent of `n`, 0 of nothing.
fn pct(k: u64, n: u64) -> f64 {
    if n == 0 { 0.0 } else { 100.0 * k as f64 / n as f64 }
}

/// `base` with the changes beyond the noise: Holm over `raw_p` (one per change), p <
/// [`ALPHA`] and at least [`MIN_PP`] points ([`listed`]).
fn ranked(
    mut changes: Vec<FunctionChange>,
    raw_p: &[Option<f64>],
    top: usize,
    base: ProfileDiff,
    calls: &CallChanges,
) -> ProfileDiff {
    for (c, p) in changes.iter_mut().zip(crate::stats::holm_adjust(raw_p)) {
        c.p = p.unwrap_or(1.0);
    }
    let beyond = changes.into_iter().filter(|c| c.p < ALPHA && c.delta_pp.abs() >= MIN_PP).collect();
    listed(beyond, top, base, calls)
}

/// `changes` without those a callee carries ([`carried::fold`]), each left with the callers
/// it carries, and how many were folded.
fn fold(changes: Vec<FunctionChange>, calls: &CallChanges) -> (Vec<FunctionChange>, usize) {
    let named: Vec<(&str, f64)> = changes.iter().map(|c| (c.name.as_str(), c.delta_pp)).collect();
    let paths = carried::fold(&named, calls);
    let folded = paths.iter().filter(|p| p.is_none()).count();
    let kept =
        changes.iter().zip(paths).filter_map(|(c, p)| Some(FunctionChange { carries: p?, ..c.clone() })).collect();
    (kept, folded)
}

/// `base` with the changes `beyond` the noise, each way: the callers a callee carries
/// folded into its call path ([`carried::fold`]), the `top` largest of the rest.
fn listed(beyond: Vec<FunctionChange>, top: usize, base: ProfileDiff, calls: &CallChanges) -> ProfileDiff {
    let (up, down): (Vec<FunctionChange>, Vec<FunctionChange>) = beyond.into_iter().partition(|c| c.delta_pp > 0.0);
    let beyond = (up.len(), down.len());
    let (mut grown, carried_up) = fold(up, calls);
    let (mut shrunk, carried_down) = fold(down, calls);
    grown.sort_by(|x, y| y.delta_pp.total_cmp(&x.delta_pp).then_with(|| x.name.cmp(&y.name)));
    shrunk.sort_by(|x, y| x.delta_pp.total_cmp(&y.delta_pp).then_with(|| x.name.cmp(&y.name)));
    grown.truncate(top);
    shrunk.truncate(top);
    ProfileDiff { grown, shrunk, beyond, carried: (carried_up, carried_down), ..base }
}

/// The differential folded stacks of A and B (`stack count_a count_b`), for
/// `inferno`'s differential flame graph: B's shape, red where a stack grew, blue where
/// it shrank; A's counts scaled to B's sample total so that shares, not run lengths,
/// are compared.
pub fn differential_svg(a: &Folded, b: &Folded, title: &str) -> Option<String> {
    let text = |f: &Folded| f.capped_text(usize::MAX).0;
    let opts = inferno::differential::Options { normalize: true, ..Default::default() };
    let mut lines = Vec::new();
    inferno::differential::from_readers(opts, text(a).as_bytes(), text(b).as_bytes(), &mut lines).ok()?;
    let lines = String::from_utf8(lines).ok()?;
    let mut opt = inferno::flamegraph::Options::default();
    opt.title = title.to_string();
    opt.subtitle = Some("red: grew from A to B; blue: shrank (widths: B)".into());
    opt.count_name = "samples".into();
    opt.deterministic = true;
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut opt, lines.lines(), &mut out).ok()?;
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(lines: &[(&str, u64)]) -> Folded {
        Folded { stacks: lines.iter().map(|(s, n)| (s.split(';').map(String::from).collect(), *n)).collect() }
            .normalise()
    }

    #[test]
    fn a_grown_journal_path_is_listed_and_sampling_noise_is_not() {
        let a = f(&[
            ("w;vfs_write;ext4_da_write_begin", 600),
            ("w;vfs_write;ext4_da_write_end", 200),
            ("w;do_truncate", 200),
            ("w;noise_fn", 50),
        ]);
        let b = f(&[
            ("w;vfs_write;ext4_write_begin", 400),
            ("w;vfs_write;ext4_journalled_write_end;jbd2_journal_get_write_access", 300),
            ("w;do_truncate", 200),
            ("w;noise_fn", 52),
        ]);
        let d = diff(&a, &b, 10);
        let grown: Vec<&str> = d.grown.iter().map(|c| c.name.as_str()).collect();
        let shrunk: Vec<&str> = d.shrunk.iter().map(|c| c.name.as_str()).collect();
        assert!(grown.contains(&"ext4_write_begin") && grown.contains(&"jbd2_journal_get_write_access"), "{grown:?}");
        assert!(shrunk.contains(&"ext4_da_write_begin") && shrunk.contains(&"ext4_da_write_end"), "{shrunk:?}");
        assert!(!grown.contains(&"noise_fn") && !shrunk.contains(&"noise_fn"), "4.8% vs 5.0% is noise");
        let first = &d.shrunk[0];
        assert_eq!(first.name, "ext4_da_write_begin");
        assert!((first.delta_pp + 57.1).abs() < 0.1, "{first:?}");
        assert!(d.grown.iter().chain(&d.shrunk).all(|c| c.p < ALPHA));
    }

    #[test]
    fn two_profiles_of_one_shape_have_no_change() {
        let a = f(&[("w;x", 500), ("w;y", 500)]);
        let b = f(&[("w;x", 251), ("w;y", 249)]);
        let d = diff(&a, &b, 10);
        assert!(d.grown.is_empty() && d.shrunk.is_empty(), "{d:?}");
        assert_eq!(d.tested, 2);
        let svg = differential_svg(&a, &b, "t").unwrap();
        assert!(svg.contains("<svg"));
    }

    /// Five pairs of A and B profiles with sampling jitter: the journalled path grows in
    /// every pair and is listed with its interval; a function that moves either way from
    /// pair to pair is not, however large one pair's difference.
    #[test]
    fn across_pairs_a_consistent_change_is_listed_and_a_pair_to_pair_swing_is_not() {
        let jitter = [0u64, 7, 3, 11, 5];
        let swing = [300u64, 0, 280, 10, 150];
        let mut pairs_owned = Vec::new();
        for i in 0..5 {
            let a = f(&[
                ("w;vfs_write;ext4_da_write_begin", 600 + jitter[i]),
                ("w;do_truncate", 200),
                ("w;swing", 10 + swing[i]),
            ]);
            let b = f(&[
                ("w;vfs_write;ext4_write_begin", 400 + jitter[4 - i]),
                ("w;vfs_write;ext4_journalled_write_end", 200 + jitter[i]),
                ("w;do_truncate", 200),
                ("w;swing", 10 + swing[4 - i] / 2 + if i % 2 == 0 { 150 } else { 0 }),
            ]);
            pairs_owned.push((a, b));
        }
        let pairs: Vec<(&Folded, &Folded)> = pairs_owned.iter().map(|(a, b)| (a, b)).collect();
        let d = paired_diff(&pairs, 10, true);
        assert_eq!(d.judged, Judged::AcrossPairs(5));
        let grown: Vec<&str> = d.grown.iter().map(|c| c.name.as_str()).collect();
        let shrunk: Vec<&str> = d.shrunk.iter().map(|c| c.name.as_str()).collect();
        assert!(grown.contains(&"ext4_journalled_write_end") && grown.contains(&"ext4_write_begin"), "{d:?}");
        assert!(shrunk.contains(&"ext4_da_write_begin"), "{d:?}");
        assert!(!grown.contains(&"swing") && !shrunk.contains(&"swing"), "{d:?}");
        let j = d.grown.iter().find(|c| c.name == "ext4_journalled_write_end").unwrap();
        let (lo, hi) = j.interval_pp.unwrap();
        assert!(lo > 0.0 && lo <= j.delta_pp && j.delta_pp <= hi, "{j:?}");
        // Functions below the smallest listed change on both sides are not tested.
        assert!(d.tested < 8, "{d:?}");
    }

    #[test]
    fn across_pairs_identical_arms_have_no_change_and_one_pair_is_a_single_profile_diff() {
        let a = f(&[("w;x", 500), ("w;y", 500)]);
        let b = f(&[("w;x", 480), ("w;y", 520)]);
        let c = f(&[("w;x", 520), ("w;y", 480)]);
        let d = paired_diff(&[(&a, &b), (&b, &a), (&a, &c), (&c, &a)], 10, true);
        assert!(d.grown.is_empty() && d.shrunk.is_empty(), "{d:?}");
        assert_eq!((d.judged, d.tested), (Judged::AcrossPairs(4), 2));
        let single = paired_diff(&[(&a, &b)], 10, true);
        assert_eq!(single, diff(&a, &b, 10));
        assert_eq!(single.judged, Judged::SingleProfile);
        // Weights that are not samples: the 2-point changes listed, untested.
        let untested = paired_diff(&[(&a, &b)], 10, false);
        assert_eq!(untested.judged, Judged::Untested);
        assert_eq!(untested.grown.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["y"]);
    }
}
