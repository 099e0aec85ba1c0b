//! A worker's open-loop pace (`workload.rate`): start `k` is scheduled at `k / rate`
//! seconds after the worker's first start. Ahead of the schedule, the worker sleeps until
//! the start's time; behind it, it starts at once, never catching up by skipping, and
//! every start's lateness (its beginning minus its scheduled time) is recorded, so a
//! filesystem that cannot keep the pace shows as lateness rather than as a slower closed
//! loop (the coordinated omission of a worker that waits for its own previous op).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::spec::{Rate, RateUnit};
use crate::model::PaceFigures;
use crate::monitor::latency;

/// Longest single sleep: the stop flag is looked at in between.
const SLICE: Duration = Duration::from_millis(20);

/// One worker's schedule and its lateness.
pub struct Pacer {
    rate: Rate,
    first: Option<Instant>,
    starts: u64,
    behind: u64,
    lateness: Histogram<u64>,
}

impl Pacer {
    /// A schedule of `rate` starts per second, from the first [`Pacer::start`].
    pub fn new(rate: Rate) -> Pacer {
        Pacer { rate, first: None, starts: 0, behind: 0, lateness: latency::histogram() }
    }

    /// The schedule started again, nothing recorded (the end of a warm-up).
    pub fn restart(&mut self) {
        *self = Pacer::new(self.rate);
    }

    /// Its starts, those behind the schedule, and their lateness (to send them elsewhere).
    pub fn parts(&self) -> (Rate, u64, u64, &Histogram<u64>) {
        (self.rate, self.starts, self.behind, &self.lateness)
    }

    /// A stopped pacer with these figures (as [`Pacer::parts`] gave them).
    pub fn from_parts(rate: Rate, starts: u64, behind: u64, lateness: Histogram<u64>) -> Pacer {
        Pacer { rate, first: None, starts, behind, lateness }
    }

    /// What it paces.
    pub fn unit(&self) -> RateUnit {
        self.rate.unit
    }

    /// Wait for the next start's scheduled time (not at all when behind it) and record its
    /// lateness; false when `stop` was raised during the wait (the start is not made).
    pub fn start(&mut self, stop: &AtomicBool) -> bool {
        let now = Instant::now();
        let first = *self.first.get_or_insert(now);
        let due = first + Duration::from_secs_f64(self.starts as f64 / self.rate.per_s);
        if now < due {
            loop {
                if stop.load(Ordering::Relaxed) {
                    return false;
                }
                let now = Instant::now();
                if now >= due {
                    break;
                }
                std::thread::sleep((due - now).min(SLICE));
            }
        } else if now > due {
            self.behind += 1;
        }
        let late = Instant::now().saturating_duration_since(due);
        self.lateness.saturating_record(late.as_nanos().min(u64::MAX as u128) as u64);
        self.starts += 1;
        true
    }
}

/// The window's figures over every worker's pacer (`None` without a rate).
pub fn figures<'a>(pacers: impl IntoIterator<Item = &'a Pacer>) -> Option<PaceFigures> {
    let mut all: Option<(Rate, u64, u64, Histogram<u64>)> = None;
    for p in pacers {
        let a = all.get_or_insert_with(|| (p.rate, 0, 0, latency::histogram()));
        a.1 += p.starts;
        a.2 += p.behind;
        a.3.add(&p.lateness).expect("histograms of one shape add");
    }
    all.map(|(rate, starts, behind, h)| PaceFigures {
        rate_per_s: rate.per_s,
        unit: rate.unit.name().to_string(),
        starts,
        behind,
        lateness: latency::dist(&h),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pacer_ahead_sleeps_to_its_schedule_and_one_behind_records_lateness() {
        let stop = AtomicBool::new(false);
        let mut p = Pacer::new(Rate { per_s: 200.0, unit: RateUnit::Loops });
        let t0 = Instant::now();
        for _ in 0..5 {
            assert!(p.start(&stop));
        }
        // Starts 0..4 are due at 0, 5, 10, 15, 20 ms: the fifth cannot begin before 20 ms.
        assert!(t0.elapsed() >= Duration::from_millis(20));
        // Fall 50 ms behind: the next start is due at 25 ms and begins at once, late.
        std::thread::sleep(Duration::from_millis(50));
        assert!(p.start(&stop));
        let f = figures([&p]).unwrap();
        assert_eq!(f.starts, 6);
        assert!(f.behind >= 1, "{f:?}");
        assert!(f.lateness.max_ns >= 25_000_000, "{f:?}");
        assert_eq!(f.lateness.count, 6);
        assert_eq!(f.unit, "loops");
    }

    #[test]
    fn a_raised_stop_ends_the_wait_without_a_start() {
        let stop = AtomicBool::new(false);
        let mut p = Pacer::new(Rate { per_s: 0.01, unit: RateUnit::Ops });
        assert!(p.start(&stop));
        stop.store(true, Ordering::Relaxed);
        assert!(!p.start(&stop), "the second start is due in 100 s");
        assert_eq!(figures([&p]).unwrap().starts, 1);
    }
}
