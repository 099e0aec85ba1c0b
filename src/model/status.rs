//! What happened to a cell, and why a cell did not run.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What happened to a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CellStatus {
    /// Provisioned, ran and measured.
    Ok,
    /// Could not run on this host; the result's `skip` says why and what would fix it.
    Skipped,
    /// Started but failed (in any round); the result's `error` holds the error.
    Failed,
    /// A lat_fs cell measured, but every repetition (of every round) was disturbed by other
    /// processes and the rerun budget ran out: the samples are kept, none is fit for statistics.
    Disturbed,
}

/// Why a cell cannot run here and what would fix it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SkipReason {
    /// What is missing, in the kernel's or tool's own words where possible.
    pub reason: String,
    /// What the user can do about it (`apt-get install xfsprogs`), if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remedy: Option<String>,
}
