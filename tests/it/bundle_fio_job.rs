//! A fio scenario whose job is a file (`workload.job_file`) in bundles: the file travels
//! inside the bundle, listed in the manifest with its hash; `bundle verify` lists its
//! options; `bundle run` judges them by the same allow-list as an inline job; a job file
//! that is a link, outside the scenario's directory (or the bundle), or too big is
//! refused with its name. Root-free: the runs use a `dir` backing.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::support::sandbox::cell_json;

const SCENARIO: &str = "schema = 1\nname = \"fio-file\"\n[matrix]\nfs = [\"ext4\"]\n[backing]\nkind = \"dir\"\n\
                        [workload]\nkind = \"fio\"\nduration = \"1s\"\nrepetitions = 1\ndisturbance = \"off\"\n";

const JOB: &str = "[randwrite]\nrw=randwrite\nbs=4k\nsize=4m\nioengine=psync\n";

struct Lab {
    dir: tempfile::TempDir,
}

impl Lab {
    fn new() -> Lab {
        let dir = tempfile::Builder::new().prefix("fsbench-bundle-fio-").tempdir().unwrap();
        for d in ["lab/jobs", "recv", "tmp"] {
            std::fs::create_dir_all(dir.path().join(d)).unwrap();
        }
        Lab { dir }
    }
    fn p(&self, s: &str) -> PathBuf {
        self.dir.path().join(s)
    }
    /// `lab/s.toml` naming `job_file`, and `lab/jobs/w.fio` holding `job`.
    fn scenario(&self, job_file: &str, job: &str) -> PathBuf {
        std::fs::write(self.p("lab/jobs/w.fio"), job).unwrap();
        let s = self.p("lab/s.toml");
        std::fs::write(&s, format!("{SCENARIO}job_file = \"{job_file}\"\n")).unwrap();
        s
    }
    fn cmd(&self, cwd: &str, args: &[&str]) -> (i32, String, String) {
        let out = crate::support::fsbench()
            .current_dir(self.p(cwd))
            .env("TMPDIR", self.p("tmp"))
            .env("XDG_CACHE_HOME", self.p("cache"))
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into(),
            String::from_utf8_lossy(&out.stderr).into(),
        )
    }
    fn pack(&self) -> (i32, String, String) {
        let out = self.p("recv/lab.fsb");
        self.cmd("lab", &["bundle", "pack", "s.toml", "-o", out.to_str().unwrap()])
    }
}

/// The bundle's entries as (path, bytes).
fn entries(bundle: &Path) -> Vec<(String, Vec<u8>)> {
    let gz = flate2::read::GzDecoder::new(std::fs::File::open(bundle).unwrap());
    let mut ar = tar::Archive::new(gz);
    ar.entries()
        .unwrap()
        .map(|e| {
            let mut e = e.unwrap();
            let mut b = Vec::new();
            std::io::Read::read_to_end(&mut e, &mut b).unwrap();
            (e.path().unwrap().to_string_lossy().into_owned(), b)
        })
        .collect()
}

fn sha(b: &[u8]) -> String {
    Sha256::digest(b).iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn a_job_file_travels_in_the_bundle_listed_with_its_hash_and_runs() {
    let lab = Lab::new();
    lab.scenario("jobs/w.fio", JOB);
    let (code, _, stderr) = lab.pack();
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("travels as fixtures/w.fio"), "{stderr}");
    let got = entries(&lab.p("recv/lab.fsb"));
    let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["manifest.json", "fixtures/w.fio", "scenario.toml"]);
    let manifest: serde_json::Value = serde_json::from_slice(&got[0].1).unwrap();
    let listed = &manifest["files"][0];
    assert_eq!(listed["path"], "fixtures/w.fio");
    assert_eq!(listed["sha256"], sha(JOB.as_bytes()));
    assert_eq!(got[1].1, JOB.as_bytes());
    assert!(String::from_utf8_lossy(&got[2].1).contains("job_file = \"fixtures/w.fio\""));

    // Elsewhere: verify lists the file's options, nothing refused.
    let (code, stdout, stderr) = lab.cmd("recv", &["bundle", "verify", "lab.fsb"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("fio job:     `rw=randwrite`, `bs=4k`, `size=4m`, `ioengine=psync`"), "{stdout}");
    assert!(!stdout.contains("fio refused"), "{stdout}");
    assert!(stdout.contains("fio job file: fixtures/w.fio\n"), "{stdout}");
    let (code, stdout, stderr) = lab.cmd("recv", &["bundle", "verify", "lab.fsb", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let doc = crate::schemas::conforming("bundle-verify.schema.json", stdout.as_bytes(), "fio job_file");
    assert_eq!(doc["fio"]["file"], "fixtures/w.fio", "{doc}");
    assert_eq!(doc["fio"]["options"], serde_json::json!(["rw=randwrite", "bs=4k", "size=4m", "ioengine=psync"]));
    assert_eq!(doc["fio"]["refused"], serde_json::json!([]));
    if fsbench::workload::fio::fio_version().is_none() {
        crate::support::skip("a_job_file_travels_in_the_bundle_listed_with_its_hash_and_runs", "fio is not installed");
        return;
    }
    let (code, _, stderr) = lab.cmd("recv", &["bundle", "run", "lab.fsb", "--quiet", "--out", "res"]);
    assert_eq!(code, 0, "{stderr}");
    let cells = lab.p("recv/res/fio-file");
    let run = std::fs::read_dir(&cells).unwrap().next().unwrap().unwrap().path();
    let cell = cell_json(&run, "ext4-S-qoff-t1");
    assert_eq!(cell["status"], "ok", "{cell}");
    assert!(cell["fio"]["job"].as_str().unwrap().contains("rw=randwrite"), "{cell}");
    assert!(cell["fio"]["iops"]["median"].as_f64().unwrap() > 0.0, "{cell}");
}

#[test]
fn a_hostile_job_file_is_packed_listed_and_refused_by_bundle_run() {
    let lab = Lab::new();
    lab.scenario("jobs/w.fio", "[w]\nrw=write\nsize=1m\nexec_prerun=touch pwned\n");
    let (code, _, stderr) = lab.pack();
    assert_eq!(code, 0, "{stderr}");
    // The packer is told what the receiver will be asked.
    assert!(stderr.contains("exec_prerun"), "{stderr}");
    let (code, stdout, stderr) = lab.cmd("recv", &["bundle", "verify", "lab.fsb"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("fio job:     `rw=write`, `size=1m`, `exec_prerun=touch pwned`"), "{stdout}");
    assert!(stdout.contains("fio refused: `exec_prerun=touch pwned` (not on the allow-list"), "{stdout}");
    let (_, stdout, _) = lab.cmd("recv", &["bundle", "verify", "lab.fsb", "--json"]);
    let doc = crate::schemas::conforming("bundle-verify.schema.json", stdout.as_bytes(), "hostile fio job_file");
    let refused = doc["fio"]["refused"].as_array().unwrap();
    assert!(refused.len() == 1 && refused[0].as_str().unwrap().starts_with("`exec_prerun=touch pwned`"), "{doc}");
    assert!(doc["flags_needed"].to_string().contains("--allow-exec"), "{doc}");
    let (code, _, stderr) = lab.cmd("recv", &["bundle", "run", "lab.fsb", "--quiet", "--out", "res"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("refusing fio option `exec_prerun=touch pwned`") && stderr.contains("--allow-exec"),
        "{stderr}"
    );
    assert!(!lab.p("recv/res").exists() && !lab.p("recv/pwned").exists());
    assert_eq!(std::fs::read_dir(lab.p("tmp")).unwrap().count(), 0, "private directory left behind");
}

#[test]
fn pack_refuses_a_job_file_that_is_a_link_outside_or_too_big_naming_it() {
    let lab = Lab::new();
    lab.scenario("jobs/w.fio", JOB);
    std::os::unix::fs::symlink("w.fio", lab.p("lab/jobs/link.fio")).unwrap();
    std::fs::write(lab.p("outside.fio"), JOB).unwrap();
    std::fs::write(lab.p("lab/jobs/big.fio"), format!("{JOB}{}\n", "#".repeat(1 << 20))).unwrap();
    for (file, why) in [
        ("jobs/link.fio", "is or passes through a symbolic link"),
        ("../outside.fio", "is not beneath the scenario's directory"),
        ("jobs/big.fio", "is larger than 1024 KiB"),
    ] {
        std::fs::write(lab.p("lab/s.toml"), format!("{SCENARIO}job_file = \"{file}\"\n")).unwrap();
        let (code, _, stderr) = lab.pack();
        assert_eq!(code, 2, "{file}: {stderr}");
        assert!(stderr.contains(&format!("job file `{file}` {why}")), "{file}: {stderr}");
        assert!(!lab.p("recv/lab.fsb").exists(), "{file}: a bundle was written");
    }
}

/// A well-formed bundle of `files` (path, bytes) with a manifest listing them.
pub(crate) fn handmade(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut listed: Vec<serde_json::Value> =
        files.iter().map(|(p, b)| serde_json::json!({"path": p, "size": b.len(), "sha256": sha(b)})).collect();
    listed.sort_by(|a, b| a["path"].as_str().cmp(&b["path"].as_str()));
    let m = serde_json::json!({"format": 1, "tool_version": "0.1.0", "created": null, "scenario": "scenario.toml", "results": null, "files": listed});
    let m = serde_json::to_vec_pretty(&m).unwrap();
    let mut tar = tar::Builder::new(Vec::new());
    for (p, b) in std::iter::once(("manifest.json", m.as_slice())).chain(files.iter().copied()) {
        let mut h = tar::Header::new_ustar();
        h.set_size(b.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        tar.append_data(&mut h, p, b).unwrap();
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&tar.into_inner().unwrap()).unwrap();
    gz.finish().unwrap()
}

#[test]
fn a_bundle_whose_job_file_is_not_one_of_its_files_is_refused_naming_it() {
    let lab = Lab::new();
    std::fs::write(lab.p("recv/outside.fio"), JOB).unwrap();
    for (file, why) in [
        ("../outside.fio", "workload.job_file `../outside.fio` is not a file of the bundle"),
        ("manifest.json", "workload.job_file `manifest.json` is not a file of the bundle"),
        ("fixtures/none.fio", "workload.job_file `fixtures/none.fio` is not a file of the bundle"),
    ] {
        let scenario = format!("{SCENARIO}job_file = \"{file}\"\n");
        std::fs::write(lab.p("recv/lab.fsb"), handmade(&[("scenario.toml", scenario.as_bytes())])).unwrap();
        for args in [&["bundle", "verify", "lab.fsb"][..], &["bundle", "run", "lab.fsb", "--quiet", "--out", "res"][..]]
        {
            let (code, _, stderr) = lab.cmd("recv", args);
            assert_eq!(code, 2, "{file} {args:?}: {stderr}");
            assert!(stderr.contains(why), "{file} {args:?}: {stderr}");
        }
    }
    // A job file the bundle carries but that is too big: refused by name when read back.
    let big = format!("{JOB}{}\n", "#".repeat(1 << 20));
    let scenario = format!("{SCENARIO}job_file = \"fixtures/big.fio\"\n");
    std::fs::write(
        lab.p("recv/lab.fsb"),
        handmade(&[("fixtures/big.fio", big.as_bytes()), ("scenario.toml", scenario.as_bytes())]),
    )
    .unwrap();
    let (code, _, stderr) = lab.cmd("recv", &["bundle", "verify", "lab.fsb"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("job file `fixtures/big.fio` is larger than 1024 KiB"), "{stderr}");
    assert!(!lab.p("recv/res").exists());
    assert_eq!(std::fs::read_dir(lab.p("tmp")).unwrap().count(), 0, "private directory left behind");
}
