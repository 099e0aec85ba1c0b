//! Inside the virtual machine: fsbench is PID 1. It mounts the pseudo
//! filesystems, loads the kernel modules the host chose, runs the ordinary
//! `fsbench run` as a child (so results, host info and quota read-back are the
//! normal ones, from the guest kernel), sends the run directory back over the
//! second serial port, and powers the machine off.
//!
//! Wire format on `/dev/ttyS1` (the host strips `\r`):
//! `FSBENCH-RESULTS <bytes>` / hex lines of a gzipped tar / `FSBENCH-RESULTS-END` /
//! `FSBENCH-EXIT <code>`. Everything human-readable goes to the console (ttyS0),
//! each line prefixed with [`CONSOLE_PREFIX`].

use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

use super::initramfs::{GUEST_CACHE, GUEST_CONFIG, GUEST_EXE};

/// Prefix of the guest's own lines on the console, so the host can tell them from kernel messages.
pub const CONSOLE_PREFIX: &str = "fsbench-guest: ";
/// Environment variable set for the guest's runner: scenario `[[kernels]]` are not followed again inside.
pub use crate::host::IN_GUEST_ENV;
/// The serial port the results travel on.
pub const CHANNEL_TTY: &str = "/dev/ttyS1";
/// Where the guest's runner writes its run directory.
pub const GUEST_RESULTS: &str = "/results";

/// What the host tells the guest (`/fsbench.d/guest.json`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GuestConfig {
    /// Run label (the kernel's label).
    pub label: String,
    /// Scenario file inside the guest (already overridden with `--set`).
    pub scenario: String,
    /// `--only` filters.
    pub only: Vec<String>,
    /// The seed of `--order random`, when the host run was asked for it; absent: the plan's order.
    #[serde(default)]
    pub order_seed: Option<u64>,
    /// Kernel modules to load, in order (guest paths).
    pub modules: Vec<String>,
    /// Extra environment for the runner (`LD_LIBRARY_PATH`, ...).
    pub env: Vec<(String, String)>,
    /// The scenario profiles, but not in this guest (a paired member past the profiled pairs).
    #[serde(default)]
    pub unprofiled: bool,
}

/// The guest's `fsbench run` arguments: the scenario, the kernel's label, and the host
/// run's `--only` filters and `--order`, and profiling turned off where the host says so.
fn run_args(cfg: &GuestConfig) -> Vec<String> {
    let mut a: Vec<String> =
        ["run", &cfg.scenario, "--out", GUEST_RESULTS, "--label", &cfg.label].map(String::from).into();
    for o in &cfg.only {
        a.extend(["--only".into(), o.clone()]);
    }
    if let Some(seed) = cfg.order_seed {
        a.extend(["--order".into(), "random".into(), "--seed".into(), seed.to_string()]);
    }
    if cfg.unprofiled {
        a.extend(["--set".into(), "workload.profile=\"off\"".into()]);
    }
    a
}

/// Entry point when the kernel runs fsbench as init (`/fsbench __guest-init`). Never returns.
pub fn init_main() -> ! {
    let code = match run_init() {
        Ok(code) => code,
        Err(e) => {
            say(&format!("guest init failed: {e:#}"));
            3
        }
    };
    let _ = send_exit(code);
    nix::unistd::sync();
    // -no-reboot on the host turns this into qemu exiting.
    // SAFETY: reboot(2) with a valid command; it does not return on success.
    unsafe { libc::reboot(libc::LINUX_REBOOT_CMD_POWER_OFF) };
    // Unreachable unless reboot(2) failed; PID 1 must not exit (that is a panic, which also ends qemu).
    std::process::exit(code)
}

/// A line on the console with the prefix the host looks for.
fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{CONSOLE_PREFIX}{line}");
    let _ = out.flush();
}

fn run_init() -> anyhow::Result<i32> {
    use anyhow::Context;
    use nix::mount::{MsFlags, mount};
    for (src, target, fstype) in [
        ("proc", "/proc", "proc"),
        ("sysfs", "/sys", "sysfs"),
        ("devtmpfs", "/dev", "devtmpfs"),
        ("tmpfs", "/tmp", "tmpfs"),
    ] {
        std::fs::create_dir_all(target).ok();
        mount(Some(src), target, Some(fstype), MsFlags::empty(), None::<&str>)
            .with_context(|| format!("mount {fstype} on {target}"))?;
    }
    // Tracepoints (an off-CPU profile's sched_switch) need tracefs; a kernel without it
    // profiles on-CPU only, and the cell says why.
    std::fs::create_dir_all("/sys/kernel/tracing").ok();
    if let Err(e) = mount(Some("tracefs"), "/sys/kernel/tracing", Some("tracefs"), MsFlags::empty(), None::<&str>) {
        say(&format!("note: no tracefs ({e}): off-CPU profiles cannot be taken in this guest"));
    }
    let cfg: GuestConfig =
        serde_json::from_slice(&std::fs::read(GUEST_CONFIG).context("read the guest configuration")?)
            .context("parse the guest configuration")?;
    // The run id and HostInfo carry the host name: make it say which kernel this was.
    let host = format!("fsbench-{}", cfg.label);
    // SAFETY: a valid buffer and its length.
    unsafe { libc::sethostname(host.as_ptr().cast(), host.len()) };
    say(&format!(
        "booted kernel {}",
        nix::sys::utsname::uname().map(|u| u.release().to_string_lossy().into_owned()).unwrap_or_default()
    ));
    for m in &cfg.modules {
        if let Err(e) = load_module(Path::new(m)) {
            say(&format!("warning: cannot load module {m}: {e}"));
        }
    }
    let mut cmd = Command::new(GUEST_EXE);
    crate::signals::default_in_child(&mut cmd);
    cmd.args(run_args(&cfg));
    cmd.env_clear()
        .env("PATH", "/sbin:/bin:/usr/sbin:/usr/bin")
        .env("HOME", "/root")
        .env("XDG_CACHE_HOME", GUEST_CACHE)
        .env(IN_GUEST_ENV, "1")
        .envs(cfg.env.iter().map(|(k, v)| (k, v)))
        .current_dir("/");
    // stderr through a pipe: the runner prints a line per cell (not a terminal) and
    // the host sees each as it happens. stdout holds only the final tables, which
    // the host renders itself from the results.
    let (r, w) = nix::unistd::pipe().context("pipe")?;
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::from(w));
    let mut child = cmd.spawn().context("start the guest's fsbench run")?;
    drop(cmd);
    for line in BufReader::new(std::fs::File::from(r)).lines() {
        match line {
            Ok(l) => say(&l),
            Err(_) => break,
        }
    }
    let status = child.wait().context("wait for the guest's fsbench run")?;
    let code = status.code().unwrap_or(128 + std::os::unix::process::ExitStatusExt::signal(&status).unwrap_or(0));
    say(&format!("fsbench run exited with {code}"));
    send_results(Path::new(GUEST_RESULTS)).context("send the results to the host")?;
    Ok(code)
}

/// finit_module(2); a module already loaded is fine.
fn load_module(path: &Path) -> std::io::Result<()> {
    let f = std::fs::File::open(path)?;
    let compressed = !path.to_string_lossy().ends_with(".ko");
    // MODULE_INIT_COMPRESSED_FILE: the kernel decompresses .ko.xz/.ko.zst itself.
    let flags: libc::c_int = if compressed { 4 } else { 0 };
    // SAFETY: a valid fd and a NUL-terminated empty parameter string.
    let rc = unsafe { libc::syscall(libc::SYS_finit_module, f.as_raw_fd(), c"".as_ptr(), flags) };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EEXIST) {
            return Err(e);
        }
    }
    Ok(())
}

fn channel() -> std::io::Result<std::fs::File> {
    let f = std::fs::OpenOptions::new().write(true).open(CHANNEL_TTY)?;
    // Raw output: no \n -> \r\n translation or other post-processing of our bytes.
    if let Ok(mut t) = nix::sys::termios::tcgetattr(&f) {
        nix::sys::termios::cfmakeraw(&mut t);
        let _ = nix::sys::termios::cfsetspeed(&mut t, nix::sys::termios::BaudRate::B115200);
        let _ = nix::sys::termios::tcsetattr(&f, nix::sys::termios::SetArg::TCSANOW, &t);
    }
    Ok(f)
}

fn send_results(dir: &Path) -> anyhow::Result<()> {
    let mut tar = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default()));
    tar.follow_symlinks(false);
    tar.append_dir_all(".", dir)?;
    let bytes = tar.into_inner()?.finish()?;
    let mut f = channel()?;
    let mut out = format!("FSBENCH-RESULTS {}\n", bytes.len()).into_bytes();
    for chunk in bytes.chunks(64) {
        out.extend(hex(chunk).into_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(b"FSBENCH-RESULTS-END\n");
    f.write_all(&out)?;
    let _ = nix::sys::termios::tcdrain(&f);
    Ok(())
}

fn send_exit(code: i32) -> std::io::Result<()> {
    let mut f = channel()?;
    f.write_all(format!("FSBENCH-EXIT {code}\n").as_bytes())?;
    let _ = nix::sys::termios::tcdrain(&f);
    Ok(())
}

/// Lower-case hex of `b`.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// What came back on the results channel.
#[derive(Debug, Default, PartialEq)]
pub struct Channel {
    /// The gzipped tar of the guest's results directory, when it arrived whole.
    pub results: Option<Vec<u8>>,
    /// The guest runner's exit code, when the guest got to report it.
    pub exit: Option<i32>,
    /// Why the results are missing or damaged.
    pub problem: Option<String>,
}

/// Decode the channel text written by the guest.
pub fn parse_channel(text: &str) -> Channel {
    let mut ch = Channel::default();
    let mut lines = text.lines().map(|l| l.trim_end_matches('\r'));
    while let Some(line) = lines.next() {
        if let Some(n) = line.strip_prefix("FSBENCH-RESULTS ") {
            let want: usize = n.trim().parse().unwrap_or(usize::MAX);
            let mut bytes = Vec::new();
            let mut ended = false;
            for l in lines.by_ref() {
                if l == "FSBENCH-RESULTS-END" {
                    ended = true;
                    break;
                }
                match unhex(l.trim()) {
                    Some(b) => bytes.extend(b),
                    None => {
                        ch.problem = Some("results channel: a line is not hex".into());
                        break;
                    }
                }
            }
            if ch.problem.is_none() {
                if !ended || bytes.len() != want {
                    ch.problem = Some(format!("results channel: {} of {} bytes arrived", bytes.len(), n.trim()));
                } else {
                    ch.results = Some(bytes);
                }
            }
        } else if let Some(c) = line.strip_prefix("FSBENCH-EXIT ") {
            ch.exit = c.trim().parse().ok();
        }
    }
    ch
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guest_run_gets_the_host_runs_filters_and_order() {
        let mut cfg = GuestConfig {
            label: "v6.1".into(),
            scenario: "/fsbench.d/s.toml".into(),
            only: vec!["fs=ext4".into()],
            order_seed: None,
            modules: Vec::new(),
            env: Vec::new(),
            unprofiled: false,
        };
        let a = run_args(&cfg);
        assert_eq!(a[..6], ["run", "/fsbench.d/s.toml", "--out", GUEST_RESULTS, "--label", "v6.1"]);
        assert_eq!(a[6..], ["--only", "fs=ext4"]);
        cfg.order_seed = Some(42);
        assert!(run_args(&cfg).ends_with(&["--order".into(), "random".into(), "--seed".into(), "42".into()]));
        // A host of an older fsbench sends no seed: the plan's order.
        let old: GuestConfig =
            serde_json::from_str(r#"{"label":"a","scenario":"s","only":[],"modules":[],"env":[]}"#).unwrap();
        assert_eq!(old.order_seed, None);
        assert!(!old.unprofiled);
        // A member past the profiled pairs: the guest's run turns the profile off.
        cfg.unprofiled = true;
        assert!(run_args(&cfg).ends_with(&["--set".into(), "workload.profile=\"off\"".into()]));
    }

    #[test]
    fn channel_round_trips_and_detects_truncation() {
        let payload: Vec<u8> = (0..=255u8).cycle().take(300).collect();
        let mut text = format!("noise\r\nFSBENCH-RESULTS {}\r\n", payload.len());
        for c in payload.chunks(64) {
            text.push_str(&hex(c));
            text.push_str("\r\n");
        }
        let full = format!("{text}FSBENCH-RESULTS-END\nFSBENCH-EXIT 1\n");
        let ch = parse_channel(&full);
        assert_eq!(ch.results.as_deref(), Some(&payload[..]));
        assert_eq!(ch.exit, Some(1));
        assert_eq!(ch.problem, None);

        let cut = &text[..text.len() - 70];
        let ch = parse_channel(cut);
        assert_eq!(ch.results, None);
        assert_eq!(ch.exit, None);
        assert!(ch.problem.unwrap().contains("of 300 bytes"));
    }

    #[test]
    fn empty_channel_is_no_results_and_no_exit() {
        assert_eq!(parse_channel(""), Channel::default());
    }
}
