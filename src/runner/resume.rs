//! Reopening an interrupted run: what it already stored, and the checks that it is ours to run.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::Resumed;
use crate::exit;
use crate::model::CellStatus;
use crate::plan::Cell;
use crate::results::{self, RunWriter};
use crate::scenario::{Scenario, Workload};

/// If `dir` is a finished, uninterrupted run with every planned cell stored, the number of cells stored.
/// Checked before [`open_resumed`], which marks the run in progress again.
pub fn resume_is_complete(dir: &Path) -> anyhow::Result<Option<usize>> {
    refuse_imported(dir)?;
    let Ok(run) = results::load_run(dir) else { return Ok(None) };
    let stored: BTreeSet<&str> =
        run.cells.iter().filter(|c| c.status != CellStatus::Failed).map(|c| c.id.as_str()).collect();
    // An interrupted run may have every cell stored and still miss rounds (`workload.rounds`).
    let complete = run.meta.finished.is_some()
        && !run.meta.interrupted
        && run.meta.planned_cells.iter().all(|p| stored.contains(p.id().as_str()));
    Ok(complete.then_some(stored.len()))
}

/// Another lab's run came with a bundle: only `bundle run`, which applies the bundle's checks, reruns it.
/// And a run directory is executed on resume (its scenario text, `exec` steps included):
/// it must be ours and writable by nobody else.
fn refuse_imported(dir: &Path) -> anyhow::Result<()> {
    if dir.join(results::IMPORTED_MARKER).exists() {
        return Err(exit::InputError::anyhow(format!(
            "{} was imported from a bundle: rerun it with `fsbench bundle run`, which applies the bundle's checks",
            dir.display()
        )));
    }
    results::safe::resumable(dir)
        .map_err(|why| exit::InputError::anyhow(format!("refusing to resume {}: {why}", dir.display())))
}

/// A run recorded on another host is somebody else's scenario: its `exec` steps run only
/// with `--allow-exec`, as a bundle's do.
fn refuse_foreign_exec(dir: &Path, s: &Scenario, recorded_on: &str, allow_exec: bool) -> anyhow::Result<()> {
    let Workload::Steps(spec) = &s.workload else { return Ok(()) };
    let exec: Vec<String> =
        spec.steps.iter().filter(|st| matches!(st, crate::scenario::Step::Exec { .. })).map(|st| st.label()).collect();
    let here = results::HostInfo::detect().hostname;
    if exec.is_empty() || allow_exec || recorded_on == here {
        return Ok(());
    }
    Err(exit::InputError::anyhow(format!(
        "refusing to resume {}: it was recorded on host `{}`, not this one (`{}`), and its scenario runs commands here ({}); read its run.json and pass --allow-exec to allow",
        dir.display(),
        crate::text::escape_control(recorded_on),
        here,
        crate::text::escape_control(&exec.join("; "))
    )))
}

/// Re-open an interrupted run: its scenario text (with overrides) and planned cells are in run.json.
pub fn open_resumed(dir: &Path, allow_exec: bool) -> anyhow::Result<(Scenario, Vec<Cell>, Resumed)> {
    refuse_imported(dir)?;
    let (writer, meta, stored) = RunWriter::resume(dir)
        .map_err(|e| exit::InputError::anyhow(format!("cannot resume {}: {e}", dir.display())))?;
    let base = Path::new(&meta.scenario_origin)
        .parent()
        .filter(|p| p.is_dir())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let s = crate::scenario::parse_overridden(&meta.scenario_text, &meta.scenario_origin, &base, &[])?;
    refuse_foreign_exec(dir, &s, &meta.host.hostname, allow_exec)?;
    let cells =
        meta.planned_cells.iter().enumerate().map(|(index, params)| Cell { index, params: params.clone() }).collect();
    Ok((s, cells, Resumed { writer, stored }))
}
