//! Kernel settings around a cell: block queue settings of the device under test
//! (`/sys/block/<dev>/queue/{scheduler,read_ahead_kb,nr_requests}`) and `[sysctl]` values
//! (`/proc/sys/...`). Each is read, journalled with its old value *before* it is written
//! (so stale cleanup after SIGKILL can put it back), written, read back for the result,
//! and restored at teardown. A value the kernel refuses skips the cell with the kernel's
//! answer and what it would accept.

use std::path::{Component, Path, PathBuf};

use crate::model::SkipReason;

/// The sysfs file of queue setting `key` of block device `dev` (`/dev/loop3`).
pub fn queue_path(dev: &Path, key: &str) -> Option<PathBuf> {
    let name = dev.file_name()?.to_str()?;
    Some(PathBuf::from(format!("/sys/block/{name}/queue/{key}")))
}

/// The /proc/sys file of a dotted sysctl key (`vm.dirty_ratio`).
pub fn sysctl_path(key: &str) -> PathBuf {
    PathBuf::from(format!("/proc/sys/{}", key.replace('.', "/")))
}

/// Whether a journalled path is one this module writes: `/proc/sys/...` or
/// `/sys/block/<dev>/queue/<key>`, plain components only. Stale cleanup writes nothing else.
pub fn is_tunable_path(p: &Path) -> bool {
    let plain = p.is_absolute() && p.components().all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    let parts: Vec<&str> = p.iter().filter_map(|c| c.to_str()).collect();
    plain
        && match parts.as_slice() {
            ["/", "proc", "sys", rest @ ..] => rest.len() >= 2,
            ["/", "sys", "block", _, "queue", _] => true,
            _ => false,
        }
}

/// The current value as it is written back: for `scheduler`, the bracketed name of
/// `none [mq-deadline] kyber`; otherwise the file's text without its newline.
pub fn read_value(path: &Path) -> std::io::Result<String> {
    let text = std::fs::read_to_string(path)?;
    let text = text.trim_end_matches('\n');
    if path.file_name().is_some_and(|n| n == "scheduler")
        && let (Some(a), Some(b)) = (text.find('['), text.find(']'))
        && a < b
    {
        return Ok(text[a + 1..b].to_string());
    }
    Ok(text.to_string())
}

/// Write `value`; a refusal becomes a skip with the kernel's answer and a remedy.
pub fn write_value(path: &Path, what: &str, value: &str) -> Result<(), SkipReason> {
    match std::fs::write(path, value) {
        Ok(()) => Ok(()),
        Err(e) => {
            let listed = std::fs::read_to_string(path).ok().map(|t| t.trim().to_string());
            let remedy = match (path.file_name().and_then(|n| n.to_str()), e.kind()) {
                (Some("scheduler"), _) => format!(
                    "this kernel offers: {} (the bracketed one is in use); load another with `modprobe {value}` or pick one of those",
                    listed.unwrap_or_default()
                ),
                (_, std::io::ErrorKind::NotFound) => {
                    format!("{} does not exist on kernel {}: check the key's spelling", path.display(), release())
                }
                _ => format!("the kernel refused `{value}`; the current value is {}", listed.unwrap_or_default()),
            };
            Err(SkipReason {
                reason: format!("the kernel refused {what} = {value} ({}): {e}", path.display()),
                remedy: Some(remedy),
            })
        }
    }
}

fn release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_queue_and_proc_sys_paths_are_tunable() {
        assert!(is_tunable_path(Path::new("/proc/sys/vm/dirty_ratio")));
        assert!(is_tunable_path(Path::new("/sys/block/loop3/queue/scheduler")));
        assert!(!is_tunable_path(Path::new("/proc/sys/../../etc/passwd")));
        assert!(!is_tunable_path(Path::new("/etc/passwd")));
        assert!(!is_tunable_path(Path::new("/sys/block/loop3/device/delete")));
        assert_eq!(sysctl_path("vm.dirty_ratio"), Path::new("/proc/sys/vm/dirty_ratio"));
        assert_eq!(
            queue_path(Path::new("/dev/loop3"), "nr_requests").unwrap(),
            Path::new("/sys/block/loop3/queue/nr_requests")
        );
    }

    #[test]
    fn the_scheduler_in_use_is_the_bracketed_one() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("scheduler");
        std::fs::write(&p, "none [mq-deadline] kyber\n").unwrap();
        assert_eq!(read_value(&p).unwrap(), "mq-deadline");
        let q = d.path().join("read_ahead_kb");
        std::fs::write(&q, "128\n").unwrap();
        assert_eq!(read_value(&q).unwrap(), "128");
    }
}
