//! Who else used the CPUs during a window: `/proc/stat` totals minus the run's own processes.
//!
//! A repetition's numbers are only as good as the machine was quiet while they were
//! taken. [`Window::start`] snapshots the system-wide CPU totals (`cpu` line of
//! /proc/stat, in clock ticks) and the CPU time of every process in `/proc`
//! ([`Processes`]); [`Window::finish`] takes the differences:
//!
//! - **ours** (`own_cpu_us`): the run's process tree, the process given as its root
//!   and all its descendants, each counted with its reaped children
//!   (utime + stime + cutime + cstime). A worker that is reaped inside the window
//!   leaves the tree and its time moves to its parent's cutime, so the sum stays
//!   whole; the copies of a steps cell count each other as ours;
//! - **the kernel's** (`kernel_cpu_us`): kernel threads (writeback, loop workers,
//!   journal threads: mostly work the run's own I/O caused) and interrupt time. It is
//!   recorded, but it is not a disturbance: it cannot be told apart from our own work;
//! - **foreign** (`foreign_cpu_us`): the rest of the busy time (user + nice + system):
//!   other processes, including the short-lived ones no snapshot saw;
//! - `steal_us`: time the hypervisor gave our virtual CPUs to someone else.
//!
//! A window is **disturbed** when other processes competed with the cell for CPUs,
//! not merely when they ran: [`contention_us`] is the foreign CPU time that did not
//! fit into the CPUs the cell left idle, plus all steal time. The cell needs one CPU
//! per task for the whole window (what it asked for, not what it got: a contended
//! cell gets less), or the CPU its tree actually used if that is more, plus the
//! kernel threads and interrupts it woke; the machine has `online_cpus` for the
//! window. So a one-task cell beside a one-core neighbour on two CPUs is quiet (the
//! neighbour had the other CPU), two tasks beside it are contended, and a background
//! job on a 16-CPU workstation is not a disturbance. Steal time always counts: the
//! hypervisor took a virtual CPU that was runnable, and it may have been ours.
//! The window is disturbed when `contention_us / wall` exceeds the threshold, a
//! fraction of one CPU (default [`DEFAULT_THRESHOLD`] = 25%: a neighbour that takes
//! a quarter of a CPU from the cell for the whole window). All of it ticks at
//! USER_HZ (10 ms), so a short window has a granularity of about one tick per
//! CPU: a window is also never disturbed by less than [`MIN_TICKS`] ticks of
//! contention, so tick jitter alone cannot mark a 100 ms window.
//!
//! Why a process tree and not getrusage: getrusage(RUSAGE_CHILDREN) adds a child's
//! whole life when it is reaped, so any long-lived child reaped inside a window
//! (or, in a test binary, another test's) made the window look quiet, and a copy
//! of a steps cell saw its sibling copies as neighbours.

use std::io;

use crate::model::Disturbance;

/// Default disturbance threshold: contention above a quarter of one CPU over the window.
pub const DEFAULT_THRESHOLD: f64 = 0.25;

/// Fewest clock ticks of contention that can make a window disturbed.
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
    /// CPUs these totals cover: the `cpuN` lines (one per online CPU).
    pub online_cpus: u32,
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
            online_cpus: stat
                .lines()
                .filter(|l| l.strip_prefix("cpu").is_some_and(|n| n.starts_with(|c: char| c.is_ascii_digit())))
                .count() as u32,
        })
    }

    /// Read `/proc/stat` now.
    pub fn read() -> io::Result<CpuTotals> {
        let text = std::fs::read_to_string("/proc/stat")?;
        CpuTotals::parse(&text).ok_or_else(|| io::Error::other("/proc/stat has no readable `cpu` line"))
    }

    /// Ticks spent running processes: user + nice + system.
    pub fn processes(&self) -> u64 {
        self.user + self.nice + self.system
    }

    /// Ticks spent servicing interrupts: irq + softirq.
    pub fn interrupts(&self) -> u64 {
        self.irq + self.softirq
    }
}

/// Microseconds per clock tick of /proc/stat (USER_HZ, 100 on Linux).
pub fn tick_us() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 { 1_000_000 / hz as u64 } else { 10_000 }
}

/// `PF_KTHREAD` in the flags field of `/proc/<pid>/stat`.
const PF_KTHREAD: u64 = 0x0020_0000;

/// One process's line of `/proc/<pid>/stat`, the fields accounting needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    /// Parent process id.
    pub ppid: u32,
    /// A kernel thread (`PF_KTHREAD`).
    pub kernel_thread: bool,
    /// utime + stime + cutime + cstime: the process and its reaped children, in ticks.
    pub ticks: u64,
}

impl ProcStat {
    /// Parse a `/proc/<pid>/stat` text; `None` when it is malformed. The command
    /// name is in parentheses and may itself hold `)` and spaces: fields are
    /// counted from the last `)`.
    pub fn parse(stat: &str) -> Option<ProcStat> {
        let rest = &stat[stat.rfind(')')? + 1..];
        // After the name: state(3) ppid(4) ... flags(9) ... utime(14) stime(15) cutime(16) cstime(17).
        let f: Vec<&str> = rest.split_whitespace().take(15).collect();
        let num = |i: usize| f.get(i)?.parse::<u64>().ok();
        // cutime and cstime are signed in the kernel's format; they are never negative in practice.
        let signed = |i: usize| f.get(i)?.parse::<i64>().ok().map(|v| v.max(0) as u64);
        Some(ProcStat {
            ppid: u32::try_from(num(1)?).ok()?,
            kernel_thread: num(6)? & PF_KTHREAD != 0,
            ticks: num(11)? + num(12)? + signed(13)? + signed(14)?,
        })
    }
}

/// The CPU time of every process in `/proc` at one moment, split by whose it is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Processes {
    /// The run's tree: its root and every descendant, with their reaped children, in ticks.
    pub ours: u64,
    /// Kernel threads, in ticks.
    pub kernel: u64,
}

impl Processes {
    /// Split `(pid, stat)` pairs into the tree under `root` and the kernel threads (pure, for tests).
    pub fn split(procs: &[(u32, ProcStat)], root: u32) -> Processes {
        let parent: std::collections::HashMap<u32, u32> = procs.iter().map(|(pid, s)| (*pid, s.ppid)).collect();
        let in_tree = |mut pid: u32| {
            // A parent chain is short; the bound only guards against a cycle in a racy read.
            for _ in 0..procs.len() + 1 {
                if pid == root {
                    return true;
                }
                match parent.get(&pid) {
                    Some(&p) if p != 0 && p != pid => pid = p,
                    _ => return false,
                }
            }
            false
        };
        let mut out = Processes::default();
        for (pid, s) in procs {
            if s.kernel_thread {
                out.kernel += s.ticks;
            } else if in_tree(*pid) {
                out.ours += s.ticks;
            }
        }
        out
    }

    /// Read every process of `/proc` now, twice, keeping the larger of each sum. /proc
    /// lists processes in pid order, a parent before its children: a child reaped while
    /// /proc is read moves its time into its parent's cutime after the parent was read and
    /// is counted nowhere in that read (a steps copy's window once lost its sibling's whole
    /// 0.44 s so, its sibling's process chain being reaped as the window closed). Within
    /// a tree the sums only grow but for such losses (or a child reaped outside the tree,
    /// whose time then leaves it either way), so the larger of two reads back to back is
    /// the one that lost less; both losing needs a reap inside each.
    pub fn read(root: u32) -> io::Result<Processes> {
        let first = Processes::split(&every_process()?, root);
        let second = Processes::split(&every_process()?, root);
        Ok(Processes { ours: first.ours.max(second.ours), kernel: first.kernel.max(second.kernel) })
    }
}

/// Every process of `/proc` now, with its stat line; one that exits while it is read is skipped.
fn every_process() -> io::Result<Vec<(u32, ProcStat)>> {
    let mut procs = Vec::new();
    for entry in std::fs::read_dir("/proc")? {
        let entry = entry?;
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(text) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        if let Some(s) = ProcStat::parse(&text) {
            procs.push((pid, s));
        }
    }
    Ok(procs)
}

/// The process ids of the kernel threads (`PF_KTHREAD`) running now.
pub fn kernel_thread_pids() -> io::Result<std::collections::BTreeSet<u32>> {
    Ok(every_process()?.into_iter().filter(|(_, s)| s.kernel_thread).map(|(pid, _)| pid).collect())
}

/// The snapshot a window starts from.
#[derive(Debug, Clone, Copy)]
struct Snapshot {
    totals: CpuTotals,
    procs: Processes,
}

impl Snapshot {
    fn read(root: u32) -> Option<Snapshot> {
        Some(Snapshot { totals: CpuTotals::read().ok()?, procs: Processes::read(root).ok()? })
    }
}

/// An open accounting window.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    root: u32,
    start: Option<Snapshot>,
    started: std::time::Instant,
}

impl Window {
    /// Snapshot the totals and the processes; `root` is the run's process (the
    /// fsbench that runs the cell): it and its descendants are ours.
    pub fn start(root: u32) -> Window {
        Window { root, start: Snapshot::read(root), started: std::time::Instant::now() }
    }

    /// Close the window of a cell that needed `needed_cpus` CPUs (one per task);
    /// `None` when /proc cannot be read (nothing to judge by).
    pub fn finish(&self, threshold: f64, needed_cpus: u32) -> Option<Disturbance> {
        let end = Snapshot::read(self.root)?;
        let wall_us = self.started.elapsed().as_micros() as u64;
        Some(account(&self.start?, &end, wall_us, tick_us(), Judge { threshold, needed_cpus }))
    }
}

/// What a window is judged against: the threshold and the CPUs the cell needed.
#[derive(Debug, Clone, Copy)]
struct Judge {
    threshold: f64,
    needed_cpus: u32,
}

/// The disturbance of a window from its two snapshots (pure, for tests).
fn account(before: &Snapshot, after: &Snapshot, wall_us: u64, tick_us: u64, judge: Judge) -> Disturbance {
    let delta = |a: u64, b: u64| b.saturating_sub(a) * tick_us;
    let (b, a) = (&before.totals, &after.totals);
    let process_us = delta(b.processes(), a.processes());
    let interrupt_us = delta(b.interrupts(), a.interrupts());
    let own_cpu_us = delta(before.procs.ours, after.procs.ours);
    let kernel_threads_us = delta(before.procs.kernel, after.procs.kernel);
    let foreign_cpu_us = process_us.saturating_sub(own_cpu_us + kernel_threads_us);
    let steal_us = delta(b.steal, a.steal);
    let share = if wall_us == 0 { 0.0 } else { (foreign_cpu_us + steal_us) as f64 / wall_us as f64 };
    // A CPU taken offline inside the window leaves the smaller count: the cautious one.
    let online_cpus = b.online_cpus.min(a.online_cpus);
    let mut d = Disturbance {
        wall_us,
        own_cpu_us,
        kernel_cpu_us: kernel_threads_us + interrupt_us,
        foreign_cpu_us,
        steal_us,
        share,
        disturbed: false,
        needed_cpus: Some(judge.needed_cpus),
        online_cpus: Some(online_cpus),
        contention_us: None,
        threshold: Some(judge.threshold),
    };
    let contention = contention_us(&d, judge.needed_cpus, online_cpus);
    d.contention_us = Some(contention);
    d.disturbed = is_disturbed(contention, wall_us, tick_us, judge.threshold);
    d
}

/// The part of other processes' CPU time that competed with the cell, plus all steal
/// time, in µs: `min(foreign, max(0, foreign + needed + kernel - online × wall)) + steal`,
/// where `needed` is one CPU per task over the window or the run's own CPU time if
/// that is more. Foreign time that fitted into CPUs the cell left idle is not
/// contention; the cell's own excess (more tasks than CPUs) is not a disturbance
/// either, hence the `min`. With `online_cpus` unknown (0) every foreign µs counts.
pub fn contention_us(d: &Disturbance, needed_cpus: u32, online_cpus: u32) -> u64 {
    let capacity = u64::from(online_cpus) * d.wall_us;
    let needed = d.own_cpu_us.max(u64::from(needed_cpus) * d.wall_us) + d.kernel_cpu_us;
    let crowded = (d.foreign_cpu_us + needed).saturating_sub(capacity);
    crowded.min(d.foreign_cpu_us) + d.steal_us
}

/// A window is disturbed when its contention, in CPUs over the window, exceeds
/// `threshold` by at least [`MIN_TICKS`] clock ticks.
pub fn is_disturbed(contention_us: u64, wall_us: u64, tick_us: u64, threshold: f64) -> bool {
    wall_us > 0 && contention_us as f64 / wall_us as f64 > threshold && contention_us >= MIN_TICKS * tick_us
}

/// How long a rerun waits, at most, for the machine to become quiet (see [`wait_until_quiet`]).
pub const QUIET_WAIT_MAX: std::time::Duration = std::time::Duration::from_secs(5);

/// Sleep in windows of `step` until one of them is not disturbed at `threshold` for a
/// cell needing `needed_cpus` CPUs, or until `max` has passed or `cancel()` says stop;
/// returns how long it waited. `root`'s tree is ours, as in [`Window::start`].
///
/// A disturbed repetition is rerun, and a neighbour that is busy now is likely still
/// busy a moment later: rerunning at once mostly buys another disturbed repetition and
/// spends the rerun budget. Waiting for one quiet window first makes the rerun count.
pub fn wait_until_quiet(
    root: u32,
    threshold: f64,
    needed_cpus: u32,
    step: std::time::Duration,
    max: std::time::Duration,
    cancel: &dyn Fn() -> bool,
) -> std::time::Duration {
    let t0 = std::time::Instant::now();
    while t0.elapsed() < max && !cancel() {
        let w = Window::start(root);
        std::thread::sleep(step);
        match w.finish(threshold, needed_cpus) {
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
        assert_eq!((t.processes(), t.interrupts()), (155, 5));
        assert!(CpuTotals::parse("cpu0 1 2 3 4\n").is_none());
        assert!(CpuTotals::parse("cpu  1 x 3 4\n").is_none());
        assert_eq!(CpuTotals::parse("cpu  1 2 3 4\n").unwrap().steal, 0);
    }

    fn stat(ppid: u32, kernel_thread: bool, ticks: u64) -> ProcStat {
        ProcStat { ppid, kernel_thread, ticks }
    }

    #[test]
    fn a_proc_stat_line_is_read_past_a_name_with_parentheses_and_spaces() {
        // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime ...
        let line = "4242 (a) b (c) S 17 4242 4242 0 -1 4194560 10 0 0 0 7 3 20 -1 20 0 1 0 99 0 0\n";
        assert_eq!(ProcStat::parse(line), Some(stat(17, false, 7 + 3 + 20)));
        let kthread = "77 (kworker/u4:2-loop0) I 2 0 0 0 -1 69238880 0 0 0 0 0 150 0 0 20 0 1 0 5 0 0\n";
        assert_eq!(ProcStat::parse(kthread), Some(stat(2, true, 150)));
        assert_eq!(ProcStat::parse("12 (x) S 1 2 3"), None);
        assert_eq!(ProcStat::parse("no parenthesis at all"), None);
    }

    #[test]
    fn the_tree_under_the_root_is_ours_and_kernel_threads_are_the_kernels() {
        let procs = [
            (1, stat(0, false, 1000)),
            (2, stat(0, true, 5)),
            (10, stat(1, false, 100)), // the root
            (11, stat(10, false, 40)), // a worker
            (12, stat(11, false, 2)),  // the worker's child
            (20, stat(1, false, 300)), // a neighbour
            (21, stat(20, false, 30)), // its child
            (30, stat(2, true, 60)),   // a kworker
        ];
        assert_eq!(Processes::split(&procs, 10), Processes { ours: 142, kernel: 65 });
        assert_eq!(Processes::split(&procs, 20), Processes { ours: 330, kernel: 65 });
        // A racy read with a parent cycle ends.
        let cycle = [(5, stat(6, false, 1)), (6, stat(5, false, 1))];
        assert_eq!(Processes::split(&cycle, 10), Processes::default());
    }

    /// A one-task cell on a machine whose CPU count is unknown: every foreign µs counts.
    fn judge(threshold: f64) -> Judge {
        Judge { threshold, needed_cpus: 1 }
    }

    /// A 1 s window with `own`, `kernel`, `foreign` and `steal` in CPUs.
    fn window(own: f64, kernel: f64, foreign: f64, steal: f64) -> Disturbance {
        let us = |cpus: f64| (cpus * 1e6) as u64;
        Disturbance {
            wall_us: 1_000_000,
            own_cpu_us: us(own),
            kernel_cpu_us: us(kernel),
            foreign_cpu_us: us(foreign),
            steal_us: us(steal),
            ..Disturbance::default()
        }
    }

    fn disturbed(d: &Disturbance, needed_cpus: u32, online_cpus: u32) -> bool {
        is_disturbed(contention_us(d, needed_cpus, online_cpus), d.wall_us, 10_000, DEFAULT_THRESHOLD)
    }

    #[test]
    fn one_task_beside_a_one_core_neighbour_on_two_cpus_is_not_disturbed() {
        // The neighbour had the other CPU; the cell's kernel threads fit beside both.
        let d = window(1.0, 0.05, 1.0, 0.0);
        assert_eq!(contention_us(&d, 1, 2), 50_000);
        assert!(!disturbed(&d, 1, 2));
        // Judged as before (a fraction of one CPU, whoever it competed with), it was.
        assert!(disturbed(&d, 1, 0));
    }

    #[test]
    fn two_tasks_beside_a_one_core_neighbour_on_two_cpus_are_disturbed() {
        // Three busy loops on two CPUs: each got two thirds of one. What the cell got
        // (1.33 CPUs) is not what it needed (2): the rule judges the need.
        let d = window(4.0 / 3.0, 0.0, 2.0 / 3.0, 0.0);
        assert_eq!(contention_us(&d, 2, 2), 666_666);
        assert!(disturbed(&d, 2, 2));
    }

    #[test]
    fn a_background_job_on_sixteen_cpus_is_not_disturbed() {
        let d = window(4.0, 0.2, 1.5, 0.0);
        assert_eq!(contention_us(&d, 4, 16), 0);
        assert!(!disturbed(&d, 4, 16));
        // Unless the job fills the CPUs the cell left idle.
        let d = window(3.0, 0.2, 13.0, 0.0);
        assert!(disturbed(&d, 4, 16), "{}", contention_us(&d, 4, 16));
    }

    #[test]
    fn steal_time_counts_even_with_idle_cpus() {
        let d = window(1.0, 0.0, 0.0, 0.3);
        assert_eq!(contention_us(&d, 1, 16), 300_000);
        assert!(disturbed(&d, 1, 16));
    }

    #[test]
    fn more_tasks_than_cpus_is_not_a_disturbance_by_itself() {
        // Four tasks on two CPUs crowd each other; a sliver of foreign time is all
        // the others took, and only that counts.
        let d = window(1.9, 0.05, 0.05, 0.0);
        assert_eq!(contention_us(&d, 4, 2), 50_000);
        assert!(!disturbed(&d, 4, 2));
    }

    #[test]
    fn the_online_cpus_are_the_cpu_n_lines() {
        assert_eq!(CpuTotals::parse(STAT).unwrap().online_cpus, 1);
        assert_eq!(CpuTotals::parse("cpu  1 2 3 4\ncpu0 1 1 1 1\ncpu1 0 1 2 3\nintr 5\n").unwrap().online_cpus, 2);
    }

    #[test]
    fn foreign_time_is_process_time_minus_ours_and_the_kernels() {
        let snap = |user, system, irq, steal, ours, kernel| Snapshot {
            totals: CpuTotals { user, system, irq, steal, ..Default::default() },
            procs: Processes { ours, kernel },
        };
        // A 1 s window: 60 ticks of process time, 30 ours and 10 the kernel threads'.
        let before = snap(100, 50, 0, 0, 500, 70);
        let after = snap(140, 70, 4, 5, 530, 80);
        let d = account(&before, &after, 1_000_000, 10_000, judge(0.25));
        assert_eq!((d.own_cpu_us, d.kernel_cpu_us, d.foreign_cpu_us, d.steal_us), (300_000, 140_000, 200_000, 50_000));
        assert!((d.share - 0.25).abs() < 1e-12 && !d.disturbed, "{d:?}");
        assert!(account(&before, &after, 1_000_000, 10_000, judge(0.2)).disturbed);
        // A worker reaped inside the window: its 40 ticks moved into its parent's cutime,
        // so the tree's sum grows by what it did in the window only.
        let procs = |parent: u64, worker: Option<u64>| {
            let mut v = vec![(10, stat(1, false, parent))];
            v.extend(worker.map(|t| (11, stat(10, false, t))));
            Processes::split(&v, 10)
        };
        let (b, a) = (procs(100, Some(30)), procs(100 + 40, None));
        assert_eq!(a.ours - b.ours, 10);
        // Ours beyond the tick-sampled totals never makes a negative foreign time.
        let d = account(&before, &snap(110, 50, 0, 0, 900, 70), 1_000_000, 10_000, judge(0.25));
        assert_eq!(d.foreign_cpu_us, 0);
        // Two ticks of foreign time in a 50 ms window is 40% of a CPU, but within tick jitter.
        let d = account(&before, &snap(102, 50, 0, 0, 500, 70), 50_000, 10_000, judge(0.25));
        assert!(d.share > 0.25 && !d.disturbed, "{d:?}");
    }

    /// A busy loop that is not ours: started through a shell that exits, so it is
    /// reparented away from this process. Killed on drop.
    struct Neighbour(i32);

    impl Neighbour {
        fn start() -> Neighbour {
            let out = std::process::Command::new("sh")
                .args(["-c", "(while :; do :; done) </dev/null >/dev/null 2>&1 & echo $!"])
                .output()
                .unwrap();
            Neighbour(String::from_utf8_lossy(&out.stdout).trim().parse().unwrap())
        }
    }

    impl Drop for Neighbour {
        fn drop(&mut self) {
            // SAFETY: kill(2) of the pid we started; ESRCH is harmless.
            unsafe { libc::kill(self.0, libc::SIGKILL) };
        }
    }

    /// CPU time (user + system) the kernel has charged to `pid`, in µs.
    fn cpu_us_of(pid: i32) -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let f: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split_whitespace().collect();
        // utime and stime are fields 14 and 15; the slice starts at field 3.
        (f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()) * tick_us()
    }

    // Judged against what the kernel charged the busy loops, not against the wall clock: on
    // a saturated machine a loop may get a tenth of a CPU, and a floor of a third failed
    // there although the window counted every tick it got.
    #[test]
    fn a_busy_neighbour_is_foreign_and_a_busy_child_is_ours() {
        let root = std::process::id();
        // Tick sampling of the totals and of each process: a few ticks per CPU either way.
        let all = CpuTotals::read().unwrap().online_cpus;
        let slack = 3 * tick_us() * all as u64;
        let neighbour = Neighbour::start();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let n0 = cpu_us_of(neighbour.0);
        let w = Window::start(root);
        std::thread::sleep(std::time::Duration::from_millis(600));
        // A cell that needs every CPU: the neighbour competes with it wherever it runs.
        let d = w.finish(DEFAULT_THRESHOLD, all).expect("/proc is readable");
        let neighbour_us = cpu_us_of(neighbour.0) - n0;
        drop(neighbour);
        assert!(neighbour_us > 0, "the neighbour never ran: {d:?}");
        // Everything the neighbour got is foreign (others' work may add to it).
        assert!(d.foreign_cpu_us + slack >= neighbour_us, "neighbour {neighbour_us} µs: {d:?}");
        // And it is a disturbance whenever it got more than the threshold's share.
        if neighbour_us as f64 > (DEFAULT_THRESHOLD * d.wall_us as f64) + slack as f64 {
            assert!(d.disturbed, "neighbour {neighbour_us} µs: {d:?}");
        }
        // The same loop as our child is ours, reaped inside the window or not.
        let w = Window::start(root);
        let mut child = std::process::Command::new("sh").args(["-c", "while :; do :; done"]).spawn().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(600));
        let running = w.finish(DEFAULT_THRESHOLD, 1).unwrap();
        let child_us = cpu_us_of(child.id() as i32);
        let _ = child.kill();
        let _ = child.wait();
        let reaped = w.finish(DEFAULT_THRESHOLD, 1).unwrap();
        assert!(child_us > 0, "the child never ran: {running:?}");
        for d in [&running, &reaped] {
            assert!(d.own_cpu_us + slack >= child_us, "child {child_us} µs: {d:?}");
        }
        assert!(reaped.own_cpu_us >= running.own_cpu_us, "{running:?} {reaped:?}");
    }

    #[test]
    fn waiting_for_quiet_stops_at_a_quiet_window_or_when_cancelled() {
        let step = std::time::Duration::from_millis(20);
        // Any window is quiet under an infinite threshold: one step.
        let w =
            wait_until_quiet(std::process::id(), f64::INFINITY, 1, step, std::time::Duration::from_secs(5), &|| false);
        assert!(w >= step && w < std::time::Duration::from_secs(5), "{w:?}");
        // A cancelled wait returns at once, however busy the machine.
        let w = wait_until_quiet(std::process::id(), 0.0, 1, step, std::time::Duration::from_secs(5), &|| true);
        assert!(w < step, "{w:?}");
    }
}
