//! `cgroup = { "cpu.max" = "50000 100000", "memory.max" = "512M" }`: the cgroup v2 interface
//! files a filesystem or variant may limit its cells' workers with, and their values,
//! parsed into numbers. Only files fsbench can both write on a cgroup v2 host and map to a
//! cgroup v1 equivalent are in the table ([`CgroupKey::ALL`]); where each one lives on
//! either hierarchy is provisioning's business (`provision::cgroup`).

use std::fmt;

/// One cgroup v2 interface file fsbench knows how to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CgroupKey {
    /// `cpu.max`: `max|QUOTA [PERIOD]` in microseconds (v1: `cpu.cfs_quota_us`, `cpu.cfs_period_us`).
    CpuMax,
    /// `cpu.weight`: 1..=10000, default 100 (v1: `cpu.shares`, scaled as systemd does).
    CpuWeight,
    /// `memory.max`: a hard limit in bytes (v1: `memory.limit_in_bytes`).
    MemoryMax,
    /// `memory.high`: the throttling limit in bytes (v1: `memory.soft_limit_in_bytes`).
    MemoryHigh,
    /// `pids.max`: most tasks in the group (v1: `pids.max`).
    PidsMax,
    /// `io.max`: bandwidth and IOPS limits of one device (v1: `blkio.throttle.*_device`).
    IoMax,
}

impl CgroupKey {
    /// Every key, in the order the table in docs/scenarios.md lists them.
    pub const ALL: &'static [CgroupKey] = &[
        CgroupKey::CpuMax,
        CgroupKey::CpuWeight,
        CgroupKey::MemoryMax,
        CgroupKey::MemoryHigh,
        CgroupKey::PidsMax,
        CgroupKey::IoMax,
    ];

    /// The cgroup v2 interface file (`cpu.max`).
    pub fn name(self) -> &'static str {
        match self {
            CgroupKey::CpuMax => "cpu.max",
            CgroupKey::CpuWeight => "cpu.weight",
            CgroupKey::MemoryMax => "memory.max",
            CgroupKey::MemoryHigh => "memory.high",
            CgroupKey::PidsMax => "pids.max",
            CgroupKey::IoMax => "io.max",
        }
    }

    /// The key of the v2 file `name`, if fsbench can apply it.
    pub fn from_name(name: &str) -> Option<CgroupKey> {
        CgroupKey::ALL.iter().copied().find(|k| k.name() == name)
    }

    /// Parse a value written for this key, with a message saying what the key takes.
    pub fn parse(self, text: &str) -> Result<CgroupValue, String> {
        let t = text.trim();
        match self {
            CgroupKey::CpuMax => parse_cpu_max(t),
            CgroupKey::CpuWeight => match t.parse::<u64>() {
                Ok(w) if (1..=10_000).contains(&w) => Ok(CgroupValue::Weight(w)),
                _ => Err(format!("`{t}` is not a cpu.weight: a whole number from 1 to 10000 (100 is the default)")),
            },
            CgroupKey::MemoryMax | CgroupKey::MemoryHigh => {
                max_or(t, parse_bytes).map(CgroupValue::Bytes).map_err(|e| format!("{e} (or `max`: no limit)"))
            }
            CgroupKey::PidsMax => max_or(t, |s| match s.parse::<u64>() {
                Ok(n) if n >= 1 => Ok(n),
                _ => Err(format!("`{s}` is not a number of tasks")),
            })
            .map(CgroupValue::Count),
            CgroupKey::IoMax => parse_io_max(t),
        }
    }
}

impl fmt::Display for CgroupKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A parsed value; `None` in a limit stands for the kernel's `max` (no limit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CgroupValue {
    /// `cpu.max`: quota per period, both in microseconds.
    CpuMax {
        /// CPU time the group may use per period; `None`: unlimited.
        quota_us: Option<u64>,
        /// The period (default 100000, the kernel's).
        period_us: u64,
    },
    /// `cpu.weight`.
    Weight(u64),
    /// A size in bytes.
    Bytes(Option<u64>),
    /// A count.
    Count(Option<u64>),
    /// `io.max` of one device.
    Io(IoLimit),
}

/// Which device an `io.max` limit throttles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoDevice {
    /// A device by number (`7:3`), as the kernel names it.
    Number(u32, u32),
    /// `cell`: every block device the cell's filesystems are on (its loop devices, or the
    /// device named with `--allow-device`), which have no fixed number before provisioning.
    Cell,
}

/// `io.max`: `DEVICE rbps=… wbps=… riops=… wiops=…`; a field left out is not limited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoLimit {
    /// The device.
    pub device: IoDevice,
    /// `(field, limit)` in the order written: `rbps`/`wbps` in bytes per second,
    /// `riops`/`wiops` in operations per second; `None` is `max`.
    pub fields: Vec<(IoField, Option<u64>)>,
}

/// One field of an `io.max` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoField {
    /// Read bytes per second.
    Rbps,
    /// Write bytes per second.
    Wbps,
    /// Read operations per second.
    Riops,
    /// Write operations per second.
    Wiops,
}

impl IoField {
    /// The field's name in `io.max`.
    pub fn name(self) -> &'static str {
        match self {
            IoField::Rbps => "rbps",
            IoField::Wbps => "wbps",
            IoField::Riops => "riops",
            IoField::Wiops => "wiops",
        }
    }
}

/// One limit of a filesystem's `cgroup` table, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupLimit {
    /// The v2 interface file.
    pub key: CgroupKey,
    /// Its value, as written (trimmed): what the result records as requested.
    pub text: String,
    /// Its value, parsed.
    pub value: CgroupValue,
}

/// `max`, or what `f` parses.
fn max_or(t: &str, f: impl Fn(&str) -> Result<u64, String>) -> Result<Option<u64>, String> {
    if t == "max" { Ok(None) } else { f(t).map(Some) }
}

/// Bytes as the kernel's memparse takes them (`512M`, `1G`, `4096`: K, M, G, T are powers
/// of 1024), or as scenario sizes are written elsewhere (`512MiB`, `1GB`).
pub fn parse_bytes(t: &str) -> Result<u64, String> {
    let shift = match t.chars().last() {
        Some('k' | 'K') => Some(10),
        Some('m' | 'M') => Some(20),
        Some('g' | 'G') => Some(30),
        Some('t' | 'T') => Some(40),
        _ => None,
    };
    let parsed = match shift {
        Some(s) => t[..t.len() - 1].parse::<u64>().ok().and_then(|n| n.checked_mul(1u64 << s)),
        None => super::units::parse_size(t).ok(),
    };
    parsed.filter(|n| *n > 0).ok_or_else(|| format!("`{t}` is not a size (examples: `512M`, `1G`, `268435456`)"))
}

/// `max`, `QUOTA` or `QUOTA PERIOD` (also `max PERIOD`), in microseconds.
fn parse_cpu_max(t: &str) -> Result<CgroupValue, String> {
    let usage = || {
        format!(
            "`{t}` is not a cpu.max: write `QUOTA PERIOD` in microseconds (`50000 100000` is half a CPU), \
             `QUOTA` (period 100000) or `max`"
        )
    };
    let mut words = t.split_whitespace();
    let quota = words.next().ok_or_else(usage)?;
    let period = words.next();
    if words.next().is_some() {
        return Err(usage());
    }
    let period_us = match period {
        None => 100_000,
        Some(p) => p.parse::<u64>().map_err(|_| usage())?,
    };
    // The kernel's bounds (kernel/sched/core.c): a period of 1 ms to 1 s, a quota of at least 1 ms.
    if !(1_000..=1_000_000).contains(&period_us) {
        return Err(format!("cpu.max period {period_us} is outside 1000..=1000000 microseconds"));
    }
    let quota_us = match quota {
        "max" => None,
        q => {
            let q = q.parse::<u64>().map_err(|_| usage())?;
            if q < 1_000 {
                return Err(format!("cpu.max quota {q} is below the kernel's least, 1000 microseconds"));
            }
            Some(q)
        }
    };
    Ok(CgroupValue::CpuMax { quota_us, period_us })
}

/// `MAJ:MIN` or `cell`, then one or more `field=limit` (`rbps=10M wiops=max`).
fn parse_io_max(t: &str) -> Result<CgroupValue, String> {
    let usage = |why: String| {
        format!("{why}; write `MAJ:MIN rbps=… wbps=… riops=… wiops=…` or `cell rbps=…` (the cell's own devices)")
    };
    let mut words = t.split_whitespace();
    let dev = words.next().ok_or_else(|| usage("an empty io.max".into()))?;
    let device = if dev == "cell" {
        IoDevice::Cell
    } else {
        let parsed = dev.split_once(':').and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)));
        let (maj, min) = parsed.ok_or_else(|| usage(format!("`{dev}` is not a device number")))?;
        IoDevice::Number(maj, min)
    };
    let mut fields: Vec<(IoField, Option<u64>)> = Vec::new();
    for w in words {
        let (name, v) = w.split_once('=').ok_or_else(|| usage(format!("`{w}` is not `field=limit`")))?;
        let field = match name {
            "rbps" => IoField::Rbps,
            "wbps" => IoField::Wbps,
            "riops" => IoField::Riops,
            "wiops" => IoField::Wiops,
            _ => return Err(usage(format!("`{name}` is not an io.max field (rbps, wbps, riops, wiops)"))),
        };
        if fields.iter().any(|(f, _)| *f == field) {
            return Err(usage(format!("`{name}` is given twice")));
        }
        let limit = match field {
            IoField::Rbps | IoField::Wbps => max_or(v, parse_bytes),
            IoField::Riops | IoField::Wiops => max_or(v, |s| match s.parse::<u64>() {
                Ok(n) if n >= 1 => Ok(n),
                _ => Err(format!("`{s}` is not a number of operations per second")),
            }),
        }
        .map_err(usage)?;
        fields.push((field, limit));
    }
    if fields.is_empty() {
        return Err(usage(format!("`{t}` limits nothing")));
    }
    Ok(CgroupValue::Io(IoLimit { device, fields }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_max_takes_quota_and_period_or_max() {
        let v = CgroupKey::CpuMax.parse("90000 100000").unwrap();
        assert_eq!(v, CgroupValue::CpuMax { quota_us: Some(90_000), period_us: 100_000 });
        assert_eq!(
            CgroupKey::CpuMax.parse("50000").unwrap(),
            CgroupValue::CpuMax { quota_us: Some(50_000), period_us: 100_000 }
        );
        assert_eq!(CgroupKey::CpuMax.parse("max").unwrap(), CgroupValue::CpuMax { quota_us: None, period_us: 100_000 });
        for bad in ["", "half", "90000 100000 3", "500 100000", "50000 10", "-1 100000", "50%"] {
            assert!(CgroupKey::CpuMax.parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn sizes_are_the_kernels_binary_suffixes_or_scenario_units() {
        assert_eq!(CgroupKey::MemoryMax.parse("512M").unwrap(), CgroupValue::Bytes(Some(512 << 20)));
        assert_eq!(CgroupKey::MemoryHigh.parse("1GiB").unwrap(), CgroupValue::Bytes(Some(1 << 30)));
        assert_eq!(CgroupKey::MemoryMax.parse("max").unwrap(), CgroupValue::Bytes(None));
        assert!(CgroupKey::MemoryMax.parse("lots").is_err());
        assert!(CgroupKey::MemoryMax.parse("0").is_err());
        assert_eq!(CgroupKey::PidsMax.parse("64").unwrap(), CgroupValue::Count(Some(64)));
        assert!(CgroupKey::CpuWeight.parse("0").is_err());
    }

    #[test]
    fn io_max_names_a_device_number_or_the_cell() {
        let v = CgroupKey::IoMax.parse("cell wbps=10M riops=max").unwrap();
        let CgroupValue::Io(io) = v else { panic!() };
        assert_eq!(io.device, IoDevice::Cell);
        assert_eq!(io.fields, [(IoField::Wbps, Some(10 << 20)), (IoField::Riops, None)]);
        let CgroupValue::Io(io) = CgroupKey::IoMax.parse("7:3 rbps=1048576").unwrap() else { panic!() };
        assert_eq!(io.device, IoDevice::Number(7, 3));
        for bad in ["", "7:3", "sda rbps=1", "7:3 rbps", "7:3 xbps=1", "cell rbps=1 rbps=2"] {
            assert!(CgroupKey::IoMax.parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn only_table_keys_are_known() {
        assert_eq!(CgroupKey::from_name("cpu.max"), Some(CgroupKey::CpuMax));
        assert_eq!(CgroupKey::from_name("cpu.cfs_quota_us"), None);
        assert_eq!(CgroupKey::from_name("memory.swap.max"), None);
    }
}
