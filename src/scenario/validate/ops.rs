//! `[workload]` of kind `ops`: filesets, worker groups and their ops, checked before
//! anything runs — op names, fd slots used before they are opened, filesets named but
//! not declared, thread caps, and filesets that cannot fit in the image (the arithmetic
//! shown).

use std::time::Duration;

use super::latfs::duration_in;
use super::{disturbance_of, int_in, reject_foreign};
use crate::scenario::diagnose::{Ctx, Seg, p, with};
use crate::scenario::error::did_you_mean;
use crate::scenario::file::{MatrixFile, WorkloadFile};
use crate::scenario::loadfile_spec::Resolve;
use crate::scenario::op_kinds::OP_NAMES;
use crate::scenario::ops_file::{FilesetFile, GroupFile, OpFile};
use crate::scenario::ops_spec::*;
use crate::scenario::units::{format_size, parse_size};
use crate::scenario::*;

/// Keys only `ops` workloads take: refused elsewhere by [`reject_ops_keys`].
pub(super) fn reject_ops_keys(ctx: &Ctx, kind: &str, w: &WorkloadFile) -> Result<(), ScenarioError> {
    reject_foreign(
        ctx,
        kind,
        &[
            ("fileset", w.fileset.is_some()),
            ("group", w.group.is_some()),
            ("loops", w.loops.is_some()),
            ("ops", w.ops.is_some()),
            ("bytes", w.bytes.is_some()),
            ("rate", w.rate.is_some()),
            ("first_done", w.first_done.is_some()),
            ("scale", w.scale.is_some()),
            ("seed", w.seed.is_some()),
        ],
    )
}

pub(super) fn validate_ops(
    ctx: &Ctx,
    w: &WorkloadFile,
    m: &MatrixFile,
    backing: &Backing,
    base_dir: &std::path::Path,
) -> Result<OpsWorkload, ScenarioError> {
    reject_foreign(
        ctx,
        "ops",
        &[
            ("per_task_uid", w.per_task_uid.is_some()),
            ("quota_refs", w.quota_refs.is_some()),
            ("open_for_write", w.open_for_write.is_some()),
            ("rounds", w.rounds.is_some()),
            ("max_reruns", w.max_reruns.is_some()),
            ("pin", w.pin.is_some()),
            ("latency", w.latency.is_some()),
            ("iterations", w.iterations.is_some()),
            ("steps", w.steps.is_some()),
            ("job", w.job.is_some()),
            ("job_file", w.job_file.is_some()),
            ("numjobs", w.numjobs.is_some()),
        ],
    )?;
    if let Some(t) = &m.tasks
        && t.iter().any(|&n| n != 1)
    {
        return Err(ctx.value_help(
            &p("matrix.tasks"),
            "an ops workload runs its own workers: `matrix.tasks` must be [1]",
            "set the workers with `threads` in each `[[workload.group]]`",
        ));
    }
    let scale = w.scale.unwrap_or(1.0);
    if !(scale > 0.0 && scale <= 10_000.0) {
        return Err(ctx.value(&p("workload.scale"), format!("scale {scale} is outside (0, 10000]")));
    }
    let only_loadfiles = w.group.as_ref().is_some_and(|g| !g.is_empty() && g.iter().all(|g| g.loadfile.is_some()));
    let no_sets = Vec::new();
    let Some(sets) = w.fileset.as_ref().filter(|s| !s.is_empty()).or(only_loadfiles.then_some(&no_sets)) else {
        return Err(ctx.at(
            &p("workload"),
            true,
            "an ops workload needs at least one `[[workload.fileset]]`",
            Some("e.g. [[workload.fileset]]\\nname = \"bigfileset\"\\nentries = 1000\\nsize = \"16KiB\"".into()),
        ));
    };
    let mut filesets = Vec::new();
    for (i, f) in sets.iter().enumerate() {
        let fs = fileset(ctx, i, f, scale)?;
        if filesets.iter().any(|o: &FilesetSpec| o.name == fs.name) {
            return Err(ctx.value(&at_set(i, "name"), format!("fileset `{}` is declared twice", fs.name)));
        }
        filesets.push(fs);
    }
    let Some(groups_file) = w.group.as_ref().filter(|g| !g.is_empty()) else {
        return Err(ctx.at(
            &p("workload"),
            true,
            "an ops workload needs at least one `[[workload.group]]`",
            Some("e.g. [[workload.group]]\\nthreads = 16\\nloop = [{ op = \"open\", fileset = \"bigfileset\", fd = 1 }, …]".into()),
        ));
    };
    let names: Vec<&str> = filesets.iter().map(|f| f.name.as_str()).collect();
    let mut groups = Vec::new();
    let mut workers = 0u32;
    for (g, gf) in groups_file.iter().enumerate() {
        let group = group(ctx, g, gf, &names, base_dir)?;
        workers = workers.saturating_add(group.workers());
        if workers > MAX_WORKERS {
            let key = if group.processes.is_some() { "processes" } else { "threads" };
            return Err(ctx.value_help(
                &at_group(g, key),
                format!("the groups have more than {MAX_WORKERS} workers together (threads × processes)"),
                "an op mix with more threads measures the scheduler; use fewer",
            ));
        }
        groups.push(group);
    }
    let loops = match w.loops {
        None => None,
        Some(n) if (1..=1_000_000_000).contains(&n) => Some(n as u64),
        Some(n) => {
            return Err(ctx.value(&p("workload.loops"), format!("`workload.loops` is {n}, but must be 1 or more")));
        }
    };
    let ops = match w.ops {
        None => None,
        Some(n) if (1..=MAX_COUNT).contains(&n) => Some(n as u64),
        Some(n) => {
            return Err(ctx.value(
                &p("workload.ops"),
                format!("`workload.ops` is {n}, but must be 1 to {MAX_COUNT} (ops per worker)"),
            ));
        }
    };
    let bytes = match &w.bytes {
        None => None,
        Some(b) => match parse_size(b) {
            Ok(n) if n > 0 => Some(n),
            Ok(_) => return Err(ctx.value(&p("workload.bytes"), "`workload.bytes` must be more than 0 bytes")),
            Err(e) => {
                return Err(ctx.value_help(
                    &p("workload.bytes"),
                    format!("`workload.bytes`: {e}"),
                    "bytes per worker, e.g. `bytes = \"1GiB\"`",
                ));
            }
        },
    };
    let rate = match &w.rate {
        None => None,
        Some(r) => Some(parse_rate(r).map_err(|e| {
            ctx.value_help(
                &p("workload.rate"),
                format!("`workload.rate`: {e}"),
                "per worker: `rate = \"100/s\"` (loops per second) or `rate = \"500 ops/s\"`",
            )
        })?),
    };
    let counted = loops.is_some() || ops.is_some() || bytes.is_some();
    let duration = match (&w.duration, counted) {
        (None, true) => None,
        _ => Some(duration_in(ctx, "workload.duration", &w.duration, "10s", false)?),
    };
    let warmup = match &w.warmup {
        None => None,
        Some(_) => {
            let d = duration_in(ctx, "workload.warmup", &w.warmup, "0s", true)?;
            if counted || w.first_done == Some(true) {
                return Err(ctx.value_help(
                    &p("workload.warmup"),
                    "`workload.warmup` is a time before a `duration` window: not with `loops`, `ops`, `bytes` or `first_done`",
                    "a warm-up drops the figures of its time; counts would count work it dropped",
                ));
            }
            Some(d).filter(|d| !d.is_zero())
        }
    };
    let stop = Stop { duration, loops, ops, bytes, first_done: w.first_done.unwrap_or(false), rate, warmup };
    let repetitions = match &w.repetitions {
        None => 3,
        Some(toml::Value::Integer(n)) => int_in(ctx, "workload.repetitions", Some(*n), 3, 1, 1000)?,
        Some(other) => {
            return Err(ctx.value_help(
                &p("workload.repetitions"),
                format!("expected a count, found {}", other.type_str()),
                "ops workloads take a fixed count: `repetitions = 3`",
            ));
        }
    };
    let seed = w.seed.unwrap_or(1) as u64;
    let ops = OpsWorkload {
        spec: OpsSpec { filesets, groups, stop, seed },
        repetitions,
        scale,
        disturbance: disturbance_of(ctx, w)?,
    };
    fits(ctx, &ops, backing)?;
    Ok(ops)
}

/// Most ops a worker may be told to run (`workload.ops`).
const MAX_COUNT: i64 = 1_000_000_000_000;

/// A worker's pace: `"<n>/s"` or `"<n> loops/s"` (loops, transactions or loadfile passes
/// per second), `"<n> ops/s"` (ops per second); `n` a positive number up to [`MAX_RATE`].
fn parse_rate(s: &str) -> Result<Rate, String> {
    let t = s.trim();
    let Some(num_unit) = t.strip_suffix("/s") else {
        return Err("expected a rate per second: `100/s`, `100 loops/s` or `500 ops/s`".into());
    };
    let (num, unit) = match num_unit.trim_end().rsplit_once(' ') {
        Some((n, "loops")) => (n, RateUnit::Loops),
        Some((n, "ops")) => (n, RateUnit::Ops),
        Some((_, u)) => return Err(format!("unknown unit `{}`: `loops` or `ops`", crate::text::escape_control(u))),
        None => (num_unit, RateUnit::Loops),
    };
    let per_s: f64 =
        num.trim().parse().map_err(|_| format!("`{}` is not a number", crate::text::escape_control(num.trim())))?;
    if !(per_s > 0.0 && per_s <= MAX_RATE) {
        return Err(format!("{per_s} per second is outside (0, {MAX_RATE}]"));
    }
    Ok(Rate { per_s, unit })
}

fn at_set(i: usize, key: &str) -> Vec<Seg> {
    with(with(p("workload.fileset"), Seg::Index(i)), Seg::Key(key.into()))
}

fn at_group(g: usize, key: &str) -> Vec<Seg> {
    with(with(p("workload.group"), Seg::Index(g)), Seg::Key(key.into()))
}

fn fileset(ctx: &Ctx, i: usize, f: &FilesetFile, scale: f64) -> Result<FilesetSpec, ScenarioError> {
    let name = f.name.trim().to_string();
    if name.is_empty()
        || name.len() > 64
        || name.starts_with('.')
        || !name.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    {
        return Err(ctx.value_help(
            &at_set(i, "name"),
            format!("invalid fileset name `{}`", f.name),
            "use 1 to 64 characters from A-Z a-z 0-9 . _ - (it becomes a directory beneath the cell's)",
        ));
    }
    let entries = (f.entries as f64 * scale).round();
    if f.entries < 1 || entries < 1.0 || entries > MAX_ENTRIES as f64 {
        return Err(ctx.value(
            &at_set(i, "entries"),
            format!("{} entries (times scale {scale}) is outside 1..={MAX_ENTRIES}", f.entries),
        ));
    }
    let dir_width = f.dir_width.unwrap_or(20.0);
    if !(2.0..=1e9).contains(&dir_width) {
        return Err(ctx.value(&at_set(i, "dir_width"), format!("dir_width {dir_width} is outside 2..=1e9")));
    }
    let dir_gamma = f.dir_gamma.unwrap_or(1.5);
    if !(0.0..=100.0).contains(&dir_gamma) {
        return Err(ctx.value(&at_set(i, "dir_gamma"), format!("dir_gamma {dir_gamma} is outside 0..=100")));
    }
    let size = match (&f.size, &f.sizes) {
        (Some(_), Some(_)) => {
            return Err(ctx.at(&at_set(i, "sizes"), true, "`size` and `sizes` exclude each other", None));
        }
        (None, None) => SizeDist::Fixed(0),
        (Some(s), None) => size_dist(s).map_err(|e| {
            ctx.value_help(&at_set(i, "size"), e, "e.g. \"16KiB\", \"gamma(128KiB, 1.5)\" or \"uniform(1KiB, 64KiB)\"")
        })?,
        (None, Some(rows)) => {
            let mut t = Vec::new();
            for (size, weight) in rows {
                let b = parse_size(size).map_err(|e| ctx.value(&at_set(i, "sizes"), e))?;
                if !(*weight >= 0.0 && weight.is_finite()) {
                    return Err(ctx.value(&at_set(i, "sizes"), format!("weight {weight} of {size} is not >= 0")));
                }
                t.push((b, *weight));
            }
            if t.iter().map(|r| r.1).sum::<f64>() <= 0.0 {
                return Err(ctx.value(&at_set(i, "sizes"), "the size table has no positive weight"));
            }
            SizeDist::Table(t)
        }
    };
    let prealloc = f.prealloc.unwrap_or(0);
    if !(0..=100).contains(&prealloc) {
        return Err(ctx.value(&at_set(i, "prealloc"), format!("prealloc {prealloc} is not a percentage 0..=100")));
    }
    Ok(FilesetSpec {
        name,
        entries: entries as u64,
        dir_width,
        dir_gamma,
        size,
        prealloc_percent: prealloc as u32,
        reuse: f.reuse.unwrap_or(false),
        read_only: f.read_only.unwrap_or(false),
    })
}

/// `"16KiB"`, `"gamma(128KiB, 1.5)"` or `"uniform(1KiB, 64KiB)"`.
fn size_dist(s: &str) -> Result<SizeDist, String> {
    let t = s.trim();
    let args = |inner: &str| -> Vec<String> { inner.split(',').map(|a| a.trim().to_string()).collect() };
    if let Some(inner) = t.strip_prefix("gamma(").and_then(|r| r.strip_suffix(')')) {
        let a = args(inner);
        let [mean, shape] = a.as_slice() else { return Err(format!("`{s}`: gamma takes (mean, shape)")) };
        let mean = parse_size(mean)? as f64;
        let shape: f64 = shape.parse().map_err(|_| format!("`{shape}` is not a gamma shape"))?;
        if !(shape > 0.0 && shape <= 1000.0) {
            return Err(format!("gamma shape {shape} is outside (0, 1000]"));
        }
        return Ok(SizeDist::Gamma { mean, shape });
    }
    if let Some(inner) = t.strip_prefix("uniform(").and_then(|r| r.strip_suffix(')')) {
        let a = args(inner);
        let [min, max] = a.as_slice() else { return Err(format!("`{s}`: uniform takes (min, max)")) };
        let (min, max) = (parse_size(min)?, parse_size(max)?);
        if min > max {
            return Err(format!("`{s}`: min is above max"));
        }
        return Ok(SizeDist::Uniform { min, max });
    }
    parse_size(t).map(SizeDist::Fixed)
}

fn group(
    ctx: &Ctx,
    g: usize,
    gf: &GroupFile,
    sets: &[&str],
    base_dir: &std::path::Path,
) -> Result<ThreadGroup, ScenarioError> {
    if !(1..=MAX_WORKERS as i64).contains(&gf.threads) {
        return Err(ctx.value(&at_group(g, "threads"), format!("threads {} is outside 1..={MAX_WORKERS}", gf.threads)));
    }
    let processes = match gf.processes {
        None => None,
        Some(p) if (1..=MAX_WORKERS as i64).contains(&p) => Some(p as u32),
        Some(p) => {
            return Err(ctx.value(&at_group(g, "processes"), format!("processes {p} is outside 1..={MAX_WORKERS}")));
        }
    };
    let name = gf.name.clone().unwrap_or_else(|| format!("group{g}"));
    if name.is_empty() || name.len() > 64 || name.chars().any(|c| c.is_control()) {
        return Err(ctx.value(&at_group(g, "name"), "a group name is 1 to 64 printable characters"));
    }
    if let Some(file) = &gf.loadfile {
        if gf.ops_loop.is_some() || gf.mix.is_some() {
            let other = if gf.mix.is_some() { "mix" } else { "loop" };
            return Err(ctx.at(
                &at_group(g, other),
                true,
                format!("`loadfile` and `{other}` exclude each other"),
                None,
            ));
        }
        if processes.is_some() {
            return Err(ctx.value_help(
                &at_group(g, "processes"),
                "`processes` is not supported with a `loadfile` group",
                "a loadfile's clients run as threads of fsbench: drop `processes` and set the clients with `threads`",
            ));
        }
        let mut lf = super::loadfile::read_loadfile(ctx, &at_group(g, "loadfile"), file, base_dir)?;
        if let Some(r) = &gf.resolve {
            let names = Resolve::NAMES.join(", ");
            let mode = Resolve::from_name(r)
                .ok_or_else(|| ctx.value(&at_group(g, "resolve"), format!("resolve `{r}`: use one of {names}")))?;
            std::sync::Arc::make_mut(&mut lf).resolve = mode;
        }
        return Ok(ThreadGroup { name, threads: gf.threads as u32, processes, flow: Flow::Loadfile(lf) });
    }
    if gf.resolve.is_some() {
        return Err(ctx.at(&at_group(g, "resolve"), true, "`resolve` is for a group with a `loadfile`", None));
    }
    let flow = match (&gf.ops_loop, &gf.mix) {
        (Some(_), Some(_)) => {
            return Err(ctx.at(&at_group(g, "mix"), true, "`loop` and `mix` exclude each other", None));
        }
        (None, None) => {
            return Err(ctx.at(&at_group(g, "threads"), true, "a group needs a `loop`, a `mix` or a `loadfile`", None));
        }
        (Some(l), None) => {
            let base = at_group(g, "loop");
            let ops = ops_of(ctx, &base, l, sets)?;
            slots_in_order(ctx, &base, &ops, true)?;
            Flow::Loop(ops)
        }
        (None, Some(txs)) => {
            let mut out = Vec::new();
            for (t, tx) in txs.iter().enumerate() {
                let at = with(at_group(g, "mix"), Seg::Index(t));
                if !(tx.weight > 0.0 && tx.weight.is_finite()) {
                    return Err(ctx.value(&with(at.clone(), Seg::Key("weight".into())), "a weight must be above 0"));
                }
                let base = with(at, Seg::Key("ops".into()));
                let ops = ops_of(ctx, &base, &tx.ops, sets)?;
                // A transaction starts and ends with every slot closed.
                slots_in_order(ctx, &base, &ops, false)?;
                out.push((tx.weight, ops));
            }
            if out.is_empty() {
                return Err(ctx.value(&at_group(g, "mix"), "a mix needs at least one transaction"));
            }
            Flow::Mix(out)
        }
    };
    if flow.ops().is_empty() {
        return Err(ctx.value(&at_group(g, "loop"), "a loop needs at least one op"));
    }
    Ok(ThreadGroup { name, threads: gf.threads as u32, processes, flow })
}

fn ops_of(ctx: &Ctx, base: &[Seg], list: &[OpFile], sets: &[&str]) -> Result<Vec<Op>, ScenarioError> {
    list.iter().enumerate().map(|(i, o)| op(ctx, &with(base.to_vec(), Seg::Index(i)), o, sets)).collect()
}

fn op(ctx: &Ctx, at: &[Seg], o: &OpFile, sets: &[&str]) -> Result<Op, ScenarioError> {
    let key = |k: &str| with(at.to_vec(), Seg::Key(k.into()));
    let fileset = |required: bool| -> Result<Option<usize>, ScenarioError> {
        match &o.fileset {
            None if required => Err(ctx.at(&key("op"), false, format!("op `{}` needs a `fileset`", o.op), None)),
            None => Ok(None),
            Some(n) => sets.iter().position(|s| s == n).map(Some).ok_or_else(|| {
                ctx.at(
                    &key("fileset"),
                    false,
                    format!("no fileset is named `{n}`"),
                    did_you_mean(n, sets).or(Some(format!("filesets: {}", sets.join(", ")))),
                )
            }),
        }
    };
    let set = || fileset(true).map(|s| s.expect("required"));
    let slot = || -> Result<Slot, ScenarioError> {
        match o.fd {
            Some(n) if (0..MAX_SLOTS as i64).contains(&n) => Ok(n as usize),
            Some(n) => Err(ctx.value(&key("fd"), format!("fd slot {n} is outside 0..={}", MAX_SLOTS - 1))),
            None => Err(ctx.at(&key("op"), false, format!("op `{}` needs an `fd` slot", o.op), None)),
        }
    };
    let size_of = |k: &str, v: &Option<String>, default: u64| -> Result<u64, ScenarioError> {
        match v {
            None => Ok(default),
            Some(s) => parse_size(s).map_err(|e| ctx.value(&key(k), e)),
        }
    };
    let io_size = || -> Result<u64, ScenarioError> {
        let n = size_of("io_size", &o.io_size, 1 << 20)?;
        if n == 0 || n > MAX_CHUNK {
            return Err(ctx.value(&key("io_size"), format!("io_size is outside 1..={}", format_size(MAX_CHUNK))));
        }
        Ok(n)
    };
    let pick = || -> Result<Pick, ScenarioError> {
        match o.pick.as_deref().map(str::trim) {
            None | Some("round-robin") => Ok(Pick::RoundRobin),
            Some("uniform") => Ok(Pick::Uniform),
            Some(z) if z.starts_with("zipf(") && z.ends_with(')') => {
                let s: f64 = z[5..z.len() - 1]
                    .trim()
                    .parse()
                    .map_err(|_| ctx.value(&key("pick"), "zipf takes an exponent: `zipf(1.1)`"))?;
                if !(s > 0.0 && s <= 10.0) {
                    return Err(ctx.value(&key("pick"), format!("zipf exponent {s} is outside (0, 10]")));
                }
                Ok(Pick::Zipf(s))
            }
            Some(other) => Err(ctx.value_help(
                &key("pick"),
                format!("unknown pick `{other}`"),
                did_you_mean(other, &["round-robin", "uniform"])
                    .unwrap_or_else(|| "use round-robin, uniform or zipf(1.1)".into()),
            )),
        }
    };
    let op = match o.op.as_str() {
        "create" => Op::Create { fileset: set()?, slot: slot()? },
        "open" => Op::Open { fileset: set()?, slot: slot()?, pick: pick()? },
        "close" => Op::Close { slot: slot()? },
        "read" => {
            let len = match &o.size {
                None => ReadLen::Whole,
                Some(_) => ReadLen::Bytes(size_of("size", &o.size, 0)?),
            };
            Op::Read { slot: slot()?, len, io_size: io_size()? }
        }
        "write" => Op::WriteWhole { slot: slot()?, io_size: io_size()? },
        "append" => {
            let (k, v) = if o.up_to.is_some() { ("up_to", &o.up_to) } else { ("size", &o.size) };
            if o.up_to.is_some() && (o.size.is_some() || o.random.is_some()) {
                let other = if o.size.is_some() { "size" } else { "random" };
                return Err(ctx.at(&key(other), true, format!("`up_to` and `{other}` exclude each other"), None));
            }
            let n = size_of(k, v, 16 << 10)?;
            if n == 0 || n > MAX_CHUNK {
                return Err(ctx.value(&key(k), format!("an append is 1 byte to {}", format_size(MAX_CHUNK))));
            }
            let len = match (&o.up_to, o.random.unwrap_or(true)) {
                (Some(_), _) => AppendLen::UpTo(n),
                (None, true) => AppendLen::Uniform(n),
                (None, false) => AppendLen::Fixed(n),
            };
            // Not declared: the whole append in one call.
            let io_size = if o.io_size.is_some() { io_size()? } else { n };
            Op::Append { slot: slot()?, len, io_size, fileset: fileset(false)? }
        }
        "fsync" => Op::Fsync { slot: slot()? },
        "fdatasync" => Op::Fdatasync { slot: slot()? },
        "stat" => Op::Stat { fileset: set()?, pick: pick()? },
        "rename" => Op::Rename { fileset: set()? },
        "delete" => Op::Delete { fileset: set()? },
        "mkdir" => Op::Mkdir { fileset: set()? },
        "rmdir" => Op::Rmdir { fileset: set()? },
        "readdir" => Op::Readdir { fileset: set()? },
        "link" => Op::Link { fileset: set()? },
        "symlink" => Op::Symlink { fileset: set()? },
        "truncate" => Op::Truncate { slot: slot()?, size: size_of("size", &o.size, 0)? },
        "chmod" => {
            let mode = o.mode.unwrap_or(0o644);
            if !(0..=0o7777).contains(&mode) {
                return Err(ctx.value(&key("mode"), format!("mode {mode:#o} is outside 0..=0o7777")));
            }
            Op::Chmod { fileset: set()?, mode: mode as u32 }
        }
        "chown" => {
            let id = |k: &str, v: Option<i64>| -> Result<u32, ScenarioError> {
                match v {
                    Some(n) if (0..=u32::MAX as i64 - 1).contains(&n) => Ok(n as u32),
                    Some(n) => Err(ctx.value(&key(k), format!("{k} {n} is not a valid id"))),
                    None => Err(ctx.at(&key("op"), false, format!("op `chown` needs `{k}`"), None)),
                }
            };
            Op::Chown { fileset: set()?, uid: id("uid", o.uid)?, gid: id("gid", o.gid)? }
        }
        "delay" => {
            let d = duration_in(ctx, "_", &o.time, "0s", false).map_err(|_| {
                ctx.value_help(&key("time"), "a delay needs a `time` between 1ns and an hour", "e.g. time = \"10ms\"")
            })?;
            Op::Delay(d.min(Duration::from_secs(3600)))
        }
        other => {
            return Err(ctx.at(
                &key("op"),
                false,
                format!("unknown op `{other}`"),
                did_you_mean(other, OP_NAMES).or(Some(format!("ops: {}", OP_NAMES.join(", ")))),
            ));
        }
    };
    Ok(op)
}

/// Slots are opened (create, open, an append with a fileset) before they are used, and
/// not opened again while open. A loop is checked over two turns, since a slot left open
/// at its end is still open at its start; a transaction must close what it opens.
fn slots_in_order(ctx: &Ctx, base: &[Seg], ops: &[Op], is_loop: bool) -> Result<(), ScenarioError> {
    let mut open = [false; MAX_SLOTS];
    for turn in 0..if is_loop { 2 } else { 1 } {
        for (i, op) in ops.iter().enumerate() {
            let at = with(base.to_vec(), Seg::Index(i));
            let (uses, opens, closes) = match *op {
                Op::Create { slot, .. } | Op::Open { slot, .. } => (None, Some(slot), None),
                Op::Close { slot } => (Some(slot), None, Some(slot)),
                Op::Append { slot, fileset: Some(_), .. } => {
                    open[slot] = true;
                    (None, None, None)
                }
                Op::Read { slot, .. }
                | Op::WriteWhole { slot, .. }
                | Op::Append { slot, .. }
                | Op::Fsync { slot }
                | Op::Fdatasync { slot }
                | Op::Truncate { slot, .. } => (Some(slot), None, None),
                _ => (None, None, None),
            };
            if let Some(s) = uses
                && !open[s]
            {
                let when = if turn == 1 { " at the start of the loop's next turn" } else { "" };
                return Err(ctx.at(
                    &with(at, Seg::Key("fd".into())),
                    false,
                    format!("op `{}` uses fd slot {s}, which is not open here{when}", op.name()),
                    Some("open it first with `open` or `create` on that fd".into()),
                ));
            }
            if let Some(s) = opens {
                if open[s] {
                    return Err(ctx.at(
                        &with(at, Seg::Key("fd".into())),
                        false,
                        format!("op `{}` opens fd slot {s}, which is still open", op.name()),
                        Some("close it first".into()),
                    ));
                }
                open[s] = true;
            }
            if let Some(s) = closes {
                open[s] = false;
            }
        }
    }
    if !is_loop && let Some(s) = open.iter().position(|&o| o) {
        return Err(ctx.value(base, format!("the transaction leaves fd slot {s} open: close it at its end")));
    }
    Ok(())
}

/// The preallocated files must fit in the image they are built on (layout S: the shared
/// image; M: the first task's).
fn fits(ctx: &Ctx, w: &OpsWorkload, backing: &Backing) -> Result<(), ScenarioError> {
    let Backing::TmpfsLoop { image_size_m, image_size_s } = backing else { return Ok(()) };
    let image = (*image_size_m).min(*image_size_s);
    let (pre, all) = w.fileset_bytes();
    if pre > image as f64 {
        let parts: Vec<String> = w
            .spec
            .filesets
            .iter()
            .map(|f| format!("{} entries × {:.0} B mean × {}%", f.entries, f.size.mean(), f.prealloc_percent))
            .collect();
        return Err(ctx.value_help(
            &p("workload.fileset"),
            format!(
                "the preallocated files take {} ({}), more than the {} image",
                format_size_f(pre),
                parts.join(" + "),
                format_size(image)
            ),
            format!(
                "raise `backing.image_size` to at least {} (every entry at its size: {}), or lower `scale`",
                format_size_f(pre * 1.25),
                format_size_f(all)
            ),
        ));
    }
    Ok(())
}

fn format_size_f(b: f64) -> String {
    let mib = b / (1u64 << 20) as f64;
    if mib >= 1024.0 { format!("{:.1} GiB", mib / 1024.0) } else { format!("{mib:.1} MiB") }
}
