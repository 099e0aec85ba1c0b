//! `[workload]` of kind `lat_fs`: the loops' options, windows, repetitions (fixed or
//! adaptive) and noise handling.

use super::{disturbance_of, int_in, reject_foreign};
use crate::scenario::diagnose::{Ctx, Seg, p, with};
use crate::scenario::error::did_you_mean;
use crate::scenario::file::WorkloadFile;
use crate::scenario::units::{parse_duration, parse_percent};
use crate::scenario::*;

pub(super) fn validate_latfs(ctx: &Ctx, w: &WorkloadFile) -> Result<LatfsSpec, ScenarioError> {
    reject_foreign(
        ctx,
        "lat_fs",
        &[
            ("iterations", w.iterations.is_some()),
            ("steps", w.steps.is_some()),
            ("job", w.job.is_some()),
            ("job_file", w.job_file.is_some()),
            ("numjobs", w.numjobs.is_some()),
        ],
    )?;
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
            pair_member: false,
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

pub(super) fn duration_in(
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
