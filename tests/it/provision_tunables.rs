//! Kernel settings shared with other runs and found by device number: regressions for a
//! security review's findings (overlapping runs left a value changed for good and
//! mislabelled cells; a queue setting went to a device mkfs never formatted).

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use fsbench::model::Layout;
use fsbench::provision::host_tunables::{HOST_JOURNAL_DIR, Holder, HostJournal};
use fsbench::provision::{self, ProvisionError, ProvisionRequest, loopdev, tunables};
use fsbench::scenario::Backing;

use crate::support::kernel::*;

/// `losetup -f --show image` on a fresh 8 MiB image: a loop device no fd of this process holds.
fn losetup(image: &Path) -> PathBuf {
    let f = std::fs::File::create(image).unwrap();
    f.set_len(8 * MIB).unwrap();
    let out = Command::new("losetup").args(["-f", "--show"]).arg(image).output().unwrap();
    assert!(out.status.success(), "losetup: {}", String::from_utf8_lossy(&out.stderr));
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// Detaches its loop devices however the test ends.
struct Detach(Vec<PathBuf>);

impl Drop for Detach {
    fn drop(&mut self) {
        for d in &self.0 {
            let _ = Command::new("losetup").arg("-d").arg(d).status();
        }
    }
}

/// Another "run": a live process of its own, killed and reaped when dropped.
struct OtherRun(Child);

impl OtherRun {
    fn start() -> OtherRun {
        OtherRun(Command::new("sleep").arg("60").spawn().unwrap())
    }

    fn holder(&self) -> Holder {
        Holder::of_pid(self.0.id() as i32).expect("the other run is alive")
    }

    /// SIGKILL it: its holds stay in the journal with nobody to release them.
    fn kill(mut self) {
        self.0.kill().unwrap();
        self.0.wait().unwrap();
    }
}

impl Drop for OtherRun {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn read(p: &Path) -> String {
    tunables::read_value(p).unwrap()
}

/// A value for read_ahead_kb that none of `current` holds.
fn another(current: &[&str]) -> String {
    ["3072", "4096", "6144"].into_iter().find(|v| !current.contains(v)).unwrap().to_string()
}

#[test]
fn overlapping_runs_share_a_setting_refuse_another_value_and_the_last_one_out_restores() {
    skip_unless_root!();
    if loopdev::loop_control_available().is_err() {
        return crate::support::skip(&test_name!(), "no /dev/loop-control");
    }
    let tmp = tempfile::Builder::new().prefix("fsbench-test-tunables-").tempdir().unwrap();
    let dev = losetup(&tmp.path().join("img"));
    let _detach = Detach(vec![dev.clone()]);
    let path = tunables::queue_path(&dev, "read_ahead_kb").unwrap();
    let host = read(&path);
    let wanted = another(&[&host]);
    let other = another(&[&host, &wanted]);
    let journal = HostJournal::at(&tmp.path().join("host"));
    let (a, b) = (OtherRun::start(), OtherRun::start());

    // Run A changes it; run B, overlapping, asks for the same value and shares it.
    assert_eq!(journal.set(a.holder(), "read_ahead_kb", &path, &wanted).unwrap(), host);
    assert_eq!(journal.set(b.holder(), "read_ahead_kb", &path, &wanted).unwrap(), host, "B sees the host's value");
    assert_eq!(read(&path), wanted);
    // Run C wants another value while A and B hold theirs: refused (a skip), naming them.
    let e = journal.set(Holder::this_process(), "read_ahead_kb", &path, &other).unwrap_err();
    let ProvisionError::Unsupported(skip) = &e else { panic!("not a skip: {e}") };
    for pid in [a.0.id(), b.0.id()] {
        assert!(skip.reason.contains(&pid.to_string()), "{skip:?}");
    }
    assert_eq!(read(&path), wanted, "C's refusal changed nothing");
    // A leaves first: B still measures under its value. B leaves: the host's comes back
    // (before, B had saved A's value as the host's and put that back last).
    assert_eq!(journal.release(a.holder(), &path).unwrap(), None);
    assert_eq!(read(&path), wanted);
    assert!(journal.release(b.holder(), &path).unwrap().is_some());
    assert_eq!(read(&path), host);

    // A run killed with SIGKILL while holding a value: the next start restores it, and a
    // run that changes it meanwhile saves the host's value, not the dead run's.
    let dead = OtherRun::start();
    journal.set(dead.holder(), "read_ahead_kb", &path, &wanted).unwrap();
    let survivor = OtherRun::start();
    journal.set(survivor.holder(), "read_ahead_kb", &path, &wanted).unwrap();
    dead.kill();
    assert!(journal.restore_orphans().unwrap().is_empty(), "a live run still holds it");
    assert_eq!(read(&path), wanted);
    survivor.kill();
    let restored = journal.restore_orphans().unwrap();
    assert_eq!(read(&path), host, "{restored:?}");
    assert!(restored.iter().any(|l| l.starts_with(&format!("restored {}", path.display()))), "{restored:?}");
    let killed = OtherRun::start();
    journal.set(killed.holder(), "read_ahead_kb", &path, &wanted).unwrap();
    killed.kill();
    assert_eq!(journal.set(Holder::this_process(), "read_ahead_kb", &path, &other).unwrap(), host);
    assert_eq!(read(&path), other);
    journal.release(Holder::this_process(), &path).unwrap();
    assert_eq!(read(&path), host);
}

#[test]
fn a_dead_runs_loop_queue_setting_stays_when_its_device_now_backs_another_image() {
    skip_unless_root!();
    if loopdev::loop_control_available().is_err() {
        return crate::support::skip(&test_name!(), "no /dev/loop-control");
    }
    let tmp = tempfile::Builder::new().prefix("fsbench-test-tunables-").tempdir().unwrap();
    let dev = losetup(&tmp.path().join("ours.img"));
    let _detach = Detach(vec![dev.clone()]);
    let path = tunables::queue_path(&dev, "read_ahead_kb").unwrap();
    let host = read(&path);
    let wanted = another(&[&host]);
    let journal = HostJournal::at(&tmp.path().join("host"));
    let dead = OtherRun::start();
    journal.set(dead.holder(), "read_ahead_kb", &path, &wanted).unwrap();
    dead.kill();
    // The device goes to someone else's image under the same number.
    let _ = Command::new("losetup").arg("-d").arg(&dev).status();
    let theirs = tmp.path().join("theirs.img");
    std::fs::File::create(&theirs).unwrap().set_len(8 * MIB).unwrap();
    let out = Command::new("losetup").arg(&dev).arg(&theirs).output().unwrap();
    if !out.status.success() {
        return crate::support::skip(&test_name!(), "the loop device was taken before it could be reused");
    }
    std::fs::write(&path, "2048").unwrap();
    let done = journal.restore_orphans().unwrap();
    assert_eq!(read(&path), "2048", "another's device was written: {done:?}");
    assert!(done.iter().any(|l| l.starts_with(&format!("left {} alone", path.display()))), "{done:?}");
}

/// Whether the host-wide journal holds an entry for `path`.
fn host_journal_names(path: &Path) -> bool {
    let text = std::fs::read_to_string(Path::new(HOST_JOURNAL_DIR).join("tunables.json")).unwrap_or_default();
    text.contains(&format!("\"{}\"", path.display()))
}

#[test]
fn a_queue_setting_lands_on_the_device_mkfs_formatted_through_a_link_named_like_another() {
    skip_unless_root!();
    if loopdev::loop_control_available().is_err() {
        return crate::support::skip(&test_name!(), "no /dev/loop-control");
    }
    if !have_mkfs("ext4", &test_name!()) {
        return;
    }
    let tmp = tempfile::Builder::new().prefix("fsbench-test-tunables-").tempdir().unwrap();
    let (named, formatted) = (losetup(&tmp.path().join("named.img")), losetup(&tmp.path().join("formatted.img")));
    let detach = Detach(vec![named.clone(), formatted.clone()]);
    // `<tmp>/dev/loopA` -> /dev/loopB: the name says one device, the node is the other.
    std::fs::create_dir(tmp.path().join("dev")).unwrap();
    let link = tmp.path().join("dev").join(named.file_name().unwrap());
    std::os::unix::fs::symlink(&formatted, &link).unwrap();
    let queue = |dev: &Path| {
        PathBuf::from(format!("/sys/block/{}/queue/read_ahead_kb", dev.file_name().unwrap().to_string_lossy()))
    };
    let (named_before, formatted_before) = (read(&queue(&named)), read(&queue(&formatted)));
    let wanted = another(&[&named_before, &formatted_before]);

    let mut cell = TestCell::tmpfs_loop("ext4", Layout::S, 1, 8 * MIB);
    cell.backing = Backing::Device { path: link.clone() };
    cell.fs.tunables.queue = vec![("read_ahead_kb".into(), wanted.clone())];
    let work = tmp.path().join("work");
    let req = ProvisionRequest { allow_device: Some(link.as_path()), ..cell.request(&work) };
    let p = provision::provision(&req).unwrap();
    let fs = &p.filesystems()[0];
    let by_number = tunables::queue_path(&formatted, "read_ahead_kb").unwrap();
    let (named_now, formatted_now) = (read(&queue(&named)), read(&queue(&formatted)));
    let journalled = host_journal_names(&by_number);
    let blkid = |dev: &Path| {
        let out = Command::new("blkid").args(["-p", "-o", "value", "-s", "TYPE"]).arg(dev).output().unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let (named_type, formatted_type) = (blkid(&named), blkid(&formatted));
    let (device, applied) = (fs.device.clone(), fs.queue.get("read_ahead_kb").cloned());
    p.teardown().unwrap();

    assert_eq!((named_type.as_str(), formatted_type.as_str()), ("", "ext4"), "mkfs formatted the link's target");
    assert_eq!(device.as_deref(), Some(formatted.to_str().unwrap()), "the device recorded is the one formatted");
    assert_eq!(formatted_now, wanted, "the setting went to another device than mkfs used");
    assert_eq!(named_now, named_before, "the device the link is named after was changed");
    assert_eq!(applied, Some(wanted));
    assert!(journalled, "{} is not in the host-wide journal", by_number.display());
    assert!(by_number.to_string_lossy().starts_with("/sys/dev/block/7:"), "{}", by_number.display());
    assert_eq!(read(&queue(&formatted)), formatted_before, "restored at teardown");
    assert!(!host_journal_names(&by_number), "released at teardown");
    drop(detach);
    assert_no_leaks(tmp.path());
}
