//! A cell's folded stacks (`profiles/<cell-id>.folded`, and `<cell-id>.offcpu.folded` of
//! a `cpu+offcpu` profile; a paired run's later profiled members `<cell-id>.pair<k>.…`),
//! read back beside its result.
//!
//! Leniently: a profile is an explanation, not a measurement, so a missing, linked,
//! oversized or garbled file makes the cell's profile "unreadable" with why, and the
//! cell loads as ever. The file is opened beneath the run directory's fd without
//! following a link, and its name comes from the cell's id, never from the `file`
//! field the cell file states.

use std::io::Read;
use std::os::fd::OwnedFd;

use crate::model::CellResult;
use crate::profile::folded::{self, MAX_READ_BYTES};

/// Fill `cell.profile.folded` from its file, or say in `unreadable` why it cannot be used.
/// A paired run's later profiled members too (at most [`MAX_PAIR_PROFILES`] of them, each
/// index once: a cell file may say anything).
pub(super) fn attach(dir_fd: &OwnedFd, cell: &mut CellResult) {
    let mut seen = std::collections::BTreeSet::new();
    if let Some(p) = cell.profile.as_mut() {
        seen.insert(p.pair.unwrap_or(0));
        attach_one(dir_fd, &cell.id, p);
    }
    cell.pair_profiles.truncate(MAX_PAIR_PROFILES);
    cell.pair_profiles.retain(|p| p.pair.is_some_and(|k| k > 0 && seen.insert(k)));
    for p in &mut cell.pair_profiles {
        attach_one(dir_fd, &cell.id, p);
    }
}

/// Most later profiled members read back per cell (a run stores
/// [`crate::profile::PROFILED_PAIRS`] at most).
const MAX_PAIR_PROFILES: usize = 64;

/// One profile's stacks, and the off-CPU stacks of the same window (`cpu+offcpu`), by the
/// same rules; the names from the cell's id and the profile's index.
fn attach_one(dir_fd: &OwnedFd, id: &str, p: &mut crate::model::CellProfile) {
    fill(dir_fd, p, &crate::profile::folded_name(id, p.pair, false));
    let pair = p.pair;
    if let Some(o) = p.offcpu.as_mut() {
        o.offcpu = None;
        fill(dir_fd, o, &crate::profile::folded_name(id, pair, true));
    }
}

/// `p.folded` from `profiles/<name>`, or why not in `p.unreadable`.
fn fill(dir_fd: &OwnedFd, p: &mut crate::model::CellProfile, name: &str) {
    p.folded.clear();
    if p.not_profiled.is_some() {
        return;
    }
    match read(dir_fd, name) {
        Ok(text) => p.folded = text,
        Err(why) => p.unreadable = Some(why),
    }
}

/// The folded stacks of `profiles/<name>`, checked and escaped, as text again.
fn read(dir_fd: &OwnedFd, name: &str) -> Result<String, String> {
    let dir = super::safe::open_subdir(dir_fd, crate::profile::PROFILES_DIR)
        .map_err(|e| format!("{}/: {e}", crate::profile::PROFILES_DIR))?;
    let f = match crate::beneath::open_file(&dir, name) {
        Ok(Some(f)) => f,
        Ok(None) => return Err(format!("{name}: missing (or not a regular file)")),
        Err(e) => return Err(format!("{name}: {e}")),
    };
    let mut bytes = Vec::new();
    f.take(MAX_READ_BYTES + 1).read_to_end(&mut bytes).map_err(|e| format!("{name}: {e}"))?;
    let parsed = folded::parse_untrusted(&bytes).map_err(|e| format!("{name}: {e}"))?;
    Ok(parsed.capped_text(usize::MAX).0)
}
