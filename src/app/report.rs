//! `fsbench report` and `fsbench compare`: stored runs as tables, plots and comparisons.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use super::output::{OUTPUT_SCHEMA_VERSION, ReportsJson, to_json};
use crate::exit::{self, InputError};
use crate::report::{
    self, CompareOptions, Comparison, Format, Iterations, render_run, write_compare_plot_dir, write_plot_dir,
};
use crate::results::find::{is_scenario_dir, list_runs};
use crate::results::{ResultsError, load_run, write_atomic};

/// Output format of reports, as the flag spells it.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq, Default)]
pub enum ReportFormat {
    /// Terminal tables in the seed's layout.
    #[default]
    Table,
    /// Markdown tables.
    Markdown,
    /// Comma-separated values.
    Csv,
    /// JSON.
    Json,
}

impl ReportFormat {
    /// The format chosen, `--json` being short for `--format json`.
    pub fn or_json(self, json: bool) -> ReportFormat {
        if json { ReportFormat::Json } else { self }
    }
}

impl From<ReportFormat> for Format {
    fn from(f: ReportFormat) -> Self {
        match f {
            ReportFormat::Table => Self::Table,
            ReportFormat::Markdown => Self::Markdown,
            ReportFormat::Csv => Self::Csv,
            ReportFormat::Json => Self::Json,
        }
    }
}

/// `fsbench report`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Runs: directories (`results/<scenario>/<run-id>`) or names (`@LABEL`, `latest`,
    /// `SCENARIO@LABEL`). A scenario directory (`results/quota-smp`) lists its runs instead.
    #[arg(required = true)]
    pub runs: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: ReportFormat,
    /// Print JSON (`schemas/report.schema.json`; several runs: `schemas/reports.schema.json`;
    /// a scenario directory's runs: `schemas/run-list.schema.json`): the same as `--format json`.
    #[arg(long)]
    pub json: bool,
    /// Also write one PNG and one SVG plot per table into this directory.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// Also write the report as one self-contained HTML page (tables, plots, provenance).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub lookup: super::runs::RunLookup,
}

/// `fsbench compare`.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// Runs to compare, each as `LABEL=RUN` (or a bare RUN, labelled by its `--label`), RUN a
    /// directory or a name: `@LABEL`, `latest`, `SCENARIO@LABEL` (`compare BASE=@BASE V3=latest`).
    /// The first is the reference for ratios. One paired run (`[compare] arms`) alone is
    /// compared arm against arm, pair by pair.
    #[arg(required = true, num_args = 1..)]
    pub runs: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: ReportFormat,
    /// Print JSON (`schemas/report.schema.json`, with the ratios): the same as `--format json`.
    #[arg(long)]
    pub json: bool,
    /// Also write one PNG and one SVG plot per table into this directory (steps: one chart
    /// per step with every label on one y axis, and one per-iteration chart per filesystem).
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// Steps runs: which iterations of each cell are compared: `all`, `steady` (every
    /// iteration whose rm_rf removed something; from the second on when not recorded),
    /// `last`, or an iteration number from 1.
    #[arg(long, value_name = "all|steady|last|N", default_value = "steady", value_parser = parse_iterations)]
    pub iterations: Iterations,
    /// Compare a lat_fs latency percentile instead of total loops: p50, p90, p99, p99.9 or max
    /// (needs runs made with `latency = "histogram"`). Tables only: not with --plot or --html.
    #[arg(long, value_name = "METRIC")]
    pub metric: Option<String>,
    /// Also write the comparison as one self-contained HTML page (tables, plots, provenance).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub lookup: super::runs::RunLookup,
}

fn parse_iterations(s: &str) -> Result<Iterations, String> {
    s.parse()
}

/// `fsbench report`.
pub fn report(args: &ReportArgs) -> anyhow::Result<i32> {
    if let Some(dir) = &args.plot {
        super::checks::check_output_dir("--plot", dir)?;
    }
    if let Some(file) = &args.html {
        super::checks::check_output_file("--html", file)?;
        if args.runs.len() > 1 {
            return Err(InputError::anyhow(
                "--html writes one run's page: give one run (or use `fsbench compare --html`)",
            ));
        }
    }
    let format = Format::from(args.format.or_json(args.json));
    // A scenario directory: the runs in it, to choose from.
    if let [dir] = args.runs.as_slice()
        && is_scenario_dir(dir)
    {
        if args.html.is_some() || args.plot.is_some() {
            return Err(InputError::anyhow(format!(
                "{} is a scenario directory (it lists its runs): name one run for --html or --plot, e.g. {}@latest",
                dir.display(),
                dir.display()
            )));
        }
        let (runs, unreadable) = list_runs(dir).map_err(|e| InputError::anyhow(e.to_string()))?;
        print!("{}", report::runs::render_run_list(dir, &runs, format));
        for u in &unreadable {
            eprintln!("warning: {}", crate::text::escape_control(u));
        }
        // Bad input is reported as such, but the readable runs are listed.
        return Ok(if unreadable.is_empty() { exit::SUCCESS } else { exit::USAGE });
    }
    let specs: Vec<String> = args.runs.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let dirs = super::runs::resolve_runs(&specs.iter().map(String::as_str).collect::<Vec<_>>(), &args.lookup)?;
    let mut code = exit::SUCCESS;
    let mut loaded = Vec::new();
    for dir in &dirs {
        match load_run(dir) {
            Ok(run) => loaded.push(run),
            Err(ResultsError::NotARun { dir }) => {
                eprintln!("error: {}", crate::text::escape_control(&not_a_run(&dir)));
                code = exit::USAGE;
            }
            Err(e) => {
                eprintln!("error: {e}");
                code = exit::USAGE;
            }
        }
    }
    if loaded.is_empty() {
        return Ok(exit::USAGE);
    }
    for run in &loaded {
        for p in &run.problems {
            eprintln!("warning: {p}");
        }
        // Unreadable or hand-broken result files are bad input: the rest still renders.
        if !run.problems.is_empty() {
            code = exit::USAGE;
        }
    }
    // Several runs in JSON are one document holding their reports, not several documents.
    let text = if format == Format::Json && loaded.len() > 1 {
        to_json(&ReportsJson { schema: OUTPUT_SCHEMA_VERSION, reports: loaded.iter().map(report::run_json).collect() })
    } else {
        report::join_outputs(loaded.iter().map(|run| render_run(run, format)).collect(), format)
    };
    print!("{text}");
    if let Some(dir) = &args.plot {
        for run in &loaded {
            // Several runs would overwrite each other's plots: one subdirectory per run then.
            // The run id comes from run.json: one plain path component or nothing.
            if loaded.len() > 1 && !crate::text::is_plain_name(&run.meta.run_id) {
                return Err(InputError::anyhow(format!(
                    "{}: run id `{}` in run.json is not a plain name; it cannot name a plot directory",
                    run.dir.display(),
                    crate::text::escape_control(&run.meta.run_id)
                )));
            }
            let target: PathBuf = if loaded.len() > 1 { dir.join(&run.meta.run_id) } else { dir.clone() };
            let n = write_plot_dir(&target, &[(run.label(), run)])?;
            eprintln!("wrote {n} plots (PNG and SVG) and report.txt to {}", target.display());
        }
    }
    if let (Some(file), Some(run)) = (&args.html, loaded.first()) {
        write_atomic(file, report::render_run_html(run)?.as_bytes())?;
        eprintln!("wrote {}", file.display());
    }
    Ok(code)
}

/// Why `dir` (which has no run.json) is not a run, in the words that help: it does not
/// exist, or it is a results root (then the scenarios in it), or it holds no runs.
fn not_a_run(dir: &Path) -> String {
    if std::fs::symlink_metadata(dir).is_err() {
        return format!("{}: does not exist", dir.display());
    }
    let scenarios: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            let mut names: Vec<String> = rd
                .filter_map(|e| e.ok())
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()) && is_scenario_dir(&e.path()))
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
        })
        .unwrap_or_default();
    match scenarios.first() {
        Some(first) => format!(
            "{}: a results root, not a run; it holds the scenarios {}: name a scenario directory to list its runs \
             ({}) or a run (`{first}@latest --results {}`)",
            dir.display(),
            scenarios.join(", "),
            dir.join(first).display(),
            dir.display()
        ),
        None => ResultsError::NotARun { dir: dir.to_path_buf() }.to_string(),
    }
}

/// Split `LABEL=RUN`; a bare run (or a path that exists as given) has no label.
fn parse_run_arg(arg: &str) -> (Option<String>, String) {
    if Path::new(arg).exists() {
        return (None, arg.to_string());
    }
    match arg.split_once('=') {
        Some((label, run)) if !label.is_empty() && !label.contains('/') => (Some(label.to_string()), run.to_string()),
        _ => (None, arg.to_string()),
    }
}

/// `fsbench compare`.
pub fn compare(args: &CompareArgs) -> anyhow::Result<i32> {
    // Plots and the page draw total loops: with a percentile they would show another
    // quantity than the tables above them claim, so the combination is refused.
    if let Some(m) = args.metric.as_deref().filter(|m| *m != "total_loops")
        && (args.plot.is_some() || args.html.is_some())
    {
        let flag = if args.plot.is_some() { "--plot" } else { "--html" };
        return Err(InputError::anyhow(format!(
            "--metric {m} is for the tables only: {flag} draws total loops; run the comparison once with \
             --metric for the tables and once without it for {flag}"
        )));
    }
    if let Some(dir) = &args.plot {
        super::checks::check_output_dir("--plot", dir)?;
    }
    if let Some(file) = &args.html {
        super::checks::check_output_file("--html", file)?;
    }
    let metric = match args.metric.as_deref() {
        None | Some("total_loops") => None,
        Some(m) => Some(crate::monitor::latency::Percentile::parse(m).ok_or_else(|| {
            InputError::anyhow(format!("--metric {m}: use total_loops, or a percentile: p50, p90, p99, p99.9, max"))
        })?),
    };
    let mut labels = Vec::new();
    let mut specs = Vec::new();
    for arg in &args.runs {
        let (label, spec) = parse_run_arg(arg);
        if let Some(l) = &label
            && !crate::model::is_valid_label(l)
        {
            return Err(InputError::anyhow(format!("label `{l}` in `{arg}`: use {}", crate::model::LABEL_RULE)));
        }
        labels.push(label);
        specs.push(spec);
    }
    let dirs = super::runs::resolve_runs(&specs.iter().map(String::as_str).collect::<Vec<_>>(), &args.lookup)?;
    let mut runs = Vec::new();
    for ((label, dir), arg) in labels.into_iter().zip(dirs).zip(&args.runs) {
        let run = match load_run(&dir) {
            Ok(r) => r,
            Err(e) => {
                // A comparison with a run missing would silently change its meaning: stop.
                eprintln!("error: {e}");
                return Ok(exit::USAGE);
            }
        };
        let label = label.or_else(|| run.meta.label.clone()).unwrap_or_else(|| {
            dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| arg.clone())
        });
        runs.push((label, run));
    }
    if let [(_, run)] = runs.as_slice() {
        return compare_paired_run(run, args, metric.is_some());
    }
    // A percentile is a latency metric of the workloads that record latency (lat_fs).
    let latency = |k| {
        matches!(
            crate::workload::kind::of_kind(k).metric(metric.map(|p| p.name())),
            Ok(crate::verdict::Metric::Latency(_))
        )
    };
    if metric.is_some() && runs.iter().any(|(_, r)| !latency(r.meta.workload)) {
        return Err(InputError::anyhow("--metric with a percentile needs lat_fs runs (steps compare elapsed times)"));
    }
    // Checked once: the text, the plots and the page are all of this comparison.
    let cmp = Comparison::check(&runs).map_err(|e| InputError::anyhow(format!("cannot compare: {e}")))?;
    // The report body lists the warnings under its title; on a terminal that is where they
    // are read, and a second copy on stderr would print each twice. Piped, stderr is what
    // a person sees.
    if !std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        for w in cmp.warnings() {
            eprintln!("warning: {w}");
        }
    }
    let mut code = exit::SUCCESS;
    for (_, run) in &runs {
        for p in &run.problems {
            eprintln!("warning: {p}");
            code = exit::USAGE;
        }
    }
    let opts = CompareOptions { iterations: args.iterations, metric };
    print!("{}", cmp.render(args.format.or_json(args.json).into(), &opts));
    if let Some(dir) = &args.plot {
        let n = write_compare_plot_dir(dir, cmp.runs(), &opts)?;
        eprintln!("wrote {n} plots (PNG and SVG) and report.txt to {}", dir.display());
    }
    if let Some(file) = &args.html {
        let page = cmp.html(None)?;
        write_atomic(file, page.as_bytes())?;
        eprintln!("wrote {}", file.display());
    }
    Ok(code)
}

/// `compare` of one run: a paired run's arms are its comparison, so its report (with the
/// paired section) is the answer; any other single run is too few to compare.
fn compare_paired_run(run: &crate::results::LoadedRun, args: &CompareArgs, metric: bool) -> anyhow::Result<i32> {
    if !report::paired::is_paired(run) {
        return Err(InputError::anyhow(format!(
            "cannot compare: compare needs at least two runs, or one paired run (a scenario with [compare] arms); \
             {} is not paired",
            run.dir.display()
        )));
    }
    if metric {
        return Err(InputError::anyhow(
            "--metric: a paired run's comparison is on total_loops (lat_fs) or elapsed (steps)",
        ));
    }
    let mut code = exit::SUCCESS;
    for p in &run.problems {
        eprintln!("warning: {p}");
        code = exit::USAGE;
    }
    print!("{}", render_run(run, args.format.or_json(args.json).into()));
    if let Some(dir) = &args.plot {
        let n = write_plot_dir(dir, &[(run.label(), run)])?;
        eprintln!("wrote {n} plots (PNG and SVG) and report.txt to {}", dir.display());
    }
    if let Some(file) = &args.html {
        write_atomic(file, report::render_run_html(run)?.as_bytes())?;
        eprintln!("wrote {}", file.display());
    }
    Ok(code)
}
