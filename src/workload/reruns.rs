//! The one rerun rule of the workloads that repeat a measurement (lat_fs, fio): a disturbed
//! repetition is kept (marked, left out of the statistics) and replaced by another, at most
//! `max_reruns` times per cell, after waiting (up to [`crate::host::cpu::QUIET_WAIT_MAX`])
//! for a quiet 200 ms window; once the budget is spent the cell stops.
//!
//! A member of a pair (`[compare]`) is not judged on its own: its partner's load decides
//! whether its disturbance voids the pair ([`crate::host::pair_load`]), so there a disturbed
//! repetition counts like any other and nothing is rerun or waited out.

use std::time::Duration;

/// What comes after a repetition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// It counts (undisturbed, or a pair's member): go on by the workload's own count or stop rule.
    Counted,
    /// It was disturbed: run another in its place (the wait for a quiet moment is done).
    Rerun,
    /// It was disturbed and the rerun budget is spent: stop.
    Spent,
}

/// A cell's rerun budget and how it judges its repetitions.
#[derive(Debug, Clone)]
pub struct Reruns {
    /// Disturbed repetitions that may be run again (`workload.max_reruns`).
    pub max: u32,
    /// Reruns so far.
    pub done: u32,
    /// The disturbance threshold (`workload.disturbance`); `None`: nothing is judged.
    pub threshold: Option<f64>,
    /// CPUs the cell needs (one per task), for the quiet wait.
    pub needed_cpus: u32,
    /// The cell is a member of a pair: its repetitions are judged with its partner's.
    pub pair_member: bool,
}

impl Reruns {
    /// What follows a repetition that was (`disturbed`) or was not disturbed.
    pub fn after(&mut self, disturbed: bool) -> Next {
        let (threshold, needed_cpus) = (self.threshold, self.needed_cpus);
        self.after_waiting(disturbed, &|| {
            if let Some(t) = threshold {
                crate::host::cpu::wait_until_quiet(
                    std::process::id(),
                    t,
                    needed_cpus,
                    Duration::from_millis(200),
                    crate::host::cpu::QUIET_WAIT_MAX,
                    &crate::signals::interrupted,
                );
            }
        })
    }

    /// [`Reruns::after`] with the wait for a quiet moment given (for tests).
    fn after_waiting(&mut self, disturbed: bool, wait: &dyn Fn()) -> Next {
        if !disturbed || self.pair_member {
            return Next::Counted;
        }
        if self.done >= self.max {
            return Next::Spent;
        }
        self.done += 1;
        // A neighbour that is busy now is likely still busy a moment later: rerunning at
        // once mostly buys another disturbed repetition and spends the budget.
        wait();
        Next::Rerun
    }
}

/// What the noise guards did to a cell's repetitions, said once over all its rounds (a
/// function of the result alone, so a later round replaces these notes exactly): how many
/// repetitions were disturbed (`disturbed_rounds`: each disturbed one's round, from 0), of
/// `total`, in which rounds when the cell has several (`rounds_done`), how many were rerun,
/// and that there are no statistics (`no_statistics`) when none was fit for them.
pub fn noise_notes(
    disturbed_rounds: &[u32],
    total: usize,
    rounds_done: u32,
    reruns: u32,
    no_statistics: bool,
) -> Vec<String> {
    let mut notes = Vec::new();
    if !disturbed_rounds.is_empty() {
        let mut rounds: Vec<u32> = disturbed_rounds.iter().map(|r| r + 1).collect();
        rounds.dedup();
        let within = if rounds_done > 1 {
            let list: Vec<String> = rounds.iter().map(u32::to_string).collect();
            format!(" in round{} {}", if list.len() == 1 { "" } else { "s" }, list.join(", "))
        } else {
            String::new()
        };
        notes.push(format!(
            "{} of {total} repetitions disturbed by other processes{within} (kept, left out of statistics; {reruns} rerun)",
            disturbed_rounds.len(),
        ));
    }
    if no_statistics && total > 0 {
        notes.push(format!(
            "every repetition was disturbed and the rerun budget ran out ({reruns} rerun): no statistics"
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_disturbed_repetition_is_rerun_until_the_budget_is_spent_unless_a_pair_judges_it() {
        let waits = std::cell::Cell::new(0);
        let wait = || waits.set(waits.get() + 1);
        let mut r = Reruns { max: 2, done: 0, threshold: Some(0.25), needed_cpus: 1, pair_member: false };
        assert_eq!(r.after_waiting(false, &wait), Next::Counted);
        assert_eq!(r.after_waiting(true, &wait), Next::Rerun);
        assert_eq!(r.after_waiting(true, &wait), Next::Rerun);
        assert_eq!(r.after_waiting(true, &wait), Next::Spent);
        assert_eq!((r.done, waits.get()), (2, 2));
        let mut member = Reruns { pair_member: true, done: 0, ..r };
        assert_eq!(member.after_waiting(true, &wait), Next::Counted);
        assert_eq!((member.done, waits.get()), (0, 2));
    }
}
