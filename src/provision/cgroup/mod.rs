//! The cgroup a cell's workers run in (`[filesystems.X] cgroup`): made per cell below
//! `fsbench/` in the hierarchy of every controller its limits need, limits written and
//! read back, removed at teardown.
//!
//! - Each controller is looked up where the host has it ([`hierarchy`]): the unified tree
//!   when it lists the controller, else a v1 hierarchy; a controller the host has on
//!   neither skips the cell, which is never run unlimited instead.
//! - The group is `<root>/fsbench/<run-dir>.<cell-dir>` (the cell directory's name is
//!   unique on the host), recorded in the cell's journal before it is made, so stale
//!   cleanup after a SIGKILL removes it ([`remove_stale`]).
//! - On v2 the controllers are enabled in the root's and `fsbench/`'s
//!   `cgroup.subtree_control` (left enabled afterwards: enabling changes no limit).
//! - Removal moves any task still in the group to the hierarchy's root (the one place v2
//!   lets a process sit beside child groups) and removes the directory, retrying while
//!   exiting tasks keep it busy; `fsbench/` goes too once empty.
//! - Workers join the group between fork and exec (`workload::child_cgroup`), so none
//!   of them runs a single instruction of its own outside it; fsbench stays outside.

pub mod files;
pub mod hierarchy;

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use hierarchy::{Hierarchy, Version};

use super::ProvisionError;
use crate::model::{CellCgroup, CgroupLimitRecord, SkipReason};
use crate::scenario::cgroup_limits::CgroupLimit;

/// The directory below each hierarchy's root that holds fsbench's groups.
pub const PARENT: &str = "fsbench";

/// The group's name: `<run-dir>.<cell-dir>` of the cell directory `cell_dir`.
pub fn group_name(cell_dir: &Path) -> String {
    let name = |p: Option<&Path>| p.and_then(Path::file_name).map(|n| n.to_string_lossy().into_owned());
    let cell = name(Some(cell_dir)).unwrap_or_default();
    match name(cell_dir.parent()) {
        Some(run) => format!("{run}.{cell}"),
        None => cell,
    }
}

/// One directory of the group: in one hierarchy.
#[derive(Debug, Clone, PartialEq, Eq)]
struct GroupDir {
    hierarchy: Hierarchy,
    dir: PathBuf,
}

/// A cell's group as made: one directory per hierarchy its controllers are on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellGroup {
    name: String,
    dirs: Vec<GroupDir>,
    /// The controller (v2 name) → index into `dirs`.
    by_controller: BTreeMap<&'static str, usize>,
}

impl CellGroup {
    /// The `cgroup.procs` files a worker writes itself into: one per hierarchy.
    pub fn procs_files(&self) -> Vec<PathBuf> {
        self.dirs.iter().map(|d| d.dir.join("cgroup.procs")).collect()
    }

    /// The group's directories (for tests and messages).
    pub fn dirs(&self) -> Vec<PathBuf> {
        self.dirs.iter().map(|d| d.dir.clone()).collect()
    }

    /// Write every limit and read each file back; a value the kernel refuses skips the cell
    /// with its answer. `cell_devices` are the cell's block devices (`io.max` on `cell`).
    pub fn apply(&self, limits: &[CgroupLimit], cell_devices: &[(u32, u32)]) -> Result<CellCgroup, ProvisionError> {
        let mut records = Vec::new();
        for limit in limits {
            let d = &self.dirs[self.by_controller[files::controller(limit.key)]];
            for w in files::writes(limit, d.hierarchy.version, cell_devices) {
                let path = d.dir.join(w.file);
                if let Err(e) = std::fs::write(&path, &w.text) {
                    return Err(ProvisionError::Unsupported(SkipReason {
                        reason: format!(
                            "the kernel refused {} = {:?} ({} = {}): {e}",
                            limit.key,
                            limit.text,
                            path.display(),
                            w.text
                        ),
                        remedy: Some(format!(
                            "check the value against the kernel's cgroup documentation for {}",
                            w.file
                        )),
                    }));
                }
                let now = std::fs::read_to_string(&path).map_err(|e| ProvisionError::io("read back", &path, e))?;
                records.push(CgroupLimitRecord {
                    key: limit.key.name().to_string(),
                    hierarchy: d.hierarchy.version.name().to_string(),
                    file: path.to_string_lossy().into_owned(),
                    requested: w.text,
                    in_effect: files::in_effect(&now, w.device),
                });
            }
        }
        let versions: Vec<Version> = self.dirs.iter().map(|d| d.hierarchy.version).collect();
        let hierarchy = if versions.iter().all(|v| *v == Version::V2) {
            "v2"
        } else if versions.iter().all(|v| *v == Version::V1) {
            "v1"
        } else {
            "hybrid"
        };
        Ok(CellCgroup { hierarchy: hierarchy.into(), name: format!("{PARENT}/{}", self.name), limits: records })
    }

    /// Move stray tasks out and remove every directory of the group.
    pub fn remove(&self) -> Result<(), ProvisionError> {
        let mut errors = Vec::new();
        for d in self.dirs.iter().rev() {
            if let Err(e) = remove_group_dir(&d.hierarchy.root, &d.dir) {
                errors.push(e);
            }
        }
        if errors.is_empty() { Ok(()) } else { Err(ProvisionError::Teardown(errors)) }
    }
}

/// Where every controller `limits` need lives; a missing one is the cell's skip reason.
fn hierarchies(
    limits: &[CgroupLimit],
    find: &dyn Fn(&str) -> Option<Hierarchy>,
) -> Result<BTreeMap<&'static str, Hierarchy>, SkipReason> {
    let mut out = BTreeMap::new();
    for l in limits {
        let c = files::controller(l.key);
        if out.contains_key(c) {
            continue;
        }
        let h = find(c).ok_or_else(|| SkipReason {
            reason: format!(
                "this host has no `{c}` cgroup controller (`{}` needs it): neither the cgroup v2 tree lists it nor a v1 hierarchy ({}) is mounted",
                l.key,
                hierarchy::v1_name(c)
            ),
            remedy: Some(format!(
                "enable the controller (kernel config, `cgroup_enable={c}`, or mount it), or remove `{}` from the filesystem's cgroup table",
                l.key
            )),
        })?;
        out.insert(c, h);
    }
    Ok(out)
}

/// Which controllers `limits` need and where the host has them, without touching anything:
/// `Err` is the reason a cell asking for them is skipped.
pub fn check(limits: &[CgroupLimit]) -> Result<(), SkipReason> {
    hierarchies(limits, &hierarchy::find).map(|_| ())
}

/// Make the group of the cell in `cell_dir` in every hierarchy `limits` need. `record` is
/// called with each directory before it is made (the cell's journal). Nothing is left
/// behind on error.
pub fn create(
    limits: &[CgroupLimit],
    cell_dir: &Path,
    record: &mut dyn FnMut(&Path) -> Result<(), ProvisionError>,
) -> Result<CellGroup, ProvisionError> {
    let found = hierarchies(limits, &hierarchy::find).map_err(ProvisionError::Unsupported)?;
    let mut group = CellGroup { name: group_name(cell_dir), dirs: Vec::new(), by_controller: BTreeMap::new() };
    let made = make_dirs(&found, &mut group, record);
    if let Err(e) = made {
        let _ = group.remove();
        return Err(e);
    }
    Ok(group)
}

fn make_dirs(
    found: &BTreeMap<&'static str, Hierarchy>,
    group: &mut CellGroup,
    record: &mut dyn FnMut(&Path) -> Result<(), ProvisionError>,
) -> Result<(), ProvisionError> {
    for (controller, h) in found {
        if let Some(i) = group.dirs.iter().position(|d| d.hierarchy == *h) {
            group.by_controller.insert(controller, i);
            continue;
        }
        let parent = h.root.join(PARENT);
        mkdir_exist_ok(&parent)?;
        if h.version == Version::V2 {
            // Every controller of this tree the group needs, enabled on the way down.
            let wanted: Vec<&str> = found.iter().filter(|(_, o)| *o == h).map(|(c, _)| *c).collect();
            enable_controllers(&h.root, &wanted)?;
            enable_controllers(&parent, &wanted)?;
        }
        let dir = parent.join(&group.name);
        record(&dir)?;
        std::fs::create_dir(&dir).map_err(|e| ProvisionError::io("create cgroup", &dir, e))?;
        group.dirs.push(GroupDir { hierarchy: h.clone(), dir });
        group.by_controller.insert(controller, group.dirs.len() - 1);
    }
    Ok(())
}

fn mkdir_exist_ok(dir: &Path) -> Result<(), ProvisionError> {
    match std::fs::create_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(ProvisionError::io("create cgroup", dir, e)),
    }
}

/// `+ctrl` into `dir/cgroup.subtree_control` for each controller not enabled yet. The
/// kernel refuses when `dir` holds processes itself (a container's root): a skip.
fn enable_controllers(dir: &Path, controllers: &[&str]) -> Result<(), ProvisionError> {
    let path = dir.join("cgroup.subtree_control");
    let enabled = std::fs::read_to_string(&path).map_err(|e| ProvisionError::io("read", &path, e))?;
    for c in controllers {
        if enabled.split_whitespace().any(|e| e == *c) {
            continue;
        }
        std::fs::write(&path, format!("+{c}")).map_err(|e| {
            ProvisionError::Unsupported(SkipReason {
                reason: format!("cannot enable the `{c}` cgroup controller in {}: {e}", path.display()),
                remedy: Some(
                    "run fsbench where it may delegate controllers (the host, or a container with a delegated cgroup)"
                        .into(),
                ),
            })
        })?;
    }
    Ok(())
}

/// Move the tasks of `dir` to the hierarchy's `root` and remove `dir` (gone already is
/// fine), then `fsbench/` if that emptied it.
fn remove_group_dir(root: &Path, dir: &Path) -> Result<(), String> {
    let mut last = None;
    // Exiting workers hold a group busy for a moment after they are reaped.
    for _ in 0..80 {
        if let Ok(tasks) = std::fs::read_to_string(dir.join("cgroup.procs")) {
            for pid in tasks.split_whitespace() {
                let _ = std::fs::write(root.join("cgroup.procs"), pid);
            }
        }
        match std::fs::remove_dir(dir) {
            Ok(()) => {
                last = None;
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                last = None;
                break;
            }
            Err(e) => last = Some(e),
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    if let Some(e) = last {
        return Err(format!("remove cgroup {}: {e}", dir.display()));
    }
    // Other runs' groups may live there: then it stays.
    if let Some(parent) = dir.parent() {
        let _ = std::fs::remove_dir(parent);
    }
    Ok(())
}

/// Remove a group a journal recorded for `cell_dir`, if it is plainly one fsbench made for
/// that cell: `<root>/fsbench/<run-dir>.<cell-dir>`, with `<root>` a mounted cgroup
/// hierarchy. Returns what was done.
pub fn remove_stale(dir: &Path, cell_dir: &Path) -> Result<String, String> {
    let plain = dir.is_absolute() && dir.components().all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    let named = dir.file_name().is_some_and(|n| n.to_string_lossy() == group_name(cell_dir));
    let parent = dir.parent().filter(|p| p.file_name().is_some_and(|n| n == PARENT));
    let root = parent.and_then(Path::parent);
    let (true, true, Some(root)) = (plain, named, root) else {
        return Err(format!("not a group fsbench made for {}", cell_dir.display()));
    };
    if !hierarchy::is_cgroup_root(root) {
        return Err(format!("{} is not a mounted cgroup hierarchy", root.display()));
    }
    if std::fs::symlink_metadata(dir).is_err() {
        return Ok(format!("cgroup {} already gone", dir.display()));
    }
    // Its processes are the dead run's workers: a child the parent-death signal did not
    // reach (one a worker forked) must not outlive the run, nor hold its filesystems.
    let killed = kill_members(dir);
    remove_group_dir(root, dir)?;
    Ok(match killed {
        0 => format!("removed cgroup {}", dir.display()),
        n => format!("removed cgroup {} (killed {n} process(es) of the dead run left in it)", dir.display()),
    })
}

/// SIGKILL every process in group `dir` (`cgroup.kill` where the kernel has it, 5.14,
/// else each pid of `cgroup.procs`); how many there were.
fn kill_members(dir: &Path) -> usize {
    let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
    let pids: Vec<i32> = procs.split_whitespace().filter_map(|p| p.parse().ok()).filter(|p| *p > 1).collect();
    if pids.is_empty() {
        return 0;
    }
    if std::fs::write(dir.join("cgroup.kill"), "1").is_err() {
        for pid in &pids {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(*pid), nix::sys::signal::Signal::SIGKILL);
        }
    }
    pids.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_group_is_named_after_the_run_and_cell_dirs() {
        assert_eq!(
            group_name(Path::new("/tmp/fsbench/20260101T0000Z-h/ext4-S-t1-x7Yz")),
            "20260101T0000Z-h.ext4-S-t1-x7Yz"
        );
    }

    #[test]
    fn a_missing_controller_is_a_skip_reason_naming_key_and_controller() {
        let limits = [CgroupLimit {
            key: crate::scenario::cgroup_limits::CgroupKey::PidsMax,
            text: "8".into(),
            value: crate::scenario::cgroup_limits::CgroupKey::PidsMax.parse("8").unwrap(),
        }];
        let none = |_: &str| None;
        let skip = hierarchies(&limits, &none).unwrap_err();
        assert!(skip.reason.contains("no `pids` cgroup controller (`pids.max` needs it)"), "{}", skip.reason);
        assert!(skip.remedy.unwrap().contains("remove `pids.max`"));
    }

    #[test]
    fn stale_removal_touches_only_groups_named_for_the_cell() {
        let cell = Path::new("/tmp/fsbench/run/cell-1");
        let other = Path::new("/sys/fs/cgroup/cpu/fsbench/run.cell-2");
        assert!(remove_stale(other, cell).unwrap_err().starts_with("not a group"));
        let outside = Path::new("/sys/fs/cgroup/cpu/system.slice/run.cell-1");
        assert!(remove_stale(outside, cell).is_err());
        let dotdot = Path::new("/sys/fs/cgroup/cpu/../fsbench/run.cell-1");
        assert!(remove_stale(dotdot, cell).is_err());
        // Laid out right, but its root is no cgroup hierarchy.
        let not_root = remove_stale(&Path::new("/tmp").join(PARENT).join("run.cell-1"), cell).unwrap_err();
        assert!(not_root.contains("is not a mounted cgroup hierarchy"), "{not_root}");
    }
}
