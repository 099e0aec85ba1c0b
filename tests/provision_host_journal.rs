//! A run killed with SIGKILL while holding a kernel setting: the next fsbench start puts
//! it back whatever its work root. This test writes the host's own journal
//! (`/run/fsbench`), which every stale cleanup reads: in the `it` binary its dead entry
//! would show up in other tests' cleanups, so it lives alone in this binary.

#[macro_use]
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use fsbench::provision::host_tunables::{Holder, HostJournal};
use fsbench::provision::{loopdev, tunables};

use support::kernel::MIB;

#[test]
fn any_start_restores_what_a_killed_run_held_whatever_its_work_root() {
    if !support::root_or_skip(&test_name!()) {
        return;
    }
    if loopdev::loop_control_available().is_err() {
        return support::skip(&test_name!(), "no /dev/loop-control");
    }
    let tmp = tempfile::Builder::new().prefix("fsbench-test-hostjournal-").tempdir().unwrap();
    let image = tmp.path().join("img");
    std::fs::File::create(&image).unwrap().set_len(8 * MIB).unwrap();
    let out = Command::new("losetup").args(["-f", "--show"]).arg(&image).output().unwrap();
    assert!(out.status.success(), "losetup: {}", String::from_utf8_lossy(&out.stderr));
    let dev = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let path = tunables::queue_path(&dev, "read_ahead_kb").unwrap();
    let host = tunables::read_value(&path).unwrap();
    let wanted = if host == "3072" { "4096" } else { "3072" };
    // The killed run: it set the value through the host's journal, then died holding it.
    let mut killed = Command::new("sleep").arg("60").spawn().unwrap();
    let holder = Holder::of_pid(killed.id() as i32).unwrap();
    HostJournal::system().set(holder, "read_ahead_kb", &path, wanted).unwrap();
    killed.kill().unwrap();
    killed.wait().unwrap();
    assert_eq!(tunables::read_value(&path).unwrap(), wanted);

    // A later run with a work root of its own, changing no setting at all.
    let run = support::fsbench()
        .current_dir(support::crate_root())
        .args(["run", "scenarios/quickstart.toml", "--set", "backing.kind=dir", "--quiet"])
        .args(["--only", "fs=ext4,tasks=1,test=open_close", "--workdir"])
        .arg(tmp.path().join("elsewhere"))
        .arg("--out")
        .arg(tmp.path().join("results"))
        .env("XDG_CACHE_HOME", tmp.path().join("cache"))
        .output()
        .unwrap();
    let now = tunables::read_value(&path).unwrap();
    let _ = Command::new("losetup").arg("-d").arg(&dev).status();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(now, host, "the killed run's value stayed: {stderr}");
    assert!(stderr.contains(&format!("restored {} = {host}", path.display())), "{stderr}");
    assert!(!journal_names(&path), "the entry is forgotten");
}

/// Whether the host's journal still names `path`.
fn journal_names(path: &Path) -> bool {
    let text = std::fs::read_to_string("/run/fsbench/tunables.json").unwrap_or_default();
    text.contains(&format!("\"{}\"", path.display()))
}
