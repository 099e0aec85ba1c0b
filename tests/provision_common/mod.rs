//! Helpers shared by the real-kernel provisioning tests.
#![allow(dead_code)]

use std::path::Path;

use fsbench::model::{CellParams, Layout, QuotaImpl, QuotaMode};
use fsbench::provision::{ProvisionRequest, loopdev, mkfs, mount};
use fsbench::scenario::{Backing, FsSpec};

/// True when the test may use real kernel objects; otherwise prints why it skips.
/// In CI (`CI` set) running as root, skipping is never allowed.
pub fn root_or_skip(test: &str) -> bool {
    if nix::unistd::geteuid().is_root() {
        return true;
    }
    eprintln!(
        "SKIP {test}: needs root for tmpfs, loop devices and mount(2) (running as uid {})",
        nix::unistd::geteuid()
    );
    false
}

/// Whether `mkfs.<fs>` is installed; prints a skip line if not.
pub fn have_mkfs(fs: &str, test: &str) -> bool {
    if mkfs::find_tool(&format!("mkfs.{fs}")).is_some() {
        return true;
    }
    eprintln!("SKIP {test} for {fs}: mkfs.{fs} not installed ({})", mkfs::remedy_for(fs));
    false
}

/// A cell.
pub fn cell(fs: &str, layout: Layout, tasks: u32) -> CellParams {
    CellParams { fs: fs.into(), layout, quota: QuotaMode::Off, tasks, test: None }
}

/// mkfs/mount options as the seed scenario uses them (quota options left out:
/// this kernel cannot switch quota on, quota-off cells do not need them).
pub fn spec(fs: &str) -> FsSpec {
    let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    match fs {
        "ext4" => FsSpec {
            mkfs: v(&["-q", "-E", "lazy_itable_init=0,lazy_journal_init=0"]),
            mount: v(&["barrier=0", "noload"]),
            quota: QuotaImpl::Files,
        },
        "ext2" | "ext3" => FsSpec { mkfs: v(&["-q"]), mount: v(&["noatime"]), quota: QuotaImpl::Files },
        "xfs" => FsSpec { mkfs: v(&["-q"]), mount: v(&["noatime"]), quota: QuotaImpl::Files },
        _ => FsSpec { mkfs: Vec::new(), mount: Vec::new(), quota: QuotaImpl::Files },
    }
}

/// Sparse image sizes for tmpfs-loop backing.
pub fn tmpfs_loop(m: u64, s: u64) -> Backing {
    Backing::TmpfsLoop { image_size_m: m, image_size_s: s }
}

/// Mounts and loop devices under `dir` that are still there.
pub fn leaks(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = mount::mountinfo()
        .into_iter()
        .filter(|m| m.mount_point.starts_with(dir))
        .map(|m| format!("mount {} ({})", m.mount_point.display(), m.fstype))
        .collect();
    out.extend(loopdev::loops_backed_under(dir).into_iter().map(|(n, b)| format!("loop {n} -> {}", b.display())));
    out
}

/// Assert nothing is left mounted or attached under `dir`.
pub fn assert_no_leaks(dir: &Path) {
    // Loop autoclear may complete a moment after the last close.
    for _ in 0..100 {
        if leaks(dir).is_empty() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("leaked under {}: {:?}", dir.display(), leaks(dir));
}

/// A request for `cell` with no per-task uids and no device: what most tests need.
pub fn request<'a>(
    cell: &'a CellParams,
    fs: &'a FsSpec,
    backing: &'a Backing,
    workdir: &'a Path,
) -> ProvisionRequest<'a> {
    ProvisionRequest { cell, fs, backing, workdir, task_uids: None, allow_device: None }
}
