//! SIGINT/SIGTERM handling. The signal flag is process-wide, so these tests
//! live alone in this test binary and run in order inside one test function.

#[macro_use]
mod support;

use std::time::Duration;

use fsbench::model::{Layout, QuotaImpl};
use fsbench::provision::{self, ProvisionError, capability};
use fsbench::signals;
use nix::sys::signal::{Signal, raise};

use support::kernel::{MIB, TestCell, assert_no_leaks, leaks};

#[test]
fn sigint_during_provisioning_releases_everything_and_a_second_signal_does_not_kill() {
    signals::install();
    signals::install(); // idempotent
    assert!(!signals::interrupted());
    let root = support::root_or_skip(&format!("{} (provisioning part; the flag is still checked)", test_name!()));
    let tmp = tempfile::tempdir().unwrap();
    let watcher = root.then(|| {
        // Raise SIGINT once the first filesystem is mounted, i.e. mid-provisioning.
        let dir = tmp.path().to_path_buf();
        std::thread::spawn(move || {
            let fs_mounted = || leaks(&dir).iter().any(|l| l.starts_with("mount") && !l.contains("tmpfs"));
            support::poll(Duration::from_secs(30), Duration::from_millis(1), || fs_mounted().then_some(()));
            raise(Signal::SIGINT).unwrap();
        })
    });
    if root {
        let c = TestCell::tmpfs_loop("ext4", Layout::M, 8, 32 * MIB);
        let err = provision::provision(&c.request(tmp.path())).unwrap_err();
        assert!(matches!(err, ProvisionError::Interrupted), "{err}");
        watcher.unwrap().join().unwrap();
        assert_no_leaks(tmp.path());
    } else {
        raise(Signal::SIGINT).unwrap();
    }
    assert!(signals::interrupted());
    raise(Signal::SIGTERM).unwrap();
    assert_eq!(signals::count(), 2, "the second signal is counted, not fatal");

    // An interrupted quota probe is its own outcome, not "supported", and is not
    // cached as an answer; `fsbench doctor` then exits 130, not 0 with quota "ok".
    let spec = fsbench::scenario::FsSpec {
        mkfs: Vec::new(),
        mount: Vec::new(),
        quota: QuotaImpl::Files,
        fs_type: None,
        tunables: Default::default(),
    };
    for _ in 0..2 {
        assert_eq!(capability::quota_probe("ext4", &spec), capability::QuotaProbe::Interrupted);
    }
    let code = fsbench::app::main_from(["fsbench", "doctor", "--fs", "ext4"]);
    assert_eq!(code, fsbench::exit::INTERRUPTED);

    // `plan` swallowed the signal during its quota probe and exited 0 with a plan
    // whose quota cells said "interrupted".
    let scenario = support::crate_root().join("scenarios/quota-smp.toml");
    let code = fsbench::app::main_from(["fsbench", "plan", scenario.to_str().unwrap(), "--only", "fs=ext4,layout=S"]);
    assert_eq!(code, fsbench::exit::INTERRUPTED, "an interrupted plan is not a plan");
}
