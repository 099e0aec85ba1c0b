//! Where the index lives and how it is opened: `<results root>/.fsbench-index/index.sqlite`,
//! in a directory fsbench makes itself (mode 0700), checked like the result store checks a
//! directory it did not make (a real directory, not a link, owned by the effective uid), and
//! opened through that directory's fd.
//!
//! SQLite resolves the `/proc/self/fd/<dirfd>/index.sqlite` name it is given into the real
//! path before opening (and names its journal from it), so the directory's ancestors are
//! checked as `run --resume` checks a run's: no other user may be able to swap one. After
//! opening, the file SQLite holds open is checked to be the one in the checked directory.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use crate::beneath::{self, Resolver};
use crate::results::safe;

/// The index directory's name, inside the results root.
pub const INDEX_DIR: &str = ".fsbench-index";
/// The database's name, inside [`INDEX_DIR`].
pub const INDEX_FILE: &str = "index.sqlite";
/// The largest index file opened: an index of 10,000 runs of 100 cells is far below it; a
/// bigger file is not read (removed and built again from the run directories).
pub const MAX_INDEX_BYTES: i64 = 1 << 30;
/// Files SQLite keeps beside the database while writing.
const SIDE_FILES: [&str; 3] = ["index.sqlite-journal", "index.sqlite-wal", "index.sqlite-shm"];

/// The index directory, open and checked.
pub struct IndexDir {
    /// Its fd: everything in it is reached from here.
    fd: OwnedFd,
    /// Its path, for messages.
    pub shown: PathBuf,
}

/// Open (making it when missing) the index directory of the results root `root`; the reason
/// when it cannot be used.
pub fn open_index_dir(root: &Path) -> Result<IndexDir, String> {
    let shown = root.join(INDEX_DIR);
    let fail = |e: &dyn std::fmt::Display| format!("{}: {e}", shown.display());
    // The root is the caller's choice (the parent of the directory named): a link to it is followed.
    let root_fd = safe::open_dir(root).map_err(|e| format!("{}: {e}", root.display()))?;
    let name = beneath::plain_name(INDEX_DIR).map_err(|e| fail(&e))?;
    match beneath::mkdir_beneath(&root_fd, &name, 0o700, Resolver::Auto) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(fail(&e)),
    }
    let fd = safe::open_subdir(&root_fd, INDEX_DIR).map_err(|e| fail(&e))?;
    safe::check_owned(&fd, &shown).map_err(|e| e.to_string())?;
    let st = safe::stat(&fd).map_err(|e| fail(&e))?;
    if st.st_mode & 0o077 != 0 {
        return Err(format!(
            "{} has mode {:04o}: others could read or change the index; fsbench makes it 0700 (remove it to have \
             it made again)",
            shown.display(),
            st.st_mode & 0o7777
        ));
    }
    safe::check_ancestors(&fd).map_err(|e| format!("{}: {e}", shown.display()))?;
    Ok(IndexDir { fd, shown })
}

impl IndexDir {
    /// The database's path as SQLite is given it: through the directory's fd.
    fn db_path(&self) -> String {
        format!("/proc/self/fd/{}/{INDEX_FILE}", self.fd.as_raw_fd())
    }

    /// The database file's (device, inode) when it is there: `Err` with the reason when what is
    /// there is not a plain file of ours (a link, a directory, another user's, hard-linked).
    fn db_file(&self) -> Result<Option<(u64, u64)>, String> {
        let name = beneath::plain_name(INDEX_FILE).map_err(|e| e.to_string())?;
        // SAFETY: st is plain data; fstatat fills it for a valid fd and name.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstatat(self.fd.as_raw_fd(), name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) } < 0 {
            let e = std::io::Error::last_os_error();
            return if e.kind() == std::io::ErrorKind::NotFound { Ok(None) } else { Err(e.to_string()) };
        }
        // SAFETY: geteuid cannot fail.
        let euid = unsafe { libc::geteuid() };
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err("not a regular file (a link or a directory)".into());
        }
        if st.st_uid != euid {
            return Err(format!("owned by uid {}, not {euid}", st.st_uid));
        }
        if st.st_nlink != 1 {
            return Err(format!("{} hard links to it", st.st_nlink));
        }
        if st.st_size > MAX_INDEX_BYTES {
            return Err(format!("{} bytes, more than the {MAX_INDEX_BYTES} an index may take", st.st_size));
        }
        Ok(Some((st.st_dev, st.st_ino)))
    }

    /// Remove the database and SQLite's side files (a link among them is removed, not followed).
    pub fn remove_db(&self) {
        for name in std::iter::once(INDEX_FILE).chain(SIDE_FILES) {
            if let Ok(c) = beneath::plain_name(name) {
                let at = self.fd.as_raw_fd();
                // SAFETY: valid fd and name; unlinkat never follows a link. A failure shows at the next open.
                if unsafe { libc::unlinkat(at, c.as_ptr(), 0) } < 0 {
                    // A directory planted at the name.
                    unsafe { libc::unlinkat(at, c.as_ptr(), libc::AT_REMOVEDIR) };
                }
            }
        }
    }

    /// Open the database; what was at its name and could not be trusted is removed first, and
    /// said in `notes`.
    pub fn open(&self, notes: &mut Vec<String>) -> Result<rusqlite::Connection, String> {
        for name in SIDE_FILES {
            self.refuse_foreign_side_file(name, notes);
        }
        if let Err(why) = self.db_file() {
            notes.push(format!("{}: {why}; removed, the index is built again", self.shown.join(INDEX_FILE).display()));
            self.remove_db();
        }
        use rusqlite::OpenFlags;
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = rusqlite::Connection::open_with_flags(self.db_path(), flags).map_err(|e| e.to_string())?;
        // Another fsbench may be writing: wait for it rather than fail at once.
        conn.busy_timeout(std::time::Duration::from_secs(20)).map_err(|e| e.to_string())?;
        let Some(expected) = self.db_file()? else { return Err("the database vanished as it was opened".into()) };
        if !holds_open(expected) {
            return Err("the database SQLite opened is not the one in the index directory".into());
        }
        Ok(conn)
    }

    /// A journal SQLite would trust that is not a plain file of ours is removed.
    fn refuse_foreign_side_file(&self, name: &str, notes: &mut Vec<String>) {
        let Ok(c) = beneath::plain_name(name) else { return };
        // SAFETY: st is plain data; fstatat fills it for a valid fd and name.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstatat(self.fd.as_raw_fd(), c.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) } < 0 {
            return;
        }
        // SAFETY: geteuid cannot fail.
        let ours = st.st_uid == unsafe { libc::geteuid() } && st.st_mode & libc::S_IFMT == libc::S_IFREG;
        if !ours || st.st_nlink != 1 {
            notes
                .push(format!("{}: not a plain file of ours; removed with the index", self.shown.join(name).display()));
            self.remove_db();
        }
    }
}

/// Whether this process holds open the file with this (device, inode).
fn holds_open((dev, ino): (u64, u64)) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(fds) = std::fs::read_dir("/proc/self/fd") else { return false };
    fds.filter_map(|e| e.ok()).any(|e| std::fs::metadata(e.path()).is_ok_and(|m| m.dev() == dev && m.ino() == ino))
}
