//! Whether this host can profile a cell, and with which event: found once per run, shown
//! by `fsbench doctor`, and said in every cell that runs unprofiled.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A recorder that works here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorder {
    /// The `perf` program to run.
    pub perf: OsString,
    /// `perf version 6.1.187`.
    pub version: String,
    /// `cycles` where the CPU has a PMU, else `cpu-clock` (a software event, which VMs have).
    pub event: &'static str,
    /// Whether a system-wide session (`perf record -a`, for `+kthreads`) may run: root,
    /// or `perf_event_paranoid` at 0 or lower; else why not.
    pub system_wide: Result<(), String>,
}

/// Where to look: the `perf` program and `/proc` (tests point these elsewhere), and
/// whether fsbench runs as root.
#[derive(Debug, Clone)]
pub struct Probe {
    /// The `perf` program (`perf`, found on `PATH`).
    pub perf: OsString,
    /// `/proc`.
    pub proc_root: PathBuf,
    /// Running as root (which may sample the kernel whatever the paranoid level).
    pub root: bool,
    /// Running inside one of fsbench's own qemu guests: it profiles itself with the perf the
    /// host packed into its initramfs, so the stacks name the guest kernel's functions.
    pub in_guest: bool,
}

impl Probe {
    /// This host, as it is.
    pub fn host() -> Probe {
        Probe {
            perf: OsString::from("perf"),
            proc_root: PathBuf::from("/proc"),
            root: crate::provision::is_root(),
            in_guest: std::env::var_os(crate::host::IN_GUEST_ENV).is_some(),
        }
    }
}

/// The recorder to use, or why a cell cannot be profiled here (a sentence with the remedy).
pub fn detect(probe: &Probe) -> Result<Recorder, String> {
    let paranoid_file = probe.proc_root.join("sys/kernel/perf_event_paranoid");
    let paranoid = match std::fs::read_to_string(&paranoid_file) {
        Ok(t) => t.trim().parse::<i32>().ok(),
        Err(_) => return Err(format!("the kernel has no perf events ({} is missing)", paranoid_file.display())),
    };
    // Kernel stacks need level 1 or lower without root (Debian adds 3: nothing at all).
    if let Some(level) = paranoid.filter(|&l| l > 1 && !probe.root) {
        return Err(format!(
            "perf_event_paranoid is {level} and fsbench is not root: kernel stacks need root or `sysctl kernel.perf_event_paranoid=1`"
        ));
    }
    let version = match run(&probe.perf, &["--version"]) {
        Ok((true, out)) => out.trim().to_string(),
        Ok((false, out)) => {
            return Err(format!("perf does not run here: {}", crate::text::first_line_cut(out.trim(), 200)));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && probe.in_guest => {
            // The guest's perf is the host's, packed into its initramfs when the scenario profiles.
            return Err("the qemu guest has no perf: the host had none to pack into it (apt-get install linux-perf on the host)".into());
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!(
                "perf is not installed ({} not found; apt-get install linux-perf)",
                Path::new(&probe.perf).display()
            ));
        }
        Err(e) => return Err(format!("cannot run {}: {e}", Path::new(&probe.perf).display())),
    };
    let event = if counts(&probe.perf, "cycles") {
        "cycles"
    } else if counts(&probe.perf, "cpu-clock") {
        "cpu-clock"
    } else {
        return Err("perf can count neither cycles nor cpu-clock here (`perf stat -e cpu-clock` counts nothing)".into());
    };
    let system_wide = match paranoid {
        _ if probe.root => Ok(()),
        Some(level) if level <= 0 => Ok(()),
        level => Err(format!(
            "perf_event_paranoid is {} and fsbench is not root: every CPU's events need root or `sysctl kernel.perf_event_paranoid=0`",
            level.map_or("unreadable".to_string(), |l| l.to_string())
        )),
    };
    Ok(Recorder { perf: probe.perf.clone(), version, event, system_wide })
}

/// Whether `perf stat -e <event>` counts the event over a short program (a VM without a
/// PMU says `<not supported>` for cycles). The program is fsbench itself (`--version`):
/// a qemu guest's initramfs has no `true`.
fn counts(perf: &OsString, event: &str) -> bool {
    let me = std::env::current_exe().map(|p| p.into_os_string()).unwrap_or_else(|_| "true".into());
    let Some(me) = me.to_str() else { return false };
    // A counted row (`1.23,msec,cpu-clock,…`), whatever the program's own exit status.
    let counted = |out: &str| {
        out.lines().any(|l| {
            let f: Vec<&str> = l.split(',').collect();
            f.len() > 2 && f[2] == event && f[0].trim().parse::<f64>().is_ok()
        })
    };
    run(perf, &["stat", "-x", ",", "-e", event, "--", me, "--version"]).is_ok_and(|(_, out)| counted(&out))
}

/// Run `perf args`, its stdout and stderr together (perf stat writes to stderr).
fn run(perf: &OsString, args: &[&str]) -> std::io::Result<(bool, String)> {
    let out = crate::signals::default_in_child(&mut Command::new(perf)).args(args).stdin(Stdio::null()).output()?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    Ok((out.status.success(), text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(dir: &Path, perf: &str, paranoid: Option<&str>, root: bool) -> Probe {
        if let Some(level) = paranoid {
            std::fs::create_dir_all(dir.join("sys/kernel")).unwrap();
            std::fs::write(dir.join("sys/kernel/perf_event_paranoid"), level).unwrap();
        }
        Probe { perf: perf.into(), proc_root: dir.to_path_buf(), root, in_guest: false }
    }

    /// A stand-in `perf` that prints what a VM's perf 6.1 prints.
    fn fake_perf(dir: &Path, cycles: &str) -> String {
        let p = dir.join("perf");
        let script = format!(
            "#!/bin/sh\ncase \"$1\" in\n--version) echo 'perf version 6.1.0';;\nstat) case \"$5\" in cycles) echo '{cycles},,cycles,0,100.00,,' >&2;; *) echo '1.2,msec,cpu-clock,1,100.00,,' >&2;; esac;;\nesac\n"
        );
        std::fs::write(&p, script).unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        p.to_string_lossy().into_owned()
    }

    #[test]
    fn without_perf_the_cell_says_how_to_install_it() {
        let d = tempfile::tempdir().unwrap();
        let e = detect(&probe(d.path(), "/nonexistent/perf", Some("2"), true)).unwrap_err();
        assert!(e.contains("perf is not installed") && e.contains("apt-get install linux-perf"), "{e}");
    }

    #[test]
    fn a_paranoid_level_above_one_without_root_is_refused_with_the_sysctl() {
        let d = tempfile::tempdir().unwrap();
        let perf = fake_perf(d.path(), "<not supported>");
        let e = detect(&probe(d.path(), &perf, Some("3\n"), false)).unwrap_err();
        assert!(e.contains("perf_event_paranoid is 3") && e.contains("kernel.perf_event_paranoid=1"), "{e}");
        // Root samples the kernel whatever the level; level 1 is enough without root.
        assert!(detect(&probe(d.path(), &perf, Some("3"), true)).is_ok());
        assert!(detect(&probe(d.path(), &perf, Some("1"), false)).is_ok());
    }

    #[test]
    fn a_system_wide_session_needs_root_or_paranoid_zero() {
        let d = tempfile::tempdir().unwrap();
        let perf = fake_perf(d.path(), "<not supported>");
        let r = detect(&probe(d.path(), &perf, Some("1"), false)).unwrap();
        let why = r.system_wide.unwrap_err();
        assert!(why.contains("perf_event_paranoid is 1") && why.contains("kernel.perf_event_paranoid=0"), "{why}");
        assert!(detect(&probe(d.path(), &perf, Some("0"), false)).unwrap().system_wide.is_ok());
        assert!(detect(&probe(d.path(), &perf, Some("2"), true)).unwrap().system_wide.is_ok());
    }

    #[test]
    fn without_a_pmu_the_event_is_cpu_clock_and_with_one_cycles() {
        let d = tempfile::tempdir().unwrap();
        let perf = fake_perf(d.path(), "<not supported>");
        let r = detect(&probe(d.path(), &perf, Some("2"), true)).unwrap();
        assert_eq!((r.event, r.version.as_str()), ("cpu-clock", "perf version 6.1.0"));
        let perf = fake_perf(d.path(), "123456");
        assert_eq!(detect(&probe(d.path(), &perf, Some("2"), true)).unwrap().event, "cycles");
    }

    #[test]
    fn a_kernel_without_perf_events_or_a_qemu_guest_without_perf_is_not_profiled() {
        let d = tempfile::tempdir().unwrap();
        let e = detect(&probe(d.path(), "perf", None, true)).unwrap_err();
        assert!(e.contains("no perf events"), "{e}");
        let mut p = probe(d.path(), "/nonexistent/perf", Some("1"), true);
        p.in_guest = true;
        let e = detect(&p).unwrap_err();
        assert!(e.contains("qemu guest has no perf") && e.contains("on the host"), "{e}");
    }
}
