//! `manifest.json`: what a bundle holds, byte for byte.

use std::collections::BTreeSet;
use std::path::{Component, Path};

use serde::{Deserialize, Serialize};

use crate::model::{TextFormat, UntrustedText};

/// Version of the bundle format written by this fsbench (and the newest it reads).
pub const BUNDLE_FORMAT_VERSION: u32 = 1;
/// Name of the manifest, always the first entry of a bundle.
pub const MANIFEST_FILE: &str = "manifest.json";
/// Name of the scenario inside a bundle.
pub const SCENARIO_FILE: &str = "scenario.toml";
/// Directory of real archives inside a bundle.
pub const FIXTURES_DIR: &str = "fixtures";
/// Directory of packed results inside a bundle (`results/<scenario>/<run-id>/`).
pub const RESULTS_DIR: &str = "results";

/// Largest manifest read (it is parsed in memory before anything is unpacked);
/// room for [`MAX_FILES`] entries of about 400 bytes each.
pub const MAX_MANIFEST_BYTES: u64 = 4 << 20;
/// Most files a bundle may list.
pub const MAX_FILES: usize = 10_000;
/// Most bytes of file contents a bundle may hold (a real kernel tarball is a few hundred MB).
pub const MAX_BYTES: u64 = 1 << 30;
/// Longest path of a bundle file, in bytes.
pub const MAX_PATH_LEN: usize = 255;
/// Most components in a bundle file's path.
pub const MAX_DEPTH: usize = 8;

/// Contents of `manifest.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Bundle format version ([`BUNDLE_FORMAT_VERSION`]).
    pub format: u32,
    /// fsbench version that packed the bundle (free text from the packer: printed escaped).
    pub tool_version: UntrustedText,
    /// When it was packed (RFC 3339), from `SOURCE_DATE_EPOCH` or the packed run's
    /// finish time; `null` when neither exists, so that packing stays deterministic.
    pub created: Option<UntrustedText>,
    /// Path of the scenario inside the bundle (`scenario.toml`).
    pub scenario: String,
    /// Path of the packed run directory (`results/<scenario>/<run-id>`), if any.
    pub results: Option<String>,
    /// Every file except the manifest itself, sorted by path.
    pub files: Vec<ManifestFile>,
}

/// One file of a bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestFile {
    /// Relative path inside the bundle (`/`-separated, only normal components).
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// SHA-256 of the contents, lowercase hex.
    pub sha256: String,
}

impl Manifest {
    /// The entry for `path`.
    pub fn file(&self, path: &str) -> Option<&ManifestFile> {
        self.files.iter().find(|f| f.path == path)
    }

    /// Sum of the listed sizes.
    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).fold(0u64, u64::saturating_add)
    }
}

/// Parse and check a manifest: the format version first (so a newer bundle gets
/// "upgrade fsbench" rather than a field error), then every entry.
pub fn parse(bytes: &[u8]) -> Result<Manifest, String> {
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| format!("{MANIFEST_FILE} is not JSON: {e}"))?;
    let format = value
        .get("format")
        .and_then(|f| f.as_u64())
        .ok_or_else(|| format!("{MANIFEST_FILE} has no numeric `format`"))?;
    if format > BUNDLE_FORMAT_VERSION as u64 {
        return Err(format!(
            "bundle format {format} is newer than this fsbench reads (up to {BUNDLE_FORMAT_VERSION}); upgrade fsbench"
        ));
    }
    if format == 0 {
        return Err("bundle format 0 does not exist".into());
    }
    let m: Manifest = serde_json::from_value(value).map_err(|e| format!("{MANIFEST_FILE}: {e}"))?;
    check(&m)?;
    Ok(m)
}

fn check(m: &Manifest) -> Result<(), String> {
    if m.files.len() > MAX_FILES {
        return Err(format!(
            "{MANIFEST_FILE} lists {} files, more than the {MAX_FILES} a bundle may hold (too many entries)",
            m.files.len()
        ));
    }
    if m.total_bytes() > MAX_BYTES {
        return Err(format!(
            "{MANIFEST_FILE} declares {} bytes, more than the {MAX_BYTES} a bundle may hold (decompression bomb?)",
            m.total_bytes()
        ));
    }
    let mut seen = BTreeSet::new();
    for f in &m.files {
        check_path(&f.path).map_err(|why| {
            format!("{MANIFEST_FILE}: file `{}`: {why}", UntrustedText::escape(&f.path, TextFormat::Terminal))
        })?;
        if f.path == MANIFEST_FILE {
            return Err(format!("{MANIFEST_FILE} lists itself"));
        }
        if !seen.insert(f.path.as_str()) {
            return Err(format!("{MANIFEST_FILE} lists `{}` twice", f.path));
        }
        if f.sha256.len() != 64 || !f.sha256.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            return Err(format!(
                "{MANIFEST_FILE}: file `{}`: sha256 `{}` is not 64 lowercase hex digits",
                f.path, f.sha256
            ));
        }
    }
    if !seen.contains(m.scenario.as_str()) {
        return Err(format!("{MANIFEST_FILE}: the scenario `{}` is not among its files", m.scenario));
    }
    // `results` becomes a directory name too: checked like every path, and it must
    // be `results/<scenario>/<run-id>` with plain names and its run.json listed.
    if let Some(r) = &m.results {
        let shown = UntrustedText::escape(r, TextFormat::Terminal);
        check_path(r).map_err(|why| format!("{MANIFEST_FILE}: `results` `{shown}`: {why}"))?;
        let parts: Vec<&str> = r.split('/').collect();
        if parts.len() != 3 || parts[0] != RESULTS_DIR || !parts[1..].iter().all(|p| crate::text::is_plain_name(p)) {
            return Err(format!(
                "{MANIFEST_FILE}: `results` `{shown}` is not {RESULTS_DIR}/<scenario>/<run-id> with plain names"
            ));
        }
        let run_json = format!("{r}/{}", crate::results::RUN_FILE);
        if !seen.contains(run_json.as_str()) {
            return Err(format!("{MANIFEST_FILE}: `results` `{shown}` has no {run_json} among its files"));
        }
    }
    Ok(())
}

/// A bundle path must be relative, plain (no `.`, `..`, empty components) and within the caps.
pub fn check_path(path: &str) -> Result<(), String> {
    if path.is_empty() {
        return Err("empty name".into());
    }
    if path.len() > MAX_PATH_LEN {
        return Err(format!("path longer than {MAX_PATH_LEN} bytes"));
    }
    if path.starts_with('/') {
        return Err("absolute path".into());
    }
    let mut depth = 0;
    for c in Path::new(path).components() {
        match c {
            Component::Normal(_) => depth += 1,
            Component::ParentDir => return Err("path contains `..`".into()),
            _ => return Err("path is not plain (`.`, `//` or a root)".into()),
        }
    }
    if path.contains("//") || path.ends_with('/') || path.split('/').any(|s| s == ".") {
        return Err("path is not plain (`.`, `//` or a trailing `/`)".into());
    }
    if depth > MAX_DEPTH {
        return Err(format!("path deeper than {MAX_DEPTH} components"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(files: Vec<ManifestFile>) -> Manifest {
        Manifest {
            format: 1,
            tool_version: "0.1.0".into(),
            created: None,
            scenario: SCENARIO_FILE.into(),
            results: None,
            files,
        }
    }

    fn f(path: &str) -> ManifestFile {
        ManifestFile { path: path.into(), size: 1, sha256: "0".repeat(64) }
    }

    #[test]
    fn newer_format_is_named_before_fields() {
        let e = parse(br#"{"format": 7, "whatever": true}"#).unwrap_err();
        assert!(e.contains("bundle format 7 is newer"), "{e}");
    }

    #[test]
    fn paths_must_be_plain() {
        for bad in ["", "/etc/passwd", "a/../b", "./a", "a//b", "a/", "d/".repeat(9).trim_end_matches('/')] {
            assert!(check_path(bad).is_err(), "{bad}");
        }
        check_path("results/x/20250101T000000Z-h/cells/ext4-S-qoff-t1.json").unwrap();
    }

    #[test]
    fn manifest_round_trips_and_checks() {
        let ok = m(vec![f(SCENARIO_FILE)]);
        assert_eq!(parse(&serde_json::to_vec(&ok).unwrap()).unwrap(), ok);
        assert!(check(&m(vec![f(SCENARIO_FILE), f(SCENARIO_FILE)])).unwrap_err().contains("twice"));
        assert!(check(&m(vec![f("x")])).unwrap_err().contains("not among"));
        let mut r = m(vec![f(SCENARIO_FILE), f("results/s/r/run.json")]);
        r.results = Some("results/s/r".into());
        check(&r).unwrap();
        for bad in ["results/../r", "/etc", "results/s", "other/s/r", "results/s/x"] {
            r.results = Some(bad.into());
            assert!(check(&r).unwrap_err().contains("`results`"), "{bad}");
        }
    }
}
