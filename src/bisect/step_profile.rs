//! What a bisection step's profiles say, in the bisect log: whether the step's
//! kernel-paired run holds profiles on both arms and, where it does, each judged cell's
//! most changed functions (candidate against baseline), small enough for `--json`
//! consumers: the names, the change in points and the adjusted p of the first
//! [`LOG_TOP`] each way. The diff itself is the report's, the one home of an arm profile
//! diff ([`crate::report::profile_diff::between_arms`]); `report BISECT_DIR` shows it
//! whole from the step's run. Also the step's stored run, opened beneath the bisection
//! directory.

use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::report::profile_diff::{CellDiff, Kind, between_arms};
use crate::results::LoadedRun;

/// Most functions each way a step's log entry keeps.
pub use crate::report::profile_summary::TOP as LOG_TOP;

pub use crate::report::profile_summary::{FunctionShift, NAME_CHARS, ProfileDiffSummary as StepProfileDiff};

/// Longest reason a step's log entry keeps, in characters.
const WHY_CHARS: usize = 300;

/// Whether a step's run was profiled, and its cells' most changed functions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StepProfile {
    /// Whether a judged cell of the step's run holds on-CPU profiles on both arms (and a
    /// diff of them was made).
    pub profiled: bool,
    /// Why not (or why a cell's diff is missing), when its cells say: `not profiled: …`
    /// as the cell recorded it, an unreadable profile; absent when the scenario profiles
    /// nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why_not: Option<String>,
    /// Each judged cell's on-CPU diff, candidate against baseline.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diffs: Vec<StepProfileDiff>,
}

impl StepProfile {
    /// The summary of a step's on-CPU arm diffs ([`between_arms`] of its run).
    pub fn of_diffs(diffs: &[CellDiff]) -> StepProfile {
        let mut why_not = None;
        let mut out = Vec::new();
        for cd in diffs {
            match crate::report::profile_summary::summarize(cd) {
                Ok(d) => out.push(d),
                Err(why) => _ = why_not.get_or_insert_with(|| cut(&why, WHY_CHARS)),
            }
        }
        StepProfile { profiled: !out.is_empty(), why_not, diffs: out }
    }

    /// The summary of a step's stored run: its cells' on-CPU arm diffs; when no cell has
    /// profiles on both arms, why, as a cell recorded it.
    pub fn of_run(run: &LoadedRun) -> StepProfile {
        let mut p = StepProfile::of_diffs(&between_arms(run, Kind::OnCpu));
        if p.why_not.is_none() && !p.profiled {
            let recorded = run.cells.iter().filter_map(|c| c.profile.as_ref()?.not_profiled.as_deref()).next();
            p.why_not = recorded.map(|why| cut(&format!("not profiled: {why}"), WHY_CHARS));
        }
        p
    }

    /// The largest change of the step's profiles in a few words (`check_object +46.6 pp`,
    /// `no change beyond the noise`), or `None` when no diff was made.
    pub fn headline(&self) -> Option<String> {
        if !self.profiled {
            return None;
        }
        let all = self.diffs.iter().flat_map(|d| d.grown.iter().chain(&d.shrunk));
        let top = all.max_by(|a, b| a.change_pp.abs().total_cmp(&b.change_pp.abs()));
        Some(top.map_or("no change beyond the noise".into(), |f| format!("{} {:+.1} pp", f.function, f.change_pp)))
    }

    /// The log's bounds of a step's profile entry: `None` when within them, else the
    /// field and why.
    pub fn violation(&self) -> Option<(String, String)> {
        if self.diffs.len() > super::MAX_CELLS {
            return Some(("diffs".into(), format!("more than {} cells", super::MAX_CELLS)));
        }
        for (i, d) in self.diffs.iter().enumerate() {
            if d.grown.len() > LOG_TOP || d.shrunk.len() > LOG_TOP || d.pairs > 1000 {
                return Some((format!("diffs[{i}]"), format!("more than {LOG_TOP} functions a way, or 1000 pairs")));
            }
            let bad = |f: &FunctionShift| {
                !(f.change_pp.is_finite() && f.change_pp.abs() <= 100.0 && (0.0..=1.0).contains(&f.p))
                    || f.function.chars().count() > NAME_CHARS
            };
            if d.grown.iter().chain(&d.shrunk).any(bad) {
                return Some((format!("diffs[{i}]"), "not a plausible function change".into()));
            }
        }
        None
    }
}

use crate::report::profile_summary::cut;

/// The stored run of a step, `run` as its log names it (relative to the bisection
/// directory `dir`): every component a plain name opened beneath the directory without
/// following a link, the run read as any result directory (capped, escaped). A log is
/// someone else's bytes: a path that climbs out, is absolute or goes through a link is
/// refused, with why.
pub fn load_step_run(dir: &Path, run: &str) -> Result<LoadedRun, String> {
    use crate::results::safe;
    let shown = dir.join(run);
    let what =
        |e: &dyn std::fmt::Display| format!("{}: {e}", crate::text::escape_control(&shown.display().to_string()));
    let mut fd = safe::open_dir(dir).map_err(|e| what(&e))?;
    let parts: Vec<&str> = run.split('/').collect();
    if parts.len() > 8 {
        return Err(what(&"not a step's run directory (too deep)"));
    }
    for part in parts {
        fd = safe::open_subdir(&fd, part).map_err(|e| what(&e))?;
    }
    crate::results::load_run_at(&fd, &shown).map_err(|e| what(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_run_outside_the_bisection_directory_is_refused() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("b/s")).unwrap();
        std::os::unix::fs::symlink("/tmp", d.path().join("b/s/link")).unwrap();
        let b = d.path().join("b");
        for run in ["../b/s", "/tmp", "s/link", "s//x", "s/./x", ""] {
            let e = load_step_run(&b, run).unwrap_err();
            assert!(!e.is_empty(), "{run}");
        }
        assert!(load_step_run(&b, "s/link").unwrap_err().contains("symbolic link"));
        // A plain directory that is not a run is said to be one.
        assert!(load_step_run(&b, "s").is_err());
    }

    #[test]
    fn a_long_name_is_cut_and_a_bad_entry_is_out_of_bounds() {
        let long = "f".repeat(NAME_CHARS + 10);
        let c = cut(&long, NAME_CHARS);
        assert_eq!(c.chars().count(), NAME_CHARS);
        assert!(c.ends_with('…'));
        let shift = |pp: f64, p: f64| FunctionShift { function: "f".into(), change_pp: pp, p };
        let mut d = StepProfileDiff {
            cell: "c".into(),
            judged: "across_pairs".into(),
            pairs: 8,
            samples: [10, 10],
            beyond: [1, 0],
            grown: vec![shift(3.0, 0.01)],
            shrunk: Vec::new(),
        };
        let p = |d: &StepProfileDiff| StepProfile { profiled: true, why_not: None, diffs: vec![d.clone()] };
        assert_eq!(p(&d).violation(), None);
        d.grown = vec![shift(f64::NAN, 0.01)];
        assert!(p(&d).violation().is_some());
        d.grown = vec![shift(1.0, 0.01); LOG_TOP + 1];
        assert!(p(&d).violation().is_some());
    }
}
