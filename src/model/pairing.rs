//! How a cell of a paired run (`[compare] arms = …`) took part in its pair group: which of
//! its rounds were members of which pair, the pairs that were dropped, and why the group
//! stopped.
//!
//! A pair group is the cells that differ only in the arm axis. Each member measurement of
//! a pair is stored as one round of its cell (the cell's repetitions carry the round), so
//! every reader that understands rounds reads a paired cell unchanged; this record is what
//! joins the arms back into pairs: slot `s` of the baseline and slot `s` of a candidate
//! are one pair.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Most pairs a group may take (`[compare] pairs.max` is validated against it), and so
/// most pair slots and dropped pairs a loaded cell file may hold.
pub const MAX_PAIRS: u32 = 1000;

/// A cell's part in its pair group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CellPairing {
    /// The matrix axis whose values are the arms (`fs`, `quota`).
    pub axis: String,
    /// The arm values in the scenario's order; the first is the baseline.
    pub arms: Vec<String>,
    /// This cell's arm: an index into `arms` (0 is the baseline).
    pub arm: usize,
    /// The group's key: the cell id without the arm's part (`S-qoff-t1-chown`).
    pub group: String,
    /// Seed of the ABBA/BAAB schedule the group ran.
    pub seed: u64,
    /// The pairs that count, in schedule order.
    #[serde(default)]
    pub pairs: Vec<PairSlot>,
    /// Schedule slots that gave no pair after their reruns, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<DroppedPair>,
    /// Why the group stopped; absent while it has not (an interrupted run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<PairStop>,
    /// With `stop = member_failed`: the arm that failed and its error
    /// (`ext4-bad-S-qoff-t1: failed in 3 attempts in a row: mkfs.ext4: invalid option`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
}

/// One pair this cell was a member of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PairSlot {
    /// The pair's place in the schedule, from 0: the same slot in every arm's cell is one pair.
    pub slot: u32,
    /// The arm indices in the order the pair's members ran.
    pub order: Vec<usize>,
    /// This cell's round (the `round` of its repetitions) that was the pair's member.
    pub round: u32,
    /// The pair's members ran under about the same load, some of it enough to disturb a
    /// window on its own (`host::pair_load`): the pair was kept, its disturbed samples
    /// included, since load common to both members cancels in their ratio.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub common_load: bool,
}

/// A schedule slot that yielded no pair, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DroppedPair {
    /// The slot, from 0.
    pub slot: u32,
    /// Why its last attempt was void (`ext4-nodelalloc-S-qoff-t1-chown: disturbed`).
    pub reason: String,
}

/// Why a pair group stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PairStop {
    /// A look found every candidate arm regressed (or the worst of them).
    Regressed,
    /// A look found every candidate arm decided, the worst improved.
    Improved,
    /// A look found every candidate arm unchanged within the threshold.
    Unchanged,
    /// `pairs.max` pairs were taken without a decision.
    MaxPairs,
    /// A signal stopped the run before the group decided.
    Interrupted,
    /// One arm failed (or was skipped) in [`MEMBER_FAILED_ATTEMPTS`] attempts in a row: the
    /// group stopped rather than spend its pairs on an arm that cannot run
    /// ([`CellPairing::stop_reason`] names it and its error).
    MemberFailed,
}

/// Attempts in a row in which one arm must fail (status `failed` or `skipped`, not
/// disturbed) before its pair group stops with [`PairStop::MemberFailed`]: a failure that
/// happens three times running (mkfs rejecting an option, a tool missing) is not bad luck,
/// and every further attempt would provision and fail again until `pairs.max`.
pub const MEMBER_FAILED_ATTEMPTS: u32 = 3;
