//! Booting each kernel in turn and running the cells in its guest: the request, the
//! deadlines, the KVM-to-TCG fallback and how each guest's run ended.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;

use super::adopt::adopt_results;
use super::guest;
use super::guest_files::build_initramfs;
use super::initramfs::GUEST_EXE;
pub use super::request::KernelsRequest;
use super::vm::{self, Accel, BootSpec, Outcome};
use crate::scenario::{KernelSpec, Scenario};

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
    let cell_work = crate::workload::kind::of(&s.workload).guest_cell_work();
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
    let guest = boot_guest(req, k, qemu, accel)?;
    let dir = match &guest.results {
        Some(bytes) => Some(adopt_results(bytes, req.out, k, guest.accel).context("cannot store the guest's results")?),
        None => None,
    };
    guest.end.map(|end| (end, dir))
}

/// What one boot of a kernel gave back.
pub(super) struct GuestRun {
    /// The guest's run directory as it sent it (a tar.gz), when it sent one.
    pub results: Option<Vec<u8>>,
    /// The accelerator the guest ran with.
    pub accel: Accel,
    /// How it ended, or why it could not be run to the end (a timeout, a guest that
    /// ended without reporting).
    pub end: anyhow::Result<GuestEnd>,
}

/// Boot kernel `k` with an initramfs for `req` (its scenario, `--only` filters and order)
/// and wait for the guest's run to end. `accel` is the accelerator a first boot settled on
/// (KVM when it works, else TCG); it is set here when unset, so every later boot uses it.
/// Errors: what stopped the guest from being booted at all (the initramfs, qemu).
pub(super) fn boot_guest(
    req: &KernelsRequest,
    k: &KernelSpec,
    qemu: &Path,
    accel: &mut Option<Accel>,
) -> anyhow::Result<GuestRun> {
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
        let tail = || report.tail.iter().rev().take(40).rev().cloned().collect::<Vec<_>>().join("\n");
        let end = match (&report.outcome, ch.exit) {
            (Outcome::Interrupted, _) => Ok(GuestEnd::Interrupted),
            (Outcome::Exited(_), Some(code)) => {
                if code != 0 {
                    eprintln!("fsbench: kernel {}: the guest's fsbench run exited with {code}", k.label);
                }
                Ok(GuestEnd::Exited(code))
            }
            (Outcome::Exited(status), None) => {
                let why = ch.problem.clone().unwrap_or_else(|| "the guest ended without reporting".into());
                Err(anyhow::anyhow!("{why} (qemu {status}); last console lines:\n{}", tail()))
            }
            (Outcome::Silent, _) => Err(anyhow::anyhow!(
                "qemu printed nothing within {}; last output:\n{}",
                crate::text::human_duration(spec.first_output),
                tail()
            )),
            (Outcome::TimedOut(why), _) => {
                Err(anyhow::anyhow!("{why}; qemu was killed; last console lines:\n{}", tail()))
            }
        };
        return Ok(GuestRun { results: ch.results, accel: try_accel, end });
    }
}
