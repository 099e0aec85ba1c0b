//! A run's two directories: its results directory (new, or reopened on resume) and its
//! private work directory under the work root, where the cells' filesystems are mounted.
//! Opened together, so a run that cannot start leaves neither behind; closed at its end.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::RunTarget;
use crate::exit;
use crate::model::{CellParams, CellResult};
use crate::plan::Cell;
use crate::provision;
use crate::results::RunWriter;
use crate::scenario::{Backing, Scenario};

/// A scenario that formats a block device runs only with `--allow-device` naming that device.
pub(super) fn refuse_unconfirmed_device(scenario: &Scenario, allow_device: Option<&Path>) -> anyhow::Result<()> {
    if let Backing::Device { path } = &scenario.backing
        && allow_device != Some(path.as_path())
    {
        return Err(exit::InputError::anyhow(format!(
            "the scenario formats block device {}: pass `--allow-device {}` to confirm (this destroys its data)",
            path.display(),
            path.display()
        )));
    }
    Ok(())
}

/// The work root, checked, with whatever an earlier killed run left in it cleaned up.
pub(super) fn prepare_workroot(requested: &Path) -> anyhow::Result<PathBuf> {
    // Stale cleanup trusts what it finds here: refuse a root another user could write (exit 2),
    // and from here on use the path that was checked.
    let workroot = provision::prepare_work_root(requested).map_err(|e| match e {
        provision::ProvisionError::UnsafeWorkDir { .. } => exit::InputError::anyhow(e.to_string()),
        e => anyhow::Error::new(e).context("cannot prepare the work directory"),
    })?;
    provision::workroot::set_scratch_root(&workroot);
    for cleaned in provision::cleanup_stale(&workroot).context("cannot clean up after an earlier killed run")? {
        eprintln!("fsbench: cleaned up after an earlier run: {cleaned}");
    }
    Ok(workroot)
}

/// A run, opened: where its results go, what it already stored, and its work directory.
pub(super) struct Opened {
    /// Writes the cells' results and run.json.
    pub writer: RunWriter,
    /// Cells a resumed run already stored, by id (empty for a new run).
    pub stored: BTreeMap<String, CellResult>,
    /// The run's private work directory (checked, canonical, claimed).
    pub workdir: PathBuf,
}

/// Open the run's results directory (create it, or take the resumed one) and claim its work
/// directory `<workroot>/<run-id>`.
pub(super) fn open(target: RunTarget, scenario: &Scenario, cells: &[Cell], workroot: &Path) -> anyhow::Result<Opened> {
    let is_new = matches!(target, RunTarget::New { .. });
    let (writer, stored) = match target {
        RunTarget::Resumed(r) => (r.writer, r.stored),
        RunTarget::New { out, label, shard, tags } => {
            let planned: Vec<CellParams> = cells.iter().map(|c| c.params.clone()).collect();
            let mut writer = RunWriter::create_shard(&out, scenario, label.as_deref(), &planned, shard)
                .with_context(|| format!("cannot create a run directory under {}", out.display()))?;
            if !tags.is_empty()
                && let Err(e) = writer.record_tags(tags)
            {
                writer.abandon();
                return Err(anyhow::Error::new(e).context("cannot record --meta in run.json"));
            }
            (writer, Default::default())
        }
    };
    let run_id = writer.dir().file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "run".into());
    let workdir = workroot.join(&run_id);
    match claim(&workdir, scenario) {
        Ok(workdir) => Ok(Opened { writer, stored, workdir }),
        Err(e) => {
            // A run that could not start leaves no half-made run directory behind.
            if is_new {
                writer.abandon();
            }
            let _ = std::fs::remove_dir(workdir.join("dir"));
            provision::workroot::release_run_dir(&workdir);
            Err(e)
        }
    }
}

/// Make and claim the run's work directory; the checked, canonical path it is used by.
fn claim(workdir: &Path, scenario: &Scenario) -> anyhow::Result<PathBuf> {
    // Private (0700) and checked, then used by the checked, canonical path:
    // workers chdir into their task directories before they switch ids.
    let workdir = provision::workroot::prepare_run_dir(workdir)
        .map_err(|e| exit::InputError::anyhow(format!("cannot use the run's work directory: {e}")))?;
    // Claimed at once: a SIGKILL from here on leaves nothing stale cleanup misses.
    provision::workroot::claim_run_dir(&workdir)
        .map_err(|e| exit::InputError::anyhow(format!("cannot use the run's work directory: {e}")))?;
    if matches!(&scenario.backing, Backing::Dir { path } if path.as_os_str().is_empty()) {
        std::fs::create_dir_all(workdir.join("dir"))
            .with_context(|| format!("cannot create {}", workdir.join("dir").display()))?;
    }
    Ok(workdir)
}

/// Remove the run's scratch (an archive copy that did not go onto a target, the private
/// dir) and release its work directory.
pub(super) fn close(workdir: &Path) {
    super::archive::release_scratch(workdir);
    let _ = std::fs::remove_dir(workdir.join("dir"));
    provision::workroot::release_run_dir(workdir);
}
