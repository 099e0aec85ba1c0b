//! Capability detection, never assumption: what a cell needs and whether this
//! host has it, with the reason and the remedy when it does not. `fsbench
//! doctor` prints the same checks as a table.

use std::collections::HashMap;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use crate::model::{CellParams, Layout, QuotaImpl, QuotaMode, SkipReason};
use crate::scenario::{Backing, FsSpec, Scenario};

use super::{ProvisionError, ProvisionRequest, is_root, loopdev, mkfs, mount, quota};

fn skip(reason: impl Into<String>, remedy: impl Into<Option<String>>) -> SkipReason {
    SkipReason { reason: reason.into(), remedy: remedy.into() }
}

/// Side-effect-free (apart from a cached tiny quota probe) capability check for one cell.
pub fn check(req: &ProvisionRequest) -> Result<(), SkipReason> {
    let cell = req.cell;
    // A limit this host cannot apply skips the cell: it never runs unlimited instead.
    if !req.fs.tunables.cgroup.is_empty() {
        if !is_root() {
            return Err(skip(
                format!("a cgroup for the cell's workers needs root (running as uid {})", nix::unistd::geteuid()),
                "run as root, or leave out the filesystem's `cgroup` table".to_string(),
            ));
        }
        super::cgroup::check(&req.fs.tunables.cgroup)?;
    }
    match req.backing {
        Backing::Dir { path } => check_dir(req, path),
        Backing::TmpfsLoop { .. } => {
            need_root("tmpfs-loop backing")?;
            loopdev::loop_control_available()
                .map_err(|e| skip(format!("no loop device support: {e}"), loop_remedy(&e).to_string()))?;
            check_fs_tools(req.fs.fs_type(&cell.fs))?;
            check_quota(req)
        }
        Backing::Device { path } => {
            need_root("device backing")?;
            if cell.layout == Layout::M && cell.tasks > 1 {
                return Err(skip(
                    format!(
                        "device backing holds one filesystem; layout M with {} tasks needs {}",
                        cell.tasks, cell.tasks
                    ),
                    "use layout S, or backing kind \"tmpfs-loop\"".to_string(),
                ));
            }
            device_usable(path, req.allow_device).map_err(|r| skip(format!("{}: {r}", path.display()), None))?;
            check_fs_tools(req.fs.fs_type(&cell.fs))?;
            check_quota(req)
        }
    }
}

fn need_root(what: &str) -> Result<(), SkipReason> {
    if is_root() {
        Ok(())
    } else {
        Err(skip(
            format!("{what} needs root (running as uid {})", nix::unistd::geteuid()),
            "run as root, or use backing kind \"dir\"".to_string(),
        ))
    }
}

fn check_dir(req: &ProvisionRequest, path: &Path) -> Result<(), SkipReason> {
    let cell = req.cell;
    let canon =
        path.canonicalize().ok().filter(|p| p.is_dir()).ok_or_else(|| {
            skip(format!("backing dir {} does not exist or is not a directory", path.display()), None)
        })?;
    if cell.quota == QuotaMode::On {
        return Err(skip(
            "quota cannot be switched on for backing kind \"dir\" (fsbench did not make that filesystem)",
            "use backing kind \"tmpfs-loop\" for quota cells".to_string(),
        ));
    }
    if req.task_uids.is_some() && !is_root() {
        return Err(skip(
            "per-task uids need root (chown of task directories)",
            "run as root, or set per_task_uid = false".to_string(),
        ));
    }
    // A result labelled ext4 must have run on ext4.
    let fs_type = req.fs.fs_type(&cell.fs);
    if let Some(m) = mount::containing_mount(&canon)
        && m.fstype != fs_type
    {
        return Err(skip(
            format!("backing dir {} is on {}, the cell asks for {fs_type}", canon.display(), m.fstype),
            format!("point backing.path at a directory on {fs_type}, or use backing kind \"tmpfs-loop\""),
        ));
    }
    Ok(())
}

/// `mkfs.<fs>` present and the fs type known to the kernel.
fn check_fs_tools(fs: &str) -> Result<(), SkipReason> {
    if mkfs::find_tool(&format!("mkfs.{fs}")).is_none() {
        return Err(skip(format!("mkfs.{fs} not found"), mkfs::remedy_for(fs)));
    }
    fs_known_to_kernel(fs)
}

/// The fs type is in /proc/filesystems, or a module for it is installed
/// (mount(2) then loads it on demand).
pub fn fs_known_to_kernel(fs: &str) -> Result<(), SkipReason> {
    let listed = std::fs::read_to_string("/proc/filesystems")
        .map(|t| t.lines().any(|l| l.split_whitespace().last() == Some(fs)))
        .unwrap_or(false);
    if listed || module_installed(fs) {
        return Ok(());
    }
    let release = nix::sys::utsname::uname().map(|u| u.release().to_string_lossy().into_owned()).unwrap_or_default();
    Err(skip(
        format!(
            "kernel {release} does not support filesystem type {fs} (not in /proc/filesystems, no module in /lib/modules/{release})"
        ),
        format!("use a kernel built with {fs} support"),
    ))
}

/// Filesystem types people put in scenarios, for did-you-mean (besides what this host has).
const WELL_KNOWN_FS: &[&str] = &[
    "ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "jfs", "reiserfs", "reiser4", "nilfs2", "bcachefs", "vfat",
    "exfat", "tmpfs", "zfs",
];

/// The filesystem type a matrix `fs` name stands for: a variant's `type`
/// (`[filesystems.ext4-nodelalloc] type = "ext4"`), else the name ([`Scenario::fs_type`]).
/// Tools and kernel support are looked up by this type, never by the variant's name.
pub fn fs_type_of<'a>(s: &'a Scenario, name: &'a str) -> &'a str {
    s.fs_type(name)
}

/// `validate`'s warnings about the scenario's filesystem types: a type with neither a
/// `mkfs.<type>` tool nor kernel support is most likely a typo (`xsf`), which would
/// otherwise validate, run, skip its cells and exit 0. Each names the nearest known type.
pub fn fs_type_warnings(s: &Scenario) -> Vec<String> {
    if matches!(s.backing, Backing::Dir { .. }) {
        // Nothing is formatted or mounted: the names only label the cells.
        return Vec::new();
    }
    // Only plausible names are suggested: types people benchmark, and those this host can
    // format (not every name in /proc/filesystems: `zfs` is no typo of `bfs`).
    let formattable = mkfs::formattable_types();
    let known: Vec<&str> = WELL_KNOWN_FS.iter().copied().chain(formattable.iter().map(String::as_str)).collect();
    let can = if formattable.is_empty() {
        String::new()
    } else {
        format!("; this host can format {}", formattable.join(", "))
    };
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for name in &s.matrix.fs {
        let ty = fs_type_of(s, name);
        if !seen.insert(ty.to_string()) || mkfs::find_tool(&format!("mkfs.{ty}")).is_some() {
            continue;
        }
        if fs_known_to_kernel(ty).is_ok() {
            continue;
        }
        // A real filesystem's name is not a typo of another's.
        let hint = (!WELL_KNOWN_FS.contains(&ty))
            .then(|| crate::scenario::error::suggest(ty, known.iter().copied().filter(|k| *k != ty)))
            .flatten()
            .map(|k| format!("; did you mean `{k}`?"))
            .unwrap_or_default();
        out.push(format!(
            "filesystem `{}`: no mkfs.{} on this host and the kernel does not support it, so its cells will be skipped{hint}{can}",
            crate::text::escape_control(name),
            crate::text::escape_control(ty)
        ));
    }
    out
}

fn module_installed(fs: &str) -> bool {
    let Ok(u) = nix::sys::utsname::uname() else { return false };
    let dir = PathBuf::from("/lib/modules").join(u.release()).join("kernel/fs");
    walkdir::WalkDir::new(dir).into_iter().flatten().any(|e| {
        let name = e.file_name().to_string_lossy();
        name.strip_prefix(fs).is_some_and(|rest| rest.starts_with(".ko"))
    })
}

/// The device is the one named with `--allow-device`, a block device, and not mounted.
pub fn device_usable(path: &Path, allow: Option<&Path>) -> Result<(), String> {
    let canon = path.canonicalize().map_err(|e| format!("cannot resolve: {e}"))?;
    let allowed = allow.and_then(|a| a.canonicalize().ok());
    if allowed.as_deref() != Some(canon.as_path()) {
        return Err("not named with --allow-device on the command line (fsbench formats only images it made itself or that device)".into());
    }
    let meta = std::fs::metadata(&canon).map_err(|e| format!("stat: {e}"))?;
    if !meta.file_type().is_block_device() {
        return Err("not a block device".into());
    }
    use std::os::unix::fs::MetadataExt;
    let rdev = meta.rdev();
    let majmin = format!("{}:{}", libc::major(rdev), libc::minor(rdev));
    if let Some(m) = mount::mountinfo().into_iter().find(|m| m.dev == majmin) {
        return Err(format!("it is mounted on {}", m.mount_point.display()));
    }
    // O_EXCL on a block device fails while anything holds it (a mounted partition, LVM, swap).
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_EXCL)
        .open(&canon)
        .map(|_| ())
        .map_err(|e| format!("it is in use: {e}"))
}

/// What makes two quota probes equivalent.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ProbeKey {
    fs: String,
    imp: QuotaImpl,
    mkfs: Vec<String>,
    quota_options: Vec<String>,
}

/// The outcome of a quota probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuotaProbe {
    /// Quota switched on and off on a test mount.
    Supported,
    /// The kernel (or tools) cannot do it here.
    Unsupported(SkipReason),
    /// The filesystem has no such quota mode (mkfs or mount rejects the quota option itself).
    NotApplicable(SkipReason),
    /// SIGINT or SIGTERM arrived during the probe: nothing is known (never cached).
    Interrupted,
}

fn probe_cache() -> &'static Mutex<HashMap<ProbeKey, QuotaProbe>> {
    static CACHE: OnceLock<Mutex<HashMap<ProbeKey, QuotaProbe>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

fn check_quota(req: &ProvisionRequest) -> Result<(), SkipReason> {
    if req.cell.quota != QuotaMode::On {
        return Ok(());
    }
    if req.fs.quota == QuotaImpl::Files && mkfs::find_tool("quotacheck").is_none() {
        return Err(skip(
            "quotacheck not found (quota files are made with quota-tools)",
            "apt-get install quota".to_string(),
        ));
    }
    match quota_probe(req.fs.fs_type(&req.cell.fs), req.fs) {
        QuotaProbe::Supported => Ok(()),
        QuotaProbe::Unsupported(r) | QuotaProbe::NotApplicable(r) => Err(r),
        QuotaProbe::Interrupted => {
            Err(SkipReason { reason: "interrupted (SIGINT/SIGTERM) while probing quota support".into(), remedy: None })
        }
    }
}

/// Whether quota as `spec` asks for it works for `fs` on this kernel: a tiny
/// filesystem is made, mounted with the quota options, quota switched on and
/// off, and everything torn down. Cached per process.
pub fn quota_probe(fs: &str, spec: &FsSpec) -> QuotaProbe {
    let quota_options: Vec<String> = spec.mount.iter().filter(|o| quota::is_quota_option(o)).cloned().collect();
    let key =
        ProbeKey { fs: fs.to_string(), imp: spec.quota, mkfs: spec.mkfs.clone(), quota_options: quota_options.clone() };
    // Holding the lock across the probe serialises probes, which is what we want.
    let mut cache = probe_cache().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(r) = cache.get(&key) {
        return r.clone();
    }
    let r = run_quota_probe(fs, spec, quota_options);
    // An interrupted probe found nothing out: the next one must run for real.
    if r != QuotaProbe::Interrupted {
        cache.insert(key, r.clone());
    }
    r
}

fn run_quota_probe(fs: &str, spec: &FsSpec, mut quota_options: Vec<String>) -> QuotaProbe {
    if spec.quota == QuotaImpl::Files && quota_options.is_empty() {
        quota_options = vec!["usrquota".into(), "grpquota".into()];
    }
    // Under the journaled work root, not $TMPDIR: a SIGKILL during the probe leaves its
    // tmpfs, loop and mount where the next run's stale cleanup finds them.
    let tmp = match super::workroot::scratch_run_dir("quota-probe-") {
        Ok(t) => t,
        Err(e) => {
            return QuotaProbe::Unsupported(skip(
                format!("quota probe: cannot create its scratch directory: {e}"),
                None,
            ));
        }
    };
    let cell = CellParams {
        fs: fs.to_string(),
        layout: Layout::S,
        quota: QuotaMode::On,
        tasks: 1,
        test: None,
        fio: Default::default(),
        kernel: None,
    };
    let probe_spec = FsSpec {
        mkfs: spec.mkfs.clone(),
        mount: quota_options,
        quota: spec.quota,
        fs_type: None,
        tunables: Default::default(),
    };
    // Big enough for every common fs's minimum size (xfs: 300 MiB); sparse on tmpfs.
    let backing = Backing::TmpfsLoop { image_size_m: 512 << 20, image_size_s: 512 << 20 };
    let req = ProvisionRequest {
        cell: &cell,
        fs: &probe_spec,
        backing: &backing,
        workdir: tmp.path(),
        task_uids: None,
        allow_device: None,
    };
    let what = match spec.quota {
        QuotaImpl::Files => "quota files (vfsv0)",
        QuotaImpl::Feature => "quota feature (mkfs -O quota)",
    };
    match super::provision_unchecked(&req) {
        Ok(p) => {
            let _ = p.teardown();
            if crate::signals::interrupted() { QuotaProbe::Interrupted } else { QuotaProbe::Supported }
        }
        // Whatever failed (a mkfs killed by the same Ctrl-C too), it says nothing about quota.
        Err(_) if crate::signals::interrupted() => QuotaProbe::Interrupted,
        Err(ProvisionError::MountRefused { kernel, errno, .. }) => {
            let said = kernel.join("; ");
            let reason = if kernel.is_empty() {
                format!("{fs} {what}: the kernel refused the quota mount ({errno})")
            } else {
                format!("{fs} {what}: {said}")
            };
            // "Unknown parameter 'usrquota'": this fs has no such quota mode at all;
            // "couldn't mount as ext2 due to feature incompatibilities": the ext4 quota
            // feature on an ext2/ext3 mount, which no kernel option changes.
            if said.contains("Unknown parameter") || said.contains("feature incompatibilities") {
                QuotaProbe::NotApplicable(skip(reason, None))
            } else {
                QuotaProbe::Unsupported(skip(reason, quota_remedy(fs)))
            }
        }
        Err(ProvisionError::Quota { detail, .. }) => {
            QuotaProbe::Unsupported(skip(format!("{fs} {what}: {detail}"), quota_remedy(fs)))
        }
        Err(ProvisionError::Mkfs { argv, stderr, .. }) if spec.quota == QuotaImpl::Feature => {
            // The tool's own words (`invalid option -- 'O'`) say only that this mkfs has no
            // such switch: say what that means instead.
            let _ = (argv, stderr);
            QuotaProbe::NotApplicable(skip(
                format!(
                    "{fs} has no quota feature set at mkfs time (mkfs.{fs} refuses `-O quota`; ext4's mkfs has it)"
                ),
                None,
            ))
        }
        // Anything else is not about quota: let the real provisioning report it.
        Err(_) => QuotaProbe::Supported,
    }
}

fn quota_remedy(fs: &str) -> Option<String> {
    // XFS keeps its own quota code: the generic quota format options do not enable it.
    let config = if fs == "xfs" { "CONFIG_XFS_QUOTA" } else { "CONFIG_QUOTA and CONFIG_QFMT_V2" };
    Some(format!("run quota cells on a kernel built with {config} (e.g. under qemu with --kernel)"))
}

/// What to do when /dev/loop-control cannot be opened: permission, or no driver.
fn loop_remedy(error: &str) -> &'static str {
    if error.contains("Permission denied") || error.contains("Operation not permitted") {
        "run as root (loop devices need CAP_SYS_ADMIN), or use backing kind \"dir\""
    } else {
        "load the loop module (modprobe loop; CONFIG_BLK_DEV_LOOP)"
    }
}

/// Filesystems `fsbench doctor` checks when none are named.
pub const DOCTOR_DEFAULT_FS: [&str; 7] = ["ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "nilfs2"];

/// One row of the doctor table.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct Capability {
    /// What is checked.
    pub name: String,
    /// `ok`, `missing`, `unsupported`, `unknown`.
    pub state: String,
    /// What was found.
    pub detail: String,
    /// What to do about it.
    pub remedy: String,
}

fn row(name: impl Into<String>, state: &str, detail: impl Into<String>, remedy: impl Into<String>) -> Capability {
    Capability { name: name.into(), state: state.into(), detail: detail.into(), remedy: remedy.into() }
}

/// Every capability provisioning depends on, checked now.
pub fn capabilities(fs_list: &[String]) -> Vec<Capability> {
    let mut rows = Vec::new();
    let root = is_root();
    rows.push(if root {
        row("root", "ok", "effective uid 0", "")
    } else {
        row(
            "root",
            "missing",
            format!("effective uid {}", nix::unistd::geteuid()),
            "run as root, or use backing kind \"dir\"",
        )
    });
    rows.push(match loopdev::loop_control_available() {
        Ok(()) => row("loop devices", "ok", "/dev/loop-control", ""),
        Err(e) => {
            let remedy = loop_remedy(&e);
            let state = if remedy.starts_with("run as root") { "no access" } else { "missing" };
            row("loop devices", state, e, remedy)
        }
    });
    rows.push(match fs_known_to_kernel("tmpfs") {
        Ok(()) => row("tmpfs", "ok", "in /proc/filesystems", ""),
        Err(s) => row("tmpfs", "unsupported", s.reason, "use a kernel with CONFIG_TMPFS"),
    });
    rows.push(match std::fs::File::open("/dev/kmsg") {
        Ok(_) => row("kernel log", "ok", "/dev/kmsg readable: refused mounts carry the kernel's message", ""),
        Err(e) => row(
            "kernel log",
            "missing",
            format!("/dev/kmsg: {e}"),
            "run as root to see the kernel's reasons for refused mounts",
        ),
    });
    rows.push(match mkfs::find_tool("quotacheck") {
        Some(p) => row("quota tools", "ok", p.display().to_string(), ""),
        None => row("quota tools", "missing", "quotacheck not found", "apt-get install quota"),
    });
    let can_probe = root && loopdev::loop_control_available().is_ok();
    for fs in fs_list {
        let tool = format!("mkfs.{fs}");
        let usable = match (mkfs::find_tool(&tool), fs_known_to_kernel(fs)) {
            (None, _) => {
                rows.push(row(fs.as_str(), "missing", format!("{tool} not found"), mkfs::remedy_for(fs)));
                false
            }
            (Some(_), Err(s)) => {
                rows.push(row(fs.as_str(), "unsupported", s.reason, s.remedy.unwrap_or_default()));
                false
            }
            (Some(p), Ok(())) => {
                rows.push(row(fs.as_str(), "ok", format!("{} and kernel support", p.display()), ""));
                true
            }
        };
        if !usable {
            continue;
        }
        for imp in [QuotaImpl::Files, QuotaImpl::Feature] {
            let label = match imp {
                QuotaImpl::Files => format!("{fs} quota files"),
                QuotaImpl::Feature => format!("{fs} quota feature"),
            };
            if !can_probe {
                rows.push(row(label, "unknown", "probing needs root and loop devices", "run fsbench doctor as root"));
                continue;
            }
            if imp == QuotaImpl::Files && mkfs::find_tool("quotacheck").is_none() {
                rows.push(row(label, "unknown", "quotacheck not found", "apt-get install quota"));
                continue;
            }
            let spec =
                FsSpec { mkfs: Vec::new(), mount: Vec::new(), quota: imp, fs_type: None, tunables: Default::default() };
            rows.push(match quota_probe(fs, &spec) {
                QuotaProbe::Supported => row(label, "ok", "test mount with quota on succeeded", ""),
                QuotaProbe::Unsupported(s) => row(label, "unsupported", s.reason, s.remedy.unwrap_or_default()),
                QuotaProbe::NotApplicable(s) => row(label, "n/a", s.reason, ""),
                QuotaProbe::Interrupted => {
                    row(label, "unknown", "probe interrupted (SIGINT/SIGTERM)", "run `fsbench doctor` again")
                }
            });
        }
    }
    rows
}

/// Why a cell cannot run on this host, or `None` when it can.
pub fn host_check(s: &Scenario, p: &CellParams, allow_device: Option<&Path>) -> Option<SkipReason> {
    // Before a run exists, a private `dir` backing would live under the default work directory.
    let probe = existing_ancestor(&super::workroot::default_workdir());
    check_cell(s, &super::workroot::resolve_backing(&s.backing, &probe), p, allow_device)
}

/// The nearest existing directory at or above `path`.
pub fn existing_ancestor(path: &Path) -> PathBuf {
    path.ancestors().find(|a| a.is_dir()).unwrap_or(Path::new("/")).to_path_buf()
}

/// Why a cell cannot run with this backing (already resolved), or `None` when it can.
pub fn check_cell(s: &Scenario, backing: &Backing, p: &CellParams, allow_device: Option<&Path>) -> Option<SkipReason> {
    let root = is_root();
    let answers = crate::workload::kind::of(&s.workload);
    if let Some(skip) = answers.cannot_run(p, root) {
        return Some(skip);
    }
    let uids = answers.task_uids(p.tasks, root, &mut Vec::new());
    let fs = s.filesystems.get(&p.fs).cloned().unwrap_or_default();
    let workdir = super::workroot::default_workdir();
    let req = ProvisionRequest { cell: p, fs: &fs, backing, workdir: &workdir, task_uids: uids, allow_device };
    check(&req).err()
}

pub use crate::workload::fio::check::fio_missing;

pub use crate::workload::latfs::answers::task_uids;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_fs_names_are_not_rejected_by_name_but_by_the_kernel() {
        let r = fs_known_to_kernel("nosuchfs-zz").unwrap_err();
        assert!(r.reason.contains("/proc/filesystems"), "{}", r.reason);
        assert!(fs_known_to_kernel("tmpfs").is_ok());
    }

    #[test]
    fn device_must_be_named_on_the_command_line() {
        let e = device_usable(Path::new("/dev/null"), None).unwrap_err();
        assert!(e.contains("--allow-device"), "{e}");
        let e = device_usable(Path::new("/dev/null"), Some(Path::new("/dev/null"))).unwrap_err();
        assert_eq!(e, "not a block device");
    }

    #[test]
    fn task_uids_follow_lmbench() {
        assert_eq!(task_uids(4), vec![100, 108, 116, 124]);
    }
}
