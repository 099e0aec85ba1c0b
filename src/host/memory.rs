//! How much memory the host can give: `MemAvailable` of /proc/meminfo, the kernel's
//! estimate of what can be allocated without swapping.

/// `MemAvailable` in bytes, read now.
pub fn mem_available() -> std::io::Result<u64> {
    let text = std::fs::read_to_string("/proc/meminfo")?;
    parse_mem_available(&text).ok_or_else(|| std::io::Error::other("/proc/meminfo has no MemAvailable line"))
}

/// `MemAvailable:  123456 kB` of a /proc/meminfo text, in bytes.
pub fn parse_mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find_map(|l| l.strip_prefix("MemAvailable:"))?;
    let mut parts = line.split_whitespace();
    let kib: u64 = parts.next()?.parse().ok()?;
    match parts.next() {
        Some("kB") | None => kib.checked_mul(1024),
        Some(_) => None,
    }
}

/// The share of `MemAvailable` a tmpfs fsbench mounts for loop images may fill, in
/// percent: the tmpfs refuses writes (the filesystem in the image sees I/O errors, the
/// cell fails) while the host still has a quarter of what it could give.
pub const TMPFS_SHARE_PERCENT: u64 = 75;

/// The `size=` of a tmpfs meant to hold `wanted` bytes: `wanted`, but no more than
/// [`TMPFS_SHARE_PERCENT`]% of `MemAvailable` now, so that the tmpfs fills before the
/// host does (a loop device's writes are charged to no memory cgroup); `wanted` when
/// `MemAvailable` cannot be read.
pub fn tmpfs_size_for(wanted: u64) -> u64 {
    match mem_available() {
        Ok(a) => wanted.min(a / 100 * TMPFS_SHARE_PERCENT),
        Err(_) => wanted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_available_is_read_in_bytes() {
        let t = "MemTotal:       16303412 kB\nMemFree:         1000000 kB\nMemAvailable:    8000000 kB\n";
        assert_eq!(parse_mem_available(t), Some(8_000_000 * 1024));
        assert_eq!(parse_mem_available("MemTotal: 1 kB\n"), None);
        assert!(mem_available().unwrap() > 0);
    }

    #[test]
    fn a_tmpfs_never_outgrows_three_quarters_of_what_the_host_can_give() {
        assert_eq!(tmpfs_size_for(1 << 20), 1 << 20);
        let huge = tmpfs_size_for(16 << 40);
        assert!(huge < 16 << 40 && huge <= mem_available().unwrap(), "{huge}");
    }
}
