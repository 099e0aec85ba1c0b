//! Which machine a run ran on: host name, kernel, CPU and memory, as `run.json` records them.

use std::fs;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The machine a run ran on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HostInfo {
    /// Host name (`uname -n`).
    pub hostname: String,
    /// Kernel release (`uname -r`).
    pub kernel_release: String,
    /// Kernel version string (`uname -v`).
    pub kernel_version: String,
    /// Kernel command line (`/proc/cmdline`).
    pub kernel_cmdline: String,
    /// CPU model name from `/proc/cpuinfo`.
    pub cpu_model: String,
    /// Online CPUs.
    pub cpu_count: u32,
    /// Total memory in bytes (`MemTotal`).
    pub memory_bytes: u64,
}

impl HostInfo {
    /// Read the host's identity from uname(2) and /proc; missing pieces stay empty.
    pub fn detect() -> HostInfo {
        let uts = nix::sys::utsname::uname().ok();
        let s = |f: fn(&nix::sys::utsname::UtsName) -> &std::ffi::OsStr| {
            uts.as_ref().map(|u| f(u).to_string_lossy().into_owned()).unwrap_or_default()
        };
        let read = |p: &str| fs::read_to_string(p).map(|t| t.trim().to_string()).unwrap_or_default();
        let cpuinfo = read("/proc/cpuinfo");
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == "model name" || k.trim() == "Model").then(|| v.trim().to_string())
            })
            .unwrap_or_default();
        let cpu_count = std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(0);
        let memory_bytes = read("/proc/meminfo")
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kib| kib * 1024)
            .unwrap_or(0);
        HostInfo {
            hostname: s(|u| u.nodename()),
            kernel_release: s(|u| u.release()),
            kernel_version: s(|u| u.version()),
            kernel_cmdline: read("/proc/cmdline"),
            cpu_model,
            cpu_count,
            memory_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_detect_reads_this_kernel() {
        let h = HostInfo::detect();
        assert!(!h.kernel_release.is_empty());
        assert!(h.cpu_count >= 1 && h.memory_bytes > 0);
    }
}
