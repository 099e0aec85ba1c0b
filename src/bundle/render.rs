//! The text of `bundle verify`: what running a bundle would do, line by line. A renderer:
//! the opened bundle, its scenario and the preflight in, text out; nothing here reads the
//! bundle or the host (the preflight already did).

use std::fmt::Write as _;
use std::path::Path;

use super::manifest::MANIFEST_FILE;
use super::{OpenBundle, Preflight, asks, budget, fio_job};
use crate::model::{TextFormat, UntrustedText};
use crate::plan;
use crate::scenario::{ArchiveSource, Backing, Scenario};

/// What running the bundle would do, for `bundle verify`.
pub fn verify_text(bundle: &Path, ob: &OpenBundle, s: &Scenario, pf: &Preflight) -> String {
    let m = &ob.manifest;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{}: bundle format {}, packed by fsbench {}{}",
        bundle.display(),
        m.format,
        m.tool_version.escaped(TextFormat::Terminal),
        m.created.as_ref().map(|c| format!(", created {}", c.escaped(TextFormat::Terminal))).unwrap_or_default()
    );
    let _ = writeln!(
        o,
        "  files:       {} + {MANIFEST_FILE}, {} bytes, every sha256 matches",
        m.files.len(),
        m.total_bytes()
    );
    let p = plan::expand(s);
    let _ =
        writeln!(o, "  scenario:    {} ({}), {}", s.name, s.workload.kind(), crate::text::cell_count(p.cells.len()));
    let _ = writeln!(o, "  filesystems: {}", s.matrix.fs.join(", "));
    for (fs, spec) in &s.filesystems {
        if !spec.mkfs.is_empty() || !spec.mount.is_empty() {
            let _ = writeln!(o, "    {fs}: mkfs {:?}, mount {:?}", spec.mkfs, spec.mount);
        }
    }
    let backing = match &s.backing {
        Backing::TmpfsLoop { .. } => "tmpfs-loop (loop devices on a private tmpfs)".to_string(),
        Backing::Dir { path } if path.as_os_str().is_empty() => "dir (a private directory)".into(),
        Backing::Dir { path } => format!("dir {} (refused unless you --set backing.path)", path.display()),
        Backing::Device { path } => format!("device {}", path.display()),
    };
    let _ = writeln!(o, "  backing:     {backing}");
    let _ = writeln!(o, "  needs root:  {}", if super::needs_root(s, &p) { "yes" } else { "no" });
    if let Some(file) = fio_job::job_file(s) {
        let shown = file.strip_prefix(ob.dir.path()).unwrap_or(file).display().to_string();
        let _ = writeln!(o, "  fio job file: {}", crate::text::escape_control(&shown));
    }
    let fio = fio_job::job_options(s);
    if !fio.is_empty() {
        let shown: Vec<String> = fio.iter().map(|e| format!("`{}`", crate::text::escape_control(e))).collect();
        let _ = writeln!(o, "  fio job:     {}", shown.join(", "));
        let refused = fio_job::refused_options(s);
        if !refused.is_empty() {
            let shown: Vec<String> = refused.iter().map(|e| crate::text::escape_control(e)).collect();
            let _ = writeln!(o, "  fio refused: {} (refused unless --allow-exec)", shown.join(", "));
        }
    }
    for line in fio_job::verify_lines(s, &pf.memory) {
        let _ = writeln!(o, "{line}");
    }
    let exec = super::exec_steps(s);
    if exec.is_empty() {
        let _ = writeln!(o, "  exec steps:  none");
    } else {
        let _ = writeln!(
            o,
            "  exec steps:  {} (refused unless --allow-exec): {}",
            exec.len(),
            exec.iter()
                .map(|e| format!("`{}`", UntrustedText::escape(e, TextFormat::Terminal)))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    match &s.backing {
        Backing::Device { path } => {
            let _ = writeln!(
                o,
                "  devices:     {} (FORMATTED; refused unless --allow-device {})",
                path.display(),
                path.display()
            );
        }
        _ => {
            let _ = writeln!(o, "  devices:     none");
        }
    }
    match s.archive.as_ref().map(|a| &a.source) {
        Some(ArchiveSource::Generate { profile, scale, seed }) => {
            let _ = writeln!(
                o,
                "  fixture:     generated {profile}, scale {scale}, seed {seed} (expands to {} of file contents)",
                budget::short(pf.memory.fixture)
            );
        }
        Some(ArchiveSource::Path(p)) => {
            let _ = write!(o, "  fixture:     {}", p.strip_prefix(ob.dir.path()).unwrap_or(p).display());
            match &pf.archive {
                Some((_, r)) => {
                    let st = &r.stats;
                    let _ = writeln!(
                        o,
                        " ({} files, {} directories, {} symlinks, {} hard links, {} bytes; {})",
                        st.files,
                        st.dirs,
                        st.symlinks,
                        st.hardlinks,
                        st.bytes,
                        if r.refused.is_empty() {
                            "nothing refused".to_string()
                        } else {
                            format!("{} refused", crate::text::plural(r.refused.len(), "entry", "entries"))
                        }
                    );
                }
                None => {
                    let _ = writeln!(o, " (unreadable)");
                }
            }
        }
        None => {}
    }
    if s.kernels.is_empty() {
        let _ = writeln!(o, "  kernels:     none (this machine's kernel)");
    } else {
        let _ = writeln!(o, "  kernels:     {} in qemu (refused unless --allow-kernels)", super::kernels_shown(s));
    }
    let sysctls = asks::requested_sysctls(s);
    if sysctls.is_empty() {
        let _ = writeln!(o, "  sysctl:      none");
    } else {
        let _ = writeln!(
            o,
            "  sysctl:      {} (refused unless --allow-sysctl): {}",
            sysctls.len(),
            sysctls.iter().map(|(k, v)| format!("{k} = {v}")).collect::<Vec<_>>().join(", ")
        );
    }
    for (name, spec) in &s.filesystems {
        if !spec.tunables.queue.is_empty() {
            let q: Vec<String> = spec.tunables.queue.iter().map(|(k, v)| format!("{k} = {v}")).collect();
            let _ = writeln!(o, "  queue:       {} on the devices of {name}", q.join(", "));
        }
    }
    let parts = pf.memory.parts();
    let cap = match pf.mem_available {
        Some(a) => {
            format!("the cap here is {}% of MemAvailable = {}", budget::SHARE_PERCENT, budget::approx(budget::cap(a)))
        }
        None => "MemAvailable unreadable here".to_string(),
    };
    if parts.is_empty() {
        let _ = writeln!(o, "  memory:      nothing RAM-backed");
    } else {
        let _ = writeln!(
            o,
            "  memory:      one cell up to {}: {}; {cap}{}",
            budget::approx(pf.memory.total()),
            parts.join(" + "),
            if pf.over_budget() { " (refused unless --allow-size)" } else { "" }
        );
    }
    let flags = pf.flags_needed(s);
    let _ =
        writeln!(o, "  flags:       {}", if flags.is_empty() { "none needed".to_string() } else { flags.join(" ") });
    if let Some(r) = &pf.results {
        let subset = if r.planned < r.matrix {
            format!(", a subset: {} of the matrix's {} cells planned (--only or a shard)", r.planned, r.matrix)
        } else {
            String::new()
        };
        let _ = writeln!(
            o,
            "  results:     {} ({} of {} cells stored{subset})",
            r.path.escaped(TextFormat::Terminal),
            r.cells,
            r.planned
        );
        let _ = writeln!(
            o,
            "    label {}, host {}, kernel {}, fsbench {}",
            r.label.as_ref().map_or("(none)".into(), |l| l.escaped(TextFormat::Terminal)),
            r.host.escaped(TextFormat::Terminal),
            r.kernel.escaped(TextFormat::Terminal),
            r.tool_version.escaped(TextFormat::Terminal)
        );
    }
    if pf.refused.is_empty() {
        let _ = writeln!(o, "  refused:     nothing");
    } else {
        let _ = writeln!(o, "  refused:     {} (the bundle cannot run here):", pf.refused.len());
        for r in &pf.refused {
            let _ = writeln!(o, "    {r}");
        }
    }
    // Paths, argv and versions come from the bundle: each line printed with its controls escaped.
    o.lines().map(|l| UntrustedText::escape(l, TextFormat::Terminal) + "\n").collect()
}
