//! A profile diff cut small enough for JSON consumers (`gate --json`, the bisect log): how
//! its noise was judged and the names, change in points and adjusted p of its [`TOP`]
//! largest changes each way. The diff itself is [`super::profile_diff`]'s.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::profile_diff::CellDiff;
use crate::profile::diff::{FunctionChange, Judged};

/// Most functions each way a summary keeps.
pub const TOP: usize = 5;

/// Longest function name a summary keeps, in characters (a longer one is cut).
pub const NAME_CHARS: usize = 200;

/// One cell's on-CPU profile diff, cut to its [`TOP`] changes each way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfileDiffSummary {
    /// The cell compared, with its sides: a paired run's pair group and arms
    /// (`S-qoff-t1-chown (off → on)`), or two runs' cell and labels.
    pub cell: String,
    /// How the noise was judged: `across_pairs` (paired t test over the profiled pairs,
    /// Holm), `single_profile` (one profile per side, sampling noise only) or `untested`.
    pub judged: String,
    /// Profiled pairs compared (1 for a single-profile difference).
    pub pairs: u32,
    /// Samples of the baseline's profiles and of the candidate's, summed over the pairs.
    pub samples: [u64; 2],
    /// How many functions grew and how many shrank beyond the noise (before the cut).
    pub beyond: [u32; 2],
    /// The functions that grew most beyond the noise, largest first.
    pub grown: Vec<FunctionShift>,
    /// The functions that shrank most beyond the noise, largest first.
    pub shrunk: Vec<FunctionShift>,
}

/// One function's change of total share (itself and its callees) from baseline to candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FunctionShift {
    /// The function (escaped, at most [`NAME_CHARS`] characters).
    pub function: String,
    /// Change of its total share, percentage points (candidate less baseline).
    pub change_pp: f64,
    /// Its Holm-adjusted p-value.
    pub p: f64,
}

/// The summary of one cell's diff, or why it has none.
pub fn summarize(cd: &CellDiff) -> Result<ProfileDiffSummary, String> {
    let (d, _, _) = cd.outcome.as_ref().map_err(Clone::clone)?;
    Ok(ProfileDiffSummary {
        cell: cut(&cd.title, NAME_CHARS),
        judged: match d.judged {
            Judged::AcrossPairs(_) => "across_pairs",
            Judged::SingleProfile => "single_profile",
            Judged::Untested => "untested",
        }
        .into(),
        pairs: match d.judged {
            Judged::AcrossPairs(n) => n as u32,
            _ => 1,
        },
        samples: [d.samples.0, d.samples.1],
        beyond: [d.beyond.0 as u32, d.beyond.1 as u32],
        grown: shifts(&d.grown),
        shrunk: shifts(&d.shrunk),
    })
}

fn shifts(changes: &[FunctionChange]) -> Vec<FunctionShift> {
    changes
        .iter()
        .take(TOP)
        .map(|c| FunctionShift { function: cut(&c.name, NAME_CHARS), change_pp: c.delta_pp, p: c.p })
        .collect()
}

/// `text` (already escaped) cut to `max` characters, `…` marking a cut.
pub fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut s: String = text.chars().take(max - 1).collect();
    s.push('…');
    s
}
