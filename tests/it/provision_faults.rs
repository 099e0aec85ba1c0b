//! Fault tests on real kernel objects: after each, zero leaked mounts and loop devices.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use fsbench::model::{Layout, QuotaImpl, QuotaMode};
use fsbench::provision::{self, ProvisionError};
use fsbench::scenario::FsSpec;

use crate::support::kernel::*;
use crate::support::{libtest_name, poll};

const CHILD_ENV: &str = "FSBENCH_PROVISION_KILL9_CHILD";

fn v(s: &[&str]) -> Vec<String> {
    s.iter().map(|x| x.to_string()).collect()
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn mkfs_failure_is_reported_and_cleaned_up() {
    skip_unless_root!();
    let tmp = tempfile::tempdir().unwrap();
    let c = TestCell::tmpfs_loop("ext4", Layout::M, 4, 32 * MIB).with_fs(FsSpec {
        mkfs: v(&["-O", "no_such_feature"]),
        mount: Vec::new(),
        quota: QuotaImpl::Files,
        fs_type: None,
        tunables: Default::default(),
    });
    let err = provision::provision(&c.request(tmp.path())).unwrap_err();
    assert!(matches!(err, ProvisionError::Mkfs { .. }), "{err}");
    assert!(err.to_string().contains("no_such_feature"), "the tool's own words: {err}");
    assert_no_leaks(tmp.path());
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "cell dir removed");
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn refused_mount_option_carries_the_kernel_message() {
    skip_unless_root!();
    let tmp = tempfile::tempdir().unwrap();
    let c = TestCell::tmpfs_loop("ext4", Layout::S, 2, 32 * MIB).with_fs(FsSpec {
        mkfs: v(&["-q"]),
        mount: v(&["noload", "data=writeback"]),
        quota: QuotaImpl::Files,
        fs_type: None,
        tunables: Default::default(),
    });
    let err = provision::provision(&c.request(tmp.path())).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, ProvisionError::MountRefused { errno: nix::errno::Errno::EINVAL, .. }), "{text}");
    assert!(text.contains("can't mount with data=, fs mounted w/o journal"), "kernel message missing: {text}");
    assert_no_leaks(tmp.path());
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn enospc_on_a_tiny_image_then_clean_teardown() {
    skip_unless_root!();
    let tmp = tempfile::tempdir().unwrap();
    let c = TestCell::tmpfs_loop("ext2", Layout::S, 1, 2 * MIB).with_fs(FsSpec {
        mkfs: v(&["-q"]),
        mount: Vec::new(),
        quota: QuotaImpl::Files,
        fs_type: None,
        tunables: Default::default(),
    });
    let p = provision::provision(&c.request(tmp.path())).unwrap();
    let mut f = std::fs::File::create(p.task_dirs()[0].join("fill")).unwrap();
    let chunk = vec![0xa5u8; 64 * 1024];
    let err = loop {
        if let Err(e) = f.write_all(&chunk).and_then(|_| f.sync_data()) {
            break e;
        }
    };
    assert_eq!(err.raw_os_error(), Some(libc::ENOSPC), "{err}");
    drop(f);
    p.teardown().unwrap();
    assert_no_leaks(tmp.path());
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn panic_while_provisioned_releases_everything() {
    skip_unless_root!();
    let tmp = tempfile::tempdir().unwrap();
    let workdir = tmp.path().to_path_buf();
    let r = std::panic::catch_unwind(move || {
        let c = TestCell::tmpfs_loop("ext4", Layout::M, 3, 32 * MIB);
        let p = provision::provision(&c.request(&workdir)).unwrap();
        assert_eq!(leaks(&workdir).len(), 3 + 1 + 3, "3 fs mounts, the tmpfs, 3 loops: {:?}", leaks(&workdir));
        let _keep = &p;
        panic!("workload blew up");
    });
    assert!(r.is_err());
    assert_no_leaks(tmp.path());
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn quota_on_cells_are_skipped_with_the_kernels_reason_when_unsupported() {
    skip_unless_root!();
    let tmp = tempfile::tempdir().unwrap();
    let mut c = cell("ext4", Layout::S, 1);
    c.quota = QuotaMode::On;
    let backing = tmpfs_loop(64 * MIB, 64 * MIB);
    let files = FsSpec {
        mkfs: v(&["-q"]),
        mount: v(&["usrquota", "grpquota"]),
        quota: QuotaImpl::Files,
        fs_type: None,
        tunables: Default::default(),
    };
    let feature = FsSpec {
        mkfs: v(&["-q"]),
        mount: Vec::new(),
        quota: QuotaImpl::Feature,
        fs_type: None,
        tunables: Default::default(),
    };
    let config_says_no =
        provision::quota::kernel_config_quota_lines().is_some_and(|l| l.contains("CONFIG_QFMT_V2 is not set"));
    for spec in [&files, &feature] {
        let req = request(&c, spec, &backing, tmp.path());
        match provision::check(&req) {
            Ok(()) => {
                assert!(!config_says_no, "kernel config lacks QFMT_V2 but the probe found quota working");
                let p = provision::provision(&req).unwrap();
                assert!(p.filesystems()[0].quota_state.as_deref().unwrap().contains("=on"));
                p.teardown().unwrap();
            }
            Err(skip) => {
                eprintln!("quota {:?}: skipped: {}", spec.quota, skip.reason);
                if spec.quota == QuotaImpl::Feature {
                    assert!(skip.reason.contains("CONFIG_QFMT_V2"), "kernel's own words expected: {}", skip.reason);
                }
                assert!(skip.remedy.is_some());
                // The same cell with quota off still runs.
                let mut off = c.clone();
                off.quota = QuotaMode::Off;
                provision::provision(&request(&off, spec, &backing, tmp.path())).unwrap().teardown().unwrap();
            }
        }
    }
    assert_no_leaks(tmp.path());
}

/// Child side of the kill -9 test, in a process of its own: provision, say so, sleep until
/// killed. Not a test: the test below runs itself again with `CHILD_ENV` set to get here.
fn kill9_child(workdir: &Path) -> ! {
    let c = TestCell::tmpfs_loop("ext4", Layout::M, 2, 32 * MIB);
    let p = provision::provision(&c.request(workdir)).unwrap();
    std::fs::write(workdir.join("ready"), p.cell_dir().to_string_lossy().as_bytes()).unwrap();
    std::thread::sleep(Duration::from_secs(120));
    unreachable!("the parent kills us");
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn kill9_of_a_provisioned_process_then_cleanup_stale() {
    if let Some(workdir) = std::env::var_os(CHILD_ENV) {
        kill9_child(Path::new(&workdir));
    }
    skip_unless_root!();
    let root = tempfile::tempdir().unwrap();
    let workdir = root.path().join("run-1");
    std::fs::create_dir(&workdir).unwrap();
    // This test binary again, running only this test, which becomes the child above.
    let mut child = Command::new(std::env::current_exe().unwrap())
        .arg(libtest_name(module_path!(), "kill9_of_a_provisioned_process_then_cleanup_stale"))
        .args(["--exact", "--include-ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, &workdir)
        .spawn()
        .unwrap();
    let ready = workdir.join("ready");
    let provisioned = poll(Duration::from_secs(60), Duration::from_millis(20), || {
        assert!(child.try_wait().unwrap().is_none(), "child exited early");
        // Not just created: std::fs::write creates, then writes; an empty read is a race.
        std::fs::read_to_string(&ready).is_ok_and(|s| !s.is_empty()).then_some(())
    });
    assert!(provisioned.is_some(), "child never provisioned");
    let cell_dir = PathBuf::from(std::fs::read_to_string(&ready).unwrap());
    // While the owner lives, cleanup leaves its cell alone.
    assert!(provision::cleanup_stale(root.path()).unwrap().is_empty());
    assert!(cell_dir.exists());
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
    child.wait().unwrap();
    // No destructors ran: the mounts (and the loops they hold) are still there.
    let left = leaks(root.path());
    assert!(left.iter().filter(|l| l.starts_with("mount")).count() >= 3, "{left:?}");
    let cleaned = provision::cleanup_stale(root.path()).unwrap();
    eprintln!("cleaned: {cleaned:#?}");
    assert!(cleaned.iter().any(|l| l.starts_with("unmounted")), "{cleaned:?}");
    assert_no_leaks(root.path());
    assert!(!cell_dir.exists());
    // A second start finds nothing more to do.
    assert!(provision::cleanup_stale(root.path()).unwrap().is_empty());
}
