//! Whether the members of a pair were disturbed alike: the one rule that voids a pair for
//! disturbance, used by lat_fs, fio, op-mix and steps pairs alike (the runner, when it
//! decides a pair, and the paired reader, when it pairs steps per iteration position).
//!
//! A pair exists so that load common to both members cancels in their ratio. So a member is
//! not judged on its own: each member's **load** is its windows' contention (the foreign
//! CPU time that competed with it, plus steal: [`super::cpu::contention_us`]) over their
//! wall time, in CPUs. The pair is
//!
//! - **quiet** when no window of any member was disturbed;
//! - under **common load** when some were, but the members' loads differ by no more than
//!   the disturbance threshold (the fraction of one CPU a single window may lose before it
//!   is disturbed, `workload.disturbance`, recorded in each window): the pair is kept, its
//!   disturbed samples included, and it is recorded as such;
//! - **uneven** when the most loaded member's load exceeds the least loaded one's by more
//!   than the threshold (and by at least [`super::cpu::MIN_TICKS`] clock ticks over the
//!   shorter member, so tick jitter alone cannot void a pair): the pair is void.
//!
//! So on a persistently busy host pairs are kept, and a burst that hit one member only
//! voids its pair, as one disturbed window used to.

use super::cpu::{DEFAULT_THRESHOLD, tick_us};
use crate::model::Disturbance;

/// One member's load: its windows summed.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MemberLoad {
    /// Contention over all its windows, µs.
    pub contention_us: u64,
    /// Wall time of all its windows, µs.
    pub wall_us: u64,
    /// Whether any of its windows was disturbed by itself.
    pub disturbed: bool,
    /// The disturbance threshold its windows were judged at (the strictest of them).
    pub threshold: f64,
}

impl MemberLoad {
    /// The load of a member measured in `windows` (its repetitions' or steps'); a member
    /// without windows (disturbance not checked) is quiet.
    pub fn of<'a>(windows: impl IntoIterator<Item = &'a Disturbance>) -> MemberLoad {
        let mut m = MemberLoad { threshold: f64::INFINITY, ..MemberLoad::default() };
        for d in windows {
            // Results written before contention was recorded judged `share`.
            let contention = d.contention_us.unwrap_or((d.share.max(0.0) * d.wall_us as f64) as u64);
            m.contention_us = m.contention_us.saturating_add(contention);
            m.wall_us = m.wall_us.saturating_add(d.wall_us);
            m.disturbed |= d.disturbed;
            m.threshold = m.threshold.min(d.threshold.unwrap_or(DEFAULT_THRESHOLD));
        }
        if m.threshold.is_infinite() {
            m.threshold = DEFAULT_THRESHOLD;
        }
        m
    }

    /// Contention over wall time, in CPUs (0 without wall time).
    pub fn cpus(&self) -> f64 {
        if self.wall_us == 0 { 0.0 } else { self.contention_us as f64 / self.wall_us as f64 }
    }
}

/// How the members of one pair were loaded.
#[derive(Debug, Clone, PartialEq)]
pub enum PairLoad {
    /// No member's window was disturbed.
    Quiet,
    /// Some were, about equally: the pair counts, its disturbed samples included.
    Common,
    /// Member `member` (an index into the members given) was loaded more than its partner
    /// by more than the threshold: the pair is void; `why` says by how much.
    Uneven {
        /// The most loaded member.
        member: usize,
        /// `disturbed unlike its partner (0.62 CPUs taken, against 0.05)`.
        why: String,
    },
}

impl PairLoad {
    /// Whether the pair counts.
    pub fn counts(&self) -> bool {
        !matches!(self, PairLoad::Uneven { .. })
    }
}

/// The rule: how the members with these loads were disturbed, together.
pub fn pair_load(members: &[MemberLoad]) -> PairLoad {
    pair_load_at(members, tick_us())
}

/// The rule for a pair judged on several quantities (a steps pair, step by step: `members[m][q]`
/// is member `m`'s load in quantity `q`): [`pair_load`] of each quantity; the pair is void
/// only when every quantity is uneven (one disturbed `sync` does not void the `untar` beside
/// it: the statistics are per step, and the paired reader judges each step at each iteration
/// position by this same rule), and under common load when any quantity is.
pub fn pair_loads(members: &[Vec<MemberLoad>]) -> PairLoad {
    pair_loads_at(members, tick_us())
}

fn pair_loads_at(members: &[Vec<MemberLoad>], tick_us: u64) -> PairLoad {
    let width = members.iter().map(Vec::len).max().unwrap_or(0);
    let each: Vec<PairLoad> = (0..width)
        .map(|q| {
            let of_q: Vec<MemberLoad> = members.iter().map(|m| m.get(q).copied().unwrap_or_default()).collect();
            pair_load_at(&of_q, tick_us)
        })
        .collect();
    if let Some(first) = each.first().filter(|_| each.iter().all(|l| !l.counts())) {
        return first.clone();
    }
    if each.contains(&PairLoad::Common) { PairLoad::Common } else { PairLoad::Quiet }
}

/// [`pair_load`] with the clock tick given (pure, for tests).
fn pair_load_at(members: &[MemberLoad], tick_us: u64) -> PairLoad {
    if !members.iter().any(|m| m.disturbed) {
        return PairLoad::Quiet;
    }
    let by_load = |a: &&MemberLoad, b: &&MemberLoad| a.cpus().total_cmp(&b.cpus());
    let (Some(most), Some(least)) = (members.iter().max_by(by_load), members.iter().min_by(by_load)) else {
        return PairLoad::Quiet;
    };
    let threshold = members.iter().map(|m| m.threshold).fold(f64::INFINITY, f64::min);
    // A member without windows (not judged) has no wall time: the other's is the window.
    let wall_us = [most.wall_us, least.wall_us].into_iter().filter(|&w| w > 0).min().unwrap_or(0);
    let apart = most.cpus() - least.cpus();
    let apart_us = (apart * wall_us as f64) as u64;
    if super::cpu::is_disturbed(apart_us, wall_us, tick_us, threshold) {
        let member = members.iter().position(|m| std::ptr::eq(m, most)).unwrap_or(0);
        return PairLoad::Uneven {
            member,
            why: format!("disturbed unlike its partner ({:.2} CPUs taken, against {:.2})", most.cpus(), least.cpus()),
        };
    }
    PairLoad::Common
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A member of `n` windows of 100 ms, each losing `cpus` to contention.
    fn member(n: u64, cpus: f64) -> MemberLoad {
        let d = Disturbance {
            wall_us: 100_000,
            contention_us: Some((cpus * 100_000.0) as u64),
            disturbed: cpus > DEFAULT_THRESHOLD,
            threshold: Some(DEFAULT_THRESHOLD),
            ..Disturbance::default()
        };
        MemberLoad::of(std::iter::repeat_n(&d, n as usize))
    }

    #[test]
    fn the_same_load_on_both_members_keeps_the_pair() {
        // A persistently busy host: every window of both members disturbed, alike.
        assert_eq!(pair_load_at(&[member(3, 0.6), member(3, 0.7)], 10_000), PairLoad::Common);
        assert_eq!(pair_load_at(&[member(3, 0.3), member(3, 0.5), member(3, 0.4)], 10_000), PairLoad::Common);
        assert!(PairLoad::Common.counts());
    }

    #[test]
    fn one_member_disturbed_and_the_other_clean_voids_the_pair() {
        let load = pair_load_at(&[member(3, 0.0), member(3, 0.8)], 10_000);
        let PairLoad::Uneven { member: 1, why } = &load else { panic!("{load:?}") };
        assert_eq!(why, "disturbed unlike its partner (0.80 CPUs taken, against 0.00)");
        assert!(!load.counts());
    }

    #[test]
    fn quiet_members_are_quiet_and_tick_jitter_voids_nothing() {
        assert_eq!(pair_load_at(&[member(3, 0.1), member(3, 0.0)], 10_000), PairLoad::Quiet);
        assert_eq!(pair_load_at(&[MemberLoad::of([]), MemberLoad::of([])], 10_000), PairLoad::Quiet);
        // 20 ms windows: two ticks (0.02 s) apart is a whole CPU, but within jitter.
        let short = |ticks: u64| {
            let d = Disturbance {
                wall_us: 20_000,
                contention_us: Some(ticks * 10_000),
                disturbed: ticks > 0,
                ..Disturbance::default()
            };
            MemberLoad::of([&d])
        };
        assert_eq!(pair_load_at(&[short(2), short(0)], 10_000), PairLoad::Common);
        assert!(!pair_load_at(&[short(4), short(0)], 10_000).counts());
    }

    #[test]
    fn a_steps_pair_is_void_only_when_every_step_was_disturbed_unevenly() {
        // Step 0 (untar) quiet in both, step 1 (sync) hit in one member only: kept.
        let a = vec![member(2, 0.0), member(2, 0.9)];
        let b = vec![member(2, 0.0), member(2, 0.0)];
        assert_eq!(pair_loads_at(&[a.clone(), b.clone()], 10_000), PairLoad::Quiet);
        // Both steps uneven: void, with the first step's reason.
        let a2 = vec![member(2, 0.9), member(2, 0.9)];
        assert!(!pair_loads_at(&[a2, b.clone()], 10_000).counts());
        // One step under common load: common.
        let c = vec![member(2, 0.6), member(2, 0.0)];
        let d = vec![member(2, 0.6), member(2, 0.0)];
        assert_eq!(pair_loads_at(&[c, d], 10_000), PairLoad::Common);
        // One quantity: the single rule.
        assert!(!pair_loads_at(&[vec![member(3, 0.8)], vec![member(3, 0.0)]], 10_000).counts());
    }

    #[test]
    fn a_burst_in_one_window_counts_over_the_member() {
        // One window of three lost a whole CPU: a third of a CPU over the member.
        let d = |cpus: f64| Disturbance {
            wall_us: 100_000,
            contention_us: Some((cpus * 100_000.0) as u64),
            disturbed: cpus > DEFAULT_THRESHOLD,
            ..Disturbance::default()
        };
        let burst = MemberLoad::of(&[d(1.0), d(0.0), d(0.0)]);
        assert!((burst.cpus() - 1.0 / 3.0).abs() < 1e-9);
        assert!(!pair_load_at(&[burst, member(3, 0.0)], 10_000).counts());
        // Beside a partner that was as busy throughout, it counts.
        assert!(pair_load_at(&[burst, member(3, 0.3)], 10_000).counts());
    }
}
