//! `fsbench gate`: a CI verdict on a candidate run against a baseline, or on the arms of
//! one paired run (`fsbench gate RUN`).

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use crate::exit::{self, InputError};
use crate::gate::{
    GateOptions, GateReport, Verdict, evaluate_calibrated, evaluate_paired, render_junit, render_markdown, render_table,
};
use crate::model::pairing::PairStop;
use crate::results::{LoadedRun, load_run, write_atomic};

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
    /// A paired run (`[compare] arms`) gated by itself: every arm against the first, pair by
    /// pair. Instead of --baseline and --candidate.
    #[arg(value_name = "RUN", conflicts_with_all = ["baseline", "candidate"])]
    pub run: Option<PathBuf>,
    /// The reference run: a directory or a name (`@LABEL`, `latest`, `SCENARIO@LABEL`).
    #[arg(long, value_name = "RUN", required_unless_present_any = ["run", "history"], conflicts_with = "history")]
    pub baseline: Option<PathBuf>,
    /// Judge the candidate against the last N earlier runs of its scenario on its host
    /// instead of one baseline (at least 5): their spread is the spread between runs.
    #[arg(long, value_name = "N", conflicts_with = "run")]
    pub history: Option<usize>,
    /// The scenario directory the history's runs are read from (default: the candidate's own
    /// scenario directory and the scenario's directory under --results).
    #[arg(long, value_name = "DIR", requires = "history")]
    pub history_from: Option<PathBuf>,
    /// History runs that recorded KEY=VALUE (`run --meta`) only; repeat for several.
    #[arg(long, value_name = "KEY=VALUE", requires = "history")]
    pub meta: Vec<String>,
    /// The run under test: a directory or a name (`latest` is the newest run).
    #[arg(long, value_name = "RUN", required_unless_present = "run")]
    pub candidate: Option<PathBuf>,
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
    /// Also write the gate as a plain-text mail of at most 80 columns here: a `Subject:`
    /// with the verdicts and the worst regression, the verdict table and, for two lat_fs
    /// runs, the 0-day bot's `%stddev %change` table with the profile's changes.
    #[arg(long, value_name = "FILE")]
    pub email: Option<PathBuf>,
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
    for (opt, path) in
        [("--markdown", &args.markdown), ("--junit", &args.junit), ("--email", &args.email), ("--html", &args.html)]
    {
        if let Some(p) = path {
            super::checks::check_output_file(opt, p)?;
        }
    }
    let opts = GateOptions { threshold, metric: args.metric.clone(), allow_missing: args.allow_missing };
    let (rep, runs) = match (&args.run, &args.baseline, &args.candidate, args.history) {
        (Some(run), _, _, _) => paired_gate(run, args, &opts)?,
        (None, Some(b), Some(c), _) => two_run_gate(b, c, args, &opts)?,
        (None, None, Some(c), Some(n)) => (history_gate(c, n, args, &opts)?, Vec::new()),
        // clap requires one of the three forms.
        _ => {
            return Err(InputError::anyhow(
                "give a paired RUN, --baseline RUN --candidate RUN, or --history N --candidate RUN",
            ));
        }
    };
    if rep.rows.iter().all(|r| r.verdict == Verdict::Missing) {
        print!("{}", render_table(&rep, super::print::output_width()));
        return Err(InputError::anyhow(nothing_to_compare(&rep)));
    }
    let width = super::print::output_width() as usize;
    for w in &rep.warnings {
        eprintln!("{}", crate::text::wrap(&format!("warning: {w}"), width, "  "));
    }
    // The profile changes behind the verdicts, where both sides were profiled.
    let diffs = crate::gate::why::profile_diffs(&rep, &runs);
    if args.json {
        print!("{}", super::output::to_json(&super::output::GateJson::of(rep.clone(), &diffs)));
    } else {
        print!("{}", render_table(&rep, super::print::output_width()));
        print!("{}", crate::gate::why::render_text(&diffs, width));
    }
    write_reports(&rep, &runs, &diffs, args)?;
    let code = exit_code(&rep, args.inconclusive, args.bisect, args.allow_missing);
    if let Some(line) = inconclusive_warning(&rep, args, code) {
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

/// Why a gate with every row missing has nothing to judge.
fn nothing_to_compare(rep: &GateReport) -> String {
    match &rep.paired {
        Some(p) => {
            // A group that gave up on a failing arm says which and why.
            let failed = p.comparisons.iter().find_map(|c| {
                let why = c.stop_reason.as_deref().filter(|_| c.stop == Some(PairStop::MemberFailed))?;
                Some(format!(" (pair group {} stopped: {})", c.group, crate::text::escape_control(why)))
            });
            format!(
                "nothing to compare: no pair group has a pair with both members measured{}",
                failed.unwrap_or_default()
            )
        }
        None => {
            "nothing to compare: no cell has samples in both runs (did the candidate run measure anything?)".to_string()
        }
    }
}

/// Write the `--markdown`, `--junit` and `--html` reports asked for.
fn write_reports(
    rep: &GateReport,
    runs: &[(String, LoadedRun)],
    diffs: &[crate::report::profile_diff::CellDiff],
    args: &GateArgs,
) -> anyhow::Result<()> {
    // What fails the exit status fails in the CI reports too (`exit_code`).
    let fails = crate::gate::Fails {
        inconclusive: args.inconclusive == InconclusivePolicy::Fail && !args.bisect,
        missing: !args.allow_missing && !args.bisect,
    };
    if let Some(p) = &args.markdown {
        write_atomic(p, render_markdown(rep, fails, diffs).as_bytes())?;
    }
    if let Some(p) = &args.junit {
        write_atomic(p, render_junit(rep, fails).as_bytes())?;
    }
    if let Some(p) = &args.email {
        let line: Vec<String> = std::env::args().map(|a| crate::text::escape_control(&a)).collect();
        let reproduce = std::iter::once("fsbench").chain(line.iter().skip(1).map(String::as_str)).collect::<Vec<_>>();
        write_atomic(p, crate::gate::email::render_email(rep, runs, &reproduce.join(" ")).as_bytes())?;
    }
    if let Some(p) = &args.html {
        let (header, rows, summary) = crate::gate::table_cells(rep);
        let regressed = rep.count(Verdict::Regressed) > 0;
        let verdicts =
            crate::report::html::Verdicts { summary, regressed, header, rows, warnings: rep.warnings.clone() };
        let page = match (&rep.paired, runs) {
            // One paired run: its own report under the verdicts (no run to hold ratios against).
            (Some(_), [(_, run)]) => crate::report::render_run_html_with_verdicts(run, &verdicts)?,
            _ => crate::report::Comparison::checked_by_gate(runs).html(Some(&verdicts))?,
        };
        write_atomic(p, page.as_bytes())?;
    }
    Ok(())
}

/// The loud line about inconclusive comparisons (none under `--bisect`), saying what they
/// do to the exit status `code`.
fn inconclusive_warning(rep: &GateReport, args: &GateArgs, code: i32) -> Option<String> {
    let inconclusive = rep.count(Verdict::Inconclusive);
    if inconclusive == 0 || args.bisect {
        return None;
    }
    // The sentence must match the exit status: "passing" only when the gate passes.
    let what = match (args.inconclusive == InconclusivePolicy::Fail, code == exit::SUCCESS) {
        (true, _) => "failing (--inconclusive fail)",
        (false, true) => "passing anyway",
        (false, false) if rep.count(Verdict::Regressed) > 0 => {
            "not failing on them, but the gate fails: a cell regressed"
        }
        (false, false) => "not failing on them, but the gate fails: cells are missing",
    };
    Some(match &rep.paired {
        None => format!(
            "WARNING: {inconclusive} comparison(s) INCONCLUSIVE: their 95% CI straddles the threshold, so this gate \
             cannot tell a change beyond it from noise; {what}. More rounds (`workload.rounds`), more repetitions, \
             a calibration of the spread between runs (`fsbench calibrate`), paired runs (`[compare] arms`) or a \
             quieter machine narrow the CI."
        ),
        Some(p) => format!(
            "WARNING: {inconclusive} comparison(s) INCONCLUSIVE: their {} CI straddles the threshold, so this gate \
             cannot tell a change beyond it from noise; {what}. More pairs (`compare.pairs.max`), {} or a quieter \
             machine narrow the CI.",
            crate::report::paired::percent(p.level),
            more_per_member(&p.metric)
        ),
    })
}

/// What else narrows a paired interval: a steps member (`elapsed`) is whole iterations and
/// is paired per iteration position, so more iterations per member; other members are
/// their repetitions' mean.
fn more_per_member(metric: &str) -> &'static str {
    if metric == "elapsed" {
        "more iterations per member (`workload.iterations`)"
    } else {
        "more repetitions per member"
    }
}

/// The two-run gate's report and the labelled runs its HTML page shows.
fn two_run_gate(
    b: &Path,
    c: &Path,
    args: &GateArgs,
    opts: &GateOptions,
) -> anyhow::Result<(GateReport, Vec<(String, LoadedRun)>)> {
    let load = |side: &str, p: &Path| load_run(p).map_err(|e| InputError::anyhow(format!("--{side}: {e}")));
    let (b, c) = (b.to_string_lossy(), c.to_string_lossy());
    let dirs = super::runs::resolve_runs(&[&b, &c], &args.lookup)?;
    let baseline = load("baseline", &dirs[0])?;
    let candidate = load("candidate", &dirs[1])?;
    // A gate must not pass on data it could not read.
    for (side, run) in [("baseline", &baseline), ("candidate", &candidate)] {
        refuse_problems(&format!("--{side} "), run)?;
    }
    let (calibration, lines) = crate::calibration::store::find_for(&baseline, &candidate);
    let mut rep = evaluate_calibrated(&baseline, &candidate, opts, calibration.as_ref())?;
    rep.warnings.splice(0..0, lines);
    if let Some(w) = same_run_warning(&dirs[0], &dirs[1]) {
        rep.warnings.insert(0, w);
    }
    // Column labels must differ: two unlabelled runs are told apart by their side.
    let (bl, cl) = match (baseline.label(), candidate.label()) {
        (b, c) if b != c => (b.to_string(), c.to_string()),
        _ => ("baseline".to_string(), "candidate".to_string()),
    };
    Ok((rep, vec![(bl, baseline), (cl, candidate)]))
}

/// `gate RUN`: the paired run's report and the run its HTML page shows.
fn paired_gate(
    run: &Path,
    args: &GateArgs,
    opts: &GateOptions,
) -> anyhow::Result<(GateReport, Vec<(String, LoadedRun)>)> {
    let dirs = super::runs::resolve_runs(&[&run.to_string_lossy()], &args.lookup)?;
    let loaded = load_run(&dirs[0]).map_err(|e| InputError::anyhow(e.to_string()))?;
    refuse_problems("", &loaded)?;
    let rep = evaluate_paired(&loaded, opts)?;
    Ok((rep, vec![(loaded.label().to_string(), loaded)]))
}

/// A gate must not pass on data it could not read: unreadable cell files are bad input.
fn refuse_problems(side: &str, run: &LoadedRun) -> anyhow::Result<()> {
    if run.problems.is_empty() {
        return Ok(());
    }
    Err(InputError::anyhow(format!(
        "{side}{}: {} unreadable result file(s):\n  {}",
        run.dir.display(),
        run.problems.len(),
        run.problems.join("\n  ")
    )))
}

/// `--history N`: the candidate against the last N earlier runs of its scenario on its host.
fn history_gate(c: &Path, n: usize, args: &GateArgs, opts: &GateOptions) -> anyhow::Result<GateReport> {
    use crate::gate::history::{MIN_HISTORY_RUNS, evaluate_history, history_runs};
    if n < MIN_HISTORY_RUNS {
        return Err(InputError::anyhow(format!(
            "--history {n}: a history gate needs at least {MIN_HISTORY_RUNS} runs to estimate the spread between runs"
        )));
    }
    let dirs = super::runs::resolve_runs(&[&c.to_string_lossy()], &args.lookup)?;
    let candidate = &load_run(&dirs[0]).map_err(|e| InputError::anyhow(format!("--candidate: {e}")))?;
    refuse_problems("--candidate ", candidate)?;
    let tags = crate::model::run_tags::parse_tags(&args.meta).map_err(|e| InputError::anyhow(format!("--meta {e}")))?;
    let req = crate::history::HistoryRequest {
        filter: crate::history::HistoryFilter {
            host: Some(candidate.meta.host.hostname.clone()),
            tags,
            ..Default::default()
        },
        ..Default::default()
    };
    let searched = history_dirs(candidate, args);
    let mut all = Vec::new();
    for dir in searched.iter().filter(|d| crate::results::find::is_scenario_dir(d)) {
        let loaded =
            crate::history::load_history(dir, &req).map_err(|e| InputError::anyhow(format!("--history: {e}")))?;
        all.extend(loaded.runs.into_iter().map(|r| r.run));
    }
    let (mut past, notes) = history_runs(candidate, all);
    past.drain(..past.len().saturating_sub(n));
    let shown: Vec<String> = searched.iter().map(|d| crate::text::escape_control(&d.display().to_string())).collect();
    // A calibration beside the last history run or the candidate bounds the spread from below.
    let (calibration, lines) = match past.last() {
        Some(last) => crate::calibration::store::find_for(last, candidate),
        None => (None, Vec::new()),
    };
    let mut rep = evaluate_history(&past, candidate, opts, calibration.as_ref())
        .map_err(|e| InputError::anyhow(format!("{e} (history searched in {})", shown.join(", "))))?;
    rep.warnings.splice(0..0, lines);
    rep.warnings.extend(notes);
    eprintln!("fsbench: gate --history: the candidate against {} (from {})", rep.baseline, shown.join(", "));
    Ok(rep)
}

/// Where a history gate looks for the earlier runs: `--history-from DIR` when given; else
/// the candidate's own scenario directory and the scenario's directory under `--results`
/// (in CI the candidate is made in a fresh workspace and the history is a cached results
/// directory), each once.
fn history_dirs(candidate: &LoadedRun, args: &GateArgs) -> Vec<PathBuf> {
    if let Some(d) = &args.history_from {
        return vec![d.clone()];
    }
    let mut dirs = vec![candidate.dir.parent().unwrap_or(Path::new(".")).to_path_buf()];
    let under_results = args.lookup.results.join(&candidate.meta.scenario_name);
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    };
    if crate::text::is_plain_name(&candidate.meta.scenario_name) && !same(&dirs[0], &under_results) {
        dirs.push(under_results);
    }
    dirs
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
    use crate::catalogue::Metric;
    use crate::gate::GateRow;

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
        GateReport { baseline: "b".into(), candidate: "c".into(), rows, warnings: Vec::new(), paired: None }
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

#[cfg(test)]
mod paired_advice_tests {
    /// Issue #38, item 12: "more repetitions per member" does not apply to steps members.
    #[test]
    fn a_steps_gate_advises_iterations_not_repetitions() {
        assert_eq!(super::more_per_member("elapsed"), "more iterations per member (`workload.iterations`)");
        assert_eq!(super::more_per_member("total_loops"), "more repetitions per member");
    }
}
