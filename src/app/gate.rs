//! `fsbench gate`: a CI verdict on a candidate run against a baseline.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use crate::exit::{self, InputError};
use crate::gate::{GateOptions, GateReport, Verdict, evaluate_calibrated, render_junit, render_markdown, render_table};
use crate::results::{load_run, write_atomic};

/// What an `inconclusive` verdict does to the exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum InconclusivePolicy {
    /// Exit 0 (unless something regressed), with a loud line on stderr.
    #[default]
    Pass,
    /// Exit 1, as a regression does.
    Fail,
}

/// `fsbench gate`.
#[derive(Debug, Clone, Args)]
pub struct GateArgs {
    /// The reference run: a directory or a name (`@LABEL`, `latest`, `SCENARIO@LABEL`).
    #[arg(long, value_name = "RUN", required_unless_present = "history", conflicts_with = "history")]
    pub baseline: Option<PathBuf>,
    /// Judge the candidate against the last N earlier runs of its scenario on its host
    /// instead of one baseline (at least 5): their spread is the spread between runs.
    #[arg(long, value_name = "N")]
    pub history: Option<usize>,
    /// The run under test: a directory or a name (`latest` is the newest run).
    #[arg(long, value_name = "RUN")]
    pub candidate: PathBuf,
    /// Slowdown that counts as a regression when significant (`5%`); overrides the scenario's `[gate]`.
    #[arg(long, value_name = "PERCENT")]
    pub threshold: Option<String>,
    /// Metric to compare: `total_loops` (lat_fs) or `elapsed` (steps); default by workload.
    /// lat_fs runs with `latency = "histogram"` can use a percentile: p50, p90, p99, p99.9, max.
    #[arg(long)]
    pub metric: Option<String>,
    /// Also write a Markdown summary here (for a CI job summary or PR comment).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Also write JUnit XML here (one test case per cell).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Pass even when cells are missing (skipped, failed or not run) on either side.
    #[arg(long)]
    pub allow_missing: bool,
    /// Exit status when a comparison is inconclusive (its CI straddles the threshold).
    #[arg(long, value_enum, default_value_t = InconclusivePolicy::Pass, value_name = "POLICY")]
    pub inconclusive: InconclusivePolicy,
    /// Exit codes for `git bisect run`: 0 good, 1 regressed (bad), 125 inconclusive or
    /// missing (skip this revision), 128 the gate could not run (stop bisecting).
    #[arg(long, conflicts_with = "inconclusive")]
    pub bisect: bool,
    /// Also write an HTML page here: the verdicts, then the comparison's tables, plots and provenance.
    #[arg(long, value_name = "FILE", conflicts_with = "history")]
    pub html: Option<PathBuf>,
    /// Print JSON (`schemas/gate.schema.json`) instead of the table; the exit code is the same.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub lookup: super::runs::RunLookup,
}

/// `fsbench gate`: exit 1 when a cell regressed, 0 when none did, 2 on bad input (see `--bisect`).
pub fn gate(args: &GateArgs) -> anyhow::Result<i32> {
    match gate_inner(args) {
        // Exit 2 would read as "bad revision" to `git bisect run`: stop the bisection instead.
        Err(e) if args.bisect => {
            super::report_error(&e);
            Ok(exit::BISECT_ABORT)
        }
        other => other,
    }
}

fn gate_inner(args: &GateArgs) -> anyhow::Result<i32> {
    let threshold = args
        .threshold
        .as_deref()
        .map(crate::scenario::units::parse_percent)
        .transpose()
        .map_err(|e| InputError::anyhow(format!("--threshold: {e}")))?;
    // Output files are checked before the work, so exit 1 can only mean "regressed".
    for (opt, path) in [("--markdown", &args.markdown), ("--junit", &args.junit), ("--html", &args.html)] {
        if let Some(p) = path {
            super::checks::check_output_file(opt, p)?;
        }
    }
    let load = |side: &str, p: &Path| load_run(p).map_err(|e| InputError::anyhow(format!("--{side}: {e}")));
    let opts = GateOptions { threshold, metric: args.metric.clone(), allow_missing: args.allow_missing };
    let c = args.candidate.to_string_lossy();
    let (baseline, candidate, rep) = match (&args.baseline, args.history) {
        (Some(b), _) => {
            let dirs = super::runs::resolve_runs(&[&b.to_string_lossy(), &c], &args.lookup)?;
            let baseline = load("baseline", &dirs[0])?;
            let candidate = load("candidate", &dirs[1])?;
            refuse_unreadable(&[("baseline", &baseline), ("candidate", &candidate)])?;
            let (calibration, lines) = crate::calibration::store::find_for(&baseline, &candidate);
            let mut rep = evaluate_calibrated(&baseline, &candidate, &opts, calibration.as_ref())?;
            rep.warnings.splice(0..0, lines);
            if let Some(w) = same_run_warning(&dirs[0], &dirs[1]) {
                rep.warnings.insert(0, w);
            }
            (Some(baseline), candidate, rep)
        }
        (None, Some(n)) => {
            let dirs = super::runs::resolve_runs(&[&c], &args.lookup)?;
            let candidate = load("candidate", &dirs[0])?;
            refuse_unreadable(&[("candidate", &candidate)])?;
            let rep = gate_history(&candidate, n, &opts)?;
            (None, candidate, rep)
        }
        (None, None) => return Err(InputError::anyhow("give --baseline RUN or --history N")),
    };
    if rep.rows.iter().all(|r| r.verdict == Verdict::Missing) {
        print!("{}", render_table(&rep, super::print::output_width()));
        return Err(InputError::anyhow(
            "nothing to compare: no cell has samples in both runs (did the candidate run measure anything?)",
        ));
    }
    let width = super::print::output_width() as usize;
    for w in &rep.warnings {
        eprintln!("{}", crate::text::wrap(&format!("warning: {w}"), width, "  "));
    }
    if args.json {
        print!("{}", super::output::to_json(&super::output::GateJson::of(rep.clone())));
    } else {
        print!("{}", render_table(&rep, super::print::output_width()));
    }
    let inconclusive_fails = args.inconclusive == InconclusivePolicy::Fail;
    if let Some(p) = &args.markdown {
        write_atomic(p, render_markdown(&rep).as_bytes())?;
    }
    if let Some(p) = &args.junit {
        write_atomic(p, render_junit(&rep, inconclusive_fails && !args.bisect).as_bytes())?;
    }
    if let (Some(p), Some(baseline)) = (&args.html, baseline) {
        let (header, rows, summary) = crate::gate::table_cells(&rep);
        let regressed = rep.count(Verdict::Regressed) > 0;
        let verdicts =
            crate::report::html::Verdicts { summary, regressed, header, rows, warnings: rep.warnings.clone() };
        // Column labels must differ: two unlabelled runs are told apart by their side.
        let (bl, cl) = match (baseline.label(), candidate.label()) {
            (b, c) if b != c => (b.to_string(), c.to_string()),
            _ => ("baseline".to_string(), "candidate".to_string()),
        };
        let runs = vec![(bl, baseline), (cl, candidate)];
        let page = crate::report::Comparison::checked_by_gate(&runs).html(Some(&verdicts))?;
        write_atomic(p, page.as_bytes())?;
    }
    let code = exit_code(&rep, args.inconclusive, args.bisect, args.allow_missing);
    let inconclusive = rep.count(Verdict::Inconclusive);
    if inconclusive > 0 && !args.bisect {
        // The sentence must match the exit status: "passing" only when the gate passes.
        let what = match (inconclusive_fails, code == exit::SUCCESS) {
            (true, _) => "failing (--inconclusive fail)",
            (false, true) => "passing anyway",
            (false, false) if rep.count(Verdict::Regressed) > 0 => {
                "not failing on them, but the gate fails: a cell regressed"
            }
            (false, false) => "not failing on them, but the gate fails: cells are missing",
        };
        let line = format!(
            "WARNING: {inconclusive} comparison(s) INCONCLUSIVE: their 95% CI straddles the threshold, so this gate \
             cannot tell a change beyond it from noise; {what}. More rounds (`workload.rounds`), more repetitions, \
             a calibration of the spread between runs (`fsbench calibrate`), paired runs (`[compare] arms`) or a \
             quieter machine narrow the CI."
        );
        eprintln!("{}", crate::text::wrap(&line, width, "  "));
    }
    let missing = rep.count(Verdict::Missing);
    if missing > 0 && !args.allow_missing && !args.bisect {
        // A cell that did not run on one side was not checked: a gate must not pass over it.
        eprintln!(
            "fsbench: gate: {} missing on one side (see the table); pass --allow-missing to accept that",
            crate::text::cell_count(missing)
        );
    }
    Ok(code)
}

/// A gate must not pass on data it could not read.
fn refuse_unreadable(runs: &[(&str, &crate::results::LoadedRun)]) -> anyhow::Result<()> {
    for (side, run) in runs {
        if !run.problems.is_empty() {
            return Err(InputError::anyhow(format!(
                "--{side} {}: {} unreadable result file(s):\n  {}",
                run.dir.display(),
                run.problems.len(),
                run.problems.join("\n  ")
            )));
        }
    }
    Ok(())
}

/// `--history N`: the candidate against the last N earlier runs of its scenario on its host.
fn gate_history(candidate: &crate::results::LoadedRun, n: usize, opts: &GateOptions) -> anyhow::Result<GateReport> {
    use crate::gate::history::{MIN_HISTORY_RUNS, evaluate_history, history_runs};
    if n < MIN_HISTORY_RUNS {
        return Err(InputError::anyhow(format!(
            "--history {n}: a history gate needs at least {MIN_HISTORY_RUNS} runs to estimate the spread between runs"
        )));
    }
    let dir = candidate.dir.parent().unwrap_or(Path::new("."));
    let req = crate::history::HistoryRequest {
        filter: crate::history::HistoryFilter {
            host: Some(candidate.meta.host.hostname.clone()),
            ..Default::default()
        },
        ..Default::default()
    };
    let loaded = crate::history::load_history(dir, &req).map_err(|e| InputError::anyhow(format!("--history: {e}")))?;
    let all = loaded.runs.into_iter().map(|r| r.run).collect();
    let mut past = history_runs(candidate, all);
    past.drain(..past.len().saturating_sub(n));
    let rep = evaluate_history(&past, candidate, opts)?;
    eprintln!("fsbench: gate --history: the candidate against {}", rep.baseline);
    Ok(rep)
}

/// A gate of a run against itself passes whatever the run measured: say so (a CI job
/// whose baseline and candidate names resolve to one directory is almost always a mistake).
fn same_run_warning(baseline: &Path, candidate: &Path) -> Option<String> {
    let same = match (baseline.canonicalize(), candidate.canonicalize()) {
        (Ok(b), Ok(c)) => b == c,
        _ => baseline == candidate,
    };
    same.then(|| {
        format!(
            "the baseline and the candidate are the same run ({}): the gate compares it with itself and can find no change",
            crate::text::escape_control(&baseline.display().to_string())
        )
    })
}

/// The gate's exit status for a report under the chosen policy.
pub fn exit_code(rep: &GateReport, inconclusive: InconclusivePolicy, bisect: bool, allow_missing: bool) -> i32 {
    let regressed = rep.count(Verdict::Regressed) > 0;
    let inconclusive_n = rep.count(Verdict::Inconclusive);
    if bisect {
        return if regressed {
            exit::FAILURE
        } else if inconclusive_n > 0 || rep.count(Verdict::Missing) > 0 {
            exit::BISECT_SKIP
        } else {
            exit::SUCCESS
        };
    }
    let missing_fails = rep.count(Verdict::Missing) > 0 && !allow_missing;
    if regressed || missing_fails || (inconclusive_n > 0 && inconclusive == InconclusivePolicy::Fail) {
        exit::FAILURE
    } else {
        exit::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::{GateRow, Metric};

    fn report(verdicts: &[Verdict]) -> GateReport {
        let rows = verdicts
            .iter()
            .enumerate()
            .map(|(i, &verdict)| GateRow {
                name: format!("c{i}"),
                metric: Metric::TotalLoops,
                key: String::new(),
                threshold: 0.05,
                baseline: Default::default(),
                candidate: Default::default(),
                change: None,
                verdict,
                note: None,
            })
            .collect();
        GateReport { baseline: "b".into(), candidate: "c".into(), rows, warnings: Vec::new() }
    }

    #[test]
    fn exit_codes_per_policy() {
        use InconclusivePolicy::{Fail, Pass};
        use Verdict::*;
        // (verdicts, pass, fail, bisect)
        let table: &[(&[Verdict], i32, i32, i32)] = &[
            (&[Unchanged, Improved], 0, 0, 0),
            (&[Unchanged, Regressed], 1, 1, 1),
            (&[Unchanged, Inconclusive], 0, 1, 125),
            (&[Unchanged, Missing], 0, 0, 125),
            (&[Inconclusive, Regressed, Missing], 1, 1, 1),
        ];
        for (v, pass, fail, bisect) in table {
            let r = report(v);
            assert_eq!(exit_code(&r, Pass, false, true), *pass, "{v:?} pass");
            assert_eq!(exit_code(&r, Fail, false, true), *fail, "{v:?} fail");
            assert_eq!(exit_code(&r, Pass, true, false), *bisect, "{v:?} bisect");
            // Without --allow-missing a missing cell fails the gate (outside --bisect, where it is a skip).
            let missing = v.contains(&Missing);
            let want = if missing { 1 } else { *pass };
            assert_eq!(exit_code(&r, Pass, false, false), want, "{v:?} missing not allowed");
        }
    }
}
