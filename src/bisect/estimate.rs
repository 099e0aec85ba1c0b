//! What a bisection will cost, said before it starts (as `plan` says it of a run): the
//! steps (the endpoints, ⌈log2(n−1)⌉ midpoints, the culprit's confirmation), the guest
//! boots a step takes at best (decided at the first look) and at worst (its whole pair
//! budget and every rerun), and the time a boot takes: measured from the steps a resumed
//! bisection already ran on this host, else the TCG figure of docs/qemu.md.

use super::search::{StepRecord, most_steps};

/// Seconds a guest boot and its one cell take under TCG on the development machine kind
/// (docs/qemu.md), used until this host has measured its own: `plan`'s figure.
pub const ASSUMED_SECS_PER_BOOT: (f64, f64) = crate::plan::TCG_SECS_PER_BOOT;

/// The cost of a bisection.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// Candidates.
    pub candidates: usize,
    /// Most steps without a skip.
    pub steps: usize,
    /// Boots a step takes at best (decided at `min` pairs).
    pub boots_best: u32,
    /// Boots a step takes at worst (`max` pairs and every rerun).
    pub boots_worst: u32,
    /// Seconds per boot: low and high.
    pub secs_per_boot: (f64, f64),
    /// Whether `secs_per_boot` was measured on this host (from finished steps).
    pub measured: bool,
}

/// The estimate for `candidates` with steps of `min..=max` pairs and `reruns` void pairs
/// allowed per step, over `cells` judged cells (each its own pair group a step); `done`
/// are steps already finished here, whose wall time per boot replaces the assumed figure.
pub fn estimate(candidates: usize, min: u32, max: u32, reruns: u32, cells: u32, done: &[StepRecord]) -> Estimate {
    let boots: u32 = done.iter().map(|s| s.measure.boots()).sum();
    let seconds: f64 = done.iter().map(|s| s.seconds).sum();
    let (secs_per_boot, measured) = if boots > 0 && seconds > 0.0 {
        let per = seconds / f64::from(boots);
        ((per, per), true)
    } else {
        (ASSUMED_SECS_PER_BOOT, false)
    };
    Estimate {
        candidates,
        steps: most_steps(candidates),
        boots_best: 2 * min * cells.max(1),
        boots_worst: 2 * (max + reruns) * cells.max(1),
        secs_per_boot,
        measured,
    }
}

/// The estimate in words, one paragraph.
pub fn render(e: &Estimate) -> String {
    let hours = |boots: u32, secs: f64| {
        crate::text::human_duration(std::time::Duration::from_secs_f64(f64::from(boots) * secs))
    };
    let per = if e.measured {
        format!("{:.1} s a boot, measured by the steps so far", e.secs_per_boot.0)
    } else {
        format!(
            "about {:.0}-{:.0} s a boot under TCG on a 2-core host as docs/qemu.md says, until a step measures it here",
            e.secs_per_boot.0, e.secs_per_boot.1
        )
    };
    let steps = e.steps as u32;
    format!(
        "bisect: {} candidates: at most {} steps (the endpoints, {} midpoints, the culprit against its predecessor); \
         {}-{} guest boots a step ({per}): {} to {} in all, {} to {}\n",
        e.candidates,
        e.steps,
        e.steps.saturating_sub(2),
        e.boots_best,
        e.boots_worst,
        steps * e.boots_best,
        steps * e.boots_worst,
        hours(steps * e.boots_best, e.secs_per_boot.0),
        hours(steps * e.boots_worst, e.secs_per_boot.1),
    )
}

/// The builds of a bisection of a git range in words: at most one per step's new
/// candidate (`most_steps(n)`: the confirmation compares two built ones), fewer the ones
/// the cache holds, and their time from the durations the cache recorded (unknown until
/// one build has run).
pub fn render_builds(candidates: usize, cached: usize, recorded: &[f64]) -> String {
    let most = most_steps(candidates).min(candidates);
    let time = if recorded.is_empty() {
        "the build time is not known until one build has run".to_string()
    } else {
        let mean = recorded.iter().sum::<f64>() / recorded.len() as f64;
        let each = crate::text::human_duration(std::time::Duration::from_secs_f64(mean));
        let all = crate::text::human_duration(std::time::Duration::from_secs_f64(mean * most as f64));
        format!("about {each} a build, as the cache's {} recorded builds took: up to {all}", recorded.len())
    };
    format!(
        "bisect: builds: at most {most} of the {candidates} commits (the endpoints, then each midpoint when first \
         needed), {cached} already in the build cache; {time}\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_counts_steps_and_boots_and_measures_the_boot_time_once_steps_ran() {
        let e = estimate(16, 6, 32, 3, 1, &[]);
        assert_eq!((e.steps, e.boots_best, e.boots_worst, e.measured), (6, 12, 70, false));
        let text = render(&e);
        assert!(text.contains("at most 6 steps") && text.contains("12-70 guest boots"), "{text}");
        let mut log = crate::bisect::log::tests::sample();
        log.steps[0].seconds = 120.0; // 6 pairs: 12 boots in 120 s
        let e = estimate(16, 6, 32, 3, 1, &log.steps);
        assert_eq!((e.secs_per_boot, e.measured), ((10.0, 10.0), true));
        assert!(render(&e).contains("10.0 s a boot, measured"));
        // Three judged cells: three pair groups a step.
        let e = estimate(16, 6, 32, 3, 3, &[]);
        assert_eq!((e.boots_best, e.boots_worst), (36, 210));
        let b = render_builds(5, 1, &[]);
        assert!(b.contains("at most 4 of the 5 commits") && b.contains("1 already") && b.contains("not known"), "{b}");
        let b = render_builds(64, 0, &[60.0, 120.0]);
        assert!(b.contains("at most 8 of the 64") && b.contains("1m30s a build"), "{b}");
    }
}
