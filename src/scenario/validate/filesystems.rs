//! `[filesystems.<name>]` (types and variants, mkfs and mount options, quota, queue
//! settings) and `[sysctl]`, checked against the matrix's filesystems.

use crate::scenario::diagnose::{Ctx, Seg, p, with};
use crate::scenario::error::did_you_mean;
use crate::scenario::file::FilesystemFile;
use crate::scenario::*;

/// Filesystem types people benchmark, for telling a typo from a name (`etx4` is not one).
const KNOWN_FS_TYPES: &[&str] = &[
    "ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "nilfs2", "jfs", "reiserfs", "vfat", "exfat", "ntfs3", "bcachefs",
    "tmpfs",
];

/// `[sysctl]`: dotted keys of /proc/sys (`vm.dirty_ratio`), values without line breaks.
pub(super) fn validate_sysctl(
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
pub(super) fn is_fs_type_char(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '.'
}

pub(super) fn validate_filesystems(
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
        let cgroup = super::cgroup::validate_cgroup(ctx, &base, &f.cgroup)?;
        let tunables = crate::scenario::Tunables { queue, sysctl: Vec::new(), cgroup };
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
