//! The hostile fio corpus (security review, round three): bundles whose fio job has
//! section names that are paths (`/`, `..`), control characters or spaces, `global`
//! spelled as fio reads it but fsbench once did not, includes, and buffers or files
//! beyond the budget. Each is refused by `bundle verify` and `bundle run` with the
//! section named, or counted and shown, and nothing appears outside the sandbox.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::support::sandbox::cell_json;

/// A fio scenario on a private directory, its job `job` (TOML basic multi-line string body).
fn scenario(job: &str, backing: &str) -> String {
    format!(
        "schema = 1\nname = \"fh\"\n[matrix]\nfs = [\"ext4\"]\n[backing]\n{backing}\n[workload]\nkind = \"fio\"\n\
         duration = \"1s\"\nrepetitions = 1\ndisturbance = \"off\"\njob = \"\"\"\n{job}\n\"\"\"\n"
    )
}

const DIR: &str = "kind = \"dir\"";

/// A bundle holding only `scenario`, made by hand: `bundle pack` refuses what these hold.
fn bundle(scenario: &str) -> Vec<u8> {
    let sha: String = Sha256::digest(scenario.as_bytes()).iter().map(|x| format!("{x:02x}")).collect();
    let manifest = serde_json::json!({"format": 1, "tool_version": "0.1.0", "created": null,
        "scenario": "scenario.toml", "results": null,
        "files": [{"path": "scenario.toml", "size": scenario.len(), "sha256": sha}]});
    let mut tar = tar::Builder::new(Vec::new());
    for (name, data) in
        [("manifest.json", serde_json::to_vec_pretty(&manifest).unwrap()), ("scenario.toml", scenario.into())]
    {
        let mut h = tar::Header::new_ustar();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        tar.append_data(&mut h, name, data.as_slice()).unwrap();
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&tar.into_inner().unwrap()).unwrap();
    gz.finish().unwrap()
}

/// `work/` (where the bundle lies and fsbench runs), `tmp/`, and `outside/` that hostile names aim at.
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new(scenario: &str) -> Sandbox {
        let dir = tempfile::Builder::new().prefix("fsbench-fio-hostile-").tempdir().unwrap();
        for d in ["work", "tmp", "outside"] {
            std::fs::create_dir(dir.path().join(d)).unwrap();
        }
        std::fs::write(dir.path().join("work/lab.fsb"), bundle(scenario)).unwrap();
        Sandbox { dir }
    }
    fn p(&self, s: &str) -> PathBuf {
        self.dir.path().join(s)
    }
    fn cmd(&self, args: &[&str]) -> (i32, String, String) {
        let out = assert_cmd::Command::from_std(crate::support::fsbench())
            .current_dir(self.p("work"))
            .env("TMPDIR", self.p("tmp"))
            .env("XDG_CACHE_HOME", self.p("work/cache"))
            .args(args)
            .timeout(Duration::from_secs(120))
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into(),
            String::from_utf8_lossy(&out.stderr).into(),
        )
    }
    fn run(&self, flags: &[&str]) -> (i32, String, String) {
        let work = self.p("tmp/w");
        let mut args = vec!["bundle", "run", "lab.fsb", "--quiet", "--out", "res", "--workdir", work.to_str().unwrap()];
        args.extend_from_slice(flags);
        self.cmd(&args)
    }
    fn assert_nothing_outside(&self, case: &str) {
        let outside: Vec<_> = std::fs::read_dir(self.p("outside")).unwrap().collect();
        assert!(outside.is_empty(), "{case}: wrote outside: {outside:?}");
    }
}

/// Every hostile header is refused at its line by verify and run (exit 2), the section
/// named with its control characters escaped; fio never starts, nothing is written.
#[test]
fn hostile_section_names_includes_and_global_spellings_are_refused_with_the_section_named() {
    let corpus: &[(&str, &str)] = &[
        ("[../../../../outside/NAME]\nrw=write\nsize=1m", "section `[../../../../outside/NAME]`"),
        ("[w]\nrw=write\nsize=1m\n[sub/dir]\nrw=write", "section `[sub/dir]`"),
        ("[..]\nrw=write", "section `[..]`"),
        ("[/tmp/x]\nrw=write", "section `[/tmp/x]`"),
        ("[two words]\nrw=write", "section `[two words]`"),
        ("[w\\u001b]0;pwned\\u0007]\nrw=write", "the line contains the control character"),
        ("[w\\ttab]\nrw=write", "section `[w\\ttab]`"),
        ("[ global]\nrw=write\nsize=1m", "section `[ global]`"),
        ("[globalx]\nsize=1m\n[w]\nrw=write", "section `[globalx]`"),
        ("[global ]\nsize=1m\n[w]\nrw=write", "section `[global ]`"),
        ("[w] ; ok\nrw=write\n  [../x]\nrw=write", "section `[../x]`"),
        ("[w]\nrw=write\nname=../../outside/NAME", "`name=../../outside/NAME`"),
        ("[w]\nrw=write\ninclude /etc/hostname", "section `[w]` includes `/etc/hostname`"),
        ("[w]\nrw=write\nincludeevil.fio", "section `[w]` includes"),
        ("rw=write\n[w]", "the job, line 1: fio reads it as an option outside any section"),
    ];
    for (job, named) in corpus {
        let sb = Sandbox::new(&scenario(job, DIR));
        for (what, (code, _, stderr)) in [("verify", sb.cmd(&["bundle", "verify", "lab.fsb"])), ("run", sb.run(&[]))] {
            assert_eq!(code, 2, "{job:?} {what}: {stderr}");
            assert!(stderr.contains(named), "{job:?} {what}: lacks {named:?}: {stderr}");
            assert!(!stderr.contains('\u{1b}') && !stderr.contains('\u{7}'), "{job:?} {what}: {stderr:?}");
        }
        assert!(!sb.p("work/res").exists(), "{job:?}: a run started");
        sb.assert_nothing_outside(job);
    }
}

/// verify names every section as fio reads it, and the limits counted for the cells.
#[test]
fn verify_shows_every_section_and_the_counted_limits() {
    let job = "[global]\nioengine=psync\n[seq]\nrw=write\nbs=16m\niodepth=64\nnumjobs=2\nsize=8m\n[rand]\nrw=randread\nsize=4m";
    let sb = Sandbox::new(&scenario(job, DIR));
    let (code, stdout, stderr) = sb.cmd(&["bundle", "verify", "lab.fsb"]);
    assert_eq!(code, 0, "{stderr}");
    for want in [
        "fio sections: `[global]` (global), `[seq]` (job), `[rand]` (job)",
        "fio memory:  up to 2.1 GiB: 2.0 GiB of buffers (`[seq]` 16.0 MiB × iodepth 64 × 2 jobs + `[rand]` 4.0 KiB × iodepth 1 × 1 job)",
        "fio files:   up to 20.0 MiB",
        "fio limit:   each cell in a memory cgroup of",
    ] {
        assert!(stdout.contains(want), "lacks {want:?}:\n{stdout}");
    }
    let (code, stdout, _) = sb.cmd(&["bundle", "verify", "lab.fsb", "--json"]);
    assert_eq!(code, 0);
    let doc = crate::schemas::conforming("bundle-verify.schema.json", stdout.as_bytes(), "fio verify");
    let names: Vec<&str> =
        doc["fio"]["sections"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["global", "seq", "rand"]);
    assert_eq!(doc["fio"]["sections"][0]["global"], true);
    assert!(doc["memory"]["fio_bytes"].as_u64().unwrap() > 2 << 30, "{doc}");
    assert_eq!(doc["memory"]["fio_files_bytes"], 20 << 20);
    sb.assert_nothing_outside("verify");
}

/// Security review, round three: fio's buffers were outside the budget (`numjobs=64` of
/// 16 MiB × 64 would take 64 GiB). Refused before anything runs unless --allow-size; so
/// is `fill_device` on a backing directory (it would fill the host's filesystem).
#[test]
fn buffers_and_unbounded_files_beyond_the_budget_are_refused_without_allow_size() {
    let cases = [
        (
            "[w]\nrw=write\nbs=16m\niodepth=64\nnumjobs=64\nsize=1m",
            DIR,
            vec!["`[w]` 16.0 MiB × iodepth 64 × 64 jobs", "MemAvailable"],
        ),
        ("[w]\nrw=write\nfill_device=1", DIR, vec!["fio `[w]` fill_device=1 fills the backing directory's filesystem"]),
        ("[w]\nrw=write\nsize=50%", DIR, vec!["fio `[w]` size=50%"]),
        (
            "[w]\nrw=write\nsize=100m\nnumjobs=2",
            "kind = \"tmpfs-loop\"\nimage_size = \"64MiB\"",
            vec!["fio files of 200.0 MiB (`[w]` 100.0 MiB × 2 jobs) in 64.0 MiB of images"],
        ),
    ];
    for (job, backing, wants) in cases {
        let sb = Sandbox::new(&scenario(job, backing));
        let (code, stdout, stderr) = sb.cmd(&["bundle", "verify", "lab.fsb"]);
        assert_eq!(code, 0, "{job:?}: {stderr}");
        assert!(stdout.contains("--allow-size"), "{job:?}: {stdout}");
        let (code, _, stderr) = sb.run(&[]);
        assert_eq!(code, 2, "{job:?}: {stderr}");
        assert!(stderr.contains("refusing the bundle's sizes") && stderr.contains("--allow-size"), "{job:?}: {stderr}");
        for want in wants {
            assert!(stderr.contains(want), "{job:?}: lacks {want:?}: {stderr}");
        }
        assert!(!sb.p("work/res").exists(), "{job:?}: a run started");
        sb.assert_nothing_outside(job);
    }
}

/// The cell JSON files of the one run under `res`.
fn cells(sb: &Sandbox) -> Vec<serde_json::Value> {
    let scenario_dir = sb.p("work/res/fh");
    let run = std::fs::read_dir(&scenario_dir).unwrap().next().unwrap().unwrap().path();
    std::fs::read_dir(run.join("cells"))
        .unwrap()
        .map(|e| serde_json::from_str(&std::fs::read_to_string(e.unwrap().path()).unwrap()).unwrap())
        .collect()
}

/// The count is enforced: each fio cell of `bundle run` runs in a memory cgroup of the
/// size verify showed, and a fio that outgrows its group's limit is stopped by the
/// kernel there (here a lower `memory.max` of the bundle's own, under 16 MiB × 16 of
/// buffers) and fails its cell: the host is not what runs out.
#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn a_bundles_fio_runs_in_a_memory_cgroup_of_its_counted_size() {
    skip_unless_root!();
    if fsbench::workload::fio::fio_version().is_none() {
        crate::support::skip(&test_name!(), "fio is not installed (apt-get install fio)");
        return;
    }
    let sb = Sandbox::new(&scenario("[w]\nrw=write\nbs=4k\nsize=1m\nioengine=psync", DIR));
    let (_, stdout, _) = sb.cmd(&["bundle", "verify", "lab.fsb", "--json"]);
    let limit = serde_json::from_str::<serde_json::Value>(&stdout).unwrap()["memory"]["fio_memory_limit_bytes"]
        .as_u64()
        .unwrap();
    let (code, _, stderr) = sb.run(&[]);
    assert_eq!(code, 0, "{stderr}");
    let cell = &cells(&sb)[0];
    assert_eq!(cell["status"], "ok", "{cell}");
    let limits = cell["cgroup"]["limits"].as_array().unwrap();
    assert!(
        limits.iter().any(|l| l["key"] == "memory.max" && l["requested"].as_str() == Some(&*limit.to_string())),
        "{limit}: {limits:?}"
    );
    sb.assert_nothing_outside("limit");

    let tight = scenario("[w]\nrw=write\nbs=16m\niodepth=16\nsize=32m\nioengine=psync", DIR)
        .replace("[backing]", "[filesystems.ext4]\ncgroup = { \"memory.max\" = \"64MiB\" }\n[backing]");
    let sb = Sandbox::new(&tight);
    let (code, _, stderr) = sb.run(&[]);
    assert_ne!(code, 0, "fio ran 256 MiB of buffers in 64 MiB: {stderr}");
    let cell = &cells(&sb)[0];
    assert_eq!(cell["status"], "failed", "{cell}");
    // The kernel's OOM killer in the group: fio reports its job's SIGKILL.
    assert!(cell["error"].as_str().unwrap().contains("signal=9"), "{cell}");
    let limits = cell["cgroup"]["limits"].as_array().unwrap();
    assert!(
        limits.iter().any(|l| l["key"] == "memory.max" && l["requested"].as_str() == Some(&*(64u64 << 20).to_string())),
        "{limits:?}"
    );
    sb.assert_nothing_outside("tight");
}

/// Contained by construction: as root, fio runs in a mount namespace where only the
/// cell's directories are writable, so an option that writes elsewhere (one's own
/// scenario may use any: here `write_iolog` with an absolute path, aimed outside the
/// cell) fails the cell instead of writing; nothing appears there, nothing stays mounted.
#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn fio_that_writes_outside_the_cell_fails_and_writes_nothing() {
    skip_unless_root!();
    if fsbench::workload::fio::fio_version().is_none() {
        crate::support::skip(&test_name!(), "fio is not installed (apt-get install fio)");
        return;
    }
    let sb = crate::support::sandbox::Sandbox::new("fsbench-fio-confined-");
    let outside = sb.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let path = sb.path().join("s.toml");
    let job = format!("[w]\nrw=write\nbs=4k\nsize=1m\nioengine=psync\nwrite_iolog={}/iolog", outside.display());
    std::fs::write(&path, scenario(&job, DIR)).unwrap();
    let out = sb.fsbench(&["run", path.to_str().unwrap()]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    let run = &sb.runs()[0];
    let cell = cell_json(run, "ext4-S-qoff-t1");
    assert_eq!(cell["status"], "failed", "{cell}");
    assert!(cell["error"].as_str().unwrap().contains("Read-only file system"), "{cell}");
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0, "fio wrote outside the cell");
    // Without the option the same job runs: the cell's own directories stay writable.
    std::fs::write(&path, scenario("[w]\nrw=write\nbs=4k\nsize=1m\nioengine=psync", DIR)).unwrap();
    let out = sb.fsbench(&["run", path.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    crate::support::kernel::assert_no_leaks(sb.path());
}
