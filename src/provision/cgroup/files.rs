//! Which files a cgroup limit is written to, and as what, on either hierarchy: the v2
//! interface file as the scenario names it, or its v1 equivalents. What the kernel holds
//! afterwards is read back from the same file.

use super::hierarchy::Version;
use crate::scenario::cgroup_limits::{CgroupKey, CgroupLimit, CgroupValue, IoDevice, IoField};

/// One file write a limit needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileWrite {
    /// The file's name inside the group (`cpu.cfs_quota_us`).
    pub file: &'static str,
    /// What is written.
    pub text: String,
    /// For per-device files (io.max, blkio.throttle.*): the device whose line holds the value.
    pub device: Option<(u32, u32)>,
}

/// The controller (as cgroup v2 names it) that holds a key's files.
pub fn controller(key: CgroupKey) -> &'static str {
    match key {
        CgroupKey::CpuMax | CgroupKey::CpuWeight => "cpu",
        CgroupKey::MemoryMax | CgroupKey::MemoryHigh => "memory",
        CgroupKey::PidsMax => "pids",
        CgroupKey::IoMax => "io",
    }
}

/// The writes of `limit` on a hierarchy of `version`, in order; `cell_devices` stands in for
/// `io.max`'s `cell`.
pub fn writes(limit: &CgroupLimit, version: Version, cell_devices: &[(u32, u32)]) -> Vec<FileWrite> {
    let one = |file: &'static str, text: String| vec![FileWrite { file, text, device: None }];
    let or = |v: Option<u64>, unlimited: &str| v.map_or_else(|| unlimited.to_string(), |n| n.to_string());
    match (&limit.value, version) {
        (CgroupValue::CpuMax { quota_us, period_us }, Version::V2) => {
            one("cpu.max", format!("{} {period_us}", or(*quota_us, "max")))
        }
        // The period first: a quota is checked against the period in force.
        (CgroupValue::CpuMax { quota_us, period_us }, Version::V1) => {
            let mut w = one("cpu.cfs_period_us", period_us.to_string());
            w.extend(one("cpu.cfs_quota_us", or(*quota_us, "-1")));
            w
        }
        (CgroupValue::Weight(w), Version::V2) => one("cpu.weight", w.to_string()),
        // systemd's mapping: weight 100 (the default) is 1024 shares; the kernel's least is 2.
        (CgroupValue::Weight(w), Version::V1) => one("cpu.shares", (w * 1024 / 100).max(2).to_string()),
        (CgroupValue::Bytes(b), Version::V2) => one(limit.key.name(), or(*b, "max")),
        (CgroupValue::Bytes(b), Version::V1) => {
            let file =
                if limit.key == CgroupKey::MemoryHigh { "memory.soft_limit_in_bytes" } else { "memory.limit_in_bytes" };
            one(file, or(*b, "-1"))
        }
        (CgroupValue::Count(n), _) => one("pids.max", or(*n, "max")),
        (CgroupValue::Io(io), version) => {
            let devices = match io.device {
                IoDevice::Number(a, b) => vec![(a, b)],
                IoDevice::Cell => cell_devices.to_vec(),
            };
            let mut out = Vec::new();
            for (maj, min) in devices {
                match version {
                    Version::V2 => {
                        let fields: Vec<String> =
                            io.fields.iter().map(|(f, v)| format!("{}={}", f.name(), or(*v, "max"))).collect();
                        out.push(FileWrite {
                            file: "io.max",
                            text: format!("{maj}:{min} {}", fields.join(" ")),
                            device: Some((maj, min)),
                        });
                    }
                    // One file per field; 0 removes a v1 throttle.
                    Version::V1 => {
                        for (f, v) in &io.fields {
                            let file = match f {
                                IoField::Rbps => "blkio.throttle.read_bps_device",
                                IoField::Wbps => "blkio.throttle.write_bps_device",
                                IoField::Riops => "blkio.throttle.read_iops_device",
                                IoField::Wiops => "blkio.throttle.write_iops_device",
                            };
                            out.push(FileWrite {
                                file,
                                text: format!("{maj}:{min} {}", or(*v, "0")),
                                device: Some((maj, min)),
                            });
                        }
                    }
                }
            }
            out
        }
    }
}

/// What a file read back holds for a write: the device's line of a per-device file (empty
/// when the kernel lists no limit for it), else the whole text, trimmed.
pub fn in_effect(text: &str, device: Option<(u32, u32)>) -> String {
    match device {
        None => text.trim().to_string(),
        Some((maj, min)) => {
            let prefix = format!("{maj}:{min} ");
            text.lines().find(|l| l.starts_with(&prefix)).map(|l| l.trim().to_string()).unwrap_or_default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(key: CgroupKey, text: &str) -> CgroupLimit {
        CgroupLimit { key, text: text.into(), value: key.parse(text).unwrap() }
    }

    fn shown(w: &[FileWrite]) -> Vec<String> {
        w.iter().map(|w| format!("{} <- {}", w.file, w.text)).collect()
    }

    #[test]
    fn v2_keys_map_to_their_v1_files() {
        let cpu = limit(CgroupKey::CpuMax, "90000 100000");
        assert_eq!(shown(&writes(&cpu, Version::V2, &[])), ["cpu.max <- 90000 100000"]);
        assert_eq!(
            shown(&writes(&cpu, Version::V1, &[])),
            ["cpu.cfs_period_us <- 100000", "cpu.cfs_quota_us <- 90000"]
        );
        let unlimited = limit(CgroupKey::CpuMax, "max");
        assert_eq!(shown(&writes(&unlimited, Version::V1, &[]))[1], "cpu.cfs_quota_us <- -1");
        let mem = limit(CgroupKey::MemoryMax, "512M");
        assert_eq!(shown(&writes(&mem, Version::V1, &[])), ["memory.limit_in_bytes <- 536870912"]);
        assert_eq!(shown(&writes(&mem, Version::V2, &[])), ["memory.max <- 536870912"]);
        let high = limit(CgroupKey::MemoryHigh, "max");
        assert_eq!(shown(&writes(&high, Version::V1, &[])), ["memory.soft_limit_in_bytes <- -1"]);
        let weight = limit(CgroupKey::CpuWeight, "100");
        assert_eq!(shown(&writes(&weight, Version::V1, &[])), ["cpu.shares <- 1024"]);
        let io = limit(CgroupKey::IoMax, "cell wbps=1M riops=max");
        assert_eq!(
            shown(&writes(&io, Version::V1, &[(7, 3), (7, 4)])),
            [
                "blkio.throttle.write_bps_device <- 7:3 1048576",
                "blkio.throttle.read_iops_device <- 7:3 0",
                "blkio.throttle.write_bps_device <- 7:4 1048576",
                "blkio.throttle.read_iops_device <- 7:4 0",
            ]
        );
        assert_eq!(shown(&writes(&io, Version::V2, &[(7, 3)])), ["io.max <- 7:3 wbps=1048576 riops=max"]);
    }

    #[test]
    fn a_per_device_file_is_read_back_at_the_devices_line() {
        assert_eq!(in_effect("7:3 1048576\n7:30 5\n", Some((7, 3))), "7:3 1048576");
        assert_eq!(in_effect("", Some((7, 3))), "");
        assert_eq!(in_effect("90000 100000\n", None), "90000 100000");
    }
}
