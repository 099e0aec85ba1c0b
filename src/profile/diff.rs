//! The profile diff of one cell between a baseline A and a candidate B: the functions
//! whose total share (itself and its callees) changed most, in percentage points, and
//! only those whose change is beyond the noise.
//!
//! Each side here is one profile (one profiled repetition per cell and run), so the only
//! noise that can be judged is the profile's own sampling noise: a function's share is
//! `k` of `n` samples, and a two-proportion z-test per function, Holm-adjusted over every
//! function of the cell, keeps those with p < [`ALPHA`] and a change of at least
//! [`MIN_PP`] points. The diff says it is a **single-profile difference**: a second
//! profile of the same build may differ by more than sampling alone (run-to-run noise
//! is not tested).

use std::collections::BTreeSet;

use super::folded::Folded;
use super::shares::counts;

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
    /// Holm-adjusted p-value of the two-proportion test.
    pub p: f64,
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
    /// Functions tested (present in either profile).
    pub tested: usize,
}

/// The diff of `a` and `b`, the `top` largest changes each way.
pub fn diff(a: &Folded, b: &Folded, top: usize) -> ProfileDiff {
    let (na, nb) = (a.samples(), b.samples());
    let (ca, cb) = (counts(a), counts(b));
    let names: BTreeSet<&str> = ca.keys().chain(cb.keys()).copied().collect();
    let pct = |k: u64, n: u64| if n == 0 { 0.0 } else { 100.0 * k as f64 / n as f64 };
    let mut changes = Vec::with_capacity(names.len());
    let mut raw_p = Vec::with_capacity(names.len());
    for name in &names {
        let (sa, ta) = ca.get(name).copied().unwrap_or_default();
        let (sb, tb) = cb.get(name).copied().unwrap_or_default();
        raw_p.push(crate::stats::two_proportion_p(ta, na, tb, nb));
        changes.push(FunctionChange {
            name: name.to_string(),
            a_pct: pct(ta, na),
            b_pct: pct(tb, nb),
            delta_pp: pct(tb, nb) - pct(ta, na),
            self_pct: (pct(sa, na), pct(sb, nb)),
            p: 1.0,
        });
    }
    for (c, p) in changes.iter_mut().zip(crate::stats::holm_adjust(&raw_p)) {
        c.p = p.unwrap_or(1.0);
    }
    let beyond: Vec<FunctionChange> =
        changes.into_iter().filter(|c| c.p < ALPHA && c.delta_pp.abs() >= MIN_PP).collect();
    let mut grown: Vec<FunctionChange> = beyond.iter().filter(|c| c.delta_pp > 0.0).cloned().collect();
    let mut shrunk: Vec<FunctionChange> = beyond.into_iter().filter(|c| c.delta_pp < 0.0).collect();
    grown.sort_by(|x, y| y.delta_pp.total_cmp(&x.delta_pp).then_with(|| x.name.cmp(&y.name)));
    shrunk.sort_by(|x, y| x.delta_pp.total_cmp(&y.delta_pp).then_with(|| x.name.cmp(&y.name)));
    grown.truncate(top);
    shrunk.truncate(top);
    ProfileDiff { samples: (na, nb), grown, shrunk, tested: names.len() }
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
}
