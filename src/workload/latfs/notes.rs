//! What the noise guards did to a lat_fs cell, as notes stored with it.

use crate::model::LatfsResult;

/// What the noise guards did to a lat_fs cell, said once over all its rounds
/// ([`crate::workload::reruns::noise_notes`], the words every repeated workload uses): how
/// many repetitions were disturbed, in which rounds, how many were rerun, and that there are
/// no statistics when no repetition was fit for them. A function of the result alone, so a
/// later round replaces these notes exactly (the runner's rounds).
pub fn noise_notes(res: &LatfsResult) -> Vec<String> {
    let disturbed: Vec<u32> = res.repetitions.iter().filter(|x| !x.counts()).map(|x| x.round).collect();
    crate::workload::reruns::noise_notes(
        &disturbed,
        res.repetitions.len(),
        res.rounds_done(),
        res.reruns,
        res.total_loops.n == 0,
    )
}
