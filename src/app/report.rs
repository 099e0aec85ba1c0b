//! `fsbench report` and `fsbench compare`: stored runs as tables, plots and comparisons.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use crate::exit::{self, InputError};
use crate::report::{
    self, CompareOptions, Format, Iterations, check_compatible, render_compare_with, render_run,
    write_compare_plot_dir, write_plot_dir,
};
use crate::results::{LoadedRun, load_run};

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
    /// Run directories (`results/<scenario>/<run-id>`).
    #[arg(required = true)]
    pub runs: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: ReportFormat,
    /// Also write one PNG and one SVG plot per table into this directory.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
}

/// `fsbench compare`.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// Runs to compare, each as `LABEL=RUN_DIR` (or a bare RUN_DIR, labelled by its `--label`).
    /// The first is the reference for ratios.
    #[arg(required = true, num_args = 2..)]
    pub runs: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: ReportFormat,
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
    /// (needs runs made with `latency = "histogram"`).
    #[arg(long, value_name = "METRIC")]
    pub metric: Option<String>,
}

fn parse_iterations(s: &str) -> Result<Iterations, String> {
    s.parse()
}

/// `fsbench report`.
pub fn report(args: &ReportArgs) -> anyhow::Result<i32> {
    if let Some(dir) = &args.plot {
        super::check_output_dir("--plot", dir)?;
    }
    let format = Format::from(args.format);
    let mut code = exit::SUCCESS;
    let mut loaded = Vec::new();
    for dir in &args.runs {
        match load_run(dir) {
            Ok(run) => loaded.push(run),
            Err(e) => {
                eprintln!("error: {e}");
                code = exit::USAGE;
            }
        }
    }
    if loaded.is_empty() {
        return Ok(exit::USAGE);
    }
    let mut outputs = Vec::new();
    for run in &loaded {
        for p in &run.problems {
            eprintln!("warning: {p}");
        }
        // Unreadable or hand-broken result files are bad input: the rest still renders.
        if !run.problems.is_empty() {
            code = exit::USAGE;
        }
        outputs.push(render_run(run, format));
    }
    print!("{}", report::join_outputs(outputs, format));
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
    Ok(code)
}

/// Split `LABEL=RUN_DIR`; a bare directory (or one whose path exists as given) has no label.
fn parse_run_arg(arg: &str) -> (Option<String>, PathBuf) {
    if Path::new(arg).exists() {
        return (None, PathBuf::from(arg));
    }
    match arg.split_once('=') {
        Some((label, dir)) if !label.is_empty() && !label.contains('/') => {
            (Some(label.to_string()), PathBuf::from(dir))
        }
        _ => (None, PathBuf::from(arg)),
    }
}

/// `fsbench compare`.
pub fn compare(args: &CompareArgs) -> anyhow::Result<i32> {
    if let Some(dir) = &args.plot {
        super::check_output_dir("--plot", dir)?;
    }
    let metric = match args.metric.as_deref() {
        None | Some("total_loops") => None,
        Some(m) => Some(crate::monitor::latency::Percentile::parse(m).ok_or_else(|| {
            InputError::anyhow(format!("--metric {m}: use total_loops, or a percentile: p50, p90, p99, p99.9, max"))
        })?),
    };
    let mut runs = Vec::new();
    for arg in &args.runs {
        let (label, dir) = parse_run_arg(arg);
        if let Some(l) = &label
            && !crate::model::is_valid_label(l)
        {
            return Err(InputError::anyhow(format!("label `{l}` in `{arg}`: use {}", crate::model::LABEL_RULE)));
        }
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
    if metric.is_some() && runs.iter().any(|(_, r)| r.meta.workload != "lat_fs") {
        return Err(InputError::anyhow("--metric with a percentile needs lat_fs runs (steps compare elapsed times)"));
    }
    let warnings = check_compatible(&runs).map_err(|e| InputError::anyhow(format!("cannot compare: {e}")))?;
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    let mut code = exit::SUCCESS;
    for (_, run) in &runs {
        for p in &run.problems {
            eprintln!("warning: {p}");
            code = exit::USAGE;
        }
    }
    let opts = CompareOptions { iterations: args.iterations, metric };
    let text = render_compare_with(&runs, args.format.into(), &opts)
        .map_err(|e| InputError::anyhow(format!("cannot compare: {e}")))?;
    print!("{text}");
    if let Some(dir) = &args.plot {
        let refs: Vec<(&str, &LoadedRun)> = runs.iter().map(|(l, r)| (l.as_str(), r)).collect();
        let n = write_compare_plot_dir(dir, &refs, &opts)?;
        eprintln!("wrote {n} plots (PNG and SVG) and report.txt to {}", dir.display());
    }
    Ok(code)
}
