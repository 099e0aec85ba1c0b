//! The footer of every report: cells without a result (skipped, disturbed, failed,
//! missing) grouped by reason, and result files that could not be read.

use serde::Serialize;

use crate::model::CellStatus;
use crate::results::LoadedRun;

/// A cell that has no number: skipped, failed, or planned but never stored.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct NotMeasured {
    /// Run label.
    pub label: String,
    /// Cell id.
    pub id: String,
    /// `skipped`, `disturbed` (every repetition), `failed`, or `missing` (planned, no result file).
    pub status: String,
    /// Why, as the cell file or the run says it.
    pub reason: String,
    /// What would let the cell run, when the skip says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remedy: Option<String>,
}

/// The cells of `runs` without a number, then the planned cells without a result file.
pub(super) fn not_measured(runs: &[(&str, &LoadedRun)]) -> Vec<NotMeasured> {
    let mut out = Vec::new();
    for (label, run) in runs {
        for c in &run.cells {
            if c.status == CellStatus::Ok {
                continue;
            }
            let (status, reason) = match c.status {
                CellStatus::Skipped => ("skipped", c.skip.as_ref().map(|s| s.reason.clone()).unwrap_or_default()),
                CellStatus::Disturbed => {
                    ("disturbed", c.notes.last().cloned().unwrap_or_else(|| "every repetition was disturbed".into()))
                }
                _ => (
                    "failed",
                    c.error.clone().or_else(|| c.skip.as_ref().map(|s| s.reason.clone())).unwrap_or_default(),
                ),
            };
            out.push(NotMeasured {
                label: label.to_string(),
                id: c.id.clone(),
                status: status.into(),
                reason,
                remedy: c.skip.as_ref().and_then(|s| s.remedy.clone()),
            });
        }
        let stored: std::collections::HashSet<&str> = run.cells.iter().map(|c| c.id.as_str()).collect();
        for p in &run.meta.planned_cells {
            let id = p.id();
            if !stored.contains(id.as_str()) {
                out.push(NotMeasured {
                    label: label.to_string(),
                    id,
                    status: "missing".into(),
                    // A merged or imported run is never resumed: its missing cells stay missing there.
                    reason: match &run.meta.derived {
                        Some(d) => format!("no result file (the run was {})", d.kind),
                        None if run.meta.finished.is_none() || run.meta.interrupted => format!(
                            "run did not finish; `fsbench run --resume {}` runs what is missing",
                            run.dir.display()
                        ),
                        None => "no result file".into(),
                    },
                    remedy: None,
                });
            }
        }
    }
    out
}

/// Cells without a result and unreadable result files, as indented lines; empty when there are none.
pub(super) fn text_footer(nm: &[NotMeasured], problems: &[String]) -> String {
    let mut out = String::new();
    if !nm.is_empty() {
        // One entry per distinct reason: 64 quota cells skipped for one kernel limitation
        // are one fact, not 64.
        type Group<'a> = (String, &'a str, &'a str, Option<&'a String>, Vec<&'a str>);
        let mut groups: Vec<Group> = Vec::new();
        for n in nm {
            let key = (n.label.as_str(), n.status.as_str(), n.reason.as_str());
            match groups.iter_mut().find(|g| (g.0.as_str(), g.1, g.2) == key) {
                Some(g) => g.4.push(&n.id),
                None => {
                    groups.push((n.label.clone(), n.status.as_str(), n.reason.as_str(), n.remedy.as_ref(), vec![&n.id]))
                }
            }
        }
        out.push_str(&format!("Cells without a result ({}):\n", nm.len()));
        for (label, status, reason, remedy, ids) in groups {
            let cells = if ids.len() <= 3 {
                ids.join(", ")
            } else {
                format!("{}, ... ({} cells)", ids[..2].join(", "), ids.len())
            };
            out.push_str(&format!("  {label} {status}: {reason}\n    cells: {cells}\n"));
            if let Some(r) = remedy {
                out.push_str(&format!("    remedy: {r}\n"));
            }
        }
        out.push('\n');
    }
    if !problems.is_empty() {
        out.push_str(&format!("Unreadable result files ({}):\n", problems.len()));
        for p in problems {
            out.push_str(&format!("  {p}\n"));
        }
    }
    out
}
