//! The results tree is shared (shards on NFS, Slurm, Kubernetes) and a resumed run
//! executes what its run directory says: the tree is checked before it is trusted.

use std::os::unix::fs::PermissionsExt;
use std::process::Output;

use crate::support::sandbox::{Sandbox, cell_ids};

fn text(o: &Output) -> String {
    format!("{}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

const EXEC_SCENARIO: &str = r#"schema = 1
name = "exec-true"
[matrix]
fs = ["ext4"]
[backing]
kind = "dir"
[workload]
kind = "steps"
iterations = 1
steps = [ { op = "exec", argv = ["true"] } ]
"#;

#[test]
fn a_symlinked_scenario_directory_under_out_is_refused_and_nothing_is_written_through_it() {
    // It used to be followed, and the results were written wherever it pointed.
    let sb = Sandbox::new("fsbench-tree-");
    let elsewhere = sb.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::create_dir_all(sb.out()).unwrap();
    std::os::unix::fs::symlink(&elsewhere, sb.out().join("exec-true")).unwrap();
    let scenario = sb.path().join("exec.toml");
    std::fs::write(&scenario, EXEC_SCENARIO).unwrap();
    let o = sb.fsbench(&["run", scenario.to_str().unwrap()]).output().unwrap();
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("symbolic link"), "{}", text(&o));
    assert!(std::fs::read_dir(&elsewhere).unwrap().next().is_none(), "nothing written through the link");
}

#[test]
fn resume_executed_a_run_directory_others_could_write_and_a_foreign_runs_exec_steps() {
    let sb = Sandbox::new("fsbench-tree-");
    let scenario = sb.path().join("exec.toml");
    std::fs::write(&scenario, EXEC_SCENARIO).unwrap();
    let o = sb.fsbench(&["run", scenario.to_str().unwrap()]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let run = sb.runs()[0].clone();
    // Make it an unfinished run recorded on another host, with no cell stored.
    let meta_path = run.join("run.json");
    let mut meta: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&meta_path).unwrap()).unwrap();
    meta["host"]["hostname"] = "elsewhere.example".into();
    meta["finished"] = serde_json::Value::Null;
    std::fs::write(&meta_path, serde_json::to_vec(&meta).unwrap()).unwrap();
    for id in cell_ids(&run) {
        std::fs::remove_file(run.join("cells").join(format!("{id}.json"))).unwrap();
    }
    let resume = |extra: &[&str]| {
        let mut args = vec!["run", "--resume", run.to_str().unwrap()];
        args.extend_from_slice(extra);
        sb.fsbench(&args).output().unwrap()
    };
    // World-writable run.json: refused whoever recorded it.
    std::fs::set_permissions(&meta_path, std::fs::Permissions::from_mode(0o666)).unwrap();
    let o = resume(&["--allow-exec"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("run.json") && text(&o).contains("0666"), "{}", text(&o));
    std::fs::set_permissions(&meta_path, std::fs::Permissions::from_mode(0o644)).unwrap();
    // Recorded elsewhere, with exec steps: refused without --allow-exec.
    let o = resume(&[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--allow-exec") && text(&o).contains("elsewhere.example"), "{}", text(&o));
    assert!(cell_ids(&run).is_empty(), "nothing ran");
    let o = resume(&["--allow-exec"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(cell_ids(&run).len(), 1);
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn a_run_that_cannot_make_its_work_root_leaves_no_run_directory() {
    // A work root on a read-only filesystem used to leave a half-made run directory.
    skip_unless_root!();
    let sb = Sandbox::new("fsbench-tree-");
    let work = sb.work();
    std::fs::create_dir_all(&work).unwrap();
    std::fs::set_permissions(&work, std::fs::Permissions::from_mode(0o700)).unwrap();
    use nix::mount::{MsFlags, mount, umount};
    mount(Some("tmpfs"), &work, Some("tmpfs"), MsFlags::empty(), Some("mode=0700")).unwrap();
    mount(None::<&str>, &work, None::<&str>, MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY, Some("mode=0700")).unwrap();
    let scenario = sb.path().join("exec.toml");
    std::fs::write(&scenario, EXEC_SCENARIO).unwrap();
    let o = sb.fsbench(&["run", scenario.to_str().unwrap()]).output().unwrap();
    umount(&work).unwrap();
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    assert!(sb.runs().is_empty(), "a run that never started left {:?}\n{}", sb.runs(), text(&o));
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn run_strict_exits_1_when_a_cell_is_skipped() {
    // It used to exit 0.
    skip_unless_root!();
    let sb = Sandbox::new("fsbench-tree-");
    let scenario = sb.path().join("strict.toml");
    std::fs::write(
        &scenario,
        r#"schema = 1
name = "strict"
[matrix]
fs = ["ext4", "reiserfs"]
layout = ["S"]
tasks = [1]
test = ["open_close"]
[backing]
kind = "tmpfs-loop"
image_size = "64MiB"
[workload]
kind = "lat_fs"
warmup = "0ms"
duration = "20ms"
repetitions = 1
"#,
    )
    .unwrap();
    let o = sb.fsbench(&["run", scenario.to_str().unwrap()]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "without --strict a skip is normal: {}", text(&o));
    let o = sb.fsbench(&["run", scenario.to_str().unwrap(), "--strict"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("--strict: 1 cell skipped"), "{}", text(&o));
    // The same scenario from a bundle: `bundle run` takes --strict too.
    let bundle = sb.path().join("strict.fsb");
    let o = crate::support::fsbench()
        .args(["bundle", "pack", scenario.to_str().unwrap(), "-o", bundle.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = sb.fsbench(&["bundle", "run", bundle.to_str().unwrap()]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "without --strict a skip is normal: {}", text(&o));
    let o = sb.fsbench(&["bundle", "run", bundle.to_str().unwrap(), "--strict"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("--strict: 1 cell skipped"), "{}", text(&o));
}

#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn a_workdir_reached_through_another_users_symlink_is_refused() {
    // It used to be accepted and used by that path.
    skip_unless_root!();
    let tmp = tempfile::tempdir().unwrap();
    let real = tmp.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let link = tmp.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    // Our own link is followed, and the checked, canonical path is what comes back.
    let canon = fsbench::provision::prepare_work_root(&link.join("work")).unwrap();
    assert_eq!(canon, real.join("work").canonicalize().unwrap());
    let c = std::ffi::CString::new(link.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string; lchown changes the link itself.
    assert_eq!(unsafe { libc::lchown(c.as_ptr(), 65534, 65534) }, 0);
    let e = fsbench::provision::prepare_work_root(&link.join("work")).unwrap_err();
    assert!(e.to_string().contains("owned by uid 65534"), "{e}");
}
