//! Real kernel objects: leak checks for mounts and loop devices, and the cells,
//! options and requests the provisioning tests make.

use std::path::{Path, PathBuf};
use std::time::Duration;

use fsbench::model::{CellParams, Layout, QuotaImpl, QuotaMode};
use fsbench::provision::{ProvisionRequest, mkfs};
use fsbench::scenario::{Backing, FsSpec};

pub const MIB: u64 = 1 << 20;

/// Mounts and loop devices under `dir` that are still there, as `mount <point> (<fstype>)`
/// and `loop <name> -> <backing file>`. Read straight from /proc/self/mountinfo and
/// /sys/block rather than through the code under test.
pub fn leaks(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    for line in mountinfo.lines() {
        // id parent major:minor root mount-point options [optional fields] - fstype source super-options
        let (mine, fs) = line.split_once(" - ").unwrap_or((line, ""));
        let Some(point) = mine.split(' ').nth(4) else { continue };
        let point = PathBuf::from(unescape_mountinfo(point));
        if point.starts_with(dir) {
            out.push(format!("mount {} ({})", point.display(), fs.split(' ').next().unwrap_or("?")));
        }
    }
    for entry in std::fs::read_dir("/sys/block").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(backing) = std::fs::read_to_string(entry.path().join("loop/backing_file")) else { continue };
        let backing = backing.trim_end_matches('\n');
        if Path::new(backing).starts_with(dir) {
            out.push(format!("loop {name} -> {backing}"));
        }
    }
    out
}

/// mountinfo writes space, tab, newline and backslash as `\ooo`.
fn unescape_mountinfo(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b.get(i + 1..i + 4).filter(|d| b[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Assert nothing is left mounted or attached under `dir`, allowing a loop
/// device's autoclear a moment to complete after its last close.
pub fn assert_no_leaks(dir: &Path) {
    let clean = super::poll(Duration::from_secs(2), Duration::from_millis(20), || leaks(dir).is_empty().then_some(()));
    assert!(clean.is_some(), "leaked under {}:\n{}", dir.display(), leaks(dir).join("\n"));
}

/// Whether `mkfs.<fs>` is installed; otherwise skips `test` for it (see [`super::skip`]).
pub fn have_mkfs(fs: &str, test: &str) -> bool {
    if mkfs::find_tool(&format!("mkfs.{fs}")).is_some() {
        return true;
    }
    super::skip(&format!("{test} for {fs}"), &format!("mkfs.{fs} not installed ({})", mkfs::remedy_for(fs)));
    false
}

/// A quota-off cell.
pub fn cell(fs: &str, layout: Layout, tasks: u32) -> CellParams {
    CellParams {
        fs: fs.into(),
        layout,
        quota: QuotaMode::Off,
        tasks,
        test: None,
        fio: Default::default(),
        kernel: None,
    }
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
            fs_type: None,
            tunables: Default::default(),
        },
        "ext2" | "ext3" => FsSpec {
            mkfs: v(&["-q"]),
            mount: v(&["noatime"]),
            quota: QuotaImpl::Files,
            fs_type: None,
            tunables: Default::default(),
        },
        "xfs" => FsSpec {
            mkfs: v(&["-q"]),
            mount: v(&["noatime"]),
            quota: QuotaImpl::Files,
            fs_type: None,
            tunables: Default::default(),
        },
        _ => FsSpec {
            mkfs: Vec::new(),
            mount: Vec::new(),
            quota: QuotaImpl::Files,
            fs_type: None,
            tunables: Default::default(),
        },
    }
}

/// Sparse image sizes for tmpfs-loop backing.
pub fn tmpfs_loop(m: u64, s: u64) -> Backing {
    Backing::TmpfsLoop { image_size_m: m, image_size_s: s }
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

/// A cell with the options and backing its request borrows.
pub struct TestCell {
    pub params: CellParams,
    pub fs: FsSpec,
    pub backing: Backing,
}

impl TestCell {
    /// `fs` with the seed's options, in `layout` with `tasks` tasks, on tmpfs-loop images of `image` bytes.
    pub fn tmpfs_loop(fs: &str, layout: Layout, tasks: u32, image: u64) -> TestCell {
        TestCell { params: cell(fs, layout, tasks), fs: spec(fs), backing: tmpfs_loop(image, image) }
    }

    /// The same cell with other mkfs/mount options.
    pub fn with_fs(self, fs: FsSpec) -> TestCell {
        TestCell { fs, ..self }
    }

    /// Its request (see [`request`]) with work directory `workdir`.
    pub fn request<'a>(&'a self, workdir: &'a Path) -> ProvisionRequest<'a> {
        request(&self.params, &self.fs, &self.backing, workdir)
    }
}
