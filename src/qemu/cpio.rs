//! A writer for the "newc" cpio format, the one Linux unpacks as an initramfs.
//!
//! Small on purpose: regular files, directories and symlinks, written in the
//! order given. The kernel does not create missing parent directories, so the
//! writer adds every parent once, before the first entry beneath it.

use std::collections::BTreeSet;
use std::io::{self, Write};

/// Mode bits of a directory entry (`S_IFDIR`).
const S_IFDIR: u32 = 0o040000;
/// Mode bits of a regular file (`S_IFREG`).
const S_IFREG: u32 = 0o100000;
/// Mode bits of a symlink (`S_IFLNK`).
const S_IFLNK: u32 = 0o120000;
/// Mode bits of a character device (`S_IFCHR`).
const S_IFCHR: u32 = 0o020000;

/// Streams a newc archive into `W`; call [`CpioWriter::finish`] to write the trailer.
pub struct CpioWriter<W: Write> {
    out: W,
    written: u64,
    next_ino: u32,
    dirs: BTreeSet<String>,
    /// Device numbers of the entry being written (character devices only).
    rdev: (u32, u32),
}

impl<W: Write> CpioWriter<W> {
    /// A writer with nothing written yet.
    pub fn new(out: W) -> Self {
        CpioWriter { out, written: 0, next_ino: 1, dirs: BTreeSet::new(), rdev: (0, 0) }
    }

    /// Add a directory (and its parents); adding one twice is a no-op.
    pub fn dir(&mut self, path: &str) -> io::Result<()> {
        let path = normalize(path)?;
        let mut prefix = String::new();
        for part in path.split('/') {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            if self.dirs.insert(prefix.clone()) {
                let name = prefix.clone();
                self.entry(&name, S_IFDIR | 0o755, &[])?;
            }
        }
        Ok(())
    }

    /// Add a regular file with `mode` permission bits (parents added as needed).
    pub fn file(&mut self, path: &str, mode: u32, data: &[u8]) -> io::Result<()> {
        let path = normalize(path)?;
        self.parents(&path)?;
        self.entry(&path, S_IFREG | (mode & 0o7777), data)
    }

    /// Add a symlink `path -> target`.
    pub fn symlink(&mut self, path: &str, target: &str) -> io::Result<()> {
        let path = normalize(path)?;
        self.parents(&path)?;
        self.entry(&path, S_IFLNK | 0o777, target.as_bytes())
    }

    /// Add a character device node (`/dev/console` is 5:1).
    pub fn chardev(&mut self, path: &str, mode: u32, major: u32, minor: u32) -> io::Result<()> {
        let path = normalize(path)?;
        self.parents(&path)?;
        self.rdev = (major, minor);
        let r = self.entry(&path, S_IFCHR | (mode & 0o7777), &[]);
        self.rdev = (0, 0);
        r
    }

    /// Write the `TRAILER!!!` entry and return the inner writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.entry("TRAILER!!!", 0, &[])?;
        self.out.flush()?;
        Ok(self.out)
    }

    fn parents(&mut self, path: &str) -> io::Result<()> {
        match path.rsplit_once('/') {
            Some((parent, _)) => self.dir(parent),
            None => Ok(()),
        }
    }

    fn entry(&mut self, name: &str, mode: u32, data: &[u8]) -> io::Result<()> {
        let ino = if name == "TRAILER!!!" { 0 } else { self.next_ino };
        self.next_ino += 1;
        let nlink = if mode & 0o170000 == S_IFDIR { 2 } else { 1 };
        let size = u32::try_from(data.len()).map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidInput, format!("{name}: larger than 4 GiB, too big for cpio newc"))
        })?;
        // c_magic, ino, mode, uid, gid, nlink, mtime, filesize, devmajor, devminor,
        // rdevmajor, rdevminor, namesize (with the NUL), check.
        let header = format!(
            "070701{ino:08x}{mode:08x}{:08x}{:08x}{nlink:08x}{:08x}{size:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}",
            0,
            0,
            0,
            0,
            0,
            self.rdev.0,
            self.rdev.1,
            name.len() + 1,
            0
        );
        self.put(header.as_bytes())?;
        self.put(name.as_bytes())?;
        self.put(&[0])?;
        self.pad()?;
        self.put(data)?;
        self.pad()
    }

    fn put(&mut self, b: &[u8]) -> io::Result<()> {
        self.out.write_all(b)?;
        self.written += b.len() as u64;
        Ok(())
    }

    /// Header+name and data are each padded to a multiple of 4 bytes.
    fn pad(&mut self) -> io::Result<()> {
        let n = (4 - (self.written % 4) as usize) % 4;
        self.put(&[0u8; 3][..n])
    }
}

/// Archive names are relative (`bin/x`, not `/bin/x`) and never climb out.
fn normalize(path: &str) -> io::Result<String> {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
    if parts.is_empty() || parts.contains(&"..") {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("bad initramfs path `{path}`")));
    }
    Ok(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parse a newc archive back into (name, mode, data) triples.
    fn parse(mut b: &[u8]) -> Vec<(String, u32, Vec<u8>)> {
        let mut out = Vec::new();
        let mut off = 0usize;
        loop {
            assert_eq!(&b[..6], b"070701", "magic at offset {off}");
            let field =
                |i: usize| u32::from_str_radix(std::str::from_utf8(&b[6 + i * 8..14 + i * 8]).unwrap(), 16).unwrap();
            let (mode, size, namesize) = (field(1), field(6) as usize, field(11) as usize);
            let name = String::from_utf8(b[110..110 + namesize - 1].to_vec()).unwrap();
            let hdr = (110 + namesize).div_ceil(4) * 4;
            let data = b[hdr..hdr + size].to_vec();
            let total = hdr + size.div_ceil(4) * 4;
            off += total;
            b = &b[total..];
            if name == "TRAILER!!!" {
                assert!(b.is_empty(), "nothing after the trailer");
                return out;
            }
            out.push((name, mode, data));
        }
    }

    #[test]
    fn round_trips_files_dirs_and_symlinks_with_parents_first() {
        let mut w = CpioWriter::new(Vec::new());
        w.file("/lib/x86_64-linux-gnu/libc.so.6", 0o755, b"hello").unwrap();
        w.symlink("etc/mtab", "/proc/self/mounts").unwrap();
        w.file("lib/x", 0o644, b"").unwrap();
        w.dir("lib").unwrap();
        w.chardev("dev/console", 0o600, 5, 1).unwrap();
        let bytes = w.finish().unwrap();
        assert_eq!(bytes.len() % 4, 0);
        let entries = parse(&bytes);
        let names: Vec<&str> = entries.iter().map(|e| e.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "lib",
                "lib/x86_64-linux-gnu",
                "lib/x86_64-linux-gnu/libc.so.6",
                "etc",
                "etc/mtab",
                "lib/x",
                "dev",
                "dev/console"
            ]
        );
        assert_eq!(entries[7].1, 0o020600);
        assert_eq!(entries[2].1, 0o100755);
        assert_eq!(entries[2].2, b"hello");
        assert_eq!(entries[0].1, 0o040755);
        assert_eq!(entries[4].1, 0o120777);
        assert_eq!(entries[4].2, b"/proc/self/mounts");
    }

    #[test]
    fn odd_sizes_are_padded_to_four_bytes() {
        for len in 0..9 {
            let mut w = CpioWriter::new(Vec::new());
            w.file("a", 0o644, &vec![7u8; len]).unwrap();
            let e = parse(&w.finish().unwrap());
            assert_eq!(e[0].2.len(), len);
        }
    }

    #[test]
    fn climbing_paths_are_refused() {
        let mut w = CpioWriter::new(Vec::new());
        assert!(w.file("../etc/passwd", 0o644, b"").is_err());
        assert!(w.file("/", 0o644, b"").is_err());
    }
}
