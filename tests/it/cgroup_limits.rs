//! The cgroup a cell's workers run in (`[filesystems.X] cgroup`): made, its limits read back
//! and removed with the cell; workers inside it and fsbench outside; a group left by a
//! SIGKILLed run removed by stale cleanup. Real cgroups, so root only.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use fsbench::model::Layout;
use fsbench::provision;
use fsbench::provision::cgroup::{self, hierarchy};
use fsbench::provision::journal::{Entry, JOURNAL_FILE, Journal};
use fsbench::scenario::cgroup_limits::{CgroupKey, CgroupLimit};

use crate::support::kernel::*;

fn limit(key: CgroupKey, text: &str) -> CgroupLimit {
    CgroupLimit { key, text: text.into(), value: key.parse(text).unwrap() }
}

/// Limits on every controller this host has; `None` (with a SKIP) when it has no cpu controller.
fn limits_here(test: &str) -> Option<Vec<CgroupLimit>> {
    if hierarchy::find("cpu").is_none() {
        crate::support::skip(test, "this host mounts no cpu cgroup controller (v1 or v2)");
        return None;
    }
    let mut l = vec![limit(CgroupKey::CpuMax, "50000 100000")];
    if hierarchy::find("memory").is_some() {
        l.push(limit(CgroupKey::MemoryMax, "256M"));
    }
    if hierarchy::find("pids").is_some() {
        l.push(limit(CgroupKey::PidsMax, "64"));
    }
    if hierarchy::find("io").is_some() {
        l.push(limit(CgroupKey::IoMax, "cell wbps=100M"));
    }
    Some(l)
}

/// The cgroup path of `pid` in the hierarchy holding `controller`, from /proc/PID/cgroup.
fn cgroup_of(pid: u32, controller: &str) -> String {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    let v1 = hierarchy::v1_name(controller);
    let h = hierarchy::find(controller).unwrap();
    text.lines()
        .find_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, list, path) = (parts.next()?, parts.next()?, parts.next()?);
            let hit = match h.version {
                hierarchy::Version::V2 => list.is_empty(),
                hierarchy::Version::V1 => list.split(',').any(|c| c == v1),
            };
            hit.then(|| path.to_string())
        })
        .unwrap_or_default()
}

#[test]
fn a_cells_group_holds_its_limits_and_its_workers_and_goes_with_the_cell() {
    skip_unless_root!();
    let Some(limits) = limits_here(&test_name!()) else { return };
    if !have_mkfs("ext4", &test_name!()) {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let mut c = TestCell::tmpfs_loop("ext4", Layout::S, 1, 32 * MIB);
    c.fs.tunables.cgroup = limits.clone();
    let p = provision::provision(&c.request(work.path())).unwrap();
    let record = p.cgroup().expect("the cell has a cgroup").clone();
    assert!(record.name.starts_with("fsbench/"), "{}", record.name);
    let cpu = hierarchy::find("cpu").unwrap();
    assert!(matches!(record.hierarchy.as_str(), "v1" | "v2" | "hybrid"));
    for l in &record.limits {
        assert_eq!(l.requested, l.in_effect, "{l:?}");
    }
    let quota = match cpu.version {
        hierarchy::Version::V1 => record.limits.iter().find(|l| l.file.ends_with("cpu.cfs_quota_us")).unwrap(),
        hierarchy::Version::V2 => record.limits.iter().find(|l| l.file.ends_with("cpu.max")).unwrap(),
    };
    assert_eq!(quota.key, "cpu.max");
    assert!(quota.in_effect.starts_with("50000"), "{quota:?}");
    // The journal recorded every group directory before it was made.
    let journal = provision::journal::read(&p.cell_dir().join(JOURNAL_FILE)).unwrap();
    let groups: Vec<&PathBuf> =
        journal.iter().filter_map(|e| if let Entry::Cgroup(d) = e { Some(d) } else { None }).collect();
    assert!(!groups.is_empty());
    assert!(groups.iter().all(|d| d.is_dir()), "{groups:?}");

    // A worker started for the cell is in its group from its first instruction; we are not.
    let group_path = format!("/{}", record.name);
    let scope = fsbench::workload::child_cgroup::enter(p.cgroup_procs()).unwrap().unwrap();
    let mut cmd = Command::new("sleep");
    cmd.arg("30").stdin(Stdio::null());
    let mut worker = fsbench::workload::child::contain(&mut cmd).spawn().unwrap();
    drop(scope);
    for controller in record.limits.iter().map(|l| controller_of(&l.key)) {
        assert_eq!(cgroup_of(worker.id(), controller), group_path, "{controller}");
        assert_ne!(cgroup_of(std::process::id(), controller), group_path, "fsbench itself stays outside");
    }
    // After the scope, children start where fsbench is.
    let mut after = Command::new("true");
    let after = fsbench::workload::child::contain(&mut after).spawn().unwrap().wait_with_output().unwrap();
    assert!(after.status.success());

    // A worker still alive at teardown is moved out, and the group goes anyway.
    p.teardown().unwrap();
    for d in &groups {
        assert!(!d.exists(), "{} left behind", d.display());
    }
    assert_ne!(cgroup_of(worker.id(), "cpu"), group_path);
    worker.kill().unwrap();
    worker.wait().unwrap();
    assert_no_leaks(work.path());
}

fn controller_of(key: &str) -> &'static str {
    cgroup::files::controller(CgroupKey::from_name(key).unwrap())
}

#[test]
// The journal's record callback returns the library's ProvisionError, as provisioning's does.
#[allow(clippy::result_large_err)]
fn stale_cleanup_removes_the_group_a_killed_run_left() {
    skip_unless_root!();
    let Some(_) = limits_here(&test_name!()) else { return };
    let root = tempfile::tempdir().unwrap();
    let cell_dir = root.path().join("20260101T000000Z-host").join("ext4-S-qoff-t1-x1y2z3");
    std::fs::create_dir_all(&cell_dir).unwrap();
    // Created through the journal, as provisioning does it.
    let mut journal = Journal::create(&cell_dir).unwrap();
    let limits = [limit(CgroupKey::CpuMax, "max")];
    let group =
        cgroup::create(&limits, &cell_dir, &mut |d: &Path| journal.record(&Entry::Cgroup(d.to_path_buf()))).unwrap();
    let dirs = group.dirs();
    assert!(dirs.iter().all(|d| d.is_dir()));
    // A task in it when the run dies: cleanup kills it.
    let mut stray = Command::new("sleep").arg("30").spawn().unwrap();
    std::fs::write(&group.procs_files()[0], stray.id().to_string()).unwrap();
    // The SIGKILL: no destructor runs, and the journal's owner is gone.
    drop(journal);
    std::mem::forget(group);
    let path = cell_dir.join(JOURNAL_FILE);
    let text = std::fs::read_to_string(&path).unwrap();
    let owner = text.lines().find(|l| l.starts_with("owner ")).unwrap().to_string();
    std::fs::write(&path, text.replace(&owner, "owner 999999999 5")).unwrap();

    let cleaned = provision::cleanup_stale(root.path()).unwrap();
    for d in &dirs {
        assert!(!d.exists(), "{} left behind: {cleaned:?}", d.display());
        let said = format!("removed cgroup {} (killed 1 process(es) of the dead run left in it)", d.display());
        assert!(cleaned.iter().any(|l| l == &said), "{cleaned:?}");
    }
    assert!(!cell_dir.exists());
    // The dead run's task did not outlive its group.
    let status = stray.wait().unwrap();
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(libc::SIGKILL), "{status:?}");
}

#[test]
fn a_journal_naming_another_cells_group_is_left_alone() {
    skip_unless_root!();
    let Some(cpu) = hierarchy::find("cpu") else {
        crate::support::skip(&test_name!(), "no cpu cgroup controller");
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let cell_dir = root.path().join("run").join("cell-a");
    std::fs::create_dir_all(&cell_dir).unwrap();
    let other = cpu.root.join(cgroup::PARENT).join("run.cell-b");
    let text = format!(
        "fsbench-provision-journal 1\nowner 999999999 5\ncgroup {}\ncgroup {}\n",
        other.display(),
        cpu.root.display()
    );
    std::fs::write(cell_dir.join(JOURNAL_FILE), text).unwrap();
    let cleaned = provision::cleanup_stale(root.path()).unwrap();
    assert!(cleaned.iter().filter(|l| l.starts_with("left ")).count() == 2, "{cleaned:?}");
    assert!(cpu.root.is_dir());
}
