//! Importing another lab's run (unpacked from a bundle) into a results root, through the
//! same fd-relative writer as a run of our own.

use std::path::{Path, PathBuf};

use super::error::io;
use super::load::{cell_file_names, load_unescaped};
use super::run_dir::{RunDir, remove_half_made};
use super::{CELLS_DIR, Derived, IMPORTED_MARKER, RUN_FILE, ResultsError, safe};
use crate::beneath::open_file;

/// Where an import went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Imported {
    /// The run was written to this new run directory.
    Written(PathBuf),
    /// A run directory of that name was there already (of this user's): left as it was.
    AlreadyThere(PathBuf),
}

impl Imported {
    /// The run directory.
    pub fn dir(&self) -> &Path {
        match self {
            Imported::Written(d) | Imported::AlreadyThere(d) => d,
        }
    }
}

/// Copy the run directory `src` to `<out_root>/<scenario>/<run-id>/` (names from its
/// `run.json`, which the caller checked to be plain names), marked as `from` in its
/// `run.json` so that it is never resumed.
///
/// `<out_root>/<scenario>` is made or checked (a real directory of this user's) and the
/// run directory made with mkdirat before anything is written; every file is then
/// created beneath those fds (`O_CREAT|O_EXCL|O_NOFOLLOW` under a temporary name,
/// renamed into place), so a link or a swapped directory under `--out` is never written
/// through. Cell files are copied byte for byte; `run.json` is written last, so an
/// import cut short is no run.
pub fn import_run(src: &Path, out_root: &Path, from: Derived) -> Result<Imported, ResultsError> {
    let src_fd = safe::open_dir(src).map_err(|e| io(src, "open run directory", e))?;
    let run = load_unescaped(&src_fd, src)?;
    let (scenario, run_id) = (&run.meta.scenario_name, &run.meta.run_id);
    let Some(made) = RunDir::make_named(out_root, scenario, run_id)? else {
        return Ok(Imported::AlreadyThere(out_root.join(scenario).join(run_id)));
    };
    let written = copy_into(&src_fd, src, &made, from, run.meta);
    if let Err(e) = written {
        remove_half_made(&made.parent_fd, &made.run_id);
        return Err(e);
    }
    Ok(Imported::Written(made.dir))
}

fn copy_into(
    src_fd: &std::os::fd::OwnedFd,
    src: &Path,
    made: &RunDir,
    from: Derived,
    mut meta: super::RunMeta,
) -> Result<(), ResultsError> {
    let src_cells = src.join(CELLS_DIR);
    match safe::open_subdir(src_fd, CELLS_DIR) {
        Ok(cells_fd) => {
            let names = cell_file_names(&cells_fd).map_err(|e| io(&src_cells, "read cells directory", e))?;
            for name in names {
                let path = src_cells.join(&name);
                let Some(f) = open_file(&cells_fd, &name).map_err(|e| io(&path, "read", e))? else { continue };
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(&mut std::io::Read::take(f, super::bounds::MAX_FILE_BYTES + 1), &mut bytes)
                    .map_err(|e| io(&path, "read", e))?;
                let to = made.dir.join(CELLS_DIR).join(&name);
                safe::write_at(&made.cells_fd, &name, &bytes).map_err(|e| io(&to, "write", e))?;
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(&src_cells, "read cells directory", e)),
    }
    // For an fsbench that predates `derived` in run.json.
    let marker = made.dir.join(IMPORTED_MARKER);
    safe::write_at(
        &made.dir_fd,
        IMPORTED_MARKER,
        b"imported by fsbench bundle run; rerun it with `fsbench bundle run`\n",
    )
    .map_err(|e| io(&marker, "write", e))?;
    meta.derived = Some(from);
    let path = made.dir.join(RUN_FILE);
    let bytes = serde_json::to_vec_pretty(&meta).map_err(|e| ResultsError::Serialize(path.clone(), e))?;
    safe::write_at(&made.dir_fd, RUN_FILE, &bytes).map_err(|e| io(&path, "write", e))
}
