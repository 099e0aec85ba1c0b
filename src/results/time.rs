//! Timestamps as the result files write them: RFC 3339 UTC with seconds.

use std::time::{SystemTime, UNIX_EPOCH};

/// The current time as RFC 3339 UTC with seconds: `2025-01-31T12:00:00Z`.
pub fn now_rfc3339() -> String {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    rfc3339_from_unix(secs)
}

/// Format seconds since the epoch as RFC 3339 UTC (civil-from-days, proleptic Gregorian).
pub fn rfc3339_from_unix(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's days_from_civil inverse: exact for all dates after 1970.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, (rem % 3600) / 60, rem % 60)
}

/// Seconds since the epoch of `YYYY-MM-DDTHH:MM:SSZ` (the form fsbench writes); `None`
/// for anything else, or a date before 1970.
pub fn unix_from_rfc3339(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    let shape = b.len() == 20
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'Z',
            _ => c.is_ascii_digit(),
        });
    if !shape {
        return None;
    }
    let n = |r: std::ops::Range<usize>| s[r].parse::<i64>().ok();
    let (y, mo, d, h, mi, se) = (n(0..4)?, n(5..7)?, n(8..10)?, n(11..13)?, n(14..16)?, n(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    // Howard Hinnant's days_from_civil.
    let y2 = if mo <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let doy = (153 * (if mo > 2 { mo - 3 } else { mo + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days * 86_400 + h * 3600 + mi * 60 + se).ok()
}

/// `2025-01-31T12:00:00Z` -> `20250131T120000Z`: sortable and safe in paths.
pub(super) fn compact_timestamp(rfc3339: &str) -> String {
    rfc3339.chars().filter(|c| *c != '-' && *c != ':').collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_known_dates() {
        assert_eq!(rfc3339_from_unix(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_from_unix(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339_from_unix(1_046_476_838), "2003-03-01T00:00:38Z");
        assert_eq!(rfc3339_from_unix(4_102_444_799), "2099-12-31T23:59:59Z");
        assert_eq!(compact_timestamp("2003-03-01T00:00:38Z"), "20030301T000038Z");
        for secs in [0, 951_782_400, 1_046_476_838, 4_102_444_799] {
            assert_eq!(unix_from_rfc3339(&rfc3339_from_unix(secs)), Some(secs));
        }
        for bad in ["", "2003-03-01", "2003-13-01T00:00:38Z", "2003-03-01T00:00:38+01:00", "1969-12-31T23:59:59Z"] {
            assert_eq!(unix_from_rfc3339(bad), None, "{bad}");
        }
    }
}
