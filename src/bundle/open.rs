//! Opening a bundle: read the manifest, unpack every entry through the untrusted
//! extractor with the manifest as admission check, then verify the checksums.
//!
//! Order of checks:
//! 1. the first entry must be `manifest.json` (≤ 1 MiB, read through a capped
//!    decoder); its format version, paths, count and declared size are checked;
//! 2. extraction (`workload::untar`, `Trust::Untrusted`): absolute paths, `..`,
//!    empty names, escaping links, device nodes, setuid bits and the caps on
//!    entries, bytes (the manifest's declared total), path length and depth are
//!    refused by the extractor; the manifest refuses anything that is not a
//!    listed regular file of the listed size, and duplicates — all before a byte
//!    of that entry is written;
//! 3. every listed file is hashed on disk and compared with the manifest, and
//!    nothing unlisted may exist.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::path::Path;

use flate2::read::MultiGzDecoder;
use sha2::{Digest, Sha256};

use super::BundleError;
use super::manifest::{self, MANIFEST_FILE, MAX_DEPTH, MAX_MANIFEST_BYTES, MAX_PATH_LEN, Manifest};
use crate::workload::untar::{EntryInfo, UnpackLimits, unpack_untrusted_admitting};

fn entry_err(bundle: &Path, entry: &str, reason: impl Into<String>) -> BundleError {
    BundleError::Entry { bundle: bundle.into(), entry: entry.into(), reason: reason.into() }
}

/// Read and check the manifest, the bundle's first entry; returns it and its raw bytes.
pub fn read_manifest(bundle: &Path) -> Result<(Manifest, Vec<u8>), BundleError> {
    let f = File::open(bundle).map_err(|source| BundleError::Io { path: bundle.into(), what: "open", source })?;
    // The cap keeps a hostile first header (a huge GNU long name) from being inflated.
    let capped = MultiGzDecoder::new(f).take(MAX_MANIFEST_BYTES + 64 * 1024);
    let mut ar = tar::Archive::new(capped);
    let bad = |m: String| BundleError::Manifest { bundle: bundle.into(), message: m };
    let mut entries = ar.entries().map_err(|e| bad(format!("not a gzip'd tar: {e}")))?;
    let mut first = match entries.next() {
        None => return Err(bad(format!("empty bundle: no {MANIFEST_FILE}"))),
        // The library's words ("invalid gzip header", "numeric field was not a number")
        // say what failed, not what the file is: a bundle is a gzip'd tar.
        Some(e) => e.map_err(|e| {
            bad(format!(
                "not a bundle, or damaged: a bundle is a gzip'd tar (`fsbench bundle pack` makes one); {}",
                crate::text::escape_control(&crate::text::first_line_cut(&e.to_string(), 60))
            ))
        })?,
    };
    let path = first.path_bytes().into_owned();
    if path != MANIFEST_FILE.as_bytes() {
        return Err(bad(format!("the first entry is `{}`, not {MANIFEST_FILE}", String::from_utf8_lossy(&path))));
    }
    if first.header().entry_type() != tar::EntryType::Regular {
        return Err(bad(format!("{MANIFEST_FILE} is not a regular file")));
    }
    if first.size() > MAX_MANIFEST_BYTES {
        return Err(bad(format!("{MANIFEST_FILE} is {} bytes, more than {MAX_MANIFEST_BYTES}", first.size())));
    }
    let mut bytes = Vec::new();
    first.read_to_end(&mut bytes).map_err(|e| bad(format!("cannot read {MANIFEST_FILE}: {e}")))?;
    let m = manifest::parse(&bytes).map_err(|message| match message.contains("is newer than") {
        true => BundleError::NewerFormat { bundle: bundle.into(), message },
        false => bad(message),
    })?;
    Ok((m, bytes))
}

/// Unpack `bundle` into the empty directory `dest` and verify it; returns the manifest.
pub fn unpack(bundle: &Path, dest: &Path) -> Result<Manifest, BundleError> {
    let (m, manifest_bytes) = read_manifest(bundle)?;
    let limits = UnpackLimits {
        // The listed files and the manifest; the first unlisted entry is refused by
        // name below before this cap is reached, which also bounds the gzip stream.
        max_entries: m.files.len() as u64 + 2,
        max_bytes: m.total_bytes() + manifest_bytes.len() as u64,
        max_path_len: MAX_PATH_LEN,
        max_depth: MAX_DEPTH,
        ..UnpackLimits::default()
    };
    let mut expected: BTreeMap<&str, (u64, bool)> =
        m.files.iter().map(|f| (f.path.as_str(), (f.size, false))).collect();
    let mut manifest_seen = false;
    let mut admit = |e: &EntryInfo<'_>| -> Result<(), String> {
        if e.kind != tar::EntryType::Regular {
            return Err(format!("a bundle holds only regular files, this is a {:?} entry", e.kind));
        }
        let p = e.path.to_str().ok_or("path is not UTF-8")?;
        if p == MANIFEST_FILE {
            if std::mem::replace(&mut manifest_seen, true) {
                return Err(format!("a second {MANIFEST_FILE}"));
            }
            return Ok(());
        }
        let Some((size, seen)) = expected.get_mut(p) else {
            return Err(format!("not listed in {MANIFEST_FILE}"));
        };
        if std::mem::replace(seen, true) {
            return Err("appears twice in the bundle".into());
        }
        if e.size != *size {
            return Err(format!("size {} differs from the {} bytes listed in {MANIFEST_FILE}", e.size, size));
        }
        Ok(())
    };
    unpack_untrusted_admitting(bundle, dest, &limits, &mut admit)
        .map_err(|source| BundleError::Unpack { bundle: bundle.into(), source })?;
    verify_tree(bundle, dest, &m, &manifest_bytes)?;
    Ok(m)
}

/// After extraction: every listed file present with its size and sha256, nothing else.
fn verify_tree(bundle: &Path, dest: &Path, m: &Manifest, manifest_bytes: &[u8]) -> Result<(), BundleError> {
    let on_disk = std::fs::read(dest.join(MANIFEST_FILE))
        .map_err(|e| entry_err(bundle, MANIFEST_FILE, format!("cannot read back: {e}")))?;
    if on_disk != manifest_bytes {
        return Err(entry_err(bundle, MANIFEST_FILE, "changed while the bundle was read"));
    }
    for f in &m.files {
        let p = dest.join(&f.path);
        let meta = std::fs::symlink_metadata(&p)
            .map_err(|_| entry_err(bundle, &f.path, format!("listed in {MANIFEST_FILE} but not in the bundle")))?;
        if !meta.is_file() {
            return Err(entry_err(bundle, &f.path, "is not a regular file"));
        }
        let mut file = File::open(&p).map_err(|e| entry_err(bundle, &f.path, format!("cannot read back: {e}")))?;
        let mut h = Sha256::new();
        let mut buf = vec![0u8; 1 << 16];
        let mut n = 0u64;
        loop {
            let k = file.read(&mut buf).map_err(|e| entry_err(bundle, &f.path, format!("cannot read back: {e}")))?;
            if k == 0 {
                break;
            }
            h.update(&buf[..k]);
            n += k as u64;
        }
        let sha: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
        if n != f.size {
            return Err(entry_err(
                bundle,
                &f.path,
                format!("size {n} differs from the {} bytes listed in {MANIFEST_FILE}", f.size),
            ));
        }
        if sha != f.sha256 {
            return Err(entry_err(
                bundle,
                &f.path,
                format!("checksum mismatch: sha256 {sha}, {MANIFEST_FILE} says {}", f.sha256),
            ));
        }
    }
    for e in walkdir::WalkDir::new(dest).min_depth(1) {
        let e = e.map_err(|e| BundleError::Manifest {
            bundle: bundle.into(),
            message: format!("cannot walk the unpacked bundle: {e}"),
        })?;
        if e.file_type().is_dir() {
            continue;
        }
        let rel = e.path().strip_prefix(dest).unwrap_or(e.path()).to_string_lossy().into_owned();
        if rel != MANIFEST_FILE && m.file(&rel).is_none() {
            return Err(entry_err(bundle, &rel, format!("not listed in {MANIFEST_FILE}")));
        }
    }
    Ok(())
}
