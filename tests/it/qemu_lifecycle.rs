//! The qemu executor's process and file lifecycle, with a stand-in for qemu
//! (a shell script) so it runs anywhere: a hung guest is killed at its
//! deadline, Ctrl-C kills qemu's process group, a guest that dies without
//! reporting shows its last console lines, and no temporary file stays behind.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{fsbench, poll};

struct Fake {
    dir: tempfile::TempDir,
}

impl Fake {
    /// A fake kernel tree (image + empty modules.dep) and a fake qemu running `body`.
    fn new(body: &str) -> Fake {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("k/boot")).unwrap();
        std::fs::create_dir_all(root.join("k/lib/modules/9.9.9")).unwrap();
        std::fs::write(root.join("k/lib/modules/9.9.9/modules.dep"), "").unwrap();
        std::fs::write(root.join("k/boot/vmlinuz-9.9.9"), b"not really a kernel").unwrap();
        std::fs::create_dir_all(root.join("tmp")).unwrap();
        let script = root.join("qemu");
        std::fs::write(&script, format!("#!/bin/sh\necho $$ > '{}'\n{body}\n", root.join("qemu.pid").display()))
            .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        Fake { dir }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn command(&self) -> Command {
        let mut c = fsbench();
        c.args(["run", "quickstart", "--only", "fs=ext4,tasks=1,test=open_close", "--out"])
            .arg(self.root().join("results"))
            .arg("--kernel")
            .arg(format!("FAKE={}", self.root().join("k/boot/vmlinuz-9.9.9").display()))
            .env("FSBENCH_QEMU", self.root().join("qemu"))
            .env("TMPDIR", self.root().join("tmp"))
            .env("FSBENCH_QEMU_BOOT_TIMEOUT", "3")
            .stdin(Stdio::null());
        c
    }

    fn qemu_pid(&self) -> Option<i32> {
        std::fs::read_to_string(self.root().join("qemu.pid")).ok()?.trim().parse().ok()
    }

    /// The fake qemu is gone and fsbench left nothing in TMPDIR or the results root.
    fn assert_clean(&self) {
        let pid = self.qemu_pid().expect("the fake qemu ran");
        assert!(
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_err(),
            "qemu (pid {pid}) is still running"
        );
        let left: Vec<PathBuf> =
            std::fs::read_dir(self.root().join("tmp")).unwrap().map(|e| e.unwrap().path()).collect();
        assert!(left.is_empty(), "temporary files left: {left:?}");
        if let Ok(rd) = std::fs::read_dir(self.root().join("results")) {
            let staged: Vec<PathBuf> =
                rd.map(|e| e.unwrap().path()).filter(|p| p.to_string_lossy().contains(".fsbench-guest-")).collect();
            assert!(staged.is_empty(), "staging left: {staged:?}");
        }
    }
}

#[test]
fn a_hung_guest_is_killed_at_the_boot_deadline() {
    let f = Fake::new("echo 'SeaBIOS (fake)'\nexec sleep 600");
    let t = Instant::now();
    let out = f.command().output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("did not start fsbench within 3s"), "{stderr}");
    assert!(stderr.contains("SeaBIOS (fake)"), "the console tail reaches the user: {stderr}");
    assert!(t.elapsed() < Duration::from_secs(60));
    f.assert_clean();
}

#[test]
fn ctrl_c_kills_qemu_and_removes_temporary_files() {
    let f = Fake::new("echo booting\nexec sleep 600");
    let child = f.command().stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let started = poll(Duration::from_secs(60), Duration::from_millis(50), || f.qemu_pid());
    assert!(started.is_some(), "fake qemu never started");
    std::thread::sleep(Duration::from_millis(300));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    f.assert_clean();
}

#[test]
fn a_guest_that_dies_without_reporting_shows_its_panic() {
    let f = Fake::new("echo '[    1.0] Kernel panic - not syncing: VFS: Unable to mount root fs'\nexit 0");
    let out = f.command().output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("the guest ended without reporting"), "{stderr}");
    assert!(stderr.contains("Kernel panic - not syncing: VFS"), "{stderr}");
    f.assert_clean();
}

#[test]
fn bad_kernel_options_are_usage_errors() {
    let out = fsbench().args(["run", "quickstart", "--kernel", "A=/x,speed=9"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown key `speed`"));
    let out = fsbench().args(["run", "quickstart", "--kernel", "A=/nonexistent/vmlinuz"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not exist"));
    // An image with no modules directory next to it, and none named.
    let t = tempfile::tempdir().unwrap();
    let image = t.path().join("bzImage");
    std::fs::write(&image, b"x").unwrap();
    let out = fsbench().args(["run", "quickstart", "--kernel"]).arg(format!("A={}", image.display())).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("modules=DIR"), "{}", String::from_utf8_lossy(&out.stderr));
}
