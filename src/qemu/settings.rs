//! What a scenario's `[[kernels]]` or a `--kernel` option may ask of the host, checked before
//! any boot: guest memory and CPUs within what this host has, and a kernel image and modules
//! directory that no other user can change or swap between the check and the boot.
//!
//! qemu opens the image by its path, after fsbench looked at it. So instead of trusting one
//! look, every link on the way must be root's or yours (a link is its owner's to re-point),
//! the file and its directory must be root's or yours and not writable by others (except a
//! sticky directory like /tmp), and so must every directory above it: then only root or you
//! can swap what the path names, before or after the check.

use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use crate::scenario::KernelSpec;

/// The most guest memory a kernel may ask for: half of the host's memory (qemu's RAM is the
/// host's; the cells' tmpfs and the host's own work need the rest).
pub fn max_guest_memory(host_memory: u64) -> u64 {
    host_memory / 2
}

/// Check `k`'s memory and CPUs against a host with `host_memory` bytes and `host_cpus` CPUs.
pub fn check_resources(k: &KernelSpec, host_memory: u64, host_cpus: u32) -> Result<(), String> {
    let gib = |b: u64| format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64);
    let max = max_guest_memory(host_memory);
    if host_memory > 0 && k.memory > max {
        return Err(format!(
            "guest memory {} is more than half of this host's {} (at most {}): lower `memory`",
            gib(k.memory),
            gib(host_memory),
            gib(max)
        ));
    }
    if host_cpus > 0 && k.cpus > host_cpus {
        return Err(format!(
            "cpus {} is more than this host's {host_cpus} CPUs (each guest CPU is a host thread under TCG): lower \
             `cpus`",
            k.cpus
        ));
    }
    Ok(())
}

/// Root, you, or the user who ran `sudo fsbench` (`SUDO_UID`: their own kernel tree under
/// their home is theirs to change anyway; the threat is a third user).
fn trusted_owner(uid: u32) -> bool {
    // SAFETY: geteuid cannot fail.
    let sudo = std::env::var("SUDO_UID").ok().and_then(|v| v.parse::<u32>().ok());
    uid == 0 || uid == unsafe { libc::geteuid() } || sudo == Some(uid)
}

/// Refuse `path` (an image or a modules directory) unless nobody but root or you can change
/// what it names: see the module's doc. `what` names it in the error.
pub fn check_path(path: &Path, what: &str) -> Result<(), String> {
    let shown = path.display();
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().map_err(|e| format!("{what} {shown}: {e}"))?.join(path)
    };
    // Every link on the way, as named: its owner decides where it points.
    let mut prefix = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::ParentDir => prefix.push(".."),
            other => prefix.push(other.as_os_str()),
        }
        let Ok(m) = std::fs::symlink_metadata(&prefix) else { continue };
        if m.file_type().is_symlink() && !trusted_owner(m.uid()) {
            return Err(format!(
                "{what} {shown}: {} is a symbolic link owned by uid {}: that user could point it elsewhere after \
                 fsbench checked it; name the file itself",
                prefix.display(),
                m.uid()
            ));
        }
    }
    let real = std::fs::canonicalize(&abs).map_err(|e| format!("{what} {shown}: {e}"))?;
    let m = std::fs::metadata(&real).map_err(|e| format!("{what} {shown}: {e}"))?;
    check_node(&real, &m, what, &shown.to_string())?;
    // The directories above it: whoever can write one can swap what is below.
    let mut dir = real.parent();
    while let Some(d) = dir {
        let dm = std::fs::metadata(d).map_err(|e| format!("{what} {shown}: {}: {e}", d.display()))?;
        check_node(d, &dm, what, &shown.to_string())?;
        dir = d.parent();
    }
    Ok(())
}

fn check_node(p: &Path, m: &std::fs::Metadata, what: &str, shown: &str) -> Result<(), String> {
    let here = if Path::new(shown) == p { String::new() } else { format!(" ({})", p.display()) };
    if !trusted_owner(m.uid()) {
        return Err(format!(
            "{what} {shown}{here} is owned by uid {}: that user could replace it after fsbench checked it; copy it \
             somewhere only root or you can write",
            m.uid()
        ));
    }
    let sticky_dir = m.is_dir() && m.mode() & 0o1000 != 0;
    if m.mode() & 0o022 != 0 && !sticky_dir {
        return Err(format!(
            "{what} {shown}{here} has mode {:04o}: others could change it after fsbench checked it",
            m.mode() & 0o7777
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn spec(memory: u64, cpus: u32) -> KernelSpec {
        KernelSpec { label: "A".into(), image: "/x".into(), modules: None, cmdline: String::new(), memory, cpus }
    }

    #[test]
    fn guest_memory_and_cpus_are_bounded_by_the_host() {
        let host = 24u64 << 30;
        assert_eq!(check_resources(&spec(2 << 30, 2), host, 2), Ok(()));
        assert_eq!(check_resources(&spec(12 << 30, 2), host, 2), Ok(()));
        let e = check_resources(&spec(1 << 40, 2), host, 2).unwrap_err();
        assert!(e.contains("1024.0 GiB") && e.contains("12.0 GiB") && e.contains("`memory`"), "{e}");
        let e = check_resources(&spec(1 << 30, 256), host, 2).unwrap_err();
        assert!(e.contains("cpus 256") && e.contains("2 CPUs"), "{e}");
    }

    #[test]
    fn an_image_others_can_write_or_a_link_of_another_user_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let img = d.path().join("vmlinuz");
        std::fs::write(&img, b"k").unwrap();
        std::fs::set_permissions(&img, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(check_path(&img, "kernel image"), Ok(()));
        // A link of our own is followed.
        let own = d.path().join("own-link");
        std::os::unix::fs::symlink(&img, &own).unwrap();
        assert_eq!(check_path(&own, "kernel image"), Ok(()));
        std::fs::set_permissions(&img, std::fs::Permissions::from_mode(0o666)).unwrap();
        let e = check_path(&own, "kernel image").unwrap_err();
        assert!(e.contains("mode 0666"), "{e}");
        std::fs::set_permissions(&img, std::fs::Permissions::from_mode(0o644)).unwrap();
        // A directory others can write (not sticky) on the way.
        let open = d.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::write(open.join("vmlinuz"), b"k").unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = check_path(&open.join("vmlinuz"), "kernel image").unwrap_err();
        assert!(e.contains("mode 0777") && e.contains("open"), "{e}");
        if unsafe { libc::geteuid() } == 0 {
            // A link owned by another user (nobody): refused, whatever it points at.
            let theirs = d.path().join("their-link");
            std::os::unix::fs::symlink(&img, &theirs).unwrap();
            std::os::unix::fs::lchown(&theirs, Some(65534), Some(65534)).unwrap();
            let e = check_path(&theirs, "kernel image").unwrap_err();
            assert!(e.contains("symbolic link owned by uid 65534"), "{e}");
            // An image in a directory another user owns: they could rename another file over it.
            let home = d.path().join("home");
            std::fs::create_dir(&home).unwrap();
            std::fs::write(home.join("vmlinuz"), b"k").unwrap();
            std::os::unix::fs::chown(&home, Some(65534), Some(65534)).unwrap();
            let e = check_path(&home.join("vmlinuz"), "kernel image").unwrap_err();
            assert!(e.contains("owned by uid 65534") && e.contains("home"), "{e}");
        }
    }
}
