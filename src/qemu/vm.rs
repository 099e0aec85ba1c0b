//! One qemu process: started in its own process group, watched (boot, per-cell
//! and overall deadlines, Ctrl-C), killed with its group on every way out.

use std::collections::VecDeque;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::QemuError;
use super::guest::CONSOLE_PREFIX;

/// The accelerator qemu runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accel {
    /// Hardware virtualisation: timings close to the metal.
    Kvm,
    /// Software emulation: timings comparable only with other TCG runs.
    Tcg,
}

impl Accel {
    /// `kvm` / `tcg`.
    pub fn name(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }
}

/// Everything one boot needs.
#[derive(Debug, Clone)]
pub struct BootSpec {
    /// qemu-system-x86_64 (or a path to it).
    pub qemu: PathBuf,
    /// Kernel image.
    pub kernel: PathBuf,
    /// The initramfs.
    pub initrd: PathBuf,
    /// Kernel command line.
    pub append: String,
    /// Memory in MiB.
    pub memory_mib: u64,
    /// CPUs.
    pub cpus: u32,
    /// File the guest's results channel (second serial port) is written to.
    pub channel: PathBuf,
    /// Accelerator.
    pub accel: Accel,
    /// No guest output at all within this long: the accelerator hangs (the KVM watchdog).
    pub first_output: Duration,
    /// No line from fsbench inside the guest within this long after start: boot failed.
    pub boot_timeout: Duration,
    /// No progress line for this long while cells run: the guest hangs.
    pub cell_timeout: Duration,
    /// The whole boot and run.
    pub overall_timeout: Duration,
}

/// How a boot ended.
#[derive(Debug)]
pub enum Outcome {
    /// qemu exited by itself (the guest powered off, or the kernel panicked with panic=-1).
    Exited(std::process::ExitStatus),
    /// No output at all before `first_output`: the accelerator hangs.
    Silent,
    /// A deadline passed; says which.
    TimedOut(String),
    /// SIGINT/SIGTERM arrived.
    Interrupted,
}

/// What a boot left behind for the report.
#[derive(Debug)]
pub struct BootReport {
    /// How it ended.
    pub outcome: Outcome,
    /// The last console lines (kernel messages included), for failures and panics.
    pub tail: Vec<String>,
    /// When the guest's fsbench said its first line, measured from the start of qemu.
    pub booted_after: Option<Duration>,
    /// Wall time of the whole boot.
    pub elapsed: Duration,
}

/// The qemu command line for `spec`.
pub fn command_line(spec: &BootSpec) -> Vec<String> {
    let mut a: Vec<String> = vec![
        "-nodefaults".into(),
        "-no-user-config".into(),
        "-display".into(),
        "none".into(),
        "-no-reboot".into(),
        "-monitor".into(),
        "none".into(),
        "-m".into(),
        format!("{}M", spec.memory_mib),
        "-smp".into(),
        spec.cpus.to_string(),
        "-kernel".into(),
        spec.kernel.to_string_lossy().into_owned(),
        "-initrd".into(),
        spec.initrd.to_string_lossy().into_owned(),
        "-append".into(),
        spec.append.clone(),
        "-serial".into(),
        "stdio".into(),
        "-serial".into(),
        format!("file:{}", spec.channel.display()),
    ];
    match spec.accel {
        Accel::Kvm => a.extend(["-accel".into(), "kvm".into(), "-cpu".into(), "host".into()]),
        Accel::Tcg => a.extend(["-accel".into(), "tcg,thread=multi".into(), "-cpu".into(), "max".into()]),
    }
    a
}

/// Kills the qemu process group when dropped, whatever happened.
struct Guard(Option<Child>);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            // The group: qemu's helper threads/processes go with it.
            let _ =
                nix::sys::signal::killpg(nix::unistd::Pid::from_raw(c.id() as i32), nix::sys::signal::Signal::SIGKILL);
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Boot and watch until qemu exits or a deadline passes. `on_line` sees each
/// guest fsbench line (prefix removed) as it arrives.
pub fn boot(spec: &BootSpec, on_line: &mut dyn FnMut(&str)) -> Result<BootReport, QemuError> {
    // Interrupted before the boot (while the initramfs was built): nothing to start.
    if crate::signals::interrupted() {
        return Ok(BootReport {
            outcome: Outcome::Interrupted,
            tail: Vec::new(),
            booted_after: None,
            elapsed: Duration::ZERO,
        });
    }
    let args = command_line(spec);
    let mut cmd = Command::new(&spec.qemu);
    cmd.args(&args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // Its own group, and killed by the kernel if fsbench is SIGKILLed: no guest outlives us.
    crate::workload::child::contain(&mut cmd);
    let mut child =
        cmd.spawn().map_err(|e| QemuError::Io { what: "start qemu".into(), path: spec.qemu.clone(), source: e })?;
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let mut guard = Guard(Some(child));
    let (tx, rx) = mpsc::channel::<String>();
    let tx2 = tx.clone();
    std::thread::spawn(move || forward(stdout, tx));
    // qemu's own complaints (bad option, cannot open /dev/kvm) come on stderr.
    std::thread::spawn(move || forward(stderr, tx2));

    let start = Instant::now();
    let mut tail: VecDeque<String> = VecDeque::new();
    let mut any_output = false;
    let mut booted_after = None;
    let mut last_progress = Instant::now();
    let outcome = loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(line) => {
                any_output = true;
                let line = line.trim_end_matches('\r').to_string();
                if let Some(g) = line.strip_prefix(CONSOLE_PREFIX) {
                    booted_after.get_or_insert(start.elapsed());
                    last_progress = Instant::now();
                    on_line(g);
                } else if line.contains("Kernel panic") {
                    on_line(&format!("guest kernel: {line}"));
                }
                tail.push_back(line);
                if tail.len() > 80 {
                    tail.pop_front();
                }
                continue;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {}
        }
        // First: qemu killed by the same Ctrl-C (a terminal's signal reaches its group too)
        // is the interruption, not a failed boot to retry or fall back from.
        if crate::signals::interrupted() {
            break Outcome::Interrupted;
        }
        let c = guard.0.as_mut().expect("running");
        if let Some(status) = c.try_wait().map_err(|e| QemuError::Io {
            what: "wait for qemu".into(),
            path: spec.qemu.clone(),
            source: e,
        })? {
            // Drain what is still buffered in the pipes.
            while let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) {
                let line = line.trim_end_matches('\r').to_string();
                if let Some(g) = line.strip_prefix(CONSOLE_PREFIX) {
                    on_line(g);
                }
                tail.push_back(line);
            }
            guard.0 = None;
            break Outcome::Exited(status);
        }
        let now = start.elapsed();
        if !any_output && now > spec.first_output {
            break Outcome::Silent;
        }
        if booted_after.is_none() && now > spec.boot_timeout {
            break Outcome::TimedOut(format!(
                "the guest did not start fsbench within {}",
                crate::text::human_duration(spec.boot_timeout)
            ));
        }
        if booted_after.is_some() && last_progress.elapsed() > spec.cell_timeout {
            break Outcome::TimedOut(format!(
                "no progress from the guest for {} (cell timeout)",
                crate::text::human_duration(spec.cell_timeout)
            ));
        }
        if now > spec.overall_timeout {
            break Outcome::TimedOut(format!(
                "the guest run exceeded {} (overall timeout)",
                crate::text::human_duration(spec.overall_timeout)
            ));
        }
    };
    drop(guard);
    let keep = tail.len().saturating_sub(80);
    Ok(BootReport { outcome, tail: tail.into_iter().skip(keep).collect(), booted_after, elapsed: start.elapsed() })
}

fn forward(r: impl std::io::Read, tx: mpsc::Sender<String>) {
    let mut r = std::io::BufReader::new(r);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match r.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                let line = String::from_utf8_lossy(&buf).trim_end_matches('\n').to_string();
                if tx.send(line).is_err() {
                    return;
                }
            }
        }
    }
}

/// Whether /dev/kvm can be opened for reading and writing (qemu may still hang on it).
pub fn kvm_openable() -> bool {
    std::fs::OpenOptions::new().read(true).write(true).open("/dev/kvm").is_ok()
}

/// `qemu-system-x86_64` on PATH (or `$FSBENCH_QEMU`).
pub fn find_qemu() -> Option<PathBuf> {
    if let Some(q) = std::env::var_os("FSBENCH_QEMU").filter(|q| !q.is_empty()) {
        return Some(PathBuf::from(q));
    }
    crate::provision::mkfs::find_tool("qemu-system-x86_64")
}

/// The channel file as text (lossy; the format is ASCII).
pub fn read_channel(path: &Path) -> String {
    std::fs::read(path).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default()
}
