//! `fsbench report` and `fsbench compare`: stored runs as tables, plots and comparisons.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use super::output::{OUTPUT_SCHEMA_VERSION, ReportsJson, to_json};
use crate::exit::{self, InputError};
use crate::report::{
    self, CompareOptions, Comparison, Format, Iterations, render_run, write_compare_plot_dir, write_plot_dir,
};
use crate::results::find::{is_scenario_dir, list_runs};
use crate::results::{LoadedRun, ResultsError, load_run, write_atomic};

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
    /// compare (and a bisection's report): plain text of at most 80 columns, a mail.
    Email,
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
            // Handled by compare before any table is drawn; `report` refuses it.
            ReportFormat::Email => Self::Table,
        }
    }
}

/// What `report` and `compare` print and write besides: one group of flags, flattened
/// into both.
#[derive(Debug, Clone, Args)]
pub struct RenderArgs {
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: ReportFormat,
    /// Print JSON (`schemas/report.schema.json`, with the ratios when comparing; `report` of
    /// several runs: `schemas/reports.schema.json`; of a scenario directory's runs:
    /// `schemas/run-list.schema.json`): the same as `--format json`.
    #[arg(long)]
    pub json: bool,
    /// Also write one PNG and one SVG plot per table into this directory (comparing steps:
    /// one chart per step with every label on one y axis, and one per-iteration chart per
    /// filesystem).
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// Also write the report or the comparison as one self-contained HTML page (tables,
    /// plots, provenance).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

impl RenderArgs {
    /// The format chosen (`--json` is `--format json`).
    fn format(&self) -> Format {
        self.format.or_json(self.json).into()
    }

    /// Refuse a `--plot` or `--html` that cannot be written, before anything is loaded.
    fn check_paths(&self) -> anyhow::Result<()> {
        if let Some(dir) = &self.plot {
            super::checks::check_output_dir("--plot", dir)?;
        }
        if let Some(file) = &self.html {
            super::checks::check_output_file("--html", file)?;
        }
        Ok(())
    }

    /// Write one run's plots (PNG, SVG and report.txt) into `dir`.
    fn write_plots(run: &LoadedRun, dir: &Path) -> anyhow::Result<()> {
        let n = write_plot_dir(dir, &[(run.label(), run)])?;
        eprintln!("wrote {n} plots (PNG and SVG) and report.txt to {}", dir.display());
        Ok(())
    }

    /// Write one run's page to `--html`, when asked.
    fn write_html(&self, run: &LoadedRun) -> anyhow::Result<()> {
        if let Some(file) = &self.html {
            write_atomic(file, report::render_run_html(run)?.as_bytes())?;
            eprintln!("wrote {}", file.display());
        }
        Ok(())
    }
}

/// `fsbench report`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Runs: directories (`results/<scenario>/<run-id>`) or names (`@LABEL`, `latest`,
    /// `SCENARIO@LABEL`). A scenario directory (`results/quota-smp`) lists its runs instead.
    #[arg(required = true)]
    pub runs: Vec<PathBuf>,
    #[command(flatten)]
    pub render: RenderArgs,
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
    #[command(flatten)]
    pub render: RenderArgs,
    /// Steps runs: which iterations of each cell are compared: `all`, `steady` (every
    /// iteration whose rm_rf removed something; from the second on when not recorded),
    /// `last`, or an iteration number from 1.
    #[arg(long, value_name = "all|steady|last|N", default_value = "steady", value_parser = parse_iterations)]
    pub iterations: Iterations,
    /// Compare a lat_fs latency percentile instead of total loops: p50, p90, p99, p99.9 or max
    /// (needs runs made with `latency = "histogram"`). Tables only: not with --plot or --html.
    #[arg(long, value_name = "METRIC")]
    pub metric: Option<String>,
    #[command(flatten)]
    pub lookup: super::runs::RunLookup,
}

/// Print each run's load problems as warnings; bad input (exit 2) when there were any.
fn warn_problems<'a>(runs: impl IntoIterator<Item = &'a LoadedRun>) -> i32 {
    let mut code = exit::SUCCESS;
    for run in runs {
        for p in &run.problems {
            eprintln!("warning: {p}");
            // Unreadable or hand-broken result files are bad input: the rest still renders.
            code = exit::USAGE;
        }
    }
    code
}

fn parse_iterations(s: &str) -> Result<Iterations, String> {
    s.parse()
}

/// `fsbench report`.
pub fn report(args: &ReportArgs) -> anyhow::Result<i32> {
    let out = &args.render;
    // A bisection's directory (`fsbench bisect`): its steps, plot and culprit.
    if let [dir] = args.runs.as_slice()
        && dir.join(crate::bisect::log::LOG_FILE).is_file()
    {
        return report_bisection(dir, out);
    }
    if out.format == ReportFormat::Email {
        return Err(InputError::anyhow("--format email is for compare: it describes a change between two runs"));
    }
    out.check_paths()?;
    if out.html.is_some() && args.runs.len() > 1 {
        return Err(InputError::anyhow("--html writes one run's page: give one run (or use `fsbench compare --html`)"));
    }
    // A scenario directory: the runs in it, to choose from.
    if let [dir] = args.runs.as_slice()
        && is_scenario_dir(dir)
    {
        return list_scenario_runs(dir, out);
    }
    let specs: Vec<String> = args.runs.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let dirs = super::runs::resolve_runs(&specs.iter().map(String::as_str).collect::<Vec<_>>(), &args.lookup)?;
    let (loaded, load_code) = load_runs(&dirs);
    if loaded.is_empty() {
        return Ok(exit::USAGE);
    }
    let code = load_code.max(warn_problems(&loaded));
    let format = out.format();
    // Several runs in JSON are one document holding their reports, not several documents.
    let text = if format == Format::Json && loaded.len() > 1 {
        to_json(&ReportsJson { schema: OUTPUT_SCHEMA_VERSION, reports: loaded.iter().map(report::run_json).collect() })
    } else {
        report::join_outputs(loaded.iter().map(|run| render_run(run, format)).collect(), format)
    };
    print!("{text}");
    if let Some(dir) = &out.plot {
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
            RenderArgs::write_plots(run, &target)?;
        }
    }
    if let Some(run) = loaded.first() {
        out.write_html(run)?;
    }
    Ok(code)
}

/// `report` of a bisection's directory: its steps and conclusion as text, Markdown or JSON
/// (the log), the culprit's mail (`--format email`), the plot (`--plot`), the page (`--html`).
fn report_bisection(dir: &Path, out: &RenderArgs) -> anyhow::Result<i32> {
    out.check_paths()?;
    if out.format == ReportFormat::Csv {
        return Err(InputError::anyhow("a bisection has no CSV form: use --format table, markdown, json or email"));
    }
    let log = crate::bisect::log::load(dir)
        .map_err(|e| InputError::anyhow(e.to_string()))?
        .ok_or_else(|| InputError::anyhow(format!("{}: no bisect.json", dir.display())))?;
    let shown = crate::text::escape_control(&dir.display().to_string());
    let runs = crate::bisect::log::load_step_runs(dir, &log);
    match (out.format, out.json) {
        (_, true) | (ReportFormat::Json, _) => print!("{}", to_json(&log)),
        (ReportFormat::Email, _) => print!("{}", crate::bisect::report::email(&log, &runs, &shown)),
        (f, _) => print!("{}", crate::bisect::report::render(&log, &runs, f == ReportFormat::Markdown)),
    }
    if let Some(plots) = &out.plot {
        let p = crate::bisect::report::plot(&log)?;
        crate::report::plot::write_plots(plots, &[p])?;
        eprintln!("wrote bisect.png and bisect.svg to {}", plots.display());
    }
    if let Some(file) = &out.html {
        write_atomic(file, crate::bisect::report::html(&log, &runs)?.as_bytes())?;
        eprintln!("wrote {}", file.display());
    }
    Ok(exit::SUCCESS)
}

/// `report` of a scenario directory: the runs in it, to choose from (bad input when some
/// are unreadable, but the readable ones are listed).
fn list_scenario_runs(dir: &Path, out: &RenderArgs) -> anyhow::Result<i32> {
    if out.html.is_some() || out.plot.is_some() {
        return Err(InputError::anyhow(format!(
            "{} is a scenario directory (it lists its runs): name one run for --html or --plot, e.g. {}@latest",
            dir.display(),
            dir.display()
        )));
    }
    let (runs, unreadable) = list_runs(dir).map_err(|e| InputError::anyhow(e.to_string()))?;
    print!("{}", report::runs::render_run_list(dir, &runs, out.format()));
    for u in &unreadable {
        eprintln!("warning: {}", crate::text::escape_control(u));
    }
    Ok(if unreadable.is_empty() { exit::SUCCESS } else { exit::USAGE })
}

/// Load each run directory; one that is not a run, or unreadable, is an error on stderr
/// and makes the exit code bad input, and the others are still loaded.
fn load_runs(dirs: &[PathBuf]) -> (Vec<LoadedRun>, i32) {
    let mut code = exit::SUCCESS;
    let mut loaded = Vec::new();
    for dir in dirs {
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
    (loaded, code)
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

/// `compare --metric`: `None` for total loops, else the percentile; refused with `--plot`
/// or `--html`, which draw total loops (they would show another quantity than the tables
/// above them claim).
fn compare_metric(args: &CompareArgs) -> anyhow::Result<Option<crate::monitor::latency::Percentile>> {
    let out = &args.render;
    if let Some(m) = args.metric.as_deref().filter(|m| *m != "total_loops")
        && (out.plot.is_some() || out.html.is_some())
    {
        let flag = if out.plot.is_some() { "--plot" } else { "--html" };
        return Err(InputError::anyhow(format!(
            "--metric {m} is for the tables only: {flag} draws total loops; run the comparison once with \
             --metric for the tables and once without it for {flag}"
        )));
    }
    Ok(match args.metric.as_deref() {
        None | Some("total_loops") => None,
        Some(m) => Some(crate::monitor::latency::Percentile::parse(m).ok_or_else(|| {
            InputError::anyhow(format!("--metric {m}: use total_loops, or a percentile: p50, p90, p99, p99.9, max"))
        })?),
    })
}

/// `fsbench compare`.
pub fn compare(args: &CompareArgs) -> anyhow::Result<i32> {
    let out = &args.render;
    let metric = compare_metric(args)?;
    out.check_paths()?;
    let Some(runs) = load_labelled(args)? else { return Ok(exit::USAGE) };
    if let [(_, run)] = runs.as_slice() {
        return compare_paired_run(run, out, metric.is_some());
    }
    // A percentile is a latency metric of the workloads that record latency (lat_fs).
    let latency = |k| {
        matches!(
            crate::workload::kind::of_kind(k).metric(metric.map(|p| p.name())),
            Ok(crate::catalogue::Metric::Latency(_))
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
    let code = warn_problems(runs.iter().map(|(_, r)| r));
    let opts = CompareOptions { iterations: args.iterations, metric };
    if out.format == ReportFormat::Email && !out.json {
        print!("{}", report::email::render(cmp.runs()).map_err(InputError::anyhow)?);
        return Ok(code);
    }
    print!("{}", cmp.render(out.format(), &opts));
    if let Some(dir) = &out.plot {
        let n = write_compare_plot_dir(dir, cmp.runs(), &opts)?;
        eprintln!("wrote {n} plots (PNG and SVG) and report.txt to {}", dir.display());
    }
    if let Some(file) = &out.html {
        let page = cmp.html(None)?;
        write_atomic(file, page.as_bytes())?;
        eprintln!("wrote {}", file.display());
    }
    Ok(code)
}

/// The runs of `compare`, each with its label (`LABEL=`, else its `--label`, else its
/// directory's name). `None` when one does not load (on stderr): a comparison with a run
/// missing would silently change its meaning.
fn load_labelled(args: &CompareArgs) -> anyhow::Result<Option<Vec<(String, LoadedRun)>>> {
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
                eprintln!("error: {e}");
                return Ok(None);
            }
        };
        let label = label.or_else(|| run.meta.label.clone()).unwrap_or_else(|| {
            dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| arg.clone())
        });
        runs.push((label, run));
    }
    Ok(Some(runs))
}

/// `compare` of one run: a paired run's arms are its comparison, so its report (with the
/// paired section) is the answer; any other single run is too few to compare.
fn compare_paired_run(run: &LoadedRun, out: &RenderArgs, metric: bool) -> anyhow::Result<i32> {
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
    let code = warn_problems([run]);
    print!("{}", render_run(run, out.format()));
    if let Some(dir) = &out.plot {
        RenderArgs::write_plots(run, dir)?;
    }
    out.write_html(run)?;
    Ok(code)
}
