//! The hostile-bundle corpus: every kind of bad bundle is refused by `bundle verify`
//! and `bundle run` with exit code 2 and a message naming the entry, and nothing is
//! written outside the sandbox's private directories.
//!
//! The bundles are generated here (see tests/hostile_bundles/README.md) with raw
//! tar headers, because well-behaved tar writers refuse to produce them.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use flate2::Compression;
use flate2::write::GzEncoder;
use sha2::{Digest, Sha256};

use crate::support::fsbench;

const SCENARIO: &str = "schema = 1\nname = \"tiny\"\n[matrix]\nfs = [\"ext4\"]\ntasks = [1]\ntest = [\"open_close\"]\n\
                        [backing]\nkind = \"dir\"\n[workload]\nkind = \"lat_fs\"\nwarmup = \"0ms\"\nduration = \"10ms\"\nrepetitions = 1\n";

const CANARY: &[u8] = b"canary: nothing may write here\n";

fn sha(b: &[u8]) -> String {
    Sha256::digest(b).iter().map(|x| format!("{x:02x}")).collect()
}

/// One raw tar entry.
#[derive(Clone)]
struct E {
    name: Vec<u8>,
    typ: u8,
    mode: u32,
    data: Vec<u8>,
    link: Vec<u8>,
    /// Listed in the manifest with its true size and sha256.
    listed: bool,
}

fn file(name: &str, data: &[u8]) -> E {
    E { name: name.as_bytes().to_vec(), typ: b'0', mode: 0o644, data: data.to_vec(), link: Vec::new(), listed: true }
}

fn unlisted(mut e: E) -> E {
    e.listed = false;
    e
}

fn octal(field: &mut [u8], v: u64) {
    let s = format!("{:0w$o}\0", v, w = field.len() - 1);
    field.copy_from_slice(s.as_bytes());
}

/// A ustar header with any name, type and link, as a hostile packer would write it.
fn header(name: &[u8], typ: u8, mode: u32, size: u64, link: &[u8]) -> [u8; 512] {
    let mut h = [0u8; 512];
    h[..name.len()].copy_from_slice(name);
    octal(&mut h[100..108], mode as u64);
    octal(&mut h[108..116], 0);
    octal(&mut h[116..124], 0);
    octal(&mut h[124..136], size);
    octal(&mut h[136..148], 0);
    h[156] = typ;
    h[157..157 + link.len()].copy_from_slice(link);
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[148..156].fill(b' ');
    let sum: u64 = h.iter().map(|b| *b as u64).sum();
    h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    h
}

fn pad(out: &mut Vec<u8>) {
    while !out.len().is_multiple_of(512) {
        out.push(0);
    }
}

fn append(out: &mut Vec<u8>, e: &E) {
    if e.name.len() > 100 {
        // GNU long name: a `././@LongLink` entry of type L carrying the name.
        let mut long = e.name.clone();
        long.push(0);
        out.extend_from_slice(&header(b"././@LongLink", b'L', 0o644, long.len() as u64, b""));
        out.extend_from_slice(&long);
        pad(out);
        out.extend_from_slice(&header(&e.name[..100], e.typ, e.mode, e.data.len() as u64, &e.link));
    } else {
        out.extend_from_slice(&header(&e.name, e.typ, e.mode, e.data.len() as u64, &e.link));
    }
    out.extend_from_slice(&e.data);
    pad(out);
}

fn manifest_for(entries: &[E]) -> serde_json::Value {
    let mut files: Vec<serde_json::Value> = entries
        .iter()
        .filter(|e| e.listed && e.typ == b'0')
        .map(|e| serde_json::json!({"path": String::from_utf8_lossy(&e.name), "size": e.data.len(), "sha256": sha(&e.data)}))
        .collect();
    files.sort_by(|a, b| a["path"].as_str().cmp(&b["path"].as_str()));
    serde_json::json!({"format": 1, "tool_version": "0.1.0", "created": null, "scenario": "scenario.toml", "results": null, "files": files})
}

/// A bundle of the scenario plus `extra`; `edit` may change the manifest.
fn bundle_with(extra: Vec<E>, edit: impl FnOnce(&mut serde_json::Value), scenario: &str) -> Vec<u8> {
    let mut entries = vec![file("scenario.toml", scenario.as_bytes())];
    entries.extend(extra);
    let mut m = manifest_for(&entries);
    edit(&mut m);
    let mut tar = Vec::new();
    append(&mut tar, &file("manifest.json", &serde_json::to_vec_pretty(&m).unwrap()));
    for e in &entries {
        append(&mut tar, e);
    }
    tar.extend_from_slice(&[0u8; 1024]);
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    gz.write_all(&tar).unwrap();
    gz.finish().unwrap()
}

fn bundle(extra: Vec<E>) -> Vec<u8> {
    bundle_with(extra, |_| {}, SCENARIO)
}

/// A gzip bomb: after a valid manifest and scenario, a GNU long-name header that
/// claims `size` bytes of name (a tar reader buffers those in memory).
fn make_gzip_bomb(size: u64) -> Vec<u8> {
    let entries = vec![file("scenario.toml", SCENARIO.as_bytes())];
    let m = manifest_for(&entries);
    let mut tar = Vec::new();
    append(&mut tar, &file("manifest.json", &serde_json::to_vec_pretty(&m).unwrap()));
    append(&mut tar, &entries[0]);
    tar.extend_from_slice(&header(b"././@LongLink", b'L', 0o644, size, b""));
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    gz.write_all(&tar).unwrap();
    let chunk = vec![b'a'; 1 << 20];
    for _ in 0..size >> 20 {
        gz.write_all(&chunk).unwrap();
    }
    gz.finish().unwrap()
}

/// A directory tree where a test may only write under `work` and `tmp`.
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::Builder::new().prefix("fsbench-hostile-").tempdir().unwrap();
        for d in ["work", "tmp", "outside"] {
            std::fs::create_dir(dir.path().join(d)).unwrap();
        }
        // A canary next to the private directories: hostile links aim at it.
        std::fs::write(dir.path().join("canary"), CANARY).unwrap();
        Sandbox { dir }
    }
    fn p(&self, s: &str) -> PathBuf {
        self.dir.path().join(s)
    }
    fn cmd(&self, args: &[&str]) -> (i32, String, String) {
        // assert_cmd's Command for its timeout.
        let out = assert_cmd::Command::from_std(fsbench())
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
    /// Nothing outside `work` (where the bundle itself lies) and no leftover private directory.
    fn assert_nothing_written(&self, case: &str) {
        let listing = |d: &str| {
            std::fs::read_dir(self.p(d))
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
        };
        assert!(listing("outside").is_empty(), "{case}: wrote outside: {:?}", listing("outside"));
        assert_eq!(std::fs::read(self.p("canary")).unwrap(), CANARY, "{case}: the canary changed");
        assert!(listing("tmp").is_empty(), "{case}: private directory left behind: {:?}", listing("tmp"));
        assert_eq!(listing("work"), ["lab.fsb"], "{case}: wrote into the working directory");
        assert!(
            !self.dir.path().join("pwned").exists() && !Path::new("/tmp/pwned-by-fsbench-bundle").exists(),
            "{case}"
        );
    }
}

/// Both `verify` and `run` refuse `bytes` with exit 2 and a message containing every `expect`.
fn refused(case: &str, bytes: &[u8], expect: &[&str]) {
    let sb = Sandbox::new();
    std::fs::write(sb.p("work/lab.fsb"), bytes).unwrap();
    for args in [&["bundle", "verify", "lab.fsb"][..], &["bundle", "run", "lab.fsb", "--quiet", "--out", "res"][..]] {
        let t = Instant::now();
        let (code, stdout, stderr) = sb.cmd(args);
        assert_eq!(code, 2, "{case}: {args:?} exit {code}\nstdout: {stdout}\nstderr: {stderr}");
        for e in expect {
            assert!(stderr.contains(e), "{case}: {args:?}: stderr lacks `{e}`:\n{stderr}");
        }
        assert!(t.elapsed() < Duration::from_secs(60), "{case}: took {:?}", t.elapsed());
        sb.assert_nothing_written(case);
    }
}

fn entry(name: &str, typ: u8, link: &str) -> E {
    E {
        name: name.as_bytes().to_vec(),
        typ,
        mode: 0o644,
        data: Vec::new(),
        link: link.as_bytes().to_vec(),
        listed: false,
    }
}

#[test]
fn absolute_path() {
    let abs = "/tmp/pwned-by-fsbench-bundle";
    refused("absolute path", &bundle(vec![unlisted(file(abs, b"x"))]), &[abs, "absolute path"]);
}

#[test]
fn dot_dot() {
    refused("..", &bundle(vec![unlisted(file("../../pwned", b"x"))]), &["`../../pwned`", "`..`"]);
}

#[test]
fn empty_name() {
    refused("empty name", &bundle(vec![unlisted(file("", b"x"))]), &["refusing archive entry ``", "empty name"]);
}

#[test]
fn symlink_escaping() {
    let b = bundle(vec![entry("escape", b'2', "../../outside"), unlisted(file("escape/pwned", b"x"))]);
    refused("symlink", &b, &["`escape`", "symlink target `../../outside` leaves the archive"]);
}

#[test]
fn symlink_inside_is_still_not_a_bundle_file() {
    refused("inner symlink", &bundle(vec![entry("alias", b'2', "scenario.toml")]), &["`alias`", "only regular files"]);
}

#[test]
fn hardlink_escaping() {
    refused(
        "hardlink",
        &bundle(vec![entry("hl", b'1', "../../outside/x")]),
        &["entry `hl`", "target `../../outside/x`", "`..`"],
    );
    refused(
        "hardlink abs",
        &bundle(vec![entry("hl", b'1', "/etc/passwd")]),
        &["entry `hl`", "`/etc/passwd`", "absolute path"],
    );
}

#[test]
fn scenario_that_does_not_validate() {
    let b = bundle_with(vec![], |_| {}, &SCENARIO.replace("repetitions = 1", "repetitions = 1\nrepetitons = 2"));
    refused("bad scenario", &b, &["scenario.toml", "repetitons"]);
}

#[test]
fn device_node() {
    refused("device", &bundle(vec![entry("null", b'3', "")]), &["`null`", "device nodes"]);
}

#[test]
fn setuid_bit() {
    let mut e = file("tool", b"#!/bin/sh\n");
    e.mode = 0o4755;
    refused("setuid", &bundle(vec![e]), &["`tool`", "setuid"]);
}

#[test]
fn file_not_in_manifest() {
    refused(
        "unlisted",
        &bundle(vec![unlisted(file("extra.txt", b"surprise"))]),
        &["`extra.txt`", "not listed in manifest.json"],
    );
}

#[test]
fn checksum_mismatch() {
    let b = bundle_with(vec![], |m| m["files"][0]["sha256"] = serde_json::json!("0".repeat(64)), SCENARIO);
    refused("checksum", &b, &["`scenario.toml`", "checksum mismatch"]);
}

#[test]
fn size_mismatch() {
    let b = bundle_with(vec![], |m| m["files"][0]["size"] = serde_json::json!(3), SCENARIO);
    refused("size", &b, &["`scenario.toml`", "differs from the 3 bytes"]);
}

#[test]
fn listed_but_missing() {
    let b = bundle_with(
        vec![],
        |m| {
            m["files"].as_array_mut().unwrap().push(serde_json::json!({"path": "zz", "size": 0, "sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}))
        },
        SCENARIO,
    );
    refused("missing", &b, &["`zz`", "not in the bundle"]);
}

#[test]
fn newer_format_version() {
    let b = bundle_with(vec![], |m| m["format"] = serde_json::json!(2), SCENARIO);
    refused("format", &b, &["bundle format 2 is newer", "upgrade fsbench"]);
}

#[test]
fn manifest_not_first() {
    let mut tar = Vec::new();
    append(&mut tar, &file("scenario.toml", SCENARIO.as_bytes()));
    tar.extend_from_slice(&[0u8; 1024]);
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    gz.write_all(&tar).unwrap();
    refused("no manifest", &gz.finish().unwrap(), &["first entry is `scenario.toml`, not manifest.json"]);
}

#[test]
fn gzip_bomb() {
    // 256 MiB of header inflating from about 256 KiB: stopped at the cap (about 1 MiB: the declared bytes plus headers).
    let b = make_gzip_bomb(256 << 20);
    assert!(b.len() < 2 << 20, "bomb is {} bytes", b.len());
    refused("gzip bomb", &b, &["decompressed stream exceeds"]);
}

#[test]
fn declared_bomb() {
    // A manifest that honestly declares 2 GiB is refused before anything is inflated.
    let b = bundle_with(
        vec![],
        |m| {
            m["files"]
                .as_array_mut()
                .unwrap()
                .push(serde_json::json!({"path": "big", "size": 2u64 << 30, "sha256": "0".repeat(64)}))
        },
        SCENARIO,
    );
    refused("declared bomb", &b, &["declares 2147", "decompression bomb"]);
}

#[test]
fn too_many_entries() {
    let many: Vec<E> = (0..10_001).map(|i| file(&format!("f/{i}"), b"")).collect();
    refused("entries", &bundle(many), &["10002 files", "too many entries"]);
}

#[test]
fn too_deep_path() {
    let deep = "a/b/c/d/e/f/g/h/i/j/k";
    refused("deep", &bundle(vec![unlisted(file(deep, b"x"))]), &[deep, "path depth"]);
}

#[test]
fn overlong_path() {
    let long = format!("{}/x", "n".repeat(300));
    refused("long", &bundle(vec![unlisted(file(&long, b"x"))]), &[&long[..40], "path length"]);
}

#[test]
fn exec_step_needs_allow_exec() {
    let scenario = "schema = 1\nname = \"ex\"\n[matrix]\nfs = [\"ext4\"]\n[backing]\nkind = \"dir\"\n[workload]\nkind = \"steps\"\niterations = 1\n\
                    steps = [{ op = \"exec\", argv = [\"touch\", \"pwned\"] }]\n";
    let sb = Sandbox::new();
    std::fs::write(sb.p("work/lab.fsb"), bundle_with(vec![], |_| {}, scenario)).unwrap();
    let (code, stdout, stderr) = sb.cmd(&["bundle", "verify", "lab.fsb"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("exec steps:  1 (refused unless --allow-exec): `touch pwned`"), "{stdout}");
    let (code, _, stderr) = sb.cmd(&["bundle", "run", "lab.fsb", "--quiet", "--out", "res"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("refusing bundle step `exec`") && stderr.contains("--allow-exec"), "{stderr}");
    sb.assert_nothing_written("exec");
}

#[test]
fn a_fio_job_that_runs_a_command_needs_allow_exec() {
    // fio's exec_prerun runs a shell command before the job: a bundle's fio job may only use
    // the allow-listed options (bundle::fio_job), the rest is refused with the option named.
    let scenario = "schema = 1\nname = \"fx\"\n[matrix]\nfs = [\"ext4\"]\n[backing]\nkind = \"dir\"\n[workload]\nkind = \"fio\"\n\
                    duration = \"1s\"\njob = \"[w]\\nrw=write\\nsize=1m\\nexec_prerun=touch pwned\"\n";
    let sb = Sandbox::new();
    std::fs::write(sb.p("work/lab.fsb"), bundle_with(vec![], |_| {}, scenario)).unwrap();
    let (code, stdout, stderr) = sb.cmd(&["bundle", "verify", "lab.fsb"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("fio job:     `rw=write`, `size=1m`, `exec_prerun=touch pwned`"), "{stdout}");
    assert!(stdout.contains("fio refused: `exec_prerun=touch pwned` (not on the allow-list"), "{stdout}");
    let (code, _, stderr) = sb.cmd(&["bundle", "run", "lab.fsb", "--quiet", "--out", "res"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("refusing fio option `exec_prerun=touch pwned`") && stderr.contains("--allow-exec"),
        "{stderr}"
    );
    sb.assert_nothing_written("fio exec_prerun");
}

/// `bundle verify --json` in `sb`: exit code and the document, checked against its schema.
fn verify_json(sb: &Sandbox, case: &str) -> (i32, serde_json::Value) {
    let (code, stdout, stderr) = sb.cmd(&["bundle", "verify", "lab.fsb", "--json"]);
    assert!(code == 0 || code == 2, "{case}: exit {code}\n{stderr}");
    (code, crate::schemas::conforming("bundle-verify.schema.json", stdout.as_bytes(), case))
}

#[test]
fn verify_json_says_what_the_bundle_asks_with_the_exit_codes_of_the_text() {
    let exec = "schema = 1\nname = \"ex\"\n[matrix]\nfs = [\"ext4\"]\n[backing]\nkind = \"dir\"\n[workload]\nkind = \"steps\"\niterations = 1\n\
                steps = [{ op = \"exec\", argv = [\"touch\", \"pwned\"] }]\n";
    let sb = Sandbox::new();
    std::fs::write(sb.p("work/lab.fsb"), bundle_with(vec![], |_| {}, exec)).unwrap();
    let (code, doc) = verify_json(&sb, "exec");
    assert_eq!(code, 0);
    assert_eq!(doc["scenario"], "ex");
    assert_eq!(doc["workload"], "steps");
    assert_eq!(doc["exec_steps"], serde_json::json!(["touch pwned"]));
    assert_eq!(doc["flags_needed"], serde_json::json!(["--allow-exec"]));
    assert_eq!(doc["refused"], serde_json::json!([]));
    assert_eq!(doc["backing"], serde_json::json!({"kind": "dir", "path": null}));
    assert_eq!(doc["files"], 1);
    sb.assert_nothing_written("exec --json");

    let device = SCENARIO.replace("kind = \"dir\"", "kind = \"device\"\npath = \"/dev/fsbench-no-such-disk\"");
    let sb = Sandbox::new();
    std::fs::write(sb.p("work/lab.fsb"), bundle_with(vec![], |_| {}, &device)).unwrap();
    let (code, doc) = verify_json(&sb, "device");
    assert_eq!(code, 0);
    assert_eq!(doc["backing"]["kind"], "device");
    assert_eq!(doc["flags_needed"], serde_json::json!(["--allow-device /dev/fsbench-no-such-disk"]));
    assert_eq!(doc["cells"], 1);

    // Refused whatever the flags: exit 2 as without --json, the reasons in the document too.
    let mkfs = SCENARIO.replace("[backing]", "[filesystems.ext4]\nmkfs = [\"-d\", \"/etc\"]\n[backing]");
    let sb = Sandbox::new();
    std::fs::write(sb.p("work/lab.fsb"), bundle_with(vec![], |_| {}, &mkfs)).unwrap();
    let (code, doc) = verify_json(&sb, "mkfs");
    assert_eq!(code, 2);
    assert_eq!(doc["filesystems"][0]["mkfs"], serde_json::json!(["-d", "/etc"]));
    let refused = doc["refused"].as_array().unwrap();
    assert!(refused.len() == 1 && refused[0].as_str().unwrap().contains("refusing mkfs argument `-d`"), "{doc}");
    let (text_code, _, _) = sb.cmd(&["bundle", "verify", "lab.fsb"]);
    assert_eq!(text_code, 2, "the same exit code as the text");
    sb.assert_nothing_written("mkfs --json");
}

#[test]
fn archive_outside_the_bundle() {
    let scenario = "schema = 1\nname = \"ar\"\n[matrix]\nfs = [\"ext4\"]\n[backing]\nkind = \"dir\"\n[archive]\npath = \"/etc/hostname\"\n\
                    [workload]\nkind = \"steps\"\niterations = 1\nsteps = [{ op = \"untar\", archive = \"hostname\" }]\n";
    refused(
        "archive",
        &bundle_with(vec![], |_| {}, scenario),
        &["[archive] path `/etc/hostname` is not a file of the bundle"],
    );
}

#[test]
fn backing_path_chosen_by_the_bundle() {
    let scenario = SCENARIO.replace("kind = \"dir\"", "kind = \"dir\"\npath = \"/tmp\"");
    let sb = Sandbox::new();
    std::fs::write(sb.p("work/lab.fsb"), bundle_with(vec![], |_| {}, &scenario)).unwrap();
    let (code, _, stderr) = sb.cmd(&["bundle", "run", "lab.fsb", "--quiet", "--out", "res"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("refusing backing.path `/tmp`"), "{stderr}");
    sb.assert_nothing_written("backing path");
}

#[test]
fn device_backing_needs_allow_device() {
    let scenario = SCENARIO.replace("kind = \"dir\"", "kind = \"device\"\npath = \"/dev/fsbench-no-such-disk\"");
    let sb = Sandbox::new();
    std::fs::write(sb.p("work/lab.fsb"), bundle_with(vec![], |_| {}, &scenario)).unwrap();
    let (code, stdout, stderr) = sb.cmd(&["bundle", "verify", "lab.fsb"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("devices:     /dev/fsbench-no-such-disk (FORMATTED"), "{stdout}");
    let (code, _, stderr) = sb.cmd(&["bundle", "run", "lab.fsb", "--quiet", "--out", "res"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("refusing backing device /dev/fsbench-no-such-disk"), "{stderr}");
    sb.assert_nothing_written("device");
}

/// Regression (security review): mkfs.btrfs formats extra devices named as arguments.
#[test]
fn mkfs_arguments_naming_a_device_are_refused() {
    let scenario = "schema = 1\nname = \"fmt\"\n[matrix]\nfs = [\"btrfs\"]\n[filesystems.btrfs]\nmkfs = [\"-f\", \"/dev/loop0\"]\n\
                    [backing]\nkind = \"tmpfs-loop\"\n[workload]\nkind = \"lat_fs\"\n";
    let sb = Sandbox::new();
    std::fs::write(sb.p("work/lab.fsb"), bundle_with(vec![], |_| {}, scenario)).unwrap();
    // verify says in advance what run will refuse, and exits 2 like it.
    let (code, stdout, stderr) = sb.cmd(&["bundle", "verify", "lab.fsb"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.contains("btrfs: mkfs [\"-f\", \"/dev/loop0\"]"), "verify shows the arguments: {stdout}");
    assert!(stdout.contains("refused:     1 (the bundle cannot run here)"), "{stdout}");
    assert!(stderr.contains("refusing mkfs argument `/dev/loop0` of filesystem btrfs"), "{stderr}");
    let (code, _, stderr) = sb.cmd(&["bundle", "run", "lab.fsb", "--quiet", "--out", "res"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("refusing mkfs argument `/dev/loop0` of filesystem btrfs"), "{stderr}");
    sb.assert_nothing_written("mkfs device");
}

/// Regression (security review): bundled results land under `--out` by names from run.json.
#[test]
fn bundled_results_with_a_path_for_a_name_are_refused() {
    let run = serde_json::json!({
        "schema": 1, "tool_version": "0.1.0", "run_id": "pwned", "scenario_name": "/tmp/fsbench-victim-dir",
        "scenario_origin": "x.toml", "scenario_text": SCENARIO, "scenario_sha256": sha(SCENARIO.as_bytes()), "workload": "lat_fs",
        "label": null, "host": { "hostname": "h", "kernel_release": "r", "kernel_version": "v", "kernel_cmdline": "",
        "cpu_model": "c", "cpu_count": 1, "memory_bytes": 1 }, "started": "2025-01-01T00:00:00Z",
        "finished": "2025-01-01T00:00:01Z", "planned_cells": [], "interrupted": false
    });
    let run_json = serde_json::to_vec(&run).unwrap();
    let entries = vec![file("results/tiny/pwned/run.json", &run_json)];
    let sb = Sandbox::new();
    std::fs::write(
        sb.p("work/lab.fsb"),
        bundle_with(entries, |m| m["results"] = serde_json::json!("results/tiny/pwned"), SCENARIO),
    )
    .unwrap();
    let (code, _, stderr) = sb.cmd(&["bundle", "run", "lab.fsb", "--quiet", "--out", "res"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("scenario name `/tmp/fsbench-victim-dir` in run.json is not a plain name"), "{stderr}");
    assert!(!Path::new("/tmp/fsbench-victim-dir").exists());
}

/// A gzip'd tar of raw entries (for a fixture archive inside a bundle).
fn tgz(entries: &[E]) -> Vec<u8> {
    let mut tar = Vec::new();
    for e in entries {
        append(&mut tar, e);
    }
    tar.extend_from_slice(&[0u8; 1024]);
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    gz.write_all(&tar).unwrap();
    gz.finish().unwrap()
}

/// A steps scenario untarring `fixtures/x.tar.gz`, carried by the bundle.
const UNTAR: &str = "schema = 1\nname = \"ut\"\n[matrix]\nfs = [\"ext4\"]\n[backing]\nkind = \"dir\"\n[archive]\npath = \"fixtures/x.tar.gz\"\n\
                     [workload]\nkind = \"steps\"\niterations = 1\nsteps = [{ op = \"untar\", archive = \"x.tar.gz\" }]\n";

/// Class: safe extraction. A fixture archive whose `../` link climbs out of the tree is
/// refused by verify and at the start of run (exit 2, never a late cell failure), naming
/// the archive and the entry; nothing is written through it.
#[test]
fn fixture_archive_with_an_escaping_dotdot_link() {
    let inner = tgz(&[
        entry("linux/include/asm", b'2', "../../../../canary"),
        file("linux/include/asm/pwned", b"x"),
        file("linux/README", b"ok"),
    ]);
    let b = bundle_with(vec![file("fixtures/x.tar.gz", &inner)], |_| {}, UNTAR);
    refused(
        "fixture escaping link",
        &b,
        &[
            "fixture fixtures/x.tar.gz: refusing archive entry `linux/include/asm`",
            "symlink target `../../../../canary` leaves the archive (from `linux/include`)",
            "`linux/include/asm/pwned`: path goes through the symbolic link `linux/include/asm`",
        ],
    );
}

/// Class: safe extraction. A hard link to an in-tree `../` link, placed higher up, would be
/// a second link climbing out: judged again where it lands.
#[test]
fn fixture_archive_hard_link_rehoming_a_symlink() {
    let inner = tgz(&[entry("a/b/up", b'2', "../c"), entry("h", b'1', "a/b/up")]);
    let b = bundle_with(vec![file("fixtures/x.tar.gz", &inner)], |_| {}, UNTAR);
    refused("hard link to symlink", &b, &["refusing archive entry `h`", "hard link to the symlink `a/b/up`"]);
}

/// Class: untrusted options. Mount options that name files or devices are refused by name.
#[test]
fn mount_options_naming_devices_or_labels() {
    for (fs, opt) in [
        ("xfs", "logdev=/dev/sdb"),
        ("ext4", "journal_path=/dev/sdc"),
        ("ext4", "LABEL=root"),
        ("btrfs", "device=disk"),
    ] {
        let scenario = SCENARIO
            .replace("fs = [\"ext4\"]", &format!("fs = [\"{fs}\"]"))
            .replace("[backing]", &format!("[filesystems.{fs}]\nmount = [\"{opt}\"]\n[backing]"));
        refused(
            opt,
            &bundle_with(vec![], |_| {}, &scenario),
            &[&format!("refusing mount option `{opt}` of filesystem {fs}")],
        );
    }
}

/// Class: untrusted options. mkfs arguments that read host files (mke2fs -d) are refused by name.
#[test]
fn mkfs_root_directory_argument() {
    let scenario = SCENARIO.replace("[backing]", "[filesystems.ext4]\nmkfs = [\"-d\", \"/root\"]\n[backing]");
    refused("mkfs -d", &bundle_with(vec![], |_| {}, &scenario), &["refusing mkfs argument `-d` of filesystem ext4"]);
}

/// Class: untrusted scenario. A matrix too large to plan is refused before any cell is allocated.
#[test]
fn matrix_beyond_the_cap() {
    let fs: Vec<String> = (0..200).map(|i| format!("\"f{i}\"")).collect();
    let tasks: Vec<String> = (1..=600).map(|i| i.to_string()).collect();
    let scenario = SCENARIO
        .replace("fs = [\"ext4\"]", &format!("fs = [{}]", fs.join(", ")))
        .replace("tasks = [1]", &format!("tasks = [{}]", tasks.join(", ")));
    refused(
        "matrix cap",
        &bundle_with(vec![], |_| {}, &scenario),
        &["the matrix expands to 200 × 1 × 1 × 600 × 1 cells", "more than the 100000"],
    );
}

/// Class: every manifest field is a path. A `results` field that climbs out is refused by name.
#[test]
fn manifest_results_field_with_dotdot() {
    let b = bundle_with(vec![], |m| m["results"] = serde_json::json!("results/../../outside"), SCENARIO);
    refused("results field", &b, &["`results` `results/../../outside`", "`..`"]);
}

/// Class: verify tells the truth. `[[kernels]]` are shown by verify and need --allow-kernels to run.
#[test]
fn kernels_need_allow_kernels() {
    let scenario = format!("{SCENARIO}[[kernels]]\nlabel = \"K1\"\nimage = \"/boot/vmlinuz-none\"\n");
    let sb = Sandbox::new();
    std::fs::write(sb.p("work/lab.fsb"), bundle_with(vec![], |_| {}, &scenario)).unwrap();
    let (code, stdout, stderr) = sb.cmd(&["bundle", "verify", "lab.fsb"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("kernels:     `K1=/boot/vmlinuz-none` in qemu (refused unless --allow-kernels)"),
        "{stdout}"
    );
    let (code, _, stderr) = sb.cmd(&["bundle", "run", "lab.fsb", "--quiet", "--out", "res"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("refusing [[kernels]]") && stderr.contains("--allow-kernels"), "{stderr}");
    sb.assert_nothing_written("kernels");
}

/// Class: text from result files. A packed run's label and host with terminal escapes are
/// shown escaped by verify.
#[test]
fn control_characters_in_packed_results_are_escaped() {
    let run = serde_json::json!({
        "schema": 1, "tool_version": "0.1.0", "run_id": "r1", "scenario_name": "tiny",
        "scenario_origin": "x.toml", "scenario_text": SCENARIO, "scenario_sha256": sha(SCENARIO.as_bytes()), "workload": "lat_fs",
        "label": "EVIL\u{1b}]0;pwned\u{7}", "host": { "hostname": "h\u{1b}[2J", "kernel_release": "r", "kernel_version": "v",
        "kernel_cmdline": "", "cpu_model": "c", "cpu_count": 1, "memory_bytes": 1 }, "started": "2025-01-01T00:00:00Z",
        "finished": "2025-01-01T00:00:01Z", "planned_cells": [], "interrupted": false
    });
    let entries = vec![file("results/tiny/r1/run.json", &serde_json::to_vec(&run).unwrap())];
    let sb = Sandbox::new();
    std::fs::write(
        sb.p("work/lab.fsb"),
        bundle_with(entries, |m| m["results"] = serde_json::json!("results/tiny/r1"), SCENARIO),
    )
    .unwrap();
    let (code, stdout, stderr) = sb.cmd(&["bundle", "verify", "lab.fsb"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stdout.contains('\u{1b}') && !stdout.contains('\u{7}'), "raw control characters printed: {stdout:?}");
    assert!(stdout.contains("label EVIL\\u{1b}]0;pwned\\u{7}, host h\\u{1b}[2J"), "{stdout}");
    sb.assert_nothing_written("escapes");
}

/// Class: every check before the run. A scenario that is not UTF-8 is a bad bundle (exit 2).
#[test]
fn scenario_that_is_not_utf8() {
    let mut entries = vec![E { data: b"schema = 1\nname = \"\xff\xfe\"\n".to_vec(), ..file("scenario.toml", b"") }];
    let m = manifest_for(&entries);
    let mut tar = Vec::new();
    append(&mut tar, &file("manifest.json", &serde_json::to_vec_pretty(&m).unwrap()));
    append(&mut tar, &entries.remove(0));
    refused("non-UTF-8 scenario", &tgz_raw(tar), &["refusing bundle entry `scenario.toml`", "not UTF-8"]);
}

fn tgz_raw(mut tar: Vec<u8>) -> Vec<u8> {
    tar.extend_from_slice(&[0u8; 1024]);
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    gz.write_all(&tar).unwrap();
    gz.finish().unwrap()
}

/// `bundle run` in a fresh sandbox with `flags`: exit code and stderr; nothing written outside.
fn run_with(case: &str, scenario: &str, flags: &[&str]) -> (i32, String) {
    let sb = Sandbox::new();
    std::fs::write(sb.p("work/lab.fsb"), bundle_with(vec![], |_| {}, scenario)).unwrap();
    let mut args = vec!["bundle", "run", "lab.fsb", "--quiet", "--out", "res"];
    args.extend_from_slice(flags);
    let (code, _, stderr) = sb.cmd(&args);
    sb.assert_nothing_written(case);
    (code, stderr)
}

/// `bundle verify` of `scenario` in a fresh sandbox: exit code, stdout and stderr.
fn verify(scenario: &str) -> (i32, String, String) {
    let sb = Sandbox::new();
    std::fs::write(sb.p("work/lab.fsb"), bundle_with(vec![], |_| {}, scenario)).unwrap();
    let out = sb.cmd(&["bundle", "verify", "lab.fsb"]);
    sb.assert_nothing_written("verify");
    out
}

/// Security review, round two: a bundle's `[sysctl]` was applied as root with no flag and no
/// allow-list; `kernel.core_pattern` set to a pipe ran the bundle's command as uid 0.
/// Host-wide keys are refused by verify and run, and --allow-sysctl does not lift that,
/// whether or not a `[filesystems]` entry would carry them into a cell.
#[test]
fn host_wide_sysctls_are_refused_even_with_allow_sysctl() {
    for (key, value) in [
        ("kernel.core_pattern", "\"|/tmp/pwned-by-fsbench-bundle %p\""),
        ("kernel.modprobe", "\"/tmp/pwned-by-fsbench-bundle\""),
        ("kernel.panic_on_oops", "1"),
        ("vm.overcommit_memory", "1"),
        ("vm.nr_hugepages", "100000"),
        ("fs.protected_symlinks", "0"),
        ("net.ipv4.ip_forward", "1"),
    ] {
        for fs_entry in ["", "[filesystems.ext4]\nmount = [\"noatime\"]\n"] {
            let scenario =
                SCENARIO.replace("[backing]", &format!("{fs_entry}[sysctl]\n\"{key}\" = {value}\n[backing]"));
            let b = bundle_with(vec![], |_| {}, &scenario);
            refused(key, &b, &[&format!("refusing sysctl `{key}`"), "no bundle may change"]);
            let (code, stderr) = run_with(key, &scenario, &["--allow-sysctl"]);
            assert_eq!(code, 2, "{key} with --allow-sysctl: {stderr}");
            assert!(stderr.contains(&format!("refusing sysctl `{key}`")), "{stderr}");
        }
    }
    assert_eq!(std::fs::read_to_string("/proc/sys/kernel/core_pattern").map(|p| p.contains("pwned")).ok(), Some(false));
}

/// An allow-listed knob is listed by verify with its flag and refused by run without it;
/// a value outside its range, or not an integer, is refused whatever the flags.
#[test]
fn allowed_sysctls_need_the_flag_and_a_value_in_range() {
    let scenario = SCENARIO.replace("[backing]", "[sysctl]\n\"vm.dirty_ratio\" = 10\n[backing]");
    let (code, stdout, stderr) = verify(&scenario);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("sysctl:      1 (refused unless --allow-sysctl): vm.dirty_ratio = 10"), "{stdout}");
    assert!(stdout.contains("flags:       --allow-sysctl"), "{stdout}");
    let (code, stderr) = run_with("dirty_ratio", &scenario, &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("refusing [sysctl]") && stderr.contains("--allow-sysctl"), "{stderr}");
    for value in ["1000", "0", "-5", "\"10; echo pwned\"", "\"0x10\""] {
        let scenario = SCENARIO.replace("[backing]", &format!("[sysctl]\n\"vm.dirty_ratio\" = {value}\n[backing]"));
        let b = bundle_with(vec![], |_| {}, &scenario);
        refused(value, &b, &["refusing sysctl `vm.dirty_ratio`", "decimal integer from 1 to 100"]);
        let (code, stderr) = run_with(value, &scenario, &["--allow-sysctl"]);
        assert_eq!(code, 2, "{value}: {stderr}");
    }
}

/// `MemAvailable` of this host, bytes.
fn mem_available() -> u64 {
    let m = std::fs::read_to_string("/proc/meminfo").unwrap();
    let kb: u64 = m
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .unwrap()
        .trim()
        .trim_end_matches(" kB")
        .trim()
        .parse()
        .unwrap();
    kb * 1024
}

/// Security review, round two: a bundle chose the size of RAM-backed images (16 TiB, × tasks in
/// layout M) and filled the host's memory. One cell's images are checked against half of
/// MemAvailable before anything is allocated: an image that fits alone but not four times
/// over (layout M, 4 tasks) is refused, with the sizes named, unless --allow-size.
#[test]
fn ram_backed_images_beyond_the_budget_are_refused_before_allocation() {
    let per_task = mem_available() / 6 / (1 << 20);
    for (case, sizes) in [
        ("x tasks", format!("image_size = {{ M = \"{per_task}MiB\", S = \"1GiB\" }}")),
        ("16 TiB", "image_size = \"16TiB\"".to_string()),
    ] {
        let scenario = SCENARIO
            .replace("tasks = [1]", "tasks = [4]\nlayout = [\"M\"]")
            .replace("kind = \"dir\"", &format!("kind = \"tmpfs-loop\"\n{sizes}"));
        let (code, stdout, stderr) = verify(&scenario);
        assert_eq!(code, 0, "{case}: {stderr}");
        assert!(
            stdout.contains("memory:      one cell up to") && stdout.contains("(refused unless --allow-size)"),
            "{case}: {stdout}"
        );
        assert!(stdout.contains("RAM-backed images ") && stdout.contains(": 4 × "), "{case}: {stdout}");
        assert!(stdout.contains(" (ext4-M-qoff-t4-open_close)"), "{case}: {stdout}");
        let (code, stderr) = run_with(case, &scenario, &[]);
        assert_eq!(code, 2, "{case}: {stderr}");
        for want in ["refusing the bundle's sizes", "RAM-backed images", "4 × ", "MemAvailable", "--allow-size"] {
            assert!(stderr.contains(want), "{case}: lacks `{want}`: {stderr}");
        }
    }
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mounts.contains("fsbench-hostile-"), "a tmpfs was mounted: {mounts}");
}

/// Security review, round two: a 13 KB bundle declared a fixture of gigabytes; its expanded bytes
/// count against the same budget (here on top of an image that fits alone).
#[test]
fn a_fixture_expanding_beyond_the_budget_is_refused() {
    let generated = "schema = 1\nname = \"gen\"\n[matrix]\nfs = [\"ext4\"]\n[backing]\nkind = \"dir\"\n\
               [archive]\ngenerate = \"linux-2.5.63\"\nscale = 10\n[workload]\nkind = \"steps\"\niterations = 1\n\
               steps = [{ op = \"untar\", archive = \"linux-2.5.63.tar.gz\" }]\n";
    let (code, stdout, stderr) = verify(generated);
    assert_eq!(code, 0, "{stderr}");
    // With a `dir` backing the fixture is all the cell holds: the total is its size.
    let line = stdout.lines().find(|l| l.contains("fixture expanded")).unwrap_or_else(|| panic!("{stdout}"));
    let fixture: u64 = line
        .split("one cell up to ")
        .nth(1)
        .unwrap()
        .split(" (")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(fixture > 1 << 30, "scale 10 is gigabytes: {fixture}");
    // Images alone within the cap, images and fixture together beyond it.
    let cap = mem_available() / 2;
    let image = cap.saturating_sub(fixture / 2).max(64 << 20) >> 20;
    let scenario = generated.replace("kind = \"dir\"", &format!("kind = \"tmpfs-loop\"\nimage_size = \"{image}MiB\""));
    let (code, stderr) = run_with("fixture", &scenario, &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("refusing the bundle's sizes") && stderr.contains("fixture expanded"), "{stderr}");
}

/// Security review, round two: allow-listed options turned any filesystem error the workload
/// reaches into a panic of the host. Refused in every spelling, by verify and run.
#[test]
fn panic_words_in_mount_and_mkfs_options() {
    for (fs, key, value, named) in [
        ("ext4", "mount", "[\"errors=panic\"]", "mount option `errors=panic`"),
        ("ext2", "mount", "[\"errors=panic\"]", "mount option `errors=panic`"),
        ("btrfs", "mount", "[\"fatal_errors=panic\"]", "mount option `fatal_errors=panic`"),
        ("ext4", "mkfs", "[\"-e\", \"panic\"]", "mkfs argument `panic`"),
        ("ext4", "mkfs", "[\"-epanic\"]", "mkfs argument `-epanic`"),
    ] {
        let scenario = SCENARIO
            .replace("fs = [\"ext4\"]", &format!("fs = [\"{fs}\"]"))
            .replace("[backing]", &format!("[filesystems.{fs}]\n{key} = {value}\n[backing]"));
        refused(named, &bundle_with(vec![], |_| {}, &scenario), &[named, "panic of the whole machine"]);
    }
}

/// New users' report: the allow-lists were looked up by the filesystem's name, so a
/// variant `[filesystems.ext4-nodelalloc] type = "ext4"` had none and was refused, and
/// would equally have had none to refuse with. Judged by its type now, both ways.
#[test]
fn a_variant_is_judged_by_its_filesystem_type() {
    let variant = |mkfs: &str, mount: &str| {
        SCENARIO.replace("fs = [\"ext4\"]", "fs = [\"ext4\", \"ext4-nodelalloc\"]").replace(
            "[backing]",
            &format!("[filesystems.ext4-nodelalloc]\ntype = \"ext4\"\nmkfs = {mkfs}\nmount = {mount}\n[backing]"),
        )
    };
    let ok = variant("[\"-E\", \"lazy_itable_init=0\"]", "[\"nodelalloc\", \"noatime\"]");
    let (code, stdout, stderr) = verify(&ok);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("refused:     nothing"), "{stdout}");
    for (mkfs, mount, named) in [
        ("[\"-d\", \"/root\"]", "[]", "refusing mkfs argument `-d` of filesystem ext4-nodelalloc (type ext4)"),
        ("[]", "[\"journal_path=/dev/sdb\"]", "`journal_path=/dev/sdb` of filesystem ext4-nodelalloc (type ext4)"),
        ("[]", "[\"errors=panic\"]", "`errors=panic` of filesystem ext4-nodelalloc (type ext4)"),
    ] {
        refused(named, &bundle_with(vec![], |_| {}, &variant(mkfs, mount)), &[named]);
    }
}

/// Security review, round two: verify lists every tunable, size and privilege with the flag that unlocks
/// it, in the text and in `flags_needed` of --json.
#[test]
fn verify_lists_every_ask_with_its_flag() {
    let scenario = "schema = 1\nname = \"ask\"\n[matrix]\nfs = [\"ext4\"]\nlayout = [\"M\"]\ntasks = [2]\n\
                    [sysctl]\n\"vm.swappiness\" = 10\n[backing]\nkind = \"tmpfs-loop\"\nimage_size = \"16TiB\"\n\
                    [workload]\nkind = \"steps\"\niterations = 1\nsteps = [{ op = \"exec\", argv = [\"true\"] }]\n";
    let sb = Sandbox::new();
    std::fs::write(sb.p("work/lab.fsb"), bundle_with(vec![], |_| {}, scenario)).unwrap();
    let (code, stdout, stderr) = sb.cmd(&["bundle", "verify", "lab.fsb"]);
    assert_eq!(code, 0, "{stderr}");
    for want in [
        "sysctl:      1 (refused unless --allow-sysctl): vm.swappiness = 10",
        "exec steps:  1 (refused unless --allow-exec): `true`",
        "RAM-backed images 32.0 TiB: 2 × 16TiB (ext4-M-qoff-t2)",
        "(refused unless --allow-size)",
        "flags:       --allow-sysctl --allow-exec --allow-size",
    ] {
        assert!(stdout.contains(want), "lacks `{want}`:\n{stdout}");
    }
    let (code, doc) = verify_json(&sb, "asks");
    assert_eq!(code, 0);
    assert_eq!(doc["flags_needed"], serde_json::json!(["--allow-sysctl", "--allow-exec", "--allow-size"]));
    assert_eq!(doc["sysctl"], serde_json::json!([{"key": "vm.swappiness", "value": "10"}]));
    assert_eq!(doc["memory"]["images_bytes"], serde_json::json!(32u64 << 40));
    assert_eq!(doc["memory"]["over_budget"], true);
    sb.assert_nothing_written("asks");
}

/// Class: safe extraction (security review, round two). Names that clash (a file then a directory of
/// the same name, a directory then a file) or exceed NAME_MAX fail inside the cell when
/// extracted; verify's dry run makes the same per-entry decision, so it refuses them
/// up front with the entry named.
#[test]
fn fixture_archive_with_clashing_or_overlong_names() {
    let long = format!("linux/{}", "n".repeat(256));
    let cases: Vec<(&str, Vec<E>, Vec<String>)> = vec![
        (
            "file then directory",
            vec![file("linux/a", b"x"), entry("linux/a/", b'5', "")],
            vec!["refusing archive entry `linux/a/`".into(), "name clash: `linux/a` is already a file".into()],
        ),
        (
            "directory then file",
            vec![entry("linux/d/", b'5', ""), file("linux/d/x", b"x"), file("linux/d", b"y")],
            vec!["refusing archive entry `linux/d`".into(), "name clash: `linux/d` is already a directory".into()],
        ),
        (
            "file under a file",
            vec![file("linux/f", b"x"), file("linux/f/g", b"y")],
            vec!["refusing archive entry `linux/f/g`".into(), "name clash: `linux/f` is a file".into()],
        ),
        (
            "NAME_MAX",
            vec![file(&long, b"x")],
            vec![format!("refusing archive entry `{long}`"), "exceeds NAME_MAX (255)".into()],
        ),
        (
            "chained links",
            vec![entry("linux/d/l1", b'2', "../y"), entry("linux/d/l2", b'2', "l1/../../.."), file("linux/ok", b"x")],
            vec![
                "refusing archive entry `linux/d/l2`".into(),
                "leaves the archive (from `linux/d`) through the symbolic link `linux/d/l1`".into(),
            ],
        ),
    ];
    for (case, entries, expect) in cases {
        let b = bundle_with(vec![file("fixtures/x.tar.gz", &tgz(&entries))], |_| {}, UNTAR);
        let expect: Vec<&str> = expect.iter().map(String::as_str).collect();
        refused(case, &b, &expect);
    }
}

/// A bundle carrying a finished run of `SCENARIO` as `results/tiny/r1`.
fn bundle_with_results() -> Vec<u8> {
    let run = serde_json::json!({
        "schema": 1, "tool_version": "0.1.0", "run_id": "r1", "scenario_name": "tiny",
        "scenario_origin": "x.toml", "scenario_text": SCENARIO, "scenario_sha256": sha(SCENARIO.as_bytes()),
        "workload": "lat_fs", "label": "A", "host": { "hostname": "h", "kernel_release": "r", "kernel_version": "v",
        "kernel_cmdline": "", "cpu_model": "c", "cpu_count": 1, "memory_bytes": 1 }, "started": "2025-01-01T00:00:00Z",
        "finished": "2025-01-01T00:00:01Z", "planned_cells": [], "interrupted": false
    });
    let entries = vec![file("results/tiny/r1/run.json", &serde_json::to_vec(&run).unwrap())];
    bundle_with(entries, |m| m["results"] = serde_json::json!("results/tiny/r1"), SCENARIO)
}

/// Regression (security review, round two): `bundle run` imported its packed results with
/// path-following calls (`exists`, `create_dir_all`, `fs::copy`, `fs::write`), and checked
/// the owner only after writing. A link planted in the results root made root write the
/// bundle's bytes wherever it pointed; a directory of another user's was written into.
/// The import now goes through the result store: every directory under `--out` is opened
/// without following links and checked to be ours before anything is written.
#[test]
fn bundled_results_are_not_imported_through_a_link_planted_in_the_results_root() {
    let sb = Sandbox::new();
    std::fs::write(sb.p("work/lab.fsb"), bundle_with_results()).unwrap();
    std::fs::create_dir(sb.p("work/res")).unwrap();
    std::os::unix::fs::symlink("../../outside", sb.p("work/res/tiny")).unwrap();
    let (code, _, stderr) = sb.cmd(&["bundle", "run", "lab.fsb", "--quiet", "--out", "res"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("res/tiny") && stderr.contains("symbolic link"), "{stderr}");
    let outside: Vec<_> = std::fs::read_dir(sb.p("outside")).unwrap().collect();
    assert!(outside.is_empty(), "the import wrote through the link: {outside:?}");
    assert_eq!(std::fs::read(sb.p("canary")).unwrap(), CANARY);
}

/// The same attack with a directory of another user's in place of the link (or the
/// directory swapped in after fsbench made it): refused before anything is written there.
#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn bundled_results_are_not_imported_into_another_users_directory() {
    skip_unless_root!();
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    std::fs::write(sb.p("work/lab.fsb"), bundle_with_results()).unwrap();
    std::fs::create_dir_all(sb.p("work/res/tiny")).unwrap();
    std::os::unix::fs::chown(sb.p("work/res/tiny"), Some(65534), Some(65534)).unwrap();
    std::fs::set_permissions(sb.p("work/res/tiny"), std::fs::Permissions::from_mode(0o777)).unwrap();
    let (code, _, stderr) = sb.cmd(&["bundle", "run", "lab.fsb", "--quiet", "--out", "res"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("owned by uid 65534"), "{stderr}");
    assert_eq!(std::fs::read_dir(sb.p("work/res/tiny")).unwrap().count(), 0, "wrote into another user's directory");
}
