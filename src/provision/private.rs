//! Whether a directory is private to the user running fsbench: the one rule that
//! both the work root's set-up and the journal's stale-run cleanup rely on.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::ProvisionError;

/// Refuse `path` unless it is a directory (not a symlink) owned by the
/// effective uid and not writable by group or others.
pub fn check_private_dir(path: &Path, what: &str) -> Result<(), ProvisionError> {
    let m = std::fs::symlink_metadata(path).map_err(|e| ProvisionError::io(&format!("inspect {what}"), path, e))?;
    let euid = nix::unistd::geteuid().as_raw();
    let refuse = |reason: String| ProvisionError::UnsafeWorkDir { path: path.to_path_buf(), reason };
    if m.file_type().is_symlink() {
        return Err(refuse(format!("the {what} is a symbolic link; pass the real directory to --workdir")));
    }
    if !m.is_dir() {
        return Err(refuse(format!("the {what} is not a directory; remove it or pass another --workdir")));
    }
    if m.uid() != euid {
        return Err(refuse(format!(
            "the {what} is owned by uid {}, not by uid {euid} that runs fsbench (another user may have created it); \
             remove it (rm -rf {}) or pass --workdir with a directory of your own",
            m.uid(),
            path.display()
        )));
    }
    if m.mode() & 0o022 != 0 {
        let private = path.join("fsbench-work");
        let make_private = format!("`mkdir -m 700 {}` and pass `--workdir {}`", private.display(), private.display());
        // A sticky directory (like /tmp) is shared on purpose: taking its write bits
        // away would break the machine for everybody else, so only a private
        // directory inside it is a fix.
        let fix = if m.mode() & 0o1000 != 0 {
            format!(
                "it is a shared directory (sticky, like /tmp): do not change its mode; make a private one: {make_private}"
            )
        } else {
            format!(
                "run `chmod go-w {}` (0700 is best) if it is yours alone, or make a private one: {make_private}",
                path.display()
            )
        };
        return Err(refuse(format!(
            "the {what} has mode {:04o}: writable by group or others; {fix}",
            m.mode() & 0o7777
        )));
    }
    Ok(())
}
