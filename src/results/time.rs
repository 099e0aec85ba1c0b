//! Timestamps as the result files write them: RFC 3339 UTC with seconds.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The current time as RFC 3339 UTC with seconds: `2025-01-31T12:00:00Z`.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

/// Format seconds since the epoch as RFC 3339 UTC with seconds.
pub fn rfc3339_from_unix(secs: u64) -> String {
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_secs(secs)).to_string()
}

/// Seconds since the epoch of `YYYY-MM-DDTHH:MM:SSZ` (the form fsbench writes); `None`
/// for anything else (fractions of a second, an offset, a day the month does not have),
/// or a date before 1970.
pub fn unix_from_rfc3339(s: &str) -> Option<u64> {
    // humantime also reads fractions and spaces for `T`; fsbench writes neither.
    let b = s.as_bytes();
    if b.len() != 20 || b[10] != b'T' || b[19] != b'Z' {
        return None;
    }
    humantime::parse_rfc3339(s).ok()?.duration_since(UNIX_EPOCH).ok().map(|d| d.as_secs())
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
        for bad in [
            "",
            "2003-03-01",
            "2003-13-01T00:00:38Z",
            "2003-03-01T00:00:38+01:00",
            "1969-12-31T23:59:59Z",
            "2003-03-01 00:00:38Z",
            "2003-03-01T00:00:38.5Z",
            "2003-02-30T00:00:00Z",
        ] {
            assert_eq!(unix_from_rfc3339(bad), None, "{bad}");
        }
    }
}
