//! What the noise guards did to a lat_fs cell, as notes stored with it.

use crate::model::{LatfsRepetition, LatfsResult};

/// What the noise guards did to a lat_fs cell, said once over all its rounds: how many
/// repetitions were disturbed, in which rounds, how many were rerun, and that there are
/// no statistics when no repetition was fit for them. A function of the result alone, so
/// a later round replaces these notes exactly (the runner's rounds).
pub fn noise_notes(res: &LatfsResult) -> Vec<String> {
    let mut notes = Vec::new();
    let disturbed: Vec<&LatfsRepetition> = res.repetitions.iter().filter(|x| !x.counts()).collect();
    if !disturbed.is_empty() {
        let mut rounds: Vec<u32> = disturbed.iter().map(|x| x.round + 1).collect();
        rounds.dedup();
        let within = if res.rounds_done() > 1 {
            let list: Vec<String> = rounds.iter().map(u32::to_string).collect();
            format!(" in round{} {}", if list.len() == 1 { "" } else { "s" }, list.join(", "))
        } else {
            String::new()
        };
        notes.push(format!(
            "{} of {} repetitions disturbed by other processes{within} (kept, left out of statistics; {} rerun)",
            disturbed.len(),
            res.repetitions.len(),
            res.reruns
        ));
    }
    if res.total_loops.n == 0 && !res.repetitions.is_empty() {
        notes.push(format!(
            "every repetition was disturbed and the rerun budget ran out ({} rerun): no statistics",
            res.reruns
        ));
    }
    notes
}
