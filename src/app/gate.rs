//! `fsbench gate`: a CI verdict on a candidate run against a baseline.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::exit::{self, InputError};
use crate::gate::{GateOptions, Verdict, evaluate, render_junit, render_markdown, render_table};
use crate::results::{load_run, write_atomic};

/// `fsbench gate`.
#[derive(Debug, Clone, Args)]
pub struct GateArgs {
    /// The reference run directory.
    #[arg(long, value_name = "RUN_DIR")]
    pub baseline: PathBuf,
    /// The run directory under test.
    #[arg(long, value_name = "RUN_DIR")]
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
}

/// `fsbench gate`: exit 1 when a cell regressed, 0 when none did, 2 on bad input.
pub fn gate(args: &GateArgs) -> anyhow::Result<i32> {
    let threshold = args
        .threshold
        .as_deref()
        .map(crate::scenario::units::parse_percent)
        .transpose()
        .map_err(|e| InputError::anyhow(format!("--threshold: {e}")))?;
    // Output files are checked before the work, so exit 1 can only mean "regressed".
    for (opt, path) in [("--markdown", &args.markdown), ("--junit", &args.junit)] {
        if let Some(p) = path {
            super::check_output_file(opt, p)?;
        }
    }
    let load = |side: &str, p: &Path| load_run(p).map_err(|e| InputError::anyhow(format!("--{side}: {e}")));
    let baseline = load("baseline", &args.baseline)?;
    let candidate = load("candidate", &args.candidate)?;
    // A gate must not pass on data it could not read.
    for (side, run) in [("baseline", &baseline), ("candidate", &candidate)] {
        if !run.problems.is_empty() {
            return Err(InputError::anyhow(format!(
                "--{side} {}: {} unreadable result file(s):\n  {}",
                run.dir.display(),
                run.problems.len(),
                run.problems.join("\n  ")
            )));
        }
    }
    let rep = evaluate(&baseline, &candidate, &GateOptions { threshold, metric: args.metric.clone() })?;
    if rep.rows.iter().all(|r| r.verdict == Verdict::Missing) {
        print!("{}", render_table(&rep));
        return Err(InputError::anyhow(
            "nothing to compare: no cell has samples in both runs (did the candidate run measure anything?)",
        ));
    }
    for w in &rep.warnings {
        eprintln!("warning: {w}");
    }
    print!("{}", render_table(&rep));
    if let Some(p) = &args.markdown {
        write_atomic(p, render_markdown(&rep).as_bytes())?;
    }
    if let Some(p) = &args.junit {
        write_atomic(p, render_junit(&rep).as_bytes())?;
    }
    Ok(if rep.count(Verdict::Regressed) > 0 { exit::FAILURE } else { exit::SUCCESS })
}
