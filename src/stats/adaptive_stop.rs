//! When a lat_fs cell has taken enough repetitions.

use super::summary::{relative_half_width, summarize};
use crate::model::StopReason;

/// The adaptive stop rule of a lat_fs cell, given its undisturbed samples so far:
/// `Some(why)` when it should stop, `None` to take another repetition.
///
/// With a CI target it stops once at least `min` (and at least 2) samples give a 95%
/// CI half-width of the mean within `ci_target` of the mean; at `max` samples it stops
/// regardless. Without a target it takes exactly `max`.
pub fn adaptive_stop(samples: &[f64], min: u32, max: u32, ci_target: Option<f64>) -> Option<StopReason> {
    let n = samples.len() as u32;
    if let Some(target) = ci_target
        && n >= min.max(2)
        && relative_half_width(&summarize(samples)) <= target
    {
        return Some(StopReason::CiTarget);
    }
    if n >= max.max(1) {
        return Some(if ci_target.is_some() { StopReason::MaxRepetitions } else { StopReason::Fixed });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adaptive_stop_rule() {
        use StopReason::*;
        let tight = [1000.0, 1001.0, 999.0, 1000.5];
        let wide = [1000.0, 1300.0, 700.0, 1150.0];
        // Tight samples reach 2% once `min` is met, not before.
        assert_eq!(adaptive_stop(&tight[..2], 3, 20, Some(0.02)), None);
        assert_eq!(adaptive_stop(&tight[..3], 3, 20, Some(0.02)), Some(CiTarget));
        // Wide ones keep going until max.
        assert_eq!(adaptive_stop(&wide, 3, 20, Some(0.02)), None);
        assert_eq!(adaptive_stop(&wide, 3, 4, Some(0.02)), Some(MaxRepetitions));
        // One sample has no spread: never the CI target, even with min = 1.
        assert_eq!(adaptive_stop(&tight[..1], 1, 20, Some(0.5)), None);
        // A fixed count.
        assert_eq!(adaptive_stop(&wide[..3], 0, 4, None), None);
        assert_eq!(adaptive_stop(&wide, 0, 4, None), Some(Fixed));
    }
}
