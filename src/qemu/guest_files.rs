//! What a guest needs from the host, packed into its initramfs: this fsbench binary,
//! the mkfs and quota tools (fio, for a fio workload; perf, for a profiling scenario)
//! with their libraries, the kernel modules the cells need, the scenario and its
//! fixtures, and the guest's configuration.

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::guest::GuestConfig;
use super::initramfs::{self, Contents, GUEST_CACHE, GUEST_CONFIG, GUEST_EXE, GUEST_MODULES, GUEST_PERF};
use super::kernel::modules_dir;
use super::modules;
use super::request::KernelsRequest;
use crate::model::QuotaMode;
use crate::scenario::{ArchiveSource, KernelSpec, Scenario};

/// Collect what the guest needs and write the initramfs; returns its size.
pub(super) fn build_initramfs(s: &Scenario, k: &KernelSpec, req: &KernelsRequest, dest: &Path) -> anyhow::Result<u64> {
    // The running binary through /proc/<pid>/exe, not its path: a rebuild or an upgrade
    // that replaced the file under a running fsbench (cargo does, between test builds)
    // leaves that path "(deleted)" or naming another build, but this link opens the
    // binary that is running.
    std::env::current_exe().context("cannot find the fsbench executable")?;
    let exe = PathBuf::from(format!("/proc/{}/exe", std::process::id()));
    let mut c = Contents::default();
    // Debug builds carry ~60 MiB of debug info the guest never reads; without it the
    // initramfs is a third the size and boots about a second sooner under TCG.
    let stripped = dest.with_file_name("fsbench");
    let exe = match crate::signals::default_in_child(&mut std::process::Command::new("strip"))
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
    let mut tools: Vec<String> = s.matrix.fs.iter().map(|f| format!("mkfs.{}", s.fs_type(f))).collect();
    // Two variants of one type need its tool once.
    let mut seen = std::collections::HashSet::new();
    tools.retain(|t| seen.insert(t.clone()));
    let quota = s.matrix.quota.contains(&QuotaMode::On);
    if quota {
        tools.push("quotacheck".into());
    }
    // The workload's own programs (fio, an `exec` step's): the guest gets what it names.
    tools.extend(crate::workload::kind::of(&s.workload).guest_tools());
    for t in &tools {
        let host = if t.contains('/') { Some(PathBuf::from(t)) } else { crate::provision::mkfs::find_tool(t) };
        match host {
            // The guest finds tools on PATH=/sbin:...; absolute ones keep their path.
            Some(h) => c.programs.push((h.clone(), if t.contains('/') { t.clone() } else { format!("/sbin/{t}") })),
            // Missing here, missing there: the guest's runner skips those cells with the usual remedy.
            None => eprintln!("fsbench: warning: {t} is not installed on the host, so the guest has none either"),
        }
    }
    // A profiling scenario profiles in the guest, with the host's perf: the guest's own
    // /proc/kallsyms names the guest kernel's functions (the host could only name its own).
    if s.profile.is_some() && req.profile {
        match crate::provision::mkfs::find_tool("perf") {
            Some(perf) => c.programs.push((perf, GUEST_PERF.into())),
            None => eprintln!("fsbench: warning: perf is not installed on the host, so the guest cannot profile"),
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
        unprofiled: !req.profile,
    };
    c.data.push((GUEST_CONFIG.into(), serde_json::to_vec_pretty(&cfg)?));
    Ok(initramfs::write(&c, dest)?)
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
    fn a_relative_archive_path_goes_under_the_guests_fixtures_not_its_host_path() {
        let host = Path::new("/home/u/bundle/linux.tar.gz");
        let rel = "schema = 1\n[archive]\npath = \"fixtures/linux.tar.gz\"\n";
        assert_eq!(guest_archive_path(rel, host), "/fsbench.d/fixtures/linux.tar.gz");
        let abs = "[archive]\npath = \"/home/u/bundle/linux.tar.gz\"\n";
        assert_eq!(guest_archive_path(abs, host), "/home/u/bundle/linux.tar.gz");
    }
}
