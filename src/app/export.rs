//! `fsbench export`: runs as the JSON that github-action-benchmark and Bencher ingest.

use std::path::PathBuf;

use clap::builder::TypedValueParser;
use clap::{Args, ValueEnum};

use crate::catalogue::Direction;
use crate::exit::{self, InputError};
use crate::report::export;

/// The dashboards' formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// github-action-benchmark's `customBiggerIsBetter` / `customSmallerIsBetter` array
    /// (one direction per file: `--better`).
    GithubActionBenchmark,
    /// Bencher Metric Format (`bencher run --adapter json`).
    Bencher,
}

/// `--better higher|lower`: which measures a github-action-benchmark file holds, in the
/// catalogue's words ([`Direction::word`]): `higher` for total_loops (loops/ms), fio iops and
/// bw (MiB/s), the action's `tool: customBiggerIsBetter`; `lower` for step times (s),
/// latency percentiles and fio p99 and clat_mean (µs), `tool: customSmallerIsBetter`.
fn better_parser() -> impl TypedValueParser<Value = Direction> {
    clap::builder::PossibleValuesParser::new([
        clap::builder::PossibleValue::new("higher")
            .help("total_loops (loops/ms), fio iops and bw (MiB/s): the action's `tool: customBiggerIsBetter`"),
        clap::builder::PossibleValue::new("lower")
            .help("step times (s), latency percentiles and fio p99 and clat_mean (µs): `tool: customSmallerIsBetter`"),
    ])
    .map(|w| Direction::from_word(&w).expect("only the possible values reach here"))
}

/// `fsbench export`.
#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    /// Runs to export: directories, or names as for `report` (`SCENARIO@LABEL`, `latest`).
    /// With several, each benchmark name starts with its run's label.
    #[arg(required = true, value_name = "RUN")]
    pub runs: Vec<String>,
    /// The format to write.
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// github-action-benchmark: the measures of one direction (the action takes one per file).
    #[arg(long, value_parser = better_parser())]
    pub better: Option<Direction>,
    /// Write to FILE (atomically) instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub lookup: super::runs::RunLookup,
}

/// `fsbench export`.
pub fn export(args: &ExportArgs) -> anyhow::Result<i32> {
    let direction = match (args.format, args.better) {
        (ExportFormat::GithubActionBenchmark, None) => {
            return Err(InputError::anyhow(
                "--format github-action-benchmark needs --better higher (tool: customBiggerIsBetter) or --better \
                 lower (tool: customSmallerIsBetter): the action takes one direction per file",
            ));
        }
        (ExportFormat::Bencher, Some(_)) => {
            return Err(InputError::anyhow("--better is for github-action-benchmark: Bencher takes every measure"));
        }
        (_, b) => b,
    };
    if let Some(file) = &args.out {
        super::checks::check_output_file("--out", file)?;
    }
    let specs: Vec<&str> = args.runs.iter().map(String::as_str).collect();
    let dirs = super::runs::resolve_runs(&specs, &args.lookup)?;
    let runs = dirs.iter().map(|d| crate::results::load_run(d)).collect::<Result<Vec<_>, _>>()?;
    let measures = export::measures(&runs);
    let doc = match direction {
        Some(d) => export::github_action_benchmark(&measures, d),
        None => export::bencher(&measures),
    }
    .map_err(|e| InputError::anyhow(e.to_string()))?;
    let text = format!("{}\n", serde_json::to_string_pretty(&doc)?);
    match &args.out {
        Some(file) => crate::results::write_atomic(file, text.as_bytes())?,
        None => print!("{text}"),
    }
    Ok(exit::SUCCESS)
}
