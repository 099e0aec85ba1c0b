//! In-process `tar zxf`: streaming gzip + tar extraction that issues about the
//! same system calls per entry as GNU tar, so the filesystem under test sees
//! the seed's workload and not ours.
//!
//! Gzip decompression runs in its own thread and feeds the tar reader through a
//! bounded channel of reusable buffers (GNU tar runs gzip as a second process;
//! this gives the same overlap of inflate and file creation with a fixed, small
//! amount of memory): [`decode`].
//!
//! Two trust levels share the code path ([`extract`] judges each entry, [`write`]
//! makes it):
//! - [`Trust::Own`]: the user's own archive (the one a scenario generates, or a
//!   real one it names by `path`), extracted as a benchmark of the filesystem:
//!   `openat(AT_FDCWD-like dirfd, path, O_CREAT|O_EXCL)`, `write`, `futimens`,
//!   `fchown` (root), `fchmod`, `close` per file, directory attributes set after
//!   their contents.
//! - [`Trust::Untrusted`]: an archive from a shared bundle, extracted safely by
//!   construction: every open, mkdir, symlink, link and unlink is relative to a
//!   directory fd resolved beneath the destination without following any link
//!   ([`crate::beneath`]: `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS |
//!   RESOLVE_NO_SYMLINKS)`, or an fd-by-fd walk with `O_NOFOLLOW | O_DIRECTORY`
//!   where the kernel lacks openat2; see [`Resolver`]), so no link planted by the
//!   archive or found in the destination can lead a write outside. On top, entries
//!   are judged before anything is written for them ([`policy`] for names and the
//!   caps, [`tree`] for what each entry makes): only normal path components within
//!   `NAME_MAX`/`PATH_MAX`, relative symlinks whose target, resolved *physically*
//!   through the archive's earlier links, stays inside the tree (as GNU tar extracts
//!   `include/asm -> ../arch/...`), no absolute or escaping links, no name clashes, no
//!   hard links out of the tree, no device nodes, no setuid/setgid, caps on entries,
//!   bytes, path length and depth. An untrusted archive is itself opened without
//!   following a link and must be a regular file ([`ARCHIVE_STAGING_DIR`] is where a
//!   bundle's is staged, out of its own entries' reach).
//!   Bad entries are refused with an error naming them, never silently rewritten.
//!   [`scan_untrusted`] runs the same checks without writing (a dry run).

mod decode;
mod extract;
mod policy;
mod tree;
mod write;

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use tar::EntryType;

pub use crate::beneath::Resolver;
pub use tree::ARCHIVE_STAGING_DIR;

use decode::spawn_decoder;
use extract::Extractor;

/// How far an archive is trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trust {
    /// The user's own archive: the one a scenario generates, or a real one it
    /// names by `path` on this host. The fast path: extraction is the benchmark.
    Own,
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
    /// Most paths the model of the archive's tree may hold in memory: entries and the
    /// directories their names and link targets imply ([`tree`]).
    pub max_tree_nodes: usize,
    /// Most bytes of names and link targets that model may hold.
    pub max_tree_name_bytes: usize,
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
            // One node per entry plus half again for directories implied by link targets,
            // about 150 MB at most; names of 64 bytes on average for a full million entries.
            max_tree_nodes: 1_500_000,
            max_tree_name_bytes: 64 << 20,
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
    let file = open_archive(archive, &trust)?;
    let (reader, decoder) = spawn_decoder(file, &trust, archive)?;
    // The destination fd is never used by a dry run; the archive's directory stands in.
    let here = archive.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let dest_fd =
        crate::beneath::open_dir(here).map_err(|source| UntarError::OpenDest { path: here.into(), source })?;
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
    let file = open_archive(archive, trust)?;
    let dest_fd =
        crate::beneath::open_dir(dest).map_err(|source| UntarError::OpenDest { path: dest.into(), source })?;
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

/// Open the archive to read. The user's own is opened as named. An untrusted one is
/// opened from its directory without following a link, and must be a regular file:
/// it is staged where no archive entry can reach ([`ARCHIVE_STAGING_DIR`] on the
/// filesystem under test, the run's scratch otherwise), and if anything still put a
/// link or a node in its place, the next iteration refuses it instead of reading
/// whatever it points at (a root-only file, a FIFO, a device whose open has effects:
/// the node is looked at with `fstatat` before it is opened).
fn open_archive(archive: &Path, trust: &Trust) -> Result<File, UntarError> {
    let err = |source| UntarError::OpenArchive { path: archive.into(), source };
    if matches!(trust, Trust::Own) {
        return File::open(archive).map_err(err);
    }
    let name = archive.file_name().ok_or_else(|| err(io::Error::from_raw_os_error(libc::EINVAL)))?;
    let name = std::ffi::CString::new(name.as_bytes()).map_err(|_| err(io::Error::from_raw_os_error(libc::EINVAL)))?;
    let here = archive.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let dir = crate::beneath::open_dir_nofollow(here).map_err(err)?;
    let not_regular = || err(io::Error::other("not a regular file (an archive is never read through a link)"));
    // SAFETY: an all-zero stat is a valid value for fstatat to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid fd, C string and stat buffer; the final name is not followed.
    if unsafe { libc::fstatat(dir.as_raw_fd(), name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) } < 0 {
        return Err(err(io::Error::last_os_error()));
    }
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(not_regular());
    }
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
    // SAFETY: valid fd and C string.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags) };
    if fd < 0 {
        return Err(err(io::Error::last_os_error()));
    }
    // SAFETY: a fresh fd owned by nobody else.
    let file = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    let opened = file.metadata().map_err(err)?;
    if !opened.is_file() || opened.ino() != st.st_ino as u64 || opened.dev() != st.st_dev as u64 {
        return Err(not_regular());
    }
    Ok(file)
}

/// Most refused entries a dry run lists (the rest are counted by the first ones' pattern).
pub const MAX_LISTED_REFUSALS: usize = 50;
