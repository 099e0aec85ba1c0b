//! The "Paired comparison" section of a report, in every format the report has: the
//! markup walk (terminal, Markdown, HTML) and CSV records. JSON is the [`PairedRun`] itself.

use super::join::{PairedComparison, PairedRun};
use crate::model::pairing::PairStop;
use crate::report::format::{csv_num, csv_record};
use crate::report::markup::Markup;

/// `x` as a percentage without needless decimals: `5%`, `2.5%`, `99%`.
pub fn percent(x: f64) -> String {
    let p = x * 100.0;
    if (p - p.round()).abs() < 1e-9 { format!("{}%", p.round()) } else { format!("{p:.1}%") }
}

/// A ratio less 1, as the ratio with 3 decimals (`0.953`); `∞` when infinite.
fn ratio(change_less_one: f64) -> String {
    if change_less_one.is_finite() { format!("{:.3}", change_less_one + 1.0) } else { "∞".into() }
}

/// `0.953 [0.931, 0.976]`, or `1.020 [unbounded]` when an end is not finite.
fn ratio_with_interval(point: f64, low: f64, high: f64) -> String {
    if low.is_finite() && high.is_finite() {
        format!("{} [{}, {}]", ratio(point), ratio(low), ratio(high))
    } else {
        format!("{} [unbounded]", ratio(point))
    }
}

/// The stop reason as a report says it; `-` when the group had not stopped.
pub fn stop_name(stop: Option<PairStop>) -> &'static str {
    match stop {
        Some(PairStop::Regressed) => "regressed",
        Some(PairStop::Improved) => "improved",
        Some(PairStop::Unchanged) => "unchanged",
        Some(PairStop::MaxPairs) => "max pairs",
        Some(PairStop::Interrupted) => "interrupted",
        Some(PairStop::MemberFailed) => "member failed",
        None => "-",
    }
}

/// The stop column of a row: [`stop_name`], except that a steps group's sequential stop
/// decided on the sum of a member's steps per iteration, not on the row's step, so a
/// decided stop says so (`regressed on the step sum`) and is never read as this step's
/// verdict.
pub fn stop_cell(c: &PairedComparison) -> String {
    let name = stop_name(c.stop);
    match c.stop {
        Some(PairStop::Regressed | PairStop::Improved | PairStop::Unchanged) if c.step.is_some() => {
            format!("{name} on the step sum")
        }
        _ => name.to_string(),
    }
}

/// `14`, `14 (+1 dropped)`, `14 (+1 dropped, 1 unmatched)`.
pub fn pairs_cell(c: &PairedComparison) -> String {
    let mut extra = Vec::new();
    if !c.dropped.is_empty() {
        extra.push(format!("+{} dropped", c.dropped.len()));
    }
    if !c.unmatched.is_empty() {
        extra.push(format!("{} unmatched", c.unmatched.len()));
    }
    if extra.is_empty() { c.pairs.to_string() } else { format!("{} ({})", c.pairs, extra.join(", ")) }
}

/// The paired ratio and its interval: `0.953 [0.931, 0.976]`, `-` without pairs.
pub fn ratio_cell(c: &PairedComparison) -> String {
    match c.change {
        Some(ch) => ratio_with_interval(ch.mean, ch.ci_low, ch.ci_high),
        None => "-".into(),
    }
}

/// Hodges–Lehmann with its interval, or why there is none.
pub fn hl_cell(c: &PairedComparison) -> String {
    match c.signed_rank {
        Some(w) => ratio_with_interval(w.hl, w.ci_low, w.ci_high),
        None => "needs 6 pairs".into(),
    }
}

/// Wilcoxon's p with 3 decimals (`<0.001` below), `-` below 6 pairs.
pub fn p_cell(c: &PairedComparison) -> String {
    match c.signed_rank {
        Some(w) if w.p < 0.001 => "<0.001".into(),
        Some(w) => format!("{:.3}", w.p),
        None => "-".into(),
    }
}

/// The group (and step) a row compares.
fn what(c: &PairedComparison) -> String {
    format!("{}{}", c.group, c.step.as_deref().map(|s| format!(" {s}")).unwrap_or_default())
}

/// What the section's columns mean, for one run.
fn legend(p: &PairedRun) -> String {
    let looks = p.looks.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
    format!(
        "Arms of `{axis}`: {arms}, each pair measured back to back in this run. Per pair d = ln(candidate / baseline) \
         of {metric} ({worse}). ratio: exp(mean d), the ratio of geometric means, with its t interval; HL: the \
         Hodges–Lehmann estimate with its Wilcoxon interval (needs 6 pairs); p: Wilcoxon's signed-rank test, \
         two-sided. Intervals at {level}: 5% split over the {n} looks of {min}..{max} pairs (at {looks}), the level \
         the run's sequential stop used. verdict: the gate's rule at the threshold; stop: why the group stopped (a \
         steps group's stop decided on the sum of a member's steps per iteration, not on one step: `… on the step \
         sum`; each step's verdict is its own).",
        axis = p.axis,
        arms = p
            .arms
            .iter()
            .enumerate()
            .map(|(i, a)| if i == 0 { format!("{a} (baseline)") } else { a.clone() })
            .collect::<Vec<_>>()
            .join(", "),
        metric = p.metric,
        worse = p.worse,
        level = percent(p.level),
        n = p.looks.len(),
        min = p.min_pairs,
        max = p.max_pairs,
    )
}

/// Whether paired ratios' intervals agree: `agree` when they share a ratio (every interval
/// overlaps every other: the highest lower end is at or below the lowest upper end), `differ`
/// when they do not, `cannot tell` when one is missing or unbounded. Each interval is at its own
/// run's level; overlap does not prove the labs equal, but no overlap at those levels is a
/// difference between the labs that their own spread does not explain.
pub fn agreement(changes: &[Option<crate::stats::Change>]) -> &'static str {
    let ends: Option<Vec<(f64, f64)>> = changes
        .iter()
        .map(|c| c.filter(|c| c.ci_low.is_finite() && c.ci_high.is_finite()).map(|c| (c.ci_low, c.ci_high)))
        .collect();
    match ends {
        Some(e) if e.len() > 1 => {
            let low = e.iter().map(|x| x.0).fold(f64::NEG_INFINITY, f64::max);
            let high = e.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
            if low <= high { "agree (intervals overlap)" } else { "differ (no ratio in every interval)" }
        }
        _ => "cannot tell",
    }
}

/// When every run compared is a paired run (two labs' runs of one bundle): one table with,
/// per pair group, candidate arm and quantity all of them measured, each run's paired ratio
/// with its interval and whether the intervals [`agreement`].
pub fn write_agreement(m: &mut dyn Markup, paired: &[PairedRun]) {
    let Some(first) = paired.first() else { return };
    let key = |c: &PairedComparison| (c.group.clone(), c.step.clone(), c.baseline.clone(), c.candidate.clone());
    let mut rows = Vec::new();
    for c in &first.comparisons {
        let all: Option<Vec<&PairedComparison>> =
            paired.iter().map(|p| p.comparisons.iter().find(|d| key(d) == key(c))).collect();
        let Some(all) = all else { continue };
        let mut row = vec![what(c), format!("{} / {}", c.candidate, c.baseline)];
        row.extend(all.iter().map(|d| ratio_cell(d)));
        row.push(agreement(&all.iter().map(|d| d.change).collect::<Vec<_>>()).to_string());
        rows.push(row);
    }
    if rows.is_empty() {
        return;
    }
    m.heading(2, "Do the paired runs agree?");
    let mut header = vec!["pair group".to_string(), "ratio".to_string()];
    header.extend(paired.iter().map(|p| format!("{} [{} CI]", p.label, percent(p.level))));
    header.push("intervals".into());
    m.table(&header, &rows);
    m.paragraph(
        "Each run's paired ratio (candidate over baseline arm, from its own pairs) with its interval at that run's level. \
         agree: the intervals overlap, some ratio lies in every one (this does not show the runs equal); differ: no \
         ratio lies in every interval, a difference between the runs beyond what each run's own pairs spread; cannot \
         tell: a run has no bounded interval.",
    );
}

/// The section of each paired run: a heading (naming the run when there are several),
/// the legend, one row per comparison, and notes on dropped pairs and warnings.
pub fn write_sections(m: &mut dyn Markup, paired: &[PairedRun], several_runs: bool) {
    for p in paired {
        let title = if several_runs { format!("Paired comparison: {}", p.label) } else { "Paired comparison".into() };
        m.heading(2, &title);
        m.paragraph(&legend(p));
        let ci = format!("[{} CI]", percent(p.level));
        let header: Vec<String> = [
            "pair group".to_string(),
            "baseline".into(),
            "candidate".into(),
            format!("ratio {ci}"),
            "pairs".into(),
            format!("HL {ci}"),
            "Wilcoxon p".into(),
            "stop".into(),
            "threshold".into(),
            "verdict".into(),
        ]
        .to_vec();
        let rows: Vec<Vec<String>> = p
            .comparisons
            .iter()
            .map(|c| {
                vec![
                    what(c),
                    c.baseline.clone(),
                    c.candidate.clone(),
                    ratio_cell(c),
                    pairs_cell(c),
                    hl_cell(c),
                    p_cell(c),
                    stop_cell(c),
                    percent(c.threshold),
                    c.verdict.name().into(),
                ]
            })
            .collect();
        if rows.is_empty() {
            m.paragraph("No pair group has a baseline and a candidate cell.");
        } else {
            m.table(&header, &rows);
        }
        let mut seen_groups: Vec<&str> = Vec::new();
        let mut seen_notes: Vec<(&str, &str)> = Vec::new();
        for c in &p.comparisons {
            // A note every step of a group shares (why the group stopped) is said once.
            if let Some(n) = &c.note
                && !seen_notes.contains(&(c.group.as_str(), n.as_str()))
            {
                seen_notes.push((&c.group, n));
                let whom = if c.step.is_some()
                    && p.comparisons.iter().filter(|x| x.group == c.group).all(|x| x.note.as_ref() == Some(n))
                {
                    c.group.clone()
                } else {
                    what(c)
                };
                m.note(&format!("{whom}: {n}"));
            }
            if !c.dropped.is_empty() && !seen_groups.contains(&c.group.as_str()) {
                seen_groups.push(&c.group);
                let reasons: Vec<String> = c
                    .dropped
                    .iter()
                    .map(|d| format!("slot {}: {}", d.slot, crate::text::escape_control(&d.reason)))
                    .collect();
                m.note(&format!("{}: dropped pairs: {}", c.group, reasons.join("; ")));
            }
        }
        for w in &p.warnings {
            let label = m.strong("warning:");
            m.note(&format!("{label} {w}"));
        }
    }
}

/// The paired comparisons as CSV records, one per comparison, under their own header.
pub fn csv(paired: &[PairedRun]) -> String {
    let head: Vec<String> = [
        "label",
        "pair_group",
        "step",
        "baseline",
        "candidate",
        "pairs",
        "dropped",
        "unmatched",
        "ratio",
        "ratio_ci_low",
        "ratio_ci_high",
        "hl",
        "hl_ci_low",
        "hl_ci_high",
        "wilcoxon_p",
        "level",
        "stop",
        "threshold",
        "verdict",
    ]
    .map(String::from)
    .to_vec();
    let mut out = csv_record(&head);
    let plus_one = |x: f64| x.is_finite().then_some(x + 1.0);
    for p in paired {
        for c in &p.comparisons {
            let (r, lo, hi) = c
                .change
                .map_or((None, None, None), |ch| (plus_one(ch.mean), plus_one(ch.ci_low), plus_one(ch.ci_high)));
            let (hl, hlo, hhi) =
                c.signed_rank.map_or((None, None, None), |w| (plus_one(w.hl), plus_one(w.ci_low), plus_one(w.ci_high)));
            out.push_str(&csv_record(&[
                p.label.clone(),
                c.group.clone(),
                c.step.clone().unwrap_or_default(),
                c.baseline.clone(),
                c.candidate.clone(),
                c.pairs.to_string(),
                c.dropped.len().to_string(),
                c.unmatched.len().to_string(),
                csv_num(r),
                csv_num(lo),
                csv_num(hi),
                csv_num(hl),
                csv_num(hlo),
                csv_num(hhi),
                csv_num(c.signed_rank.map(|w| w.p)),
                csv_num(Some(p.level)),
                stop_name(c.stop).replace(' ', "_").replace('-', ""),
                csv_num(Some(c.threshold)),
                c.verdict.name().into(),
            ]));
        }
    }
    out
}

/// The section of one run as plain text (`markdown` false) or Markdown, for outputs that
/// are not reports (the gate's table and summary).
pub fn section_text(paired: &PairedRun, markdown: bool) -> String {
    let mut m: Box<dyn Markup> = if markdown {
        Box::new(crate::report::markup::Markdown::default())
    } else {
        Box::new(crate::report::markup::Plain::default())
    };
    write_sections(&mut *m, std::slice::from_ref(paired), false);
    m.finish()
}
