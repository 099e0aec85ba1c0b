//! The extractor: reads the entries of the tar stream, judges each (names, caps,
//! link policy, the caller's admission) and has it written ([`super::write`]),
//! or in a dry run only counts or lists it.

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use tar::EntryType;

use super::decode::ChannelReader;
use super::policy::check_path;
use super::tree::{ArchiveTree, NewEntry};
use super::{Admit, EntryInfo, MAX_LISTED_REFUSALS, Trust, UnpackLimits, UnpackStats, UntarError};

/// Write buffer for file contents (GNU tar writes 10 KiB records; bigger
/// writes mean fewer syscalls for the same bytes, never more).
const WRITE_BUF: usize = 128 * 1024;

/// Attributes of a directory, applied after its contents (GNU tar's delayed set_stat).
pub(super) struct DelayedDir {
    pub(super) rel: CString,
    pub(super) mode: u32,
    pub(super) owner: Option<(u32, u32)>,
    pub(super) mtime: i64,
}

/// The state of one extraction.
pub(super) struct Extractor<'a, 'f> {
    pub(super) dest: &'a Path,
    /// Extra admission check of untrusted entries (bundles: the manifest).
    pub(super) admit: Option<&'a mut Admit<'f>>,
    pub(super) dest_fd: OwnedFd,
    pub(super) trust: &'a Trust,
    /// Root preserves owners and exact modes, as GNU tar does by default as root.
    root: bool,
    umask: u32,
    pub(super) delayed: Vec<DelayedDir>,
    users: HashMap<Vec<u8>, Option<u32>>,
    groups: HashMap<Vec<u8>, Option<u32>>,
    pub(super) buf: Vec<u8>,
    pub(super) stats: UnpackStats,
    /// What each path of an untrusted archive is: clashes and link rules (shared with the dry run).
    tree: ArchiveTree,
    /// A dry run: nothing is written, refused entries are collected here.
    pub(super) refused: Option<Vec<String>>,
}

impl<'a, 'f> Extractor<'a, 'f> {
    pub(super) fn new(dest: &'a Path, dest_fd: OwnedFd, trust: &'a Trust) -> Self {
        // SAFETY: umask(2) cannot fail; read it by setting and restoring.
        let umask = unsafe {
            let m = libc::umask(0o022);
            libc::umask(m);
            m as u32
        };
        let root = matches!(trust, Trust::Own) && unsafe { libc::geteuid() } == 0;
        Extractor {
            dest,
            admit: None,
            dest_fd,
            trust,
            root,
            umask,
            delayed: Vec::new(),
            users: HashMap::new(),
            groups: HashMap::new(),
            buf: vec![0; WRITE_BUF],
            stats: UnpackStats::default(),
            tree: match trust {
                Trust::Untrusted(l) => ArchiveTree::with_caps(l.max_tree_nodes, l.max_tree_name_bytes),
                Trust::Own => ArchiveTree::default(),
            },
            refused: None,
        }
    }

    pub(super) fn limits(&self) -> Option<&'a UnpackLimits> {
        match self.trust {
            Trust::Own => None,
            Trust::Untrusted(l) => Some(l),
        }
    }

    pub(super) fn run(
        &mut self,
        reader: ChannelReader,
        archive: &Path,
        cancel: &dyn Fn() -> bool,
    ) -> Result<UnpackStats, UntarError> {
        let rd = |source| UntarError::Read { path: archive.into(), source };
        let mut ar = tar::Archive::new(reader);
        for entry in ar.entries().map_err(rd)? {
            if cancel() {
                return Err(UntarError::Interrupted);
            }
            let mut entry = entry.map_err(rd)?;
            let kind = entry.header().entry_type();
            if matches!(
                kind,
                EntryType::XGlobalHeader | EntryType::XHeader | EntryType::GNULongName | EntryType::GNULongLink
            ) {
                continue;
            }
            self.stats.entries += 1;
            let raw_path = entry.path_bytes().into_owned();
            if let Some(l) = self.limits()
                && self.stats.entries > l.max_entries
            {
                return Err(self.limit(&raw_path, "number of entries", l.max_entries));
            }
            match self.one_entry(&mut entry, kind, &raw_path, archive) {
                Ok(()) => {}
                // A dry run lists every refused entry; caps, read and I/O errors still stop it.
                Err(e @ UntarError::Unsafe { .. }) if self.refused.is_some() => {
                    let list = self.refused.as_mut().expect("dry run");
                    if list.len() < MAX_LISTED_REFUSALS {
                        list.push(e.to_string());
                    }
                }
                Err(e) => return Err(e),
            }
        }
        drop(ar);
        if self.refused.is_none() {
            self.apply_delayed()?;
        }
        Ok(std::mem::take(&mut self.stats))
    }

    /// Check one entry and (unless this is a dry run) write it.
    fn one_entry(
        &mut self,
        entry: &mut tar::Entry<'_, ChannelReader>,
        kind: EntryType,
        raw_path: &[u8],
        archive: &Path,
    ) -> Result<(), UntarError> {
        let rd = |source| UntarError::Read { path: archive.into(), source };
        let dry = self.refused.is_some();
        let Some(rel) = check_path(raw_path, self.limits())? else { return Ok(()) };
        let h = entry.header();
        let mode = h.mode().map_err(rd)? & 0o7777;
        let mtime = h.mtime().map_err(rd)? as i64;
        let owner = if self.root { Some(self.owner_of(h).map_err(rd)?) } else { None };
        if self.limits().is_some() && mode & 0o6000 != 0 {
            return Err(self.unsafe_entry(raw_path, "setuid/setgid bit set"));
        }
        let mode = if self.root { mode } else { mode & !self.umask & 0o7777 };
        match kind {
            EntryType::Regular | EntryType::Continuous => {
                let size = entry.size();
                self.enter(raw_path, &rel, NewEntry::File)?;
                // The caller's check first: it knows why a size is wrong (a manifest).
                self.admit(raw_path, &rel, kind, size)?;
                if let Some(l) = self.limits()
                    && self.stats.bytes.saturating_add(size) > l.max_bytes
                {
                    return Err(self.limit(raw_path, "total bytes", l.max_bytes));
                }
                if dry {
                    self.stats.bytes += size;
                } else {
                    self.regular(&rel, entry, mode, owner, mtime, archive)?;
                }
                self.stats.files += 1;
            }
            EntryType::Directory => {
                self.enter(raw_path, &rel, NewEntry::Dir)?;
                self.admit(raw_path, &rel, kind, 0)?;
                if !dry {
                    self.directory(&rel, mode, owner, mtime)?;
                }
                self.stats.dirs += 1;
            }
            EntryType::Symlink => {
                let target = entry.link_name_bytes().map(|c| c.into_owned()).unwrap_or_default();
                self.enter(raw_path, &rel, NewEntry::Symlink(&target))?;
                self.admit(raw_path, &rel, kind, 0)?;
                if !dry {
                    self.symlink(&rel, &target, owner, mtime)?;
                }
                self.stats.symlinks += 1;
            }
            EntryType::Link => {
                let target = entry.link_name_bytes().map(|c| c.into_owned()).unwrap_or_default();
                // Name the link entry itself in the error, not only its target.
                let trel = check_path(&target, self.limits()).map_err(|e| match e {
                    UntarError::Unsafe { entry, reason } => {
                        self.unsafe_entry(raw_path, &format!("hard link target `{entry}` is refused: {reason}"))
                    }
                    other => other,
                })?;
                let Some(trel) = trel else {
                    return Err(self.unsafe_entry(raw_path, "hard link to the archive root"));
                };
                self.enter(raw_path, &rel, NewEntry::HardLink(trel.to_bytes()))?;
                self.admit(raw_path, &rel, kind, 0)?;
                if !dry {
                    self.hardlink(&rel, &trel)?;
                }
                self.stats.hardlinks += 1;
            }
            EntryType::Char | EntryType::Block | EntryType::Fifo => {
                if self.limits().is_some() {
                    return Err(self.unsafe_entry(raw_path, "device nodes and fifos are not allowed"));
                }
                let h = entry.header();
                let major = h.device_major().ok().flatten().unwrap_or(0);
                let minor = h.device_minor().ok().flatten().unwrap_or(0);
                let ty = match kind {
                    EntryType::Char => libc::S_IFCHR,
                    EntryType::Block => libc::S_IFBLK,
                    _ => libc::S_IFIFO,
                };
                if !dry {
                    self.node(&rel, ty, mode, libc::makedev(major, minor), owner, mtime)?;
                }
                self.stats.others += 1;
            }
            other => {
                if self.limits().is_some() {
                    return Err(self.unsafe_entry(raw_path, &format!("unsupported entry type {other:?}")));
                }
                // GNU tar warns and skips unknown types; so do we.
            }
        }
        Ok(())
    }

    /// Judge an untrusted entry against what the archive made so far ([`ArchiveTree`]).
    fn enter(&mut self, raw: &[u8], rel: &CStr, new: NewEntry<'_>) -> Result<(), UntarError> {
        if self.limits().is_some() {
            self.tree.enter(raw, rel.to_bytes(), new)?;
        }
        Ok(())
    }

    fn limit(&self, raw: &[u8], what: &'static str, limit: u64) -> UntarError {
        UntarError::Limit { entry: String::from_utf8_lossy(raw).into_owned(), what, limit }
    }

    /// Ask the admission callback, if any, about an entry that passed the built-in checks.
    fn admit(&mut self, raw: &[u8], rel: &CStr, kind: EntryType, size: u64) -> Result<(), UntarError> {
        if let Some(admit) = self.admit.as_mut() {
            let info = EntryInfo { path: Path::new(std::ffi::OsStr::from_bytes(rel.to_bytes())), kind, size };
            admit(&info)
                .map_err(|reason| UntarError::Unsafe { entry: String::from_utf8_lossy(raw).into_owned(), reason })?;
        }
        Ok(())
    }

    pub(super) fn unsafe_entry(&self, raw: &[u8], reason: &str) -> UntarError {
        UntarError::Unsafe { entry: String::from_utf8_lossy(raw).into_owned(), reason: reason.into() }
    }

    /// uid/gid as GNU tar picks them as root: the names if they exist here, else the numbers.
    fn owner_of(&mut self, h: &tar::Header) -> io::Result<(u32, u32)> {
        let mut uid = h.uid()? as u32;
        let mut gid = h.gid()? as u32;
        if let Some(name) = h.username_bytes().filter(|n| !n.is_empty()) {
            let found = *self.users.entry(name.to_vec()).or_insert_with(|| lookup_id(name, true));
            if let Some(u) = found {
                uid = u;
            }
        }
        if let Some(name) = h.groupname_bytes().filter(|n| !n.is_empty()) {
            let found = *self.groups.entry(name.to_vec()).or_insert_with(|| lookup_id(name, false));
            if let Some(g) = found {
                gid = g;
            }
        }
        Ok((uid, gid))
    }
}

/// getpwnam/getgrnam through nix; `None` when the name is unknown here.
fn lookup_id(name: &[u8], user: bool) -> Option<u32> {
    let name = std::str::from_utf8(name).ok()?;
    if user {
        nix::unistd::User::from_name(name).ok().flatten().map(|u| u.uid.as_raw())
    } else {
        nix::unistd::Group::from_name(name).ok().flatten().map(|g| g.gid.as_raw())
    }
}
