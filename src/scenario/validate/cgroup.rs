//! `[filesystems.<name>] cgroup`: keys checked against the table of cgroup v2 interface
//! files fsbench can apply ([`CgroupKey`]), values parsed, each error at its key or value.

use crate::scenario::cgroup_limits::{CgroupKey, CgroupLimit};
use crate::scenario::diagnose::{Ctx, Seg, with};
use crate::scenario::error::did_you_mean;
use crate::scenario::file::SysctlValue;
use crate::scenario::*;

/// The limits of `[filesystems.<name>] cgroup` (`base` is that table's path), in key order.
pub(super) fn validate_cgroup(
    ctx: &Ctx,
    base: &[Seg],
    t: &BTreeMap<String, SysctlValue>,
) -> Result<Vec<CgroupLimit>, ScenarioError> {
    let table = with(base.to_vec(), Seg::Key("cgroup".into()));
    let mut out = Vec::new();
    for (k, v) in t {
        let item = with(table.clone(), Seg::Key(k.clone()));
        let Some(key) = CgroupKey::from_name(k) else {
            let names: Vec<&str> = CgroupKey::ALL.iter().map(|k| k.name()).collect();
            let v1 = v1_name_hint(k);
            return Err(ctx.at(
                &item,
                true,
                format!("`{k}` is not a cgroup v2 interface file fsbench can apply"),
                v1.or_else(|| did_you_mean(k, &names)).or(Some(format!("use one of: {}", names.join(", ")))),
            ));
        };
        let text = match v {
            SysctlValue::Int(i) => i.to_string(),
            SysctlValue::Text(s) => s.trim().to_string(),
        };
        let value = key.parse(&text).map_err(|e| ctx.value(&item, e))?;
        out.push(CgroupLimit { key, text, value });
    }
    Ok(out)
}

/// For a cgroup v1 file name, the v2 key to write instead.
fn v1_name_hint(k: &str) -> Option<String> {
    let v2 = match k {
        "cpu.cfs_quota_us" | "cpu.cfs_period_us" => "cpu.max",
        "cpu.shares" => "cpu.weight",
        "memory.limit_in_bytes" => "memory.max",
        "memory.soft_limit_in_bytes" => "memory.high",
        _ if k.starts_with("blkio.throttle.") => "io.max",
        _ => return None,
    };
    Some(format!("keys are cgroup v2 files (mapped to v1 on a v1 host): use `{v2}`"))
}
