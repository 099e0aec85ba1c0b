//! The environment preflight: the machine settings and the neighbours that move
//! benchmark numbers, sampled once before a run and stored in `run.json`.
//!
//! Everything is read from /proc and /sys and is optional: a setting the kernel
//! does not expose (no cpufreq in a VM, no THP) is `None`, never a guess. The
//! busiest other processes come from two snapshots of `/proc/<pid>/stat` CPU
//! times a short interval apart ([`Environment::sample`]); fsbench itself is
//! left out. Process names are the kernel's `comm`, which anyone can set:
//! [`printable`] escapes them before they reach a terminal.
//!
//! The sample's interval is not slept through: fsbench times a fixed CPU-bound loop
//! in short windows meanwhile ([`CpuSteadiness`]). How much the same work's time
//! varies from window to window is the machine's own noise floor (a host shared
//! with other guests, frequency changes), under which no CPU-bound measurement's
//! spread can go, however quiet the guest is.

use std::collections::BTreeMap;
use std::fs;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::cpu::CpuTotals;

/// Most processes one sample reads (a cap against a fork bomb making the preflight slow).
const MAX_PROCESSES: usize = 20_000;
/// How many of the busiest other processes are kept.
const TOP: usize = 5;
/// A machine is "visibly busy" for `run` when another process used more than this share of a CPU ...
pub const BUSY_PROCESS_SHARE: f64 = 0.10;
/// ... or the 1-minute load average per online CPU is above this while the sample also
/// saw other work (the load average trails by a minute: alone, it would call a machine
/// busy just after `cargo run` finished compiling fsbench).
pub const BUSY_LOAD_PER_CPU: f64 = 0.5;

/// Length of one window of the steadiness probe.
pub const STEADINESS_WINDOW: Duration = Duration::from_millis(20);

/// A CPU steadiness reading below which fsbench says nothing (2%: the spread the
/// benchmarks ask of an idle machine).
pub const STEADY_CV: f64 = 0.02;

/// How steady the CPU's speed was during the sample: a fixed loop timed in windows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CpuSteadiness {
    /// Windows timed.
    pub windows: u32,
    /// Mean length of one window, ms.
    pub window_ms: f64,
    /// Coefficient of variation of the windows' lengths: the same work took this much
    /// more or less time from one window to the next.
    pub cv: f64,
}

/// Time the same CPU-bound work in windows of about `window` until `interval` has passed.
///
/// The work per window is calibrated first (the fastest of a few tries); the loop is a
/// multiply-add chain the compiler cannot fold, touching no memory. `None` when the
/// interval holds fewer than three windows.
pub fn cpu_steadiness(interval: Duration, window: Duration) -> Option<CpuSteadiness> {
    let t0 = Instant::now();
    let spin = |n: u64| {
        let mut x = 1u64;
        for _ in 0..n {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407));
        }
        std::hint::black_box(x);
    };
    // Calibrate: double the work until it takes a tenth of a window, then scale it to a window.
    let mut n = 1_000u64;
    let took = loop {
        let t = Instant::now();
        spin(n);
        let e = t.elapsed();
        if e >= window / 10 || n >= 1 << 40 {
            break e;
        }
        n *= 2;
    };
    // The fastest of a few: a preemption during calibration would shorten every window.
    let took = (0..3)
        .map(|_| {
            let t = Instant::now();
            spin(n);
            t.elapsed()
        })
        .fold(took, Duration::min);
    let per_window = (n as f64 * window.as_secs_f64() / took.as_secs_f64().max(1e-9)).max(1.0) as u64;
    let mut times = Vec::new();
    while t0.elapsed() + window <= interval {
        let t = Instant::now();
        spin(per_window);
        times.push(t.elapsed().as_secs_f64());
    }
    let s = crate::stats::summarize(&times);
    (s.n >= 3).then_some(CpuSteadiness { windows: s.n as u32, window_ms: s.mean * 1e3, cv: s.cv })
}

/// The state of DAMON's kdamonds: each one running samples (and with schemes acts on)
/// page-access bits in the background, a source of TLB flushes a benchmark shares.
fn damon() -> Option<String> {
    let root = "/sys/kernel/mm/damon/admin/kdamonds";
    let n: u32 = read(&format!("{root}/nr_kdamonds"))?.parse().ok()?;
    let mut on = Vec::new();
    for i in 0..n.min(64) {
        if read(&format!("{root}/{i}/state")).as_deref() == Some("on") {
            let ops = read(&format!("{root}/{i}/contexts/0/operations")).unwrap_or_else(|| "?".into());
            let schemes = read(&format!("{root}/{i}/contexts/0/schemes/nr_schemes")).unwrap_or_else(|| "0".into());
            on.push(format!("{ops}, {schemes} scheme{}", if schemes == "1" { "" } else { "s" }));
        }
    }
    Some(match on.len() {
        0 => "off".into(),
        k => format!("on: {k} kdamond{} ({})", if k == 1 { "" } else { "s" }, on.join("; ")),
    })
}

/// Another process and the share of one CPU it used during the sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BusyProcess {
    /// Process id.
    pub pid: u32,
    /// Its `comm` name (raw; escape with [`printable`] before printing).
    pub name: String,
    /// CPU time over the sample as a share of one CPU (1.0 = one CPU fully busy).
    pub cpu_share: f64,
}

/// What the preflight found; every field is optional because kernels and VMs differ.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Environment {
    /// cpufreq scaling governor (`performance`, `powersave`, ...; `a/b` when CPUs differ).
    #[serde(default)]
    pub governor: Option<String>,
    /// Turbo/boost: `on` or `off` (cpufreq `boost` or intel_pstate `no_turbo`).
    #[serde(default)]
    pub boost: Option<String>,
    /// Transparent huge pages mode (`always`, `madvise`, `never`).
    #[serde(default)]
    pub thp: Option<String>,
    /// `kernel.randomize_va_space` (0 off, 2 full).
    #[serde(default)]
    pub aslr: Option<String>,
    /// Online CPUs as the kernel lists them (`0-1`).
    #[serde(default)]
    pub cpus_online: Option<String>,
    /// Load averages over 1, 5 and 15 minutes at the start.
    #[serde(default)]
    pub loadavg: Option<[f64; 3]>,
    /// The busiest other processes during the sample, busiest first.
    #[serde(default)]
    pub busiest: Vec<BusyProcess>,
    /// Page cache (`Cached` in /proc/meminfo), bytes.
    #[serde(default)]
    pub page_cache_bytes: Option<u64>,
    /// Free memory (`MemFree`), bytes.
    #[serde(default)]
    pub free_bytes: Option<u64>,
    /// Kernel command line.
    #[serde(default)]
    pub kernel_cmdline: Option<String>,
    /// CPU vulnerability mitigations, by vulnerability (`spectre_v2: Mitigation: ...`).
    #[serde(default)]
    pub mitigations: BTreeMap<String, String>,
    /// The CPU says it runs under a hypervisor (`hypervisor` flag).
    #[serde(default)]
    pub virtual_machine: bool,
    /// Steal time during the sample, as a share of one CPU (only meaningful in a VM).
    #[serde(default)]
    pub steal_share: Option<f64>,
    /// Length of the sample in milliseconds.
    #[serde(default)]
    pub sample_ms: u64,
    /// DAMON, the kernel's data-access monitor (`on: 1 kdamond (paddr, 1 scheme)`, `off`);
    /// absent when the kernel has no DAMON sysfs interface.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub damon: Option<String>,
    /// How steady the CPU's speed was during the sample; absent in older runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_steadiness: Option<CpuSteadiness>,
}

/// `s` with control characters and backslashes escaped, safe to print.
pub fn printable(s: &str) -> String {
    s.chars().flat_map(|c| if c.is_control() || c == '\\' { c.escape_default().collect() } else { vec![c] }).collect()
}

fn read(path: &str) -> Option<String> {
    // Every file read here is a one-line kernel interface; cap what we take anyway.
    let text = fs::read_to_string(path).ok()?;
    let t = text.trim();
    (!t.is_empty()).then(|| t.chars().take(4096).collect())
}

/// The bracketed choice of a sysfs selector (`always [madvise] never` -> `madvise`).
pub fn selected(line: &str) -> Option<String> {
    let start = line.find('[')?;
    let end = line[start..].find(']')? + start;
    Some(line[start + 1..end].to_string())
}

fn meminfo_bytes(meminfo: &str, key: &str) -> Option<u64> {
    meminfo.lines().find_map(|l| {
        let v = l.strip_prefix(key)?.strip_prefix(':')?;
        v.trim().trim_end_matches("kB").trim().parse::<u64>().ok().map(|k| k * 1024)
    })
}

/// CPU times (utime + stime, ticks) of every process, by pid, with its name.
fn process_times() -> BTreeMap<u32, (String, u64)> {
    let mut out = BTreeMap::new();
    let Ok(dir) = fs::read_dir("/proc") else { return out };
    for e in dir.flatten().take(MAX_PROCESSES) {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        if let Some(t) = parse_pid_stat(&stat) {
            out.insert(pid, t);
        }
    }
    out
}

/// `(comm, utime + stime)` from a `/proc/<pid>/stat` line; the name may hold spaces and parentheses.
pub fn parse_pid_stat(stat: &str) -> Option<(String, u64)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let name = stat.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = stat.get(close + 1..)?.split_whitespace().collect();
    // After the name: state(0) ppid(1) ... utime(11) stime(12).
    let utime: u64 = rest.get(11)?.parse().ok()?;
    let stime: u64 = rest.get(12)?.parse().ok()?;
    Some((name, utime + stime))
}

/// The busiest processes between two snapshots, leaving out `own`; shares of one CPU.
pub fn busiest(
    before: &BTreeMap<u32, (String, u64)>,
    after: &BTreeMap<u32, (String, u64)>,
    own: &[u32],
    wall: Duration,
    tick_us: u64,
) -> Vec<BusyProcess> {
    let wall_us = wall.as_micros().max(1) as f64;
    let mut v: Vec<BusyProcess> = after
        .iter()
        .filter(|(pid, _)| !own.contains(pid))
        .filter_map(|(pid, (name, t1))| {
            let t0 = before.get(pid).map(|(_, t)| *t).unwrap_or(*t1);
            let used = t1.saturating_sub(t0);
            (used > 0).then(|| BusyProcess {
                pid: *pid,
                name: name.clone(),
                cpu_share: used as f64 * tick_us as f64 / wall_us,
            })
        })
        .collect();
    v.sort_by(|a, b| b.cpu_share.total_cmp(&a.cpu_share).then(a.pid.cmp(&b.pid)));
    v.truncate(TOP);
    v
}

impl Environment {
    /// Read the settings and watch the other processes for `interval`.
    pub fn sample(interval: Duration) -> Environment {
        let cpu0 = "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor";
        let mut governors: Vec<String> = (0..1024)
            .map_while(|i| {
                let p = format!("/sys/devices/system/cpu/cpu{i}");
                std::path::Path::new(&p).exists().then(|| read(&format!("{p}/cpufreq/scaling_governor")))
            })
            .flatten()
            .collect();
        governors.dedup();
        let governor = if governors.is_empty() { read(cpu0) } else { Some(governors.join("/")) };
        let boost = read("/sys/devices/system/cpu/cpufreq/boost")
            .map(|b| if b == "1" { "on".to_string() } else { "off".to_string() })
            .or_else(|| {
                read("/sys/devices/system/cpu/intel_pstate/no_turbo")
                    .map(|n| if n == "1" { "off".to_string() } else { "on".to_string() })
            });
        let meminfo = read("/proc/meminfo").unwrap_or_default();
        let loadavg = read("/proc/loadavg").and_then(|l| {
            let v: Vec<f64> = l.split_whitespace().take(3).filter_map(|x| x.parse().ok()).collect();
            (v.len() == 3).then(|| [v[0], v[1], v[2]])
        });
        let mut mitigations = BTreeMap::new();
        if let Ok(dir) = fs::read_dir("/sys/devices/system/cpu/vulnerabilities") {
            for e in dir.flatten().take(64) {
                let name = e.file_name().to_string_lossy().into_owned();
                if let Some(v) = read(&e.path().to_string_lossy()) {
                    mitigations.insert(name, v);
                }
            }
        }
        let virtual_machine = read("/proc/cpuinfo")
            .map(|c| c.lines().any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor")))
            .unwrap_or(false);
        let own = vec![std::process::id()];
        let (p0, c0, t0) = (process_times(), CpuTotals::read().ok(), Instant::now());
        // The interval is spent timing a fixed loop; fsbench's own CPU time is not counted as a neighbour's.
        let cpu_steadiness = cpu_steadiness(interval, STEADINESS_WINDOW);
        if let Some(rest) = interval.checked_sub(t0.elapsed()) {
            std::thread::sleep(rest);
        }
        let (p1, c1, wall) = (process_times(), CpuTotals::read().ok(), t0.elapsed());
        let tick = super::cpu::tick_us();
        let steal_share = match (c0, c1) {
            (Some(a), Some(b)) => {
                Some(b.steal.saturating_sub(a.steal) as f64 * tick as f64 / wall.as_micros().max(1) as f64)
            }
            _ => None,
        };
        Environment {
            governor,
            boost,
            thp: read("/sys/kernel/mm/transparent_hugepage/enabled").and_then(|l| selected(&l)),
            aslr: read("/proc/sys/kernel/randomize_va_space"),
            cpus_online: read("/sys/devices/system/cpu/online"),
            loadavg,
            busiest: busiest(&p0, &p1, &own, wall, tick),
            page_cache_bytes: meminfo_bytes(&meminfo, "Cached"),
            free_bytes: meminfo_bytes(&meminfo, "MemFree"),
            kernel_cmdline: read("/proc/cmdline"),
            mitigations,
            virtual_machine,
            steal_share,
            sample_ms: wall.as_millis() as u64,
            damon: damon(),
            cpu_steadiness,
        }
    }

    /// Online CPUs counted from `cpus_online` (`0-1,4` -> 3).
    pub fn online_cpu_count(&self) -> Option<u32> {
        let list = self.cpus_online.as_deref()?;
        let mut n = 0u32;
        for part in list.split(',') {
            match part.split_once('-') {
                Some((a, b)) => n += b.trim().parse::<u32>().ok()?.checked_sub(a.trim().parse::<u32>().ok()?)? + 1,
                None => {
                    part.trim().parse::<u32>().ok()?;
                    n += 1;
                }
            }
        }
        Some(n)
    }

    /// Why the machine looks busy right now, one line per reason; empty when it looks quiet.
    pub fn busy_reasons(&self) -> Vec<String> {
        let mut out = Vec::new();
        let cpus = self.online_cpu_count().unwrap_or(1).max(1) as f64;
        let busy: Vec<&BusyProcess> = self.busiest.iter().filter(|p| p.cpu_share > BUSY_PROCESS_SHARE).collect();
        if let Some([l1, _, _]) = self.loadavg
            && l1 / cpus > BUSY_LOAD_PER_CPU
            && !busy.is_empty()
        {
            out.push(format!("load average {l1:.2} on {cpus} CPUs"));
        }
        for p in busy {
            out.push(format!("`{}` (pid {}) used {:.0}% of a CPU", printable(&p.name), p.pid, p.cpu_share * 100.0));
        }
        if let Some(s) = self.steal_share.filter(|s| *s > BUSY_PROCESS_SHARE) {
            out.push(format!("the hypervisor stole {:.0}% of a CPU", s * 100.0));
        }
        out
    }

    /// The settings as (name, value, remedy when it is not the benchmark-friendly choice).
    pub fn rows(&self) -> Vec<(String, String, String)> {
        let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "not exposed".into());
        let mut rows = vec![
            (
                "cpu governor".to_string(),
                opt(&self.governor),
                match self.governor.as_deref() {
                    Some(g) if g != "performance" => {
                        "cpupower frequency-set -g performance (frequency scaling moves numbers)".into()
                    }
                    _ => String::new(),
                },
            ),
            (
                "turbo/boost".into(),
                opt(&self.boost),
                if self.boost.as_deref() == Some("on") {
                    "echo 0 > /sys/devices/system/cpu/cpufreq/boost (or intel_pstate/no_turbo = 1): boost depends on temperature"
                        .into()
                } else {
                    String::new()
                },
            ),
            (
                "transparent hugepages".into(),
                opt(&self.thp),
                if self.thp.as_deref() == Some("always") {
                    "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled (khugepaged runs in the background)"
                        .into()
                } else {
                    String::new()
                },
            ),
            ("ASLR (randomize_va_space)".into(), opt(&self.aslr), String::new()),
            ("CPUs online".into(), opt(&self.cpus_online), String::new()),
            (
                "load average".into(),
                self.loadavg.map(|l| format!("{:.2} {:.2} {:.2}", l[0], l[1], l[2])).unwrap_or_else(|| "-".into()),
                String::new(),
            ),
            (
                "page cache / free".into(),
                format!(
                    "{} / {}",
                    self.page_cache_bytes.map(|b| format!("{} MiB", b >> 20)).unwrap_or_else(|| "-".into()),
                    self.free_bytes.map(|b| format!("{} MiB", b >> 20)).unwrap_or_else(|| "-".into())
                ),
                String::new(),
            ),
            (
                "virtual machine".into(),
                match (self.virtual_machine, self.steal_share) {
                    (true, Some(s)) => format!("yes, steal {:.1}% of a CPU during {} ms", s * 100.0, self.sample_ms),
                    (true, None) => "yes".into(),
                    (false, _) => "no".into(),
                },
                if self.steal_share.is_some_and(|s| s > 0.02) {
                    "other guests share the host: compare runs from one quiet period, or use dedicated CPUs".into()
                } else {
                    String::new()
                },
            ),
            (
                "DAMON (data-access monitor)".into(),
                opt(&self.damon),
                if self.damon.as_deref().is_some_and(|d| d.starts_with("on")) {
                    "it samples page-access bits in the background: write off to its kdamonds' state while benchmarking, if the machine is yours".into()
                } else {
                    String::new()
                },
            ),
            (
                "CPU speed steadiness".into(),
                match &self.cpu_steadiness {
                    Some(c) => format!(
                        "a fixed loop varied {:.1}% (CV) over {} windows of {:.0} ms",
                        c.cv * 100.0,
                        c.windows,
                        c.window_ms
                    ),
                    None => "not measured".into(),
                },
                if self.cpu_steadiness.as_ref().is_some_and(|c| c.cv > STEADY_CV) {
                    "the CPU's own speed moves (a shared host, frequency changes): lat_fs spreads cannot go below this; use dedicated CPUs, or rounds and a threshold above it".into()
                } else {
                    String::new()
                },
            ),
            (
                "kernel cmdline".into(),
                crate::text::first_line_cut(&printable(&opt(&self.kernel_cmdline)), 160),
                String::new(),
            ),
        ];
        let mitigated = self.mitigations.values().filter(|v| v.starts_with("Mitigation")).count();
        rows.push((
            "CPU mitigations".into(),
            if self.mitigations.is_empty() {
                "not exposed".into()
            } else {
                format!("{mitigated} of {} vulnerabilities mitigated", self.mitigations.len())
            },
            if mitigated > 0 {
                "compare only runs with the same mitigations (they cost syscall time)".into()
            } else {
                String::new()
            },
        ));
        let busy = self
            .busiest
            .iter()
            .map(|p| format!("{} {:.0}%", printable(&p.name), p.cpu_share * 100.0))
            .collect::<Vec<_>>()
            .join(", ");
        rows.push((
            format!("busiest other processes ({} ms)", self.sample_ms),
            if busy.is_empty() { "none".into() } else { busy },
            if self.busy_reasons().is_empty() {
                String::new()
            } else {
                "stop them or wait: disturbed repetitions are rerun, but a busy machine costs time and precision".into()
            },
        ));
        rows
    }

    /// What differs between two environments, as `name: a vs b` lines (for compare/report).
    pub fn differences(a: &Environment, b: &Environment) -> Vec<String> {
        let mut out = Vec::new();
        let mut cmp = |name: &str, x: String, y: String| {
            if x != y {
                out.push(format!("{name}: {} vs {}", printable(&x), printable(&y)));
            }
        };
        let o = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
        cmp("cpu governor", o(&a.governor), o(&b.governor));
        cmp("turbo/boost", o(&a.boost), o(&b.boost));
        cmp("transparent hugepages", o(&a.thp), o(&b.thp));
        cmp("ASLR", o(&a.aslr), o(&b.aslr));
        cmp("CPUs online", o(&a.cpus_online), o(&b.cpus_online));
        cmp("kernel cmdline", o(&a.kernel_cmdline), o(&b.kernel_cmdline));
        cmp("virtual machine", a.virtual_machine.to_string(), b.virtual_machine.to_string());
        cmp("DAMON", o(&a.damon), o(&b.damon));
        let keys: std::collections::BTreeSet<&String> = a.mitigations.keys().chain(b.mitigations.keys()).collect();
        for k in keys {
            cmp(&format!("mitigation {k}"), o(&a.mitigations.get(k).cloned()), o(&b.mitigations.get(k).cloned()));
        }
        // Steadiness too: said when one side's CPU was unsteady and the other's was not.
        let unsteady = |e: &Environment| e.cpu_steadiness.as_ref().map(|c| (c.cv > STEADY_CV, c.cv));
        if let (Some((ua, ca)), Some((ub, cb))) = (unsteady(a), unsteady(b))
            && ua != ub
        {
            out.push(format!("CPU speed steadiness (CV of a fixed loop): {:.1}% vs {:.1}%", ca * 100.0, cb * 100.0));
        }
        // Load is a state, not a setting: call it out only when one side was visibly busy.
        let (ba, bb) = (a.busy_reasons(), b.busy_reasons());
        if ba.is_empty() != bb.is_empty() {
            let say =
                |r: &[String]| if r.is_empty() { "quiet".to_string() } else { format!("busy ({})", r.join("; ")) };
            out.push(format!("machine at start: {} vs {}", say(&ba), say(&bb)));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pid_stat_names_may_hold_spaces_and_parentheses() {
        let line = "1234 (evil) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0 100 0 0";
        assert_eq!(parse_pid_stat(line), Some(("evil) name".into(), 300)));
        assert_eq!(parse_pid_stat("garbage"), None);
    }

    #[test]
    fn busiest_leaves_us_out_and_ranks_by_share() {
        let before: BTreeMap<u32, (String, u64)> =
            [(1, ("cc1".into(), 100)), (2, ("fsbench".into(), 0)), (3, ("idle".into(), 5))].into();
        let after: BTreeMap<u32, (String, u64)> =
            [(1, ("cc1".into(), 150)), (2, ("fsbench".into(), 90)), (3, ("idle".into(), 5)), (4, ("new".into(), 7))]
                .into();
        let b = busiest(&before, &after, &[2], Duration::from_millis(500), 10_000);
        assert_eq!(b.len(), 1, "{b:?}");
        assert_eq!((b[0].pid, b[0].name.as_str()), (1, "cc1"));
        assert!((b[0].cpu_share - 1.0).abs() < 1e-9);
    }

    #[test]
    fn settings_and_busy_reasons() {
        assert_eq!(selected("always [madvise] never").as_deref(), Some("madvise"));
        let mut e =
            Environment { cpus_online: Some("0-1".into()), loadavg: Some([3.0, 1.0, 1.0]), ..Default::default() };
        assert_eq!(e.online_cpu_count(), Some(2));
        assert_eq!(Environment { cpus_online: Some("0-3,8".into()), ..Default::default() }.online_cpu_count(), Some(5));
        e.busiest = vec![BusyProcess { pid: 9, name: "hog\x1b[2J".into(), cpu_share: 0.9 }];
        let r = e.busy_reasons();
        assert_eq!(r.len(), 2, "{r:?}");
        assert!(r[1].contains("hog\\u{1b}[2J") && !r[1].contains('\x1b'), "{r:?}");
        let quiet =
            Environment { cpus_online: Some("0-1".into()), loadavg: Some([0.1, 0.1, 0.1]), ..Default::default() };
        assert!(quiet.busy_reasons().is_empty());
        // A high load average with nothing busy in the sample is the minute after a build.
        let after_build = Environment { loadavg: Some([1.6, 1.0, 0.5]), ..quiet.clone() };
        assert!(after_build.busy_reasons().is_empty());
        let mut other = quiet.clone();
        other.governor = Some("powersave".into());
        let d = Environment::differences(&quiet, &other);
        assert_eq!(d, ["cpu governor: - vs powersave"]);
        assert!(Environment::differences(&quiet, &e).iter().any(|l| l.starts_with("machine at start: quiet vs busy")));
        // A CPU whose speed moved on one side only is said; two steady ones or two unsteady ones are not news.
        let steady = |cv| Environment {
            cpu_steadiness: Some(CpuSteadiness { windows: 15, window_ms: 20.0, cv }),
            ..quiet.clone()
        };
        let d = Environment::differences(&steady(0.004), &steady(0.061));
        assert_eq!(d, ["CPU speed steadiness (CV of a fixed loop): 0.4% vs 6.1%"]);
        assert!(Environment::differences(&steady(0.004), &steady(0.011)).is_empty());
        assert!(Environment::differences(&steady(0.05), &steady(0.09)).is_empty());
        assert!(steady(0.061).rows().iter().any(|(n, v, remedy)| n == "CPU speed steadiness"
            && v.contains("6.1% (CV) over 15 windows of 20 ms")
            && remedy.contains("cannot go below")));
    }

    #[test]
    fn sampling_this_machine_fills_what_the_kernel_exposes() {
        // On a loaded machine a window's calibrated work stretches several times, so fewer
        // than three fit the interval and the probe rightly says nothing: longer samples
        // must fill it (five 300 ms tries failed when four builds held both CPUs).
        let mut tries = Vec::new();
        for ms in [300, 300, 1000, 3000, 6000] {
            let e = Environment::sample(Duration::from_millis(ms));
            assert!(e.cpus_online.is_some() && e.loadavg.is_some() && e.kernel_cmdline.is_some(), "{e:?}");
            assert!(e.sample_ms >= ms && e.busiest.iter().all(|p| p.pid != std::process::id()));
            assert!(!e.rows().is_empty());
            if let Some(c) = e.cpu_steadiness {
                assert!(c.windows >= 3 && c.cv.is_finite() && c.cv >= 0.0, "{c:?}");
                return;
            }
            tries.push(e.loadavg);
        }
        panic!("300 ms to 6 s never held three 20 ms windows (load averages {tries:?})");
    }

    #[test]
    fn the_steadiness_probe_times_windows_of_the_asked_length() {
        // A loaded machine can stretch the windows until fewer than three fit (then it says
        // nothing, rightly): a longer interval must measure.
        let (ms, c) = [300u64, 300, 1000, 3000, 6000]
            .into_iter()
            .find_map(|ms| cpu_steadiness(Duration::from_millis(ms), Duration::from_millis(20)).map(|c| (ms, c)))
            .expect("300 ms to 6 s never held three 20 ms windows");
        // The windows are calibrated to about 20 ms; a loaded machine stretches them, and
        // calibration error cannot halve them.
        assert!(c.windows >= 3 && u64::from(c.windows) <= ms / 10, "{c:?}");
        assert!(c.window_ms > 10.0 && c.window_ms < 200.0, "{c:?}");
        // An interval that holds fewer than three windows says nothing rather than a CV of one.
        assert!(cpu_steadiness(Duration::from_millis(30), Duration::from_millis(20)).is_none());
    }
}
