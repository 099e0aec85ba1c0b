//! Disk quota: quota files made by quota-tools (`quotacheck -cug`), switched
//! and inspected with quotactl(2).

use std::ffi::CString;
use std::path::{Path, PathBuf};

use nix::errno::Errno;

use super::ProvisionError;
use super::mkfs::{find_tool, run_tool};

/// A quota type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaType {
    /// User quota (`USRQUOTA`).
    User,
    /// Group quota (`GRPQUOTA`).
    Group,
}

impl QuotaType {
    fn id(self) -> libc::c_int {
        match self {
            QuotaType::User => 0,
            QuotaType::Group => 1,
        }
    }
    /// `user` / `group`.
    pub fn name(self) -> &'static str {
        match self {
            QuotaType::User => "user",
            QuotaType::Group => "group",
        }
    }
    /// The quota file quota-tools creates for the vfsv0 format.
    pub fn file_name(self) -> &'static str {
        match self {
            QuotaType::User => "aquota.user",
            QuotaType::Group => "aquota.group",
        }
    }
}

/// The quota types a set of mount options asks for (`usrquota`, `grpjquota=...`).
pub fn types_from_options(options: &[String]) -> Vec<QuotaType> {
    let mut t = Vec::new();
    let key = |o: &str| o.split('=').next().unwrap_or("").to_string();
    if options.iter().any(|o| matches!(key(o).as_str(), "usrquota" | "usrjquota" | "uquota" | "quota" | "uqnoenforce"))
    {
        t.push(QuotaType::User);
    }
    if options.iter().any(|o| matches!(key(o).as_str(), "grpquota" | "grpjquota" | "gquota" | "gqnoenforce")) {
        t.push(QuotaType::Group);
    }
    t
}

/// Whether an option is about quota (used to build the tiny probe mount).
pub fn is_quota_option(o: &str) -> bool {
    !types_from_options(&[o.to_string()]).is_empty() || o.starts_with("jqfmt=")
}

fn quotactl(
    cmd: libc::c_int,
    qtype: QuotaType,
    device: &Path,
    id: libc::c_int,
    addr: *mut libc::c_char,
) -> Result<(), Errno> {
    let dev = CString::new(device.as_os_str().as_encoded_bytes()).map_err(|_| Errno::EINVAL)?;
    // SAFETY: dev is a valid C string; addr is null or points at a buffer the
    // command expects (checked by the callers below).
    let rc = unsafe { libc::quotactl(libc::QCMD(cmd, qtype.id()), dev.as_ptr(), id, addr) };
    if rc < 0 { Err(Errno::last()) } else { Ok(()) }
}

/// `struct if_dqinfo`.
#[repr(C)]
#[derive(Default)]
struct IfDqinfo {
    bgrace: u64,
    igrace: u64,
    flags: u32,
    valid: u32,
}

/// Whether quota of `qtype` is on for the filesystem on `device`
/// (Q_GETINFO succeeds only while it is on).
pub fn is_on(device: &Path, qtype: QuotaType) -> bool {
    let mut info = IfDqinfo::default();
    quotactl(libc::Q_GETINFO, qtype, device, 0, &mut info as *mut IfDqinfo as *mut libc::c_char).is_ok()
}

/// Quota state as recorded in results: `user=on group=off`.
pub fn state(device: &Path) -> String {
    [QuotaType::User, QuotaType::Group]
        .iter()
        .map(|t| format!("{}={}", t.name(), if is_on(device, *t) { "on" } else { "off" }))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Create quota files with `quotacheck -cug -F vfsv0 <mountpoint>`.
pub fn create_files(mountpoint: &Path) -> Result<(), ProvisionError> {
    let tool = find_tool("quotacheck").ok_or_else(|| ProvisionError::Quota {
        what: "create quota files".into(),
        mountpoint: mountpoint.to_path_buf(),
        detail: "quotacheck not found (apt-get install quota)".into(),
    })?;
    let argv = vec![
        tool.to_string_lossy().into_owned(),
        "-cug".into(),
        "-F".into(),
        "vfsv0".into(),
        mountpoint.to_string_lossy().into_owned(),
    ];
    run_tool(&argv).map(|_| ()).map_err(|(status, stderr)| ProvisionError::Quota {
        what: format!("`{}`", argv.join(" ")),
        mountpoint: mountpoint.to_path_buf(),
        detail: format!("{status}: {stderr}"),
    })
}

/// Switch quota on for `qtype` with the vfsv0 file quotacheck made.
pub fn quota_on(device: &Path, mountpoint: &Path, qtype: QuotaType) -> Result<(), ProvisionError> {
    let file: PathBuf = mountpoint.join(qtype.file_name());
    let cfile = CString::new(file.as_os_str().as_encoded_bytes()).map_err(|_| ProvisionError::Quota {
        what: "quotaon".into(),
        mountpoint: mountpoint.to_path_buf(),
        detail: "path contains NUL".into(),
    })?;
    quotactl(libc::Q_QUOTAON, qtype, device, libc::QFMT_VFS_V0, cfile.as_ptr() as *mut libc::c_char).map_err(|e| {
        let mut detail = format!("quotactl(Q_QUOTAON, {}, vfsv0) failed: {e}", qtype.name());
        if e == Errno::ESRCH {
            detail.push_str(": the kernel has no such quota format");
            if let Some(c) = kernel_config_quota_lines() {
                detail.push_str(&format!(" ({c})"));
            }
        }
        ProvisionError::Quota { what: "switch quota on".into(), mountpoint: mountpoint.to_path_buf(), detail }
    })
}

/// Switch quota off for `qtype`.
pub fn quota_off(device: &Path, mountpoint: &Path, qtype: QuotaType) -> Result<(), ProvisionError> {
    quotactl(libc::Q_QUOTAOFF, qtype, device, 0, std::ptr::null_mut()).map_err(|e| ProvisionError::Quota {
        what: "switch quota off".into(),
        mountpoint: mountpoint.to_path_buf(),
        detail: format!("quotactl(Q_QUOTAOFF, {}): {e}", qtype.name()),
    })
}

/// The quota lines of the running kernel's config, when it exposes one:
/// `/proc/config.gz: # CONFIG_QFMT_V2 is not set`.
pub fn kernel_config_quota_lines() -> Option<String> {
    use std::io::Read;
    let f = std::fs::File::open("/proc/config.gz").ok()?;
    let mut text = String::new();
    flate2::read::GzDecoder::new(f).read_to_string(&mut text).ok()?;
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| {
            l.contains("CONFIG_QFMT_V2") || l.contains("CONFIG_QUOTA=") || l.contains("CONFIG_QUOTA is not set")
        })
        .collect();
    (!lines.is_empty()).then(|| format!("/proc/config.gz: {}", lines.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn quota_types_follow_mount_options() {
        assert_eq!(
            types_from_options(&v(&["usrquota", "grpquota", "noload"])),
            vec![QuotaType::User, QuotaType::Group]
        );
        assert_eq!(types_from_options(&v(&["grpjquota=aquota.group", "jqfmt=vfsv0"])), vec![QuotaType::Group]);
        assert!(types_from_options(&v(&["barrier=0"])).is_empty());
        assert!(is_quota_option("jqfmt=vfsv0"));
        assert!(!is_quota_option("noload"));
    }
}
