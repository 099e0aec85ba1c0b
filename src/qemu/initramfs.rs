//! The guest's initramfs: fsbench as `/init`, the tools its cells run, their
//! shared libraries, the kernel modules, the scenario and its fixtures.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::QemuError;
use super::cpio::CpioWriter;

/// Where fsbench lives in the guest; the kernel runs it as init (`rdinit=`).
pub const GUEST_EXE: &str = "/fsbench";
/// The guest's configuration file, written by the host.
pub const GUEST_CONFIG: &str = "/fsbench.d/guest.json";
/// Directory of the guest's kernel modules.
pub const GUEST_MODULES: &str = "/fsbench.d/modules";
/// The guest's fixture cache (`XDG_CACHE_HOME`).
pub const GUEST_CACHE: &str = "/fsbench.d/cache";
/// The host's `perf`, packed when the scenario profiles: on the guest runner's `PATH`.
pub const GUEST_PERF: &str = "/usr/bin/perf";

/// What goes into one initramfs.
#[derive(Debug, Default)]
pub struct Contents {
    /// Host executables to copy with their libraries: (host path, guest path).
    pub programs: Vec<(PathBuf, String)>,
    /// Plain files: (host path, guest path).
    pub files: Vec<(PathBuf, String)>,
    /// Generated files: (guest path, bytes).
    pub data: Vec<(String, Vec<u8>)>,
    /// Kernel modules: (bytes, guest path).
    pub modules: Vec<(Vec<u8>, String)>,
}

/// The shared libraries (and the dynamic loader) an executable needs, from `ldd`.
/// A static executable needs none.
pub fn shared_libraries(exe: &Path) -> Result<Vec<PathBuf>, QemuError> {
    let out = crate::signals::default_in_child(&mut std::process::Command::new("ldd"))
        .arg(exe)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| QemuError::Io { what: "run ldd".into(), path: exe.to_path_buf(), source: e })?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        // ldd says "not a dynamic executable" (on stderr or stdout) for static binaries.
        let all = format!("{text}{}", String::from_utf8_lossy(&out.stderr));
        if all.contains("not a dynamic executable") || all.contains("statically linked") {
            return Ok(Vec::new());
        }
        return Err(QemuError::Initramfs { what: format!("ldd {} failed: {}", exe.display(), all.trim()) });
    }
    parse_ldd(&text).map_err(|what| QemuError::Initramfs { what: format!("{}: {what}", exe.display()) })
}

/// Parse `ldd` output: `libc.so.6 => /lib/.../libc.so.6 (0x..)`, `/lib64/ld-linux-x86-64.so.2 (0x..)`.
pub fn parse_ldd(text: &str) -> Result<Vec<PathBuf>, String> {
    let mut libs = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line.contains("statically linked") {
            continue;
        }
        let path = match line.split_once("=>") {
            Some((name, rest)) => {
                let target = rest.split_whitespace().next().unwrap_or("");
                if target == "not" {
                    return Err(format!("shared library {} not found", name.trim()));
                }
                target
            }
            None => line.split_whitespace().next().unwrap_or(""),
        };
        // linux-vdso.so.1 has no file; only absolute paths are real libraries.
        if path.starts_with('/') {
            libs.push(PathBuf::from(path));
        }
    }
    Ok(libs)
}

/// Write the initramfs (newc cpio, gzip) to `dest`; returns its size in bytes.
pub fn write(contents: &Contents, dest: &Path) -> Result<u64, QemuError> {
    let io = |what: &str, path: &Path| {
        let (what, path) = (what.to_string(), path.to_path_buf());
        move |e| QemuError::Io { what, path, source: e }
    };
    let file = std::fs::File::create(dest).map_err(io("create initramfs", dest))?;
    // Fast compression: the image is written once per run and unpacked once by the guest.
    let gz = flate2::write::GzEncoder::new(std::io::BufWriter::new(file), flate2::Compression::fast());
    let mut w = CpioWriter::new(gz);
    let wr = |e| QemuError::Io { what: "write initramfs".into(), path: dest.to_path_buf(), source: e };
    // Checked between files: a Ctrl-C while a large image is compressed ends the build.
    let go_on = || {
        if crate::signals::interrupted() {
            return Err(wr(std::io::Error::new(std::io::ErrorKind::Interrupted, "interrupted")));
        }
        Ok(())
    };
    for d in ["dev", "proc", "sys", "tmp", "run", "root", "etc", "results"] {
        w.dir(d).map_err(wr)?;
    }
    // The kernel opens /dev/console for init's stdio before devtmpfs is mounted.
    w.chardev("dev/console", 0o600, 5, 1).map_err(wr)?;
    w.symlink("etc/mtab", "/proc/self/mounts").map_err(wr)?;
    w.file("etc/passwd", 0o644, b"root:x:0:0:root:/root:/fsbench\n").map_err(wr)?;
    w.file("etc/group", 0o644, b"root:x:0:\n").map_err(wr)?;

    let mut added: BTreeSet<String> = BTreeSet::new();
    let mut libs: BTreeSet<PathBuf> = BTreeSet::new();
    for (host, guest) in &contents.programs {
        go_on()?;
        let bytes = std::fs::read(host).map_err(io("read program", host))?;
        w.file(guest, 0o755, &bytes).map_err(wr)?;
        added.insert(guest.clone());
        libs.extend(shared_libraries(host)?);
    }
    for lib in &libs {
        let guest = lib.to_string_lossy().into_owned();
        go_on()?;
        if added.insert(guest.clone()) {
            // Follow symlinks (ld.so, libfoo.so.1 -> libfoo.so.1.2.3): the guest gets the file under the name asked for.
            let bytes = std::fs::read(lib).map_err(io("read shared library", lib))?;
            w.file(&guest, 0o755, &bytes).map_err(wr)?;
        }
    }
    for (host, guest) in &contents.files {
        if added.insert(guest.clone()) {
            let bytes = std::fs::read(host).map_err(io("read file for the guest", host))?;
            w.file(guest, 0o644, &bytes).map_err(wr)?;
        }
    }
    for (guest, bytes) in &contents.data {
        w.file(guest, 0o644, bytes).map_err(wr)?;
    }
    for (bytes, guest) in &contents.modules {
        go_on()?;
        w.file(guest, 0o644, bytes).map_err(wr)?;
    }
    go_on()?;
    let gz = w.finish().map_err(wr)?;
    let mut buf = gz.finish().map_err(wr)?;
    buf.flush().map_err(wr)?;
    drop(buf);
    Ok(std::fs::metadata(dest).map(|m| m.len()).unwrap_or(0))
}

/// The directories holding `libs`, for the guest's `LD_LIBRARY_PATH`.
pub fn library_dirs(libs: &[PathBuf]) -> Vec<String> {
    let mut dirs: Vec<String> = Vec::new();
    for l in libs {
        if let Some(d) = l.parent().map(|d| d.to_string_lossy().into_owned())
            && !dirs.contains(&d)
        {
            dirs.push(d);
        }
    }
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldd_output_gives_libraries_and_the_loader() {
        let text = "\tlinux-vdso.so.1 (0x00007ffc)\n\tlibext2fs.so.2 => /lib/x86_64-linux-gnu/libext2fs.so.2 (0x00007f)\n\t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n";
        let libs = parse_ldd(text).unwrap();
        assert_eq!(
            libs,
            [PathBuf::from("/lib/x86_64-linux-gnu/libext2fs.so.2"), PathBuf::from("/lib64/ld-linux-x86-64.so.2")]
        );
        assert!(parse_ldd("\tlibfoo.so.1 => not found\n").unwrap_err().contains("libfoo.so.1"));
        assert!(parse_ldd("\tstatically linked\n").unwrap().is_empty());
    }

    #[test]
    fn a_real_program_and_its_libraries_go_in() {
        let t = tempfile::tempdir().unwrap();
        let sh = PathBuf::from("/bin/sh");
        let c = Contents {
            programs: vec![(sh, "/sbin/sh".into())],
            data: vec![("/x/y".into(), b"z".to_vec())],
            ..Default::default()
        };
        let out = t.path().join("i.cpio.gz");
        let size = write(&c, &out).unwrap();
        assert!(size > 1000);
        let mut raw = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(std::fs::File::open(&out).unwrap()), &mut raw)
            .unwrap();
        let text = String::from_utf8_lossy(&raw);
        for name in ["sbin/sh\0", "dev/console\0", "x/y\0", "libc.so.6\0", "TRAILER!!!\0"] {
            assert!(text.contains(name), "{name} missing");
        }
    }
}
