//! What validation reads from a real archive: that it exists and its top-level directory,
//! so a step can write `path = "{archive.top}"` and `rm_rf` follows whatever tree the
//! archive unpacks.

use std::path::{Component, Path};

/// The placeholder a step path may use for the archive's top-level directory.
pub const TOP_PLACEHOLDER: &str = "{archive.top}";

/// The first path component of the archive's first entry (`linux-2.5.63` of
/// `linux-2.5.63/Makefile`), read from the gzip stream's first headers only.
pub fn top_dir(path: &Path) -> Result<String, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(std::io::BufReader::new(f)));
    let mut entries = ar.entries().map_err(|e| format!("{} is not a .tar.gz: {e}", path.display()))?;
    // Only the first entry is read (the tar reader folds pax and GNU long-name headers into it):
    // validation must stay cheap on a kernel tarball and on a hostile one.
    if let Some(entry) = entries.next() {
        let entry = entry.map_err(|e| format!("{} is not a readable .tar.gz: {e}", path.display()))?;
        let p = entry.path().map_err(|e| format!("{}: bad entry name: {e}", path.display()))?.into_owned();
        let first = p.components().find(|c| !matches!(c, Component::CurDir));
        return match first {
            Some(Component::Normal(n)) if p.components().count() > 1 || entry.header().entry_type().is_dir() => {
                let top = n.to_string_lossy().into_owned();
                if top.chars().any(char::is_control) {
                    return Err(format!(
                        "the top-level directory of {} (`{}`) has control characters",
                        path.display(),
                        crate::text::escape_control(&top)
                    ));
                }
                Ok(top)
            }
            _ => Err(format!(
                "the first entry of {} (`{}`) is not inside a top-level directory",
                path.display(),
                crate::text::escape_control(&p.to_string_lossy())
            )),
        };
    }
    Err(format!("{} holds no entries", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn tar_gz(dir: &Path, names: &[&str]) -> PathBuf {
        let path = dir.join("a.tar.gz");
        let gz = flate2::write::GzEncoder::new(std::fs::File::create(&path).unwrap(), flate2::Compression::fast());
        let mut b = tar::Builder::new(gz);
        for n in names {
            let mut h = tar::Header::new_gnu();
            h.set_size(1);
            h.set_mode(0o644);
            h.set_cksum();
            b.append_data(&mut h, n, &b"x"[..]).unwrap();
        }
        b.into_inner().unwrap().finish().unwrap();
        path
    }

    #[test]
    fn the_top_directory_is_the_first_entrys_first_component() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(top_dir(&tar_gz(d.path(), &["./linux-6.1/Makefile", "linux-6.1/README"])).unwrap(), "linux-6.1");
        let flat = top_dir(&tar_gz(d.path(), &["Makefile"])).unwrap_err();
        assert!(flat.contains("not inside a top-level directory"), "{flat}");
        std::fs::write(d.path().join("x.tar.gz"), b"not gzip").unwrap();
        assert!(top_dir(&d.path().join("x.tar.gz")).is_err());
    }
}
