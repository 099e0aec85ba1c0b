//! The result store: `results/<scenario>/<run-id>/run.json` and one file per cell.
//!
//! Layout of a run directory:
//! ```text
//! <out>/<scenario>/<run-id>/run.json          RunMeta: provenance, plan, start/end
//! <out>/<scenario>/<run-id>/cells/<id>.json   one CellResult per finished cell
//! ```
//! Every file is written to a temporary name, fsynced and renamed over its final
//! name, so a crash or Ctrl-C leaves either the old file or the new one, never a
//! torn one; a run loses at most the cell in flight. Loading is forgiving per
//! cell (a bad cell file becomes a `problem`, the rest still loads) and strict
//! per run (no readable `run.json`, no run).
//!
//! Where each part lives: `write` makes a run directory and stores its files
//! ([`RunWriter`]), `load` reads one back ([`load_run`]), [`find`] turns names into
//! run directories and lists them, `run_dir` holds the directory's layout and its
//! making, `run_meta` what `run.json` holds, `reopen` the checks before a run is resumed
//! ([`ResumableRun`]), [`safe`] the fd-relative reads and writes beneath a run directory,
//! [`bounds`] the limits on numbers and counts read back.
//!
//! Every writer (a new run, a resumed one, a merge, a bundle's import) goes through
//! [`RunWriter`], and every reader opens the run directory once and reads beneath that fd.

pub mod bounds;
pub mod find;
pub mod safe;

mod error;
mod import;
mod load;
mod printable;
mod profile;
mod reopen;
mod run_dir;
mod run_meta;
mod time;
mod write;

pub use crate::host::identity::HostInfo;
pub use error::ResultsError;
pub use import::{Imported, import_run};
pub use load::{BoundedFile, LoadedRun, load_run, load_run_at, read_beside_runs};
pub use reopen::{ResumableRun, ResumeError};
pub use run_dir::{CELLS_DIR, IMPORTED_MARKER, RUN_FILE, write_beside_runs};
pub use run_meta::{ArchiveFacts, Derived, DerivedKind, MAX_RUN_KERNELS, RunKernel, RunMeta, RunOrder, RunShard};
pub use time::{now_rfc3339, rfc3339_from_unix, unix_from_rfc3339};
pub use write::{MAX_COUNTED_ENTRIES, RunWriter, sha256_hex, write_atomic};

use crate::model::CellResult;

/// JSON Schema of cell result files (`schemas/result.schema.json`).
pub fn result_schema_json() -> String {
    let schema = schemars::schema_for!(CellResult);
    serde_json::to_string_pretty(&schema).expect("schema serializes") + "\n"
}

/// JSON Schema of `run.json` (`schemas/run.schema.json`).
pub fn run_schema_json() -> String {
    let schema = schemars::schema_for!(RunMeta);
    serde_json::to_string_pretty(&schema).expect("schema serializes") + "\n"
}
