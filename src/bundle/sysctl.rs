//! The `[sysctl]` keys a bundle may set, and the numbers it may set them to.
//!
//! A sysctl is host-wide state written as root: `kernel.core_pattern` set to a
//! pipe runs the bundle's command as uid 0 when any process crashes,
//! `kernel.modprobe` names the program the kernel execs, `vm.overcommit_*`,
//! `vm.nr_hugepages` or `vm.vfs_cache_pressure = 0` starve the host of memory,
//! `kernel.panic_on_oops` turns a bug into a reboot. So a bundle's `[sysctl]` is
//! refused unless `bundle run --allow-sysctl`, and even then only the writeback
//! and cache knobs below, each a plain decimal integer within its range. Every
//! other key (`kernel.*`, `fs.*`, `net.*`, `user.*`, `dev.*`, `debug.*`, any
//! other `vm.*`) is refused whatever the flags: a user who trusts the scenario
//! runs it with `fsbench run`, where nothing is filtered.

/// One key a bundle may set and its inclusive range.
#[derive(Debug, Clone, Copy)]
pub struct SysctlRule {
    /// Dotted key under /proc/sys.
    pub key: &'static str,
    /// Smallest value allowed.
    pub min: u64,
    /// Largest value allowed.
    pub max: u64,
    /// Unit, for messages and docs.
    pub unit: &'static str,
}

const TIB: u64 = 1 << 40;

/// The performance knobs a bundle may set with `--allow-sysctl`. The ranges keep
/// each within what a benchmark varies: `vfs_cache_pressure` never 0 (the kernel
/// would never reclaim dentries and inodes, and the host can run out of memory),
/// `dirty_bytes` from the kernel's own minimum (two pages) up to 1 TiB, times at
/// most an hour.
pub const ALLOWED: &[SysctlRule] = &[
    SysctlRule { key: "vm.dirty_ratio", min: 1, max: 100, unit: "% of available memory" },
    SysctlRule { key: "vm.dirty_background_ratio", min: 0, max: 100, unit: "% of available memory" },
    SysctlRule { key: "vm.dirty_bytes", min: 8192, max: TIB, unit: "bytes" },
    SysctlRule { key: "vm.dirty_background_bytes", min: 0, max: TIB, unit: "bytes" },
    SysctlRule { key: "vm.dirty_expire_centisecs", min: 0, max: 360_000, unit: "centiseconds" },
    SysctlRule { key: "vm.dirty_writeback_centisecs", min: 0, max: 360_000, unit: "centiseconds" },
    SysctlRule { key: "vm.dirtytime_expire_seconds", min: 1, max: 3600, unit: "seconds" },
    SysctlRule { key: "vm.vfs_cache_pressure", min: 1, max: 1000, unit: "" },
    SysctlRule { key: "vm.swappiness", min: 0, max: 200, unit: "" },
    SysctlRule { key: "vm.page-cluster", min: 0, max: 6, unit: "log2 pages" },
];

/// What a bundle's `[sysctl]` entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SysctlVerdict {
    /// On the allow-list with a value in range: runs with `--allow-sysctl`.
    NeedsFlag,
    /// Never from a bundle; the message says why.
    Refused(String),
}

/// Judge one `[sysctl]` entry of a bundle.
pub fn judge(key: &str, value: &str) -> SysctlVerdict {
    let key_shown = crate::model::UntrustedText::escape(key, crate::model::TextFormat::Terminal);
    let Some(rule) = ALLOWED.iter().find(|r| r.key == key) else {
        return SysctlVerdict::Refused(format!(
            "refusing sysctl `{key_shown}`: a bundle may set only the writeback and cache knobs {} \
             (with --allow-sysctl); kernel.*, fs.*, net.* and other vm.* keys are host-wide state no bundle may change",
            ALLOWED.iter().map(|r| r.key).collect::<Vec<_>>().join(", ")
        ));
    };
    // Plain decimal only: the kernel reads a leading 0 as octal (`010` is 8), so a
    // value is judged as the kernel will read it only without one.
    let plain = !value.is_empty()
        && value.len() <= 20
        && value.bytes().all(|b| b.is_ascii_digit())
        && (value == "0" || !value.starts_with('0'));
    let number = plain.then(|| value.parse::<u64>().ok()).flatten();
    match number {
        Some(n) if (rule.min..=rule.max).contains(&n) => SysctlVerdict::NeedsFlag,
        _ => SysctlVerdict::Refused(format!(
            "refusing sysctl `{key_shown}` = `{}`: a bundle may set it only to a decimal integer from {} to {}{}",
            crate::model::UntrustedText::escape(value, crate::model::TextFormat::Terminal),
            rule.min,
            rule.max,
            if rule.unit.is_empty() { String::new() } else { format!(" ({})", rule.unit) }
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Security review, round two: these were applied as root with no flag and no allow-list.
    #[test]
    fn host_wide_keys_are_refused_whatever_the_value() {
        for key in [
            "kernel.core_pattern",
            "kernel.modprobe",
            "kernel.panic_on_oops",
            "vm.overcommit_memory",
            "vm.overcommit_ratio",
            "vm.nr_hugepages",
            "vm.min_free_kbytes",
            "vm.drop_caches",
            "fs.protected_symlinks",
            "fs.suid_dumpable",
            "net.ipv4.ip_forward",
            "vm.dirty_ratio.x",
            "VM.DIRTY_RATIO",
        ] {
            match judge(key, "1") {
                SysctlVerdict::Refused(m) => assert!(m.contains("no bundle may change"), "{key}: {m}"),
                v => panic!("{key}: {v:?}"),
            }
        }
    }

    #[test]
    fn allowed_keys_take_integers_in_range_only() {
        assert_eq!(judge("vm.dirty_ratio", "10"), SysctlVerdict::NeedsFlag);
        assert_eq!(judge("vm.dirty_bytes", "67108864"), SysctlVerdict::NeedsFlag);
        assert_eq!(judge("vm.swappiness", "0"), SysctlVerdict::NeedsFlag);
        for (k, v) in [
            ("vm.dirty_ratio", "0"),
            ("vm.dirty_ratio", "101"),
            ("vm.dirty_ratio", "-1"),
            ("vm.dirty_ratio", "10 20"),
            ("vm.dirty_ratio", " 10"),
            ("vm.dirty_ratio", "0x10"),
            ("vm.dirty_ratio", "1e1"),
            ("vm.dirty_ratio", "|/tmp/x"),
            ("vm.dirty_ratio", ""),
            ("vm.vfs_cache_pressure", "0"),
            ("vm.dirty_bytes", "99999999999999999999999"),
            ("vm.dirty_bytes", "4096"),
            ("vm.dirty_bytes", "010000"),
            ("vm.swappiness", "00"),
        ] {
            match judge(k, v) {
                SysctlVerdict::Refused(m) => assert!(m.contains("decimal integer from"), "{k}={v}: {m}"),
                x => panic!("{k}={v}: {x:?}"),
            }
        }
    }
}
