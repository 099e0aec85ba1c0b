//! `[workload]` of kind `steps` and the `[archive]` its untar steps unpack: each
//! step's op and options, paths kept beneath the filesystem under test.

use super::{disturbance_of, int_in, reject_foreign};
use std::path::Path;

use crate::scenario::diagnose::{Ctx, Seg, p, with};
use crate::scenario::error::did_you_mean;
use crate::scenario::file::{ArchiveFile, StepFile, WorkloadFile};
use crate::scenario::*;

pub(super) fn validate_archive(ctx: &Ctx, a: &ArchiveFile, base_dir: &Path) -> Result<ArchiveSpec, ScenarioError> {
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
                    "name an existing .tar.gz (`--archive FILE` is relative to the current directory, \
                     `archive.path` in the file or --set to the scenario file's directory), \
                     or use generate = \"linux-2.5.63\"",
                ));
            }
            (ArchiveSource::Path(full), file_name)
        }
    };
    let top = match &source {
        ArchiveSource::Generate { profile, .. } => profile.clone(),
        ArchiveSource::Path(full) => crate::scenario::archive::top_dir(full).map_err(|why| {
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

const OPS: &[&str] = &["rm_rf", "untar", "sync", "syncfs", "drop_caches", "mkdir", "exec"];

pub(super) fn validate_steps(
    ctx: &Ctx,
    w: &WorkloadFile,
    archive: Option<&ArchiveSpec>,
) -> Result<StepsSpec, ScenarioError> {
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
            ("job", w.job.is_some()),
            ("job_file", w.job_file.is_some()),
            ("numjobs", w.numjobs.is_some()),
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
        if !v.contains(crate::scenario::archive::TOP_PLACEHOLDER) {
            return Ok(v);
        }
        match archive {
            Some(a) => Ok(v.replace(crate::scenario::archive::TOP_PLACEHOLDER, &a.top)),
            None => Err(ctx.value_help(
                &field("path"),
                format!("`{}` needs an `[archive]` section", crate::scenario::archive::TOP_PLACEHOLDER),
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
