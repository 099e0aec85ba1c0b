//! Whether runs may be compared, checked once per command.
//!
//! Compatibility rule (what is refused and what only warns):
//! - different workloads (lat_fs vs steps): refused;
//! - different scenario names: a warning; the texts decide, as below (a renamed copy of a
//!   scenario measures what the original does);
//! - the same label twice: refused (columns would be ambiguous);
//! - different scenario texts or archives: the texts are compared by meaning
//!   ([`crate::scenario::diff`]): every differing key is shown
//!   (`filesystems.ext4.mount: + "nodelalloc"`), archives are matched by sha256,
//!   and the comparison is refused only when the measured quantities differ
//!   (workload kind, the steps, no lat_fs test in common), saying why. Matrix
//!   axes may differ: only the cells both runs have are compared.
//! - per cell present in both runs: differing mount options or mkfs arguments
//!   (device paths removed) are shown.

use crate::results::LoadedRun;

/// Why runs cannot be compared.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// Fewer than two runs.
    #[error("compare needs at least two runs, got {0}")]
    TooFew(usize),
    /// Runs of different scenarios (no longer refused: kept so code that names it builds).
    #[error("runs are of different scenarios: {0}; compare runs of one scenario (results/<scenario>/...)")]
    ScenarioMismatch(String),
    /// lat_fs against steps.
    #[error("runs have different workloads: {0}")]
    WorkloadMismatch(String),
    /// Two runs with one label.
    #[error("label `{0}` is used twice; give each run its own label as LABEL=RUN_DIR")]
    DuplicateLabel(String),
    /// The scenario texts differ in something that changes what is measured.
    #[error("runs are not comparable: {0}")]
    Incompatible(String),
}

/// Check that runs may be compared; returns warnings (e.g. differing scenario texts).
pub fn check_compatible(runs: &[(String, LoadedRun)]) -> Result<Vec<String>, CompareError> {
    if runs.len() < 2 {
        return Err(CompareError::TooFew(runs.len()));
    }
    let mut seen = std::collections::HashSet::new();
    for (label, _) in runs {
        if !seen.insert(label.as_str()) {
            return Err(CompareError::DuplicateLabel(label.clone()));
        }
    }
    let (l0, r0) = &runs[0];
    let list = |f: &dyn Fn(&LoadedRun) -> String| {
        runs.iter().map(|(l, r)| format!("{l}: `{}`", f(r))).collect::<Vec<_>>().join(", ")
    };
    if runs.iter().any(|(_, r)| r.meta.workload != r0.meta.workload) {
        return Err(CompareError::WorkloadMismatch(list(&|r| r.meta.workload.to_string())));
    }
    let mut warnings = Vec::new();
    // Only different quantities refuse; the name alone does not (a renamed copy of a scenario).
    if runs.iter().any(|(_, r)| r.meta.scenario_name != r0.meta.scenario_name) {
        warnings.push(format!(
            "scenario names differ ({}); compared because they measure the same quantities",
            crate::text::escape_control(&list(&|r| r.meta.scenario_name.clone()))
        ));
    }
    for (label, run) in &runs[1..] {
        if run.meta.scenario_sha256 != r0.meta.scenario_sha256 || run.meta.archive != r0.meta.archive {
            warnings.push(format!(
                "scenario texts differ: {l0} (sha256 {}, {}) and {label} (sha256 {}, {})",
                short(&r0.meta.scenario_sha256),
                crate::text::escape_control(&r0.meta.scenario_origin),
                short(&run.meta.scenario_sha256),
                crate::text::escape_control(&run.meta.scenario_origin)
            ));
            let side = |label: &'_ str, r: &LoadedRun| -> (String, String, Option<String>) {
                (label.to_string(), r.meta.scenario_text.clone(), r.meta.archive.as_ref().map(|a| a.sha256.clone()))
            };
            let (a, b) = (side(l0, r0), side(label, run));
            let sides = [&a, &b].map(|(l, t, s)| crate::scenario::diff::Side {
                label: l,
                text: t,
                archive_sha256: s.as_deref(),
            });
            match crate::scenario::diff::compare(&sides[0], &sides[1]) {
                Ok(c) => {
                    for d in &c.differences {
                        warnings.push(format!("{l0} → {label}: {}", crate::text::escape_control(d)));
                    }
                    if let Some(why) = c.refusal {
                        return Err(CompareError::Incompatible(format!(
                            "{l0} and {label} did not measure the same quantities: {}",
                            crate::text::escape_control(&why)
                        )));
                    }
                }
                Err(e) => warnings.push(format!(
                    "could not compare the scenario texts as TOML ({}); only cell parameters were checked",
                    crate::text::escape_control(&e)
                )),
            }
        }
        warnings.extend(cell_differences(l0, r0, label, run));
        if let (Some(e0), Some(e1)) = (&r0.meta.environment, &run.meta.environment) {
            let d = crate::host::environment::Environment::differences(e0, e1);
            if !d.is_empty() {
                warnings.push(format!("environments differ between {l0} and {label}: {}", d.join("; ")));
            }
        }
    }
    Ok(warnings)
}

fn short(s: &str) -> &str {
    &s[..s.len().min(12)]
}

/// Per cell both runs hold: requested mount options and mkfs arguments that differ
/// (shown, not refused: they are conditions of the measurement, not the quantity).
fn cell_differences(l0: &str, r0: &LoadedRun, label: &str, run: &LoadedRun) -> Vec<String> {
    let by_id: std::collections::HashMap<&str, &crate::model::CellResult> =
        r0.cells.iter().map(|c| (c.id.as_str(), c)).collect();
    // Device and image paths differ between runs by nature; they are not parameters.
    let norm = |argv: &[String]| argv.iter().filter(|a| !a.starts_with('/')).cloned().collect::<Vec<_>>();
    let mut out = Vec::new();
    for c in &run.cells {
        let Some(c0) = by_id.get(c.id.as_str()) else { continue };
        for (f0, f1) in c0.filesystems.iter().zip(&c.filesystems) {
            if f0.mount_options_requested != f1.mount_options_requested {
                out.push(crate::text::escape_control(&format!(
                    "cell {}: mount options differ: {l0} {:?}, {label} {:?}",
                    c.id, f0.mount_options_requested, f1.mount_options_requested
                )));
            }
            if norm(&f0.mkfs_argv) != norm(&f1.mkfs_argv) {
                out.push(crate::text::escape_control(&format!(
                    "cell {}: mkfs arguments differ: {l0} {:?}, {label} {:?}",
                    c.id, f0.mkfs_argv, f1.mkfs_argv
                )));
            }
        }
    }
    out
}
