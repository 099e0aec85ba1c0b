//! A steps cell's part of the run: its archive staged where the steps expect it, the
//! steps run (one copy, or one per task), and the run's archive scratch removed at its end.

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::progress::Phase;
use super::{RunContext, interrupted};
use crate::provision;
use crate::scenario::ArchiveSpec;
use crate::workload::steps;
use crate::workload::untar::{ARCHIVE_STAGING_DIR, Trust, UnpackLimits};

/// Where a steps cell runs: its filesystem's root, and with `tasks > 1` one directory per copy.
pub(super) struct StepsAt<'a> {
    pub target: &'a Path,
    pub task_dirs: &'a [PathBuf],
    pub tasks: u32,
    /// The cell has a cgroup: even one copy runs as a worker process, which joins it.
    pub in_cgroup: bool,
}

/// Run a steps cell's steps with its archive staged: one copy in this process, or with
/// `tasks > 1` one process per copy, all at once. A cell with a cgroup runs even its one
/// copy as a process, so that the group limits the copy and not fsbench.
pub(super) fn run_steps(
    ctx: &mut RunContext,
    spec: &crate::scenario::StepsSpec,
    at: &StepsAt,
    watch: Option<&crate::monitor::Watch>,
    phase: &Phase,
) -> anyhow::Result<crate::model::StepsResult> {
    // A generated fixture comes from our own generator; a real archive is trusted only
    // when it is the user's own, not when it arrived in a bundle.
    let from_bundle = ctx.untrusted_archives
        && matches!(ctx.scenario.archive.as_ref().map(|a| &a.source), Some(crate::scenario::ArchiveSource::Path(_)));
    let (target, task_dirs) = (at.target, at.task_dirs);
    if at.tasks > 1 || at.in_cgroup {
        // N copies at once, each in its own directory (S) or filesystem (M), each with its
        // own tarball on it when the archive lives on the filesystem under test.
        let mut archive_dirs = Vec::with_capacity(task_dirs.len());
        for d in task_dirs {
            archive_dirs.push(match ctx.scenario.archive.clone() {
                Some(a) => stage_archive(ctx, &a, d, from_bundle)?,
                None => d.clone(),
            });
        }
        let run = crate::workload::steps::tasks::TasksRun {
            spec,
            targets: task_dirs,
            archive_dirs: &archive_dirs,
            untrusted: from_bundle,
            exe: &ctx.exe,
            watch,
        };
        // Each copy is a process of its own; progress says how many run, not their steps.
        phase(&if at.tasks > 1 {
            format!("{} copies at once, {} iterations each", at.tasks, spec.iterations)
        } else {
            format!("one copy in the cell's cgroup, {} iterations", spec.iterations)
        });
        let mut res = crate::workload::steps::tasks::run(&run).map_err(anyhow::Error::new)?;
        // One copy in a worker (the cell's cgroup) is the cell itself: stored as an
        // in-process copy is, with its own timings and counters and no list of copies.
        if at.tasks <= 1
            && let [copy] = res.copies.as_mut_slice()
        {
            res.iterations = std::mem::take(&mut copy.iterations);
            res.copies.clear();
        }
        return Ok(res);
    }
    let archive_dir = match &ctx.scenario.archive {
        Some(a) => Some(stage_archive(ctx, a, target, from_bundle)?),
        None => None,
    };
    let cancel = || interrupted();
    let trust = if from_bundle { Trust::Untrusted(UnpackLimits::default()) } else { Trust::Own };
    let run = steps::StepsRun {
        spec,
        target,
        archive_dir: archive_dir.as_deref().unwrap_or(target),
        cancel: &cancel,
        trust: &trust,
        run_root: std::process::id(),
    };
    steps::run_monitored(&run, watch, &|i, n, label| phase(&format!("iteration {i}/{n}: {label}")))
        .map_err(anyhow::Error::new)
}

/// Resolve the scenario's archive (generating it once per run into the cache) and
/// put it where the steps expect it: on the filesystem under test when `on_target`.
/// An archive from a bundle (`untrusted`) goes there into [`ARCHIVE_STAGING_DIR`], a
/// directory its entries may not name, so no entry can replace what the next
/// iteration reads; the user's own archive sits at the top, as the seed's tarball did.
fn stage_archive(ctx: &mut RunContext, a: &ArchiveSpec, target: &Path, untrusted: bool) -> anyhow::Result<PathBuf> {
    let source = match &ctx.archive {
        Some(p) => p.clone(),
        None => {
            let cache = crate::fixture::cache_dir();
            // A user's own tarball is used where it is: nothing is prepared or cached for it.
            if let crate::scenario::ArchiveSource::Generate { .. } = &a.source {
                std::fs::create_dir_all(&cache)
                    .with_context(|| format!("cannot create fixture cache {}", cache.display()))?;
                eprintln!("fsbench: preparing archive {} (cached in {})", a.file_name, cache.display());
            }
            let p = crate::fixture::cached_archive(&a.source, &cache).context("cannot prepare the archive")?;
            ctx.archive = Some(p.clone());
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
        let dir = provision::workroot::journaled_scratch(&ctx.workdir, provision::workroot::ARCHIVE_SCRATCH)?;
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
