//! What an untrusted archive may hold: entry names (plain relative paths within
//! the caps) and what its symlinks and hard links may point at. Applied the same
//! by a dry run and by extraction.

use std::collections::HashMap;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use super::{UnpackLimits, UntarError};

/// Entry path -> relative C path, or `None` for the archive root itself.
/// Like GNU tar, a leading `/` is stripped from the user's own archives and `..`
/// is refused; untrusted archives (`limits`) must be plain relative paths within the caps.
pub(super) fn check_path(raw: &[u8], limits: Option<&UnpackLimits>) -> Result<Option<CString>, UntarError> {
    let p = Path::new(std::ffi::OsStr::from_bytes(raw));
    let mut out = PathBuf::new();
    let mut depth = 0usize;
    for c in p.components() {
        match c {
            Component::Normal(n) => {
                out.push(n);
                depth += 1;
            }
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => {
                if limits.is_some() {
                    return Err(LinkPolicy::refuse(raw, "absolute path".into()));
                }
            }
            Component::ParentDir => return Err(LinkPolicy::refuse(raw, "path contains `..`".into())),
        }
    }
    if let Some(l) = limits {
        if raw.is_empty() {
            return Err(LinkPolicy::refuse(raw, "empty name".into()));
        }
        if raw.len() > l.max_path_len {
            return Err(limit(raw, "path length", l.max_path_len as u64));
        }
        if depth > l.max_depth {
            return Err(limit(raw, "path depth", l.max_depth as u64));
        }
    }
    if depth == 0 {
        return Ok(None);
    }
    CString::new(out.as_os_str().as_bytes()).map(Some).map_err(|_| LinkPolicy::refuse(raw, "NUL byte in path".into()))
}

fn limit(raw: &[u8], what: &'static str, limit: u64) -> UntarError {
    UntarError::Limit { entry: String::from_utf8_lossy(raw).into_owned(), what, limit }
}

/// The link rules for untrusted archives, applied identically by a dry run and by
/// extraction. They decide what is *refused*; what makes extraction *safe* is that
/// every open and mkdir resolves beneath the destination without following any
/// link ([`crate::beneath`]), so even a link these rules let through could not lead a
/// write outside.
///
/// - A symlink's target must be relative, non-empty, and lexically stay inside
///   the tree from the link's own directory (`include/asm -> ../arch/x86/include`
///   is fine, `a/l -> ../../x` is not), as GNU tar extracts real source trees.
/// - No entry may be written *through* a symlink of the archive (`l -> .` then
///   `l/l/x`): GNU tar would follow it, but then the written path is no longer
///   where the entry lands and the lexical rule above would judge the wrong
///   directory. Real archives made by `tar c` never do this.
/// - A hard link to one of the archive's symlinks makes a second symlink with the
///   same target in another directory, so the target is judged again from there.
#[derive(Debug, Default)]
pub(super) struct LinkPolicy {
    /// Symlinks made so far: path -> target.
    links: HashMap<Vec<u8>, Vec<u8>>,
}

impl LinkPolicy {
    pub(super) fn refuse(raw: &[u8], reason: String) -> UntarError {
        UntarError::Unsafe { entry: String::from_utf8_lossy(raw).into_owned(), reason }
    }

    /// Refuse an entry whose parent directories pass through one of the archive's symlinks.
    pub(super) fn check_parents(&self, raw: &[u8], rel: &[u8]) -> Result<(), UntarError> {
        if self.links.is_empty() {
            return Ok(());
        }
        for (i, &b) in rel.iter().enumerate() {
            if b == b'/' && self.links.contains_key(&rel[..i]) {
                return Err(Self::refuse(
                    raw,
                    format!(
                        "path goes through the symbolic link `{}` of the archive (entries may not be written through links)",
                        String::from_utf8_lossy(&rel[..i])
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A regular file (or other node) replaces whatever was at `rel`.
    pub(super) fn replaced(&mut self, rel: &[u8]) {
        if !self.links.is_empty() {
            self.links.remove(rel);
        }
    }

    /// Judge a symlink `rel -> target` and remember it.
    pub(super) fn check_symlink(&mut self, raw: &[u8], rel: &[u8], target: &[u8]) -> Result<(), UntarError> {
        // Remembered even when refused: a dry run then also names the entries written through it.
        self.links.insert(rel.to_vec(), target.to_vec());
        let shown = String::from_utf8_lossy(target);
        if target.is_empty() {
            return Err(Self::refuse(raw, "symlink with an empty target".into()));
        }
        if target.contains(&0) {
            return Err(Self::refuse(raw, "NUL byte in link target".into()));
        }
        if target.starts_with(b"/") {
            return Err(Self::refuse(raw, format!("symlink with an absolute target `{shown}`")));
        }
        // Depth of the link's directory below the root, then walk the target lexically.
        let mut depth = rel.iter().filter(|&&b| b == b'/').count();
        for c in target.split(|&b| b == b'/') {
            match c {
                b"" | b"." => {}
                b".." => {
                    if depth == 0 {
                        let from = match rel.iter().rposition(|&b| b == b'/') {
                            Some(i) => format!("from `{}`", String::from_utf8_lossy(&rel[..i])),
                            None => "from the top of the archive".into(),
                        };
                        return Err(Self::refuse(raw, format!("symlink target `{shown}` leaves the archive ({from})")));
                    }
                    depth -= 1;
                }
                _ => depth += 1,
            }
        }
        Ok(())
    }

    /// Judge a hard link `rel` to `target` (both already plain relative paths).
    pub(super) fn check_hardlink(&mut self, raw: &[u8], rel: &[u8], target: &[u8]) -> Result<(), UntarError> {
        self.check_parents(raw, target)?;
        match self.links.get(target).cloned() {
            Some(link_target) => self.check_symlink(raw, rel, &link_target).map_err(|e| match e {
                UntarError::Unsafe { entry, reason } => UntarError::Unsafe {
                    entry,
                    reason: format!("hard link to the symlink `{}`: {reason}", String::from_utf8_lossy(target)),
                },
                other => other,
            }),
            None => {
                self.replaced(rel);
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_normalised_and_dotdot_refused() {
        assert_eq!(check_path(b"./a/b", None).unwrap().unwrap().to_bytes(), b"a/b");
        assert_eq!(check_path(b"/etc/x", None).unwrap().unwrap().to_bytes(), b"etc/x");
        assert!(check_path(b"./", None).unwrap().is_none());
        assert!(matches!(check_path(b"a/../../x", None), Err(UntarError::Unsafe { .. })));
        let l = UnpackLimits { max_depth: 2, max_path_len: 10, ..Default::default() };
        assert!(matches!(check_path(b"/etc/x", Some(&l)), Err(UntarError::Unsafe { .. })));
        assert!(matches!(check_path(b"a/b/c", Some(&l)), Err(UntarError::Limit { what: "path depth", .. })));
        assert!(matches!(check_path(b"abcdefghijk", Some(&l)), Err(UntarError::Limit { what: "path length", .. })));
    }

    #[test]
    fn symlinks_may_climb_only_within_the_tree() {
        let mut p = LinkPolicy::default();
        assert!(p.check_symlink(b"a/b/link", b"a/b/link", b"c/d").is_ok());
        assert!(p.check_symlink(b"a/link", b"a/link", b"./c").is_ok());
        // In-tree `..` links, as in kernel trees and /usr/include.
        assert!(p.check_symlink(b"a/b/up", b"a/b/up", b"../c").is_ok());
        assert!(p.check_symlink(b"a/b/top", b"a/b/top", b"../../x/../y").is_ok());
        let e = p.check_symlink(b"a/b/out", b"a/b/out", b"../../../x").unwrap_err().to_string();
        assert!(e.contains("`a/b/out`") && e.contains("leaves the archive (from `a/b`)"), "{e}");
        assert!(p.check_symlink(b"top", b"top", b"..").is_err());
        assert!(p.check_symlink(b"link", b"link", b"/etc/passwd").unwrap_err().to_string().contains("absolute"));
        assert!(p.check_symlink(b"link", b"link", b"").is_err());
    }

    #[test]
    fn nothing_is_written_through_the_archives_links_and_hard_links_are_rejudged() {
        let mut p = LinkPolicy::default();
        p.check_symlink(b"l1", b"l1", b".").unwrap();
        let e = p.check_parents(b"l1/l1/x", b"l1/l1/x").unwrap_err().to_string();
        assert!(e.contains("symbolic link `l1`"), "{e}");
        p.check_symlink(b"a/b/up", b"a/b/up", b"../c").unwrap();
        // The same target one directory higher climbs out.
        p.check_hardlink(b"a/h", b"a/h", b"a/b/up").unwrap();
        let e = p.check_hardlink(b"h", b"h", b"a/b/up").unwrap_err().to_string();
        assert!(e.contains("hard link to the symlink `a/b/up`") && e.contains("leaves the archive"), "{e}");
        // A file replacing the link ends its rule.
        p.replaced(b"l1");
        assert!(p.check_parents(b"l1/x", b"l1/x").is_ok());
    }
}
