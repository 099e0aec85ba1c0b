//! What the monitors cost, per call: a counter snapshot (vmstat, /proc/stat, the cell's
//! block devices) and one sampler sample (meminfo and the devices). `benches/monitors.sh`
//! turns these into a share of a kernel-untar iteration and measures the end-to-end
//! difference side by side; this bench is the part that does not need root.
//!
//! Usage: `cargo bench --bench monitors [-- DEVICES]` (default 1 device: loop0..).
//! Prints microseconds per call (median of 7 rounds of 2,000 calls).

use std::hint::black_box;
use std::time::Instant;

use fsbench::monitor::{Sampler, Watch, WatchedDevice};

fn per_call_us(mut f: impl FnMut()) -> f64 {
    let mut rounds: Vec<f64> = (0..7)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..2000 {
                f();
            }
            t.elapsed().as_secs_f64() * 1e6 / 2000.0
        })
        .collect();
    rounds.sort_by(f64::total_cmp);
    rounds[3]
}

fn main() {
    let n: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(1);
    // Any block device's stat file reads the same way; loop devices exist unattached too.
    let devices: Vec<WatchedDevice> = (0..8)
        .map(|i| WatchedDevice { name: format!("loop{i}"), stat: format!("/sys/block/loop{i}/stat").into() })
        .filter(|d| d.stat.is_file())
        .take(n)
        .collect();
    let watch = Watch { devices, ..Watch::default() };
    let snapshot_us = per_call_us(|| {
        black_box(watch.snapshot());
    });
    let a = watch.snapshot();
    let delta_us = per_call_us(|| {
        black_box(a.delta(&watch.snapshot()));
    }) - snapshot_us;
    // A sampler whose thread sleeps for an hour: mark() is exactly one sample.
    let sampler = Sampler::start(watch.clone(), std::time::Duration::from_secs(3600));
    let sample_us = per_call_us(|| sampler.mark());
    drop(sampler);
    println!("devices watched: {}", watch.devices.len());
    println!("snapshot (vmstat + stat + devices): {snapshot_us:.1} us");
    println!("delta of two snapshots:             {:.2} us", delta_us.max(0.0));
    println!("one sampler sample (meminfo + devices): {sample_us:.1} us");
    // Per step: 2 snapshots, 2 boundary samples; plus 10 samples a second on the sampler thread.
    let per_step = 2.0 * snapshot_us + 2.0 * sample_us;
    println!(
        "per step (outside its timed part): {per_step:.0} us; sampler thread: {:.2}% of one CPU",
        sample_us * 10.0 / 1e4
    );
}
