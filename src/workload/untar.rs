//! In-process `tar zxf`: streaming gzip + tar extraction that issues about the
//! same system calls per entry as GNU tar, so the filesystem under test sees
//! the seed's workload and not ours.
//!
//! Gzip decompression runs in its own thread and feeds the tar reader through a
//! bounded channel of reusable buffers (GNU tar runs gzip as a second process;
//! this gives the same overlap of inflate and file creation with a fixed, small
//! amount of memory).
//!
//! Two trust levels share the code path:
//! - [`Trust::Fixture`]: a scenario's own archive, extracted as a benchmark of
//!   the filesystem: `openat(AT_FDCWD-like dirfd, path, O_CREAT|O_EXCL)`,
//!   `write`, `futimens`, `fchown` (root), `fchmod`, `close` per file, directory
//!   attributes set after their contents.
//! - [`Trust::Untrusted`]: an archive from a shared bundle, extracted safely by
//!   construction: every open, mkdir, symlink, link and unlink is relative to a
//!   directory fd resolved beneath the destination without following any link
//!   (`openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS)`,
//!   or an fd-by-fd walk with `O_NOFOLLOW | O_DIRECTORY` where the kernel lacks
//!   openat2; see [`Resolver`]), so no link planted by the archive or found in
//!   the destination can lead a write outside. On top, entries are judged
//!   before anything is written for them (`LinkPolicy` and the caps): only
//!   normal path components, relative symlinks that stay inside the tree from
//!   their own directory (as GNU tar extracts `include/asm -> ../arch/...`), no
//!   absolute or escaping links, no hard links out of the tree, no device
//!   nodes, no setuid/setgid, caps on entries, bytes, path length and depth.
//!   Bad entries are refused with an error naming them, never silently rewritten.
//!   [`scan_untrusted`] runs the same checks without writing (a dry run).

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread;

use flate2::read::MultiGzDecoder;
use tar::EntryType;

/// Size of one decompressed chunk passed from the gzip thread to the tar reader.
const CHUNK: usize = 256 * 1024;
/// Chunks in flight between the threads: bounds memory to about 4 MiB.
const CHUNKS_IN_FLIGHT: usize = 16;
/// Write buffer for file contents (GNU tar writes 10 KiB records; bigger
/// writes mean fewer syscalls for the same bytes, never more).
const WRITE_BUF: usize = 128 * 1024;

/// How far an archive is trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trust {
    /// A scenario fixture: the fast path, extraction is the benchmark.
    Fixture,
    /// An archive from elsewhere (a shared bundle): checked entry by entry.
    Untrusted(UnpackLimits),
}

/// Caps applied to untrusted archives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnpackLimits {
    /// Maximum number of entries (of any type).
    pub max_entries: u64,
    /// Maximum total bytes of file contents.
    pub max_bytes: u64,
    /// Maximum length of an entry path in bytes.
    pub max_path_len: usize,
    /// Maximum number of path components.
    pub max_depth: usize,
    /// How paths are resolved beneath the destination (not a cap: chosen by the kernel, forced by tests).
    pub resolver: Resolver,
}

impl Default for UnpackLimits {
    fn default() -> Self {
        // Roomy for any source tree (linux today: ~90k files, 1.5 GB), small
        // enough that a hostile archive cannot fill a disk or exhaust inodes.
        UnpackLimits {
            max_entries: 1_000_000,
            max_bytes: 8 << 30,
            max_path_len: 1024,
            max_depth: 32,
            resolver: Resolver::Auto,
        }
    }
}

/// What an extraction produced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnpackStats {
    /// Archive entries processed (excluding pax/GNU metadata headers).
    pub entries: u64,
    /// Regular files created.
    pub files: u64,
    /// Directories created or updated.
    pub dirs: u64,
    /// Symbolic links created.
    pub symlinks: u64,
    /// Hard links created.
    pub hardlinks: u64,
    /// Other nodes (fifos, devices) created.
    pub others: u64,
    /// Bytes of file contents written.
    pub bytes: u64,
}

/// Why an extraction failed.
#[derive(Debug, thiserror::Error)]
pub enum UntarError {
    /// The archive file could not be opened.
    #[error("cannot open archive {path}: {source}")]
    OpenArchive { path: PathBuf, source: io::Error },
    /// The destination directory could not be opened.
    #[error("cannot open destination directory {path}: {source}")]
    OpenDest { path: PathBuf, source: io::Error },
    /// The gzip or tar stream is corrupt or unreadable.
    #[error("cannot read archive {path}: {source}")]
    Read { path: PathBuf, source: io::Error },
    /// A filesystem operation on an entry failed.
    #[error("failed to {op} {path}: {source}")]
    Fs { op: &'static str, path: PathBuf, source: io::Error },
    /// An entry of an untrusted archive is unsafe; nothing was written for it.
    #[error("refusing archive entry `{entry}`: {reason}")]
    Unsafe { entry: String, reason: String },
    /// An untrusted archive exceeds a cap; `entry` is where it was noticed.
    #[error("refusing archive entry `{entry}`: archive exceeds the limit on {what} ({limit})")]
    Limit { entry: String, what: &'static str, limit: u64 },
    /// The cancel callback asked to stop.
    #[error("extraction interrupted")]
    Interrupted,
    /// The gzip thread died.
    #[error("gzip decompression thread panicked")]
    DecoderPanicked,
}

/// Unpack a gzip-compressed tar archive into `dest` (which must exist).
pub fn unpack_tar_gz(archive: &Path, dest: &Path, trust: &Trust) -> Result<UnpackStats, UntarError> {
    unpack_tar_gz_cancellable(archive, dest, trust, &|| false)
}

/// An entry of an untrusted archive that passed the built-in checks, shown to
/// an admission callback before anything is written for it.
#[derive(Debug, Clone, Copy)]
pub struct EntryInfo<'p> {
    /// Normalised relative path (only normal components).
    pub path: &'p Path,
    /// Entry type.
    pub kind: EntryType,
    /// Size of the contents in bytes (0 for non-regular entries).
    pub size: u64,
}

/// Callback deciding whether an entry may be written: `Err(reason)` refuses it.
pub type Admit<'a> = dyn FnMut(&EntryInfo<'_>) -> Result<(), String> + 'a;

/// Unpack an untrusted archive, asking `admit` about every entry after the
/// built-in checks and before it is written (bundles use it to refuse entries
/// that their manifest does not list, or whose size differs).
pub fn unpack_untrusted_admitting(
    archive: &Path,
    dest: &Path,
    limits: &UnpackLimits,
    admit: &mut Admit<'_>,
) -> Result<UnpackStats, UntarError> {
    let trust = Trust::Untrusted(limits.clone());
    unpack_impl(archive, dest, &trust, &|| false, Some(admit))
}

/// [`unpack_tar_gz`], polling `cancel` between entries; `true` stops with [`UntarError::Interrupted`].
pub fn unpack_tar_gz_cancellable(
    archive: &Path,
    dest: &Path,
    trust: &Trust,
    cancel: &dyn Fn() -> bool,
) -> Result<UnpackStats, UntarError> {
    unpack_impl(archive, dest, trust, cancel, None)
}

/// What a dry run of an untrusted archive found: what extraction would make, and
/// every entry it would refuse (up to [`MAX_LISTED_REFUSALS`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanReport {
    /// Counts as extraction would produce them (refused entries included in `entries` only).
    pub stats: UnpackStats,
    /// One message per refused entry, naming it.
    pub refused: Vec<String>,
}

/// Read an untrusted archive through exactly the checks of extraction without
/// writing anything (for `bundle verify` and the start of `bundle run`). Caps
/// (entries, bytes, decompression) still stop the scan with an error.
pub fn scan_untrusted(archive: &Path, limits: &UnpackLimits) -> Result<ScanReport, UntarError> {
    let trust = Trust::Untrusted(limits.clone());
    let file = File::open(archive).map_err(|source| UntarError::OpenArchive { path: archive.into(), source })?;
    let (reader, decoder) = spawn_decoder(file, &trust, archive)?;
    // The destination fd is never used by a dry run; the archive's directory stands in.
    let here = archive.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let dest_fd = open_dir(here).map_err(|source| UntarError::OpenDest { path: here.into(), source })?;
    let mut ex = Extractor::new(here, dest_fd, &trust);
    ex.refused = Some(Vec::new());
    let result = ex.run(reader, archive, &|| false);
    let joined = decoder.join();
    let stats = result?;
    joined.map_err(|_| UntarError::DecoderPanicked)?;
    Ok(ScanReport { stats, refused: ex.refused.take().unwrap_or_default() })
}

fn unpack_impl(
    archive: &Path,
    dest: &Path,
    trust: &Trust,
    cancel: &dyn Fn() -> bool,
    admit: Option<&mut Admit<'_>>,
) -> Result<UnpackStats, UntarError> {
    let file = File::open(archive).map_err(|source| UntarError::OpenArchive { path: archive.into(), source })?;
    let dest_fd = open_dir(dest).map_err(|source| UntarError::OpenDest { path: dest.into(), source })?;
    let (reader, decoder) = spawn_decoder(file, trust, archive)?;
    let mut ex = Extractor::new(dest, dest_fd, trust);
    ex.admit = admit;
    let result = ex.run(reader, archive, cancel);
    // Dropping the reader (inside run) closed the channel, so the decoder exits.
    let joined = decoder.join();
    let stats = result?;
    joined.map_err(|_| UntarError::DecoderPanicked)?;
    Ok(stats)
}

/// Start the gzip thread; the reader gets its chunks.
fn spawn_decoder(
    file: File,
    trust: &Trust,
    archive: &Path,
) -> Result<(ChannelReader, thread::JoinHandle<()>), UntarError> {
    // A gzip bomb is stopped at the source: the decoder refuses to produce
    // more than the caps allow (contents + one header block pair per entry).
    let decompressed_cap = match trust {
        Trust::Fixture => u64::MAX,
        Trust::Untrusted(l) => l.max_bytes.saturating_add(l.max_entries.saturating_mul(2048)).saturating_add(1 << 20),
    };
    let (full_tx, full_rx) = sync_channel::<io::Result<Vec<u8>>>(CHUNKS_IN_FLIGHT);
    let (empty_tx, empty_rx) = sync_channel::<Vec<u8>>(CHUNKS_IN_FLIGHT + 1);
    let decoder = thread::Builder::new()
        .name("fsbench-gunzip".into())
        .spawn(move || decode_thread(file, full_tx, empty_rx, decompressed_cap))
        .map_err(|source| UntarError::Read { path: archive.into(), source })?;
    Ok((ChannelReader { rx: full_rx, recycle: empty_tx, cur: Vec::new(), pos: 0 }, decoder))
}

/// Gzip thread: inflate into recycled buffers and hand them over full.
fn decode_thread(file: File, tx: SyncSender<io::Result<Vec<u8>>>, recycle: Receiver<Vec<u8>>, cap: u64) {
    let mut gz = MultiGzDecoder::new(BufReader::with_capacity(CHUNK, file));
    let mut total: u64 = 0;
    loop {
        let mut buf = recycle.try_recv().unwrap_or_else(|_| Vec::with_capacity(CHUNK));
        buf.resize(CHUNK, 0);
        let mut filled = 0;
        while filled < CHUNK {
            match gz.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            }
        }
        buf.truncate(filled);
        total += filled as u64;
        if total > cap {
            let _ = tx.send(Err(io::Error::other(format!(
                "decompressed stream exceeds {cap} bytes (gzip bomb or limits too low)"
            ))));
            return;
        }
        let eof = filled == 0;
        if tx.send(Ok(buf)).is_err() || eof {
            return;
        }
    }
}

/// `Read` over the chunks sent by the gzip thread; an empty chunk is EOF.
struct ChannelReader {
    rx: Receiver<io::Result<Vec<u8>>>,
    recycle: SyncSender<Vec<u8>>,
    cur: Vec<u8>,
    pos: usize,
}

impl Read for ChannelReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.cur.len() {
            match self.rx.recv() {
                Ok(Ok(next)) => {
                    let old = std::mem::replace(&mut self.cur, next);
                    self.pos = 0;
                    let _ = self.recycle.try_send(old);
                    if self.cur.is_empty() {
                        return Ok(0);
                    }
                }
                Ok(Err(e)) => return Err(e),
                Err(_) => return Ok(0),
            }
        }
        let n = out.len().min(self.cur.len() - self.pos);
        out[..n].copy_from_slice(&self.cur[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Attributes of a directory, applied after its contents (GNU tar's delayed set_stat).
struct DelayedDir {
    rel: CString,
    mode: u32,
    owner: Option<(u32, u32)>,
    mtime: i64,
}

/// The state of one extraction.
struct Extractor<'a, 'f> {
    dest: &'a Path,
    /// Extra admission check of untrusted entries (bundles: the manifest).
    admit: Option<&'a mut Admit<'f>>,
    dest_fd: OwnedFd,
    trust: &'a Trust,
    /// Root preserves owners and exact modes, as GNU tar does by default as root.
    root: bool,
    umask: u32,
    delayed: Vec<DelayedDir>,
    users: HashMap<Vec<u8>, Option<u32>>,
    groups: HashMap<Vec<u8>, Option<u32>>,
    buf: Vec<u8>,
    stats: UnpackStats,
    /// Link rules of untrusted archives (shared with the dry run).
    policy: LinkPolicy,
    /// A dry run: nothing is written, refused entries are collected here.
    refused: Option<Vec<String>>,
}

impl<'a, 'f> Extractor<'a, 'f> {
    fn new(dest: &'a Path, dest_fd: OwnedFd, trust: &'a Trust) -> Self {
        // SAFETY: umask(2) cannot fail; read it by setting and restoring.
        let umask = unsafe {
            let m = libc::umask(0o022);
            libc::umask(m);
            m as u32
        };
        let root = matches!(trust, Trust::Fixture) && unsafe { libc::geteuid() } == 0;
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
            policy: LinkPolicy::default(),
            refused: None,
        }
    }

    fn limits(&self) -> Option<&'a UnpackLimits> {
        match self.trust {
            Trust::Fixture => None,
            Trust::Untrusted(l) => Some(l),
        }
    }

    fn run(
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
        let Some(rel) = self.check_path(raw_path)? else { return Ok(()) };
        let h = entry.header();
        let mode = h.mode().map_err(rd)? & 0o7777;
        let mtime = h.mtime().map_err(rd)? as i64;
        let owner = if self.root { Some(self.owner_of(h).map_err(rd)?) } else { None };
        if self.limits().is_some() {
            if mode & 0o6000 != 0 {
                return Err(self.unsafe_entry(raw_path, "setuid/setgid bit set"));
            }
            self.policy.check_parents(raw_path, rel.to_bytes())?;
        }
        let mode = if self.root { mode } else { mode & !self.umask & 0o7777 };
        match kind {
            EntryType::Regular | EntryType::Continuous => {
                let size = entry.size();
                // The caller's check first: it knows why a size is wrong (a manifest).
                self.admit(raw_path, &rel, kind, size)?;
                if let Some(l) = self.limits()
                    && self.stats.bytes.saturating_add(size) > l.max_bytes
                {
                    return Err(self.limit(raw_path, "total bytes", l.max_bytes));
                }
                self.policy.replaced(rel.to_bytes());
                if dry {
                    self.stats.bytes += size;
                } else {
                    self.regular(&rel, entry, mode, owner, mtime, archive)?;
                }
                self.stats.files += 1;
            }
            EntryType::Directory => {
                self.admit(raw_path, &rel, kind, 0)?;
                if !dry {
                    self.directory(&rel, mode, owner, mtime)?;
                }
                self.stats.dirs += 1;
            }
            EntryType::Symlink => {
                let target = entry.link_name_bytes().map(|c| c.into_owned()).unwrap_or_default();
                if self.limits().is_some() {
                    self.policy.check_symlink(raw_path, rel.to_bytes(), &target)?;
                }
                self.admit(raw_path, &rel, kind, 0)?;
                if !dry {
                    self.symlink(&rel, &target, owner, mtime)?;
                }
                self.stats.symlinks += 1;
            }
            EntryType::Link => {
                let target = entry.link_name_bytes().map(|c| c.into_owned()).unwrap_or_default();
                // Name the link entry itself in the error, not only its target.
                let trel = self.check_path(&target).map_err(|e| match e {
                    UntarError::Unsafe { entry, reason } => {
                        self.unsafe_entry(raw_path, &format!("hard link target `{entry}` is refused: {reason}"))
                    }
                    other => other,
                })?;
                let Some(trel) = trel else {
                    return Err(self.unsafe_entry(raw_path, "hard link to the archive root"));
                };
                if self.limits().is_some() {
                    self.policy.check_hardlink(raw_path, rel.to_bytes(), trel.to_bytes())?;
                }
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

    fn unsafe_entry(&self, raw: &[u8], reason: &str) -> UntarError {
        UntarError::Unsafe { entry: String::from_utf8_lossy(raw).into_owned(), reason: reason.into() }
    }

    /// Entry path -> relative C path, or `None` for the archive root itself.
    /// Like GNU tar, a leading `/` is stripped for fixtures and `..` is refused;
    /// untrusted archives must be plain relative paths within the caps.
    fn check_path(&self, raw: &[u8]) -> Result<Option<CString>, UntarError> {
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
                    if self.limits().is_some() {
                        return Err(self.unsafe_entry(raw, "absolute path"));
                    }
                }
                Component::ParentDir => return Err(self.unsafe_entry(raw, "path contains `..`")),
            }
        }
        if let Some(l) = self.limits() {
            if raw.is_empty() {
                return Err(self.unsafe_entry(raw, "empty name"));
            }
            if raw.len() > l.max_path_len {
                return Err(self.limit(raw, "path length", l.max_path_len as u64));
            }
            if depth > l.max_depth {
                return Err(self.limit(raw, "path depth", l.max_depth as u64));
            }
        }
        if depth == 0 {
            return Ok(None);
        }
        CString::new(out.as_os_str().as_bytes()).map(Some).map_err(|_| self.unsafe_entry(raw, "NUL byte in path"))
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

    fn fs_err(&self, op: &'static str, rel: &CStr, source: io::Error) -> UntarError {
        UntarError::Fs { op, path: self.dest.join(std::ffi::OsStr::from_bytes(rel.to_bytes())), source }
    }

    /// open(2) relative to the destination: plain `openat` for fixtures,
    /// [`open_beneath`] (no link followed, never outside) for untrusted archives.
    fn open_rel(&self, rel: &CStr, flags: i32, mode: u32) -> io::Result<OwnedFd> {
        let fd = match self.trust {
            // SAFETY: valid fd and NUL-terminated path.
            Trust::Fixture => unsafe {
                libc::openat(self.dest_fd.as_raw_fd(), rel.as_ptr(), flags | libc::O_CLOEXEC, mode)
            },
            Trust::Untrusted(l) => return open_beneath(self.dest_fd.as_raw_fd(), rel, flags, mode, l.resolver),
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd was just returned by the kernel and is ours.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// The directory fd and final name to use with `*at` calls for `rel`.
    /// Fixtures use the destination fd and the whole relative path (as GNU tar
    /// uses AT_FDCWD); untrusted archives resolve the parent beneath the root.
    fn parent_of(&self, rel: &CStr) -> io::Result<(Option<OwnedFd>, CString)> {
        match self.trust {
            Trust::Fixture => Ok((None, rel.to_owned())),
            Trust::Untrusted(_) => {
                let bytes = rel.to_bytes();
                match bytes.iter().rposition(|&b| b == b'/') {
                    None => Ok((None, rel.to_owned())),
                    Some(i) => {
                        let parent = CString::new(&bytes[..i]).expect("no NUL");
                        let name = CString::new(&bytes[i + 1..]).expect("no NUL");
                        let fd = self.open_rel(&parent, libc::O_PATH | libc::O_DIRECTORY, 0)?;
                        Ok((Some(fd), name))
                    }
                }
            }
        }
    }

    fn dirfd_of(&self, parent: &Option<OwnedFd>) -> RawFd {
        parent.as_ref().map_or(self.dest_fd.as_raw_fd(), |f| f.as_raw_fd())
    }

    /// Make missing parent directories (GNU tar does this for archives that
    /// lack directory entries), with default modes.
    fn make_parents(&self, rel: &CStr) -> io::Result<()> {
        let bytes = rel.to_bytes();
        for (i, &b) in bytes.iter().enumerate() {
            if b == b'/' {
                let p = CString::new(&bytes[..i]).expect("no NUL");
                let (parent, name) = self.parent_of(&p)?;
                // SAFETY: valid fd and path.
                if unsafe { libc::mkdirat(self.dirfd_of(&parent), name.as_ptr(), 0o777) } < 0 {
                    let e = io::Error::last_os_error();
                    if e.raw_os_error() != Some(libc::EEXIST) {
                        return Err(e);
                    }
                }
            }
        }
        Ok(())
    }

    /// Run `op` for a new node; on ENOENT make the parents, on EEXIST remove
    /// the old non-directory node (GNU tar's default overwrite), then retry once.
    fn create_with_retry<T>(&self, rel: &CStr, mut op: impl FnMut() -> io::Result<T>) -> io::Result<T> {
        match op() {
            Ok(v) => Ok(v),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                self.make_parents(rel)?;
                op()
            }
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
                let (parent, name) = self.parent_of(rel)?;
                // SAFETY: valid fd and path; unlinkat never follows a final symlink.
                if unsafe { libc::unlinkat(self.dirfd_of(&parent), name.as_ptr(), 0) } < 0 {
                    return Err(e);
                }
                op()
            }
            Err(e) => Err(e),
        }
    }

    fn regular(
        &mut self,
        rel: &CStr,
        data: &mut impl Read,
        mode: u32,
        owner: Option<(u32, u32)>,
        mtime: i64,
        archive: &Path,
    ) -> Result<(), UntarError> {
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOCTTY | libc::O_NONBLOCK;
        let fd = self
            .create_with_retry(rel, || self.open_rel(rel, flags, 0o600))
            .map_err(|e| self.fs_err("create", rel, e))?;
        let mut buf = std::mem::take(&mut self.buf);
        let mut written = 0u64;
        let res = (|| {
            loop {
                // Fill the buffer before writing so a file costs as few writes as possible.
                let mut filled = 0;
                while filled < buf.len() {
                    match data.read(&mut buf[filled..]) {
                        Ok(0) => break,
                        Ok(n) => filled += n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(source) => return Err(UntarError::Read { path: archive.into(), source }),
                    }
                }
                if filled == 0 {
                    return Ok(());
                }
                write_all(fd.as_raw_fd(), &buf[..filled]).map_err(|e| self.fs_err("write", rel, e))?;
                written += filled as u64;
                if filled < buf.len() {
                    return Ok(());
                }
            }
        })();
        self.buf = buf;
        self.stats.bytes += written;
        res?;
        // Same order as GNU tar 1.34: futimens, fchown, fchmod, close.
        let raw = fd.as_raw_fd();
        let times = mtime_times(mtime);
        // SAFETY: raw is an open fd; times is a valid [timespec; 2].
        check(unsafe { libc::futimens(raw, times.as_ptr()) }).map_err(|e| self.fs_err("set mtime of", rel, e))?;
        if let Some((uid, gid)) = owner {
            // SAFETY: raw is an open fd.
            check(unsafe { libc::fchown(raw, uid, gid) }).map_err(|e| self.fs_err("chown", rel, e))?;
        }
        // SAFETY: raw is an open fd.
        check(unsafe { libc::fchmod(raw, mode) }).map_err(|e| self.fs_err("chmod", rel, e))?;
        // SAFETY: we own the fd; close explicitly to see errors (NFS, quota).
        let fd = std::os::fd::IntoRawFd::into_raw_fd(fd);
        check(unsafe { libc::close(fd) }).map_err(|e| self.fs_err("close", rel, e))?;
        Ok(())
    }

    fn directory(&mut self, rel: &CStr, mode: u32, owner: Option<(u32, u32)>, mtime: i64) -> Result<(), UntarError> {
        // GNU tar creates directories 0700 and fixes the mode once the contents are in.
        let mk = || {
            let (parent, name) = self.parent_of(rel)?;
            // SAFETY: valid fd and path.
            check(unsafe { libc::mkdirat(self.dirfd_of(&parent), name.as_ptr(), 0o700) })
        };
        match mk() {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                self.make_parents(rel).and_then(|_| mk()).map_err(|e| self.fs_err("create directory", rel, e))?
            }
            Err(e) => return Err(self.fs_err("create directory", rel, e)),
        }
        self.delayed.push(DelayedDir { rel: rel.to_owned(), mode, owner, mtime });
        Ok(())
    }

    fn symlink(&mut self, rel: &CStr, target: &[u8], owner: Option<(u32, u32)>, mtime: i64) -> Result<(), UntarError> {
        let target = CString::new(target).map_err(|_| self.unsafe_entry(rel.to_bytes(), "NUL byte in link target"))?;
        let (parent, name) = self
            .create_with_retry(rel, || {
                let (parent, name) = self.parent_of(rel)?;
                // SAFETY: valid fd and paths.
                check(unsafe { libc::symlinkat(target.as_ptr(), self.dirfd_of(&parent), name.as_ptr()) })?;
                Ok((parent, name))
            })
            .map_err(|e| self.fs_err("create symlink", rel, e))?;
        let dfd = self.dirfd_of(&parent);
        if let Some((uid, gid)) = owner {
            // SAFETY: valid fd and path; does not follow the link.
            check(unsafe { libc::fchownat(dfd, name.as_ptr(), uid, gid, libc::AT_SYMLINK_NOFOLLOW) })
                .map_err(|e| self.fs_err("chown", rel, e))?;
        }
        let times = mtime_times(mtime);
        // SAFETY: valid fd, path and times; does not follow the link.
        check(unsafe { libc::utimensat(dfd, name.as_ptr(), times.as_ptr(), libc::AT_SYMLINK_NOFOLLOW) })
            .map_err(|e| self.fs_err("set mtime of", rel, e))?;
        Ok(())
    }

    fn hardlink(&mut self, rel: &CStr, target: &CStr) -> Result<(), UntarError> {
        self.create_with_retry(rel, || {
            let (tparent, tname) = self.parent_of(target)?;
            let (parent, name) = self.parent_of(rel)?;
            // Untrusted: the target's parent was resolved beneath the root and
            // linkat(flags = 0) does not follow a final symlink, so a link can
            // only ever name a node inside the destination.
            // SAFETY: valid fds and paths.
            check(unsafe {
                libc::linkat(self.dirfd_of(&tparent), tname.as_ptr(), self.dirfd_of(&parent), name.as_ptr(), 0)
            })
        })
        .map_err(|e| self.fs_err("create hard link", rel, e))
    }

    fn node(
        &mut self,
        rel: &CStr,
        ty: u32,
        mode: u32,
        dev: libc::dev_t,
        owner: Option<(u32, u32)>,
        mtime: i64,
    ) -> Result<(), UntarError> {
        let dfd = self.dest_fd.as_raw_fd();
        self.create_with_retry(rel, || {
            // SAFETY: valid fd and path.
            check(unsafe { libc::mknodat(dfd, rel.as_ptr(), ty | (mode & 0o777), dev) })
        })
        .map_err(|e| self.fs_err("create node", rel, e))?;
        if let Some((uid, gid)) = owner {
            // SAFETY: valid fd and path.
            check(unsafe { libc::fchownat(dfd, rel.as_ptr(), uid, gid, libc::AT_SYMLINK_NOFOLLOW) })
                .map_err(|e| self.fs_err("chown", rel, e))?;
        }
        // SAFETY: valid fd and path.
        check(unsafe { libc::fchmodat(dfd, rel.as_ptr(), mode, 0) }).map_err(|e| self.fs_err("chmod", rel, e))?;
        let times = mtime_times(mtime);
        // SAFETY: valid fd, path and times.
        check(unsafe { libc::utimensat(dfd, rel.as_ptr(), times.as_ptr(), libc::AT_SYMLINK_NOFOLLOW) })
            .map_err(|e| self.fs_err("set mtime of", rel, e))
    }

    /// Directory modes, owners and mtimes, deepest (latest) first, after all contents.
    fn apply_delayed(&mut self) -> Result<(), UntarError> {
        let delayed = std::mem::take(&mut self.delayed);
        for d in delayed.iter().rev() {
            let times = mtime_times(d.mtime);
            match self.trust {
                Trust::Fixture => {
                    let dfd = self.dest_fd.as_raw_fd();
                    // SAFETY: valid fd, path and times.
                    check(unsafe { libc::utimensat(dfd, d.rel.as_ptr(), times.as_ptr(), libc::AT_SYMLINK_NOFOLLOW) })
                        .map_err(|e| self.fs_err("set mtime of", &d.rel, e))?;
                    if let Some((uid, gid)) = d.owner {
                        // SAFETY: valid fd and path.
                        check(unsafe { libc::fchownat(dfd, d.rel.as_ptr(), uid, gid, libc::AT_SYMLINK_NOFOLLOW) })
                            .map_err(|e| self.fs_err("chown", &d.rel, e))?;
                    }
                    // SAFETY: valid fd and path.
                    check(unsafe { libc::fchmodat(dfd, d.rel.as_ptr(), d.mode, 0) })
                        .map_err(|e| self.fs_err("chmod", &d.rel, e))?;
                }
                Trust::Untrusted(_) => {
                    let fd = self
                        .open_rel(&d.rel, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW, 0)
                        .map_err(|e| self.fs_err("open directory", &d.rel, e))?;
                    // SAFETY: open fd and valid times.
                    check(unsafe { libc::futimens(fd.as_raw_fd(), times.as_ptr()) })
                        .map_err(|e| self.fs_err("set mtime of", &d.rel, e))?;
                    // SAFETY: open fd.
                    check(unsafe { libc::fchmod(fd.as_raw_fd(), d.mode) })
                        .map_err(|e| self.fs_err("chmod", &d.rel, e))?;
                }
            }
        }
        Ok(())
    }
}

/// Most refused entries a dry run lists (the rest are counted by the first ones' pattern).
pub const MAX_LISTED_REFUSALS: usize = 50;

/// The link rules for untrusted archives, applied identically by a dry run and by
/// extraction. They decide what is *refused*; what makes extraction *safe* is that
/// every open and mkdir resolves beneath the destination without following any
/// link ([`Resolver`]), so even a link these rules let through could not lead a
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
struct LinkPolicy {
    /// Symlinks made so far: path -> target.
    links: HashMap<Vec<u8>, Vec<u8>>,
}

impl LinkPolicy {
    fn refuse(raw: &[u8], reason: String) -> UntarError {
        UntarError::Unsafe { entry: String::from_utf8_lossy(raw).into_owned(), reason }
    }

    /// Refuse an entry whose parent directories pass through one of the archive's symlinks.
    fn check_parents(&self, raw: &[u8], rel: &[u8]) -> Result<(), UntarError> {
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
    fn replaced(&mut self, rel: &[u8]) {
        if !self.links.is_empty() {
            self.links.remove(rel);
        }
    }

    /// Judge a symlink `rel -> target` and remember it.
    fn check_symlink(&mut self, raw: &[u8], rel: &[u8], target: &[u8]) -> Result<(), UntarError> {
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
    fn check_hardlink(&mut self, raw: &[u8], rel: &[u8], target: &[u8]) -> Result<(), UntarError> {
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

/// How paths of an untrusted archive are resolved beneath the destination.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Resolver {
    /// `openat2` where the kernel has it (Linux 5.6+), else the fd walk. The
    /// environment variable `FSBENCH_UNTAR_RESOLVER=fd-walk` forces the walk
    /// (for tests of the fallback through the binary).
    #[default]
    Auto,
    /// `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS)`.
    Openat2,
    /// One `openat(O_PATH | O_DIRECTORY | O_NOFOLLOW)` per component, from the
    /// destination's fd down: the pre-5.6 way, same guarantees.
    FdWalk,
}

/// openat2 availability, learned once per process: 0 unknown, 1 present, 2 absent (ENOSYS).
static OPENAT2: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

impl Resolver {
    /// The resolver actually used: `Auto` becomes `Openat2` unless forced or known absent.
    fn effective(self) -> Resolver {
        match self {
            Resolver::Auto => {
                static FORCED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
                let forced =
                    *FORCED.get_or_init(|| std::env::var("FSBENCH_UNTAR_RESOLVER").is_ok_and(|v| v == "fd-walk"));
                if forced || OPENAT2.load(std::sync::atomic::Ordering::Relaxed) == 2 {
                    Resolver::FdWalk
                } else {
                    Resolver::Openat2
                }
            }
            other => other,
        }
    }
}

/// Open `rel` (plain relative components only) beneath `root` without following
/// any symlink on the way or at the end, as `resolver` says.
pub(crate) fn open_beneath(root: RawFd, rel: &CStr, flags: i32, mode: u32, resolver: Resolver) -> io::Result<OwnedFd> {
    let flags = flags | libc::O_CLOEXEC;
    let resolver = resolver.effective();
    if resolver == Resolver::Openat2 {
        let fd = openat2_beneath(root, rel, flags, mode);
        if fd >= 0 {
            OPENAT2.store(1, std::sync::atomic::Ordering::Relaxed);
            // SAFETY: fd was just returned by the kernel and is ours.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::ENOSYS) {
            return Err(e);
        }
        // A kernel before 5.6 (or a sandbox hiding the call): walk instead, from now on.
        OPENAT2.store(2, std::sync::atomic::Ordering::Relaxed);
    }
    fd_walk(root, rel, flags, mode)
}

/// The fd-by-fd walk: every directory on the way opened with O_NOFOLLOW|O_DIRECTORY
/// relative to the previous one, the last component with O_NOFOLLOW.
fn fd_walk(root: RawFd, rel: &CStr, flags: i32, mode: u32) -> io::Result<OwnedFd> {
    let bytes = rel.to_bytes();
    let comps: Vec<&[u8]> = bytes.split(|&b| b == b'/').collect();
    if comps.iter().any(|c| c.is_empty() || *c == b"." || *c == b"..") {
        // check_path guarantees plain components; anything else is a bug, not a path to try.
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    let mut cur: Option<OwnedFd> = None;
    let (last, dirs) = comps.split_last().expect("split yields one component at least");
    for c in dirs {
        let name = CString::new(*c).expect("no NUL");
        let at = cur.as_ref().map_or(root, |f| f.as_raw_fd());
        // SAFETY: valid fd and path.
        let fd = unsafe {
            libc::openat(at, name.as_ptr(), libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fresh fd.
        cur = Some(unsafe { OwnedFd::from_raw_fd(fd) });
    }
    let name = CString::new(*last).expect("no NUL");
    let at = cur.as_ref().map_or(root, |f| f.as_raw_fd());
    // SAFETY: valid fd and path.
    let fd = unsafe { libc::openat(at, name.as_ptr(), flags | libc::O_NOFOLLOW, mode) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh fd.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn check(rc: i32) -> io::Result<()> {
    if rc < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

fn write_all(fd: RawFd, mut data: &[u8]) -> io::Result<()> {
    while !data.is_empty() {
        // SAFETY: fd is open; data is a valid slice.
        let n = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        data = &data[n as usize..];
    }
    Ok(())
}

/// atime untouched (UTIME_OMIT, as GNU tar does), mtime from the header.
fn mtime_times(mtime: i64) -> [libc::timespec; 2] {
    [
        libc::timespec { tv_sec: 0, tv_nsec: libc::UTIME_OMIT },
        libc::timespec { tv_sec: mtime as libc::time_t, tv_nsec: 0 },
    ]
}

fn open_dir(p: &Path) -> io::Result<OwnedFd> {
    let c = CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::other("NUL byte in path"))?;
    // SAFETY: valid C string.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh fd.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// openat2 beneath `dirfd` following no link at all: the kernel refuses any
/// resolution (`..`, symlinks, magic links) that could leave `dirfd` or land
/// somewhere other than the written path.
fn openat2_beneath(dirfd: RawFd, path: &CStr, flags: i32, mode: u32) -> i32 {
    // SAFETY: open_how is plain data (non-exhaustive, so built from zeroes).
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = flags as u64;
    how.mode = if flags & libc::O_CREAT != 0 { mode as u64 } else { 0 };
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS | libc::RESOLVE_NO_SYMLINKS;
    // SAFETY: how is a valid open_how of the size passed.
    unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dirfd,
            path.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        ) as i32
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(trust: &Trust) -> Extractor<'_, 'static> {
        let dir = std::env::temp_dir();
        Extractor::new(Path::new("/nonexistent"), open_dir(&dir).unwrap(), trust)
    }

    #[test]
    fn paths_are_normalised_and_dotdot_refused() {
        let t = Trust::Fixture;
        let e = ex(&t);
        assert_eq!(e.check_path(b"./a/b").unwrap().unwrap().to_bytes(), b"a/b");
        assert_eq!(e.check_path(b"/etc/x").unwrap().unwrap().to_bytes(), b"etc/x");
        assert!(e.check_path(b"./").unwrap().is_none());
        assert!(matches!(e.check_path(b"a/../../x"), Err(UntarError::Unsafe { .. })));
        let u = Trust::Untrusted(UnpackLimits { max_depth: 2, max_path_len: 10, ..Default::default() });
        let e = ex(&u);
        assert!(matches!(e.check_path(b"/etc/x"), Err(UntarError::Unsafe { .. })));
        assert!(matches!(e.check_path(b"a/b/c"), Err(UntarError::Limit { what: "path depth", .. })));
        assert!(matches!(e.check_path(b"abcdefghijk"), Err(UntarError::Limit { what: "path length", .. })));
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

    #[test]
    fn both_resolvers_refuse_symlinks_and_stay_beneath() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("root/sub")).unwrap();
        std::fs::create_dir(d.path().join("outside")).unwrap();
        std::os::unix::fs::symlink("../outside", d.path().join("root/esc")).unwrap();
        std::os::unix::fs::symlink("sub", d.path().join("root/in")).unwrap();
        let root = open_dir(&d.path().join("root")).unwrap();
        let c = |s: &str| CString::new(s).unwrap();
        let create = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL;
        for r in [Resolver::Openat2, Resolver::FdWalk] {
            let fd = open_beneath(root.as_raw_fd(), &c("sub"), libc::O_PATH | libc::O_DIRECTORY, 0, r).unwrap();
            drop(fd);
            open_beneath(root.as_raw_fd(), &c(&format!("sub/{r:?}")), create, 0o600, r).unwrap();
            for bad in ["esc/x", "in/x"] {
                assert!(open_beneath(root.as_raw_fd(), &c(bad), create, 0o600, r).is_err(), "{r:?} {bad}");
            }
            let e = open_beneath(root.as_raw_fd(), &c("esc"), libc::O_RDONLY | libc::O_DIRECTORY, 0, r).unwrap_err();
            assert!(matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)), "{r:?}: {e}");
        }
        assert!(d.path().join("root/sub/Openat2").exists() && d.path().join("root/sub/FdWalk").exists());
        assert_eq!(std::fs::read_dir(d.path().join("outside")).unwrap().count(), 0);
    }
}
