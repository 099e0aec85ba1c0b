//! The options that change a scenario before it is expanded, shared by every command that
//! loads one (`run`, `plan`, `validate`, `bundle run`).

use std::path::PathBuf;

use clap::Args;

use crate::exit::InputError;

/// Options that change a scenario before it is expanded (run, plan, validate, bundle run).
#[derive(Debug, Clone, Args, Default)]
pub struct ScenarioOptions {
    /// Override a scenario value by its dotted TOML path, typed and validated like the file.
    ///
    /// Examples: `--set workload.duration=200ms`, `--set backing.kind=dir`,
    /// `--set 'matrix.tasks=[1,2]'`. May be repeated.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,
    /// Keep only cells whose axis values match: `--only fs=ext4,tasks=1`.
    ///
    /// Keys are axis names (fs, layout, quota, tasks, test). A value without a key
    /// is one more value of the key before it: `--only fs=xfs,btrfs,tasks=1` keeps
    /// xfs and btrfs cells with 1 task (`fs=xfs,fs=btrfs` says the same). Repeated
    /// `--only` options combine with AND.
    #[arg(long, value_name = "AXIS=VALUE[,VALUE..][,AXIS=..]")]
    pub only: Vec<String>,
    /// Unpack this real .tar.gz instead of the scenario's archive (`--set archive.path=FILE`,
    /// relative to the current directory; a generated archive's settings are dropped).
    #[arg(long, value_name = "FILE")]
    pub archive: Option<PathBuf>,
}

impl ScenarioOptions {
    /// The `--set` overrides, with `--archive FILE` as `archive.path=<absolute FILE>` last.
    pub fn overrides(&self) -> anyhow::Result<Vec<String>> {
        let mut out = self.set.clone();
        if let Some(a) = &self.archive {
            let abs =
                std::path::absolute(a).map_err(|e| InputError::anyhow(format!("--archive {}: {e}", a.display())))?;
            // A TOML string: quotes and backslashes in the path stay part of it.
            out.push(format!("archive.path={}", toml_edit::Value::from(abs.to_string_lossy().as_ref())));
        }
        Ok(out)
    }
}
