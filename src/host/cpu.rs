//! Who else used the CPUs during a window: `/proc/stat` totals minus fsbench's own rusage.
//!
//! A repetition's numbers are only as good as the machine was quiet while they were
//! taken. [`Window::start`] snapshots the system-wide CPU totals (`cpu` line of
//! /proc/stat, in clock ticks) and fsbench's own CPU time (getrusage of itself and
//! of its reaped children: the lat_fs workers are reaped inside the window, so
//! their whole CPU time is in it); [`Window::finish`] takes the differences:
//!
//! - `foreign_cpu_us` = busy time of all CPUs (user + nice + system + irq +
//!   softirq) minus our own user + system time: what other processes (and the
//!   kernel on their behalf) consumed;
//! - `steal_us` = time the hypervisor gave our virtual CPUs to someone else.
//!
//! A window is **disturbed** when `(foreign + steal) / wall` exceeds the threshold,
//! a fraction of one CPU (default [`DEFAULT_THRESHOLD`] = 25%: a neighbour that
//! keeps a quarter of a CPU busy for the whole window). The totals tick at
//! USER_HZ (10 ms), so a short window has a granularity of about one tick per
//! CPU: a window is also never disturbed by less than [`MIN_TICKS`] ticks of
//! foreign + steal time, so tick jitter alone cannot mark a 100 ms window.

use std::io;

use crate::model::Disturbance;

/// Default disturbance threshold: foreign + steal CPU above a quarter of one CPU over the window.
pub const DEFAULT_THRESHOLD: f64 = 0.25;

/// Fewest clock ticks of foreign + steal time that can make a window disturbed.
pub const MIN_TICKS: u64 = 3;

/// System-wide CPU time totals from the `cpu` line of `/proc/stat`, in clock ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTotals {
    /// Time in user mode (includes guest time).
    pub user: u64,
    /// Niced user mode.
    pub nice: u64,
    /// Kernel mode.
    pub system: u64,
    /// Idle.
    pub idle: u64,
    /// Waiting for I/O (idle in disguise).
    pub iowait: u64,
    /// Servicing hardware interrupts.
    pub irq: u64,
    /// Servicing softirqs.
    pub softirq: u64,
    /// Stolen by the hypervisor.
    pub steal: u64,
}

impl CpuTotals {
    /// Parse the aggregate `cpu ` line of a `/proc/stat` text; `None` when it is missing or malformed.
    pub fn parse(stat: &str) -> Option<CpuTotals> {
        let line = stat.lines().find(|l| l.starts_with("cpu "))?;
        let v: Vec<u64> = line.split_whitespace().skip(1).map(|f| f.parse().ok()).collect::<Option<_>>()?;
        // Old kernels have fewer fields; the first four always exist.
        let at = |i: usize| v.get(i).copied().unwrap_or(0);
        (v.len() >= 4).then(|| CpuTotals {
            user: at(0),
            nice: at(1),
            system: at(2),
            idle: at(3),
            iowait: at(4),
            irq: at(5),
            softirq: at(6),
            steal: at(7),
        })
    }

    /// Read `/proc/stat` now.
    pub fn read() -> io::Result<CpuTotals> {
        let text = std::fs::read_to_string("/proc/stat")?;
        CpuTotals::parse(&text).ok_or_else(|| io::Error::other("/proc/stat has no readable `cpu` line"))
    }

    /// Busy ticks: everything but idle, iowait and steal.
    pub fn busy(&self) -> u64 {
        self.user + self.nice + self.system + self.irq + self.softirq
    }
}

/// Microseconds per clock tick of /proc/stat (USER_HZ, 100 on Linux).
pub fn tick_us() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 { 1_000_000 / hz as u64 } else { 10_000 }
}

/// fsbench's own CPU time so far: user + system of this process and of its reaped children, µs.
pub fn own_cpu_us() -> u64 {
    let get = |who| {
        // SAFETY: rusage is plain old data; getrusage fills it.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: ru is a valid out-pointer.
        if unsafe { libc::getrusage(who, &mut ru) } != 0 {
            return 0;
        }
        timeval_us(ru.ru_utime) + timeval_us(ru.ru_stime)
    };
    get(libc::RUSAGE_SELF) + get(libc::RUSAGE_CHILDREN)
}

/// An open accounting window.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    totals: Option<CpuTotals>,
    own_us: u64,
    started: std::time::Instant,
}

impl Window {
    /// Snapshot the totals and our own CPU time.
    pub fn start() -> Window {
        Window { totals: CpuTotals::read().ok(), own_us: own_cpu_us(), started: std::time::Instant::now() }
    }

    /// Close the window; `None` when /proc/stat cannot be read (nothing to judge by).
    pub fn finish(&self, threshold: f64) -> Option<Disturbance> {
        let after = CpuTotals::read().ok()?;
        let wall_us = self.started.elapsed().as_micros() as u64;
        Some(account(&self.totals?, &after, self.own_us, own_cpu_us(), wall_us, tick_us(), threshold))
    }
}

/// The disturbance of a window from its two snapshots (pure, for tests).
pub fn account(
    before: &CpuTotals,
    after: &CpuTotals,
    own_before_us: u64,
    own_after_us: u64,
    wall_us: u64,
    tick_us: u64,
    threshold: f64,
) -> Disturbance {
    let busy_us = after.busy().saturating_sub(before.busy()) * tick_us;
    let own_cpu_us = own_after_us.saturating_sub(own_before_us);
    let foreign_cpu_us = busy_us.saturating_sub(own_cpu_us);
    let steal_us = after.steal.saturating_sub(before.steal) * tick_us;
    let share = if wall_us == 0 { 0.0 } else { (foreign_cpu_us + steal_us) as f64 / wall_us as f64 };
    let disturbed = share > threshold && foreign_cpu_us + steal_us >= MIN_TICKS * tick_us;
    Disturbance { wall_us, own_cpu_us, foreign_cpu_us, steal_us, share, disturbed }
}

/// How long a rerun waits, at most, for the machine to become quiet (see [`wait_until_quiet`]).
pub const QUIET_WAIT_MAX: std::time::Duration = std::time::Duration::from_secs(5);

/// Sleep in windows of `step` until one of them is not disturbed at `threshold`, or
/// until `max` has passed or `cancel()` says stop; returns how long it waited.
///
/// A disturbed repetition is rerun, and a neighbour that is busy now is likely still
/// busy a moment later: rerunning at once mostly buys another disturbed repetition and
/// spends the rerun budget. Waiting for one quiet window first makes the rerun count.
pub fn wait_until_quiet(
    threshold: f64,
    step: std::time::Duration,
    max: std::time::Duration,
    cancel: &dyn Fn() -> bool,
) -> std::time::Duration {
    let t0 = std::time::Instant::now();
    while t0.elapsed() < max && !cancel() {
        let w = Window::start();
        std::thread::sleep(step);
        match w.finish(threshold) {
            Some(d) if d.disturbed => continue,
            _ => break,
        }
    }
    t0.elapsed()
}

/// A `timeval` in whole microseconds.
pub fn timeval_us(tv: libc::timeval) -> u64 {
    tv.tv_sec as u64 * 1_000_000 + tv.tv_usec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  100 5 50 1000 10 3 2 7 0 0\ncpu0 50 2 25 500 5 1 1 3 0 0\nintr 1 2 3\n";

    #[test]
    fn parses_the_aggregate_line() {
        let t = CpuTotals::parse(STAT).unwrap();
        assert_eq!(
            (t.user, t.nice, t.system, t.idle, t.iowait, t.irq, t.softirq, t.steal),
            (100, 5, 50, 1000, 10, 3, 2, 7)
        );
        assert_eq!(t.busy(), 160);
        assert!(CpuTotals::parse("cpu0 1 2 3 4\n").is_none());
        assert!(CpuTotals::parse("cpu  1 x 3 4\n").is_none());
        assert_eq!(CpuTotals::parse("cpu  1 2 3 4\n").unwrap().steal, 0);
    }

    #[test]
    fn foreign_time_is_busy_time_minus_our_own() {
        let before = CpuTotals { user: 100, system: 50, ..Default::default() };
        // 60 ticks of busy time (600 ms) in a 1 s window, of which 450 ms were ours.
        let after = CpuTotals { user: 140, system: 70, steal: 5, ..before };
        let d = account(&before, &after, 1_000, 451_000, 1_000_000, 10_000, 0.25);
        assert_eq!((d.own_cpu_us, d.foreign_cpu_us, d.steal_us), (450_000, 150_000, 50_000));
        assert!((d.share - 0.2).abs() < 1e-12 && !d.disturbed);
        let d = account(&before, &after, 1_000, 351_000, 1_000_000, 10_000, 0.25);
        assert!(d.disturbed, "{d:?}");
        // Our own time beyond the tick-sampled totals never makes a negative foreign time.
        let d = account(&before, &after, 0, 2_000_000, 1_000_000, 10_000, 0.25);
        assert_eq!(d.foreign_cpu_us, 0);
        // Two ticks of foreign time in a 50 ms window is 40% of a CPU, but within tick jitter.
        let after = CpuTotals { user: 102, ..before };
        let d = account(&before, &after, 0, 0, 50_000, 10_000, 0.25);
        assert!(d.share > 0.25 && !d.disturbed, "{d:?}");
    }

    #[test]
    fn a_synthetic_busy_process_is_foreign_and_our_own_loop_is_not() {
        // A busy child that is not reaped inside the window is someone else's CPU time to us.
        let mut hog = std::process::Command::new("sh").args(["-c", "while :; do :; done"]).spawn().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let w = Window::start();
        std::thread::sleep(std::time::Duration::from_millis(600));
        let d = w.finish(DEFAULT_THRESHOLD).expect("/proc/stat is readable");
        let _ = hog.kill();
        let _ = hog.wait();
        // The hog ran for (nearly) the whole window unless the machine is saturated;
        // a third of a CPU is a floor that holds even when it shares its core.
        assert!(d.foreign_cpu_us as f64 >= 0.3 * d.wall_us as f64, "{d:?}");
        assert!(d.disturbed, "{d:?}");
        // Our own busy loop is ours: it shows up as own time. Own time is the whole process's
        // (other tests run in parallel threads of this binary), so it is bounded by all CPUs.
        let w = Window::start();
        let (t, cpu0) = (std::time::Instant::now(), own_cpu_us());
        let mut x = 0u64;
        while own_cpu_us() - cpu0 < 100_000 && t.elapsed() < std::time::Duration::from_secs(20) {
            for _ in 0..10_000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
        }
        std::hint::black_box(x);
        let d = w.finish(DEFAULT_THRESHOLD).unwrap();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
        assert!(d.own_cpu_us >= 100_000 && d.own_cpu_us <= cpus * d.wall_us + 10_000, "{d:?}");
    }

    #[test]
    fn waiting_for_quiet_stops_at_a_quiet_window_or_when_cancelled() {
        let step = std::time::Duration::from_millis(20);
        // Any window is quiet under an infinite threshold: one step.
        let w = wait_until_quiet(f64::INFINITY, step, std::time::Duration::from_secs(5), &|| false);
        assert!(w >= step && w < std::time::Duration::from_secs(5), "{w:?}");
        // A cancelled wait returns at once, however busy the machine.
        let w = wait_until_quiet(0.0, step, std::time::Duration::from_secs(5), &|| true);
        assert!(w < step, "{w:?}");
    }
}
