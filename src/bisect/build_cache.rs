//! The build cache of a git-range bisection: one entry per commit and build configuration,
//! so a rerun, a resumed bisection or a second scenario over the same range never builds a
//! commit twice (docs/bisect.md, "The build contract").
//!
//! - The cache directory (`$XDG_CACHE_HOME/fsbench/builds`, or `--build-cache DIR`) is
//!   private: created 0700 and refused unless it is a real directory owned by the
//!   effective uid and writable by nobody else (the fixture cache's rule, one home:
//!   [`crate::fixture::prepare_private_cache`]); it is then used through its fd.
//! - An entry is `<key>/`, the key the sha256 of the commit id, the build command's text
//!   and the `--config` file's sha256. It holds `vmlinuz`, optionally `modules/`,
//!   `build.log` and `build.json` (commit, duration). It is trusted only when it is a
//!   real directory of ours (opened beneath the cache's fd, no link followed) holding a
//!   regular `vmlinuz` (no link) and its `build.json`. Finding it refreshes its directory's
//!   modification time: its last use, which `bisect-cache prune` reads ([`super::build_prune`]).
//! - A build runs `sh -c CMD` in a fresh export of the commit (`git archive`, in a
//!   scratch directory beside the entries) with `FSBENCH_COMMIT`, `FSBENCH_OUT` (a
//!   temporary entry directory) and `FSBENCH_CONFIG` (a copy of the config file). Only a
//!   build that exits 0 and leaves a regular `vmlinuz` is renamed into place; a failed
//!   build is not cached (it is tried again next time) and its log is kept as
//!   `<key>.failed.log`.

use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::beneath::{self, Resolver, ours};

/// The image a build leaves in `$FSBENCH_OUT`.
pub const IMAGE: &str = "vmlinuz";
/// The modules directory a build may leave in `$FSBENCH_OUT`.
pub const MODULES: &str = "modules";
/// What a build records of itself, beside its image.
pub const RECORD: &str = "build.json";
/// The build's output (stdout and stderr).
pub const BUILD_LOG: &str = "build.log";

/// How every candidate is built: the command and the optional config file.
#[derive(Debug, Clone)]
pub struct BuildSpec {
    /// The repository the commits come from.
    pub tree: PathBuf,
    /// The build command, run with `sh -c`.
    pub command: String,
    /// The `--config` file: its path and content (read once: what is hashed is what the
    /// build gets).
    pub config: Option<(PathBuf, Vec<u8>)>,
}

impl BuildSpec {
    /// sha256 of the config file's content, hex (`None` without one).
    pub fn config_sha256(&self) -> Option<String> {
        self.config.as_ref().map(|(_, bytes)| hex(&Sha256::digest(bytes)))
    }

    /// The cache key of `commit` (a full id) built this way.
    pub fn key(&self, commit: &str) -> String {
        let text = format!(
            "fsbench build 1\ncommit {commit}\ncommand {}\nconfig {}\n",
            self.command,
            self.config_sha256().unwrap_or_else(|| "none".into())
        );
        hex(&Sha256::digest(text.as_bytes()))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What an entry records of its build.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BuildRecord {
    /// The commit built.
    pub commit: String,
    /// The build command.
    pub command: String,
    /// sha256 of the config file, when there was one.
    pub config_sha256: Option<String>,
    /// Wall time of the build, seconds.
    pub seconds: f64,
    /// When it finished (RFC 3339).
    pub finished: String,
}

/// A built candidate in the cache.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Its image.
    pub image: PathBuf,
    /// Its modules directory, when the build left one.
    pub modules: Option<PathBuf>,
    /// How long its build took, seconds.
    pub seconds: f64,
}

/// What a build came to.
#[derive(Debug)]
pub enum Built {
    /// Built (or found in the cache).
    Ready(Entry),
    /// The command failed or left no image: why, in words (the log's path included).
    Failed(String),
    /// A signal stopped it.
    Interrupted,
}

/// The open build cache.
pub struct BuildCache {
    dir: PathBuf,
    fd: OwnedFd,
}

/// The default cache directory: `builds` in fsbench's cache (`$XDG_CACHE_HOME/fsbench`, …).
pub fn default_dir() -> PathBuf {
    crate::fixture::cache_dir().join("builds")
}

impl BuildCache {
    /// Open (creating it 0700 if missing) the private cache directory `dir`.
    pub fn open(dir: &Path) -> anyhow::Result<BuildCache> {
        crate::fixture::prepare_private_cache(dir, "the build cache")
            .with_context(|| format!("cannot use the build cache {}", dir.display()))?;
        let fd = ours::open_ours(dir, ours::Rule::Private)
            .map_err(|e| anyhow::anyhow!("cannot use the build cache {}: {e:?}", dir.display()))?;
        let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        Ok(BuildCache { dir, fd })
    }

    /// Its fd (everything in it is opened beneath this).
    pub fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    /// Its path.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The path an entry has (or will have) in the cache.
    pub fn entry_dir(&self, key: &str) -> PathBuf {
        self.dir.join(key)
    }

    /// The entry `key` when it is there and trusted (see the module documentation).
    pub fn lookup(&self, key: &str) -> Option<Entry> {
        let name = beneath::plain_name(key).ok()?;
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW;
        let entry = beneath::open_beneath(&self.fd, &name, flags, 0, Resolver::Auto).ok()?;
        ours::check_fd(&entry, ours::Rule::Private).ok()?;
        let image = beneath::open_file(&entry, IMAGE).ok()??;
        let st = image.metadata().ok()?;
        if st.len() == 0 {
            return None;
        }
        let record = beneath::open_file(&entry, RECORD).ok()??;
        let record: BuildRecord = serde_json::from_reader(std::io::Read::take(record, 1 << 16)).ok()?;
        let modules_flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW;
        let modules = beneath::open_beneath(&entry, c"modules", modules_flags, 0, Resolver::Auto).is_ok();
        // Its last use, for `bisect-cache prune --keep N` (best effort: a read-only cache still serves).
        let _ = nix::sys::stat::futimens(
            &entry,
            &nix::sys::time::TimeSpec::UTIME_NOW,
            &nix::sys::time::TimeSpec::UTIME_NOW,
        );
        let at = self.entry_dir(key);
        Some(Entry { image: at.join(IMAGE), modules: modules.then(|| at.join(MODULES)), seconds: record.seconds })
    }

    /// The build durations the cache's entries recorded, seconds (for the estimate).
    pub fn recorded_seconds(&self) -> Vec<f64> {
        let Ok(rd) = std::fs::read_dir(&self.dir) else { return Vec::new() };
        rd.filter_map(Result::ok)
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.len() == 64 && n.bytes().all(|b| b.is_ascii_hexdigit()))
            .filter_map(|n| self.lookup(&n))
            .map(|e| e.seconds)
            .collect()
    }

    /// The entry of `commit` built by `spec`: from the cache, else built now (see the
    /// module documentation). `label` names the commit in progress lines.
    pub fn build(&self, spec: &BuildSpec, commit: &str, label: &str, quiet: bool) -> anyhow::Result<Built> {
        let key = spec.key(commit);
        if let Some(e) = self.lookup(&key) {
            return Ok(Built::Ready(e));
        }
        let started = std::time::Instant::now();
        // Scratch beside the entries (same filesystem: the entry is renamed into place).
        let scratch = tempfile::Builder::new()
            .prefix(&format!(".build-{}-", &key[..16]))
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir_in(&self.dir)
            .with_context(|| format!("cannot create a build directory in {}", self.dir.display()))?;
        let (src, out) = (scratch.path().join("src"), scratch.path().join("out"));
        for d in [&src, &out] {
            std::fs::create_dir(d).with_context(|| format!("cannot create {}", d.display()))?;
        }
        crate::bisect::git::export(&spec.tree, commit, &src)?;
        let log_path = out.join(BUILD_LOG);
        let log = std::fs::File::create(&log_path).with_context(|| format!("cannot create {}", log_path.display()))?;
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(&spec.command).current_dir(&src);
        cmd.env("FSBENCH_COMMIT", commit).env("FSBENCH_OUT", &out).env_remove("FSBENCH_CONFIG");
        if let Some((_, bytes)) = &spec.config {
            let copy = scratch.path().join("config");
            std::fs::write(&copy, bytes).with_context(|| format!("cannot write {}", copy.display()))?;
            cmd.env("FSBENCH_CONFIG", copy);
        }
        cmd.stdin(Stdio::null()).stdout(log.try_clone()?).stderr(log);
        crate::signals::default_in_child(&mut cmd);
        if !quiet {
            eprintln!("fsbench: building {label} (commit {commit}) in {}", src.display());
        }
        let status = cmd.status().context("cannot run the build command with sh")?;
        if crate::signals::interrupted() {
            return Ok(Built::Interrupted);
        }
        let why = if !status.success() {
            let how = status.code().map_or_else(|| "a signal".to_string(), |c| c.to_string());
            Some(format!("the build command exited with {how}"))
        } else if !is_regular(&out.join(IMAGE)) {
            Some(format!("the build command left no regular file {IMAGE} in $FSBENCH_OUT"))
        } else {
            None
        };
        if let Some(why) = why {
            let kept = self.dir.join(format!("{key}.failed.log"));
            let _ = std::fs::rename(&log_path, &kept);
            return Ok(Built::Failed(format!("{why} (its output: {})", kept.display())));
        }
        let record = BuildRecord {
            commit: commit.into(),
            command: spec.command.clone(),
            config_sha256: spec.config_sha256(),
            seconds: started.elapsed().as_secs_f64(),
            finished: crate::results::now_rfc3339(),
        };
        std::fs::write(out.join(RECORD), serde_json::to_vec_pretty(&record)?)?;
        std::fs::set_permissions(&out, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
        self.place(scratch.path(), &key)?;
        self.lookup(&key).map(Built::Ready).with_context(|| {
            format!("the build of {label} was stored in {} but cannot be read back", self.entry_dir(&key).display())
        })
    }

    /// Rename `<scratch>/out` to the entry `key` (beneath the cache's fd). An entry that
    /// appeared meanwhile (another bisection built it) is kept and ours dropped.
    fn place(&self, scratch: &Path, key: &str) -> anyhow::Result<()> {
        let name = scratch.file_name().and_then(|n| n.to_str()).context("a scratch directory without a name")?;
        let from = CString::new(format!("{name}/out"))?;
        let to = beneath::plain_name(key)?;
        match beneath::rename_beneath(self.fd.as_fd(), &from, &to, Resolver::Auto) {
            Ok(()) => Ok(()),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EEXIST) | Some(libc::ENOTEMPTY)) => Ok(()),
            Err(e) => Err(anyhow::anyhow!("cannot store the build in {}: {e}", self.entry_dir(key).display())),
        }
    }
}

/// A regular file (not a link) at `p`.
fn is_regular(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_file())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    #[test]
    fn a_build_is_cached_by_commit_command_and_config_and_a_failed_one_is_not() {
        let repo = tempfile::tempdir().unwrap();
        let ids = crate::bisect::git::tests::repo(repo.path(), 2);
        let c = tempfile::tempdir().unwrap();
        let dir = c.path().join("fsbench/builds");
        let cache = BuildCache::open(&dir).unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        let count = c.path().join("count");
        let mut spec = BuildSpec {
            tree: repo.path().into(),
            command: format!(
                "echo x >> {}; cp level \"$FSBENCH_OUT/vmlinuz\"; cat \"$FSBENCH_CONFIG\" >> \"$FSBENCH_OUT/vmlinuz\"",
                count.display()
            ),
            config: Some((c.path().join("cfg"), b"CONFIG_X=y\n".to_vec())),
        };
        let built = |spec: &BuildSpec, id: &str| match cache.build(spec, id, "l", true).unwrap() {
            Built::Ready(e) => e,
            other => panic!("{other:?}"),
        };
        let e = built(&spec, &ids[1]);
        assert_eq!(std::fs::read_to_string(&e.image).unwrap(), "1\nCONFIG_X=y\n");
        assert_eq!(e.modules, None);
        assert_eq!(built(&spec, &ids[1]), e, "the second time is the cache's");
        assert_eq!(std::fs::read_to_string(&count).unwrap().lines().count(), 1);
        // Another config is another entry.
        spec.config = Some((c.path().join("cfg"), b"CONFIG_X=n\n".to_vec()));
        assert_ne!(built(&spec, &ids[1]).image, e.image);
        assert_eq!(cache.recorded_seconds().len(), 2);
        // A link in the entry's place is not trusted.
        let key = spec.key(&ids[0]);
        std::os::unix::fs::symlink(e.image.parent().unwrap(), dir.join(&key)).unwrap();
        assert_eq!(cache.lookup(&key), None);
        std::fs::remove_file(dir.join(&key)).unwrap();
        // A failed build: skipped, not cached, its log kept.
        spec.command = "echo broken; exit 3".into();
        match cache.build(&spec, &ids[0], "l", true).unwrap() {
            Built::Failed(why) => {
                assert!(why.contains("exited with"), "{why}");
                let log = dir.join(format!("{}.failed.log", spec.key(&ids[0])));
                assert_eq!(std::fs::read_to_string(log).unwrap(), "broken\n");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(cache.lookup(&spec.key(&ids[0])), None);
        spec.command = "true".into();
        assert!(
            matches!(cache.build(&spec, &ids[0], "l", true).unwrap(), Built::Failed(w) if w.contains("no regular"))
        );
        // No scratch is left behind.
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(left.iter().all(|n| !n.to_string_lossy().starts_with(".build-")), "{left:?}");
    }

    #[test]
    fn a_cache_directory_others_may_write_is_refused() {
        let c = tempfile::tempdir().unwrap();
        let dir = c.path().join("b");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = BuildCache::open(&dir).err().unwrap();
        assert!(format!("{e:#}").contains("the build cache has mode 0777"), "{e:#}");
    }
}
