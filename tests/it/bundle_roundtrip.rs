//! A bundle packed here verifies and runs from another directory, its results compare
//! against the packer's, and packing is deterministic.

use std::io::Write;
use std::path::Path;
use std::process::Command;

use crate::support::sandbox::{cell_ids, cell_json, run_dirs};

const TINY: &str = "schema = 1\nname = \"tiny\"\n[matrix]\nfs = [\"ext4\"]\ntasks = [1]\ntest = [\"open_close\", \"write_truncate\"]\n\
                    [backing]\nkind = \"dir\"\n[workload]\nkind = \"lat_fs\"\nper_task_uid = false\nwarmup = \"0ms\"\nduration = \"20ms\"\nrepetitions = 3\ndisturbance = \"off\"\n";

/// `fsbench` run in `cwd`, with its cache in `cache` and no SOURCE_DATE_EPOCH.
fn fsbench_at(cwd: &Path, cache: &Path) -> Command {
    let mut c = crate::support::fsbench();
    c.current_dir(cwd).env("XDG_CACHE_HOME", cache).env_remove("SOURCE_DATE_EPOCH");
    c
}

fn ok(c: &mut Command) -> String {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{:?}: exit {:?}\nstdout: {}\nstderr: {}",
        c,
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn manifest_paths(bundle: &Path) -> Vec<String> {
    let gz = flate2::read::GzDecoder::new(std::fs::File::open(bundle).unwrap());
    let mut ar = tar::Archive::new(gz);
    ar.entries().unwrap().map(|e| e.unwrap().path().unwrap().to_string_lossy().into_owned()).collect()
}

#[test]
fn packed_here_runs_elsewhere_and_compares() {
    let t = tempfile::tempdir().unwrap();
    let (lab_a, lab_b, cache) = (t.path().join("lab-a"), t.path().join("lab-b"), t.path().join("cache"));
    std::fs::create_dir_all(&lab_a).unwrap();
    std::fs::create_dir_all(&lab_b).unwrap();
    std::fs::write(lab_a.join("tiny.toml"), TINY).unwrap();
    ok(fsbench_at(&lab_a, &cache).args(["run", "tiny.toml", "--quiet", "--out", "res", "--label", "A"]));
    let run_a = run_dirs(&lab_a.join("res")).pop().unwrap();
    ok(fsbench_at(&lab_a, &cache).args(["bundle", "pack", "tiny.toml", "-o", "lab.fsb", "--with-results"]).arg(&run_a));
    let entries = manifest_paths(&lab_a.join("lab.fsb"));
    assert_eq!(entries[0], "manifest.json");
    assert!(
        entries.iter().any(|e| e.ends_with("/run.json")) && entries.iter().any(|e| e.ends_with("open_close.json")),
        "{entries:?}"
    );

    std::fs::copy(lab_a.join("lab.fsb"), lab_b.join("lab.fsb")).unwrap();
    let v = ok(fsbench_at(&lab_b, &cache).args(["bundle", "verify", "lab.fsb"]));
    for want in [
        "bundle format 1",
        "scenario:    tiny (lat_fs), 2 cells",
        "filesystems: ext4",
        "needs root:  no",
        "exec steps:  none",
        "devices:     none",
        "kernels:     none",
        "(2 of 2 cells stored)",
        "label A, host ",
        "refused:     nothing",
    ] {
        assert!(v.contains(want), "verify lacks `{want}`:\n{v}");
    }
    let json = ok(fsbench_at(&lab_b, &cache).args(["bundle", "verify", "lab.fsb", "--json"]));
    let doc = crate::schemas::conforming("bundle-verify.schema.json", json.as_bytes(), "bundle verify --json");
    assert_eq!(doc["results"]["label"], "A", "{doc}");
    assert_eq!((doc["results"]["cells"].as_u64(), doc["results"]["planned"].as_u64()), (Some(2), Some(2)), "{doc}");
    assert!(doc["results"]["host"].as_str().is_some_and(|h| !h.is_empty()) && doc["results"]["kernel"].is_string());
    assert_eq!((doc["needs_root"].as_bool(), doc["cells"].as_u64()), (Some(false), Some(2)));
    assert_eq!(doc["flags_needed"], serde_json::json!([]));
    ok(fsbench_at(&lab_b, &cache).args(["bundle", "run", "lab.fsb", "--quiet", "--out", "res", "--label", "B"]));
    // Lab B now holds the packer's run (imported from the bundle) and its own.
    let runs = run_dirs(&lab_b.join("res"));
    assert_eq!(runs.len(), 2, "{runs:?}");
    let imported = runs.iter().find(|r| r.file_name() == run_a.file_name()).expect("packer's run imported");
    let run_b = runs.iter().find(|r| r.file_name() != run_a.file_name()).unwrap().clone();
    // The packer's run.json, marked as imported from the bundle (so never resumed).
    let json =
        |p: &std::path::Path| -> serde_json::Value { serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap() };
    let mut imported_meta = json(&imported.join("run.json"));
    assert_eq!(imported_meta["derived"], serde_json::json!({"kind": "imported", "from": ["lab.fsb"]}));
    imported_meta.as_object_mut().unwrap().remove("derived");
    assert_eq!(imported_meta, json(&run_a.join("run.json")));
    for id in cell_ids(&run_a) {
        let cell = format!("cells/{id}.json");
        assert_eq!(std::fs::read(imported.join(&cell)).unwrap(), std::fs::read(run_a.join(&cell)).unwrap(), "{cell}");
    }
    // An imported run is another lab's scenario: it is rerun through `bundle run`, not resumed.
    let out = fsbench_at(&lab_b, &cache).args(["run", "--resume"]).arg(imported).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("was imported from a bundle"));
    assert_eq!(std::fs::read_dir(run_b.join("cells")).unwrap().count(), 2);
    let cmp = ok(fsbench_at(&lab_b, &cache)
        .arg("compare")
        .arg(format!("A={}", imported.display()))
        .arg(format!("B={}", run_b.display())));
    assert!(cmp.contains("B/A-ext4-S-qoff"), "{cmp}");
    // The gate accepts the pair as input (the verdict depends on this machine's noise).
    let out = fsbench_at(t.path(), &cache)
        .arg("gate")
        .arg("--baseline")
        .arg(&run_a)
        .arg("--candidate")
        .arg(&run_b)
        .output()
        .unwrap();
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn packing_is_deterministic() {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("tiny.toml"), TINY).unwrap();
    let cache = t.path().join("cache");
    for epoch in [None, Some("1289476800")] {
        let mut bytes = Vec::new();
        for name in ["a.fsb", "b.fsb"] {
            let mut c = fsbench_at(t.path(), &cache);
            c.args(["bundle", "pack", "tiny.toml", "-o", name]);
            if let Some(e) = epoch {
                c.env("SOURCE_DATE_EPOCH", e);
            }
            ok(&mut c);
            std::thread::sleep(std::time::Duration::from_millis(1100));
            bytes.push(std::fs::read(t.path().join(name)).unwrap());
        }
        assert_eq!(bytes[0], bytes[1], "SOURCE_DATE_EPOCH {epoch:?}");
        // gzip header: no timestamp, no file name flag.
        assert_eq!(&bytes[0][4..8], &[0, 0, 0, 0]);
        assert_eq!(bytes[0][3] & 0x08, 0);
        let gz = flate2::read::GzDecoder::new(&bytes[0][..]);
        let mut ar = tar::Archive::new(gz);
        let mut e = ar.entries().unwrap();
        let mut first = e.next().unwrap().unwrap();
        assert_eq!(first.header().mtime().unwrap(), epoch.map(|e| e.parse().unwrap()).unwrap_or(0));
        let mut m = String::new();
        std::io::Read::read_to_string(&mut first, &mut m).unwrap();
        let created = if epoch.is_some() { "\"created\": \"2010-11-11T12:00:00Z\"" } else { "\"created\": null" };
        assert!(m.contains(created), "{m}");
    }
}

/// A tiny real tarball: two files.
fn small_archive(path: &Path) {
    let f = std::fs::File::create(path).unwrap();
    let gz = flate2::write::GzEncoder::new(f, flate2::Compression::default());
    let mut b = tar::Builder::new(gz);
    for (name, data) in [("src/a.c", &b"int a;\n"[..]), ("src/b.c", b"int b;\n")] {
        let mut h = tar::Header::new_ustar();
        h.set_path(name).unwrap();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_uid(0);
        h.set_gid(0);
        h.set_mtime(0);
        h.set_cksum();
        b.append(&h, data).unwrap();
    }
    b.into_inner().unwrap().finish().unwrap().flush().unwrap();
}

#[test]
fn real_archive_travels_as_a_file_and_generated_as_a_recipe() {
    let t = tempfile::tempdir().unwrap();
    let (lab_a, lab_b, cache) = (t.path().join("lab-a"), t.path().join("lab-b"), t.path().join("cache"));
    std::fs::create_dir_all(lab_a.join("data")).unwrap();
    std::fs::create_dir_all(&lab_b).unwrap();
    small_archive(&lab_a.join("data/small.tar.gz"));
    let steps = "schema = 1\nname = \"untar\"\n[matrix]\nfs = [\"ext4\"]\n[backing]\nkind = \"dir\"\npath = \"scratch\"\n\
                 [archive]\npath = \"data/small.tar.gz\"\n[workload]\nkind = \"steps\"\niterations = 2\ndisturbance = \"off\"\n\
                 steps = [{ op = \"rm_rf\", path = \"src\" }, { op = \"untar\", archive = \"small.tar.gz\" }, { op = \"syncfs\" }]\n";
    std::fs::write(lab_a.join("untar.toml"), steps).unwrap();
    let packed = ok(fsbench_at(&lab_a, &cache).args(["bundle", "pack", "untar.toml", "-o", "untar.fsb"]));
    assert!(packed.contains("fixtures/small.tar.gz"), "{packed}");
    std::fs::copy(lab_a.join("untar.fsb"), lab_b.join("untar.fsb")).unwrap();
    let v = ok(fsbench_at(&lab_b, &cache).args(["bundle", "verify", "untar.fsb"]));
    assert!(
        v.contains("fixture:     fixtures/small.tar.gz") && v.contains("backing:     dir (a private directory)"),
        "{v}"
    );
    let json = ok(fsbench_at(&lab_b, &cache).args(["bundle", "verify", "untar.fsb", "--json"]));
    let doc = crate::schemas::conforming("bundle-verify.schema.json", json.as_bytes(), "untar.fsb");
    assert_eq!(doc["fixture"]["path"], "fixtures/small.tar.gz", "{doc}");
    assert!(doc["fixture"]["contents"]["files"].as_u64().is_some_and(|n| n > 0), "{doc}");
    assert_eq!(doc["fixture"]["contents"]["refused_entries"], 0, "{doc}");
    ok(fsbench_at(&lab_b, &cache).args(["bundle", "run", "untar.fsb", "--quiet", "--out", "res"]));
    let run = run_dirs(&lab_b.join("res")).pop().unwrap();
    let cell = cell_json(&run, "ext4-S-qoff-t1");
    assert_eq!(cell["status"], "ok", "{cell}");
    assert_eq!(cell["steps"]["iterations"].as_array().unwrap().len(), 2);

    let generated = "schema = 1\nname = \"gen\"\n[matrix]\nfs = [\"ext4\"]\n[backing]\nkind = \"dir\"\n\
               [archive]\ngenerate = \"linux-2.5.63\"\nscale = 0.01\nseed = 7\n[workload]\nkind = \"steps\"\niterations = 1\n\
               steps = [{ op = \"untar\", archive = \"linux-2.5.63.tar.gz\" }]\n";
    std::fs::write(lab_a.join("gen.toml"), generated).unwrap();
    ok(fsbench_at(&lab_a, &cache).args(["bundle", "pack", "gen.toml", "-o", "gen.fsb"]));
    assert_eq!(manifest_paths(&lab_a.join("gen.fsb")), ["manifest.json", "scenario.toml"]);
    let v = ok(fsbench_at(&lab_a, &cache).args(["bundle", "verify", "gen.fsb"]));
    assert!(v.contains("fixture:     generated linux-2.5.63, scale 0.01, seed 7"), "{v}");
    let json = ok(fsbench_at(&lab_a, &cache).args(["bundle", "verify", "gen.fsb", "--json"]));
    let doc = crate::schemas::conforming("bundle-verify.schema.json", json.as_bytes(), "gen.fsb");
    assert_eq!(doc["fixture"]["kind"], "generated");
    assert_eq!((doc["fixture"]["seed"].as_u64(), doc["fixture"]["scale"].as_f64()), (Some(7), Some(0.01)));
}

/// An archive that plants `src/evil -> <outside>` and then writes `src/evil/pwned` through it.
fn escaping_archive(path: &Path, outside: &Path) {
    let f = std::fs::File::create(path).unwrap();
    let gz = flate2::write::GzEncoder::new(f, flate2::Compression::default());
    let mut b = tar::Builder::new(gz);
    let mut h = tar::Header::new_ustar();
    h.set_path("src/evil").unwrap();
    h.set_entry_type(tar::EntryType::Symlink);
    h.set_link_name(outside).unwrap();
    h.set_size(0);
    h.set_mode(0o777);
    h.set_uid(0);
    h.set_gid(0);
    h.set_mtime(0);
    h.set_cksum();
    b.append(&h, std::io::empty()).unwrap();
    let data = b"owned\n";
    let mut h = tar::Header::new_ustar();
    h.set_path("src/evil/pwned").unwrap();
    h.set_size(data.len() as u64);
    h.set_mode(0o644);
    h.set_uid(0);
    h.set_gid(0);
    h.set_mtime(0);
    h.set_cksum();
    b.append(&h, &data[..]).unwrap();
    b.into_inner().unwrap().finish().unwrap().flush().unwrap();
}

/// Regression: a real archive inside a bundle used to be untarred by the steps
/// workload on the fixture fast path, which follows symlinks planted by the
/// archive itself. Archives that arrive in a bundle are untrusted input too.
#[test]
fn a_bundled_archive_cannot_write_through_its_own_symlink() {
    let t = tempfile::tempdir().unwrap();
    let (lab_a, lab_b, cache, outside) =
        (t.path().join("lab-a"), t.path().join("lab-b"), t.path().join("cache"), t.path().join("outside"));
    for d in [&lab_a.join("data"), &lab_b, &outside] {
        std::fs::create_dir_all(d).unwrap();
    }
    escaping_archive(&lab_a.join("data/evil.tar.gz"), &outside);
    let steps = "schema = 1\nname = \"untar\"\n[matrix]\nfs = [\"ext4\"]\n[backing]\nkind = \"dir\"\n\
                 [archive]\npath = \"data/evil.tar.gz\"\n[workload]\nkind = \"steps\"\n\
                 steps = [{ op = \"untar\", archive = \"evil.tar.gz\" }]\n";
    std::fs::write(lab_a.join("untar.toml"), steps).unwrap();
    ok(fsbench_at(&lab_a, &cache).args(["bundle", "pack", "untar.toml", "-o", "evil.fsb"]));
    std::fs::copy(lab_a.join("evil.fsb"), lab_b.join("evil.fsb")).unwrap();
    // Refused before anything runs, by verify and by run alike: the same checks as the extraction.
    for args in [&["bundle", "verify", "evil.fsb"][..], &["bundle", "run", "evil.fsb", "--quiet", "--out", "res"]] {
        let out = fsbench_at(&lab_b, &cache).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(
                "fixture fixtures/evil.tar.gz: refusing archive entry `src/evil`: symlink with an absolute target"
            ),
            "{args:?}: {err}"
        );
    }
    assert!(std::fs::read_dir(&outside).unwrap().next().is_none(), "the archive wrote outside its destination");
    assert!(!lab_b.join("res").exists(), "nothing ran");
}

/// The whole journey of a real tarball: one with in-tree `../` links packs, verifies with
/// nothing refused, runs in another directory as lab 2, and `compare` and `gate` work
/// on the pair although the archive's path differs (it is matched by sha256).
#[test]
fn a_real_tree_with_in_tree_links_travels_and_compares() {
    let t = tempfile::tempdir().unwrap();
    let (lab_a, lab_b, cache) = (t.path().join("lab-a"), t.path().join("lab-b"), t.path().join("cache"));
    std::fs::create_dir_all(lab_a.join("data")).unwrap();
    std::fs::create_dir_all(&lab_b).unwrap();
    let tarball = crate::steps_untar::in_tree_links_tarball(&lab_a.join("data"));
    let steps = format!(
        "schema = 1\nname = \"links\"\n[matrix]\nfs = [\"ext4\"]\n[filesystems.ext4]\nmount = [\"noload\"]\n\
         [backing]\nkind = \"dir\"\n[archive]\npath = \"{}\"\n[workload]\nkind = \"steps\"\niterations = 2\ndisturbance = \"off\"\n\
         steps = [{{ op = \"rm_rf\", path = \"linux\" }}, {{ op = \"untar\", archive = \"linux-links.tar.gz\" }}, {{ op = \"syncfs\" }}]\n",
        tarball.display()
    );
    std::fs::write(lab_a.join("links.toml"), steps).unwrap();
    ok(fsbench_at(&lab_a, &cache).args(["run", "links.toml", "--quiet", "--out", "res", "--label", "THEIRS"]));
    let theirs = run_dirs(&lab_a.join("res")).pop().unwrap();
    ok(fsbench_at(&lab_a, &cache)
        .args(["bundle", "pack", "links.toml", "-o", "lab.fsb", "--with-results"])
        .arg(&theirs));
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(lab_a.join("lab.fsb")).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o644, "bundles are for sharing");
    std::fs::copy(lab_a.join("lab.fsb"), lab_b.join("lab.fsb")).unwrap();
    let v = ok(fsbench_at(&lab_b, &cache).args(["bundle", "verify", "lab.fsb"]));
    for want in [
        "fixture:     fixtures/linux-links.tar.gz (",
        "4 symlinks, 1 hard links",
        "nothing refused",
        "refused:     nothing",
        "label THEIRS",
    ] {
        assert!(v.contains(want), "verify lacks `{want}`:\n{v}");
    }
    // Lab 2 extracts through the fd-walk fallback (as on a kernel without openat2); the
    // tree and the result are the same.
    ok(fsbench_at(&lab_b, &cache)
        .env("FSBENCH_UNTAR_RESOLVER", "fd-walk")
        .args(["bundle", "run", "lab.fsb", "--quiet", "--out", "res", "--label", "OURS"]));
    let runs = run_dirs(&lab_b.join("res"));
    let imported = runs.iter().find(|r| r.file_name() == theirs.file_name()).unwrap().clone();
    let ours = runs.iter().find(|r| r.file_name() != theirs.file_name()).unwrap().clone();
    let cell = cell_json(&ours, "ext4-S-qoff-t1");
    assert_eq!(cell["status"], "ok", "{cell}");
    let out = fsbench_at(&lab_b, &cache)
        .arg("compare")
        .arg(format!("THEIRS={}", imported.display()))
        .arg(format!("OURS={}", ours.display()))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "compare: {err}");
    assert!(err.contains("THEIRS → OURS: archive.path: ") && err.contains("(same archive: sha256 "), "{err}");
    let out = fsbench_at(&lab_b, &cache)
        .args(["gate", "--threshold", "900%", "--baseline"])
        .arg(&imported)
        .arg("--candidate")
        .arg(&ours)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "gate: {err}\n{}", String::from_utf8_lossy(&out.stdout));
    assert!(err.contains("same archive"), "{err}");
}

/// Regression (CLI review): results made with `--set` were packed beside the unmodified
/// scenario, so the bundle paired numbers with settings they were not measured under.
#[test]
fn results_from_a_different_scenario_text_are_not_packed() {
    let t = tempfile::tempdir().unwrap();
    let (lab, cache) = (t.path().join("lab"), t.path().join("cache"));
    std::fs::create_dir_all(&lab).unwrap();
    std::fs::write(lab.join("tiny.toml"), TINY).unwrap();
    ok(fsbench_at(&lab, &cache).args([
        "run",
        "tiny.toml",
        "--quiet",
        "--out",
        "res",
        "--set",
        "workload.repetitions=2",
        "--set",
        "workload.disturbance=off",
    ]));
    let run = run_dirs(&lab.join("res")).pop().unwrap();
    let out = fsbench_at(&lab, &cache)
        .args(["bundle", "pack", "tiny.toml", "-o", "lab.fsb", "--with-results"])
        .arg(&run)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("different scenario text"));
    assert!(!lab.join("lab.fsb").exists());
}

/// Security review, round two: `pack` runs the checks of `verify`, so the packing lab hears of a refusal
/// (and of the flags the receiver will need) before the bundle travels. It warns and
/// still packs: the receiver's checks are the ones that hold.
#[test]
fn pack_warns_of_what_bundle_run_will_refuse_or_ask_a_flag_for() {
    let t = tempfile::tempdir().unwrap();
    let scenario = TINY.replace(
        "[backing]",
        "[filesystems.ext4]\nmount = [\"errors=panic\"]\n[sysctl]\n\"kernel.core_pattern\" = \"|/bin/true\"\n\
         \"vm.dirty_ratio\" = 10\n[backing]",
    );
    std::fs::write(t.path().join("tiny.toml"), scenario).unwrap();
    let out = fsbench_at(t.path(), &t.path().join("cache"))
        .args(["bundle", "pack", "tiny.toml", "-o", "lab.fsb"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    for want in [
        "warning: `bundle run` will refuse this bundle on every host: refusing sysctl `kernel.core_pattern`",
        "warning: `bundle run` will refuse this bundle on every host: refusing mount option `errors=panic`",
        "warning: the bundle asks for sysctl vm.dirty_ratio = 10: `bundle run` needs --allow-sysctl",
    ] {
        assert!(err.contains(want), "lacks `{want}`:\n{err}");
    }
}

/// A dbench scenario's loadfile travels in the bundle (it was left behind, so the shipped
/// `scenarios/dbench.toml` packed into a bundle that every receiver refused), and the
/// receiver replays the bytes it carries.
#[test]
fn a_dbench_loadfile_travels_with_its_scenario_and_replays_elsewhere() {
    let t = tempfile::tempdir().unwrap();
    let (lab_a, lab_b, cache) = (t.path().join("lab-a"), t.path().join("lab-b"), t.path().join("cache"));
    std::fs::create_dir_all(lab_a.join("loadfiles")).unwrap();
    std::fs::create_dir_all(&lab_b).unwrap();
    let root = crate::support::crate_root();
    std::fs::copy(root.join("scenarios/dbench.toml"), lab_a.join("dbench.toml")).unwrap();
    let loadfile = std::fs::read(root.join("scenarios/loadfiles/client-small.txt")).unwrap();
    std::fs::write(lab_a.join("loadfiles/client-small.txt"), &loadfile).unwrap();
    let packed = ok(fsbench_at(&lab_a, &cache).args(["bundle", "pack", "dbench.toml", "-o", "d.fsb"]));
    assert!(manifest_paths(&lab_a.join("d.fsb")).contains(&"fixtures/client-small.txt".to_string()), "{packed}");
    std::fs::copy(lab_a.join("d.fsb"), lab_b.join("d.fsb")).unwrap();
    let v = ok(fsbench_at(&lab_b, &cache).args(["bundle", "verify", "d.fsb"]));
    assert!(v.contains("refused:     nothing"), "{v}");
    // Unpacked elsewhere, its scenario names the carried file, whose bytes are the packer's.
    let unpacked = tempfile::tempdir().unwrap();
    let gz = flate2::read::GzDecoder::new(std::fs::File::open(lab_b.join("d.fsb")).unwrap());
    tar::Archive::new(gz).unpack(unpacked.path()).unwrap();
    assert_eq!(std::fs::read(unpacked.path().join("fixtures/client-small.txt")).unwrap(), loadfile);
    let text = std::fs::read_to_string(unpacked.path().join("scenario.toml")).unwrap();
    assert!(text.contains("loadfile = \"fixtures/client-small.txt\""), "{text}");
    // And it replays there (a directory backing, a short window: no root needed).
    ok(fsbench_at(&lab_b, &cache).args([
        "bundle",
        "run",
        "d.fsb",
        "--quiet",
        "--out",
        "res",
        "--set",
        "backing.kind=dir",
        "--set",
        "workload.duration=300ms",
        "--set",
        "workload.repetitions=1",
        "--set",
        "workload.disturbance=off",
    ]));
    let run = run_dirs(&lab_b.join("res")).pop().unwrap();
    let ids = cell_ids(&run);
    let c: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join(format!("cells/{}.json", ids[0]))).unwrap()).unwrap();
    assert_eq!(c["status"], "ok", "{c}");
}
