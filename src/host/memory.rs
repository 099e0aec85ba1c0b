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
}
