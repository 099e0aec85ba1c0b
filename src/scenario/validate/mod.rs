//! Validation: the file structs become domain types, errors point at file:line:column.
//!
//! Two passes, as cargo-nextest does it: serde reads the text into the plain
//! structs of `file` (syntax, unknown keys, wrong types; driven by `load`), then
//! this module checks every value and builds the domain types of `super`. Both
//! passes report the same way, through `diagnose`: origin, line, column, the
//! dotted key, what is wrong and, where we can guess it, what was meant.
//!
//! This file checks the scenario as a whole (schema, name, workload kind, how the
//! sections fit together, `[[kernels]]`, `[gate]`); one file per section does the rest:
//! [`matrix`], [`filesystems`] (with `[sysctl]`), [`backing`], [`latfs`], [`steps`]
//! (with `[archive]`) and [`compare`].

mod backing;
mod by_kind;
mod cgroup;
mod compare;
mod filesystems;
mod fio;
mod latfs;
pub(crate) mod loadfile;
mod matrix;
mod ops;
mod ops_inodes;
#[cfg(test)]
mod ops_tests;
mod steps;

use std::path::{Path, PathBuf};

use super::diagnose::{Ctx, Seg, p, with};
use super::error::did_you_mean;
use super::file::{GateFile, KernelFile, ScenarioFile, WorkloadFile};
use super::units::{parse_percent, parse_size};
use super::*;
use backing::validate_backing;
use compare::validate_compare;
use filesystems::{validate_filesystems, validate_sysctl};
use fio::validate_fio;
use latfs::validate_latfs;
use matrix::validate_matrix;
use steps::{validate_archive, validate_steps};

pub use fio::SET_BY_FSBENCH as FIO_SET_BY_FSBENCH;
pub use matrix::MAX_CELLS;

/// Check every value of the file structs and build the domain types; `source` is left for the caller.
pub(super) fn validate(ctx: &Ctx, f: ScenarioFile, base_dir: &Path) -> Result<Scenario, ScenarioError> {
    if f.schema != SCENARIO_SCHEMA_VERSION {
        let msg = if f.schema > SCENARIO_SCHEMA_VERSION {
            format!(
                "scenario format version {} is newer than this fsbench understands ({SCENARIO_SCHEMA_VERSION})",
                f.schema
            )
        } else {
            format!(
                "unknown scenario format version {} (this fsbench reads version {SCENARIO_SCHEMA_VERSION})",
                f.schema
            )
        };
        return Err(ctx.value_help(&p("schema"), msg, format!("write `schema = {SCENARIO_SCHEMA_VERSION}`")));
    }
    let name = f.name.trim().to_string();
    if name.is_empty()
        || name.len() > 64
        || !name.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        || name.starts_with('.')
    {
        return Err(ctx.value_help(
            &p("name"),
            format!("invalid scenario name `{}`", f.name),
            "use 1 to 64 characters from A-Z a-z 0-9 . _ - (it becomes a directory name)",
        ));
    }
    let workload_kind = match f.workload.kind.as_str() {
        "lat_fs" => "lat_fs",
        "steps" => "steps",
        "fio" => "fio",
        "ops" => "ops",
        other => {
            return Err(ctx.at(
                &p("workload.kind"),
                false,
                format!("unknown workload kind `{other}`"),
                did_you_mean(other, &["lat_fs", "steps", "fio", "ops"])
                    .or(Some("use `lat_fs`, `steps`, `fio` or `ops`".into())),
            ));
        }
    };
    let matrix = validate_matrix(ctx, &f.matrix, workload_kind)?;
    let mut filesystems = validate_filesystems(ctx, &f.filesystems, &matrix)?;
    let backing = validate_backing(ctx, &f.backing, base_dir)?;
    let sysctl = validate_sysctl(ctx, &f.sysctl)?;
    for (name, spec) in filesystems.iter_mut() {
        // Queue settings belong to a block device; a directory backing has none to set.
        if !spec.tunables.queue.is_empty() && matches!(backing, Backing::Dir { .. }) {
            return Err(ctx.at(
                &p(&format!("filesystems.{name}.queue")),
                true,
                "queue settings need a block device under test",
                Some("use backing kind \"tmpfs-loop\" or \"device\", or remove `queue`".into()),
            ));
        }
        // `io.max = "cell …"` throttles the cell's block devices; a directory has none.
        let io_on_cell = spec.tunables.cgroup.iter().any(
            |l| matches!(&l.value, cgroup_limits::CgroupValue::Io(io) if io.device == cgroup_limits::IoDevice::Cell),
        );
        if io_on_cell && matches!(backing, Backing::Dir { .. }) {
            return Err(ctx.value_help(
                &p(&format!("filesystems.{name}.cgroup"))
                    .into_iter()
                    .chain([Seg::Key("io.max".into())])
                    .collect::<Vec<_>>(),
                "`io.max` on `cell` needs a block device under test",
                "use backing kind \"tmpfs-loop\" or \"device\", or name a device as `MAJ:MIN`",
            ));
        }
        spec.tunables.sysctl = sysctl.clone();
    }
    let archive = f.archive.as_ref().map(|a| validate_archive(ctx, a, base_dir)).transpose()?;
    let workload = by_kind::workload(ctx, workload_kind, &f, &backing, base_dir, archive.as_ref())?;
    let gate = match &f.gate {
        Some(g) => validate_gate(ctx, g, &matrix, &workload)?,
        None => GateSpec::default(),
    };
    if archive.is_some() && !by_kind::reads_archive(&workload) {
        return Err(ctx.at(
            &p("archive"),
            true,
            "`[archive]` is only used by steps workloads",
            Some("remove it, or use `kind = \"steps\"` with an untar step".into()),
        ));
    }
    let kernels = validate_kernels(ctx, &f.kernels, base_dir)?;
    let compare = f.compare.as_ref().map(|c| validate_compare(ctx, c, &matrix)).transpose()?;
    if let Some(c) = &compare {
        compare::refuse_rounds_with_pairs(ctx, &workload)?;
        compare::refuse_oversized_steps_cells(ctx, &workload, c)?;
    }
    Ok(Scenario {
        name,
        description: f.description.unwrap_or_default(),
        source: ScenarioSource { origin: String::new(), base_dir: PathBuf::new(), text: String::new() },
        matrix,
        filesystems,
        backing,
        archive,
        workload,
        gate,
        kernels,
        monitors: f.workload.monitors.unwrap_or(true),
        profile: validate_profile(ctx, f.workload.profile.as_deref())?,
        compare,
    })
}

/// `workload.profile`: a [`crate::model::ProfileMode`] (`cpu`, `cpu+offcpu`,
/// `cpu+kthreads`, `cpu+offcpu+kthreads`), or `off` (the default).
fn validate_profile(ctx: &Ctx, v: Option<&str>) -> Result<Option<crate::model::ProfileMode>, ScenarioError> {
    use crate::model::ProfileMode;
    match v {
        None | Some("off") => Ok(None),
        Some(text) => ProfileMode::parse(text).map(Some).ok_or_else(|| {
            let mut known: Vec<&str> = ProfileMode::ALL.iter().map(|m| m.as_str()).collect();
            known.push("off");
            let all = known.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ");
            ctx.value_help(
                &p("workload.profile"),
                format!("unknown profile mode `{text}`"),
                did_you_mean(text, &known).unwrap_or_else(|| format!("use one of {all}")),
            )
        }),
    }
}

fn validate_kernels(ctx: &Ctx, ks: &[KernelFile], base_dir: &Path) -> Result<Vec<KernelSpec>, ScenarioError> {
    let mut out: Vec<KernelSpec> = Vec::new();
    for (i, k) in ks.iter().enumerate() {
        let at = |key: &str| with(with(p("kernels"), Seg::Index(i)), Seg::Key(key.to_string()));
        let label = k.label.trim().to_string();
        if !crate::model::is_valid_label(&label) {
            return Err(ctx.value_help(
                &at("label"),
                format!("invalid kernel label `{}`", k.label),
                format!("use {}", crate::model::LABEL_RULE),
            ));
        }
        if out.iter().any(|o| o.label == label) {
            return Err(ctx.value(&at("label"), format!("kernel label `{label}` is used twice")));
        }
        if k.image.trim().is_empty() {
            return Err(ctx.value(&at("image"), "`image` names no file"));
        }
        let memory = match &k.memory {
            None => DEFAULT_GUEST_MEMORY,
            Some(m) => {
                let bytes = parse_size(m).map_err(|e| ctx.value(&at("memory"), e))?;
                if bytes < (128 << 20) {
                    return Err(ctx.value(&at("memory"), format!("guest memory {m} is below 128 MiB")));
                }
                bytes
            }
        };
        let cpus = match k.cpus {
            None => DEFAULT_GUEST_CPUS,
            Some(c) if (1..=256).contains(&c) => c as u32,
            Some(c) => return Err(ctx.value(&at("cpus"), format!("cpus {c} is outside 1..=256"))),
        };
        out.push(KernelSpec {
            label,
            image: base_dir.join(&k.image),
            modules: k.modules.as_deref().filter(|m| !m.is_empty()).map(|m| base_dir.join(m)),
            cmdline: k.cmdline.clone().unwrap_or_default(),
            memory,
            cpus,
        });
    }
    Ok(out)
}

fn validate_gate(ctx: &Ctx, g: &GateFile, matrix: &Matrix, workload: &Workload) -> Result<GateSpec, ScenarioError> {
    let mut spec = GateSpec::default();
    if let Some(t) = &g.threshold {
        spec.threshold = parse_percent(t).map_err(|e| ctx.value(&p("gate.threshold"), e))?;
    }
    let (keys, what) = by_kind::gate_keys(workload, matrix);
    for (k, v) in &g.thresholds {
        let path = with(p("gate.thresholds"), Seg::Key(k.clone()));
        if !keys.contains(&k.as_str()) {
            return Err(ctx.at(
                &path,
                true,
                format!("`{k}` is not a {what} of this scenario"),
                did_you_mean(k, &keys).or(Some(format!("keys here: {}", keys.join(", ")))),
            ));
        }
        spec.per_key.insert(k.clone(), parse_percent(v).map_err(|e| ctx.value(&path, e))?);
    }
    Ok(spec)
}

// Checks of `[workload]` values that both workload kinds share.

/// `key`'s value, `default` when unset, checked to lie in `lo..=hi`.
fn int_in(ctx: &Ctx, key: &str, v: Option<i64>, default: i64, lo: i64, hi: i64) -> Result<u32, ScenarioError> {
    let n = v.unwrap_or(default);
    if n < lo || n > hi {
        return Err(ctx.value(&p(key), format!("`{key}` is {n}, but must be between {lo} and {hi}")));
    }
    Ok(n as u32)
}

/// Reject options of the other workload kind, naming them.
fn reject_foreign(ctx: &Ctx, kind: &str, present: &[(&str, bool)]) -> Result<(), ScenarioError> {
    if let Some((key, _)) = present.iter().find(|(_, set)| *set) {
        return Err(ctx.at(
            &p(&format!("workload.{key}")),
            true,
            format!("`{key}` is not an option of {kind} workloads"),
            None,
        ));
    }
    Ok(())
}

/// `workload.disturbance`: a percentage of one CPU, or `off`; default [`crate::host::cpu::DEFAULT_THRESHOLD`].
fn disturbance_of(ctx: &Ctx, w: &WorkloadFile) -> Result<Option<f64>, ScenarioError> {
    match w.disturbance.as_deref() {
        None => Ok(Some(crate::host::cpu::DEFAULT_THRESHOLD)),
        Some("off") => Ok(None),
        Some(t) => parse_percent(t).map(Some).map_err(|e| {
            ctx.value_help(&p("workload.disturbance"), e, "a share of one CPU such as \"25%\", or \"off\"")
        }),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::model::Layout;

    const MINIMAL: &str = "schema = 1\nname = \"t\"\n[matrix]\nfs = [\"ext4\"]\n[backing]\nkind = \"dir\"\npath = \"/tmp\"\n[workload]\nkind = \"lat_fs\"\n";

    #[test]
    fn minimal_lat_fs_gets_defaults() {
        let s = parse_str(MINIMAL, "t.toml").unwrap();
        assert_eq!(s.matrix.layout, vec![Layout::S]);
        assert_eq!(s.matrix.test.len(), 4);
        let Workload::Latfs(l) = &s.workload else { panic!() };
        assert_eq!((l.repetitions, l.quota_refs, l.duration), (5, 2, Duration::from_secs(1)));
        assert_eq!(l.noise.disturbance, Some(crate::host::cpu::DEFAULT_THRESHOLD));
        assert_eq!((l.noise.max_reruns, l.noise.ci_target, l.noise.pin), (3, None, Pin::None));
    }

    #[test]
    fn kernels_are_validated_with_positions() {
        let ok = format!(
            "{MINIMAL}[[kernels]]\nlabel = \"V3\"\nimage = \"boot/vmlinuz-6.1\"\nmemory = \"2GiB\"\n[[kernels]]\nlabel = \"BASE\"\nimage = \"/k/bzImage\"\nmodules = \"/k/mods\"\ncpus = 4\ncmdline = \"mitigations=off\"\n"
        );
        let sc = parse_overridden(&ok, "/s/t.toml", Path::new("/s"), &[]).unwrap();
        assert_eq!(sc.kernels.len(), 2);
        assert_eq!(sc.kernels[0].image, PathBuf::from("/s/boot/vmlinuz-6.1"));
        assert_eq!(
            (sc.kernels[0].memory, sc.kernels[0].cpus, sc.kernels[0].modules.clone()),
            (2 << 30, DEFAULT_GUEST_CPUS, None)
        );
        assert_eq!((sc.kernels[1].cpus, sc.kernels[1].cmdline.as_str()), (4, "mitigations=off"));
        assert_eq!(sc.kernels[1].modules, Some(PathBuf::from("/k/mods")));

        let e = parse_str(&ok.replace("cpus = 4", "cpus = 0"), "t.toml").unwrap_err();
        assert_eq!(e.line, Some(18), "{e}");
        assert!(e.message.contains("cpus 0"), "{e}");
        let e = parse_str(&ok.replace("\"BASE\"", "\"V3\""), "t.toml").unwrap_err();
        assert_eq!(e.line, Some(15), "{e}");
        assert!(e.message.contains("used twice"), "{e}");
        let e = parse_str(&ok.replace("memory = ", "memroy = "), "t.toml").unwrap_err();
        assert!(e.message.contains("unknown key `memroy`"), "{e}");
        let e = parse_str(&ok.replace("\"2GiB\"", "\"2 parsecs\""), "t.toml").unwrap_err();
        assert_eq!(e.line, Some(13), "{e}");
    }

    #[test]
    fn unknown_key_points_at_it_and_suggests() {
        let text = MINIMAL.replace("fs = [\"ext4\"]", "fs = [\"ext4\"]\ntaks = [1]");
        let e = parse_str(&text, "t.toml").unwrap_err();
        assert_eq!((e.line, e.column), (Some(5), Some(1)), "{e}");
        assert!(e.message.contains("unknown key `taks` in [matrix]"), "{e}");
        assert_eq!(e.help.as_deref(), Some("did you mean `tasks`?"));
    }

    #[test]
    fn profile_is_cpu_or_off_and_a_typo_is_pointed_at() {
        assert_eq!(parse_str(MINIMAL, "t.toml").unwrap().profile, None);
        let cpu = parse_str(&format!("{MINIMAL}profile = \"cpu\"\n"), "t.toml").unwrap();
        assert_eq!(cpu.profile, Some(crate::model::ProfileMode::Cpu));
        assert_eq!(parse_str(&format!("{MINIMAL}profile = \"off\"\n"), "t.toml").unwrap().profile, None);
        let e = parse_str(&format!("{MINIMAL}profile = \"cpuu\"\n"), "t.toml").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("workload.profile"), "{e}");
        assert!(e.message.contains("unknown profile mode `cpuu`"), "{e}");
        assert_eq!(e.help.as_deref(), Some("did you mean `cpu`?"));
    }

    #[test]
    fn bad_value_in_array_points_at_the_element() {
        let text = MINIMAL.replace("fs = [\"ext4\"]", "fs = [\"ext4\"]\ntasks = [1, 0]");
        let e = parse_str(&text, "t.toml").unwrap_err();
        assert_eq!((e.line, e.column), (Some(5), Some(13)), "{e}");
        assert_eq!(e.key.as_deref(), Some("matrix.tasks[1]"));
    }
}
