//! Kernel modules for the guest: which ones a scenario needs, and their
//! dependencies in load order, resolved from `modules.dep` (as modprobe does)
//! or, for an unpacked package that never ran depmod, from each module's
//! `.modinfo` `depends=` field.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::QemuError;

/// The modules of one kernel: name -> file, dependencies, and built-ins.
#[derive(Debug, Default)]
pub struct ModuleIndex {
    /// The modules directory (`.../lib/modules/V`).
    pub dir: PathBuf,
    /// Module name (with `_`) -> path relative to `dir`.
    pub paths: BTreeMap<String, String>,
    /// Module name -> names of the modules it needs.
    pub deps: BTreeMap<String, Vec<String>>,
    /// Names built into the kernel (from `modules.builtin`).
    pub builtin: BTreeSet<String>,
    /// Alias (`crypto-crc32c`, `fs-ext2`; `-` read as `_`) -> modules that provide it.
    pub aliases: BTreeMap<String, Vec<String>>,
    /// Module name -> soft dependencies (`softdep=pre: crypto-crc32c`), names or aliases.
    /// They matter here: without modprobe in the guest, the kernel cannot load them on demand.
    pub softdeps: BTreeMap<String, Vec<String>>,
}

/// `ext4-foo.ko.xz` -> `ext4_foo`: module names treat `-` and `_` alike.
pub fn module_name(path: &str) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = file.split(".ko").next().unwrap_or(file);
    stem.replace('-', "_")
}

impl ModuleIndex {
    /// Read `modules.dep` (and `modules.builtin`) from `dir`, or scan `dir/kernel` when there is no `modules.dep`.
    pub fn load(dir: &Path) -> Result<ModuleIndex, QemuError> {
        let mut ix = ModuleIndex { dir: dir.to_path_buf(), ..Default::default() };
        if let Ok(text) = std::fs::read_to_string(dir.join("modules.builtin")) {
            ix.builtin = text.lines().filter(|l| !l.trim().is_empty()).map(module_name).collect();
        }
        match std::fs::read_to_string(dir.join("modules.dep")) {
            Ok(text) => {
                ix.parse_dep(&text);
                ix.parse_alias(&std::fs::read_to_string(dir.join("modules.alias")).unwrap_or_default());
                ix.parse_softdep(&std::fs::read_to_string(dir.join("modules.softdep")).unwrap_or_default());
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => ix.scan()?,
            Err(e) => {
                return Err(QemuError::Io {
                    what: "read modules.dep".into(),
                    path: dir.join("modules.dep"),
                    source: e,
                });
            }
        }
        Ok(ix)
    }

    /// Parse `modules.dep` text: `kernel/fs/ext4/ext4.ko: kernel/lib/crc16.ko ...`.
    pub fn parse_dep(&mut self, text: &str) {
        for line in text.lines() {
            let Some((module, deps)) = line.split_once(':') else { continue };
            let name = module_name(module.trim());
            self.paths.insert(name.clone(), module.trim().to_string());
            self.deps.insert(name, deps.split_whitespace().map(module_name).collect());
        }
    }

    /// Parse `modules.alias` text: `alias crypto-crc32c crc32c_generic`.
    pub fn parse_alias(&mut self, text: &str) {
        for line in text.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if let ["alias", alias, module] = f[..] {
                self.add_alias(alias, module);
            }
        }
    }

    /// Parse `modules.softdep` text: `softdep ext4 pre: crc32c`.
    pub fn parse_softdep(&mut self, text: &str) {
        for line in text.lines() {
            let mut f = line.split_whitespace();
            if let (Some("softdep"), Some(module)) = (f.next(), f.next()) {
                let deps = soft_names(&f.collect::<Vec<_>>().join(" "));
                self.softdeps.entry(module_name(module)).or_default().extend(deps);
            }
        }
    }

    fn add_alias(&mut self, alias: &str, module: &str) {
        let v = self.aliases.entry(alias.replace('-', "_")).or_default();
        let m = module_name(module);
        if !v.contains(&m) {
            v.push(m);
        }
    }

    /// Modules providing `name`: the module itself, else those with that alias.
    fn providers(&self, name: &str) -> Vec<String> {
        let n = name.replace('-', "_");
        if self.paths.contains_key(&n) || self.builtin.contains(&n) {
            return vec![n];
        }
        self.aliases.get(&n).cloned().unwrap_or_default()
    }

    /// Without `modules.dep`: every `*.ko` under `kernel/`, dependencies from its `.modinfo`.
    fn scan(&mut self) -> Result<(), QemuError> {
        let root = self.dir.join("kernel");
        if !root.is_dir() {
            return Err(QemuError::Modules {
                dir: self.dir.clone(),
                detail: "neither modules.dep nor a kernel/ directory".into(),
            });
        }
        for entry in walkdir::WalkDir::new(&root).into_iter().filter_map(Result::ok) {
            let path = entry.path();
            let file = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if !entry.file_type().is_file() || !file.contains(".ko") {
                continue;
            }
            let rel = path.strip_prefix(&self.dir).unwrap_or(path).to_string_lossy().into_owned();
            let name = module_name(&rel);
            let bytes = read_module(path)?;
            let info = modinfo_all(&bytes);
            let deps = info
                .iter()
                .filter(|(k, _)| k == "depends")
                .flat_map(|(_, v)| v.split(',').filter(|s| !s.is_empty()).map(|s| s.replace('-', "_")))
                .collect();
            for (k, v) in &info {
                match k.as_str() {
                    "alias" => self.add_alias(v, &name),
                    "softdep" => self.softdeps.entry(name.clone()).or_default().extend(soft_names(v)),
                    _ => {}
                }
            }
            self.paths.insert(name.clone(), rel);
            self.deps.insert(name, deps);
        }
        Ok(())
    }

    /// The modules to load for `wanted`, dependencies first, each once; built-in
    /// and unknown names are left out (unknown ones are returned separately).
    pub fn resolve(&self, wanted: &[&str]) -> (Vec<String>, Vec<String>) {
        let mut order = Vec::new();
        let mut seen = BTreeSet::new();
        let mut missing = Vec::new();
        for w in wanted {
            let providers = self.providers(w);
            if providers.is_empty() {
                missing.push(w.replace('-', "_"));
            }
            for p in providers {
                self.visit(&p, &mut seen, &mut order);
            }
        }
        (order, missing)
    }

    fn visit(&self, name: &str, seen: &mut BTreeSet<String>, order: &mut Vec<String>) {
        if !seen.insert(name.to_string()) || self.builtin.contains(name) {
            return;
        }
        for d in self.deps.get(name).into_iter().flatten() {
            self.visit(d, seen, order);
        }
        // Soft dependencies (pre and post alike) load first: simple, and harmless.
        for soft in self.softdeps.get(name).into_iter().flatten() {
            for p in self.providers(soft) {
                self.visit(&p, seen, order);
            }
        }
        if self.paths.contains_key(name) {
            order.push(name.to_string());
        }
    }
}

/// A module file's bytes; `.ko.gz` is inflated here, other compressions are kept
/// as they are (the guest kernel decompresses them when built to).
pub fn read_module(path: &Path) -> Result<Vec<u8>, QemuError> {
    let io = |e| QemuError::Io { what: "read kernel module".into(), path: path.to_path_buf(), source: e };
    let bytes = std::fs::read(path).map_err(io)?;
    if path.to_string_lossy().ends_with(".gz") {
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut out).map_err(io)?;
        return Ok(out);
    }
    Ok(bytes)
}

/// The names in a softdep value: `pre: crc32c post: foo` -> `[crc32c, foo]`.
fn soft_names(v: &str) -> Vec<String> {
    v.split_whitespace().filter(|w| !w.ends_with(':')).map(str::to_string).collect()
}

/// The first `key=value` field of an ELF64 module's `.modinfo` section.
pub fn modinfo(elf: &[u8], key: &str) -> Option<String> {
    modinfo_all(elf).into_iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

/// Every `key=value` field of a module's `.modinfo` section, in order.
pub fn modinfo_all(elf: &[u8]) -> Vec<(String, String)> {
    let Some(section) = elf_section(elf, ".modinfo") else { return Vec::new() };
    section
        .split(|b| *b == 0)
        .filter_map(|f| std::str::from_utf8(f).ok())
        .filter_map(|f| f.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
        .collect()
}

/// The bytes of a named section of a little-endian ELF64 file.
fn elf_section<'a>(elf: &'a [u8], wanted: &str) -> Option<&'a [u8]> {
    if elf.len() < 64 || &elf[..4] != b"\x7fELF" || elf[4] != 2 || elf[5] != 1 {
        return None;
    }
    let u16_at = |o: usize| Some(u16::from_le_bytes(elf.get(o..o + 2)?.try_into().ok()?) as usize);
    let u32_at = |o: usize| Some(u32::from_le_bytes(elf.get(o..o + 4)?.try_into().ok()?) as usize);
    let u64_at = |o: usize| Some(u64::from_le_bytes(elf.get(o..o + 8)?.try_into().ok()?) as usize);
    let (shoff, shentsize, shnum, shstrndx) = (u64_at(0x28)?, u16_at(0x3a)?, u16_at(0x3c)?, u16_at(0x3e)?);
    let sh = |i: usize| {
        let base = shoff + i * shentsize;
        Some((u32_at(base)?, u64_at(base + 0x18)?, u64_at(base + 0x20)?))
    };
    let (_, str_off, str_size) = sh(shstrndx)?;
    let names = elf.get(str_off..str_off + str_size)?;
    (0..shnum).find_map(|i| {
        let (name_off, off, size) = sh(i)?;
        let name = names.get(name_off..)?.split(|b| *b == 0).next()?;
        (name == wanted.as_bytes()).then(|| elf.get(off..off + size)).flatten()
    })
}

/// The modules a scenario's cells need: loop devices, each filesystem, quota formats.
pub fn wanted_for(fs: &[String], quota: bool) -> Vec<String> {
    let mut w = vec!["loop".to_string()];
    for f in fs {
        // By alias: `fs-ext2` is the ext4 module in kernels built with EXT4_USE_FOR_EXT2.
        w.push(format!("fs-{f}"));
    }
    if quota {
        w.extend(["quota_v2".into(), "quota_v1".into(), "quota_tree".into()]);
    }
    let mut seen = BTreeSet::new();
    w.retain(|m| seen.insert(m.clone()));
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEP: &str = "kernel/fs/ext4/ext4.ko: kernel/lib/crc16.ko kernel/fs/mbcache.ko kernel/fs/jbd2/jbd2.ko\n\
kernel/fs/jbd2/jbd2.ko:\n\
kernel/fs/mbcache.ko:\n\
kernel/lib/crc16.ko:\n\
kernel/fs/quota/quota_v2.ko: kernel/fs/quota/quota_tree.ko\n\
kernel/fs/quota/quota_tree.ko:\n\
kernel/drivers/block/loop.ko:\n\
kernel/fs/xfs/xfs.ko: kernel/lib/libcrc32c.ko\n\
kernel/lib/libcrc32c.ko: kernel/crypto/crc32c-generic.ko\n";

    #[test]
    fn dependencies_come_first_and_once() {
        let mut ix = ModuleIndex::default();
        ix.parse_dep(DEP);
        let (order, missing) = ix.resolve(&["loop", "ext4", "quota_v2", "xfs", "ext2"]);
        assert_eq!(order, ["loop", "crc16", "mbcache", "jbd2", "ext4", "quota_tree", "quota_v2", "libcrc32c", "xfs"]);
        // crc32c-generic is named but has no line: it is not loaded, and not reported either.
        assert_eq!(missing, ["ext2"]);
    }

    #[test]
    fn aliases_and_softdeps_are_followed() {
        let mut ix = ModuleIndex::default();
        ix.parse_dep(DEP);
        ix.parse_dep("kernel/crypto/crc32c_generic.ko:\n");
        ix.parse_alias("alias crypto-crc32c crc32c_generic\nalias fs-ext2 ext4\nalias fs-ext4 ext4\n");
        ix.parse_softdep("softdep ext4 pre: crypto-crc32c\n");
        let (order, missing) = ix.resolve(&["fs-ext2", "fs-ext4", "fs-reiserfs"]);
        assert_eq!(order, ["crc16", "mbcache", "jbd2", "crc32c_generic", "ext4"]);
        assert_eq!(missing, ["fs_reiserfs"]);
    }

    #[test]
    fn builtins_are_skipped() {
        let mut ix = ModuleIndex::default();
        ix.parse_dep(DEP);
        ix.builtin.insert("loop".into());
        ix.builtin.insert("jbd2".into());
        let (order, missing) = ix.resolve(&["loop", "ext4"]);
        assert_eq!(order, ["crc16", "mbcache", "ext4"]);
        assert!(missing.is_empty());
    }

    #[test]
    fn names_normalise_dashes_and_compression() {
        assert_eq!(module_name("kernel/crypto/crc32c-generic.ko.xz"), "crc32c_generic");
        assert_eq!(module_name("ext4.ko"), "ext4");
    }

    /// A minimal ELF64 with a section-name table and a `.modinfo` section.
    fn tiny_elf(modinfo: &[u8]) -> Vec<u8> {
        let shstr = b"\0.shstrtab\0.modinfo\0";
        let mut e = vec![0u8; 64];
        e[..6].copy_from_slice(b"\x7fELF\x02\x01");
        let shstr_off = e.len();
        e.extend_from_slice(shstr);
        let mi_off = e.len();
        e.extend_from_slice(modinfo);
        let shoff = e.len();
        let sh = |name: u32, off: usize, size: usize| {
            let mut s = vec![0u8; 64];
            s[..4].copy_from_slice(&name.to_le_bytes());
            s[0x18..0x20].copy_from_slice(&(off as u64).to_le_bytes());
            s[0x20..0x28].copy_from_slice(&(size as u64).to_le_bytes());
            s
        };
        let headers = [sh(0, 0, 0), sh(1, shstr_off, shstr.len()), sh(11, mi_off, modinfo.len())].concat();
        e.extend_from_slice(&headers);
        e[0x28..0x30].copy_from_slice(&(shoff as u64).to_le_bytes());
        e[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        e[0x3c..0x3e].copy_from_slice(&3u16.to_le_bytes());
        e[0x3e..0x40].copy_from_slice(&1u16.to_le_bytes());
        e
    }

    #[test]
    fn modinfo_depends_is_read_from_the_elf_section() {
        let elf = tiny_elf(b"license=GPL\0depends=mbcache,jbd2,crc16\0name=ext4\0");
        assert_eq!(modinfo(&elf, "depends").as_deref(), Some("mbcache,jbd2,crc16"));
        assert_eq!(modinfo(&elf, "name").as_deref(), Some("ext4"));
        assert_eq!(modinfo(&elf, "vermagic"), None);
        assert_eq!(modinfo(b"not an elf", "depends"), None);
    }

    #[test]
    fn scan_without_modules_dep_uses_modinfo() {
        let t = tempfile::tempdir().unwrap();
        let fsdir = t.path().join("kernel/fs");
        std::fs::create_dir_all(&fsdir).unwrap();
        std::fs::write(fsdir.join("ext4.ko"), tiny_elf(b"softdep=pre: crypto-crc32c\0alias=fs-ext2\0depends=jbd2\0"))
            .unwrap();
        std::fs::write(fsdir.join("jbd2.ko"), tiny_elf(b"depends=\0")).unwrap();
        std::fs::write(fsdir.join("crc32c-generic.ko"), tiny_elf(b"alias=crypto-crc32c\0depends=\0")).unwrap();
        let ix = ModuleIndex::load(t.path()).unwrap();
        assert_eq!(ix.resolve(&["fs-ext2"]).0, ["jbd2", "crc32c_generic", "ext4"]);
        assert_eq!(ix.paths["ext4"], "kernel/fs/ext4.ko");
    }
}
