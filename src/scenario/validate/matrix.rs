//! `[matrix]`: the axes, each non-empty and without duplicates, and a bound on the
//! number of cells they expand to.

use super::filesystems::is_fs_type_char;
use crate::scenario::diagnose::{Ctx, Seg, p, with};
use crate::scenario::error::did_you_mean;
use crate::scenario::file::MatrixFile;
use crate::scenario::*;

/// Most tasks a cell may have (each is a process, and in layout M a loop device).
const MAX_TASKS: i64 = 1024;
/// Most cells a matrix may expand to, checked on the axis lengths before any cell is
/// allocated: a scenario from elsewhere (a bundle) cannot make `plan` exhaust memory.
/// Ten times the largest matrix benchmarked (10,000 cells plan in 0.2 ms).
pub const MAX_CELLS: usize = 100_000;

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

pub(super) fn validate_matrix(ctx: &Ctx, m: &MatrixFile, workload_kind: &str) -> Result<Matrix, ScenarioError> {
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
    let fio = validate_fio_axes(ctx, m, workload_kind)?;
    let sweeps = fio.iter().try_fold(1usize, |a, x| a.checked_mul(x.values.len())).unwrap_or(usize::MAX);
    let mut lens = vec![fs.len(), layout.len(), quota.len(), tasks.len(), test.len().max(1)];
    if !fio.is_empty() {
        lens.push(sweeps);
    }
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
    Ok(Matrix { fs, layout, quota, tasks, test, fio })
}

/// `[matrix] fio.<option> = [...]`: option names as fio spells them, values that are
/// text or numbers made of the characters a cell id may carry.
fn validate_fio_axes(ctx: &Ctx, m: &MatrixFile, workload_kind: &str) -> Result<Vec<FioAxis>, ScenarioError> {
    if m.fio.is_empty() {
        return Ok(Vec::new());
    }
    if workload_kind != "fio" {
        return Err(ctx.at(
            &p("matrix.fio"),
            true,
            "axes `matrix.fio.*` are only for fio workloads",
            Some("remove them, or use `kind = \"fio\"`".into()),
        ));
    }
    let mut out = Vec::new();
    for (option, values) in &m.fio {
        let key = format!("fio.{option}");
        let path = p(&format!("matrix.{key}"));
        if option.is_empty() || !option.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
            return Err(ctx.at(&path, true, format!("`{option}` is not a fio option name"), None));
        }
        if let Some((_, why)) = super::fio::SET_BY_FSBENCH.iter().find(|(n, _)| n == option) {
            return Err(ctx.at(&path, true, format!("`{option}` cannot be swept"), Some((*why).to_string())));
        }
        let as_text: Vec<String> = values
            .iter()
            .map(|v| match v {
                toml::Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect();
        let parsed = axis(ctx, &key, &as_text, |v| {
            let ok =
                !v.is_empty() && v.len() <= 32 && v.chars().all(|c| c.is_ascii_alphanumeric() || "._:+%-".contains(c));
            if let Some(why) = super::fio::sweep_refusal(option, v).filter(|_| ok) {
                Err((why, Some("a swept value names files as the job's own line would".into())))
            } else if ok {
                Ok(v.to_string())
            } else {
                Err((
                    format!("fio sweep value `{v}` is not usable in a cell id"),
                    Some("use up to 32 characters from A-Z a-z 0-9 . _ : + % -".into()),
                ))
            }
        })?;
        for (i, v) in values.iter().enumerate() {
            if !matches!(v, toml::Value::String(_) | toml::Value::Integer(_)) {
                let item = with(path.clone(), Seg::Index(i));
                return Err(ctx.value(&item, format!("expected text or an integer, found {}", v.type_str())));
            }
        }
        let at = (0..values.len())
            .map(|i| ctx.value_start(&with(path.clone(), Seg::Index(i))).map_or((0, 0), |(l, c, _)| (l, c)))
            .collect();
        out.push(FioAxis { option: option.clone(), values: parsed, at });
    }
    Ok(out)
}
