//! `fsbench history`: every run of a scenario as a series per cell and metric.

use std::path::PathBuf;

use clap::Args;

use crate::exit::{self, InputError};
use crate::history::{HistoryError, HistoryFilter, HistoryRequest, OrderBy};

/// `fsbench history`.
#[derive(Debug, Clone, Args)]
pub struct HistoryArgs {
    /// The scenario's results directory (`results/<scenario>`), or a scenario file (its runs
    /// are read from `<results>/<name>`).
    pub scenario_or_dir: PathBuf,
    /// Results root a scenario file's runs are read from.
    #[arg(long, default_value = "results", value_name = "DIR")]
    pub results: PathBuf,
    /// Only these cells, as for `run --only` (`fs=ext4,tasks=1`); may be repeated.
    #[arg(long, value_name = "AXIS=VALUE,...")]
    pub only: Vec<String>,
    /// Only runs started at or after DATE (`2026-11-01` or RFC 3339, UTC).
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// Only the last N runs (in series order).
    #[arg(long, value_name = "N")]
    pub last: Option<usize>,
    /// Only runs of this host name.
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
    /// Only runs that recorded KEY=VALUE with `run --meta`; may be repeated (all must match).
    #[arg(long = "meta", value_name = "KEY=VALUE")]
    pub meta: Vec<String>,
    /// Order runs by this `run --meta` key (numbers numerically) instead of start time;
    /// runs without it are left out.
    #[arg(long, value_name = "KEY")]
    pub order_by: Option<String>,
    /// Change points: the largest permutation p-value that counts as one.
    #[arg(long, default_value_t = 0.001, value_name = "P")]
    pub max_p: f64,
    /// Change points: points examined together (longer series in windows overlapping by half).
    #[arg(long, default_value_t = 50, value_name = "N")]
    pub window: usize,
    /// Instead of the metrics' series: this function's share of each profiled cell's samples,
    /// run by run (total and self, percent; a paired run's cell: the mean over its profiles).
    #[arg(long, value_name = "NAME")]
    pub function: Option<String>,
    /// Print the history as JSON (`schemas/history.schema.json`).
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print one CSV line per point.
    #[arg(long)]
    pub csv: bool,
    /// Also write the history as one self-contained HTML page to FILE: a chart per series with
    /// its change points, each point linked to its run's directory (relative links).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Read every run directory instead of the index kept in `<results root>/.fsbench-index/`
    /// (which is otherwise made or brought up to date).
    #[arg(long)]
    pub no_index: bool,
}

/// `--since`: a date, or an RFC 3339 time, compared with the runs' start times as text.
fn check_since(since: &str) -> anyhow::Result<()> {
    let b = since.as_bytes();
    let date_ok = b.len() >= 10
        && b[..10].iter().enumerate().all(|(i, c)| if i == 4 || i == 7 { *c == b'-' } else { c.is_ascii_digit() });
    if date_ok && since.chars().all(|c| c.is_ascii_alphanumeric() || ":-.+".contains(c)) {
        return Ok(());
    }
    Err(InputError::anyhow(format!(
        "--since `{}`: expected a date (2026-11-01) or an RFC 3339 time (2026-11-01T12:00:00Z)",
        crate::text::escape_control(since)
    )))
}

fn request(args: &HistoryArgs) -> anyhow::Result<HistoryRequest> {
    if let Some(s) = &args.since {
        check_since(s)?;
    }
    if args.last == Some(0) {
        return Err(InputError::anyhow("--last 0 keeps no run: give at least 1"));
    }
    let tags = crate::model::run_tags::parse_tags(&args.meta).map_err(|e| InputError::anyhow(format!("--meta {e}")))?;
    let order = match &args.order_by {
        Some(k) if !crate::model::run_tags::is_valid_tag_key(k) => {
            return Err(InputError::anyhow(format!(
                "--order-by `{}`: use {}",
                crate::text::escape_control(k),
                crate::model::run_tags::TAG_KEY_RULE
            )));
        }
        Some(k) => OrderBy::Tag(k.clone()),
        None => OrderBy::Started,
    };
    let filter = HistoryFilter {
        only: args.only.clone(),
        since: args.since.clone(),
        host: args.host.clone(),
        tags,
        last: args.last,
    };
    if !(args.max_p > 0.0 && args.max_p < 1.0) {
        return Err(InputError::anyhow(format!("--max-p {}: give a p-value between 0 and 1", args.max_p)));
    }
    if args.window < 6 {
        return Err(InputError::anyhow(format!("--window {}: change points need at least 6 points", args.window)));
    }
    let change_points = crate::history::change_points::ChangePointOptions {
        max_p: args.max_p,
        window: args.window,
        ..Default::default()
    };
    Ok(HistoryRequest { filter, order, change_points, use_index: !args.no_index })
}

/// `fsbench history`.
pub fn history(args: &HistoryArgs) -> anyhow::Result<i32> {
    let req = request(args)?;
    if let Some(file) = &args.html {
        super::checks::check_output_file("--html", file)?;
    }
    let dir = if args.scenario_or_dir.is_file() {
        let scenario = crate::scenario::load_named(Some(&args.scenario_or_dir), &[])?;
        args.results.join(&scenario.name)
    } else {
        args.scenario_or_dir.clone()
    };
    if let Some(name) = &args.function {
        return function_history(args, &req, &dir, name);
    }
    let h = crate::history::history(&dir, &req).map_err(|e| match e {
        HistoryError::Io(..) => anyhow::Error::new(e),
        other => InputError::anyhow(other.to_string()),
    })?;
    for note in &h.notes {
        eprintln!("note: {}", crate::text::escape_control(note));
    }
    if let Some(file) = &args.html {
        crate::results::write_atomic(file, crate::history::html::render_html(&h, &run_links(file, &h)).as_bytes())?;
    }
    if args.json {
        let doc = crate::history::json::history_json(&h, &req.order, req.change_points.min_points());
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else if args.csv {
        print!("{}", crate::history::render::render_csv(&h));
    } else {
        print!("{}", crate::history::render::render_table(&h, super::print::output_width() as usize));
    }
    Ok(exit::SUCCESS)
}

/// `history --function NAME`: the runs read whole (profiles are not in the index), the
/// function's share per run and cell.
fn function_history(
    args: &HistoryArgs,
    req: &HistoryRequest,
    dir: &std::path::Path,
    name: &str,
) -> anyhow::Result<i32> {
    if args.json || args.csv || args.html.is_some() {
        return Err(InputError::anyhow("--function prints a table: not with --json, --csv or --html"));
    }
    let loaded = crate::history::load_history(dir, req).map_err(|e| match e {
        HistoryError::Io(..) => anyhow::Error::new(e),
        other => InputError::anyhow(other.to_string()),
    })?;
    let only = crate::history::load::cell_filter(&req.filter.only, &loaded.runs)?;
    for why in &loaded.left_out {
        eprintln!("note: left out: {why}");
    }
    let points = crate::history::function::function_history(&loaded.runs, &only, name);
    print!("{}", crate::history::function::render_function(&points, name));
    Ok(exit::SUCCESS)
}

/// Each run's directory as a link relative to the page `file`'s directory.
fn run_links(file: &std::path::Path, h: &crate::history::History) -> Vec<String> {
    let absolute = |p: &std::path::Path| {
        std::fs::canonicalize(p).unwrap_or_else(|_| std::env::current_dir().unwrap_or_default().join(p))
    };
    let page_dir = absolute(file.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(std::path::Path::new(".")));
    h.runs.iter().map(|r| crate::history::html::relative_href(&page_dir, &absolute(&r.run.dir))).collect()
}
