//! Reopening an interrupted run: what it already stored, and the checks that it is ours to run
//! (made on the directory opened once, see [`results::ResumableRun`]).

use std::path::{Path, PathBuf};

use super::Resumed;
use crate::exit;
use crate::plan::Cell;
use crate::results::{self, ResumableRun, RunWriter};
use crate::scenario::Scenario;

/// Open `dir` for `--resume` once, check it is ours to execute, and load it from that
/// fd ([`results::ResumableRun::open`]): what is checked is what [`open_resumed`] runs.
pub fn check_resumable(dir: &Path) -> anyhow::Result<ResumableRun> {
    ResumableRun::open(dir).map_err(|e| exit::InputError::anyhow(e.to_string()))
}

/// A run recorded on another host is somebody else's scenario: its `exec` steps run only
/// with `--allow-exec`, as a bundle's do.
fn refuse_foreign_exec(dir: &Path, s: &Scenario, recorded_on: &str, allow_exec: bool) -> anyhow::Result<()> {
    let exec = crate::workload::kind::of(&s.workload).commands();
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

/// Re-open an interrupted run, checked by [`check_resumable`]: its scenario text (with
/// overrides) and planned cells are in its run.json.
pub fn open_resumed(run: ResumableRun, allow_exec: bool) -> anyhow::Result<(Scenario, Vec<Cell>, Resumed)> {
    let dir = run.dir().to_path_buf();
    let (writer, meta, stored) = RunWriter::resume(run)
        .map_err(|e| exit::InputError::anyhow(format!("cannot resume {}: {e}", dir.display())))?;
    let base = Path::new(&meta.scenario_origin)
        .parent()
        .filter(|p| p.is_dir())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let s = crate::scenario::parse_overridden(&meta.scenario_text, &meta.scenario_origin, &base, &[])?;
    refuse_foreign_exec(&dir, &s, &meta.host.hostname, allow_exec)?;
    let cells =
        meta.planned_cells.iter().enumerate().map(|(index, params)| Cell { index, params: params.clone() }).collect();
    Ok((s, cells, Resumed { writer, stored }))
}
