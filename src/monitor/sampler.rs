//! A thread that samples dirty memory and device activity at a fixed interval.
//!
//! Each sample is one read of `/proc/meminfo` and one of each device's `stat`:
//! Dirty and Writeback (KiB), the devices' requests in flight, and their
//! cumulative sectors (throughput is the difference of neighbouring samples).
//! [`Sampler::mark`] adds a sample at once from the caller's thread, so every
//! step boundary has one even when the step is shorter than the interval.
//! The series is bounded: past [`MAX_SAMPLES`] every other sample is dropped and
//! the interval doubles, so an hour-long run keeps its shape in bounded memory.

use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{BlockStat, Watch, parse};
use crate::model::{Timeline, TimelineSample};

/// How often the sampler reads (the 100 ms).
pub const SAMPLE_INTERVAL: Duration = Duration::from_millis(100);

/// Most samples kept before the series is thinned.
pub const MAX_SAMPLES: usize = 20_000;

struct Series {
    samples: Vec<TimelineSample>,
    interval: Duration,
}

/// A running sampler; [`Sampler::stop`] ends the thread and returns the series.
pub struct Sampler {
    watch: Arc<Watch>,
    origin: Instant,
    series: Arc<Mutex<Series>>,
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Sampler {
    /// Start sampling `watch` every `interval`, the first sample at once.
    pub fn start(watch: Watch, interval: Duration) -> Sampler {
        let watch = Arc::new(watch);
        let origin = Instant::now();
        let series = Arc::new(Mutex::new(Series { samples: Vec::new(), interval }));
        let (tx, rx) = mpsc::channel::<()>();
        let (w, s) = (Arc::clone(&watch), Arc::clone(&series));
        // A sampler that cannot start leaves an empty timeline; it must never fail the cell.
        let thread = std::thread::Builder::new()
            .name("fsbench-sampler".into())
            .spawn(move || {
                loop {
                    push(&s, sample(&w, origin));
                    let wait = s.lock().map(|g| g.interval).unwrap_or(interval);
                    match rx.recv_timeout(wait) {
                        Err(RecvTimeoutError::Timeout) => continue,
                        _ => break,
                    }
                }
            })
            .ok();
        Sampler { watch, origin, series, stop: Some(tx), thread }
    }

    /// Milliseconds since the sampler started: the timeline's clock.
    pub fn now_ms(&self) -> u64 {
        self.origin.elapsed().as_millis() as u64
    }

    /// Take one sample now, from the caller's thread (a step boundary).
    pub fn mark(&self) {
        push(&self.series, sample(&self.watch, self.origin));
    }

    /// Peak Dirty, Writeback (KiB) and in-flight requests over samples taken at or after `since_ms`.
    pub fn peaks_since(&self, since_ms: u64) -> (u64, u64, u64) {
        let g = self.series.lock().unwrap_or_else(|e| e.into_inner());
        g.samples
            .iter()
            .filter(|s| s.t_ms >= since_ms)
            .fold((0, 0, 0), |(d, w, f), s| (d.max(s.dirty_kib), w.max(s.writeback_kib), f.max(s.in_flight)))
    }

    /// Stop the thread and return the series, in time order.
    pub fn stop(mut self) -> Timeline {
        self.finish()
    }

    fn finish(&mut self) -> Timeline {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let mut g = self.series.lock().unwrap_or_else(|e| e.into_inner());
        let mut samples = std::mem::take(&mut g.samples);
        // mark() and the thread race; one order for readers.
        samples.sort_by_key(|s| s.t_ms);
        Timeline {
            interval_ms: g.interval.as_millis() as u64,
            devices: self.watch.devices.iter().map(|d| d.name.clone()).collect(),
            samples,
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        // A sampler dropped on an error path must not leave its thread running.
        if self.thread.is_some() {
            let _ = self.finish();
        }
    }
}

fn push(series: &Mutex<Series>, s: TimelineSample) {
    let mut g = series.lock().unwrap_or_else(|e| e.into_inner());
    g.samples.push(s);
    if g.samples.len() > MAX_SAMPLES {
        let kept: Vec<TimelineSample> = g.samples.iter().step_by(2).cloned().collect();
        g.samples = kept;
        g.interval *= 2;
    }
}

fn sample(w: &Watch, origin: Instant) -> TimelineSample {
    let (dirty_kib, writeback_kib) =
        parse::read_capped(&w.proc_root.join("meminfo")).map(|t| parse::meminfo_dirty_writeback(&t)).unwrap_or((0, 0));
    let mut s =
        TimelineSample { t_ms: origin.elapsed().as_millis() as u64, dirty_kib, writeback_kib, ..Default::default() };
    for d in &w.devices {
        if let Some(b) = parse::read_capped(&d.stat).and_then(|t| BlockStat::parse(&t)) {
            s.in_flight += b.in_flight;
            s.read_sectors += b.read_sectors;
            s.write_sectors += b.write_sectors;
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_at_the_interval_and_on_marks() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("meminfo"), "Dirty: 2048 kB\nWriteback: 8 kB\n").unwrap();
        let w = Watch { devices: Vec::new(), proc_root: d.path().into() };
        let s = Sampler::start(w, Duration::from_millis(10));
        std::thread::sleep(Duration::from_millis(60));
        s.mark();
        assert_eq!(s.peaks_since(0), (2048, 8, 0));
        let t = s.stop();
        assert!(t.samples.len() >= 3, "{} samples", t.samples.len());
        assert!(t.samples.windows(2).all(|p| p[0].t_ms <= p[1].t_ms));
        assert_eq!(t.interval_ms, 10);
    }

    #[test]
    fn a_long_series_is_thinned_not_unbounded() {
        let series = Mutex::new(Series { samples: Vec::new(), interval: Duration::from_millis(100) });
        for t in 0..=MAX_SAMPLES as u64 {
            push(&series, TimelineSample { t_ms: t, ..Default::default() });
        }
        let g = series.lock().unwrap();
        assert_eq!(g.samples.len(), MAX_SAMPLES / 2 + 1);
        assert_eq!(g.interval, Duration::from_millis(200));
        assert_eq!(g.samples[1].t_ms, 2);
    }
}
