//! The kernels to boot: `--kernel LABEL=PATH[,...]` options, the release a bzImage
//! carries and the modules directory that goes with it.

use std::path::{Path, PathBuf};

use super::QemuError;
use crate::scenario::KernelSpec;

/// Parse `--kernel LABEL=PATH[,modules=DIR][,cmdline=...][,memory=SIZE][,cpus=N]`.
pub fn parse_kernel_arg(arg: &str) -> Result<KernelSpec, QemuError> {
    let bad = |detail: &str| QemuError::KernelArg { arg: arg.to_string(), detail: detail.to_string() };
    let (label, rest) = arg.split_once('=').ok_or_else(|| bad("expected LABEL=PATH[,modules=DIR]"))?;
    let label = label.trim();
    if label.is_empty() || label.len() > 64 || !label.chars().all(|c| c.is_ascii_alphanumeric() || "._-+".contains(c)) {
        return Err(bad("the label needs 1 to 64 characters from A-Z a-z 0-9 . _ - +"));
    }
    let mut parts = rest.split(',');
    let image = parts.next().unwrap_or("").trim();
    if image.is_empty() {
        return Err(bad("no kernel image path after `=`"));
    }
    let mut k = KernelSpec {
        label: label.to_string(),
        image: PathBuf::from(image),
        modules: None,
        cmdline: String::new(),
        memory: crate::scenario::DEFAULT_GUEST_MEMORY,
        cpus: crate::scenario::DEFAULT_GUEST_CPUS,
    };
    for p in parts {
        let (key, value) = p.split_once('=').ok_or_else(|| bad(&format!("`{p}` is not KEY=VALUE")))?;
        match key.trim() {
            "modules" => k.modules = Some(PathBuf::from(value)),
            "cmdline" => k.cmdline = value.to_string(),
            "memory" => {
                k.memory = crate::scenario::units::parse_size(value).map_err(|e| bad(&format!("memory: {e}")))?
            }
            "cpus" => {
                k.cpus = value
                    .parse()
                    .ok()
                    .filter(|c| (1..=256).contains(c))
                    .ok_or_else(|| bad("cpus: a number from 1 to 256"))?
            }
            other => return Err(bad(&format!("unknown key `{other}` (modules, cmdline, memory, cpus)"))),
        }
    }
    Ok(k)
}

/// The kernel release of a bzImage, from its setup header (`kernel_version` field).
pub fn image_release(image: &[u8]) -> Option<String> {
    if image.get(0x202..0x206)? != b"HdrS" {
        return None;
    }
    let ptr = u16::from_le_bytes(image.get(0x20e..0x210)?.try_into().ok()?) as usize;
    let s = image.get(0x200 + ptr..)?;
    let s = &s[..s.iter().position(|b| *b == 0)?];
    Some(String::from_utf8_lossy(s).split_whitespace().next()?.to_string())
}

/// The modules directory of a kernel: given, or `<root>/lib/modules/V` for
/// `<root>/boot/vmlinuz-V` (an unpacked package), or found by the image's release.
pub fn modules_dir(k: &KernelSpec) -> Result<PathBuf, QemuError> {
    if let Some(m) = &k.modules {
        return Ok(m.clone());
    }
    let file = k.image.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let root = k.image.parent().and_then(Path::parent).unwrap_or(Path::new("/"));
    let mut candidates = Vec::new();
    if let Some(v) = file.strip_prefix("vmlinuz-") {
        candidates.push(root.join("lib/modules").join(v));
    }
    let head = read_head(&k.image)?;
    if let Some(v) = image_release(&head) {
        candidates.push(root.join("lib/modules").join(&v));
        candidates.push(Path::new("/lib/modules").join(&v));
    }
    candidates.iter().find(|c| c.is_dir()).cloned().ok_or_else(|| QemuError::Modules {
        dir: candidates.first().cloned().unwrap_or_else(|| root.join("lib/modules")),
        detail: format!(
            "no modules directory found for {} (tried {}); name it with modules=DIR",
            k.image.display(),
            candidates.iter().map(|c| c.display().to_string()).collect::<Vec<_>>().join(", ")
        ),
    })
}

fn read_head(image: &Path) -> Result<Vec<u8>, QemuError> {
    use std::io::Read;
    let mut f = std::fs::File::open(image).map_err(|e| QemuError::Io {
        what: "open kernel image".into(),
        path: image.to_path_buf(),
        source: e,
    })?;
    let mut head = vec![0u8; 64 * 1024];
    let n = f.read(&mut head).map_err(|e| QemuError::Io {
        what: "read kernel image".into(),
        path: image.to_path_buf(),
        source: e,
    })?;
    head.truncate(n);
    Ok(head)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_args_parse_with_options_and_reject_garbage() {
        let k = parse_kernel_arg(
            "V3=/k/boot/vmlinuz-6.1.0-50-amd64,modules=/k/lib/modules/6.1.0-50-amd64,memory=2GiB,cpus=4",
        )
        .unwrap();
        assert_eq!(k.label, "V3");
        assert_eq!(k.image, PathBuf::from("/k/boot/vmlinuz-6.1.0-50-amd64"));
        assert_eq!(k.modules, Some(PathBuf::from("/k/lib/modules/6.1.0-50-amd64")));
        assert_eq!((k.memory, k.cpus), (2 << 30, 4));
        let k = parse_kernel_arg("BASE=bzImage").unwrap();
        assert_eq!((k.modules, k.memory, k.cpus), (None, 1 << 30, 2));
        for bad in ["nolabel", "=x", "A=", "A=x,modules", "A=x,foo=1", "A b=x", "A=x,cpus=0", "A=x,memory=lots"] {
            assert!(parse_kernel_arg(bad).is_err(), "{bad} accepted");
        }
        assert!(parse_kernel_arg("A=x,foo=1").unwrap_err().to_string().contains("unknown key `foo`"));
    }

    #[test]
    fn modules_dir_follows_an_unpacked_package() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("boot")).unwrap();
        std::fs::create_dir_all(t.path().join("lib/modules/6.1.0-50-amd64")).unwrap();
        let image = t.path().join("boot/vmlinuz-6.1.0-50-amd64");
        std::fs::write(&image, b"not a bzImage").unwrap();
        let k = parse_kernel_arg(&format!("X={}", image.display())).unwrap();
        assert_eq!(modules_dir(&k).unwrap(), t.path().join("lib/modules/6.1.0-50-amd64"));
        let other = t.path().join("boot/bzImage");
        std::fs::write(&other, b"x").unwrap();
        let k = parse_kernel_arg(&format!("X={}", other.display())).unwrap();
        assert!(modules_dir(&k).unwrap_err().to_string().contains("modules=DIR"));
    }

    #[test]
    fn bzimage_release_is_read_from_the_setup_header() {
        let mut img = vec![0u8; 0x400];
        img[0x202..0x206].copy_from_slice(b"HdrS");
        img[0x20e..0x210].copy_from_slice(&0x100u16.to_le_bytes());
        img[0x300..0x300 + 20].copy_from_slice(b"6.1.0-50-amd64 (x) \0");
        assert_eq!(image_release(&img).as_deref(), Some("6.1.0-50-amd64"));
        assert_eq!(image_release(b"short"), None);
    }
}
