//! Stale cleanup must trust only what fsbench itself left: regressions for a
//! security review's findings, each of which deleted or unmounted what was not ours.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fsbench::model::Layout;
use fsbench::provision::{self, ProvisionError, loopdev, mount};

use crate::support::kernel::*;
use crate::support::{crate_root, fsbench, is_root};

/// A journal whose owner is long dead, recording `lines`.
fn dead_journal(cell_dir: &Path, lines: &[String]) {
    std::fs::create_dir_all(cell_dir).unwrap();
    let mut text = String::from("fsbench-provision-journal 1\nowner 999999999 5\n");
    for l in lines {
        text.push_str(l);
        text.push('\n');
    }
    std::fs::write(cell_dir.join(provision::journal::JOURNAL_FILE), text).unwrap();
}

/// A private work root of our own, as fsbench makes it.
fn work_root(tmp: &Path) -> PathBuf {
    let root = tmp.join("work");
    provision::prepare_work_root(&root).unwrap();
    root
}

fn mount_tmpfs(at: &Path) {
    std::fs::create_dir_all(at).unwrap();
    nix::mount::mount(Some("tmpfs"), at, Some("tmpfs"), nix::mount::MsFlags::empty(), Some("size=1m")).unwrap();
}

#[test]
fn journal_with_foreign_scratch_path_is_ignored() {
    let tmp = tempfile::Builder::new().prefix("fsbench-test-stale-").tempdir().unwrap();
    let root = work_root(tmp.path());
    // Not named fsbench-*: the reproduced deletion of /tmp/victim5.
    let victim = tmp.path().join("victim5");
    std::fs::create_dir(&victim).unwrap();
    std::fs::write(victim.join("precious"), "x").unwrap();
    // Named fsbench-* but a symlink to a victim.
    let link = tmp.path().join("fsbench-link");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    // Named fsbench-* but reached through a symlinked parent.
    let via = tmp.path().join("via");
    std::fs::create_dir(victim.join("fsbench-inner")).unwrap();
    std::os::unix::fs::symlink(&victim, &via).unwrap();
    let mut lines = vec![
        format!("scratch {}", victim.display()),
        format!("scratch {}", link.display()),
        format!("scratch {}", via.join("fsbench-inner").display()),
        format!("scratch {}/../victim5", tmp.path().join("fsbench-x").display()),
    ];
    // Named fsbench-*, a real directory, but another user's.
    let foreign = tmp.path().join("fsbench-foreign");
    if is_root() {
        std::fs::create_dir(&foreign).unwrap();
        nix::unistd::chown(&foreign, Some(65534.into()), Some(65534.into())).unwrap();
        lines.push(format!("scratch {}", foreign.display()));
    }
    // Ours: a real fsbench-* directory owned by us is removed.
    let ours = tmp.path().join("fsbench-cell-ours");
    std::fs::create_dir(&ours).unwrap();
    lines.push(format!("scratch {}", ours.display()));
    let cell = root.join("run-1/cell-a");
    dead_journal(&cell, &lines);

    let cleaned = provision::cleanup_stale(&root).unwrap();
    eprintln!("{cleaned:#?}");
    assert!(victim.join("precious").exists(), "victim deleted: {cleaned:?}");
    assert!(victim.join("fsbench-inner").exists(), "deleted through a symlinked parent: {cleaned:?}");
    assert!(std::fs::symlink_metadata(&link).is_ok(), "{cleaned:?}");
    if is_root() {
        assert!(foreign.exists(), "another user's directory deleted: {cleaned:?}");
    }
    assert!(!ours.exists(), "our own scratch dir stays: {cleaned:?}");
    assert!(!cell.exists(), "the dead cell itself is ours to remove");
}

#[test]
fn journal_at_wrong_depth_is_ignored() {
    let tmp = tempfile::Builder::new().prefix("fsbench-test-stale-").tempdir().unwrap();
    let root = work_root(tmp.path());
    let target = tmp.path().join("fsbench-target");
    std::fs::create_dir(&target).unwrap();
    let lines = vec![format!("scratch {}", target.display())];
    let shallow = root.join("cell");
    let deep = root.join("a/b/c");
    dead_journal(&shallow, &lines);
    dead_journal(&deep, &lines);
    // Right depth, but the journal is writable by others.
    let loose = root.join("run-2/cell");
    dead_journal(&loose, &lines);
    std::fs::set_permissions(loose.join(provision::journal::JOURNAL_FILE), std::fs::Permissions::from_mode(0o666))
        .unwrap();
    // Right depth, but the run dir is another user's.
    let foreign = root.join("run-3/cell");
    if is_root() {
        dead_journal(&foreign, &lines);
        nix::unistd::chown(&root.join("run-3"), Some(65534.into()), Some(65534.into())).unwrap();
    }
    let cleaned = provision::cleanup_stale(&root).unwrap();
    assert!(cleaned.is_empty(), "{cleaned:?}");
    assert!(target.exists());
    assert!(shallow.exists() && deep.exists() && loose.exists());
    if is_root() {
        assert!(foreign.exists());
    }
}

#[test]
fn work_root_owned_by_another_user_or_mode_0777_is_refused() {
    let tmp = tempfile::Builder::new().prefix("fsbench-test-stale-").tempdir().unwrap();
    let open = tmp.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let target = tmp.path().join("fsbench-target");
    std::fs::create_dir(&target).unwrap();
    dead_journal(&open.join("run/cell"), &[format!("scratch {}", target.display())]);
    let mut refused = vec![open.clone()];
    if is_root() {
        let other = tmp.path().join("other");
        std::fs::create_dir(&other).unwrap();
        std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o700)).unwrap();
        nix::unistd::chown(&other, Some(65534.into()), Some(65534.into())).unwrap();
        refused.push(other);
    }
    for root in &refused {
        let e = provision::prepare_work_root(root).unwrap_err();
        assert!(matches!(e, ProvisionError::UnsafeWorkDir { .. }), "{e}");
        let e = provision::cleanup_stale(root).unwrap_err();
        assert!(matches!(e, ProvisionError::UnsafeWorkDir { .. }), "{e}");
    }
    assert!(target.exists());
    // The binary says why and how to fix it, with exit code 2, before running anything.
    let out = fsbench()
        .current_dir(crate_root())
        .args(["run", "scenarios/quickstart.toml", "--set", "backing.kind=dir", "--quiet", "--workdir"])
        .arg(&open)
        .arg("--out")
        .arg(tmp.path().join("results"))
        .env("XDG_CACHE_HOME", tmp.path().join("cache"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("refusing work directory") && stderr.contains("chmod go-w"), "{stderr}");
    assert!(target.exists());
    assert!(open.join("run/cell").exists());
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn unrelated_mount_under_the_work_root_is_untouched() {
    skip_unless_root!();
    let tmp = tempfile::Builder::new().prefix("fsbench-test-stale-").tempdir().unwrap();
    let root = work_root(tmp.path());
    // Beside the cells, inside a dead cell (not in its journal), and named by a
    // dead journal of another cell (outside that cell's dir).
    let beside = root.join("run-1/other");
    let inside = root.join("run-1/cell-a/x");
    let named = root.join("run-2/mnt");
    let mounts = [beside.clone(), inside.clone(), named.clone()];
    dead_journal(&root.join("run-1/cell-a"), &[]);
    dead_journal(
        &root.join("run-2/cell-b"),
        &[format!("tmpfs {}", named.display()), format!("mount {}/../mnt", root.join("run-2/cell-b").display())],
    );
    for m in &mounts {
        mount_tmpfs(m);
        std::fs::write(m.join("precious"), "x").unwrap();
    }
    let result = std::panic::catch_unwind(|| {
        let cleaned = provision::cleanup_stale(&root).unwrap();
        eprintln!("{cleaned:#?}");
        for m in &mounts {
            assert!(mount::is_mountpoint(m), "{} unmounted: {cleaned:?}", m.display());
            assert!(m.join("precious").exists(), "{} emptied: {cleaned:?}", m.display());
        }
        assert!(cleaned.iter().any(|l| l.contains("left") && l.contains("cell-a")), "{cleaned:?}");
    });
    for m in &mounts {
        let _ = nix::mount::umount2(m, nix::mount::MntFlags::MNT_DETACH);
    }
    result.unwrap();
    assert_no_leaks(tmp.path());
}

/// Attached loop devices and what sysfs says backs them.
fn backing_of(devices: &[String]) -> Vec<(String, Option<PathBuf>)> {
    devices
        .iter()
        .map(|d| {
            let name = Path::new(d).file_name().unwrap().to_string_lossy().into_owned();
            let b = loopdev::backing_file(&name);
            (name, b)
        })
        .collect()
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn busy_mount_at_teardown_is_detached_and_nothing_is_left() {
    skip_unless_root!();
    let tmp = tempfile::Builder::new().prefix("fsbench-test-busy-").tempdir().unwrap();
    let c = TestCell::tmpfs_loop("ext4", Layout::M, 2, 32 * MIB);
    let p = provision::provision(&c.request(tmp.path())).unwrap();
    let devices: Vec<String> = p.filesystems().iter().filter_map(|f| f.device.clone()).collect();
    assert_eq!(devices.len(), 2);
    // A process that outlives its step (`sh -c "sleep 15 &"`) keeps a file open in the mount.
    let held = std::fs::File::create(p.task_dirs()[0].join("held")).unwrap();
    let before = backing_of(&devices);
    p.teardown().expect("a busy mount is detached, not an error");
    assert!(
        mount::mountinfo().iter().all(|m| !m.mount_point.starts_with(tmp.path())),
        "still mounted: {:?}",
        leaks(tmp.path())
    );
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "cell dir removed");
    drop(held);
    // The held loop device detaches itself (autoclear) once its last user is gone.
    let start = Instant::now();
    loop {
        let now = backing_of(&devices);
        let attached: Vec<_> = now.iter().zip(&before).filter(|((_, n), (_, b))| n.is_some() && n == b).collect();
        let moved: Vec<_> = now
            .iter()
            .filter(|(_, n)| n.as_ref().is_some_and(|n| !n.starts_with("/tmp") && n.ends_with("img0")))
            .collect();
        if attached.is_empty() && moved.is_empty() {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "loop devices still attached: {now:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_no_leaks(tmp.path());
}

/// `losetup -f --show image`: a loop device no fd of this process holds, as `loopN`.
fn losetup(image: &Path) -> String {
    let f = std::fs::File::create(image).unwrap();
    f.set_len(8 * MIB).unwrap();
    let out = std::process::Command::new("losetup").args(["-f", "--show"]).arg(image).output().unwrap();
    assert!(out.status.success(), "losetup: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().trim_start_matches("/dev/").to_string()
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn a_queue_setting_goes_back_only_onto_the_loop_device_of_the_cells_own_image() {
    skip_unless_root!();
    if loopdev::loop_control_available().is_err() {
        return crate::support::skip(&test_name!(), "no /dev/loop-control");
    }
    let tmp = tempfile::Builder::new().prefix("fsbench-test-queue-").tempdir().unwrap();
    let root = work_root(tmp.path());
    let cell = root.join("run/cell");
    std::fs::create_dir_all(&cell).unwrap();
    // The cell's own device, and one that took the number of a device the cell once had:
    // attached by someone else to an image of theirs.
    let (ours_image, theirs_image) = (cell.join("img0"), tmp.path().join("theirs.img"));
    let (ours, theirs) = (losetup(&ours_image), losetup(&theirs_image));
    let queue = |dev: &str| PathBuf::from(format!("/sys/block/{dev}/queue/read_ahead_kb"));
    let read = |dev: &str| std::fs::read_to_string(queue(dev)).unwrap().trim().to_string();
    let (ours_old, theirs_old) = (read(&ours), read(&theirs));
    std::fs::write(queue(&ours), "1024").unwrap();
    std::fs::write(queue(&theirs), "2048").unwrap();
    dead_journal(
        &cell,
        &[
            format!("loop {}", ours_image.display()),
            format!("tunable {}\t{ours_old}", queue(&ours).display()),
            format!("tunable {}\t{theirs_old}", queue(&theirs).display()),
        ],
    );
    let cleaned = provision::cleanup_stale(&root).unwrap();
    let theirs_now = read(&theirs);
    let _ = std::process::Command::new("losetup").arg("-d").arg(format!("/dev/{theirs}")).status();
    assert_eq!(theirs_now, "2048", "another's device was written: {cleaned:?}");
    assert!(cleaned.iter().any(|l| l.contains(&format!("left {} alone", queue(&theirs).display()))), "{cleaned:?}");
    assert!(cleaned.iter().any(|l| l == &format!("restored {} = {ours_old}", queue(&ours).display())), "{cleaned:?}");
    assert!(cleaned.iter().any(|l| l.starts_with(&format!("detached /dev/{ours}"))), "{cleaned:?}");
    assert!(!cell.exists());
}
