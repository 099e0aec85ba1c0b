//! What `run` and `bundle run` share on their command lines: where the results and the
//! mounts go, the run's label, and how it reports (`--quiet`, `--strict`, `--json`). One group of
//! flags, flattened into both.

use std::path::PathBuf;

use clap::Args;

/// `--out`, `--label`, `--workdir`, `--quiet`, `--strict` and `--json`.
#[derive(Debug, Clone, Args)]
pub struct RunOptions {
    /// Results root: the run goes to `<out>/<scenario>/<run-id>/`.
    #[arg(long, default_value = "results", value_name = "DIR")]
    pub out: PathBuf,
    /// Label for this run, e.g. the kernel under test (`BASE`, `V3`); used by compare.
    #[arg(long, value_name = "NAME")]
    pub label: Option<String>,
    /// Where fsbench mounts its tmpfs and filesystems (default: `/tmp/fsbench`, or
    /// `/tmp/fsbench-<uid>` for other users). Must be owned by you and not writable by others.
    #[arg(long, value_name = "DIR")]
    pub workdir: Option<PathBuf>,
    /// No progress display, only the final tables.
    #[arg(long, short)]
    pub quiet: bool,
    /// For CI: exit 1 when any cell was skipped (a missing mkfs tool, a kernel without the fs)
    /// or has no statistics (every repetition disturbed).
    #[arg(long)]
    pub strict: bool,
    /// Print one JSON document (`schemas/run-outcome.schema.json`) on stdout instead of the
    /// tables: each run directory written, its report, whether it was interrupted and the
    /// exit code, so a CI script need not read the directory from stderr.
    #[arg(long)]
    pub json: bool,
}

impl RunOptions {
    /// Refuse an `--out` or `--workdir` that cannot be a directory, or a bad `--label`,
    /// before anything runs.
    pub fn check(&self) -> anyhow::Result<()> {
        super::checks::check_output_dir("--out", &self.out)?;
        if let Some(w) = &self.workdir {
            super::checks::check_output_dir("--workdir", w)?;
        }
        if let Some(l) = &self.label {
            super::checks::check_label("--label", l)?;
        }
        Ok(())
    }

    /// The work root: `--workdir`, or the default for this user.
    pub fn workroot(&self) -> PathBuf {
        self.workdir.clone().unwrap_or_else(crate::provision::workroot::default_workdir)
    }
}
