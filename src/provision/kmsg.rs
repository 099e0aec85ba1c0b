//! The kernel's own words about a failed operation, read from /dev/kmsg.
//!
//! mount(2) only returns an errno; the reason ("can't mount with data=, fs
//! mounted w/o journal") goes to the kernel log. A [`KmsgWatch`] is opened and
//! positioned at the end of the log *before* the operation, so that afterwards
//! it reads only the records that appeared since.

use std::fs::File;
use std::io::{ErrorKind, Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;

/// A position in the kernel log; [`KmsgWatch::new_records`] returns what came after it.
pub struct KmsgWatch {
    file: Option<File>,
}

/// One kernel log record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KmsgRecord {
    /// Syslog level (0 = emerg ... 7 = debug).
    pub level: u8,
    /// The message text, without the record header.
    pub message: String,
}

impl KmsgWatch {
    /// Start watching. Without permission to read /dev/kmsg the watch is empty
    /// (errors then carry only the errno), which is not itself an error.
    pub fn start() -> KmsgWatch {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open("/dev/kmsg")
            .ok()
            .and_then(|mut f| f.seek(SeekFrom::End(0)).ok().map(|_| f));
        KmsgWatch { file }
    }

    /// All records logged since [`KmsgWatch::start`] (or the previous call).
    pub fn new_records(&mut self) -> Vec<KmsgRecord> {
        let Some(file) = self.file.as_mut() else { return Vec::new() };
        let mut out = Vec::new();
        // Each read(2) on /dev/kmsg returns exactly one record.
        let mut buf = vec![0u8; 8192];
        loop {
            match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if let Some(r) = parse_record(&String::from_utf8_lossy(&buf[..n])) {
                        out.push(r);
                    }
                }
                // EPIPE: records were overwritten before we read them; keep going.
                Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => break, // EAGAIN: nothing more
            }
        }
        out
    }

    /// Error and warning messages since the start that concern `device`
    /// (`loop3`) or, failing that, that come from the `fstype` driver
    /// (`ext4: Unknown parameter 'x'` names no device).
    pub fn messages_about(&mut self, device: Option<&str>, fstype: &str) -> Vec<String> {
        relevant(&self.new_records(), device, fstype)
    }
}

/// Parse `level,seq,ts,flags;message\n continuation...`.
fn parse_record(raw: &str) -> Option<KmsgRecord> {
    let (header, rest) = raw.split_once(';')?;
    let prio: u32 = header.split(',').next()?.parse().ok()?;
    let message = rest.lines().next().unwrap_or("").to_string();
    Some(KmsgRecord { level: (prio & 7) as u8, message: unescape(&message) })
}

/// /dev/kmsg escapes non-printable bytes as `\xNN`.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && chars.peek() == Some(&'x') {
            let hex: String = chars.clone().skip(1).take(2).collect();
            if let Ok(b) = u8::from_str_radix(&hex, 16) {
                out.push(b as char);
                chars.next();
                chars.next();
                chars.next();
                continue;
            }
        }
        out.push(c);
    }
    out
}

fn mentions_device(message: &str, device: &str) -> bool {
    message.match_indices(device).any(|(i, _)| {
        let before = message[..i].chars().last();
        let after = message[i + device.len()..].chars().next();
        !before.is_some_and(|c| c.is_ascii_alphanumeric()) && !after.is_some_and(|c| c.is_ascii_alphanumeric())
    })
}

/// Select the records that explain a failure on `device` of type `fstype`.
pub(crate) fn relevant(records: &[KmsgRecord], device: Option<&str>, fstype: &str) -> Vec<String> {
    // Only warnings and worse: "mounted filesystem ..." info lines explain nothing.
    let serious: Vec<&KmsgRecord> = records.iter().filter(|r| r.level <= 4).collect();
    if let Some(dev) = device {
        let about: Vec<String> =
            serious.iter().filter(|r| mentions_device(&r.message, dev)).map(|r| r.message.clone()).collect();
        if !about.is_empty() {
            return about;
        }
    }
    let prefix = format!("{}:", fstype.to_ascii_lowercase());
    serious.iter().filter(|r| r.message.to_ascii_lowercase().starts_with(&prefix)).map(|r| r.message.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(level: u8, m: &str) -> KmsgRecord {
        KmsgRecord { level, message: m.into() }
    }

    #[test]
    fn parses_header_and_drops_continuation_lines() {
        let r = parse_record(
            "3,1234,5678,-;EXT4-fs (loop3): can't mount with data=, fs mounted w/o journal\n SUBSYSTEM=block\n",
        )
        .unwrap();
        assert_eq!(r.level, 3);
        assert_eq!(r.message, "EXT4-fs (loop3): can't mount with data=, fs mounted w/o journal");
        assert_eq!(parse_record("6,1,2,-;a\\x20b").unwrap().message, "a b");
        assert!(parse_record("garbage").is_none());
    }

    #[test]
    fn picks_messages_about_our_device_only() {
        let recs = vec![
            rec(6, "EXT4-fs (loop3): mounted filesystem"),
            rec(3, "EXT4-fs (loop13): not ours"),
            rec(3, "EXT4-fs (loop3): can't mount with data=, fs mounted w/o journal"),
            rec(3, "ext4: Unknown parameter 'bogus'"),
        ];
        assert_eq!(
            relevant(&recs, Some("loop3"), "ext4"),
            vec!["EXT4-fs (loop3): can't mount with data=, fs mounted w/o journal"]
        );
        // No record names the device: fall back to the driver's own prefix.
        assert_eq!(relevant(&recs, Some("loop5"), "ext4"), vec!["ext4: Unknown parameter 'bogus'"]);
        assert!(relevant(&recs, None, "xfs").is_empty());
    }
}
