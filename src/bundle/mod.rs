//! Scenario bundles: pack, verify and run, treating every bundle as untrusted input.
//!
//! A bundle (`lab.fsb`) is a gzip'd tar: `manifest.json` first (format version,
//! tool version, created, every file with size and sha256), then
//! `scenario.toml`, `fixtures/<archive>` when the scenario uses a real archive
//! (a generated one travels as its `[archive] generate/scale/seed` recipe inside
//! the scenario), and `results/<scenario>/<run-id>/` when packed with results.
//! See [`pack`] for determinism and [`open`] for the checks made on unpacking.
//! Running a bundle refuses `exec` steps without `--allow-exec`, a block device
//! without a matching `--allow-device`, a `dir` backing path that the user
//! did not set with `--set backing.path=...`, `[sysctl]` without `--allow-sysctl`
//! (and outside [`sysctl::ALLOWED`] whatever the flags), and sizes beyond the
//! memory budget of [`budget`] without `--allow-size`. [`asks`] lists all of it.
//! [`render`] writes what `bundle verify` prints from the preflight's findings.

pub mod asks;
pub mod budget;
pub mod fio_job;
pub mod manifest;
pub mod open;
pub mod options;
pub mod pack;
pub mod render;
pub mod sysctl;

use crate::model::{TextFormat, UntrustedText};
use std::path::{Component, Path, PathBuf};

use crate::exit::InputError;
use crate::plan;
use crate::scenario::{ArchiveSource, Backing, Scenario, ScenarioError};
use crate::workload::untar::UntarError;
use manifest::Manifest;

/// Why a bundle could not be packed, opened or run.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// A file could not be read or written.
    #[error("{path}: cannot {what}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done.
        what: &'static str,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Packing refused its input.
    #[error("cannot pack: {0}")]
    Pack(String),
    /// The manifest is missing or malformed.
    #[error("{bundle}: {message}")]
    Manifest {
        /// The bundle.
        bundle: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The bundle was packed by a newer fsbench.
    #[error("{bundle}: {message}")]
    NewerFormat {
        /// The bundle.
        bundle: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// One entry of the bundle is refused.
    #[error("{bundle}: refusing bundle entry `{entry}`: {reason}")]
    Entry {
        /// The bundle.
        bundle: PathBuf,
        /// Entry path as stored.
        entry: String,
        /// Why.
        reason: String,
    },
    /// Extraction refused an entry or hit a cap.
    #[error("{bundle}: {source}")]
    Unpack {
        /// The bundle.
        bundle: PathBuf,
        /// The extractor's error (names the entry).
        #[source]
        source: UntarError,
    },
    /// The bundled (or packed) scenario does not validate (boxed: it carries a snippet).
    #[error(transparent)]
    Scenario(Box<ScenarioError>),
    /// The packed results could not be read.
    #[error(transparent)]
    Results(#[from] crate::results::ResultsError),
    /// Running the bundle would do something the user has not allowed.
    #[error("{0}")]
    Refused(String),
}

impl From<ScenarioError> for BundleError {
    fn from(e: ScenarioError) -> Self {
        BundleError::Scenario(Box::new(e))
    }
}

impl BundleError {
    /// As an `anyhow` error: an I/O failure stays a failure; a bad bundle or a refusal is bad input.
    pub fn into_anyhow(self) -> anyhow::Error {
        match self {
            BundleError::Io { .. } => anyhow::Error::new(self),
            other => InputError::anyhow(other.to_string()),
        }
    }
}

pub use crate::results::IMPORTED_MARKER;

/// A verified, unpacked bundle in a private temporary directory (removed on drop).
#[derive(Debug)]
pub struct OpenBundle {
    /// The private directory (mode 0700).
    pub dir: tempfile::TempDir,
    /// The manifest.
    pub manifest: Manifest,
    /// The scenario text as bundled.
    pub scenario_text: String,
}

impl OpenBundle {
    /// Path of the unpacked scenario file.
    pub fn scenario_path(&self) -> PathBuf {
        self.dir.path().join(&self.manifest.scenario)
    }

    /// Parse the bundled scenario with `overrides`; relative paths resolve inside the bundle.
    pub fn scenario(&self, origin: &str, overrides: &[String]) -> Result<Scenario, BundleError> {
        // Validation opens a real archive (to read its top-level directory): a path outside
        // the bundle is refused before anything of this machine is read.
        if let Ok((text, _)) = crate::scenario::overrides::apply(&self.scenario_text, origin, overrides)
            && let Ok(t) = text.parse::<toml::Table>()
            && let Some(path) = t.get("archive").and_then(|a| a.get("path")).and_then(|p| p.as_str())
        {
            self.check_path_inside(&self.dir.path().join(path))?;
        }
        // Likewise a fio job file: validation reads it (bounded, beneath the bundle's
        // directory, through no link); it must also be one of the files the manifest lists.
        if let Ok((text, _)) = crate::scenario::overrides::apply(&self.scenario_text, origin, overrides)
            && let Ok(t) = text.parse::<toml::Table>()
            && let Some(file) = t.get("workload").and_then(|w| w.get("job_file")).and_then(|p| p.as_str())
            && self.manifest.file(file).is_none()
        {
            return Err(BundleError::Refused(format!(
                "the scenario's workload.job_file `{}` is not a file of the bundle; a bundle may only use fio job files it carries",
                UntrustedText::escape(file, TextFormat::Terminal)
            )));
        }
        // And a dbench loadfile: validation reads it (an absolute path as is), so a bundle
        // may only name loadfiles it carries, never a file of this machine.
        if let Ok((text, _)) = crate::scenario::overrides::apply(&self.scenario_text, origin, overrides)
            && let Ok(t) = text.parse::<toml::Table>()
            && let Some(groups) = t.get("workload").and_then(|w| w.get("group")).and_then(|g| g.as_array())
        {
            for file in groups.iter().filter_map(|g| g.get("loadfile")) {
                let name = file.as_str().unwrap_or_default();
                if self.manifest.file(name).is_none() {
                    return Err(BundleError::Refused(format!(
                        "the scenario's loadfile `{}` is not a file of the bundle; a bundle may only use loadfiles it carries",
                        UntrustedText::escape(name, TextFormat::Terminal)
                    )));
                }
            }
        }
        let s = crate::scenario::parse_overridden(&self.scenario_text, origin, self.dir.path(), overrides)?;
        self.check_archive_inside(&s)?;
        Ok(s)
    }

    /// A real archive must be a file of the bundle: never a path of this machine.
    fn check_archive_inside(&self, s: &Scenario) -> Result<(), BundleError> {
        let Some(a) = &s.archive else { return Ok(()) };
        let ArchiveSource::Path(p) = &a.source else { return Ok(()) };
        self.check_path_inside(p)
    }

    /// `p` is a file the bundle's manifest lists, under the bundle's directory.
    fn check_path_inside(&self, p: &Path) -> Result<(), BundleError> {
        let rel =
            p.strip_prefix(self.dir.path()).ok().filter(|r| r.components().all(|c| matches!(c, Component::Normal(_))));
        match rel.and_then(|r| r.to_str()).filter(|r| self.manifest.file(r).is_some()) {
            Some(_) => Ok(()),
            None => Err(BundleError::Refused(format!(
                "the scenario's [archive] path `{}` is not a file of the bundle; a bundle may only use archives it carries",
                p.strip_prefix(self.dir.path()).unwrap_or(p).display()
            ))),
        }
    }
}

/// Unpack and verify a bundle into a fresh private directory under `under` (the run's
/// work directory, checked to be ours by the caller), or under the system temp dir.
pub fn open_bundle(bundle: &Path, under: Option<&Path>) -> Result<OpenBundle, BundleError> {
    // tempfile makes directories with the process umask (0755) unless told: the
    // contents of someone's bundle (and its results) are for this user only.
    let private = <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o700);
    let parent = under.map(Path::to_path_buf).unwrap_or_else(std::env::temp_dir);
    let dir =
        tempfile::Builder::new().prefix("fsbench-bundle-").permissions(private).tempdir_in(&parent).map_err(
            |source| BundleError::Io { path: parent.clone(), what: "create a private directory in", source },
        )?;
    let manifest = open::unpack(bundle, dir.path())?;
    let sp = dir.path().join(&manifest.scenario);
    let bytes = std::fs::read(&sp).map_err(|source| BundleError::Io { path: sp, what: "read", source })?;
    // A scenario that is not text is a bad bundle (exit 2), not a failure to read one.
    let scenario_text = String::from_utf8(bytes).map_err(|e| BundleError::Entry {
        bundle: bundle.into(),
        entry: manifest.scenario.clone(),
        reason: format!("the scenario is not UTF-8 text (invalid byte at offset {})", e.utf8_error().valid_up_to()),
    })?;
    Ok(OpenBundle { dir, manifest, scenario_text })
}

/// The `exec` steps of a scenario, as command lines.
pub fn exec_steps(s: &Scenario) -> Vec<String> {
    crate::workload::kind::of(&s.workload).commands()
}

/// The packed results, as `bundle verify` shows them (and `--json` prints them); every
/// string came from the bundle and is escaped for printing.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct PackedRun {
    /// `results/<scenario>/<run-id>` inside the bundle.
    #[serde(serialize_with = "terminal")]
    pub path: UntrustedText,
    /// The run's label.
    #[serde(serialize_with = "terminal_opt")]
    pub label: Option<UntrustedText>,
    /// Host name.
    #[serde(serialize_with = "terminal")]
    pub host: UntrustedText,
    /// Kernel release.
    #[serde(serialize_with = "terminal")]
    pub kernel: UntrustedText,
    /// fsbench version that measured it.
    #[serde(serialize_with = "terminal")]
    pub tool_version: UntrustedText,
    /// Cells stored.
    pub cells: usize,
    /// Cells its run planned.
    pub planned: usize,
    /// Cells the full matrix has (more than `planned`: a subset, `--only` or a shard).
    pub matrix: usize,
}

/// Bundle text in `bundle verify --json`: escaped for a terminal, as the text shows it.
fn terminal<S: serde::Serializer>(t: &UntrustedText, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&t.escaped(TextFormat::Terminal))
}

/// [`terminal`] for optional text.
fn terminal_opt<S: serde::Serializer>(t: &Option<UntrustedText>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.serialize_some(&*t.escaped(TextFormat::Terminal)),
        None => s.serialize_none(),
    }
}

/// Everything that can be known before a bundle runs, found the same way by
/// `bundle verify` and at the start of `bundle run`.
#[derive(Debug, Clone, Default)]
pub struct Preflight {
    /// Why the bundle cannot run here whatever the flags (exit 2), one line each.
    pub refused: Vec<String>,
    /// The fixture archive (path inside the bundle) and its dry run, when it has one.
    pub archive: Option<(String, crate::workload::untar::ScanReport)>,
    /// The packed results, when there are any and they load.
    pub results: Option<PackedRun>,
    /// What one cell of the full matrix can make the host hold in memory.
    pub memory: budget::MemoryNeed,
    /// `MemAvailable` of this host when the checks ran (`None`: unreadable).
    pub mem_available: Option<u64>,
}

impl Preflight {
    /// Whether [`Self::memory`] exceeds this host's budget (or the budget is unknown).
    pub fn over_budget(&self) -> bool {
        match self.mem_available {
            Some(a) => budget::check(&self.memory, a).is_err(),
            None => self.memory.total() > 0,
        }
    }

    /// Everything the bundle asks for, with the flag that unlocks each.
    pub fn asks(&self, s: &Scenario) -> Vec<asks::Ask> {
        asks::asks(s, &exec_steps(s), &self.memory, self.over_budget())
    }

    /// The flags `bundle run` needs here for what the bundle asks.
    pub fn flags_needed(&self, s: &Scenario) -> Vec<String> {
        asks::flags(&self.asks(s))
    }
}

/// Run every check that does not need the run: the mkfs and mount allow-lists,
/// the `[sysctl]` allow-list, the fixture archive through the extractor's own checks
/// (a dry run), the memory a cell needs, and the packed results' names and provenance.
pub fn preflight(ob: &OpenBundle, s: &Scenario) -> Preflight {
    let mut pf = check_scenario(s, |p| p.strip_prefix(ob.dir.path()).unwrap_or(p).display().to_string());
    if let Some(rel) = &ob.manifest.results {
        match crate::results::load_run(&ob.dir.path().join(rel)) {
            Err(e) => pf.refused.push(format!(
                "bundled results {rel}: {}",
                UntrustedText::escape(&e.to_string(), TextFormat::Terminal)
            )),
            Ok(run) => {
                if let Err(e) = check_run_names(&run) {
                    pf.refused.push(e.to_string());
                }
                pf.results = Some(PackedRun {
                    path: rel.as_str().into(),
                    label: run.meta.label.as_deref().map(UntrustedText::from),
                    host: run.meta.host.hostname.as_str().into(),
                    kernel: run.meta.host.kernel_release.as_str().into(),
                    tool_version: run.meta.tool_version.as_str().into(),
                    cells: run.cells.len(),
                    planned: run.meta.planned_cells.len(),
                    matrix: plan::expand(s).cells.len(),
                });
            }
        }
    }
    pf
}

/// The checks of [`preflight`] that need only the scenario (also run by `bundle pack`,
/// so that a refusal shows where the bundle is made); `shown` names the fixture file.
pub fn check_scenario(s: &Scenario, shown: impl Fn(&Path) -> String) -> Preflight {
    let mut pf = Preflight::default();
    for (name, spec) in &s.filesystems {
        // Judged by the type mkfs and mount(2) receive, not by a variant's name.
        let fs_type = spec.fs_type(name);
        if let Err(e) = options::check_mkfs_args(name, fs_type, &spec.mkfs) {
            pf.refused.push(e);
        }
        for m in &spec.mount {
            if let Err(e) = options::check_mount_option(name, fs_type, m) {
                pf.refused.push(e);
            }
        }
    }
    for (k, v) in asks::requested_sysctls(s) {
        if let sysctl::SysctlVerdict::Refused(why) = sysctl::judge(&k, &v) {
            pf.refused.push(why);
        }
    }
    let mut fixture = budget::generated_fixture_bytes(s).unwrap_or(0);
    if let Some(ArchiveSource::Path(p)) = s.archive.as_ref().map(|a| &a.source) {
        let rel = shown(p);
        let limits = crate::workload::untar::UnpackLimits::default();
        match crate::workload::untar::scan_untrusted(p, &limits) {
            Ok(report) => {
                for r in &report.refused {
                    pf.refused.push(format!("fixture {rel}: {}", UntrustedText::escape(r, TextFormat::Terminal)));
                }
                fixture = report.stats.bytes;
                pf.archive = Some((rel, report));
            }
            Err(e) => pf
                .refused
                .push(format!("fixture {rel}: {}", UntrustedText::escape(&e.to_string(), TextFormat::Terminal))),
        }
    }
    pf.memory = budget::need(s, &plan::expand(s).cells, fixture);
    pf.mem_available = crate::host::memory::mem_available().ok();
    pf
}

/// Whether any cell of the expansion `p` of `s` needs root.
pub fn needs_root(s: &Scenario, p: &plan::Plan) -> bool {
    p.cells.iter().any(|c| plan::needs(s, &c.params).iter().any(|n| n == "root" || n.starts_with("root (")))
}

/// The flags `bundle run` needs for what the bundle asks, as [`check_allowed`] checks them,
/// leaving out `--allow-size` (it depends on the host: see [`Preflight::flags_needed`]).
pub fn flags_needed(s: &Scenario) -> Vec<String> {
    asks::flags(&asks::asks(s, &exec_steps(s), &budget::MemoryNeed::default(), false))
}

/// `[[kernels]]` as `LABEL=IMAGE` for messages.
fn kernels_shown(s: &Scenario) -> String {
    s.kernels
        .iter()
        .map(|k| format!("`{}={}`", UntrustedText::escape(&k.label, TextFormat::Terminal), k.image.display()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The packed run's scenario name and run id become directories under `--out`: plain names only.
fn check_run_names(run: &crate::results::LoadedRun) -> Result<(), BundleError> {
    for (what, name) in [("scenario name", &run.meta.scenario_name), ("run id", &run.meta.run_id)] {
        if !crate::text::is_plain_name(name) {
            return Err(BundleError::Refused(format!(
                "refusing bundled results: {what} `{}` in run.json is not a plain name (A-Z a-z 0-9 . _ - +)",
                UntrustedText::escape(name, TextFormat::Terminal)
            )));
        }
    }
    Ok(())
}

/// What the user of `bundle run` allowed with its flags.
#[derive(Debug, Clone, Copy, Default)]
pub struct Allowed<'a> {
    /// `--allow-exec`.
    pub exec: bool,
    /// `--allow-device DEV`.
    pub device: Option<&'a Path>,
    /// `--allow-kernels`.
    pub kernels: bool,
    /// `--allow-sysctl`.
    pub sysctl: bool,
    /// `--allow-size`.
    pub size: bool,
}

/// The flags `bundle run` needs for what the bundle asks (after [`preflight`] found nothing refused).
pub fn check_allowed(effective: &Scenario, overrides: &[String], allowed: Allowed<'_>) -> Result<(), BundleError> {
    let Allowed { exec: allow_exec, device: allow_device, kernels: allow_kernels, .. } = allowed;
    let sysctls = asks::requested_sysctls(effective);
    if !sysctls.is_empty() && !allowed.sysctl {
        return Err(BundleError::Refused(format!(
            "refusing [sysctl]: the bundle changes host-wide kernel settings ({}); inspect them with \
             `fsbench bundle verify` and pass --allow-sysctl to allow",
            sysctls
                .iter()
                .map(|(k, v)| format!(
                    "`{} = {}`",
                    UntrustedText::escape(k, TextFormat::Terminal),
                    UntrustedText::escape(v, TextFormat::Terminal)
                ))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    if !effective.kernels.is_empty() && !allow_kernels {
        return Err(BundleError::Refused(format!(
            "refusing [[kernels]]: the bundle boots {} in qemu ({}); inspect them with `fsbench bundle verify` and pass --allow-kernels to allow",
            crate::text::plural(
                effective.kernels.len(),
                "kernel image of this machine",
                "kernel images of this machine"
            ),
            kernels_shown(effective)
        )));
    }
    let fio = fio_job::refused_options(effective);
    if !fio.is_empty() && !allow_exec {
        return Err(BundleError::Refused(format!(
            "refusing fio option{} {}: a bundle's fio job may use only options that stay inside the cell (docs/fio.md); inspect it with `fsbench bundle verify` and pass --allow-exec to allow",
            if fio.len() == 1 { "" } else { "s" },
            fio.iter().map(|e| crate::text::escape_control(e)).collect::<Vec<_>>().join(", ")
        )));
    }
    let exec = exec_steps(effective);
    if !exec.is_empty() && !allow_exec {
        return Err(BundleError::Refused(format!(
            "refusing bundle step `exec`: the scenario runs commands on this machine ({}); inspect it with `fsbench bundle verify` and pass --allow-exec to allow",
            exec.iter()
                .map(|e| format!("`{}`", UntrustedText::escape(e, TextFormat::Terminal)))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    if let Backing::Device { path } = &effective.backing
        && allow_device != Some(path.as_path())
    {
        return Err(BundleError::Refused(format!(
            "refusing backing device {}: the bundle would format it; pass --allow-device {} to allow (this destroys its data)",
            path.display(),
            path.display()
        )));
    }
    // Without an override of the path, a `dir` path can only have come from the bundle.
    let sets_path = |o: &String| matches!(o.split_once('=').map(|(k, _)| k.trim()), Some("backing.path" | "backing"));
    if let Backing::Dir { path } = &effective.backing
        && !path.as_os_str().is_empty()
        && !overrides.iter().any(sets_path)
    {
        return Err(BundleError::Refused(format!(
            "refusing backing.path `{}` chosen by the bundle: set your own with --set backing.path=DIR, or remove it to use a private directory",
            path.display()
        )));
    }
    Ok(())
}

/// The memory budget before anything is allocated: `need` (of the cells about to run)
/// against this host's `MemAvailable`, unless `--allow-size`.
pub fn check_memory(need: &budget::MemoryNeed, allow_size: bool) -> Result<(), BundleError> {
    if allow_size || need.total() == 0 {
        return Ok(());
    }
    let available = crate::host::memory::mem_available().map_err(|e| {
        BundleError::Refused(format!(
            "refusing the bundle's sizes ({}): cannot read MemAvailable ({e}) to check them; pass --allow-size to run anyway",
            need.parts().join(" + ")
        ))
    })?;
    budget::check(need, available).map_err(BundleError::Refused)
}

/// Copy the bundle's packed run (verified, and loadable as a run) to
/// `<out>/<scenario>/<run-id>/` unless a run of that id is already there, through the
/// result store's writer ([`crate::results::import_run`]): the directories under `--out`
/// are checked before anything is written and no link there is followed. The copy is
/// marked in its `run.json` as imported from `bundle`, so `run --resume` refuses it.
pub fn import_results(ob: &OpenBundle, bundle: &Path, out: &Path) -> Result<Option<PathBuf>, BundleError> {
    let Some(rel) = &ob.manifest.results else { return Ok(None) };
    let src = ob.dir.path().join(rel);
    let run = crate::results::load_run(&src)?;
    check_run_names(&run)?;
    let from = crate::results::Derived {
        kind: crate::results::DerivedKind::Imported,
        from: vec![bundle.display().to_string()],
    };
    let imported = crate::results::import_run(&src, out, from)?;
    Ok(Some(imported.dir().to_path_buf()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The docs promise a private directory: only its owner may read a bundle's contents.
    #[test]
    fn bundles_unpack_into_a_directory_only_their_owner_can_read() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let sc = d.path().join("t.toml");
        std::fs::write(
            &sc,
            "schema = 1\nname = \"t\"\n[matrix]\nfs = [\"ext4\"]\n[backing]\nkind = \"dir\"\n[workload]\nkind = \"lat_fs\"\n",
        )
        .unwrap();
        let b = d.path().join("t.fsb");
        pack::pack(&sc, None, &b).unwrap();
        assert_eq!(std::fs::metadata(&b).unwrap().permissions().mode() & 0o777, 0o644, "bundles are for sharing");
        let ob = open_bundle(&b, None).unwrap();
        assert_eq!(std::fs::metadata(ob.dir.path()).unwrap().permissions().mode() & 0o777, 0o700);
        // New users' report, round three (item 30): `bundle run` unpacked in /tmp whatever
        // --workdir said; with a work directory it unpacks there.
        let work = d.path().join("work");
        std::fs::create_dir(&work).unwrap();
        let ob = open_bundle(&b, Some(&work)).unwrap();
        assert!(ob.dir.path().starts_with(&work), "{}", ob.dir.path().display());
        assert_eq!(std::fs::metadata(ob.dir.path()).unwrap().permissions().mode() & 0o777, 0o700);
    }
}
