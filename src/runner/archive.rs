//! The scenario's `[archive]` staged where a cell's workload reads it (a workload asks
//! through [`crate::workload::kind::CellRun::stage_archive`]), and the run's archive
//! scratch removed at its end.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::provision;
use crate::scenario::ArchiveSpec;
use crate::workload::untar::ARCHIVE_STAGING_DIR;

/// Resolve the scenario's archive (generating it once per run into the cache) and
/// put it where the steps expect it: on the filesystem under test when `on_target`.
/// An archive from a bundle (`untrusted`) goes there into [`ARCHIVE_STAGING_DIR`], a
/// directory its entries may not name, so no entry can replace what the next
/// iteration reads; the user's own archive sits at the top, as the seed's tarball did.
/// `cache` holds the archive once resolved, for the run's later cells; `workdir` is the run's.
pub(super) fn stage_archive(
    cache: &mut Option<PathBuf>,
    workdir: &Path,
    a: &ArchiveSpec,
    target: &Path,
    untrusted: bool,
) -> anyhow::Result<PathBuf> {
    let source = match cache {
        Some(p) => p.clone(),
        None => {
            let dir = crate::fixture::cache_dir();
            // A user's own tarball is used where it is: nothing is prepared or cached for it.
            if let crate::scenario::ArchiveSource::Generate { .. } = &a.source {
                std::fs::create_dir_all(&dir)
                    .with_context(|| format!("cannot create fixture cache {}", dir.display()))?;
                eprintln!("fsbench: preparing archive {} (cached in {})", a.file_name, dir.display());
            }
            let p = crate::fixture::cached_archive(&a.source, &dir).context("cannot prepare the archive")?;
            *cache = Some(p.clone());
            p
        }
    };
    if a.on_target {
        // Untimed, before the first iteration: the seed's tarball lived on the filesystem under test.
        let dir = if untrusted {
            // Made here on a fresh filesystem (or task directory): a directory, not a link.
            let dir = target.join(ARCHIVE_STAGING_DIR);
            std::fs::create_dir(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
            dir
        } else {
            target.to_path_buf()
        };
        let dest = dir.join(&a.file_name);
        std::fs::copy(&source, &dest)
            .with_context(|| format!("cannot copy {} onto the filesystem under test", source.display()))?;
        Ok(dir)
    } else {
        // Scratch of this run, under its journaled work directory: removed at the end of
        // the run ([`release_scratch`]) and by stale cleanup after a kill.
        let dir = provision::workroot::journaled_scratch(workdir, provision::workroot::ARCHIVE_SCRATCH)?;
        let dest = dir.join(&a.file_name);
        if !dest.exists() {
            std::fs::copy(&source, &dest).with_context(|| format!("cannot copy {}", source.display()))?;
        }
        Ok(dir)
    }
}

/// Remove what the run put in its work directory besides filesystems (they are torn down
/// per cell): the off-target archive copy.
pub(super) fn release_scratch(workdir: &Path) {
    let archive = workdir.join(provision::workroot::ARCHIVE_SCRATCH);
    if std::fs::symlink_metadata(&archive).is_ok_and(|m| m.is_dir())
        && let Err(e) = std::fs::remove_dir_all(&archive)
    {
        eprintln!("fsbench: cannot remove the archive copy {}: {e}", archive.display());
    }
}
