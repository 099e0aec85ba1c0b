//! Provision and tear down real filesystems in layouts M and S with 1 and 8
//! tasks; check mounts and options in /proc/self/mountinfo and that nothing
//! is left mounted or attached afterwards.

use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

use fsbench::model::Layout;
use fsbench::provision::{self, ProvisionRequest, mount};

use crate::support::kernel::*;

fn round_trip(fs: &str, layout: Layout, tasks: u32, image: u64, uids: bool) {
    let tmp = tempfile::tempdir().unwrap();
    let c = TestCell::tmpfs_loop(fs, layout, tasks, image);
    let task_uids = uids.then(|| fsbench::host::task_uids::task_uids(tasks));
    let req = ProvisionRequest { task_uids: task_uids.clone(), ..c.request(tmp.path()) };
    provision::check(&req).unwrap_or_else(|s| panic!("{fs} {layout} t{tasks} should be runnable: {s:?}"));
    let p = provision::provision(&req).unwrap_or_else(|e| panic!("{fs} {layout} t{tasks}: {e}"));

    let nfs = if layout == Layout::M { tasks as usize } else { 1 };
    assert_eq!(p.filesystems().len(), nfs);
    assert_eq!(p.task_dirs().len(), tasks as usize);
    for info in p.filesystems() {
        let m = mount::find_mount(std::path::Path::new(&info.mountpoint)).expect("mounted");
        assert_eq!(m.fstype, fs);
        assert_eq!(Some(m.source.clone()), info.device, "mounted from our loop device");
        assert_eq!(info.super_options, m.super_options);
        assert!(info.mkfs_argv[0].ends_with(&format!("mkfs.{fs}")), "{:?}", info.mkfs_argv);
        assert_eq!(info.quota_state.as_deref(), Some("user=off group=off"));
        // The kernel reports its canonical names: barrier=0 -> nobarrier, noload -> norecovery.
        let expected: &[&str] = match fs {
            "ext4" => &["nobarrier", "norecovery"],
            "ext2" | "xfs" => &["noatime"],
            _ => &[],
        };
        for opt in expected {
            let all = format!("{},{}", m.mount_options, m.super_options);
            assert!(all.split(',').any(|o| o == *opt), "{opt} not in effect on {fs}: {all}");
        }
        if fs.starts_with("ext") {
            assert!(info.features.iter().any(|f| f == "dir_index"), "features read back: {:?}", info.features);
        }
        assert_eq!(info.image_size, Some(image));
    }
    for (i, d) in p.task_dirs().iter().enumerate() {
        let meta = std::fs::metadata(d).unwrap();
        match &task_uids {
            Some(u) => assert_eq!((meta.uid(), meta.gid()), (u[i], u[i])),
            None => assert_eq!(meta.permissions().mode() & 0o777, 0o777),
        }
        let mut f = std::fs::File::create(d.join("probe")).unwrap();
        f.write_all(b"x").unwrap();
    }
    assert!(p.root().starts_with(p.cell_dir()));
    let cell_dir = p.cell_dir().to_path_buf();
    p.teardown().unwrap();
    assert_no_leaks(tmp.path());
    assert!(!cell_dir.exists(), "cell dir removed");
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn ext2_and_ext4_in_m_and_s_with_1_and_8_tasks() {
    skip_unless_root!();
    for fs in ["ext2", "ext4"] {
        for layout in [Layout::M, Layout::S] {
            for tasks in [1, 8] {
                round_trip(fs, layout, tasks, 64 * MIB, tasks == 8);
            }
        }
    }
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn xfs_and_btrfs_when_their_tools_are_installed() {
    skip_unless_root!();
    for fs in ["xfs", "btrfs"] {
        if !have_mkfs(fs, &test_name!()) {
            continue;
        }
        for (layout, tasks) in [(Layout::S, 1), (Layout::M, 8), (Layout::S, 8)] {
            round_trip(fs, layout, tasks, 512 * MIB, false);
        }
    }
}

#[test]
fn backing_dir_needs_no_mkfs_and_removes_only_its_own_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("user-file"), "keep me").unwrap();
    let fstype = mount::containing_mount(&data.path().canonicalize().unwrap()).unwrap().fstype;
    let dir_cell = cell(&fstype, Layout::S, 3);
    let spec = spec("none");
    let backing = fsbench::scenario::Backing::Dir { path: data.path().to_path_buf() };
    let req = request(&dir_cell, &spec, &backing, tmp.path());
    let p = provision::provision(&req).unwrap();
    assert_eq!(p.task_dirs().len(), 3);
    assert!(p.task_dirs().iter().all(|d| d.starts_with(data.path().canonicalize().unwrap())));
    assert_eq!(p.filesystems()[0].fs, fstype);
    assert!(p.filesystems()[0].mkfs_argv.is_empty());
    p.teardown().unwrap();
    let left: Vec<_> = std::fs::read_dir(data.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(left, vec![std::ffi::OsString::from("user-file")]);

    // A dir on another filesystem type than the cell asks for is skipped, not mislabelled.
    let other = cell("zzfs", Layout::S, 1);
    let req = request(&other, &spec, &backing, tmp.path());
    let skip = provision::check(&req).unwrap_err();
    assert!(skip.reason.contains(&format!("is on {fstype}")), "{skip:?}");
}
