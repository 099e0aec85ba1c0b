//! An op mix's entries must have inodes: on a `tmpfs-loop` image formatted ext2/3/4, mkfs
//! makes a fixed number of them (one per `inode_ratio` bytes of the image, mke2fs.conf's
//! 16 KiB above 512 MiB, or `-N`/`-i` given in `mkfs`), and a fileset with more entries
//! and directories than that fails at its first ENOSPC, however much space is left.
//! Refused here with the arithmetic, as the bytes are in `ops.rs`.

use crate::scenario::diagnose::{Ctx, p};
use crate::scenario::file::ScenarioFile;
use crate::scenario::ops_spec::OpsWorkload;
use crate::scenario::units::format_size;
use crate::scenario::{Backing, ScenarioError};

/// Inodes mke2fs makes on an image of `image` bytes with these `mkfs` arguments (its
/// defaults of mke2fs.conf: `floppy` below 3 MiB, `small` below 512 MiB, 16 KiB otherwise).
pub fn ext_inodes(image: u64, mkfs: &[String]) -> u64 {
    let arg = |flag: &str| {
        mkfs.iter().enumerate().find_map(|(i, a)| {
            if a == flag {
                mkfs.get(i + 1).and_then(|v| v.parse::<u64>().ok())
            } else {
                a.strip_prefix(flag).and_then(|v| v.parse::<u64>().ok())
            }
        })
    };
    if let Some(n) = arg("-N") {
        return n;
    }
    let ratio = arg("-i").filter(|&r| r > 0).unwrap_or(if image < 3 << 20 {
        8192
    } else if image < 512 << 20 {
        4096
    } else {
        16384
    });
    image / ratio
}

/// Inodes the filesets of `w` may take at once: every entry (each may exist at some point)
/// and the directories of its layout (about one per `dir_width` entries, and the levels
/// above), plus the filesystem's reserved inodes.
pub fn inodes_needed(w: &OpsWorkload) -> u64 {
    let mut n = 16;
    for f in &w.spec.filesets {
        let width = f.dir_width.max(2.0);
        let dirs = (f.entries as f64 / (width - 1.0)).ceil() as u64 + 1;
        n += f.entries + dirs;
    }
    n
}

/// Refuse an op mix whose entries outnumber the inodes of an ext2/3/4 `tmpfs-loop` image.
pub(super) fn inodes_fit(ctx: &Ctx, w: &OpsWorkload, f: &ScenarioFile, backing: &Backing) -> Result<(), ScenarioError> {
    let Backing::TmpfsLoop { image_size_m, image_size_s } = backing else { return Ok(()) };
    let image = (*image_size_m).min(*image_size_s);
    let need = inodes_needed(w);
    for name in &f.matrix.fs {
        let fs = f.filesystems.get(name);
        let ty = fs.and_then(|x| x.fs_type.as_deref()).unwrap_or(name);
        if !matches!(ty, "ext2" | "ext3" | "ext4") {
            continue;
        }
        let mkfs: &[String] = fs.map_or(&[], |x| &x.mkfs);
        let have = ext_inodes(image, mkfs);
        if need > have {
            let entries: u64 = w.spec.filesets.iter().map(|s| s.entries).sum();
            return Err(ctx.value_help(
                &p("workload.fileset"),
                format!(
                    "the filesets need about {need} inodes ({entries} entries and their directories), more than the \
                     {have} that mkfs.{ty} makes on the {} image (one per {} bytes)",
                    format_size(image),
                    image / have.max(1)
                ),
                format!(
                    "raise `backing.image_size` to at least {} (sparse: only what is written takes memory), pass \
                     `-N {}` in `[filesystems.{name}] mkfs`, or lower `scale`",
                    crate::text::bytes_short(need.saturating_mul(image / have.max(1)).saturating_mul(5) / 4),
                    need + need / 4
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inodes_follow_mke2fs_defaults_and_the_mkfs_arguments() {
        let none: Vec<String> = Vec::new();
        assert_eq!(ext_inodes(2 << 30, &none), 131_072);
        assert_eq!(ext_inodes(256 << 20, &none), 65_536);
        let n: Vec<String> = ["-E", "lazy_itable_init=0", "-N", "2000000"].iter().map(|s| s.to_string()).collect();
        assert_eq!(ext_inodes(2 << 30, &n), 2_000_000);
        let i: Vec<String> = ["-i4096"].iter().map(|s| s.to_string()).collect();
        assert_eq!(ext_inodes(2 << 30, &i), 524_288);
    }

    /// A 10,000,000-entry createfiles: a scenario as the shipped one, scaled.
    fn ten_million(image: &str, mkfs: &str) -> String {
        format!(
            "schema = 1\nname = \"big\"\n[matrix]\nfs = [\"ext4\"]\n[filesystems.ext4]\nmkfs = [{mkfs}]\n\
             [backing]\nkind = \"tmpfs-loop\"\nimage_size = \"{image}\"\n[workload]\nkind = \"ops\"\n\
             duration = \"10s\"\n[[workload.fileset]]\nname = \"f\"\nentries = 10000000\ndir_width = 100\n\
             size = \"16KiB\"\n[[workload.group]]\nname = \"c\"\nthreads = 1\nloop = [ {{ op = \"create\", \
             fileset = \"f\", fd = 1 }}, {{ op = \"close\", fd = 1 }} ]\n"
        )
    }

    #[test]
    fn ten_million_entries_on_a_default_ext4_image_are_refused_with_the_arithmetic() {
        let e = crate::scenario::parse_str(&ten_million("2GiB", ""), "big.toml").unwrap_err().to_string();
        assert!(e.contains("10101028 inodes"), "{e}");
        assert!(e.contains("10000000 entries"), "{e}");
        assert!(e.contains("131072 that mkfs.ext4 makes on the 2GiB image"), "{e}");
        assert!(e.contains("-N 12626285"), "{e}");
        // With the inodes asked of mkfs (and no file preallocated), it is planned.
        let s = crate::scenario::parse_str(&ten_million("400GiB", "\"-N\", \"12000000\""), "big.toml").unwrap();
        assert!(matches!(s.workload, crate::scenario::Workload::Ops(_)));
    }
}
