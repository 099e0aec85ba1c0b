//! What an entry's name may be: a plain relative path within the caps, each
//! component within `NAME_MAX` and the whole within `PATH_MAX` for untrusted
//! archives (extraction would fail on them with `ENAMETOOLONG`). Applied the same
//! by a dry run and by extraction; what the names then make is [`super::tree`]'s.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use super::tree::refuse;
use super::{UnpackLimits, UntarError};

/// Longest name of one path component (Linux, every filesystem fsbench makes).
const NAME_MAX: usize = 255;
/// Longest path a system call takes, its NUL included.
const PATH_MAX: usize = libc::PATH_MAX as usize;

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
                    return Err(refuse(raw, "absolute path".into()));
                }
            }
            Component::ParentDir => return Err(refuse(raw, "path contains `..`".into())),
        }
    }
    if let Some(l) = limits {
        if raw.is_empty() {
            return Err(refuse(raw, "empty name".into()));
        }
        if raw.len() > l.max_path_len {
            return Err(limit(raw, "path length", l.max_path_len as u64));
        }
        if depth > l.max_depth {
            return Err(limit(raw, "path depth", l.max_depth as u64));
        }
        if let Some(long) = out.as_os_str().as_bytes().split(|&b| b == b'/').find(|c| c.len() > NAME_MAX) {
            return Err(refuse(
                raw,
                format!(
                    "name component `{}…` of {} bytes exceeds NAME_MAX ({NAME_MAX})",
                    String::from_utf8_lossy(&long[..32]),
                    long.len()
                ),
            ));
        }
        if out.as_os_str().len() >= PATH_MAX {
            return Err(refuse(raw, format!("path of {} bytes exceeds PATH_MAX ({PATH_MAX})", out.as_os_str().len())));
        }
    }
    if depth == 0 {
        return Ok(None);
    }
    CString::new(out.as_os_str().as_bytes()).map(Some).map_err(|_| refuse(raw, "NUL byte in path".into()))
}

fn limit(raw: &[u8], what: &'static str, limit: u64) -> UntarError {
    UntarError::Limit { entry: String::from_utf8_lossy(raw).into_owned(), what, limit }
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
        let long = format!("a/{}/b", "x".repeat(256));
        let e = check_path(long.as_bytes(), Some(&UnpackLimits::default())).unwrap_err().to_string();
        assert!(e.contains("exceeds NAME_MAX (255)") && e.contains("of 256 bytes"), "{e}");
        assert!(check_path(format!("a/{}", "x".repeat(255)).as_bytes(), Some(&UnpackLimits::default())).is_ok());
        let deep = vec!["y".repeat(200); 21].join("/");
        let big = UnpackLimits { max_path_len: 1 << 20, ..Default::default() };
        assert!(check_path(deep.as_bytes(), Some(&big)).unwrap_err().to_string().contains("PATH_MAX"));
    }
}
