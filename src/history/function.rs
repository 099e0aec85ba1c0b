//! `history --function NAME`: one function's share of each profiled cell's samples, run by
//! run, from the folded stacks the runs stored (`[workload] profile`).
//!
//! Per run and cell: the function's total share (samples with it anywhere on the stack)
//! and self share (samples of which it is the leaf), in percent, as the report's profile
//! tables compute them ([`crate::profile::shares::counts`]); a paired run's cell with one
//! profile per pair gives the mean over them, and says how many. A cell whose profile
//! cannot be read says why; cells never profiled are left out. Names from result files are
//! escaped where they are printed.

use std::fmt::Write as _;

use super::HistoryRun;
use crate::model::{CellProfile, CellResult};
use crate::plan::CellFilter;
use crate::profile::folded::parse_untrusted;
use crate::profile::shares::counts;
use crate::text::escape_control;

/// One cell of one run: the function's share of its profiles, or why there is none.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionPoint {
    /// The run directory's name.
    pub run: String,
    /// The run's start time.
    pub started: String,
    /// The cell's id.
    pub cell: String,
    /// Mean total and self share, percent, over the profiles read; or why none was.
    pub shares: Result<(f64, f64), String>,
    /// Profiles read (a paired run's cell: one per profiled pair).
    pub profiles: usize,
}

/// The function's total and self share of one profile, percent.
fn share_of(p: &CellProfile, function: &str) -> Result<(f64, f64), String> {
    if let Some(why) = &p.not_profiled {
        return Err(format!("not profiled: {why}"));
    }
    if let Some(why) = &p.unreadable {
        return Err(format!("no profile: {why}"));
    }
    let f = parse_untrusted(p.folded.as_bytes()).map_err(|e| format!("no profile: {e}"))?;
    let n = f.samples();
    let (own, total) = counts(&f).get(function).copied().unwrap_or_default();
    let pct = |k: u64| if n == 0 { 0.0 } else { 100.0 * k as f64 / n as f64 };
    Ok((pct(total), pct(own)))
}

/// Total and self share, percent, or why there is none.
type Shares = Result<(f64, f64), String>;

/// The mean shares of one cell over its readable profiles (or why none was read) and how
/// many were read; `None` for a cell never profiled.
fn cell_shares(c: &CellResult, function: &str) -> Option<(Shares, usize)> {
    let profiles: Vec<&CellProfile> = c.profile.iter().chain(&c.pair_profiles).collect();
    if profiles.is_empty() {
        return None;
    }
    let read: Vec<Result<(f64, f64), String>> = profiles.iter().map(|p| share_of(p, function)).collect();
    let ok: Vec<(f64, f64)> = read.iter().filter_map(|r| r.as_ref().ok().copied()).collect();
    if ok.is_empty() {
        return Some((Err(read.into_iter().find_map(Result::err).unwrap_or_default()), 0));
    }
    let n = ok.len() as f64;
    Some((Ok((ok.iter().map(|x| x.0).sum::<f64>() / n, ok.iter().map(|x| x.1).sum::<f64>() / n)), ok.len()))
}

/// The point of one cell of a run.
fn point(run: &HistoryRun, c: &CellResult, function: &str) -> Option<FunctionPoint> {
    let (shares, profiles) = cell_shares(c, function)?;
    Some(FunctionPoint { run: run.name(), started: run.run.meta.started.clone(), cell: c.id.clone(), shares, profiles })
}

/// The function's share in every profiled cell `only` keeps, run by run in series order.
pub fn function_history(runs: &[HistoryRun], only: &CellFilter, function: &str) -> Vec<FunctionPoint> {
    runs.iter()
        .flat_map(|r| r.run.cells.iter().filter(|c| only.matches(&c.params)).filter_map(move |c| point(r, c, function)))
        .collect()
}

/// The points as a table: run, cell, total and self share, profiles.
pub fn render_function(points: &[FunctionPoint], function: &str) -> String {
    let mut out = format!("{} in the profiled cells, % of each profile's samples\n", escape_control(function));
    if points.is_empty() {
        out.push_str("no run of these has a profiled cell (run with --profile)\n");
        return out;
    }
    let mut t = comfy_table::Table::new();
    t.load_style(comfy_table::presets::NOTHING).set_header(["run", "cell", "total %", "self %", "profiles"]);
    for p in points {
        let (total, own) = match &p.shares {
            Ok((t, s)) => (format!("{t:.2}"), format!("{s:.2}")),
            Err(why) => (escape_control(why), String::new()),
        };
        t.add_row([escape_control(&p.run), escape_control(&p.cell), total, own, p.profiles.to_string()]);
    }
    let _ = writeln!(out, "{t}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_functions_share_is_the_mean_over_a_cells_profiles_and_a_garbled_one_says_why() {
        let prof = |text: &str, pair| CellProfile { folded: text.into(), pair, ..Default::default() };
        let params = crate::model::CellParams {
            fs: "ext4".into(),
            layout: crate::model::Layout::S,
            quota: crate::model::QuotaMode::Off,
            tasks: 1,
            test: None,
            fio: Default::default(),
            kernel: None,
        };
        let mut c = CellResult::new(&params, crate::model::CellStatus::Ok, "t");
        assert_eq!(cell_shares(&c, "jbd2_x"), None, "never profiled: left out");
        c.profile = Some(prof("w;vfs_write;jbd2_x 30\nw;other 70\n", Some(0)));
        c.pair_profiles = vec![prof("w;vfs_write;jbd2_x 50\nw;other 50\n", Some(1))];
        assert_eq!(cell_shares(&c, "jbd2_x"), Some((Ok((40.0, 40.0)), 2)));
        assert_eq!(cell_shares(&c, "vfs_write"), Some((Ok((40.0, 0.0)), 2)));
        c.profile = Some(prof("garbage\n", None));
        c.pair_profiles.clear();
        let (bad, n) = cell_shares(&c, "jbd2_x").unwrap();
        assert!(n == 0 && bad.clone().unwrap_err().starts_with("no profile:"), "{bad:?}");
        let p =
            FunctionPoint { run: "r\u{1b}".into(), started: String::new(), cell: "c".into(), shares: bad, profiles: 0 };
        let text = render_function(&[p], "jbd2_\u{1b}x");
        assert!(!text.contains('\u{1b}') && text.contains("no profile:"), "{text}");
    }
}
