//! The result store's errors, each naming the file it is about.

use std::path::{Path, PathBuf};

use super::RUN_FILE;

/// Errors of the result store; each names the file it is about.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    /// A file or directory could not be read, written, created or renamed.
    #[error("{path}: {what}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What was being done (`create run directory`, `rename`).
        what: &'static str,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A directory given as a run has no `run.json`.
    #[error("{dir}: not a run directory (no {RUN_FILE}); expected results/<scenario>/<run-id>/")]
    NotARun {
        /// The directory.
        dir: PathBuf,
    },
    /// A JSON file does not match the result format.
    #[error("{path}: {field}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Dotted path of the offending field (`params.tasks`), or `.` for the whole document.
        field: String,
        /// What is wrong, in serde's words.
        message: String,
    },
    /// A file written by a newer fsbench.
    #[error(
        "{path}: schema: result format version {found} is newer than this fsbench reads (up to {supported}); upgrade fsbench"
    )]
    NewerSchema {
        /// The file.
        path: PathBuf,
        /// Version found in the file.
        found: u64,
        /// Newest version this build reads.
        supported: u32,
    },
    /// A cell id that cannot be used as a file name.
    #[error("cell id `{0}` is not a safe file name")]
    BadCellId(String),
    /// A value could not be turned into JSON (a NaN is fine; this is a bug).
    #[error("{0}: could not serialize: {1}")]
    Serialize(PathBuf, serde_json::Error),
}

/// A [`ResultsError::Io`] about `path`.
pub(super) fn io(path: &Path, what: &'static str, source: std::io::Error) -> ResultsError {
    ResultsError::Io { path: path.to_path_buf(), what, source }
}
