//! The bisect log: `bisect.json` in the bisection's directory, rewritten atomically after
//! every step through the result store, so a Ctrl-C keeps every finished step and
//! `fsbench bisect --resume DIR` goes on from them. It is also the `--json` document
//! (`schemas/bisect.schema.json`), with the culprit named by its label.

use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::search::{Conclusion, StepRecord};
use super::step::StepVerdict;
use crate::results::bounds::{MAX_VALUE, Violation};
use crate::results::{BoundedFile, ResultsError};

/// The log's file name in the bisection directory.
pub const LOG_FILE: &str = "bisect.json";

/// The newest log format this fsbench reads and writes.
pub const BISECT_SCHEMA_VERSION: u32 = 1;

/// Most candidates (and steps) a log may hold: far beyond any bisection's.
pub const MAX_CANDIDATES: usize = 100_000;

pub use super::MAX_CELLS;

/// One candidate kernel, in the order bisected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CandidateRecord {
    /// Its label (`A-Z a-z 0-9 . _ - +`).
    pub label: String,
    /// The kernel image.
    pub image: String,
    /// The modules directory, when given.
    pub modules: Option<String>,
    /// Extra kernel command line.
    pub cmdline: String,
    /// Guest memory, bytes.
    pub memory: u64,
    /// Guest CPUs.
    pub cpus: u32,
    /// The commit it is built from (a bisection of a git range; `null` for a list of images).
    #[serde(default)]
    pub commit: Option<String>,
}

/// What a bisection of a git range (`--git TREE --range GOOD..BAD --build CMD`) was given:
/// enough to build the candidates it has not built yet when it is resumed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GitRecord {
    /// The repository.
    pub tree: String,
    /// The good end's full commit id.
    pub good: String,
    /// The bad end's full commit id.
    pub bad: String,
    /// The build command (`sh -c`).
    pub build: String,
    /// The `--config` file, when given.
    pub config: Option<String>,
    /// sha256 of the config file's content when the bisection started.
    pub config_sha256: Option<String>,
    /// The build cache directory.
    pub cache: String,
}

/// The whole log: what is bisected, how each step is judged, the steps so far and, once
/// there is one, the conclusion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BisectLog {
    /// Format version ([`BISECT_SCHEMA_VERSION`]).
    pub schema: u32,
    /// The scenario's name.
    pub scenario: String,
    /// The judged cell (its id without the kernel); with several (`--all-cells`), their
    /// ids joined by `, `, each also in `cells`.
    pub cell: String,
    /// With several judged cells (`--all-cells`): their ids; absent with one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cells: Vec<String>,
    /// The metric judged (`total_loops`, `iops`).
    pub metric: String,
    /// The regression threshold, a fraction (0.05 = 5%); with several cells the smallest of
    /// theirs (each step's `cells` say each one's).
    pub threshold: f64,
    /// Fewest pairs a step takes.
    pub min_pairs: u32,
    /// Most pairs a step takes: its budget.
    pub max_pairs: u32,
    /// Seed of every step's pair order.
    pub seed: u64,
    /// The candidates, the good endpoint first, the bad one last.
    pub candidates: Vec<CandidateRecord>,
    /// When the bisection started (RFC 3339).
    pub started: String,
    /// The finished steps, in order.
    pub steps: Vec<StepRecord>,
    /// What it concluded; `null` while it runs (or after an interruption).
    pub conclusion: Option<Conclusion>,
    /// The culprit's label, when the conclusion names one.
    pub culprit: Option<String>,
    /// The git range and build of a bisection of commits (`null` for a list of images).
    #[serde(default)]
    pub git: Option<GitRecord>,
}

impl BisectLog {
    /// Label of the candidate at `position` (`?` outside the list).
    pub fn label(&self, position: usize) -> &str {
        self.candidates.get(position).map_or("?", |c| c.label.as_str())
    }

    /// The index of the step that confirmed the culprit: the last that found it bad (against
    /// its predecessor, or against the good endpoint when that is its predecessor).
    pub fn confirmation(&self) -> Option<usize> {
        let Some(Conclusion::Culprit { candidate }) = &self.conclusion else { return None };
        self.steps.iter().rposition(|s| s.candidate == *candidate && s.measure.verdict == StepVerdict::Bad)
    }

    /// Set the conclusion (and the culprit's label from it).
    pub fn conclude(&mut self, c: Conclusion) {
        self.culprit = match &c {
            Conclusion::Culprit { candidate } => Some(self.label(*candidate).to_string()),
            _ => None,
        };
        self.conclusion = Some(c);
    }
}

impl BoundedFile for BisectLog {
    const SUPPORTED_SCHEMA: u32 = BISECT_SCHEMA_VERSION;

    fn bounds(&self) -> Result<(), Violation> {
        let n = self.candidates.len();
        if !(2..=MAX_CANDIDATES).contains(&n) {
            return Err(("candidates".into(), format!("{n} candidates; a bisection has 2 to {MAX_CANDIDATES}")));
        }
        if self.cells.len() > MAX_CELLS {
            return Err(("cells".into(), format!("{} cells, more than {MAX_CELLS}", self.cells.len())));
        }
        if self.steps.len() > MAX_CANDIDATES {
            return Err(("steps".into(), format!("{} steps, more than {MAX_CANDIDATES}", self.steps.len())));
        }
        if !(self.threshold.is_finite() && (0.0..1.0).contains(&self.threshold)) {
            return Err(("threshold".into(), format!("{} is not a threshold (a fraction below 1)", self.threshold)));
        }
        if self.min_pairs < 2 || self.min_pairs > self.max_pairs || self.max_pairs > 1000 {
            return Err(("max_pairs".into(), format!("pairs {}..{} out of 2..1000", self.min_pairs, self.max_pairs)));
        }
        for (i, s) in self.steps.iter().enumerate() {
            let at = format!("steps[{i}]");
            if s.baseline >= n || s.candidate >= n {
                return Err((
                    format!("{at}.candidate"),
                    format!("position {}/{} outside the {n} candidates", s.baseline, s.candidate),
                ));
            }
            let m = &s.measure;
            for (name, v) in [("ratio", m.ratio), ("ratio_low", m.ratio_low), ("ratio_high", m.ratio_high)] {
                if v.is_some_and(|v| !v.is_finite() || !(0.0..=MAX_VALUE).contains(&v)) {
                    return Err((format!("{at}.measure.{name}"), "not a plausible ratio".into()));
                }
            }
            if !(s.seconds.is_finite() && (0.0..=MAX_VALUE).contains(&s.seconds)) {
                return Err((format!("{at}.seconds"), format!("{} is not a duration", s.seconds)));
            }
            if m.pairs > 1000 || m.dropped > 1000 || !(0.0..=1.0).contains(&m.level) {
                return Err((format!("{at}.measure.pairs"), "pair counts or level out of bounds".into()));
            }
            if let Some((field, why)) = m.profile.as_ref().and_then(|p| p.violation()) {
                return Err((format!("{at}.measure.profile.{field}"), why));
            }
            if m.cells.len() > MAX_CELLS {
                return Err((format!("{at}.measure.cells"), format!("more than {MAX_CELLS} cells")));
            }
            for (j, c) in m.cells.iter().enumerate() {
                let (cm, p) = (&c.measure, c.p_holm.unwrap_or(0.0));
                let ratios = [cm.ratio, cm.ratio_low, cm.ratio_high];
                let bad = ratios.iter().flatten().any(|v| !v.is_finite() || !(0.0..=MAX_VALUE).contains(v))
                    || !(0.0..=1.0).contains(&p)
                    || !(0.0..1.0).contains(&c.threshold)
                    || !cm.cells.is_empty()
                    || cm.profile.is_some();
                if bad {
                    return Err((format!("{at}.measure.cells[{j}]"), "not a plausible cell measure".into()));
                }
            }
        }
        let within = |p: usize| p < n;
        let ok = match &self.conclusion {
            Some(Conclusion::Culprit { candidate }) => within(*candidate),
            Some(Conclusion::Narrowed { good, bad, .. }) => within(*bad) && good < bad,
            _ => true,
        };
        if !ok {
            return Err(("conclusion".into(), "names a position outside the candidates".into()));
        }
        Ok(())
    }
}

/// Write `log` as [`LOG_FILE`] in the bisection directory open at `dir` (atomically: a
/// fresh temporary renamed over it).
pub fn store(dir: &std::os::fd::OwnedFd, shown: &Path, log: &BisectLog) -> Result<(), ResultsError> {
    let bytes = serde_json::to_vec_pretty(log).expect("a bisect log serializes");
    crate::results::safe::write_at(dir, LOG_FILE, &bytes).map_err(|e| ResultsError::Io {
        path: shown.join(LOG_FILE),
        what: "write",
        source: e,
    })
}

/// Read the log of the bisection directory `dir` as result files are read (beneath the
/// directory, capped, escaped, its version and bounds checked); `Ok(None)` without one.
pub fn load(dir: &Path) -> Result<Option<BisectLog>, ResultsError> {
    crate::results::read_beside_runs(dir, LOG_FILE)
}

/// Each step's stored run (`None` for a step with none, as a simulated one), read
/// beneath the bisection directory `dir`; an unreadable one says why.
pub fn load_step_runs(dir: &Path, log: &BisectLog) -> Vec<Option<Result<crate::results::LoadedRun, String>>> {
    log.steps.iter().map(|s| s.measure.run.as_deref().map(|run| super::step_profile::load_step_run(dir, run))).collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::bisect::search::StepRole;
    use crate::bisect::step::StepMeasure;
    use crate::model::pairing::PairStop;

    pub(crate) fn sample() -> BisectLog {
        let cand = |l: &str| CandidateRecord {
            label: l.into(),
            image: format!("/k/{l}"),
            modules: None,
            cmdline: String::new(),
            memory: 1 << 30,
            cpus: 2,
            commit: None,
        };
        let measure = StepMeasure {
            verdict: StepVerdict::Bad,
            paired_verdict: "regressed".into(),
            ratio: Some(0.9),
            ratio_low: Some(0.87),
            ratio_high: Some(0.93),
            level: 0.99,
            pairs: 6,
            dropped: 0,
            stop: PairStop::Regressed,
            reason: None,
            run: Some("s/r1".into()),
            cells: Vec::new(),
            profile: None,
        };
        BisectLog {
            schema: BISECT_SCHEMA_VERSION,
            scenario: "s".into(),
            cell: "ext4-S-qoff-t1-open_close".into(),
            cells: Vec::new(),
            metric: "total_loops".into(),
            threshold: 0.05,
            min_pairs: 6,
            max_pairs: 32,
            seed: 7,
            candidates: vec![cand("A"), cand("B"), cand("C")],
            started: "2026-12-04T17:00:00Z".into(),
            steps: vec![StepRecord {
                role: StepRole::Endpoints,
                baseline: 0,
                candidate: 2,
                measure,
                seconds: 12.5,
                finished: "2026-12-04T17:01:00Z".into(),
            }],
            conclusion: None,
            culprit: None,
            git: None,
        }
    }

    #[test]
    fn a_log_written_after_a_step_reads_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let fd = crate::results::safe::open_dir(dir.path()).unwrap();
        let mut log = sample();
        store(&fd, dir.path(), &log).unwrap();
        assert_eq!(load(dir.path()).unwrap().as_ref(), Some(&log));
        log.conclude(Conclusion::Culprit { candidate: 1 });
        store(&fd, dir.path(), &log).unwrap();
        let back = load(dir.path()).unwrap().unwrap();
        assert_eq!(back.culprit.as_deref(), Some("B"));
        assert_eq!(back, log);
        assert!(load(&dir.path().join("none")).unwrap().is_none());
    }

    #[test]
    fn a_log_out_of_bounds_is_refused_on_load() {
        let dir = tempfile::tempdir().unwrap();
        let fd = crate::results::safe::open_dir(dir.path()).unwrap();
        let mut log = sample();
        log.steps[0].candidate = 9;
        store(&fd, dir.path(), &log).unwrap();
        let e = load(dir.path()).unwrap_err().to_string();
        assert!(e.contains("steps[0].candidate"), "{e}");
        // A step's profile entry longer than the log keeps (someone else's bytes).
        let mut log = sample();
        let shift = crate::bisect::step_profile::FunctionShift { function: "f".into(), change_pp: 1.0, p: 0.01 };
        let diff = crate::bisect::step_profile::StepProfileDiff {
            cell: "c".into(),
            judged: "across_pairs".into(),
            pairs: 8,
            samples: [1, 1],
            beyond: [6, 0],
            grown: vec![shift; crate::bisect::step_profile::LOG_TOP + 1],
            shrunk: Vec::new(),
        };
        log.steps[0].measure.profile =
            Some(crate::bisect::step_profile::StepProfile { profiled: true, why_not: None, diffs: vec![diff] });
        store(&fd, dir.path(), &log).unwrap();
        let e = load(dir.path()).unwrap_err().to_string();
        assert!(e.contains("steps[0].measure.profile.diffs[0]"), "{e}");
        let mut log = sample();
        log.candidates.truncate(1);
        store(&fd, dir.path(), &log).unwrap();
        assert!(load(dir.path()).unwrap_err().to_string().contains("candidates"));
    }
}
