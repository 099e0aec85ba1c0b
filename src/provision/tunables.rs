//! Kernel settings around a cell: block queue settings of the device under test
//! (`/sys/dev/block/<maj>:<min>/queue/{scheduler,read_ahead_kb,nr_requests}`) and
//! `[sysctl]` values (`/proc/sys/...`): where each lives, how it is read and written.
//! Who may change one and who puts it back is the host-wide journal's business
//! ([`super::host_tunables`]). A value the kernel refuses skips the cell with the
//! kernel's answer and what it would accept.

use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use crate::model::SkipReason;

/// Where sysfs lists block devices by number.
const SYS_DEV_BLOCK: &str = "/sys/dev/block";

/// The sysfs file of queue setting `key` of the block device `dev` (`/dev/loop3`, or a
/// link to one): addressed by the device number the node really has (`st_rdev`), never
/// by the node's name, so the setting lands on the device mkfs formatted. A partition
/// has no queue of its own: its disk's is used.
pub fn queue_path(dev: &Path, key: &str) -> Result<PathBuf, String> {
    let meta = std::fs::metadata(dev).map_err(|e| format!("stat {}: {e}", dev.display()))?;
    let rdev = meta.rdev();
    if rdev == 0 {
        return Err(format!("{} is not a device node", dev.display()));
    }
    queue_path_in(Path::new(SYS_DEV_BLOCK), libc::major(rdev), libc::minor(rdev), key)
}

/// [`queue_path`] below `sys_dev_block` (a test's fake sysfs): the queue of `<maj>:<min>`,
/// or of its parent disk when its directory has a `partition` file.
fn queue_path_in(sys_dev_block: &Path, major: u32, minor: u32, key: &str) -> Result<PathBuf, String> {
    let own = sys_dev_block.join(format!("{major}:{minor}"));
    if !own.join("partition").exists() {
        return Ok(own.join("queue").join(key));
    }
    // The partition's directory sits inside its disk's: the disk's `dev` file names it.
    let real = own.canonicalize().map_err(|e| format!("resolve {}: {e}", own.display()))?;
    let disk_dev = real.parent().map(|d| d.join("dev")).ok_or_else(|| format!("{} has no parent", real.display()))?;
    let disk = std::fs::read_to_string(&disk_dev).map_err(|e| format!("read {}: {e}", disk_dev.display()))?;
    let disk = disk.trim();
    if !is_major_minor(disk) {
        return Err(format!("{} holds {disk:?}, not <major>:<minor>", disk_dev.display()));
    }
    Ok(sys_dev_block.join(disk).join("queue").join(key))
}

/// `7:3`: two decimal numbers and a colon, nothing else.
fn is_major_minor(s: &str) -> bool {
    let digits = |x: &str| !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit());
    s.split_once(':').is_some_and(|(a, b)| digits(a) && digits(b))
}

/// The sysfs directory of the device a queue setting belongs to
/// (`/sys/dev/block/7:3` for `/sys/dev/block/7:3/queue/read_ahead_kb`), if it is one.
pub fn queue_device_dir(p: &Path) -> Option<&Path> {
    let parts: Vec<&str> = p.iter().filter_map(|c| c.to_str()).collect();
    match parts.as_slice() {
        ["/", "sys", "dev", "block", _, "queue", _] | ["/", "sys", "block", _, "queue", _] => p.parent()?.parent(),
        _ => None,
    }
}

/// The /proc/sys file of a dotted sysctl key (`vm.dirty_ratio`).
pub fn sysctl_path(key: &str) -> PathBuf {
    PathBuf::from(format!("/proc/sys/{}", key.replace('.', "/")))
}

/// Whether a journalled path is one this module writes: `/proc/sys/...` or
/// `/sys/dev/block/<maj>:<min>/queue/<key>` (or `/sys/block/<dev>/queue/<key>`, as
/// journals of earlier versions name them), plain components only. Stale cleanup
/// writes nothing else.
pub fn is_tunable_path(p: &Path) -> bool {
    let plain = p.is_absolute() && p.components().all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    let parts: Vec<&str> = p.iter().filter_map(|c| c.to_str()).collect();
    plain
        && match parts.as_slice() {
            ["/", "proc", "sys", rest @ ..] => rest.len() >= 2,
            ["/", "sys", "dev", "block", dev, "queue", _] => is_major_minor(dev),
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
        assert!(is_tunable_path(Path::new("/sys/dev/block/7:3/queue/read_ahead_kb")));
        assert!(!is_tunable_path(Path::new("/sys/dev/block/loop3/queue/read_ahead_kb")));
        assert!(!is_tunable_path(Path::new("/sys/dev/block/7:3/device/delete")));
        assert_eq!(sysctl_path("vm.dirty_ratio"), Path::new("/proc/sys/vm/dirty_ratio"));
        assert_eq!(
            queue_device_dir(Path::new("/sys/dev/block/7:3/queue/nr_requests")),
            Some(Path::new("/sys/dev/block/7:3"))
        );
        assert_eq!(queue_device_dir(Path::new("/proc/sys/vm/dirty_ratio")), None);
    }

    #[test]
    fn a_queue_setting_is_found_by_device_number_and_a_partition_uses_its_disk() {
        // A fake /sys: devices/vda (253:0) with partition vda1 (253:1), linked by number.
        let d = tempfile::tempdir().unwrap();
        let devices = d.path().join("devices/vda");
        std::fs::create_dir_all(devices.join("vda1")).unwrap();
        std::fs::write(devices.join("dev"), "253:0\n").unwrap();
        std::fs::write(devices.join("vda1/partition"), "1\n").unwrap();
        let by_number = d.path().join("dev/block");
        std::fs::create_dir_all(&by_number).unwrap();
        std::os::unix::fs::symlink("../../devices/vda", by_number.join("253:0")).unwrap();
        std::os::unix::fs::symlink("../../devices/vda/vda1", by_number.join("253:1")).unwrap();
        let disk = by_number.join("253:0/queue/read_ahead_kb");
        assert_eq!(queue_path_in(&by_number, 253, 0, "read_ahead_kb").unwrap(), disk);
        assert_eq!(queue_path_in(&by_number, 253, 1, "read_ahead_kb").unwrap(), disk);
        // Not a device node at all.
        assert!(queue_path(d.path(), "read_ahead_kb").unwrap_err().contains("not a device node"));
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
