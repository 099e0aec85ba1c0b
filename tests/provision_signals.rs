//! SIGINT/SIGTERM handling. The signal flag is process-wide, so these tests
//! live alone in this test binary and run in order inside one test function.

mod provision_common;
use provision_common::*;

use std::time::{Duration, Instant};

use fsbench::model::{Layout, QuotaImpl};
use fsbench::provision::{self, ProvisionError, capability};
use fsbench::signals;
use nix::sys::signal::{Signal, raise};

#[test]
fn sigint_during_provisioning_releases_everything_and_a_second_signal_does_not_kill() {
    signals::install();
    signals::install(); // idempotent
    assert!(!signals::interrupted());
    let root = nix::unistd::geteuid().is_root();
    let tmp = tempfile::tempdir().unwrap();
    let watcher = root.then(|| {
        // Raise SIGINT once the first filesystem is mounted, i.e. mid-provisioning.
        let dir = tmp.path().to_path_buf();
        std::thread::spawn(move || {
            let start = Instant::now();
            while !leaks(&dir).iter().any(|l| l.starts_with("mount") && !l.contains("tmpfs")) {
                if start.elapsed() > Duration::from_secs(30) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            raise(Signal::SIGINT).unwrap();
        })
    });
    if root {
        let cell = cell("ext4", Layout::M, 8);
        let spec = spec("ext4");
        let backing = tmpfs_loop(32 << 20, 32 << 20);
        let req = request(&cell, &spec, &backing, tmp.path());
        let err = provision::provision(&req).unwrap_err();
        assert!(matches!(err, ProvisionError::Interrupted), "{err}");
        watcher.unwrap().join().unwrap();
        assert_no_leaks(tmp.path());
    } else {
        eprintln!("SKIP provisioning part: needs root; checking the flag only");
        raise(Signal::SIGINT).unwrap();
    }
    assert!(signals::interrupted());
    raise(Signal::SIGTERM).unwrap();
    assert_eq!(signals::count(), 2, "the second signal is counted, not fatal");

    // An interrupted quota probe is its own outcome, not "supported", and is not
    // cached as an answer; `fsbench doctor` then exits 130, not 0 with quota "ok".
    let spec = fsbench::scenario::FsSpec { mkfs: Vec::new(), mount: Vec::new(), quota: QuotaImpl::Files };
    for _ in 0..2 {
        assert_eq!(capability::quota_probe("ext4", &spec), capability::QuotaProbe::Interrupted);
    }
    let code = fsbench::app::main_from(["fsbench", "doctor", "--fs", "ext4"]);
    assert_eq!(code, fsbench::exit::INTERRUPTED);
}
