//! Writing and reading `calibration.json` through the result store: written atomically
//! beneath the scenario directory's fd, read like a result file (no link followed, size
//! capped, strings escaped, version checked, every number bounded) and refused when
//! another user could have written it.

use std::path::{Path, PathBuf};

use super::{CALIBRATION_FILE, CALIBRATION_SCHEMA_VERSION, Calibration};
use crate::results::bounds::{MAX_CELLS, MAX_SAMPLES, MAX_VALUE, Violation};
use crate::results::{BoundedFile, ResultsError};
use crate::stats::variance_components::LevelVariance;

/// The largest variance of a log value a calibration may hold: e² ≈ 7.4 as a factor of one
/// standard deviation is already far beyond any real measurement.
pub const MAX_LOG_VARIANCE: f64 = 4.0;

/// Write `c` as `<out_root>/<scenario>/calibration.json`, replacing an older one; its path.
pub fn write(out_root: &Path, c: &Calibration) -> Result<PathBuf, ResultsError> {
    let text = serde_json::to_string_pretty(c).expect("a calibration serializes") + "\n";
    crate::results::write_beside_runs(out_root, &c.scenario, CALIBRATION_FILE, text.as_bytes())
}

/// Read `<scenario_dir>/calibration.json`: `Ok(None)` when there is none, `Err` (naming the
/// file and the field) when it is unusable.
pub fn load(scenario_dir: &Path) -> Result<Option<Calibration>, ResultsError> {
    crate::results::read_beside_runs(scenario_dir, CALIBRATION_FILE)
}

fn level(field: &str, l: &LevelVariance) -> Result<(), Violation> {
    if !(l.variance.is_finite() && (0.0..=MAX_LOG_VARIANCE).contains(&l.variance)) {
        return Err((
            format!("{field}.variance"),
            format!("{} is not a variance of a log value (finite, 0 to {MAX_LOG_VARIANCE})", l.variance),
        ));
    }
    if l.n > MAX_SAMPLES * 1000 || l.df > l.n {
        return Err((format!("{field}.df"), format!("{} degrees of freedom for {} units", l.df, l.n)));
    }
    Ok(())
}

impl BoundedFile for Calibration {
    const SUPPORTED_SCHEMA: u32 = CALIBRATION_SCHEMA_VERSION;

    fn bounds(&self) -> Result<(), Violation> {
        if self.cells.len() > MAX_CELLS {
            return Err(("cells".into(), format!("{} entries, more than {MAX_CELLS}", self.cells.len())));
        }
        if self.runs.len() > MAX_SAMPLES {
            return Err(("runs".into(), format!("{} entries, more than {MAX_SAMPLES}", self.runs.len())));
        }
        if crate::results::unix_from_rfc3339(&self.date).is_none() {
            return Err(("date".into(), "not an RFC 3339 UTC time (YYYY-MM-DDTHH:MM:SSZ)".into()));
        }
        for (i, c) in self.cells.iter().enumerate() {
            let at = format!("cells[{i}]");
            level(&format!("{at}.levels.repetition"), &c.levels.repetition)?;
            level(&format!("{at}.levels.round"), &c.levels.round)?;
            level(&format!("{at}.levels.run"), &c.levels.run)?;
            for (name, v) in [
                ("levels.mean", c.levels.mean),
                ("repetition_seconds", c.repetition_seconds),
                ("round_seconds", c.round_seconds),
            ] {
                if !v.is_finite() || v.abs() > MAX_VALUE || (name != "levels.mean" && v < 0.0) {
                    return Err((format!("{at}.{name}"), format!("{v} is not a plausible value")));
                }
            }
        }
        Ok(())
    }
}

/// The calibration a gate of `baseline` and `candidate` may use: the one beside the
/// baseline's runs, else beside the candidate's, when it holds for both runs' host and
/// dates ([`Calibration::usable_for`]) and scenario text ([`Calibration::holds_for_text`]). The lines say what was used or why one was ignored
/// (an unreadable or hostile file names itself); the gate then goes on without it.
pub fn find_for(
    baseline: &crate::results::LoadedRun,
    candidate: &crate::results::LoadedRun,
) -> (Option<Calibration>, Vec<String>) {
    let mut lines = Vec::new();
    let mut dirs: Vec<&Path> = Vec::new();
    for run in [baseline, candidate] {
        if let Some(d) = run.dir.parent()
            && !dirs.contains(&d)
        {
            dirs.push(d);
        }
    }
    let hosts = [
        (&baseline.meta.host, baseline.meta.started.as_str()),
        (&candidate.meta.host, candidate.meta.started.as_str()),
    ];
    let texts =
        [("baseline", baseline.meta.scenario_sha256.as_str()), ("candidate", candidate.meta.scenario_sha256.as_str())];
    for dir in dirs {
        let path = dir.join(CALIBRATION_FILE);
        match load(dir) {
            Ok(None) => {}
            Err(e) => lines.push(format!("ignoring the calibration: {e}")),
            Ok(Some(c)) => match c.usable_for(&hosts).and_then(|()| c.holds_for_text(&texts)) {
                Ok(()) => {
                    lines.push(format!(
                        "between-run spread of one-round comparisons from {} ({} runs, {})",
                        path.display(),
                        c.runs.len(),
                        c.date
                    ));
                    return (Some(c), lines);
                }
                Err(why) => lines.push(format!("ignoring {}: {why}", path.display())),
            },
        }
    }
    (None, lines)
}
