//! Run a scenario's cells under other kernels, each in a qemu virtual machine.
//!
//! For each kernel the host builds an initramfs (this fsbench binary as
//! `/init`, the mkfs and quota tools, their libraries, the kernel modules the
//! cells need, the scenario and its fixtures), boots it with
//! qemu-system-x86_64, and the guest runs the ordinary `fsbench run` under the
//! guest kernel. The guest's run directory comes back over a second serial
//! port and becomes an ordinary run under `<out>`, labelled with the kernel's
//! label and carrying the guest's uname, so `fsbench compare` puts kernels side
//! by side. KVM is used when it boots; otherwise TCG, with a warning.

pub mod cpio;
pub mod guest;
pub mod initramfs;
pub mod modules;
pub mod vm;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;

use crate::exit;
use crate::model::QuotaMode;
use crate::scenario::{ArchiveSource, Backing, KernelSpec, Scenario, Step, Workload};
use guest::GuestConfig;
use initramfs::{Contents, GUEST_CACHE, GUEST_CONFIG, GUEST_EXE, GUEST_MODULES};
use vm::{Accel, BootSpec, Outcome};

/// What can go wrong preparing or running a guest.
#[derive(Debug, thiserror::Error)]
pub enum QemuError {
    /// A file operation failed.
    #[error("cannot {what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: String,
        /// On which file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The modules directory cannot be used.
    #[error("kernel modules in {}: {detail}", dir.display())]
    Modules {
        /// The modules directory.
        dir: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// The initramfs cannot be built.
    #[error("cannot build the initramfs: {what}")]
    Initramfs {
        /// What is missing or failed.
        what: String,
    },
    /// A `--kernel` option is malformed.
    #[error("--kernel `{arg}`: {detail}")]
    KernelArg {
        /// The option value.
        arg: String,
        /// What is wrong.
        detail: String,
    },
}

/// Parse `--kernel LABEL=PATH[,modules=DIR][,cmdline=...][,memory=SIZE][,cpus=N]`.
pub fn parse_kernel_arg(arg: &str) -> Result<KernelSpec, QemuError> {
    let bad = |detail: &str| QemuError::KernelArg { arg: arg.to_string(), detail: detail.to_string() };
    let (label, rest) = arg.split_once('=').ok_or_else(|| bad("expected LABEL=PATH[,modules=DIR]"))?;
    let label = label.trim();
    if label.is_empty() || label.len() > 64 || !label.chars().all(|c| c.is_ascii_alphanumeric() || "._-+".contains(c)) {
        return Err(bad("the label needs 1 to 64 characters from A-Z a-z 0-9 . _ - +"));
    }
    let mut parts = rest.split(',');
    let image = parts.next().unwrap_or("").trim();
    if image.is_empty() {
        return Err(bad("no kernel image path after `=`"));
    }
    let mut k = KernelSpec {
        label: label.to_string(),
        image: PathBuf::from(image),
        modules: None,
        cmdline: String::new(),
        memory: crate::scenario::DEFAULT_GUEST_MEMORY,
        cpus: crate::scenario::DEFAULT_GUEST_CPUS,
    };
    for p in parts {
        let (key, value) = p.split_once('=').ok_or_else(|| bad(&format!("`{p}` is not KEY=VALUE")))?;
        match key.trim() {
            "modules" => k.modules = Some(PathBuf::from(value)),
            "cmdline" => k.cmdline = value.to_string(),
            "memory" => {
                k.memory = crate::scenario::units::parse_size(value).map_err(|e| bad(&format!("memory: {e}")))?
            }
            "cpus" => {
                k.cpus = value
                    .parse()
                    .ok()
                    .filter(|c| (1..=256).contains(c))
                    .ok_or_else(|| bad("cpus: a number from 1 to 256"))?
            }
            other => return Err(bad(&format!("unknown key `{other}` (modules, cmdline, memory, cpus)"))),
        }
    }
    Ok(k)
}

/// The kernel release of a bzImage, from its setup header (`kernel_version` field).
pub fn image_release(image: &[u8]) -> Option<String> {
    if image.get(0x202..0x206)? != b"HdrS" {
        return None;
    }
    let ptr = u16::from_le_bytes(image.get(0x20e..0x210)?.try_into().ok()?) as usize;
    let s = image.get(0x200 + ptr..)?;
    let s = &s[..s.iter().position(|b| *b == 0)?];
    Some(String::from_utf8_lossy(s).split_whitespace().next()?.to_string())
}

/// The modules directory of a kernel: given, or `<root>/lib/modules/V` for
/// `<root>/boot/vmlinuz-V` (an unpacked package), or found by the image's release.
pub fn modules_dir(k: &KernelSpec) -> Result<PathBuf, QemuError> {
    if let Some(m) = &k.modules {
        return Ok(m.clone());
    }
    let file = k.image.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let root = k.image.parent().and_then(Path::parent).unwrap_or(Path::new("/"));
    let mut candidates = Vec::new();
    if let Some(v) = file.strip_prefix("vmlinuz-") {
        candidates.push(root.join("lib/modules").join(v));
    }
    let head = read_head(&k.image)?;
    if let Some(v) = image_release(&head) {
        candidates.push(root.join("lib/modules").join(&v));
        candidates.push(Path::new("/lib/modules").join(&v));
    }
    candidates.iter().find(|c| c.is_dir()).cloned().ok_or_else(|| QemuError::Modules {
        dir: candidates.first().cloned().unwrap_or_else(|| root.join("lib/modules")),
        detail: format!(
            "no modules directory found for {} (tried {}); name it with modules=DIR",
            k.image.display(),
            candidates.iter().map(|c| c.display().to_string()).collect::<Vec<_>>().join(", ")
        ),
    })
}

fn read_head(image: &Path) -> Result<Vec<u8>, QemuError> {
    use std::io::Read;
    let mut f = std::fs::File::open(image).map_err(|e| QemuError::Io {
        what: "open kernel image".into(),
        path: image.to_path_buf(),
        source: e,
    })?;
    let mut head = vec![0u8; 64 * 1024];
    let n = f.read(&mut head).map_err(|e| QemuError::Io {
        what: "read kernel image".into(),
        path: image.to_path_buf(),
        source: e,
    })?;
    head.truncate(n);
    Ok(head)
}

/// A request to run a scenario's cells under other kernels, one qemu guest each.
pub struct KernelsRequest<'a> {
    /// The scenario, loaded once by the caller; the guest gets its text.
    pub scenario: &'a Scenario,
    /// The kernels, in order.
    pub kernels: &'a [KernelSpec],
    /// `--only` filters, passed on to the guest's run.
    pub only: &'a [String],
    /// The order the guest's run takes its cells in (`run --order`).
    pub order: crate::runner::CellOrder,
    /// How many cells each guest runs (for its deadlines).
    pub cells: usize,
    /// The results root; each kernel's run directory is adopted under it.
    pub out: &'a Path,
    /// No progress lines from the guests.
    pub quiet: bool,
}

/// How one guest's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuestEnd {
    /// A signal stopped fsbench (and the guest with it).
    Interrupted,
    /// The guest's `fsbench run` exited with this code.
    Exited(i32),
}

/// What one kernel's guest produced.
pub struct KernelRun {
    /// The kernel's label.
    pub label: String,
    /// Its adopted run directory, when the guest sent results back.
    pub dir: Option<PathBuf>,
    /// How it ended, or why it could not be run to the end.
    pub end: anyhow::Result<GuestEnd>,
}

/// Check what can be checked before any boot (device backing, kernel images, module
/// directories, qemu itself) and return the qemu binary to use.
pub fn prepare(scenario: &Scenario, kernels: &[KernelSpec], allow_device: bool) -> anyhow::Result<PathBuf> {
    if matches!(scenario.backing, Backing::Device { .. }) || allow_device {
        return Err(exit::InputError::anyhow(
            "device backing cannot run in a virtual machine (the guest has no access to host block devices)",
        ));
    }
    for k in kernels {
        if !k.image.is_file() {
            return Err(exit::InputError::anyhow(format!(
                "kernel `{}`: image {} does not exist",
                k.label,
                k.image.display()
            )));
        }
        modules_dir(k).map_err(|e| exit::InputError::anyhow(format!("kernel `{}`: {e}", k.label)))?;
    }
    vm::find_qemu().ok_or_else(|| {
        exit::InputError::anyhow("qemu-system-x86_64 not found: apt-get install qemu-system-x86 (or set FSBENCH_QEMU)")
    })
}

/// Boot each kernel in turn and run the cells in it; stops early on a signal.
pub fn run_kernels(req: &KernelsRequest, qemu: &Path) -> anyhow::Result<Vec<KernelRun>> {
    std::fs::create_dir_all(req.out).with_context(|| format!("cannot create {}", req.out.display()))?;
    let mut accel = None;
    let mut runs = Vec::new();
    for k in req.kernels {
        if crate::signals::interrupted() {
            break;
        }
        let (dir, end) = match run_kernel(req, k, qemu, &mut accel) {
            Ok((end, dir)) => (dir, Ok(end)),
            Err(e) => (None, Err(e)),
        };
        runs.push(KernelRun { label: k.label.clone(), dir, end });
    }
    Ok(runs)
}

/// Seconds the guest may take to start fsbench (default 180 under TCG, 60 under KVM).
pub const BOOT_TIMEOUT_ENV: &str = "FSBENCH_QEMU_BOOT_TIMEOUT";
/// Seconds without progress while cells run before the guest counts as hung
/// (default 60 s plus 20x (TCG) or 3x (KVM) a cell's own warm-up and windows).
pub const CELL_TIMEOUT_ENV: &str = "FSBENCH_QEMU_CELL_TIMEOUT";

/// Deadlines of one guest run.
fn timeouts(s: &Scenario, cells: usize, accel: Accel) -> (Duration, Duration, Duration) {
    // TCG emulates every instruction: allow for a large slowdown over the scenario's own time.
    let slow = if accel == Accel::Tcg { 20 } else { 3 };
    let cell_work = match &s.workload {
        Workload::Latfs(l) => (l.warmup + l.duration) * l.repetitions,
        Workload::Steps(_) => Duration::from_secs(120),
    };
    let env_secs = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok()).map(Duration::from_secs);
    let cell = env_secs(CELL_TIMEOUT_ENV).unwrap_or(Duration::from_secs(60) + cell_work * slow);
    let boot = env_secs(BOOT_TIMEOUT_ENV).unwrap_or(Duration::from_secs(if accel == Accel::Tcg { 180 } else { 60 }));
    let overall = boot + cell * (cells as u32 + 1);
    (boot, cell, overall)
}

/// Boot one kernel and run the cells; returns the exit code and the run directory made.
fn run_kernel(
    req: &KernelsRequest,
    k: &KernelSpec,
    qemu: &Path,
    accel: &mut Option<Accel>,
) -> anyhow::Result<(GuestEnd, Option<PathBuf>)> {
    let s = req.scenario;
    // Under the journaled work root, not $TMPDIR: after a SIGKILL the next run's stale
    // cleanup removes the initramfs and the channel with the rest of the killed run.
    let tmp = crate::provision::workroot::scratch_run_dir("qemu-").context("cannot create qemu's scratch directory")?;
    let files = crate::provision::workroot::journaled_scratch(tmp.path(), "files")
        .context("cannot create qemu's scratch directory")?;
    let started = std::time::Instant::now();
    let initrd = files.join("initramfs.cpio.gz");
    let size = build_initramfs(s, k, req, &initrd)?;
    if !req.quiet {
        eprintln!(
            "fsbench: kernel {}: initramfs {:.1} MiB built in {}",
            k.label,
            size as f64 / 1048576.0,
            crate::text::human_duration(started.elapsed())
        );
    }
    let channel = files.join("channel");
    let mut try_accel = accel.unwrap_or(if vm::kvm_openable() { Accel::Kvm } else { Accel::Tcg });
    loop {
        let (boot_timeout, cell_timeout, overall) = timeouts(s, req.cells, try_accel);
        let append = format!(
            "console=ttyS0 loglevel=4 panic=-1 oops=panic rdinit={GUEST_EXE} fsbench.accel={} {} -- __guest-init",
            try_accel.name(),
            k.cmdline
        )
        .replace("  ", " ");
        let spec = BootSpec {
            qemu: qemu.to_path_buf(),
            kernel: k.image.clone(),
            initrd: initrd.clone(),
            append,
            memory_mib: (k.memory >> 20).max(128),
            cpus: k.cpus,
            channel: channel.clone(),
            accel: try_accel,
            first_output: Duration::from_secs(if try_accel == Accel::Kvm { 20 } else { 120 }),
            boot_timeout,
            cell_timeout,
            overall_timeout: overall,
        };
        if try_accel == Accel::Tcg && !req.quiet {
            eprintln!(
                "fsbench: warning: kernel {}: qemu runs with TCG (software emulation): timings are emulated and comparable only with other TCG runs",
                k.label
            );
        }
        let _ = std::fs::remove_file(&channel);
        let label = k.label.clone();
        let quiet = req.quiet;
        let mut on_line = |l: &str| {
            // The guest's "results in /results/..." names a path that exists only in the guest.
            if (!quiet || l.starts_with("guest kernel")) && !l.starts_with("fsbench: results in") {
                eprintln!("[{label}] {l}");
            }
        };
        let report = vm::boot(&spec, &mut on_line)?;
        // KVM that hangs (no output at all) or that qemu cannot drive (it aborts before
        // the guest says anything): fall back to TCG, once, for this and later kernels.
        // (A guest that panics makes qemu exit with status 0 under -no-reboot: not KVM's fault.)
        let kvm_broken = match &report.outcome {
            Outcome::Silent => true,
            Outcome::Exited(status) => !status.success(),
            _ => false,
        };
        if try_accel == Accel::Kvm && report.booted_after.is_none() && kvm_broken {
            let why = match &report.outcome {
                Outcome::Silent => format!("printed nothing within {}", crate::text::human_duration(spec.first_output)),
                _ => {
                    format!("failed before the guest started: {}", report.tail.last().map(String::as_str).unwrap_or(""))
                }
            };
            eprintln!("fsbench: kernel {}: qemu with KVM {why}; falling back to TCG", k.label);
            try_accel = Accel::Tcg;
            continue;
        }
        if let Some(b) = report.booted_after
            && !req.quiet
        {
            eprintln!(
                "fsbench: kernel {}: guest up after {}, done after {} ({})",
                k.label,
                crate::text::human_duration(b),
                crate::text::human_duration(report.elapsed),
                try_accel.name()
            );
        }
        if report.booted_after.is_some() || matches!(report.outcome, Outcome::Exited(_)) {
            *accel = Some(try_accel);
        }
        let ch = guest::parse_channel(&vm::read_channel(&channel));
        let dir = match &ch.results {
            Some(bytes) => {
                Some(adopt_results(bytes, req.out, k, try_accel).context("cannot store the guest's results")?)
            }
            None => None,
        };
        let tail = || report.tail.iter().rev().take(40).rev().cloned().collect::<Vec<_>>().join("\n");
        return match (&report.outcome, ch.exit) {
            (Outcome::Interrupted, _) => Ok((GuestEnd::Interrupted, dir)),
            (Outcome::Exited(_), Some(code)) => {
                if code != 0 {
                    eprintln!("fsbench: kernel {}: the guest's fsbench run exited with {code}", k.label);
                }
                Ok((GuestEnd::Exited(code), dir))
            }
            (Outcome::Exited(status), None) => {
                let why = ch.problem.clone().unwrap_or_else(|| "the guest ended without reporting".into());
                anyhow::bail!("{why} (qemu {status}); last console lines:\n{}", tail())
            }
            (Outcome::Silent, _) => anyhow::bail!(
                "qemu printed nothing within {}; last output:\n{}",
                crate::text::human_duration(spec.first_output),
                tail()
            ),
            (Outcome::TimedOut(why), _) => anyhow::bail!("{why}; qemu was killed; last console lines:\n{}", tail()),
        };
    }
}

/// Collect what the guest needs and write the initramfs; returns its size.
fn build_initramfs(s: &Scenario, k: &KernelSpec, req: &KernelsRequest, dest: &Path) -> anyhow::Result<u64> {
    let exe = std::env::current_exe().context("cannot find the fsbench executable")?;
    let mut c = Contents::default();
    // Debug builds carry ~60 MiB of debug info the guest never reads; without it the
    // initramfs is a third the size and boots about a second sooner under TCG.
    let stripped = dest.with_file_name("fsbench");
    let exe = match std::process::Command::new("strip")
        .arg("--strip-debug")
        .arg("-o")
        .arg(&stripped)
        .arg(&exe)
        .stderr(std::process::Stdio::null())
        .status()
    {
        Ok(st) if st.success() => stripped,
        _ => exe,
    };
    c.programs.push((exe, GUEST_EXE.into()));
    let mut tools: Vec<String> = s.matrix.fs.iter().map(|f| format!("mkfs.{f}")).collect();
    let quota = s.matrix.quota.contains(&QuotaMode::On);
    if quota {
        tools.push("quotacheck".into());
    }
    if let Workload::Steps(st) = &s.workload {
        for step in &st.steps {
            if let Step::Exec { argv } = step
                && let Some(p) = argv.first()
            {
                tools.push(p.clone());
            }
        }
    }
    for t in &tools {
        let host = if t.contains('/') { Some(PathBuf::from(t)) } else { crate::provision::mkfs::find_tool(t) };
        match host {
            // The guest finds tools on PATH=/sbin:...; absolute ones keep their path.
            Some(h) => c.programs.push((h.clone(), if t.contains('/') { t.clone() } else { format!("/sbin/{t}") })),
            // Missing here, missing there: the guest's runner skips those cells with the usual remedy.
            None => eprintln!("fsbench: warning: {t} is not installed on the host, so the guest has none either"),
        }
    }
    for conf in ["/etc/mke2fs.conf"] {
        if Path::new(conf).is_file() {
            c.files.push((conf.into(), conf.into()));
        }
    }

    // Kernel modules, dependencies first.
    let mdir = modules_dir(k)?;
    let index = modules::ModuleIndex::load(&mdir)?;
    let wanted = modules::wanted_for(&s.matrix.fs, quota);
    let wanted_refs: Vec<&str> = wanted.iter().map(String::as_str).collect();
    let (order, _missing) = index.resolve(&wanted_refs);
    let mut guest_modules = Vec::new();
    for name in &order {
        let rel = &index.paths[name];
        let bytes = modules::read_module(&mdir.join(rel))?;
        let file = rel.rsplit('/').next().unwrap_or(rel).trim_end_matches(".gz").to_string();
        let guest = format!("{GUEST_MODULES}/{file}");
        c.modules.push((bytes, guest.clone()));
        guest_modules.push(guest);
    }

    // The scenario (overrides applied) and its fixtures.
    let scenario_path = format!("/fsbench.d/{}.toml", s.name);
    c.data.push((scenario_path.clone(), s.source.text.clone().into_bytes()));
    if let Some(a) = &s.archive {
        match &a.source {
            ArchiveSource::Path(p) => {
                // The guest parses the same scenario text from /fsbench.d/, so a relative
                // `[archive] path` (always the case in a bundle) resolves there, not at the host's path.
                c.files.push((p.clone(), guest_archive_path(&s.source.text, p)));
            }
            ArchiveSource::Generate { .. } => {
                // Generate once on the host (fast, cached) rather than in an emulated guest.
                let cache = crate::fixture::cache_dir();
                let p = crate::fixture::cached_archive(&a.source, &cache).context("cannot prepare the archive")?;
                let rel = p.strip_prefix(&cache).unwrap_or(Path::new(&a.file_name)).to_string_lossy().into_owned();
                c.files.push((p, format!("{GUEST_CACHE}/fsbench/{rel}")));
            }
        }
    }
    let libs: Vec<PathBuf> =
        c.programs.iter().map(|(h, _)| initramfs::shared_libraries(h)).collect::<Result<Vec<_>, _>>()?.concat();
    let cfg = GuestConfig {
        label: k.label.clone(),
        scenario: scenario_path,
        only: req.only.to_vec(),
        order_seed: match req.order {
            crate::runner::CellOrder::Random { seed } => Some(seed),
            crate::runner::CellOrder::Plan => None,
        },
        modules: guest_modules,
        env: vec![("LD_LIBRARY_PATH".into(), initramfs::library_dirs(&libs).join(":"))],
    };
    c.data.push((GUEST_CONFIG.into(), serde_json::to_vec_pretty(&cfg)?));
    Ok(initramfs::write(&c, dest)?)
}

/// Unpack the guest's results under `out` and note the kernel and accelerator in each cell.
fn adopt_results(tar_gz: &[u8], out: &Path, k: &KernelSpec, accel: Accel) -> anyhow::Result<PathBuf> {
    let stage = tempfile::Builder::new()
        .prefix(".fsbench-guest-")
        .tempdir_in(out)
        .with_context(|| format!("cannot stage under {}", out.display()))?;
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(tar_gz));
    ar.set_preserve_permissions(false);
    ar.unpack(stage.path()).context("cannot unpack the guest's results")?;
    // <scenario>/<run-id>/run.json: exactly one run.
    let run_json = walkdir::WalkDir::new(stage.path())
        .min_depth(3)
        .max_depth(3)
        .into_iter()
        .filter_map(Result::ok)
        .find(|e| e.file_name() == crate::results::RUN_FILE)
        .ok_or_else(|| anyhow::anyhow!("the guest sent no run directory"))?;
    let run_dir = run_json.path().parent().expect("depth 3").to_path_buf();
    let scenario_dir = run_dir.parent().expect("depth 3").file_name().expect("named").to_owned();
    let run_id = run_dir.file_name().expect("named").to_string_lossy().into_owned();
    let note = format!(
        "ran in qemu ({}) under kernel {} ({}){}",
        accel.name(),
        k.label,
        k.image.display(),
        if accel == Accel::Tcg { "; TCG timings are emulated: compare them only with other TCG runs" } else { "" }
    );
    let cells = run_dir.join("cells");
    if let Ok(rd) = std::fs::read_dir(&cells) {
        for e in rd.filter_map(Result::ok) {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "json") {
                let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&p)?)
                    .with_context(|| format!("bad cell file {}", p.display()))?;
                // An empty `notes` is left out of cell files: add it back.
                let notes =
                    v.as_object_mut().map(|o| o.entry("notes").or_insert_with(|| serde_json::Value::Array(Vec::new())));
                if let Some(serde_json::Value::Array(notes)) = notes {
                    notes.push(serde_json::Value::String(note.clone()));
                }
                crate::results::write_atomic(&p, &serde_json::to_vec_pretty(&v)?)?;
            }
        }
    }
    let parent = out.join(&scenario_dir);
    std::fs::create_dir_all(&parent).with_context(|| format!("cannot create {}", parent.display()))?;
    let mut dest = parent.join(&run_id);
    let mut n = 2;
    while dest.exists() {
        dest = parent.join(format!("{run_id}-{n}"));
        n += 1;
    }
    std::fs::rename(&run_dir, &dest).with_context(|| format!("cannot move the guest's run to {}", dest.display()))?;
    Ok(dest)
}

/// Where the guest's scenario (parsed from `/fsbench.d/`) looks for the archive at host path `host`:
/// `/fsbench.d/<path>` when the scenario text names it relatively, else the same absolute path.
fn guest_archive_path(scenario_text: &str, host: &Path) -> String {
    let written = toml::from_str::<toml::Value>(scenario_text)
        .ok()
        .and_then(|v| v.get("archive")?.get("path")?.as_str().map(String::from));
    match written {
        Some(rel) if !Path::new(&rel).is_absolute() => format!("/fsbench.d/{rel}"),
        _ => host.to_string_lossy().into_owned(),
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_with_a_relative_archive_path_copied_it_under_its_absolute_host_path() {
        let host = Path::new("/home/u/bundle/linux.tar.gz");
        let rel = "schema = 1\n[archive]\npath = \"fixtures/linux.tar.gz\"\n";
        assert_eq!(guest_archive_path(rel, host), "/fsbench.d/fixtures/linux.tar.gz");
        let abs = "[archive]\npath = \"/home/u/bundle/linux.tar.gz\"\n";
        assert_eq!(guest_archive_path(abs, host), "/home/u/bundle/linux.tar.gz");
    }

    #[test]
    fn kernel_args_parse_with_options_and_reject_garbage() {
        let k = parse_kernel_arg(
            "V3=/k/boot/vmlinuz-6.1.0-50-amd64,modules=/k/lib/modules/6.1.0-50-amd64,memory=2GiB,cpus=4",
        )
        .unwrap();
        assert_eq!(k.label, "V3");
        assert_eq!(k.image, PathBuf::from("/k/boot/vmlinuz-6.1.0-50-amd64"));
        assert_eq!(k.modules, Some(PathBuf::from("/k/lib/modules/6.1.0-50-amd64")));
        assert_eq!((k.memory, k.cpus), (2 << 30, 4));
        let k = parse_kernel_arg("BASE=bzImage").unwrap();
        assert_eq!((k.modules, k.memory, k.cpus), (None, 1 << 30, 2));
        for bad in ["nolabel", "=x", "A=", "A=x,modules", "A=x,foo=1", "A b=x", "A=x,cpus=0", "A=x,memory=lots"] {
            assert!(parse_kernel_arg(bad).is_err(), "{bad} accepted");
        }
        assert!(parse_kernel_arg("A=x,foo=1").unwrap_err().to_string().contains("unknown key `foo`"));
    }

    #[test]
    fn modules_dir_follows_an_unpacked_package() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("boot")).unwrap();
        std::fs::create_dir_all(t.path().join("lib/modules/6.1.0-50-amd64")).unwrap();
        let image = t.path().join("boot/vmlinuz-6.1.0-50-amd64");
        std::fs::write(&image, b"not a bzImage").unwrap();
        let k = parse_kernel_arg(&format!("X={}", image.display())).unwrap();
        assert_eq!(modules_dir(&k).unwrap(), t.path().join("lib/modules/6.1.0-50-amd64"));
        let other = t.path().join("boot/bzImage");
        std::fs::write(&other, b"x").unwrap();
        let k = parse_kernel_arg(&format!("X={}", other.display())).unwrap();
        assert!(modules_dir(&k).unwrap_err().to_string().contains("modules=DIR"));
    }

    #[test]
    fn bzimage_release_is_read_from_the_setup_header() {
        let mut img = vec![0u8; 0x400];
        img[0x202..0x206].copy_from_slice(b"HdrS");
        img[0x20e..0x210].copy_from_slice(&0x100u16.to_le_bytes());
        img[0x300..0x300 + 20].copy_from_slice(b"6.1.0-50-amd64 (x) \0");
        assert_eq!(image_release(&img).as_deref(), Some("6.1.0-50-amd64"));
        assert_eq!(image_release(b"short"), None);
    }
}
