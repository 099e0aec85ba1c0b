//! Where each cgroup controller lives on this host: the unified (v2) hierarchy, a v1
//! hierarchy of its own (`/sys/fs/cgroup/cpu`), or nowhere. Read from the mount table
//! and each v2 root's `cgroup.controllers`, never assumed: hybrid hosts mount a v2 tree
//! that holds few controllers (or none) beside v1 trees that hold the rest.

use std::path::{Path, PathBuf};

use crate::provision::mount::MountInfo;

/// Which cgroup hierarchy a controller is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// The unified hierarchy (cgroup2).
    V2,
    /// A legacy per-controller hierarchy (cgroup).
    V1,
}

impl Version {
    /// `v1` or `v2`, as results record it.
    pub fn name(self) -> &'static str {
        match self {
            Version::V2 => "v2",
            Version::V1 => "v1",
        }
    }
}

/// A controller's hierarchy: its version and the mount point of its root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hierarchy {
    /// v1 or v2.
    pub version: Version,
    /// Where its root is mounted (`/sys/fs/cgroup`, `/sys/fs/cgroup/cpu,cpuacct`).
    pub root: PathBuf,
}

/// Where `controller` (`cpu`, `memory`, `io`, `pids`; v1 says `blkio` for io) lives, given
/// the mount table and a reader of a v2 root's `cgroup.controllers`. v2 is preferred: a
/// controller is on it when the v2 root lists it, which it does not while a v1 hierarchy
/// holds it.
pub fn find_in(
    mounts: &[MountInfo],
    controller: &str,
    v2_controllers: &dyn Fn(&Path) -> Option<String>,
) -> Option<Hierarchy> {
    for m in mounts.iter().filter(|m| m.fstype == "cgroup2") {
        if v2_controllers(&m.mount_point).is_some_and(|list| list.split_whitespace().any(|c| c == controller)) {
            return Some(Hierarchy { version: Version::V2, root: m.mount_point.clone() });
        }
    }
    let v1 = v1_name(controller);
    mounts
        .iter()
        .find(|m| m.fstype == "cgroup" && m.super_options.split(',').any(|o| o == v1))
        .map(|m| Hierarchy { version: Version::V1, root: m.mount_point.clone() })
}

/// [`find_in`] on this process's mount table.
pub fn find(controller: &str) -> Option<Hierarchy> {
    let read = |root: &Path| std::fs::read_to_string(root.join("cgroup.controllers")).ok();
    find_in(&crate::provision::mount::mountinfo(), controller, &read)
}

/// The v1 name of a v2 controller: the io controller was `blkio`.
pub fn v1_name(controller: &str) -> &str {
    if controller == "io" { "blkio" } else { controller }
}

/// Whether `p` is the root of a mounted cgroup hierarchy (v1 or v2).
pub fn is_cgroup_root(p: &Path) -> bool {
    crate::provision::mount::mountinfo()
        .iter()
        .any(|m| m.mount_point == p && (m.fstype == "cgroup" || m.fstype == "cgroup2"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provision::mount::parse_mountinfo;

    /// This machine kind: every controller on v1, the unified tree holding only hugetlb.
    const HYBRID: &str = "\
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
    const UNIFIED: &str = "35 24 0:30 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";

    #[test]
    fn a_controller_is_found_on_v2_when_the_unified_root_lists_it_else_on_v1() {
        let hybrid = parse_mountinfo(HYBRID);
        let only_hugetlb = |_: &Path| Some("hugetlb\n".to_string());
        let cpu = find_in(&hybrid, "cpu", &only_hugetlb).unwrap();
        assert_eq!(cpu, Hierarchy { version: Version::V1, root: "/sys/fs/cgroup/cpu".into() });
        assert_eq!(find_in(&hybrid, "io", &only_hugetlb).unwrap().root, Path::new("/sys/fs/cgroup/blkio"));
        assert_eq!(find_in(&hybrid, "pids", &only_hugetlb), None, "no pids hierarchy in this table");
        let unified = parse_mountinfo(UNIFIED);
        let all = |_: &Path| Some("cpuset cpu io memory pids\n".to_string());
        assert_eq!(
            find_in(&unified, "io", &all).unwrap(),
            Hierarchy { version: Version::V2, root: "/sys/fs/cgroup".into() }
        );
        assert_eq!(find_in(&unified, "rdma", &all), None);
    }
}
