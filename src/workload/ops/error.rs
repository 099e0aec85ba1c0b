//! What can go wrong while an op mix builds its filesets or runs.

use std::io;

/// An op-mix failure: it names the op, the worker and the file (relative to the cell).
#[derive(Debug, thiserror::Error)]
pub enum OpsError {
    /// Building a fileset failed.
    #[error("building fileset `{fileset}`: {what} {path}: {source}")]
    Build {
        /// The fileset.
        fileset: String,
        /// What was being done (`mkdir`, `create`, `write`, ...).
        what: &'static str,
        /// Path relative to the cell's directory.
        path: String,
        /// The system's answer.
        source: io::Error,
    },
    /// An op failed during the timed window (ENOSPC, EMFILE, ...).
    #[error("op `{op}` of worker {worker} on {path}: {source}")]
    Op {
        /// The op's name.
        op: &'static str,
        /// The worker (`group#index`).
        worker: String,
        /// Path relative to the cell's directory.
        path: String,
        /// The system's answer.
        source: io::Error,
    },
    /// Holding every directory of the filesets open needs more fds than the limit allows.
    #[error(
        "the filesets have {need} directories, but the open-file limit (RLIMIT_NOFILE) is {limit}: \
         raise the hard limit (ulimit -Hn) or use a wider dir_width"
    )]
    TooManyDirs {
        /// Directories plus the workers' slots.
        need: u64,
        /// The limit in effect.
        limit: u64,
    },
    /// A worker thread could not be started or died.
    #[error("worker {worker}: {message}")]
    Worker {
        /// The worker.
        worker: String,
        /// What happened.
        message: String,
    },
    /// Interrupted (a signal asked fsbench to stop).
    #[error("interrupted")]
    Interrupted,
}
