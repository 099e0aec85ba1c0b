//! `fsbench report BISECT_DIR`: a bisection as a report: the candidates, one row per step
//! (its role, the candidate and its baseline, the verdict, the paired ratio with its
//! interval, pairs, time), the conclusion, and a plot of each step's ratio against the
//! candidate's position (whiskers: the interval; the threshold drawn) as text, Markdown,
//! HTML, PNG and SVG; and the culprit's mail (`--format email`), 80 columns. Where a
//! step's stored run holds profiles on both arms, the profile diff of its arms (candidate
//! against baseline, the report's [`profile_diff`]): the culprit's confirmation step's
//! first, as the "why", then every other step's.
//! Pure: the log and the steps' runs in, text out; every string from the log is escaped
//! where it is read.

use std::fmt::Write as _;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::drive::{conclusion_line, step_line};
use super::log::BisectLog;
use super::search::StepRecord;
use super::step_profile::StepProfile;
use crate::report::markup::{Markdown, Markup, Plain};
use crate::report::plot::{PlotError, PlotImage, render_with};
use crate::report::profile_diff::{self, Kind};
use crate::results::LoadedRun;
use crate::text::escape_control;

/// Each step's stored run, by step ([`super::log::load_step_runs`]): `None` for a
/// step with none, an unreadable one with why.
pub type StepRuns = [Option<Result<LoadedRun, String>>];

/// `step 4 (culprit): V2 against V1, bad`.
fn step_title(i: usize, s: &StepRecord, log: &BisectLog) -> String {
    format!(
        "step {} ({}): {} against {}, {}",
        i + 1,
        format!("{:?}", s.role).to_lowercase(),
        escape_control(log.label(s.candidate)),
        escape_control(log.label(s.baseline)),
        s.measure.verdict.name()
    )
}

/// The profile diffs of step `i`'s arms (on-CPU, then off-CPU), under a heading of `what`;
/// when none could be made, why in a line (a cell's `not profiled: …`); nothing when its
/// run has no profile record at all (the scenario does not profile).
fn write_step_profiles(m: &mut dyn Markup, log: &BisectLog, runs: &StepRuns, i: usize, what: &str, flames: bool) {
    let title = step_title(i, &log.steps[i], log);
    let run = match runs.get(i) {
        Some(Some(Ok(run))) => run,
        Some(Some(Err(why))) => {
            return m.paragraph(&format!("{title}: no profile diff: its run cannot be read: {why}"));
        }
        _ => return,
    };
    let diffs: Vec<_> = [Kind::OnCpu, Kind::OffCpu]
        .into_iter()
        .flat_map(|k| profile_diff::between_arms(run, k).into_iter().map(move |d| (k, d)))
        .collect();
    if !diffs.iter().any(|(_, d)| d.outcome.is_ok()) {
        let why = diffs.iter().find_map(|(_, d)| d.outcome.as_ref().err().cloned());
        if let Some(why) = why.or_else(|| StepProfile::of_run(run).why_not) {
            m.paragraph(&format!("{title}: no profile diff: {why}"));
        }
        return;
    }
    m.heading(2, &format!("{what}{title}"));
    for (kind, d) in &diffs {
        profile_diff::write_one(m, d, *kind, flames);
    }
}

/// The report's blocks, in any markup: `runs` the steps' runs, whose profile diffs are
/// shown; `flames` draws the culprit step's differential flame graph (HTML).
pub fn write(m: &mut dyn Markup, log: &BisectLog, plot: Option<&PlotImage>, runs: &StepRuns, flames: bool) {
    m.heading(1, &format!("Bisection of {} ({})", escape_control(&log.scenario), escape_control(&log.cell)));
    m.paragraph(&format!(
        "metric {}, threshold {:.1}%, {}..{} pairs a step, seed {}, started {}; every step a kernel-paired run of \
         the candidate against a baseline (ratio: candidate / baseline of the paired geometric means).",
        escape_control(&log.metric),
        log.threshold * 100.0,
        log.min_pairs,
        log.max_pairs,
        log.seed,
        escape_control(&log.started)
    ));
    m.heading(2, "Conclusion");
    m.paragraph(&conclusion_line(log));
    let why = log.confirmation();
    if let Some(i) = why {
        write_step_profiles(m, log, runs, i, "Why: the profile diff of the culprit's ", flames);
    }
    m.heading(2, "Steps");
    let labels: Vec<String> = log.candidates.iter().map(|c| c.label.clone()).collect();
    let mut rows: Vec<Vec<String>> = log
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let m = &s.measure;
            vec![
                (i + 1).to_string(),
                format!("{:?}", s.role).to_lowercase(),
                escape_control(log.label(s.candidate)),
                escape_control(log.label(s.baseline)),
                m.verdict.name().to_string(),
                m.ratio_text(),
                format!("{} (+{} dropped)", m.pairs, m.dropped),
                crate::text::human_duration(std::time::Duration::from_secs_f64(s.seconds)),
            ]
        })
        .collect();
    let mut header = ["step", "role", "candidate", "against", "verdict", "ratio [interval]", "pairs", "time"]
        .map(String::from)
        .to_vec();
    // Where the steps' runs say anything of profiles: each step's largest change.
    if log.steps.iter().any(|s| s.measure.profile.is_some()) {
        header.push("profile: largest change".into());
        for (row, s) in rows.iter_mut().zip(&log.steps) {
            let p = s.measure.profile.as_ref();
            let not = || if p.is_some_and(|p| p.why_not.is_some()) { "not profiled" } else { "-" }.to_string();
            row.push(p.and_then(StepProfile::headline).unwrap_or_else(not));
        }
    }
    m.table(&header, &rows);
    for s in log.steps.iter().filter(|s| s.measure.reason.is_some()) {
        m.note(&step_line(s, &labels));
    }
    if log.steps.iter().any(|s| !s.measure.cells.is_empty()) {
        m.heading(2, "Cells");
        m.paragraph("Every cell of each step; a step is bad when any cell's Holm-adjusted verdict is bad, good when all are good.");
        let rows: Vec<Vec<String>> = log
            .steps
            .iter()
            .enumerate()
            .flat_map(|(i, s)| s.measure.cells.iter().map(move |c| (i, c)))
            .map(|(i, c)| {
                vec![
                    (i + 1).to_string(),
                    escape_control(&c.cell),
                    c.measure.verdict.name().to_string(),
                    escape_control(&c.measure.paired_verdict),
                    c.measure.ratio_text(),
                    c.measure.pairs.to_string(),
                    super::drive::p_text(c.p_holm),
                ]
            })
            .collect();
        let header = ["step", "cell", "verdict", "own verdict", "ratio [interval]", "pairs", "Holm p"];
        m.table(&header.map(String::from), &rows);
    }
    if let Some(p) = plot {
        m.figure(
            &p.svg,
            "Each step's paired ratio (candidate / baseline) at the candidate's position; whiskers: its interval; \
             dashed: 1 and 1 ± threshold. Red: bad, green: good, grey: unknown or skipped.",
        );
    }
    for i in (0..log.steps.len()).filter(|i| Some(*i) != why) {
        write_step_profiles(m, log, runs, i, "Profile diff of ", false);
    }
    m.heading(2, "Candidates");
    let rows: Vec<Vec<String>> = log
        .candidates
        .iter()
        .enumerate()
        .map(|(i, c)| {
            vec![(i + 1).to_string(), escape_control(&c.label), escape_control(&c.image), escape_control(&c.cmdline)]
        })
        .collect();
    m.table(&["position", "label", "image", "command line"].map(String::from), &rows);
}

/// The report as text (`Format::Table`) or Markdown, with no plot.
pub fn render(log: &BisectLog, runs: &StepRuns, markdown: bool) -> String {
    let mut m: Box<dyn Markup> = if markdown { Box::new(Markdown::default()) } else { Box::new(Plain::default()) };
    write(m.as_mut(), log, None, runs, false);
    m.finish()
}

/// The report as one self-contained HTML page, its plot inline, the culprit step's
/// differential flame graph drawn.
pub fn html(log: &BisectLog, runs: &StepRuns) -> Result<String, PlotError> {
    let p = plot(log)?;
    let mut m: Box<dyn Markup> = Box::new(crate::report::html::Html::default());
    write(m.as_mut(), log, Some(&p), runs, true);
    Ok(m.finish())
}

/// The plot of `log`'s steps: ratio against candidate position.
pub fn plot(log: &BisectLog) -> Result<PlotImage, PlotError> {
    render_with("bisect".into(), |root| draw(root, log), |root| draw(root, log))
}

fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, log: &BisectLog) -> Result<(), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let n = log.candidates.len();
    let ratios = log.steps.iter().flat_map(|s| [s.measure.ratio, s.measure.ratio_low, s.measure.ratio_high]).flatten();
    let (lo, hi) = ratios.fold((1.0 - log.threshold, 1.0 + log.threshold), |(a, b), r| (a.min(r), b.max(r)));
    let pad = ((hi - lo) * 0.1).max(0.02);
    let labels: Vec<String> = log.candidates.iter().map(|c| escape_control(&c.label)).collect();
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("bisect {}", escape_control(&log.cell)), ("sans-serif", 24))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), (lo - pad)..(hi + pad))
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .x_labels(n.min(24))
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 {
                labels.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .x_desc("candidate (good endpoint first)")
        .y_desc(format!("paired ratio of {} (candidate / baseline)", escape_control(&log.metric)))
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(|x| e(&x))?;
    // The threshold either way: a regression is below for higher-is-better metrics, above for the others.
    for y in [1.0 - log.threshold, 1.0, 1.0 + log.threshold] {
        chart
            .draw_series(DashedLineSeries::new(vec![(-0.5, y), (n as f64 - 0.5, y)], 6, 4, BLACK.mix(0.5).into()))
            .map_err(|x| e(&x))?;
    }
    for s in &log.steps {
        let m = &s.measure;
        let Some(r) = m.ratio else { continue };
        let color = match m.verdict.name() {
            "bad" => RED,
            "good" => RGBColor(44, 160, 44),
            _ => RGBColor(127, 127, 127),
        };
        let x = s.candidate as f64;
        if let (Some(l), Some(h)) = (m.ratio_low, m.ratio_high) {
            chart
                .draw_series(std::iter::once(PathElement::new(vec![(x, l), (x, h)], color.stroke_width(2))))
                .map_err(|x| e(&x))?;
        }
        chart.draw_series(std::iter::once(Circle::new((x, r), 5, color.filled()))).map_err(|x| e(&x))?;
    }
    root.present().map_err(|x| e(&x))
}

/// The mail's "why": the culprit's confirmation step's most changed functions (from its
/// run, else as the log recorded them), or why it has none; nothing when it was not
/// profiled and says nothing.
fn email_why(log: &BisectLog, runs: &StepRuns) -> Vec<String> {
    let Some(i) = log.confirmation() else { return Vec::new() };
    let s = &log.steps[i];
    let summary = match runs.get(i) {
        Some(Some(Ok(run))) => Some(StepProfile::of_run(run)),
        _ => s.measure.profile.clone(),
    };
    let Some(p) = summary else { return Vec::new() };
    let what = format!(
        "step {} ({} against {})",
        i + 1,
        escape_control(log.label(s.candidate)),
        escape_control(log.label(s.baseline))
    );
    if !p.profiled {
        return p.why_not.map(|w| vec![format!("why: no profile diff of {what}: {w}")]).unwrap_or_default();
    }
    let mut out = Vec::new();
    for d in &p.diffs {
        let how = match d.judged.as_str() {
            "across_pairs" => format!("across {} pairs of profiles", d.pairs),
            _ => "one profile a side (sampling noise only)".into(),
        };
        out.push(format!(
            "why: the profile of {what}, {}, {how}: total share of samples, points, beyond the noise (Holm p < 0.05):",
            d.cell
        ));
        if d.grown.is_empty() && d.shrunk.is_empty() {
            out.push("  no function changed beyond the noise".into());
        }
        for f in d.grown.iter().chain(&d.shrunk) {
            let p = if f.p < 1e-4 { "<0.0001".to_string() } else { format!("{:.4}", f.p) };
            let head = format!("  {:>+6.1}  p {p:<7}  ", f.change_pp);
            out.push(format!("{head}{}", crate::text::first_line_cut(&f.function, 80 - head.chars().count())));
        }
        let more = (d.beyond[0] as usize).saturating_sub(d.grown.len())
            + (d.beyond[1] as usize).saturating_sub(d.shrunk.len());
        if more > 0 {
            out.push(format!("  and {more} more beyond the noise (fsbench report shows them)"));
        }
    }
    out
}

/// The culprit's mail, at most 80 columns: a subject naming the culprit (or what the
/// bisection found instead), the conclusion, why (the culprit step's profile diff, where
/// profiled), the steps, the candidates, how to reproduce.
pub fn email(log: &BisectLog, runs: &StepRuns, dir: &str) -> String {
    let mut out = String::new();
    let subject = match &log.culprit {
        Some(c) => format!(
            "[fsbench bisect] {}: first bad {} ({})",
            escape_control(&log.scenario),
            escape_control(c),
            escape_control(&log.metric)
        ),
        None => format!("[fsbench bisect] {}: no culprit named", escape_control(&log.scenario)),
    };
    let _ = writeln!(out, "Subject: {}\n", crate::text::first_line_cut(&subject, 71));
    let _ = writeln!(out, "{}\n", crate::text::wrap(&conclusion_line(log), 80, ""));
    let why = email_why(log, runs);
    for line in &why {
        let indent = if line.starts_with("  ") { "  " } else { "    " };
        let _ = writeln!(out, "{}", crate::text::wrap(line, 80, indent));
    }
    if !why.is_empty() {
        let _ = writeln!(out);
    }
    let _ = writeln!(out, "{}", crate::text::wrap(&format!("cell: {}", escape_control(&log.cell)), 80, "  "));
    let labels: Vec<String> = log.candidates.iter().map(|c| c.label.clone()).collect();
    let _ = writeln!(out, "\nsteps (each a kernel-paired run in qemu, ratio candidate/baseline):\n");
    for (i, s) in log.steps.iter().enumerate() {
        let line = format!("{:>3}. {}", i + 1, step_line(s, &labels));
        let _ = writeln!(out, "{}", crate::text::wrap(&line, 80, "       "));
        for c in super::drive::cell_lines(s) {
            let _ = writeln!(out, "{}", crate::text::wrap(&format!("     cell {c}"), 80, "       "));
        }
    }
    if let Some(c) = log.culprit.as_ref().and_then(|c| log.candidates.iter().find(|k| &k.label == c)) {
        let _ = writeln!(out, "\nculprit image: {}", escape_control(&c.image));
        if !c.cmdline.is_empty() {
            let _ = writeln!(out, "command line: {}", escape_control(&c.cmdline));
        }
    }
    let _ = writeln!(out, "\nTo see every step: fsbench report {}", escape_control(dir));
    out.lines().map(|l| crate::text::first_line_cut(l, 80)).collect::<Vec<_>>().join("\n") + "\n"
}
