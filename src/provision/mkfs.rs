//! Making filesystems with the distribution's `mkfs.<fs>` tools.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::ProvisionError;

/// Directories searched besides $PATH: non-root shells often lack sbin.
const SBIN_DIRS: [&str; 4] = ["/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/bin"];

/// Find an executable by name on $PATH or in the sbin directories.
pub fn find_tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(SBIN_DIRS.iter().map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

/// The Debian package that ships `mkfs.<fs>`, for the remedy text only (an
/// unknown fs still gets a generic remedy; names are never rejected here).
pub fn package_for(fs: &str) -> Option<&'static str> {
    Some(match fs {
        "ext2" | "ext3" | "ext4" => "e2fsprogs",
        "xfs" => "xfsprogs",
        "btrfs" => "btrfs-progs",
        "f2fs" => "f2fs-tools",
        "nilfs2" => "nilfs-tools",
        "jfs" => "jfsutils",
        "reiserfs" => "reiserfsprogs",
        "vfat" | "fat" | "msdos" => "dosfstools",
        "exfat" => "exfatprogs",
        "bcachefs" => "bcachefs-tools",
        "udf" => "udftools",
        _ => return None,
    })
}

/// Remedy for a missing `mkfs.<fs>`.
pub fn remedy_for(fs: &str) -> String {
    if let Some(pkg) = package_for(fs) {
        return format!("apt-get install {pkg}");
    }
    let formattable = formattable_types();
    let can = if formattable.is_empty() {
        String::new()
    } else {
        format!("; this host can format {}", formattable.join(", "))
    };
    if fs == "zfs" {
        // A real filesystem, not a typo of xfs.
        return format!("zfs is made with `zpool create`, not mkfs, which fsbench does not drive{can}");
    }
    // Filesystem names are short: only one edit away counts as a likely typo
    // (`ext5` is far more likely a typo than a filesystem nobody packages).
    match formattable.iter().find(|x| strsim::damerau_levenshtein(fs, x) == 1) {
        Some(near) => format!(
            "did you mean `{near}`? (mkfs.{near} is installed); else install the package that provides mkfs.{fs}{can}"
        ),
        None => format!("install the package that provides mkfs.{fs}{can}"),
    }
}

/// The filesystem types this host can format for a benchmark: an installed `mkfs.<x>`
/// of a type fsbench knows the package of. Other installed tools (mkfs.bfs, mkfs.cramfs,
/// mkfs.minix) make filesystems nobody benchmarks here, so they are never suggested.
pub fn formattable_types() -> Vec<String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut installed: Vec<String> = std::env::split_paths(&path)
        .chain(SBIN_DIRS.iter().map(PathBuf::from))
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_prefix("mkfs.").map(String::from))
        .filter(|x| package_for(x).is_some())
        .filter(|x| is_executable(&find_tool(&format!("mkfs.{x}")).unwrap_or_default()))
        .collect();
    installed.sort();
    installed.dedup();
    installed
}

/// The argv that formats `device`: `mkfs.<fs> <args...> <device>`.
pub fn mkfs_argv(fs: &str, args: &[String], device: &Path) -> Vec<String> {
    let tool = find_tool(&format!("mkfs.{fs}"))
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|| format!("mkfs.{fs}"));
    let mut argv = vec![tool];
    argv.extend(args.iter().cloned());
    argv.push(device.to_string_lossy().into_owned());
    argv
}

/// Run a prepared mkfs argv; a failure carries the tool's own stderr.
pub fn run_mkfs(argv: &[String]) -> Result<(), ProvisionError> {
    run_tool(argv).map(|_| ()).map_err(|(status, stderr)| ProvisionError::Mkfs { argv: argv.join(" "), status, stderr })
}

/// Run a tool with stdin closed; Ok(stdout) or Err((status, stderr)).
pub(crate) fn run_tool(argv: &[String]) -> Result<String, (String, String)> {
    let out = crate::signals::default_in_child(&mut Command::new(&argv[0]))
        .args(&argv[1..])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| (format!("could not start: {e}"), String::new()))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        let mut stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        if stderr.is_empty() {
            stderr = String::from_utf8_lossy(&out.stdout).trim().to_string();
        }
        Err((out.status.to_string(), stderr))
    }
}

/// Filesystem features of a formatted device, where a tool can tell:
/// `dumpe2fs -h` for the ext family (others: empty, which is not an error).
pub fn features(device: &Path) -> Vec<String> {
    let Some(tool) = find_tool("dumpe2fs") else { return Vec::new() };
    let argv = vec![tool.to_string_lossy().into_owned(), "-h".into(), device.to_string_lossy().into_owned()];
    match run_tool(&argv) {
        Ok(out) => parse_dumpe2fs_features(&out),
        Err(_) => Vec::new(),
    }
}

fn parse_dumpe2fs_features(out: &str) -> Vec<String> {
    out.lines()
        .find_map(|l| l.strip_prefix("Filesystem features:"))
        .map(|f| f.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_dumpe2fs_feature_line() {
        let out = "Filesystem volume name:   <none>\nFilesystem features:      has_journal ext_attr resize_inode dir_index\nInode count: 5\n";
        assert_eq!(parse_dumpe2fs_features(out), vec!["has_journal", "ext_attr", "resize_inode", "dir_index"]);
        assert!(parse_dumpe2fs_features("nothing").is_empty());
    }

    #[test]
    fn remedy_names_the_package_or_the_tool() {
        assert_eq!(remedy_for("xfs"), "apt-get install xfsprogs");
        assert!(remedy_for("zzfs").starts_with("install the package that provides mkfs.zzfs"));
        // A real filesystem is not a typo, and bfs is nothing anyone benchmarks here.
        assert!(!remedy_for("zfs").contains("did you mean"), "{}", remedy_for("zfs"));
        // The list is sorted (`btrfs, ext2, ...` where btrfs-progs is installed); ext4 is always there.
        assert!(
            remedy_for("zfs").contains("this host can format ") && remedy_for("zfs").contains("ext4"),
            "{}",
            remedy_for("zfs")
        );
        // e2fsprogs is on every Debian system (and the test command installs it).
        assert!(remedy_for("ext5").starts_with("did you mean `ext"), "{}", remedy_for("ext5"));
    }
}
