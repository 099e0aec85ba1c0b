//! Validation: the file structs become domain types, errors point at file:line:column.
//!
//! Two passes, as cargo-nextest does it: serde reads the text into the plain
//! structs of `file` (syntax, unknown keys, wrong types; driven by `load`), then
//! this module checks every value and builds the domain types of `super`. Both
//! passes report the same way, through `diagnose`: origin, line, column, the
//! dotted key, what is wrong and, where we can guess it, what was meant.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::diagnose::{Ctx, Seg, p, with};
use super::error::did_you_mean;
use super::file::{
    ArchiveFile, BackingFile, FilesystemFile, GateFile, KernelFile, MatrixFile, ScenarioFile, StepFile, WorkloadFile,
};
use super::units::{parse_duration, parse_percent, parse_size};
use super::*;
use crate::model::{LatfsTest, Layout, QuotaImpl, QuotaMode};

/// Smallest image fsbench will create: below this mkfs of most filesystems fails.
const MIN_IMAGE_SIZE: u64 = 16 << 20;
/// Largest (sparse) image: beyond this the number is a typo, not a plan.
const MAX_IMAGE_SIZE: u64 = 16 << 40;
/// Most tasks a cell may have (each is a process, and in layout M a loop device).
const MAX_TASKS: i64 = 1024;
/// Filesystem types people benchmark, for telling a typo from a name (`etx4` is not one).
const KNOWN_FS_TYPES: &[&str] = &[
    "ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "nilfs2", "jfs", "reiserfs", "vfat", "exfat", "ntfs3", "bcachefs",
    "tmpfs",
];
/// Most cells a matrix may expand to, checked on the axis lengths before any cell is
/// allocated: a scenario from elsewhere (a bundle) cannot make `plan` exhaust memory.
/// Ten times the largest matrix benchmarked (10,000 cells plan in 0.2 ms).
pub const MAX_CELLS: usize = 100_000;

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
        other => {
            return Err(ctx.at(
                &p("workload.kind"),
                false,
                format!("unknown workload kind `{other}`"),
                did_you_mean(other, &["lat_fs", "steps"]).or(Some("use `lat_fs` or `steps`".into())),
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
        spec.tunables.sysctl = sysctl.clone();
    }
    let archive = f.archive.as_ref().map(|a| validate_archive(ctx, a, base_dir)).transpose()?;
    let workload = match workload_kind {
        "lat_fs" => Workload::Latfs(validate_latfs(ctx, &f.workload)?),
        _ => Workload::Steps(validate_steps(ctx, &f.workload, archive.as_ref())?),
    };
    let gate = match &f.gate {
        Some(g) => validate_gate(ctx, g, &matrix, &workload)?,
        None => GateSpec::default(),
    };
    if archive.is_some() && !matches!(workload, Workload::Steps(_)) {
        return Err(ctx.at(
            &p("archive"),
            true,
            "`[archive]` is only used by steps workloads",
            Some("remove it, or use `kind = \"steps\"` with an untar step".into()),
        ));
    }
    let kernels = validate_kernels(ctx, &f.kernels, base_dir)?;
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
    })
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
    let keys: Vec<&str> = match workload {
        Workload::Latfs(_) => matrix.test.iter().map(|t| t.name()).collect(),
        Workload::Steps(st) => st.steps.iter().map(|s| s.op()).collect(),
    };
    for (k, v) in &g.thresholds {
        let path = with(p("gate.thresholds"), Seg::Key(k.clone()));
        if !keys.contains(&k.as_str()) {
            let what = if matches!(workload, Workload::Latfs(_)) { "lat_fs test" } else { "step op" };
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

/// Check an axis: non-empty, no duplicates, every value parsed by `parse`.
fn axis<T: PartialEq + Clone>(
    ctx: &Ctx,
    key: &str,
    values: &[String],
    parse: impl Fn(&str) -> Result<T, (String, Option<String>)>,
) -> Result<Vec<T>, ScenarioError> {
    let path = p(&format!("matrix.{key}"));
    if values.is_empty() {
        return Err(ctx.value_help(
            &path,
            format!("axis `matrix.{key}` is empty"),
            "an axis needs at least one value; remove the key to use the default",
        ));
    }
    let mut out: Vec<T> = Vec::new();
    for (i, v) in values.iter().enumerate() {
        let item = with(path.clone(), Seg::Index(i));
        let parsed = parse(v).map_err(|(msg, help)| ctx.at(&item, false, msg, help))?;
        if out.contains(&parsed) {
            return Err(ctx.value(&item, format!("duplicate value `{v}` in axis `matrix.{key}`")));
        }
        out.push(parsed);
    }
    Ok(out)
}

fn validate_matrix(ctx: &Ctx, m: &MatrixFile, workload_kind: &str) -> Result<Matrix, ScenarioError> {
    let fs = axis(ctx, "fs", &m.fs, |v| {
        // `-` only names variants (`ext4-nodelalloc`); validate_filesystems checks they are declared.
        let ok = !v.is_empty() && v.len() <= 32 && v.chars().all(|c| is_fs_type_char(c) || c == '-');
        if ok {
            Ok(v.to_string())
        } else {
            Err((
                format!("invalid filesystem type `{v}`"),
                Some(
                    "filesystem types are lowercase names as in /proc/filesystems (ext4, xfs, btrfs, f2fs, ...), variants are declared as [filesystems.<name>] type = \"<type>\"".into(),
                ),
            ))
        }
    })?;
    let layout = match &m.layout {
        None => vec![Layout::S],
        Some(v) => axis(ctx, "layout", v, |s| match s {
            "M" => Ok(Layout::M),
            "S" => Ok(Layout::S),
            "m" => Err((format!("unknown layout `{s}`"), Some("did you mean `M`?".into()))),
            "s" => Err((format!("unknown layout `{s}`"), Some("did you mean `S`?".into()))),
            _ => Err((
                format!("unknown layout `{s}`"),
                Some("use `M` (a filesystem per task) or `S` (one shared filesystem, a directory per task)".into()),
            )),
        })?,
    };
    let quota = match &m.quota {
        None => vec![QuotaMode::Off],
        Some(v) => axis(ctx, "quota", v, |s| match s {
            "off" => Ok(QuotaMode::Off),
            "on" => Ok(QuotaMode::On),
            "qoff" => Err((format!("unknown quota mode `{s}`"), Some("did you mean `off`?".into()))),
            "qon" => Err((format!("unknown quota mode `{s}`"), Some("did you mean `on`?".into()))),
            _ => Err((
                format!("unknown quota mode `{s}`"),
                did_you_mean(s, &["off", "on"]).or(Some("use `off` or `on`".into())),
            )),
        })?,
    };
    let tasks = match &m.tasks {
        None => vec![1],
        Some(v) => {
            let as_strings: Vec<String> = v.iter().map(|n| n.to_string()).collect();
            axis(ctx, "tasks", &as_strings, |s| {
                let n: i64 = s.parse().unwrap_or(0);
                if n < 1 {
                    Err((format!("task count {s} must be at least 1"), None))
                } else if n > MAX_TASKS {
                    Err((format!("task count {s} is more than {MAX_TASKS}"), None))
                } else {
                    Ok(n as u32)
                }
            })?
        }
    };
    let test = match (&m.test, workload_kind) {
        (None, "lat_fs") => LatfsTest::ALL.to_vec(),
        (None, _) => Vec::new(),
        (Some(_), "steps") => {
            return Err(ctx.at(
                &p("matrix.test"),
                true,
                "axis `matrix.test` is only for lat_fs workloads",
                Some("remove it; a steps workload runs its `steps` list".into()),
            ));
        }
        (Some(v), _) => {
            let names: Vec<&str> = LatfsTest::ALL.iter().map(|t| t.name()).collect();
            axis(ctx, "test", v, |s| {
                s.parse::<LatfsTest>()
                    .map_err(|e| {
                        (
                            e,
                            did_you_mean(s.strip_prefix("lat_fs_").unwrap_or(s), &names)
                                .or(Some(format!("tests are {}", names.join(", ")))),
                        )
                    })
                    .or_else(|e| s.strip_prefix("lat_fs_").and_then(|t| t.parse().ok()).ok_or(e))
            })?
        }
    };
    let lens = [fs.len(), layout.len(), quota.len(), tasks.len(), test.len().max(1)];
    let cells = lens.iter().try_fold(1usize, |a, &b| a.checked_mul(b));
    if cells.is_none_or(|n| n > MAX_CELLS) {
        let shown = lens.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(" × ");
        return Err(ctx.at(
            &p("matrix"),
            true,
            format!("the matrix expands to {shown} cells, more than the {MAX_CELLS} fsbench plans"),
            Some("split the scenario, or narrow an axis".into()),
        ));
    }
    Ok(Matrix { fs, layout, quota, tasks, test })
}

/// `[sysctl]`: dotted keys of /proc/sys (`vm.dirty_ratio`), values without line breaks.
fn validate_sysctl(
    ctx: &Ctx,
    t: &BTreeMap<String, crate::scenario::file::SysctlValue>,
) -> Result<Vec<(String, String)>, ScenarioError> {
    use crate::scenario::file::SysctlValue;
    let mut out = Vec::new();
    for (k, v) in t {
        let item = vec![Seg::Key("sysctl".into()), Seg::Key(k.clone())];
        let parts: Vec<&str> = k.split('.').collect();
        let ok = parts.len() >= 2
            && parts.iter().all(|p| {
                !p.is_empty() && p.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
            });
        if !ok {
            return Err(ctx.at(
                &item,
                true,
                format!("`{k}` is not a sysctl key"),
                Some("keys are dotted paths under /proc/sys, e.g. \"vm.dirty_ratio\"".into()),
            ));
        }
        let value = match v {
            SysctlValue::Int(i) => i.to_string(),
            SysctlValue::Text(s) => s.clone(),
        };
        if value.trim().is_empty() || value.contains(['\n', '\t', '\0']) {
            return Err(ctx.value(&item, format!("invalid value for sysctl `{k}`")));
        }
        out.push((k.clone(), value));
    }
    Ok(out)
}

/// A character of a kernel filesystem type name (`ext4`, `fuse.sshfs`, `nfs_v4`).
fn is_fs_type_char(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '.'
}

fn validate_filesystems(
    ctx: &Ctx,
    fss: &BTreeMap<String, FilesystemFile>,
    matrix: &Matrix,
) -> Result<BTreeMap<String, FsSpec>, ScenarioError> {
    let mut out = BTreeMap::new();
    for (i, name) in matrix.fs.iter().enumerate() {
        if name.contains('-') && fss.get(name).and_then(|f| f.fs_type.as_ref()).is_none() {
            let types: Vec<&str> = name.split('-').take(1).collect();
            return Err(ctx.at(
                &with(p("matrix.fs"), Seg::Index(i)),
                false,
                format!("`{name}` is not a filesystem type (they have no `-`) and no variant of that name is declared"),
                Some(format!(
                    "declare the variant: [filesystems.{name}] type = \"{}\" with its own mkfs/mount",
                    types[0]
                )),
            ));
        }
    }
    for (name, f) in fss {
        let base = vec![Seg::Key("filesystems".into()), Seg::Key(name.clone())];
        if let Some(t) = &f.fs_type {
            let item = with(base.clone(), Seg::Key("type".into()));
            if t.is_empty() || t.len() > 32 || !t.chars().all(is_fs_type_char) {
                return Err(ctx.value_help(
                    &item,
                    format!("invalid filesystem type `{t}`"),
                    "a variant's type is a name as in /proc/filesystems (ext4, xfs, btrfs, ...)",
                ));
            }
            if fss.get(t).is_some_and(|o| o.fs_type.is_some()) {
                return Err(ctx.value_help(
                    &item,
                    format!("`{t}` is itself a variant"),
                    "a variant's type is a filesystem type; copy the other variant's options instead",
                ));
            }
        }
        if !matrix.fs.contains(name) {
            let fs_names: Vec<&str> = matrix.fs.iter().map(String::as_str).filter(|n| !fss.contains_key(*n)).collect();
            // `fs = ["etx4"]` with `[filesystems.ext4]`: the typo is in the matrix, and the fix is
            // the table's name, never the misspelt one.
            let known = |n: &str| KNOWN_FS_TYPES.contains(&n);
            if let Some(typo) = crate::scenario::suggest(name, fs_names.iter().copied())
                && known(name)
                && !known(typo)
                && let Some(i) = matrix.fs.iter().position(|f| f == typo)
            {
                let at = vec![Seg::Key("matrix".into()), Seg::Key("fs".into()), Seg::Index(i)];
                return Err(ctx.at(
                    &at,
                    false,
                    format!("`{typo}` in `matrix.fs` is not a filesystem type; `[filesystems.{name}]` is configured but not in the matrix"),
                    Some(format!("did you mean `{name}`?")),
                ));
            }
            if let Some(help) = did_you_mean(name, &fs_names) {
                return Err(ctx.at(
                    &base,
                    true,
                    format!("`[filesystems.{name}]` does not match any filesystem in `matrix.fs`"),
                    Some(help),
                ));
            }
        }
        let mut mount = Vec::new();
        for (i, opt) in f.mount.iter().enumerate() {
            let item = with(with(base.clone(), Seg::Key("mount".into())), Seg::Index(i));
            for part in opt.split(',') {
                let part = part.trim();
                if part.is_empty() || part.chars().any(char::is_whitespace) {
                    return Err(ctx.value_help(
                        &item,
                        format!("invalid mount option `{opt}`"),
                        "write one option per element: [\"usrquota\", \"barrier=0\"]",
                    ));
                }
                mount.push(part.to_string());
            }
        }
        for (i, arg) in f.mkfs.iter().enumerate() {
            if arg.is_empty() || arg.contains('\0') {
                let item = with(with(base.clone(), Seg::Key("mkfs".into())), Seg::Index(i));
                return Err(ctx.value(&item, "empty mkfs argument"));
            }
        }
        let quota = match f.quota.as_deref() {
            None | Some("files") => QuotaImpl::Files,
            Some("feature") => QuotaImpl::Feature,
            Some(other) => {
                let item = with(base.clone(), Seg::Key("quota".into()));
                return Err(ctx.at(
                    &item,
                    false,
                    format!("unknown quota implementation `{other}`"),
                    did_you_mean(other, &["files", "feature"])
                        .or(Some("use `files` (quotacheck -cug, as the seed) or `feature` (ext4 -O quota)".into())),
                ));
            }
        };
        if matrix.quota.contains(&QuotaMode::On) && quota == QuotaImpl::Files && matrix.fs.contains(name) {
            let has = mount.iter().any(|o| {
                matches!(o.as_str(), "usrquota" | "grpquota" | "quota" | "usrjquota" | "grpjquota" | "prjquota")
                    || o.starts_with("usrjquota=")
                    || o.starts_with("grpjquota=")
            });
            if !has {
                let item = with(base.clone(), Seg::Key("mount".into()));
                return Err(ctx.value_help(
                    &item,
                    format!("`matrix.quota` has `on` but `filesystems.{name}.mount` has no quota option"),
                    "add \"usrquota\" and/or \"grpquota\" as the seed did, or set `quota = \"feature\"`",
                ));
            }
        }
        let mut queue = Vec::new();
        if let Some(q) = &f.queue {
            if let Some(sched) = &q.scheduler {
                if sched.is_empty() || !sched.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                {
                    return Err(ctx.value_help(
                        &with(with(base.clone(), Seg::Key("queue".into())), Seg::Key("scheduler".into())),
                        format!("invalid scheduler name `{sched}`"),
                        "a name as /sys/block/<dev>/queue/scheduler lists it: none, mq-deadline, bfq, kyber",
                    ));
                }
                queue.push(("scheduler".to_string(), sched.clone()));
            }
            if let Some(v) = q.read_ahead_kb {
                queue.push(("read_ahead_kb".to_string(), v.to_string()));
            }
            if let Some(v) = q.nr_requests {
                queue.push(("nr_requests".to_string(), v.to_string()));
            }
        }
        let tunables = crate::scenario::Tunables { queue, sysctl: Vec::new() };
        out.insert(name.clone(), FsSpec { mkfs: f.mkfs.clone(), mount, quota, fs_type: f.fs_type.clone(), tunables });
    }
    for fs in &matrix.fs {
        out.entry(fs.clone()).or_default();
        if matrix.quota.contains(&QuotaMode::On) && !fss.contains_key(fs) {
            return Err(ctx.value_help(
                &p("matrix.quota"),
                format!(
                    "`matrix.quota` has `on` but filesystem `{fs}` has no `[filesystems.{fs}]` with quota mount options"
                ),
                format!("add [filesystems.{fs}] with mount = [\"usrquota\", \"grpquota\"]"),
            ));
        }
    }
    Ok(out)
}

fn size_value(ctx: &Ctx, path: &[Seg], v: &toml::Value) -> Result<u64, ScenarioError> {
    let s = match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Integer(i) if *i > 0 => i.to_string(),
        other => {
            return Err(ctx.value_help(
                path,
                format!("expected a size, found {}", other.type_str()),
                "write a size with a unit, e.g. \"1GiB\"",
            ));
        }
    };
    let bytes = parse_size(&s).map_err(|e| ctx.value(path, e))?;
    if bytes < MIN_IMAGE_SIZE {
        return Err(ctx.value_help(
            path,
            format!("image size `{s}` is below the minimum of 16MiB"),
            "most mkfs tools refuse smaller images",
        ));
    }
    if bytes > MAX_IMAGE_SIZE {
        return Err(ctx.value_help(
            path,
            format!("image size `{s}` is larger than 16TiB"),
            "images are sparse, but a size this large is almost certainly a typo",
        ));
    }
    Ok(bytes)
}

fn validate_backing(ctx: &Ctx, b: &BackingFile, base_dir: &Path) -> Result<Backing, ScenarioError> {
    match b.kind.as_str() {
        "tmpfs-loop" => {
            if b.path.is_some() {
                return Err(ctx.at(
                    &p("backing.path"),
                    true,
                    "`backing.path` is not used with `kind = \"tmpfs-loop\"`",
                    Some("fsbench makes its own tmpfs; use `kind = \"dir\"` to run in an existing directory".into()),
                ));
            }
            let (mut m, mut s) = (1u64 << 30, 10u64 << 30);
            match &b.image_size {
                None => {}
                Some(toml::Value::Table(t)) => {
                    for (k, v) in t {
                        let path = with(p("backing.image_size"), Seg::Key(k.clone()));
                        match k.as_str() {
                            "M" => m = size_value(ctx, &path, v)?,
                            "S" => s = size_value(ctx, &path, v)?,
                            other => {
                                return Err(ctx.at(
                                    &path,
                                    true,
                                    format!("unknown layout `{other}` in `backing.image_size`"),
                                    Some("use `M` and/or `S`".into()),
                                ));
                            }
                        }
                    }
                }
                Some(v) => {
                    let size = size_value(ctx, &p("backing.image_size"), v)?;
                    (m, s) = (size, size);
                }
            }
            Ok(Backing::TmpfsLoop { image_size_m: m, image_size_s: s })
        }
        "dir" | "device" => {
            if b.image_size.is_some() {
                return Err(ctx.at(
                    &p("backing.image_size"),
                    true,
                    format!("`backing.image_size` is not used with `kind = \"{}\"`", b.kind),
                    None,
                ));
            }
            let path = match b.path.as_deref().filter(|p| !p.is_empty()) {
                Some(path) => base_dir.join(path),
                // A directory backing without a path runs in a private directory of the run.
                None if b.kind == "dir" => PathBuf::new(),
                None => {
                    return Err(ctx.value_help(
                        &p("backing.kind"),
                        "`kind = \"device\"` needs `backing.path`",
                        "add path = \"/dev/...\" and pass the same device to --allow-device",
                    ));
                }
            };
            Ok(if b.kind == "dir" { Backing::Dir { path } } else { Backing::Device { path } })
        }
        other => Err(ctx.at(
            &p("backing.kind"),
            false,
            format!("unknown backing kind `{other}`"),
            did_you_mean(other, &["tmpfs-loop", "dir", "device"])
                .or(Some("use `tmpfs-loop`, `dir` or `device`".into())),
        )),
    }
}

fn validate_archive(ctx: &Ctx, a: &ArchiveFile, base_dir: &Path) -> Result<ArchiveSpec, ScenarioError> {
    let (source, default_name) = match (&a.generate, &a.path) {
        (Some(_), Some(_)) => {
            return Err(ctx.at(
                &p("archive.path"),
                true,
                "`archive.generate` and `archive.path` exclude each other",
                Some("generate a synthetic tree, or name a real tarball, not both".into()),
            ));
        }
        (None, None) => {
            return Err(ctx.at(
                &p("archive"),
                true,
                "`[archive]` needs `generate` or `path`",
                Some("e.g. generate = \"linux-2.5.63\"".into()),
            ));
        }
        (Some(profile), None) => {
            const PROFILES: &[&str] = &["linux-2.5.63"];
            if !PROFILES.contains(&profile.as_str()) {
                return Err(ctx.at(
                    &p("archive.generate"),
                    false,
                    format!("unknown fixture profile `{profile}`"),
                    did_you_mean(profile, PROFILES).or(Some(format!("profiles: {}", PROFILES.join(", ")))),
                ));
            }
            let scale = a.scale.unwrap_or(1.0);
            if !(scale > 0.0 && scale <= 10.0) {
                return Err(ctx.value(&p("archive.scale"), format!("scale {scale} is outside (0, 10]")));
            }
            (
                ArchiveSource::Generate { profile: profile.clone(), scale, seed: a.seed.unwrap_or(1) },
                format!("{profile}.tar.gz"),
            )
        }
        (None, Some(path)) => {
            if a.scale.is_some() || a.seed.is_some() {
                let key = if a.scale.is_some() { "archive.scale" } else { "archive.seed" };
                return Err(ctx.at(&p(key), true, format!("`{key}` only applies to generated archives"), None));
            }
            let file_name = Path::new(path).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if file_name.is_empty() {
                return Err(ctx.value(&p("archive.path"), format!("`{path}` does not name a file")));
            }
            let full = base_dir.join(path);
            if !full.is_file() {
                return Err(ctx.value_help(
                    &p("archive.path"),
                    format!("archive `{}` does not exist (or is not a file)", full.display()),
                    "name a .tar.gz (relative to the scenario file), or use generate = \"linux-2.5.63\"",
                ));
            }
            (ArchiveSource::Path(full), file_name)
        }
    };
    let top = match &source {
        ArchiveSource::Generate { profile, .. } => profile.clone(),
        ArchiveSource::Path(full) => super::archive::top_dir(full).map_err(|why| {
            ctx.value_help(
                &p("archive.path"),
                why,
                "the archive must unpack into one top-level directory, as a kernel tarball does",
            )
        })?,
    };
    let file_name = a.name.clone().unwrap_or(default_name);
    if file_name.is_empty() || file_name.contains('/') || file_name == "." || file_name == ".." {
        return Err(ctx.value(
            &p("archive.name"),
            format!("invalid archive file name `{file_name}` (a plain file name, no `/`)"),
        ));
    }
    Ok(ArchiveSpec { source, on_target: a.on_target.unwrap_or(true), file_name, top })
}

fn int_in(ctx: &Ctx, key: &str, v: Option<i64>, default: i64, lo: i64, hi: i64) -> Result<u32, ScenarioError> {
    let n = v.unwrap_or(default);
    if n < lo || n > hi {
        return Err(ctx.value(&p(key), format!("`{key}` is {n}, but must be between {lo} and {hi}")));
    }
    Ok(n as u32)
}

fn duration_in(
    ctx: &Ctx,
    key: &str,
    v: &Option<String>,
    default: &str,
    allow_zero: bool,
) -> Result<Duration, ScenarioError> {
    let s = v.as_deref().unwrap_or(default);
    let d = parse_duration(s).map_err(|e| ctx.value(&p(key), e))?;
    if d.is_zero() && !allow_zero {
        return Err(ctx.value(&p(key), format!("`{key}` must be longer than zero")));
    }
    if d > Duration::from_secs(3600) {
        return Err(ctx.value_help(
            &p(key),
            format!("`{key}` of {s} is longer than an hour"),
            "lat_fs windows are usually a second or less; use repetitions for more samples",
        ));
    }
    Ok(d)
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

fn validate_latfs(ctx: &Ctx, w: &WorkloadFile) -> Result<LatfsSpec, ScenarioError> {
    reject_foreign(ctx, "lat_fs", &[("iterations", w.iterations.is_some()), ("steps", w.steps.is_some())])?;
    let (min_repetitions, repetitions, ci_target) = validate_repetitions(ctx, w.repetitions.as_ref())?;
    let pin = match w.pin.as_deref() {
        None | Some("none") => Pin::None,
        Some("spread") => Pin::Spread,
        Some(other) => {
            return Err(ctx.at(
                &p("workload.pin"),
                false,
                format!("unknown pin `{other}`"),
                did_you_mean(other, &["spread", "none"]).or(Some("use `spread` or `none`".into())),
            ));
        }
    };
    Ok(LatfsSpec {
        per_task_uid: w.per_task_uid.unwrap_or(true),
        quota_refs: int_in(ctx, "workload.quota_refs", w.quota_refs, 2, 0, 64)?,
        open_for_write: w.open_for_write.unwrap_or(true),
        warmup: duration_in(ctx, "workload.warmup", &w.warmup, "300ms", true)?,
        duration: duration_in(ctx, "workload.duration", &w.duration, "1s", false)?,
        repetitions,
        rounds: int_in(ctx, "workload.rounds", w.rounds, 1, 1, 100)?,
        noise: NoiseSpec {
            min_repetitions,
            ci_target,
            disturbance: disturbance_of(ctx, w)?,
            max_reruns: int_in(ctx, "workload.max_reruns", w.max_reruns, 3, 0, 1000)?,
            pin,
        },
        latency: match w.latency.as_deref() {
            None | Some("mean") => LatencyMode::Mean,
            Some("histogram") => LatencyMode::Histogram,
            Some(other) => {
                return Err(ctx.value_help(
                    &p("workload.latency"),
                    format!("unknown latency mode `{other}`"),
                    did_you_mean(other, &["mean", "histogram"]).unwrap_or_else(|| "use `mean` or `histogram`".into()),
                ));
            }
        },
    })
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

/// `workload.repetitions`: a count, or `{ min, max, ci }`; returns (min, max, CI target).
fn validate_repetitions(ctx: &Ctx, v: Option<&toml::Value>) -> Result<(u32, u32, Option<f64>), ScenarioError> {
    const KEY: &str = "workload.repetitions";
    let table = match v {
        None => return Ok((5, 5, None)),
        Some(toml::Value::Integer(n)) => {
            let n = int_in(ctx, KEY, Some(*n), 5, 1, 1000)?;
            return Ok((n, n, None));
        }
        Some(toml::Value::Table(t)) => t,
        Some(other) => {
            return Err(ctx.value_help(
                &p(KEY),
                format!("expected a count or a table, found {}", other.type_str()),
                "write `repetitions = 5` or `repetitions = { min = 3, max = 20, ci = \"2%\" }`",
            ));
        }
    };
    let at = |k: &str| with(p(KEY), Seg::Key(k.to_string()));
    for k in table.keys() {
        if !["min", "max", "ci"].contains(&k.as_str()) {
            return Err(ctx.at(
                &at(k),
                true,
                format!("unknown key `{k}` in `{KEY}`"),
                did_you_mean(k, &["min", "max", "ci"]).or(Some("use `min`, `max` and `ci`".into())),
            ));
        }
    }
    let int = |k: &str, default: Option<i64>| -> Result<i64, ScenarioError> {
        match table.get(k) {
            None => default.ok_or_else(|| {
                ctx.at(&p(KEY), false, format!("adaptive `{KEY}` needs `{k}`"), Some(format!("add `{k} = 20`")))
            }),
            Some(toml::Value::Integer(n)) if (1..=1000).contains(n) => Ok(*n),
            Some(toml::Value::Integer(n)) => {
                Err(ctx.value(&at(k), format!("`{KEY}.{k}` is {n}, but must be between 1 and 1000")))
            }
            Some(other) => Err(ctx.value(&at(k), format!("expected a count, found {}", other.type_str()))),
        }
    };
    let max = int("max", None)?;
    let min = int("min", Some(3.min(max)))?;
    if min > max {
        return Err(ctx.value_help(
            &at("min"),
            format!("`{KEY}.min` ({min}) is larger than `max` ({max})"),
            "min is the fewest repetitions, max the most",
        ));
    }
    let ci = match table.get("ci") {
        None => None,
        Some(toml::Value::String(s)) => {
            let c = parse_percent(s).map_err(|e| ctx.value(&at("ci"), e))?;
            if c >= 1.0 {
                return Err(ctx.value(&at("ci"), format!("a CI half-width of `{s}` of the mean says nothing")));
            }
            Some(c)
        }
        Some(other) => {
            return Err(ctx.value_help(
                &at("ci"),
                format!("expected a percentage, found {}", other.type_str()),
                "write e.g. `ci = \"2%\"`",
            ));
        }
    };
    if ci.is_some() && min < 2 {
        return Err(ctx.value_help(
            &at("min"),
            "a CI target needs at least 2 repetitions (`min = 2` or more)",
            "one repetition has no spread to estimate",
        ));
    }
    Ok((min as u32, max as u32, ci))
}

const OPS: &[&str] = &["rm_rf", "untar", "sync", "syncfs", "drop_caches", "mkdir", "exec"];

fn validate_steps(ctx: &Ctx, w: &WorkloadFile, archive: Option<&ArchiveSpec>) -> Result<StepsSpec, ScenarioError> {
    reject_foreign(
        ctx,
        "steps",
        &[
            ("per_task_uid", w.per_task_uid.is_some()),
            ("quota_refs", w.quota_refs.is_some()),
            ("open_for_write", w.open_for_write.is_some()),
            ("warmup", w.warmup.is_some()),
            ("duration", w.duration.is_some()),
            ("repetitions", w.repetitions.is_some()),
            ("rounds", w.rounds.is_some()),
            ("max_reruns", w.max_reruns.is_some()),
            ("pin", w.pin.is_some()),
            ("latency", w.latency.is_some()),
        ],
    )?;
    let iterations = int_in(ctx, "workload.iterations", w.iterations, 1, 1, 10_000)?;
    let disturbance = disturbance_of(ctx, w)?;
    let Some(steps_file) = &w.steps else {
        return Err(ctx.at(
            &p("workload"),
            true,
            "a steps workload needs `workload.steps`",
            Some("e.g. steps = [{ op = \"sync\" }]".into()),
        ));
    };
    if steps_file.is_empty() {
        return Err(ctx.value(&p("workload.steps"), "`workload.steps` is empty"));
    }
    let steps =
        steps_file.iter().enumerate().map(|(i, s)| validate_step(ctx, i, s, archive)).collect::<Result<Vec<_>, _>>()?;
    Ok(StepsSpec { iterations, disturbance, steps })
}

fn validate_step(ctx: &Ctx, i: usize, s: &StepFile, archive: Option<&ArchiveSpec>) -> Result<Step, ScenarioError> {
    let base = with(p("workload.steps"), Seg::Index(i));
    let field = |k: &str| with(base.clone(), Seg::Key(k.into()));
    let allowed: &[&str] = match s.op.as_str() {
        "rm_rf" | "mkdir" => &["path"],
        "untar" => &["archive"],
        "exec" => &["argv"],
        "sync" | "syncfs" | "drop_caches" => &[],
        other => {
            return Err(ctx.at(
                &field("op"),
                false,
                format!("unknown step op `{other}`"),
                did_you_mean(other, OPS).or(Some(format!("ops: {}", OPS.join(", ")))),
            ));
        }
    };
    for (k, set) in [("path", s.path.is_some()), ("archive", s.archive.is_some()), ("argv", s.argv.is_some())] {
        if set && !allowed.contains(&k) {
            return Err(ctx.at(&field(k), true, format!("`{k}` is not an option of op `{}`", s.op), None));
        }
    }
    let need = |k: &str, v: &Option<String>| -> Result<String, ScenarioError> {
        match v.as_deref() {
            Some(x) if !x.is_empty() => Ok(x.to_string()),
            _ => Err(ctx.at(&base, false, format!("op `{}` needs `{k}`", s.op), None)),
        }
    };
    let relative = |k: &str, v: String| -> Result<String, ScenarioError> {
        let path = Path::new(&v);
        if path.is_absolute() || path.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
            return Err(ctx.value_help(
                &field(k),
                format!("`{v}` leaves the filesystem under test"),
                "step paths are relative to the filesystem under test and may not contain `..`",
            ));
        }
        Ok(v)
    };
    // `{archive.top}` follows the archive: `--set archive.path=linux-6.1.tar.gz` is one edit.
    let top = |v: String| -> Result<String, ScenarioError> {
        if !v.contains(super::archive::TOP_PLACEHOLDER) {
            return Ok(v);
        }
        match archive {
            Some(a) => Ok(v.replace(super::archive::TOP_PLACEHOLDER, &a.top)),
            None => Err(ctx.value_help(
                &field("path"),
                format!("`{}` needs an `[archive]` section", super::archive::TOP_PLACEHOLDER),
                "add [archive] with generate = \"linux-2.5.63\" or path = \"...\"",
            )),
        }
    };
    Ok(match s.op.as_str() {
        "rm_rf" => Step::RmRf { path: relative("path", top(need("path", &s.path)?)?)? },
        "mkdir" => Step::Mkdir { path: relative("path", top(need("path", &s.path)?)?)? },
        "untar" => {
            // Without `archive`, the step unpacks the scenario's archive, whatever its name.
            let name = match (&s.archive, archive) {
                (None, Some(a)) => a.file_name.clone(),
                _ => need("archive", &s.archive)?,
            };
            match archive {
                Some(a) if a.file_name == name => {}
                Some(a) => {
                    return Err(ctx.value_help(
                        &field("archive"),
                        format!("`{name}` is not the scenario's archive"),
                        format!("`[archive]` provides `{}`", a.file_name),
                    ));
                }
                None => {
                    return Err(ctx.at(
                        &field("archive"),
                        false,
                        format!("op `untar` of `{name}` needs an `[archive]` section"),
                        Some("add [archive] with generate = \"linux-2.5.63\" or path = \"...\"".into()),
                    ));
                }
            }
            Step::Untar { archive: name }
        }
        "exec" => {
            let argv = s.argv.clone().unwrap_or_default();
            if argv.is_empty() || argv[0].is_empty() {
                return Err(ctx.at(
                    &base,
                    false,
                    "op `exec` needs a non-empty `argv`",
                    Some("e.g. argv = [\"git\", \"status\"]".into()),
                ));
            }
            Step::Exec { argv }
        }
        "sync" => Step::Sync,
        "syncfs" => Step::Syncfs,
        "drop_caches" => Step::DropCaches,
        _ => unreachable!("checked above"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn bad_value_in_array_points_at_the_element() {
        let text = MINIMAL.replace("fs = [\"ext4\"]", "fs = [\"ext4\"]\ntasks = [1, 0]");
        let e = parse_str(&text, "t.toml").unwrap_err();
        assert_eq!((e.line, e.column), (Some(5), Some(13)), "{e}");
        assert_eq!(e.key.as_deref(), Some("matrix.tasks[1]"));
    }
}
