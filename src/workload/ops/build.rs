//! Building a fileset on disk before the timed window: its directories (each held
//! open, `O_PATH`, for the workers' `*at` calls) and its preallocated files with their
//! declared sizes written. A fileset marked `reuse` whose tree a previous repetition left
//! is taken as it is: its entries' existence is read back instead of rebuilt.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::time::Instant;

use super::error::OpsError;
use super::fileset::FilesetState;
use super::layout::{Layout, size_histogram};
use super::spec::FilesetSpec;
use super::sys::{self, Name};
use crate::model::FilesetRecord;

/// Chunk of the preallocating writes.
const BUILD_CHUNK: usize = 1 << 20;

/// A fileset built (or found) beneath the cell's directory.
pub struct Built {
    /// The state the workers share.
    pub state: FilesetState,
    /// What was built, for the cell file.
    pub record: FilesetRecord,
}

/// Build `spec` in `cell_dir` (whose fd is `cell_fd`) from `seed`, holding at most
/// `fd_budget` directories open; `cancel` is polled every thousand files.
pub fn build(
    cell_dir: &Path,
    cell_fd: RawFd,
    spec: &FilesetSpec,
    seed: u64,
    cancel: &dyn Fn() -> bool,
    fd_budget: u64,
) -> Result<Built, OpsError> {
    let started = Instant::now();
    let layout = Layout::draw(spec, seed);
    if layout.dirs.len() as u64 + 64 > fd_budget {
        return Err(OpsError::TooManyDirs { need: layout.dirs.len() as u64 + 64, limit: fd_budget });
    }
    let name = sys::plain(&spec.name).map_err(|e| err(spec, "name", &spec.name, e))?;
    let present = match sys::stat_at(cell_fd, &name) {
        Ok(st) => st.st_mode & libc::S_IFMT == libc::S_IFDIR,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => false,
        Err(e) => return Err(err(spec, "stat", &spec.name, e)),
    };
    if present
        && spec.reuse
        && let Some(b) = reuse(cell_fd, spec, seed, &layout, started)?
    {
        return Ok(b);
    }
    if present {
        crate::workload::steps::rm_rf_beneath(cell_dir, &spec.name, cancel).map_err(|e| match e {
            crate::workload::steps::RmError::Interrupted => OpsError::Interrupted,
            crate::workload::steps::RmError::Io { source, .. } => err(spec, "remove", &spec.name, source),
        })?;
    }
    let fds = make_dirs(cell_fd, spec, &layout)?;
    let buf = pattern(BUILD_CHUNK);
    let mut exists = vec![false; layout.files.len()];
    let mut bytes = 0u64;
    for (i, f) in layout.files.iter().enumerate() {
        if !f.prealloc {
            continue;
        }
        if i % 1000 == 0 && cancel() {
            return Err(OpsError::Interrupted);
        }
        let path = || format!("{}/{:08}", layout.dir_path(&spec.name, f.dir), f.serial);
        let dir = fds[f.dir as usize].as_raw_fd();
        let fd =
            sys::openat(dir, Name::serial(f.serial).as_cstr(), libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY, 0o644)
                .map_err(|e| err(spec, "create", &path(), e))?;
        bytes += sys::write_from_start(fd.as_raw_fd(), &buf, f.size, BUILD_CHUNK)
            .map_err(|e| err(spec, "write", &path(), e))?;
        exists[i] = true;
    }
    let record = record(spec, seed, &layout, &exists, bytes, false, started);
    let state = FilesetState::new(spec.name.clone(), spec.read_only, layout.dirs, layout.files, fds, &exists)
        .map_err(|e| err(spec, "map", "its pick state", e))?;
    Ok(Built { state, record })
}

fn reuse(
    cell_fd: RawFd,
    spec: &FilesetSpec,
    seed: u64,
    layout: &Layout,
    started: Instant,
) -> Result<Option<Built>, OpsError> {
    let mut fds: Vec<OwnedFd> = Vec::with_capacity(layout.dirs.len());
    for (i, d) in layout.dirs.iter().enumerate() {
        let (parent, name) = if i == 0 {
            (cell_fd, sys::plain(&spec.name).map_err(|e| err(spec, "name", &spec.name, e))?)
        } else {
            (fds[d.parent as usize].as_raw_fd(), Name::serial(d.serial).as_cstr().to_owned())
        };
        match sys::openat(parent, &name, libc::O_PATH | libc::O_DIRECTORY, 0) {
            Ok(fd) => fds.push(fd),
            // Not the tree this seed draws: build it afresh.
            Err(_) => return Ok(None),
        }
    }
    let mut exists = vec![false; layout.files.len()];
    let mut bytes = 0;
    for (i, f) in layout.files.iter().enumerate() {
        if let Ok(st) = sys::stat_at(fds[f.dir as usize].as_raw_fd(), Name::serial(f.serial).as_cstr()) {
            exists[i] = st.st_mode & libc::S_IFMT == libc::S_IFREG;
            bytes += st.st_size as u64;
        }
    }
    let record = record(spec, seed, layout, &exists, bytes, true, started);
    let state =
        FilesetState::new(spec.name.clone(), spec.read_only, layout.dirs.clone(), layout.files.clone(), fds, &exists)
            .map_err(|e| err(spec, "map", "its pick state", e))?;
    Ok(Some(Built { state, record }))
}

/// mkdir every directory of the layout (parents first) and hold each open.
fn make_dirs(cell_fd: RawFd, spec: &FilesetSpec, layout: &Layout) -> Result<Vec<OwnedFd>, OpsError> {
    let mut fds: Vec<OwnedFd> = Vec::with_capacity(layout.dirs.len());
    for (i, d) in layout.dirs.iter().enumerate() {
        let (parent, name) = if i == 0 {
            (cell_fd, sys::plain(&spec.name).map_err(|e| err(spec, "name", &spec.name, e))?)
        } else {
            (fds[d.parent as usize].as_raw_fd(), Name::serial(d.serial).as_cstr().to_owned())
        };
        let path = || layout.dir_path(&spec.name, i as u32);
        sys::mkdir_at(parent, &name, 0o755).map_err(|e| err(spec, "mkdir", &path(), e))?;
        let fd = sys::openat(parent, &name, libc::O_PATH | libc::O_DIRECTORY, 0)
            .map_err(|e| err(spec, "open", &path(), e))?;
        fds.push(fd);
    }
    Ok(fds)
}

fn record(
    spec: &FilesetSpec,
    seed: u64,
    layout: &Layout,
    exists: &[bool],
    bytes: u64,
    reused: bool,
    started: Instant,
) -> FilesetRecord {
    FilesetRecord {
        name: spec.name.clone(),
        seed,
        entries: layout.files.len() as u64,
        dirs: layout.dirs.len() as u64,
        leaf_dirs: layout.leaf_dirs().len() as u64,
        preallocated: exists.iter().filter(|&&e| e).count() as u64,
        bytes,
        size_histogram: size_histogram(layout.files.iter().map(|f| f.size)),
        reused,
        build_s: started.elapsed().as_secs_f64(),
    }
}

/// A buffer of `len` bytes of a fixed, not trivially compressible pattern.
pub fn pattern(len: usize) -> Vec<u8> {
    let mut rng = crate::rng::SplitMix64::new(0x0f5b_e4c4);
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        v.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    v.truncate(len);
    v
}

fn err(spec: &FilesetSpec, what: &'static str, path: &str, source: std::io::Error) -> OpsError {
    OpsError::Build { fileset: spec.name.clone(), what, path: path.to_string(), source }
}
