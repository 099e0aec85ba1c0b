//! Values with units: sizes (`1GiB`) and durations (`300ms`).
//!
//! Binary suffixes (KiB, MiB, GiB, TiB) are powers of 1024 and decimal ones
//! (kB, MB, GB, TB) powers of 1000, as in `truncate(1)` and `fio`. A bare
//! number of bytes is allowed for sizes; durations always need a unit, since
//! "300" could mean anything.

use std::time::Duration;

const SIZE_UNITS: &[(&str, u64)] = &[
    ("B", 1),
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
    ("TiB", 1 << 40),
    ("kB", 1_000),
    ("MB", 1_000_000),
    ("GB", 1_000_000_000),
    ("TB", 1_000_000_000_000),
];

const DURATION_UNITS: &[(&str, f64)] =
    &[("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0), ("m", 60.0), ("h", 3600.0)];

fn split_number(s: &str) -> (&str, &str) {
    let s = s.trim();
    let end = s.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_')).unwrap_or(s.len());
    (&s[..end], s[end..].trim())
}

fn parse_number(num: &str) -> Option<f64> {
    if num.is_empty() || num.starts_with('.') || num.ends_with('.') {
        return None;
    }
    num.replace('_', "").parse::<f64>().ok().filter(|v| v.is_finite())
}

/// Parse a size such as `1GiB`, `512MiB`, `10GB` or `4096` (bytes).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let (num, unit) = split_number(s);
    let value = parse_number(num).ok_or_else(|| format!("`{s}` is not a size (examples: `512MiB`, `10GiB`)"))?;
    let mult = if unit.is_empty() {
        1
    } else {
        SIZE_UNITS.iter().find(|(u, _)| *u == unit).map(|(_, m)| *m).ok_or_else(|| {
            let hint = SIZE_UNITS
                .iter()
                .find(|(u, _)| u.eq_ignore_ascii_case(unit) || u.trim_end_matches("iB").eq_ignore_ascii_case(unit))
                .map(|(u, _)| format!(", did you mean `{num}{u}`?"))
                .unwrap_or_default();
            format!("unknown size unit `{unit}` in `{s}` (use B, KiB, MiB, GiB, TiB, kB, MB, GB or TB){hint}")
        })?
    };
    let bytes = value * mult as f64;
    if bytes > u64::MAX as f64 / 2.0 {
        return Err(format!("size `{s}` is too large"));
    }
    if bytes.fract() != 0.0 {
        return Err(format!("size `{s}` is not a whole number of bytes"));
    }
    Ok(bytes as u64)
}

/// Parse a duration such as `300ms`, `1s`, `1.5s`, `2m` or `500us`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let (num, unit) = split_number(s);
    let value = parse_number(num).ok_or_else(|| format!("`{s}` is not a duration (examples: `300ms`, `1s`, `2m`)"))?;
    if unit.is_empty() {
        return Err(format!("duration `{s}` needs a unit: ns, us, ms, s, m or h (e.g. `{num}ms`)"));
    }
    let mult = DURATION_UNITS
        .iter()
        .find(|(u, _)| *u == unit)
        .map(|(_, m)| *m)
        .ok_or_else(|| format!("unknown duration unit `{unit}` in `{s}` (use ns, us, ms, s, m or h)"))?;
    let secs = value * mult;
    if secs > 365.0 * 86400.0 {
        return Err(format!("duration `{s}` is longer than a year"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parse a percentage such as `5%` or `2.5%` into a fraction (0.05).
pub fn parse_percent(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let Some(num) = t.strip_suffix('%') else {
        return Err(format!("`{s}` is not a percentage (write e.g. `5%`)"));
    };
    let v = parse_number(num.trim()).ok_or_else(|| format!("`{s}` is not a percentage (write e.g. `5%`)"))?;
    if !(v > 0.0 && v < 1000.0) {
        return Err(format!("percentage `{s}` must be above 0% and below 1000%"));
    }
    Ok(v / 100.0)
}

/// Format bytes with the largest binary unit that divides them (`10GiB`), for tables.
pub fn format_size(bytes: u64) -> String {
    for (unit, mult) in [("TiB", 1u64 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
        if bytes >= mult && bytes.is_multiple_of(mult) {
            return format!("{}{unit}", bytes / mult);
        }
    }
    format!("{bytes}B")
}

/// Format a duration compactly for tables (`300ms`, `1s`, `1.5s`).
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms < 1.0 {
        format!("{}us", d.as_micros())
    } else if ms < 1000.0 {
        format!("{}ms", ms as u64)
    } else {
        let s = d.as_secs_f64();
        if s.fract() == 0.0 { format!("{}s", s as u64) } else { format!("{s}s") }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("10GiB"), Ok(10 << 30));
        assert_eq!(parse_size("1.5KiB"), Ok(1536));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("2GB"), Ok(2_000_000_000));
        assert_eq!(parse_size(" 64 MiB "), Ok(64 << 20));
        assert!(parse_size("1gib").unwrap_err().contains("did you mean `1GiB`"));
        assert!(parse_size("1G").unwrap_err().contains("did you mean `1GiB`"));
        assert!(parse_size("GiB").is_err());
        assert!(parse_size("-1GiB").is_err());
        assert!(parse_size("1.3B").is_err());
        assert!(parse_size("99999999999TiB").unwrap_err().contains("too large"));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("300ms"), Ok(Duration::from_millis(300)));
        assert_eq!(parse_duration("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("500us"), Ok(Duration::from_micros(500)));
        assert!(parse_duration("300").unwrap_err().contains("needs a unit"));
        assert!(parse_duration("3 fortnights").unwrap_err().contains("unknown duration unit"));
    }

    #[test]
    fn percentages() {
        assert_eq!(parse_percent("5%"), Ok(0.05));
        assert_eq!(parse_percent(" 2.5 %"), Ok(0.025));
        assert!(parse_percent("5").unwrap_err().contains("not a percentage"));
        assert!(parse_percent("0%").is_err());
    }

    #[test]
    fn formatting_round_trips() {
        assert_eq!(format_size(10 << 30), "10GiB");
        assert_eq!(format_size(1536), "1536B");
        assert_eq!(format_duration(Duration::from_millis(300)), "300ms");
        assert_eq!(format_duration(Duration::from_secs(1)), "1s");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(format_duration(Duration::from_micros(20)), "20us");
    }
}
