//! The steps report: seed 002's time(1) lines and a table per configuration
//! ([`groups`], with the flags of iteration-dependent steps), the side-by-side tables
//! when runs are compared ([`compare`]), and the monitors' devices and timelines.

pub mod compare;
mod csv;
pub mod groups;

pub use groups::*;

use super::json::{ReportJson, StepsReportJson};
use super::markup::Markup;
use super::plot::{self, PlotError, PlotImage};
use super::{CompareOptions, WorkloadReport, monitor_plot, monitors};
use crate::model::TextFormat;
use crate::model::{OUTPUT_SCHEMA_VERSION, StepTiming};
use crate::results::LoadedRun;
use compare::{Iterations, StepsComparison};

/// A steps report of `runs`, its groups built once; with the side-by-side comparison
/// over the chosen iterations when comparing.
pub(super) struct StepsReport<'a> {
    runs: &'a [(&'a str, &'a LoadedRun)],
    groups: Vec<StepsGroup>,
    comparison: Option<(StepsComparison, Iterations)>,
}

impl<'a> StepsReport<'a> {
    /// The groups of `runs`, and with `compare` their comparison over `compare.iterations`.
    pub(super) fn build(runs: &'a [(&'a str, &'a LoadedRun)], compare: Option<&CompareOptions>) -> Self {
        let groups = build_groups(runs);
        let comparison = compare.map(|o| {
            let labels: Vec<String> = runs.iter().map(|(l, _)| l.to_string()).collect();
            (compare::compare_steps(&groups, &labels, o.iterations), o.iterations)
        });
        StepsReport { runs, groups, comparison }
    }

    /// One table per group (every iteration, every step) with its flags, then
    /// `figures[i]` (an SVG plot of group i) when there is one.
    fn write_groups(&self, m: &mut dyn Markup, figures: &[String]) {
        let groups = &self.groups;
        // The monitors' columns only when some step has counters, so unmonitored runs keep their shape.
        let monitored = groups.iter().flat_map(|g| g.iterations.iter().flatten()).any(|s| s.counters.is_some());
        let header: Vec<String> = ["iteration", "step", "user", "system", "elapsed", "CPU"]
            .into_iter()
            .chain(monitors::STEP_HEADERS.into_iter().filter(|_| monitored))
            .map(String::from)
            .collect();
        for (gi, g) in groups.iter().enumerate() {
            let title = format!("{} {}", g.label, g.config);
            m.heading(2, &title);
            let rows: Vec<Vec<String>> = g
                .iterations
                .iter()
                .enumerate()
                .flat_map(|(i, it)| {
                    it.iter().map(move |s| {
                        let tf = s.time_format();
                        let f: Vec<&str> = tf.split(' ').collect();
                        // A disturbed step is kept and shown, marked: it is not in any statistic.
                        let shown = s.label.escaped(TextFormat::Terminal);
                        let label = if s.counts() { shown.into_owned() } else { format!("{shown} (disturbed)") };
                        let mut row =
                            vec![(i + 1).to_string(), label, f[0].into(), f[1].into(), f[2].into(), f[3].into()];
                        if monitored {
                            row.extend(monitors::step_columns(s));
                        }
                        row
                    })
                })
                .collect();
            m.table(&header, &rows);
            let disturbed: Vec<String> = g
                .iterations
                .iter()
                .enumerate()
                .flat_map(|(i, it)| {
                    it.iter().filter_map(move |s| {
                        let d = s.disturbance.as_ref().filter(|d| d.disturbed)?;
                        Some(format!("iteration {} {} ({:.2} CPU)", i + 1, s.op.escaped(TextFormat::Terminal), d.share))
                    })
                })
                .collect();
            if !disturbed.is_empty() {
                let label = m.strong("disturbed:");
                m.note(&format!(
                    "{label} {}: other processes and steal time used more than `workload.disturbance` of a CPU; kept here, left out of comparisons and the gate",
                    disturbed.join(", ")
                ));
            }
            for f in &g.flags {
                let flag = m.strong(&f.describe());
                m.note(&flag);
            }
            for w in &g.warnings {
                let label = m.strong("warning:");
                m.note(&format!("{label} {w}"));
            }
            if let Some(svg) = figures.get(gi) {
                m.figure(svg, &format!("{title}: elapsed seconds per step, one bar per iteration"));
            }
        }
    }

    /// The terminal's report of one run: seed 002's time(1) lines, then the devices and
    /// dirty memory of each monitored cell and copy.
    fn write_time_lines(&self, m: &mut dyn Markup) {
        // The intro explains the `!` marks, which only the seed's layout has; the last newline is
        // the blank line before the footer.
        m.note(
            "Each step timed as time(1) prints it; every iteration kept. `!` marks a step whose elapsed time changes across iterations.",
        );
        m.preformatted(&format!("{}\n", seed_text(&self.groups)));
        let monitored = |its: &[Vec<StepTiming>]| its.iter().flatten().any(|s| s.counters.is_some());
        for g in &self.groups {
            if monitored(&g.iterations) {
                step_counters(m, &format!("{} {}", g.label, g.config), &g.iterations);
            }
            // N copies at once: each read the cell's devices around its own steps.
            for c in g.copies.iter().filter(|c| monitored(&c.iterations)) {
                step_counters(m, &format!("{} {} task {}", g.label, g.config, c.task), &c.iterations);
                m.note("the cell's devices during this copy's steps: the other copies' I/O is in them too");
            }
        }
    }

    /// What the monitors saw during steps: a timeline per monitored group, and with
    /// `overlay` (runs compared) one per configuration with every run on it.
    fn timeline_plots(&self, overlay: bool) -> Result<Vec<PlotImage>, PlotError> {
        let timed: Vec<&StepsGroup> = self.groups.iter().filter(|g| g.timeline.is_some()).collect();
        let mut out = Vec::new();
        for g in &timed {
            out.push(monitor_plot::plot_timeline(format!("{}-{}-timeline", g.label, g.config), &[g])?);
        }
        if overlay {
            for config in configs(&timed) {
                let same: Vec<&StepsGroup> = timed.iter().copied().filter(|g| g.config == config).collect();
                if same.len() > 1 {
                    out.push(monitor_plot::plot_timeline(format!("{config}-timeline-compare"), &same)?);
                }
            }
        }
        Ok(out)
    }
}

impl WorkloadReport for StepsReport<'_> {
    /// Comparing: the seed's lines of one iteration per cell, then one side-by-side table per
    /// step. One run: the terminal (`long`) keeps seed 002's time(1) lines, as `--plot`'s
    /// report.txt does; Markdown shows tables.
    fn write(&self, m: &mut dyn Markup, long: bool) {
        if let Some((cmp, choice)) = &self.comparison {
            m.paragraph(&format!(
                "Seed 002's layout: each cell's time(1) lines of its last `{choice}` iteration, as the seed reported its 5th run. `!` marks a step whose elapsed time changes across iterations, on the iterations concerned."
            ));
            // The blank line ends the seed's block, as the seed's own lines end before its footer.
            m.preformatted(&(compare::seed_lines(&self.groups, *choice) + "\n"));
            let flags: Vec<String> = self
                .groups
                .iter()
                .flat_map(|g| g.flags.iter().map(move |f| format!("! {} {}: {}", g.label, g.config, f.describe())))
                .collect();
            if !flags.is_empty() {
                m.preformatted(&(flags.join("\n") + "\n"));
            }
            compare::write_tables(m, cmp);
        } else if long {
            self.write_time_lines(m);
        } else {
            self.write_groups(m, &[]);
        }
    }

    fn write_html(&self, m: &mut dyn Markup) -> Result<(), PlotError> {
        let figures = self.groups.iter().map(plot::svg_steps).collect::<Result<Vec<_>, _>>()?;
        if let Some((cmp, _)) = &self.comparison {
            // Side by side first, as `compare` prints them; a section of its own, so the contents list it.
            m.heading(2, "Steps side by side");
            compare::write_tables(m, cmp);
        }
        m.paragraph("Each step timed as time(1) reports it (user, system, elapsed, CPU); every iteration kept.");
        self.write_groups(m, &figures);
        Ok(())
    }

    fn csv(&self) -> String {
        match &self.comparison {
            Some((cmp, _)) => compare::csv(cmp),
            None => csv::steps_csv(&self.groups),
        }
    }

    fn json(self: Box<Self>, warnings: &[String]) -> ReportJson {
        let runs = self.runs;
        ReportJson::Steps(StepsReportJson {
            schema: OUTPUT_SCHEMA_VERSION,
            scenario: super::scenario_name(runs).to_string(),
            runs: super::json_runs(runs),
            warnings: warnings.to_vec(),
            groups: self.groups,
            comparison: self.comparison.map(|(c, _)| c),
            not_measured: super::not_measured::not_measured(runs),
            paired: Vec::new(),
            problems: super::all_problems(runs),
        })
    }

    /// One run: a chart per group. Compared: one chart per step with every label on one
    /// y axis and one per-iteration chart per configuration. Then the monitors' timelines.
    fn plots(&self) -> Result<Vec<PlotImage>, PlotError> {
        let Some((cmp, _)) = &self.comparison else {
            let mut out: Vec<PlotImage> = self.groups.iter().map(plot::plot_steps).collect::<Result<_, _>>()?;
            out.extend(self.timeline_plots(self.runs.len() > 1)?);
            return Ok(out);
        };
        let mut out: Vec<PlotImage> =
            cmp.tables.iter().map(|t| plot::plot_step_compare(cmp, t)).collect::<Result<_, _>>()?;
        let all: Vec<&StepsGroup> = self.groups.iter().collect();
        for c in configs(&all) {
            let gs: Vec<&StepsGroup> = self.groups.iter().filter(|g| g.config == c).collect();
            out.push(plot::plot_iterations_by_label(c, &gs)?);
        }
        out.extend(self.timeline_plots(true)?);
        Ok(out)
    }

    /// Seed 002's lines: every iteration of one run, or the chosen one of each compared cell.
    fn seed_text(&self, _image_prefix: Option<&str>) -> String {
        match &self.comparison {
            Some((_, choice)) => compare::seed_lines(&self.groups, *choice),
            None => seed_text(&self.groups),
        }
    }
}

/// The configurations of `groups`, each once, in order of appearance.
fn configs<'g>(groups: &[&'g StepsGroup]) -> Vec<&'g str> {
    let mut configs: Vec<&str> = Vec::new();
    for g in groups {
        if !configs.contains(&g.config.as_str()) {
            configs.push(&g.config);
        }
    }
    configs
}

/// The devices and dirty memory table of one series of iterations (a cell, or one copy of it).
fn step_counters(m: &mut dyn Markup, title: &str, iterations: &[Vec<StepTiming>]) {
    m.heading(2, &format!("{title}: devices and dirty memory per step"));
    let header: Vec<String> =
        ["iteration", "step", "elapsed"].into_iter().chain(monitors::STEP_HEADERS).map(String::from).collect();
    let rows: Vec<Vec<String>> = iterations
        .iter()
        .enumerate()
        .flat_map(|(i, it)| {
            it.iter().map(move |s| {
                let elapsed = format!("{:.2}s", s.elapsed_us as f64 / 1e6);
                [(i + 1).to_string(), s.label.escaped(TextFormat::Terminal).into_owned(), elapsed]
                    .into_iter()
                    .chain(monitors::step_columns(s))
                    .collect()
            })
        })
        .collect();
    m.table(&header, &rows);
}
