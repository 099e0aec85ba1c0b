//! The profile diffs of a report (`compare`, `report` of a paired run, the gate's HTML
//! page and mails): for each cell profiled in the reference run and in another, and for
//! each candidate arm of a paired run against its group's baseline arm, the functions
//! whose total share changed beyond the noise, grown and shrunk
//! ([`crate::profile::diff`]), and in the HTML page a differential flame graph (red grew,
//! blue shrank). The on-CPU profiles and, where both sides have them, the off-CPU ones,
//! each in a section of its own, by the same machinery.
//!
//! Between the arms of a paired run the k-th profiled members of both arms ran in the same
//! stretch of the pair schedule, so their profiles are paired by that index
//! ([`crate::model::CellProfile::pair`]) and a change is judged across the pairs. Between
//! two runs nothing pairs one run's profiles with the other's: the first profile of each
//! side gives a single-profile difference.

use super::markup::Markup;
use super::profiles::{TOP, folded_of};
use crate::model::{CellProfile, CellResult};
use crate::profile::diff::{self, ALPHA, FunctionChange, Judged, MIN_PP, ProfileDiff};
use crate::profile::flame;
use crate::profile::folded::Folded;
use crate::results::LoadedRun;
use crate::text::escape_control;

/// Which profile of a window a diff compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Where the workers ran (samples).
    OnCpu,
    /// Where they were blocked (`cpu+offcpu`: microseconds blocked).
    OffCpu,
}

impl Kind {
    /// The profile of this kind among a window's.
    fn of(self, p: &CellProfile) -> Option<&CellProfile> {
        match self {
            Kind::OnCpu => Some(p),
            Kind::OffCpu => p.offcpu.as_deref(),
        }
    }
}

/// One diff of a cell between two sides, ready to show.
pub struct CellDiff {
    /// `ext4-S-qoff-t1-chown (A → B)`.
    pub title: String,
    /// The two sides' labels (runs or arms), escaped.
    pub labels: (String, String),
    /// The diff with each side's stacks (merged over its pairs) for the flame graph, or
    /// why there is none.
    pub outcome: Result<(ProfileDiff, Folded, Folded), String>,
}

/// A cell's profiles of `kind`, with their pair index (0 for an unpaired run's one).
fn profiles_of(c: &CellResult, kind: Kind) -> Vec<(u32, &CellProfile)> {
    c.profile.iter().chain(&c.pair_profiles).filter_map(|p| Some((p.pair.unwrap_or(0), kind.of(p)?))).collect()
}

/// The diff of `a`'s and `b`'s profiles of `kind`: across the pairs both have when
/// `paired`, else of the first profile of each. An unreadable side is named by its label.
pub fn judge(
    (a, la): (&CellResult, &str),
    (b, lb): (&CellResult, &str),
    kind: Kind,
    paired: bool,
) -> Result<(ProfileDiff, Folded, Folded), String> {
    let (pa, pb) = (profiles_of(a, kind), profiles_of(b, kind));
    let matched: Vec<(&CellProfile, &CellProfile)> = if paired {
        pa.iter().filter_map(|(k, x)| pb.iter().find(|(j, _)| j == k).map(|(_, y)| (*x, *y))).collect()
    } else {
        pa.first().zip(pb.first()).map(|((_, x), (_, y))| (*x, *y)).into_iter().collect()
    };
    let mut read = Vec::with_capacity(matched.len());
    let mut first_error = None;
    for (x, y) in matched {
        match (folded_of(x), folded_of(y)) {
            (Ok(fx), Ok(fy)) => read.push((fx, fy)),
            (Err(why), _) => _ = first_error.get_or_insert_with(|| format!("{la}: {why}")),
            (_, Err(why)) => _ = first_error.get_or_insert_with(|| format!("{lb}: {why}")),
        }
    }
    if read.is_empty() {
        return Err(first_error.unwrap_or_else(|| "no profile on both sides".into()));
    }
    let refs: Vec<(&Folded, &Folded)> = read.iter().map(|(x, y)| (x, y)).collect();
    let d = diff::paired_diff(&refs, TOP, kind == Kind::OnCpu);
    let merge = |side: &dyn Fn(&(Folded, Folded)) -> &Folded| {
        Folded { stacks: read.iter().flat_map(|p| side(p).stacks.iter().cloned()).collect() }.normalise()
    };
    Ok((d, merge(&|p| &p.0), merge(&|p| &p.1)))
}

/// The diffs of every cell profiled in the first run and in another.
pub fn between_runs(runs: &[(&str, &LoadedRun)], kind: Kind) -> Vec<CellDiff> {
    let Some(((base_label, base), others)) = runs.split_first() else { return Vec::new() };
    let mut out = Vec::new();
    for (label, run) in others {
        for a in &base.cells {
            let Some(b) = run.cells.iter().find(|c| c.id == a.id) else { continue };
            if profiles_of(a, kind).is_empty() || profiles_of(b, kind).is_empty() {
                continue;
            }
            out.push(CellDiff {
                title: format!("{} ({base_label} → {label})", escape_control(&a.id)),
                labels: (base_label.to_string(), label.to_string()),
                outcome: judge((a, base_label), (b, label), kind, false),
            });
        }
    }
    out
}

/// The diffs of a paired run: each candidate arm's cell against its group's baseline arm,
/// across the pairs both profiled.
pub fn between_arms(run: &LoadedRun, kind: Kind) -> Vec<CellDiff> {
    let mut out = Vec::new();
    for base in run.cells.iter().filter(|c| c.pairing.as_ref().is_some_and(|p| p.arm == 0)) {
        let Some(bp) = &base.pairing else { continue };
        let arm_name = |c: &CellResult| {
            let p = c.pairing.as_ref();
            escape_control(p.and_then(|p| p.arms.get(p.arm)).map_or(c.id.as_str(), String::as_str))
        };
        let candidates = run
            .cells
            .iter()
            .filter(|c| c.pairing.as_ref().is_some_and(|p| p.group == bp.group && p.axis == bp.axis && p.arm != 0));
        for cand in candidates {
            if profiles_of(base, kind).is_empty() || profiles_of(cand, kind).is_empty() {
                continue;
            }
            let labels = (arm_name(base), arm_name(cand));
            out.push(CellDiff {
                title: format!("{} ({} → {})", escape_control(&bp.group), labels.0, labels.1),
                outcome: judge((base, &labels.0), (cand, &labels.1), kind, true),
                labels,
            });
        }
    }
    out
}

/// `+1.2`: percentage points with a sign.
fn pp(v: f64) -> String {
    format!("{v:+.1}")
}

fn rows(changes: &[FunctionChange], judged: Judged) -> Vec<Vec<String>> {
    changes
        .iter()
        .map(|c| {
            let mut row = vec![c.name.clone(), format!("{:.1}", c.a_pct), format!("{:.1}", c.b_pct), pp(c.delta_pp)];
            if let Judged::AcrossPairs(_) = judged {
                row.push(c.interval_pp.map_or("-".into(), |(lo, hi)| format!("[{}, {}]", pp(lo), pp(hi))));
            }
            row.push(format!("{:.1} → {:.1}", c.self_pct.0, c.self_pct.1));
            row.push(match judged {
                Judged::Untested => "-".into(),
                _ if c.p < 1e-4 => "<0.0001".into(),
                _ => format!("{:.4}", c.p),
            });
            row
        })
        .collect()
}

/// A change with the callers it carries, nearest first: `f ← g ← h …+N`, six at most.
fn call_path(c: &FunctionChange) -> String {
    const SHOWN: usize = 6;
    let mut s = c.name.clone();
    for f in c.carries.iter().take(SHOWN) {
        s.push_str(" ← ");
        s.push_str(f);
    }
    if c.carries.len() > SHOWN {
        s.push_str(&format!(" …+{}", c.carries.len() - SHOWN));
    }
    s
}

/// Below the tables of changes, the call path of each listed change that carries callers.
fn call_paths(m: &mut dyn Markup, d: &ProfileDiff) {
    let carrying: Vec<&FunctionChange> = d.grown.iter().chain(&d.shrunk).filter(|c| !c.carries.is_empty()).collect();
    if carrying.is_empty() {
        return;
    }
    m.paragraph("Call paths: each listed change with the callers whose change it carries, nearest first.");
    for c in carrying {
        m.item(&call_path(c));
    }
}

/// The clause on the changes left off the tables because a callee carries them
/// ([`crate::profile::carried`]), saying `where` they are shown; or nothing.
pub fn carried_text(d: &ProfileDiff, shown: &str) -> String {
    match d.carried {
        (0, 0) => String::new(),
        (up, down) => format!(
            "; {up} grown and {down} shrunk are callers whose change one callee carries (at least {:.0}% of it in the \
             samples with that callee below them), {shown}",
            100.0 * crate::profile::carried::CARRIED
        ),
    }
}

/// How a diff's changes were judged, in a sentence.
pub fn judged_text(d: &ProfileDiff, kind: Kind) -> String {
    let unit = match kind {
        Kind::OnCpu => "samples",
        Kind::OffCpu => "µs blocked",
    };
    let (a, b) = d.samples;
    match d.judged {
        Judged::AcrossPairs(n) => format!(
            "across {n} pairs of profiles ({a} → {b} {unit} in all): per pair, B's share less A's; mean change \
             with its 95% t interval, paired t test per function, Holm-adjusted over the {} functions with a mean \
             share of at least {MIN_PP}% on one side, p < {ALPHA}, at least {MIN_PP} points",
            d.tested
        ),
        Judged::SingleProfile => format!(
            "single-profile difference ({a} → {b} {unit}): one profile per side, so only sampling noise is \
             tested (two-proportion z-test per function, Holm-adjusted over {} functions, p < {ALPHA}, at least \
             {MIN_PP} points); run-to-run noise is not",
            d.tested
        ),
        Judged::Untested => format!(
            "untested ({a} → {b} {unit}): one profile per side whose weights are time, not samples, so no \
             sampling test applies; every change of at least {MIN_PP} points is listed, noise included (a \
             paired run judges them across its pairs)"
        ),
    }
}

/// One diff: its sentence, its grown and shrunk tables and, in HTML, its differential
/// flame graph (a bisection's report writes each step's arm diffs with it).
pub fn write_one(m: &mut dyn Markup, cd: &CellDiff, kind: Kind, flame_graphs: bool) {
    let what = if kind == Kind::OnCpu { "Profile diff" } else { "Off-CPU profile diff" };
    let (d, fa, fb) = match &cd.outcome {
        Ok(x) => x,
        Err(why) => {
            m.note(&format!("{}: {why}", cd.title));
            return;
        }
    };
    m.heading(3, &format!("{what} of {}", cd.title));
    m.paragraph(&format!(
        "{}; {} grew and {} shrank beyond the noise{}{}",
        judged_text(d, kind),
        d.beyond.0,
        d.beyond.1,
        carried_text(d, "listed below the tables on the callee's call path instead of on their own"),
        if d.grown.len().max(d.shrunk.len()) >= TOP && (d.beyond.0 - d.carried.0).max(d.beyond.1 - d.carried.1) > TOP {
            format!(" (the {TOP} largest each way listed)")
        } else {
            String::new()
        }
    ));
    let (la, lb) = &cd.labels;
    let header = |what: &str| {
        let mut h =
            vec![format!("function ({what})"), format!("{la} total %"), format!("{lb} total %"), "change pp".into()];
        if let Judged::AcrossPairs(_) = d.judged {
            h.push("95% interval pp".into());
        }
        h.extend(["self %".to_string(), "p (Holm)".to_string()]);
        h
    };
    if !d.grown.is_empty() {
        m.table(&header("grew"), &rows(&d.grown, d.judged));
    }
    if !d.shrunk.is_empty() {
        m.table(&header("shrank"), &rows(&d.shrunk, d.judged));
    }
    call_paths(m, d);
    if flame_graphs && let Some(svg) = diff::differential_svg(fa, fb, &format!("fsbench {what}: {}", cd.title)) {
        m.figure(&flame::as_image(&svg), &format!("Differential flame graph of {}: red grew, blue shrank", cd.title));
    }
}

/// The profile changes of every run against the first, and of every paired run's arms;
/// the off-CPU ones after, in a section of their own. Nothing when no cell has two profiles.
pub(super) fn write(m: &mut dyn Markup, runs: &[(&str, &LoadedRun)], flame_graphs: bool) {
    for kind in [Kind::OnCpu, Kind::OffCpu] {
        let mut diffs = between_runs(runs, kind);
        for (_, run) in runs {
            diffs.extend(between_arms(run, kind));
        }
        if diffs.is_empty() {
            continue;
        }
        let (heading, share) = match kind {
            Kind::OnCpu => ("Profile changes", "share of samples"),
            Kind::OffCpu => ("Off-CPU changes", "share of the time blocked"),
        };
        m.heading(2, heading);
        m.paragraph(&format!(
            "Functions whose total {share} (on the stack: itself and its callees) changed, in percentage points: \
             between the runs for each cell profiled in both, and between the arms of each pair group of a paired \
             run. A change within the noise is not listed; each diff says how its noise was judged."
        ));
        for cd in &diffs {
            write_one(m, cd, kind, flame_graphs);
        }
    }
}
