//! What the monitors cost, per call: a counter snapshot (vmstat, /proc/stat, the cell's
//! block devices) and one sampler sample (meminfo and the devices). `benches/monitors.sh`
//! turns these into a share of a kernel-untar iteration and measures the end-to-end
//! difference side by side; this bench is the part that does not need root.
//!
//! Usage: `cargo bench --bench monitors [-- DEVICES]` (default 1 device: loop0..).
//! Prints microseconds of CPU per call (median of 7 rounds of 2,000 calls).

use std::hint::black_box;
use std::time::{Duration, Instant};

use fsbench::monitor::{Sampler, Watch, WatchedDevice};

/// This thread's CPU time: on a shared machine, wall time would count the time spent
/// waiting for a CPU (at a load of 10 on 2 cores, five times the cost itself).
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid clock id and a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn per_call_us(mut f: impl FnMut()) -> f64 {
    let mut rounds: Vec<f64> = (0..7)
        .map(|_| {
            let t = thread_cpu();
            for _ in 0..2000 {
                f();
            }
            (thread_cpu() - t).as_secs_f64() * 1e6 / 2000.0
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

    // What histogram mode adds to every lat_fs iteration: one vDSO clock read and one
    // record, against the counted loop's nothing (its clock read is once per ~100 us batch).
    let mut h = fsbench::monitor::latency::histogram();
    let mut prev = Instant::now();
    let added_ns = per_call_us(|| {
        for _ in 0..100 {
            let t = Instant::now();
            h.saturating_record(t.duration_since(prev).as_nanos() as u64);
            prev = t;
        }
    }) * 1e3
        / 100.0;
    let empty_ns = per_call_us(|| {
        for i in 0..100u64 {
            black_box(i);
        }
    }) * 1e3
        / 100.0;
    let added = (added_ns - empty_ns).max(0.0);
    println!("histogram mode adds per iteration: {added:.1} ns (clock read + record)");
    // Reference latencies per iteration (README's lat_fs figures, 1 task): 1/total_loops.
    for (test, loops_per_ms) in
        [("open_close", 617.0), ("create_unlink", 67.0), ("chown", 293.0), ("write_truncate", 96.0)]
    {
        let op_ns = 1e6 / loops_per_ms;
        println!("  {test}: {op_ns:.0} ns per iteration -> expected total_loops ratio {:.4}", op_ns / (op_ns + added));
    }
}
