//! Whether a directory is private to the user running fsbench: the one rule that
//! both the work root's set-up and the journal's stale-run cleanup rely on. The rule is
//! [`crate::beneath::ours`]'s (checked on the directory's fd); the words of the refusal,
//! and how to fix it with `--workdir`, are the work root's.

use std::os::fd::OwnedFd;
use std::path::Path;

use super::ProvisionError;
use crate::beneath::ours::{NotOurs, Rule, open_ours};

/// Open `path` if it is a directory (not a symlink) owned by the effective uid and not
/// writable by group or others, else refuse it saying why and how to fix it.
pub fn check_private_dir(path: &Path, what: &str) -> Result<OwnedFd, ProvisionError> {
    open_ours(path, Rule::Private).map_err(|e| refusal(e, path, what))
}

/// The work root's words for what [`crate::beneath::ours`] found.
fn refusal(e: NotOurs, path: &Path, what: &str) -> ProvisionError {
    let refuse = |reason: String| ProvisionError::UnsafeWorkDir { path: path.to_path_buf(), reason };
    match e {
        NotOurs::Io(e) => ProvisionError::io(&format!("inspect {what}"), path, e),
        NotOurs::Link => refuse(format!("the {what} is a symbolic link; pass the real directory to --workdir")),
        NotOurs::NotDirectory => refuse(format!("the {what} is not a directory; remove it or pass another --workdir")),
        NotOurs::Owner { uid, euid, .. } => refuse(format!(
            "the {what} is owned by uid {uid}, not by uid {euid} that runs fsbench (another user may have created it); \
             remove it (rm -rf {}) or pass --workdir with a directory of your own",
            path.display()
        )),
        NotOurs::Writable { mode, sticky, .. } => {
            let private = path.join("fsbench-work");
            let make_private =
                format!("`mkdir -m 700 {}` and pass `--workdir {}`", private.display(), private.display());
            // A sticky directory (like /tmp) is shared on purpose: taking its write bits
            // away would break the machine for everybody else, so only a private
            // directory inside it is a fix.
            let fix = if sticky {
                format!(
                    "it is a shared directory (sticky, like /tmp): do not change its mode; make a private one: {make_private}"
                )
            } else {
                format!(
                    "run `chmod go-w {}` (0700 is best) if it is yours alone, or make a private one: {make_private}",
                    path.display()
                )
            };
            refuse(format!("the {what} has mode {mode:04o}: writable by group or others; {fix}"))
        }
    }
}
