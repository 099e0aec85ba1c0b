//! `bundle pack`: a deterministic gzip'd tar of manifest, scenario, fixtures and results.
//!
//! Determinism: entries are in a fixed order (manifest, then files sorted by
//! path), every header has mode 0644, uid/gid 0, no user or group names and one
//! mtime (the `created` time, or 0), and the gzip header carries no timestamp
//! and no file name. The same inputs (and the same `SOURCE_DATE_EPOCH`) give
//! the same bytes.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use flate2::{Compression, GzBuilder};
use sha2::{Digest, Sha256};

use super::BundleError;
use super::manifest::{
    BUNDLE_FORMAT_VERSION, FIXTURES_DIR, MANIFEST_FILE, Manifest, ManifestFile, RESULTS_DIR, SCENARIO_FILE,
};
use crate::results::{CELLS_DIR, RUN_FILE, load_run, rfc3339_from_unix, sha256_hex};
use crate::scenario::{ArchiveSource, Backing};

/// Where a packed file's bytes come from.
#[derive(Debug, Clone)]
enum Source {
    Bytes(Vec<u8>),
    File(PathBuf),
}

/// What `pack` put in the bundle.
#[derive(Debug, Clone)]
pub struct Packed {
    /// The manifest written.
    pub manifest: Manifest,
    /// Changes made to the scenario text so that it travels (one line each).
    pub notes: Vec<String>,
    /// What `bundle run` will refuse on every host, and what it will ask a flag for, found
    /// by the same checks as `bundle verify` (one line each).
    pub warnings: Vec<String>,
}

fn io_err<'a>(path: &'a Path, what: &'static str) -> impl FnOnce(io::Error) -> BundleError + 'a {
    move |source| BundleError::Io { path: path.to_path_buf(), what, source }
}

fn sha256_file(path: &Path) -> Result<(u64, String), BundleError> {
    let mut f = File::open(path).map_err(io_err(path, "open"))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut n = 0u64;
    loop {
        let k = f.read(&mut buf).map_err(io_err(path, "read"))?;
        if k == 0 {
            break;
        }
        h.update(&buf[..k]);
        n += k as u64;
    }
    Ok((n, h.finalize().iter().map(|b| format!("{b:02x}")).collect()))
}

/// The scenario text as it travels: a real archive's path and a fio job file point into
/// `fixtures/`, a `dir` backing loses its lab-specific path (a bundle must not choose
/// where it writes).
/// The scenario as packed: its text, the real archive (path inside the bundle, file here),
/// the fio job file, notes.
struct Travelling {
    text: String,
    archive: Option<(String, PathBuf)>,
    /// A fio job file: its path inside the bundle and the text validation read (bounded,
    /// beneath the scenario's directory, through no link): the bytes hashed are the
    /// bytes judged.
    job_file: Option<(String, String)>,
    /// The dbench loadfiles of op-mix groups: path inside the bundle and text, read as
    /// validation reads them (bounded, beneath the scenario's directory, through no link).
    loadfiles: Vec<(String, String)>,
    notes: Vec<String>,
}

fn travelling_scenario(scenario: &Path) -> Result<Travelling, BundleError> {
    let s = crate::scenario::load(scenario)?;
    let text = &s.source.text;
    let mut doc: toml_edit::DocumentMut =
        text.parse().map_err(|e: toml_edit::TomlError| BundleError::Pack(format!("{}: {e}", scenario.display())))?;
    let mut notes = Vec::new();
    let mut archive = None;
    if let Some(a) = &s.archive
        && let ArchiveSource::Path(p) = &a.source
    {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let inside = format!("{FIXTURES_DIR}/{name}");
        doc["archive"]["path"] = toml_edit::value(inside.clone());
        notes.push(format!("archive {} travels as {inside}", p.display()));
        archive = Some((inside, p.clone()));
    }
    let mut job_file = None;
    if let Some(job) = super::fio_job::written_job(&s) {
        let written = doc["workload"]["job_file"].as_str().unwrap_or_default().to_string();
        let name = Path::new(&written).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let inside = format!("{FIXTURES_DIR}/{name}");
        if archive.as_ref().is_some_and(|(a, _)| *a == inside) {
            return Err(BundleError::Pack(format!(
                "the fio job file `{written}` and the archive would both travel as {inside}: rename one"
            )));
        }
        doc["workload"]["job_file"] = toml_edit::value(inside.clone());
        notes.push(format!("fio job file {} travels as {inside}", job.origin));
        job_file = Some((inside, job.text.clone()));
    }
    let loadfiles = travelling_loadfiles(scenario, &mut doc, &archive, &job_file, &mut notes)?;
    if let Backing::Dir { path } = &s.backing
        && !path.as_os_str().is_empty()
    {
        if let Some(b) = doc.get_mut("backing").and_then(|b| b.as_table_like_mut()) {
            b.remove("path");
        }
        notes.push(format!(
            "backing.path `{}` dropped: a bundle runs in a private directory unless the user sets backing.path",
            path.display()
        ));
    }
    Ok(Travelling { text: doc.to_string(), archive, job_file, loadfiles, notes })
}

/// Each `[[workload.group]]`'s `loadfile` travels as `fixtures/<its name>` (the scenario
/// text rewritten to say so); a file named by several groups travels once; two files of
/// one name, or one named like the archive or job file, are refused: rename one.
fn travelling_loadfiles(
    scenario: &Path,
    doc: &mut toml_edit::DocumentMut,
    archive: &Option<(String, PathBuf)>,
    job_file: &Option<(String, String)>,
    notes: &mut Vec<String>,
) -> Result<Vec<(String, String)>, BundleError> {
    let base = scenario.parent().unwrap_or(Path::new("."));
    let mut out: Vec<(String, String)> = Vec::new();
    let mut written_as: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();
    let taken = |inside: &str| {
        archive.as_ref().is_some_and(|(a, _)| a == inside) || job_file.as_ref().is_some_and(|(j, _)| j == inside)
    };
    let Some(groups) =
        doc.get_mut("workload").and_then(|w| w.get_mut("group")).and_then(|g| g.as_array_of_tables_mut())
    else {
        return Ok(out);
    };
    for g in groups.iter_mut() {
        let Some(written) = g.get("loadfile").and_then(|v| v.as_str()).map(str::to_string) else { continue };
        let inside = match written_as.get(&written) {
            Some(inside) => inside.clone(),
            None => {
                let name =
                    Path::new(&written).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                let inside = format!("{FIXTURES_DIR}/{name}");
                if taken(&inside) || out.iter().any(|(i, _)| *i == inside) {
                    return Err(BundleError::Pack(format!(
                        "the loadfile `{written}` would travel as {inside}, which another file of the bundle takes: rename one"
                    )));
                }
                let text = crate::scenario::validate::loadfile::read_text(&written, base)
                    .map_err(|e| BundleError::Pack(format!("loadfile `{written}`: {e}")))?;
                notes.push(format!("loadfile {written} travels as {inside}"));
                out.push((inside.clone(), text));
                written_as.insert(written, inside.clone());
                inside
            }
        };
        g["loadfile"] = toml_edit::value(inside);
    }
    Ok(out)
}

/// The `created` time: `SOURCE_DATE_EPOCH` when set, else the packed run's finish (or start) time.
fn created(results: Option<&crate::results::LoadedRun>) -> Result<Option<(String, u64)>, BundleError> {
    if let Ok(v) = std::env::var("SOURCE_DATE_EPOCH") {
        let secs: u64 = v
            .trim()
            .parse()
            .map_err(|_| BundleError::Pack(format!("SOURCE_DATE_EPOCH `{v}` is not a number of seconds")))?;
        return Ok(Some((rfc3339_from_unix(secs), secs)));
    }
    Ok(results.map(|r| {
        let t = r.meta.finished.clone().unwrap_or_else(|| r.meta.started.clone());
        let secs = crate::results::unix_from_rfc3339(&t).unwrap_or(0);
        (t, secs)
    }))
}

/// Pack `scenario` (and optionally the run in `with_results`) into `out` as a bundle.
pub fn pack(scenario: &Path, with_results: Option<&Path>, out: &Path) -> Result<Packed, BundleError> {
    let Travelling { text, archive, job_file, loadfiles, notes } = travelling_scenario(scenario)?;
    let warnings = receivers_view(&crate::scenario::load(scenario)?);
    let mut files: Vec<(String, Source)> = vec![(SCENARIO_FILE.into(), Source::Bytes(text.into_bytes()))];
    if let Some((inside, real)) = archive {
        files.push((inside, Source::File(real)));
    }
    if let Some((inside, job)) = job_file {
        files.push((inside, Source::Bytes(job.into_bytes())));
    }
    files.extend(loadfiles.into_iter().map(|(inside, text)| (inside, Source::Bytes(text.into_bytes()))));
    let run = with_results.map(load_run).transpose()?;
    let mut results_dir = None;
    if let Some(run) = &run {
        let s = crate::scenario::load(scenario)?;
        if run.meta.scenario_name != s.name {
            return Err(BundleError::Pack(format!(
                "{} holds results of scenario `{}`, not `{}`",
                run.dir.display(),
                run.meta.scenario_name,
                s.name
            )));
        }
        // Results travel with the scenario that made them, or the bundle would pair
        // numbers with settings they were not measured under (e.g. a run made with --set).
        if run.meta.scenario_sha256 != crate::results::sha256_hex(s.source.text.as_bytes()) {
            return Err(BundleError::Pack(format!(
                "{} was made from a different scenario text than {} (different sha256; `--set` overrides?): \
                 write the run's own scenario to a file and pack that: \
                 `fsbench scenario {} > run.toml && fsbench bundle pack run.toml --with-results {} -o ...`",
                run.dir.display(),
                scenario.display(),
                run.dir.display(),
                run.dir.display()
            )));
        }
        let base = format!("{RESULTS_DIR}/{}/{}", run.meta.scenario_name, run.meta.run_id);
        files.push((format!("{base}/{RUN_FILE}"), Source::File(run.dir.join(RUN_FILE))));
        let cells = run.dir.join(CELLS_DIR);
        let mut names: Vec<String> = std::fs::read_dir(&cells)
            .map_err(io_err(&cells, "list"))?
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".json") && !n.starts_with('.'))
            .collect();
        names.sort();
        for n in names {
            files.push((format!("{base}/{CELLS_DIR}/{n}"), Source::File(cells.join(n))));
        }
        results_dir = Some(base);
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let mut listed = Vec::new();
    for (path, src) in &files {
        super::manifest::check_path(path).map_err(|why| BundleError::Pack(format!("cannot pack `{path}`: {why}")))?;
        let (size, sha256) = match src {
            Source::Bytes(b) => (b.len() as u64, sha256_hex(b)),
            Source::File(p) => sha256_file(p)?,
        };
        listed.push(ManifestFile { path: path.clone(), size, sha256 });
    }
    let created = created(run.as_ref())?;
    let mtime = created.as_ref().map(|c| c.1).unwrap_or(0);
    let manifest = Manifest {
        format: BUNDLE_FORMAT_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        created: created.map(|c| c.0.into()),
        scenario: SCENARIO_FILE.into(),
        results: results_dir,
        files: listed,
    };
    let mut manifest_bytes = serde_json::to_vec_pretty(&manifest).map_err(|e| BundleError::Pack(e.to_string()))?;
    manifest_bytes.push(b'\n');

    let dir = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let tmp = tempfile::Builder::new()
        .prefix(".fsbench-bundle-")
        .tempfile_in(dir)
        .map_err(io_err(dir, "create a temporary file in"))?;
    {
        let gz = GzBuilder::new().mtime(0).write(tmp.as_file(), Compression::default());
        let mut tar = tar::Builder::new(gz);
        let mut append = |path: &str, size: u64, data: &mut dyn Read| -> io::Result<()> {
            let mut h = tar::Header::new_ustar();
            h.set_path(path)?;
            h.set_size(size);
            h.set_mode(0o644);
            h.set_uid(0);
            h.set_gid(0);
            h.set_mtime(mtime);
            h.set_entry_type(tar::EntryType::Regular);
            h.set_cksum();
            tar.append(&h, data)
        };
        append(MANIFEST_FILE, manifest_bytes.len() as u64, &mut manifest_bytes.as_slice())
            .map_err(io_err(out, "write"))?;
        for ((path, src), listed) in files.iter().zip(&manifest.files) {
            match src {
                Source::Bytes(b) => append(path, b.len() as u64, &mut b.as_slice()),
                Source::File(p) => {
                    let f = File::open(p).map_err(io_err(p, "open"))?;
                    // Exactly the hashed size: a file growing meanwhile cannot desync the tar.
                    append(path, listed.size, &mut f.take(listed.size))
                }
            }
            .map_err(io_err(out, "write"))?;
        }
        let gz = tar.into_inner().map_err(io_err(out, "write"))?;
        gz.finish().map_err(io_err(out, "write"))?.flush().map_err(io_err(out, "write"))?;
    }
    // A bundle is for sharing: readable by others (a temporary file starts 0600).
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file().set_permissions(std::fs::Permissions::from_mode(0o644)).map_err(io_err(out, "chmod"))?;
    }
    tmp.as_file().sync_all().map_err(io_err(out, "sync"))?;
    tmp.persist(out).map_err(|e| BundleError::Io { path: out.into(), what: "rename onto", source: e.error })?;
    Ok(Packed { manifest, notes, warnings })
}

/// What `bundle verify` will say on the receiving host, as far as it is known here:
/// refusals (which no flag lifts) and the flags the bundle's asks need. A warning, not
/// a refusal: the receiver's checks are the ones that hold, and a lab may pack a
/// scenario for a receiver who will pass the flags.
fn receivers_view(s: &crate::scenario::Scenario) -> Vec<String> {
    let pf = super::check_scenario(s, |p| p.display().to_string());
    let mut w: Vec<String> =
        pf.refused.iter().map(|r| format!("`bundle run` will refuse this bundle on every host: {r}")).collect();
    for a in pf.asks(s) {
        if let Some(flag) = &a.flag {
            w.push(format!("the bundle asks for {}: `bundle run` needs {flag}", a.what));
        }
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_parses_to_epoch_seconds() {
        assert_eq!(crate::results::unix_from_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(crate::results::unix_from_rfc3339("2010-11-11T12:00:00Z"), Some(1_289_476_800));
        assert_eq!(rfc3339_from_unix(1_289_476_800), "2010-11-11T12:00:00Z");
    }
}
