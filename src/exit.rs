//! Process exit codes, each with one meaning.

/// Everything ran and nothing failed (skipped cells are not failures).
pub const SUCCESS: i32 = 0;
/// The command ran but something failed: a cell failed, a gate found a regression.
pub const FAILURE: i32 = 1;
/// Bad usage or bad input: unknown option, malformed scenario, unreadable result file.
pub const USAGE: i32 = 2;
/// Interrupted by SIGINT or SIGTERM (after cleaning up), as shells report it.
pub const INTERRUPTED: i32 = 130;

/// An error in what the user gave us (a file, an option, a result directory):
/// reported without a backtrace and mapped to [`USAGE`].
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InputError(pub String);

impl InputError {
    /// Wrap a message as an input error inside `anyhow`.
    pub fn anyhow(msg: impl Into<String>) -> anyhow::Error {
        anyhow::Error::new(InputError(msg.into()))
    }
}
