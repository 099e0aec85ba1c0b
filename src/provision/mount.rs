//! mount(2)/umount(2) and /proc/self/mountinfo.

use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::errno::Errno;
use nix::mount::{MntFlags, MsFlags};

use super::ProvisionError;
use super::kmsg::KmsgWatch;

/// Options as mount(8) would split them: generic VFS flags become mount(2)
/// flags, everything else is the filesystem's data string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitOptions {
    /// Generic flags (`ro`, `noatime`, `nodev`, ...).
    pub flags: MsFlags,
    /// Comma-joined filesystem-specific options (`noload,barrier=0`).
    pub data: String,
}

/// Split scenario mount options the way mount(8) does, so that `noatime`
/// reaches the VFS instead of being refused by the filesystem as unknown.
pub fn split_options(options: &[String]) -> SplitOptions {
    let mut flags = MsFlags::empty();
    let mut data = Vec::new();
    for opt in options {
        match opt.as_str() {
            // mount(8)-level words with no kernel meaning: the loop device is ours.
            "defaults" | "loop" | "rw" => {}
            "ro" => flags |= MsFlags::MS_RDONLY,
            "nosuid" => flags |= MsFlags::MS_NOSUID,
            "nodev" => flags |= MsFlags::MS_NODEV,
            "noexec" => flags |= MsFlags::MS_NOEXEC,
            "sync" => flags |= MsFlags::MS_SYNCHRONOUS,
            "dirsync" => flags |= MsFlags::MS_DIRSYNC,
            "noatime" => flags |= MsFlags::MS_NOATIME,
            "nodiratime" => flags |= MsFlags::MS_NODIRATIME,
            "relatime" => flags |= MsFlags::MS_RELATIME,
            "strictatime" => flags |= MsFlags::MS_STRICTATIME,
            "lazytime" => flags |= MsFlags::MS_LAZYTIME,
            "silent" => flags |= MsFlags::MS_SILENT,
            other => data.push(other.to_string()),
        }
    }
    SplitOptions { flags, data: data.join(",") }
}

/// Mount `source` of type `fstype` on `target` with scenario options. When the
/// kernel refuses, the error carries what the kernel logged about it.
pub fn mount_fs(source: &Path, target: &Path, fstype: &str, options: &[String]) -> Result<(), ProvisionError> {
    let split = split_options(options);
    let mut watch = KmsgWatch::start();
    let data = (!split.data.is_empty()).then_some(split.data.as_str());
    match nix::mount::mount(Some(source), target, Some(fstype), split.flags, data) {
        Ok(()) => Ok(()),
        Err(errno) => {
            let dev = source.file_name().map(|n| n.to_string_lossy().into_owned());
            // The log record may lag the syscall return by a moment.
            let mut kernel = watch.messages_about(dev.as_deref(), fstype);
            if kernel.is_empty() {
                std::thread::sleep(Duration::from_millis(50));
                kernel = watch.messages_about(dev.as_deref(), fstype);
            }
            Err(ProvisionError::MountRefused {
                source_dev: source.to_path_buf(),
                target: target.to_path_buf(),
                fstype: fstype.to_string(),
                options: options.join(","),
                errno,
                kernel,
            })
        }
    }
}

/// Unmount `target`, retrying briefly on EBUSY (a worker that just exited may
/// still hold it). With `lazy_last_resort`, a final MNT_DETACH is tried.
pub fn unmount(target: &Path, lazy_last_resort: bool) -> Result<(), ProvisionError> {
    let mut last = Errno::EBUSY;
    for attempt in 0..20 {
        match nix::mount::umount2(target, MntFlags::empty()) {
            Ok(()) => return Ok(()),
            Err(Errno::EINVAL) | Err(Errno::ENOENT) if !is_mountpoint(target) => return Ok(()),
            Err(Errno::EBUSY) => {
                last = Errno::EBUSY;
                std::thread::sleep(Duration::from_millis(25 * (attempt + 1).min(8)));
            }
            Err(e) => {
                last = e;
                break;
            }
        }
    }
    if lazy_last_resort && nix::mount::umount2(target, MntFlags::MNT_DETACH).is_ok() {
        return Ok(());
    }
    Err(ProvisionError::Sys { what: "unmount".into(), path: target.to_path_buf(), source: last })
}

/// How a mount went away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unmounted {
    /// umount(2) succeeded (or nothing was mounted there).
    Clean,
    /// It stayed busy (a process still has a file or its cwd in it), so it was
    /// detached with MNT_DETACH: gone from the tree, freed by the kernel when
    /// its last user lets go.
    Detached,
}

/// Unmount `target`; when it stays busy (EBUSY) after `retries` tries with a
/// short wait between them, detach it lazily rather than leave it mounted.
pub fn unmount_or_detach(target: &Path, retries: u32) -> Result<Unmounted, ProvisionError> {
    let mut last = Errno::EBUSY;
    for attempt in 0..retries.max(1) {
        match nix::mount::umount2(target, MntFlags::empty()) {
            Ok(()) => return Ok(Unmounted::Clean),
            Err(Errno::EINVAL) | Err(Errno::ENOENT) if !is_mountpoint(target) => return Ok(Unmounted::Clean),
            Err(Errno::EBUSY) => {
                last = Errno::EBUSY;
                if attempt + 1 < retries {
                    std::thread::sleep(Duration::from_millis(25 * (attempt as u64 + 1).min(8)));
                }
            }
            Err(e) => {
                last = e;
                break;
            }
        }
    }
    if last == Errno::EBUSY {
        match nix::mount::umount2(target, MntFlags::MNT_DETACH) {
            Ok(()) => return Ok(Unmounted::Detached),
            Err(e) => last = e,
        }
    }
    Err(ProvisionError::Sys { what: "unmount".into(), path: target.to_path_buf(), source: last })
}

/// One line of /proc/self/mountinfo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountInfo {
    /// `major:minor` of the mounted device.
    pub dev: String,
    /// Mount point.
    pub mount_point: PathBuf,
    /// Per-mount options (`rw,relatime`).
    pub mount_options: String,
    /// Filesystem type.
    pub fstype: String,
    /// Mount source (`/dev/loop3`).
    pub source: String,
    /// Superblock options (`rw,noload,barrier=0`).
    pub super_options: String,
}

/// mountinfo escapes space, tab, newline and backslash as octal `\NNN`.
fn unescape_octal(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 3 < bytes.len() && bytes[i + 1..i + 4].iter().all(|b| (b'0'..=b'7').contains(b)) {
            let v = (bytes[i + 1] - b'0') * 64 + (bytes[i + 2] - b'0') * 8 + (bytes[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parse the text of /proc/self/mountinfo.
pub fn parse_mountinfo(text: &str) -> Vec<MountInfo> {
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let l: Vec<&str> = left.split(' ').collect();
            let r: Vec<&str> = right.split(' ').collect();
            if l.len() < 6 || r.len() < 3 {
                return None;
            }
            Some(MountInfo {
                dev: l[2].to_string(),
                mount_point: PathBuf::from(unescape_octal(l[4])),
                mount_options: l[5].to_string(),
                fstype: r[0].to_string(),
                source: unescape_octal(r[1]),
                super_options: r[2].to_string(),
            })
        })
        .collect()
}

/// The current mount table of this process's namespace.
pub fn mountinfo() -> Vec<MountInfo> {
    std::fs::read_to_string("/proc/self/mountinfo").map(|t| parse_mountinfo(&t)).unwrap_or_default()
}

/// The topmost mount at exactly `target`, if any.
pub fn find_mount(target: &Path) -> Option<MountInfo> {
    mountinfo().into_iter().rfind(|m| m.mount_point == target)
}

/// Whether something is mounted at `target`.
pub fn is_mountpoint(target: &Path) -> bool {
    find_mount(target).is_some()
}

/// The type of the filesystem `path` is on, from statfs(2)'s magic number; `None` when
/// statfs fails or the magic is not one fsbench knows. ext2, ext3 and ext4 share one magic.
pub fn statfs_type(path: &Path) -> Option<&'static str> {
    let magic = nix::sys::statfs::statfs(path).ok()?.filesystem_type().0 as u64;
    Some(match magic {
        0xEF53 => "ext2/ext3/ext4",
        0x5846_5342 => "xfs",
        0x9123_683E => "btrfs",
        0x0102_1994 => "tmpfs",
        0x8584_58F6 => "ramfs",
        0xF2F5_2010 => "f2fs",
        0x794C_7630 => "overlay",
        0x6969 => "nfs",
        0xFF53_4D42 => "cifs",
        0x2FC1_2FC1 => "zfs",
        0xCA45_1A4E => "bcachefs",
        0x6573_5546 => "fuse",
        0x3153_464A => "jfs",
        0x5265_4973 => "reiserfs",
        0x4D44 => "vfat",
        0x5346_544E => "ntfs",
        0x7366_746E => "ntfs3",
        0x0102_1997 => "9p",
        _ => return None,
    })
}

/// The mount that contains `path` (longest mount point prefix).
pub fn containing_mount(path: &Path) -> Option<MountInfo> {
    mountinfo().into_iter().filter(|m| path.starts_with(&m.mount_point)).max_by_key(|m| m.mount_point.as_os_str().len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_vfs_flags_from_fs_options() {
        let opts: Vec<String> =
            ["usrquota", "noatime", "barrier=0", "loop", "nodev", "noload"].iter().map(|s| s.to_string()).collect();
        let s = split_options(&opts);
        assert_eq!(s.data, "usrquota,barrier=0,noload");
        assert_eq!(s.flags, MsFlags::MS_NOATIME | MsFlags::MS_NODEV);
    }

    #[test]
    fn parses_mountinfo_with_escapes_and_optional_fields() {
        let text = "36 35 98:0 /mnt1 /mnt/a\\040b rw,noatime master:1 - ext4 /dev/loop3 rw,noload,barrier=0\n\
                    42 27 0:50 / /tmp/x rw,relatime - tmpfs tmpfs rw,size=1024k\n";
        let m = parse_mountinfo(text);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].mount_point, PathBuf::from("/mnt/a b"));
        assert_eq!(m[0].mount_options, "rw,noatime");
        assert_eq!(m[0].fstype, "ext4");
        assert_eq!(m[0].source, "/dev/loop3");
        assert_eq!(m[0].super_options, "rw,noload,barrier=0");
        assert_eq!(m[1].dev, "0:50");
    }
}
