//! Checks of output paths and labels that commands make before any work starts.

use std::path::Path;

use crate::exit::InputError;

/// Check an output file option before any work: a file path in an existing directory.
/// Failing late would waste the work and report a usage error as a failure.
pub fn check_output_file(opt: &str, path: &Path) -> anyhow::Result<()> {
    let parent = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if path.is_dir() || !parent.is_dir() {
        return Err(InputError::anyhow(format!("{opt} {}: not a file path in an existing directory", path.display())));
    }
    Ok(())
}

/// Check an output directory option before any work: a directory, or a path that can become one.
pub fn check_output_dir(opt: &str, path: &Path) -> anyhow::Result<()> {
    if let Some(existing) = path.ancestors().find(|a| a.exists())
        && !existing.is_dir()
    {
        return Err(InputError::anyhow(format!("{opt} {}: {} is not a directory", path.display(), existing.display())));
    }
    Ok(())
}

/// Check a `--label`: labels become column names and directory names.
pub fn check_label(what: &str, label: &str) -> anyhow::Result<()> {
    if crate::model::is_valid_label(label) {
        return Ok(());
    }
    Err(InputError::anyhow(format!("{what} `{label}`: use {}", crate::model::LABEL_RULE)))
}
