//! `[workload]` of kind `fio`: the job (inline, or a file beneath the scenario's
//! directory), the options fsbench sets itself, repetitions and `numjobs`.
//!
//! fio judges its own options (`fio --parse-only`, run before anything is provisioned
//! by `workload::fio::check`); this pass only refuses what would fight fsbench: a job
//! that chooses its own directory, run time, or files outside the cell.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use super::latfs::duration_in;
use super::{disturbance_of, int_in, reject_foreign};
use crate::scenario::diagnose::{Ctx, p};
use crate::scenario::error::did_you_mean;
use crate::scenario::file::WorkloadFile;
use crate::scenario::fio_job::{GLOBAL, LineKind, shown_section};
use crate::scenario::*;

/// Options fsbench sets in every job section (from the cell and `[workload]`), which the
/// job and the sweeps may therefore not set.
pub const SET_BY_FSBENCH: &[(&str, &str)] = &[
    ("directory", "fsbench sets `directory` to the cell's task directories"),
    ("runtime", "fsbench sets `runtime` from `workload.duration`"),
    ("time_based", "fsbench sets `time_based` (the run lasts `workload.duration`)"),
    ("ramp_time", "fsbench sets `ramp_time` from `workload.warmup`"),
];

/// Largest job file read (a job is a few hundred bytes; this bounds a hostile one).
const MAX_JOB_BYTES: u64 = 1 << 20;

pub(super) fn validate_fio(ctx: &Ctx, w: &WorkloadFile, base_dir: &Path) -> Result<FioSpec, ScenarioError> {
    reject_foreign(
        ctx,
        "fio",
        &[
            ("per_task_uid", w.per_task_uid.is_some()),
            ("quota_refs", w.quota_refs.is_some()),
            ("open_for_write", w.open_for_write.is_some()),
            ("rounds", w.rounds.is_some()),
            ("pin", w.pin.is_some()),
            ("latency", w.latency.is_some()),
            ("iterations", w.iterations.is_some()),
            ("steps", w.steps.is_some()),
        ],
    )?;
    let job = match (&w.job, &w.job_file) {
        (Some(text), None) => inline_job(ctx, text),
        (None, Some(file)) => job_file(ctx, file, base_dir)?,
        (Some(_), Some(_)) => {
            return Err(ctx.at(
                &p("workload.job_file"),
                true,
                "`workload.job` and `workload.job_file` exclude each other",
                Some("give the job inline or as a file, not both".into()),
            ));
        }
        (None, None) => {
            return Err(ctx.at(
                &p("workload"),
                true,
                "a fio workload needs `workload.job` or `workload.job_file`",
                Some("e.g. job = \"\"\"[randwrite]\\nrw=randwrite\\nbs=4k\\nsize=64m\"\"\"".into()),
            ));
        }
    };
    let numjobs = match w.numjobs.as_deref() {
        None | Some("job") => FioNumjobs::Job,
        Some("tasks") => FioNumjobs::Tasks,
        Some(other) => {
            return Err(ctx.value_help(
                &p("workload.numjobs"),
                format!("unknown numjobs source `{other}`"),
                did_you_mean(other, &["tasks", "job"]).unwrap_or_else(|| "use `tasks` or `job`".into()),
            ));
        }
    };
    check_job(&job, numjobs)?;
    let repetitions = match &w.repetitions {
        None => 3,
        Some(toml::Value::Integer(n)) => int_in(ctx, "workload.repetitions", Some(*n), 3, 1, 1000)?,
        Some(other) => {
            return Err(ctx.value_help(
                &p("workload.repetitions"),
                format!("expected a count, found {}", other.type_str()),
                "fio workloads take a fixed count: `repetitions = 3`",
            ));
        }
    };
    let duration = duration_in(ctx, "workload.duration", &w.duration, "10s", false)?;
    if duration < Duration::from_secs(1) {
        return Err(ctx.value(&p("workload.duration"), "a fio run needs at least `1s`"));
    }
    let warmup = match &w.warmup {
        None => None,
        Some(_) => Some(duration_in(ctx, "workload.warmup", &w.warmup, "0s", true)?).filter(|d| !d.is_zero()),
    };
    Ok(FioSpec {
        job,
        duration,
        warmup,
        repetitions,
        numjobs,
        disturbance: disturbance_of(ctx, w)?,
        // lat_fs's key, default and cap: one rerun rule (`workload::reruns`).
        max_reruns: int_in(ctx, "workload.max_reruns", w.max_reruns, 3, 0, 1000)?,
        pair_member: false,
    })
}

/// The inline job, positioned at its first character in the scenario: a multi-line
/// string's first newline is not part of the text (TOML trims it).
fn inline_job(ctx: &Ctx, text: &str) -> FioJob {
    let (first_line, first_column) = match ctx.value_start(&p("workload.job")) {
        Some((l, c, rest)) => {
            let quote = if rest.starts_with("\"\"\"") || rest.starts_with("'''") { 3 } else { 1 };
            let after = &rest[quote.min(rest.len())..];
            if quote == 3 && (after.starts_with('\n') || after.starts_with("\r\n")) {
                (l + 1, 1)
            } else {
                (l, c + quote)
            }
        }
        None => (1, 1),
    };
    FioJob {
        text: text.to_string(),
        origin: ctx.origin().to_string(),
        key: "workload.job".into(),
        first_line,
        first_column,
    }
}

/// The job file `file`, read beneath `base_dir` without following any link.
fn job_file(ctx: &Ctx, file: &str, base_dir: &Path) -> Result<FioJob, ScenarioError> {
    let key = p("workload.job_file");
    let help = "name a file in the scenario's directory or below it (no `..`, no absolute path, no symbolic link)";
    let rel = std::ffi::CString::new(file).map_err(|_| ctx.value(&key, "the file name contains NUL"))?;
    let read = || -> std::io::Result<String> {
        let dir = crate::beneath::open_dir(if base_dir.as_os_str().is_empty() { Path::new(".") } else { base_dir })?;
        let fd = crate::beneath::open_beneath(&dir, &rel, libc::O_RDONLY, 0, crate::beneath::Resolver::Auto)?;
        let mut text = String::new();
        // One byte past the bound tells a file that is too big from one that just fits.
        std::fs::File::from(fd).take(MAX_JOB_BYTES + 1).read_to_string(&mut text)?;
        if text.len() as u64 > MAX_JOB_BYTES {
            return Err(std::io::Error::from_raw_os_error(libc::EFBIG));
        }
        Ok(text)
    };
    let text = read().map_err(|e| {
        let why = match e.raw_os_error() {
            Some(libc::EFBIG) => {
                format!("is larger than {} KiB (a fio job is a few hundred bytes)", MAX_JOB_BYTES >> 10)
            }
            Some(libc::EINVAL) | Some(libc::EXDEV) => "is not beneath the scenario's directory".to_string(),
            Some(libc::ELOOP) => "is or passes through a symbolic link".to_string(),
            _ => format!("cannot be read: {e}"),
        };
        ctx.value_help(&key, format!("job file `{file}` {why}"), help)
    })?;
    Ok(FioJob {
        text,
        origin: base_dir.join(file).display().to_string(),
        key: "workload.job_file".into(),
        first_line: 1,
        first_column: 1,
    })
}

/// Refuse a job without a job section, lines fio would read otherwise than fsbench,
/// section names that are not plain names, includes, and options that fsbench sets or
/// that reach outside the cell. Every error names the section and the line.
fn check_job(job: &FioJob, numjobs: FioNumjobs) -> Result<(), ScenarioError> {
    let sections = job.sections();
    for l in job.lines() {
        let within = match l.section.and_then(|at| sections.iter().find(|s| s.line == at)) {
            Some(s) => format!("section {}", shown_section(&s.name)),
            None => "the job".to_string(),
        };
        match &l.kind {
            LineKind::Skipped => {}
            LineKind::Invalid(why) => {
                return Err(job.error_at(
                    l.line,
                    format!("{within}, line {}: {why}", l.line + 1),
                    Some("fio reads job files line by line: start with a `[name]` header, one option per line".into()),
                ));
            }
            LineKind::Header { name, global } => check_section_name(job, l.line, name, *global)?,
            LineKind::Include { file } => {
                return Err(job.error_at(
                    l.line,
                    format!("{within} includes `{}`", crate::text::escape_control(file)),
                    Some("fsbench does not follow fio's `include`: copy the included options into the job".into()),
                ));
            }
            LineKind::Option { name, value } => check_option(job, l.line, &within, name, value.as_deref(), numjobs)?,
        }
    }
    if !sections.iter().any(|s| !s.global) {
        return Err(job.error_at(
            0,
            "the fio job has no job section",
            Some("start one with a header such as `[randwrite]`".into()),
        ));
    }
    Ok(())
}

/// A section name is data: fio names the job's files `<directory>/<name>.<job>.<file>`,
/// so only a plain name (A-Z a-z 0-9 . _ - +, not starting with `.`) keeps them in the
/// cell; a global section is spelled exactly `[global]` (fio takes any name that starts
/// with `global` for one).
fn check_section_name(job: &FioJob, line: usize, name: &str, global: bool) -> Result<(), ScenarioError> {
    let shown = shown_section(name);
    if global && name != GLOBAL {
        return Err(job.error_at(
            line,
            format!("section {shown}: fio takes every name that starts with `global` for its global section"),
            Some("write `[global]` for the global section, or give the job another name".into()),
        ));
    }
    if !global && !crate::text::is_plain_name(name) {
        return Err(job.error_at(
            line,
            format!("section {shown}: a job's name must be a plain name (fio names its files `<directory>/<name>.<job>.<file>`)"),
            Some("use letters, digits, `.`, `_`, `-`, `+`, not starting with `.`, up to 128 characters".into()),
        ));
    }
    Ok(())
}

/// Why a swept `option=value` (appended to every job section) would reach outside the
/// cell, judged as the same line in the job is: `name` not a plain name, a `filename` with
/// a `..` component (sweep values have no `/`, but `..` and `:` are allowed characters).
pub(super) fn sweep_refusal(option: &str, value: &str) -> Option<String> {
    match option {
        "name" if !crate::text::is_plain_name(value) => {
            Some(format!("`name={value}` is not a plain name (fio names the job's files after it)"))
        }
        "filename" | "filename_format" if value.split(':').any(|f| f == "..") => {
            Some(format!("`{option}={value}` names a file outside the cell"))
        }
        _ => None,
    }
}

/// One option line of section `within`.
fn check_option(
    job: &FioJob,
    line: usize,
    within: &str,
    name: &str,
    value: Option<&str>,
    numjobs: FioNumjobs,
) -> Result<(), ScenarioError> {
    if let Some((_, why)) = SET_BY_FSBENCH.iter().find(|(n, _)| *n == name) {
        return Err(job.error_at(line, format!("{within} sets `{name}`"), Some(format!("remove it: {why}"))));
    }
    if name == "numjobs" && numjobs == FioNumjobs::Tasks {
        return Err(job.error_at(
            line,
            format!("{within} sets `numjobs`, but `workload.numjobs = \"tasks\"` sets it from the cell"),
            Some("remove one of the two".into()),
        ));
    }
    let value = value.unwrap_or("");
    // `name=` renames the job, and so its files, as a header does.
    if name == "name" && !crate::text::is_plain_name(value) {
        return Err(job.error_at(
            line,
            format!(
                "{within}: `name={}` is not a plain name (fio names the job's files after it)",
                crate::text::escape_control(value)
            ),
            Some("use letters, digits, `.`, `_`, `-`, `+`, not starting with `.`".into()),
        ));
    }
    if name == "filename" || name == "filename_format" {
        // fio takes `:` between several files; `\:` is a colon inside a name.
        if value.replace("\\:", "").split(':').any(|f| f.starts_with('/') || f.split('/').any(|c| c == "..")) {
            return Err(job.error_at(
                line,
                format!("{within}: `{name}={}` names a file outside the cell", crate::text::escape_control(value)),
                Some("use a relative name: fio places it in the task's directory".into()),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::scenario::*;

    const BASE: &str =
        "schema = 1\nname = \"f\"\n[matrix]\nfs = [\"ext4\"]\n[backing]\nkind = \"dir\"\n[workload]\nkind = \"fio\"\n";

    #[test]
    fn an_inline_job_knows_where_its_lines_are() {
        let text = format!("{BASE}job = \"\"\"\n[w]\nrw=randwrite\nbs=4k\n\"\"\"\nnumjobs = \"tasks\"\n");
        let s = parse_str(&text, "f.toml").unwrap();
        let Workload::Fio(f) = &s.workload else { panic!() };
        assert_eq!((f.repetitions, f.duration, f.numjobs), (3, std::time::Duration::from_secs(10), FioNumjobs::Tasks));
        assert_eq!(f.job.position(2), (12, 1));
        assert_eq!(text.lines().nth(11), Some("bs=4k"));
    }

    #[test]
    fn a_job_that_sets_what_fsbench_sets_points_at_the_line() {
        let text = format!("{BASE}job = \"\"\"\n[w]\nrw=randwrite\ndirectory=/etc\n\"\"\"\n");
        let e = parse_str(&text, "f.toml").unwrap_err();
        assert_eq!((e.line, e.column), (Some(12), Some(1)), "{e}");
        assert!(e.message.contains("`directory`"), "{e}");
        let text = format!("{BASE}job = \"[w]\\nfilename=../../etc/passwd\"\n");
        let e = parse_str(&text, "f.toml").unwrap_err();
        assert!(e.message.contains("outside the cell"), "{e}");
    }

    /// Security review, round three: a section name is a path to fio (its files are
    /// `<directory>/<name>.<job>.<file>`), and `[ global]` is a job to fio. Each header is
    /// refused at its line with the section named.
    #[test]
    fn section_names_are_plain_names_and_global_is_spelled_as_fio_reads_it() {
        for (job, line, named) in [
            ("[../../../../tmp/NAME]\nrw=write", 10, "`[../../../../tmp/NAME]`"),
            ("[w]\nrw=write\n[a/b]", 12, "`[a/b]`"),
            ("[ global]\nrw=write", 10, "`[ global]`"),
            ("[globalx]\nrw=write\n[w]", 10, "`[globalx]`"),
            ("[w x]\nrw=write", 10, "`[w x]`"),
            ("[.hidden]\nrw=write", 10, "`[.hidden]`"),
            ("[w\\u001b[2J]\nrw=write", 10, "line 1: the line contains the control character"),
            ("[w]\nname=../x", 11, "`name=../x`"),
            ("[w]\ninclude /etc/fio.fio", 11, "includes `/etc/fio.fio`"),
            ("[w]\nincludex", 11, "section `[w]` includes"),
        ] {
            let text = format!("{BASE}job = \"\"\"\n{job}\n\"\"\"\n");
            let e = parse_str(&text, "f.toml").unwrap_err();
            assert_eq!(e.line, Some(line), "{job}: {e}");
            assert!(e.message.contains(named), "{job}: {e}");
            assert!(!e.to_string().contains('\u{1b}'), "{job}: {e:?}");
        }
        let text = format!("{BASE}job = '''\n[global]\nbs=4k\n[w.1_a-b+c]\nrw=write\n'''\n");
        parse_str(&text, "f.toml").unwrap();
    }

    #[test]
    fn job_file_is_read_beneath_the_scenario_without_links() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("w.fio"), "[w]\nrw=write\nbogus\n").unwrap();
        std::os::unix::fs::symlink("w.fio", dir.path().join("link.fio")).unwrap();
        let text = format!("{BASE}job_file = \"w.fio\"\n");
        let s = parse_overridden(&text, "f.toml", dir.path(), &[]).unwrap();
        let Workload::Fio(f) = &s.workload else { panic!() };
        assert!(
            f.job
                .error_at(2, "x", None)
                .to_string()
                .starts_with(&format!("{}:3:1: x", dir.path().join("w.fio").display()))
        );
        // A file too big is refused, not read truncated; one that just fits is read whole.
        // (Comment lines of 100 bytes: fio reads a line of more than 8 KiB as several, refused.)
        let mut fits = String::from("[w]\nrw=write\n");
        while fits.len() + 101 < super::MAX_JOB_BYTES as usize {
            fits.push_str(&format!("{}\n", "#".repeat(99)));
        }
        fits.push_str(&"#".repeat(super::MAX_JOB_BYTES as usize - 1 - fits.len()));
        std::fs::write(dir.path().join("fits.fio"), format!("{fits}\n")).unwrap();
        let s = parse_overridden(&text.replace("w.fio", "fits.fio"), "f.toml", dir.path(), &[]).unwrap();
        let Workload::Fio(f) = &s.workload else { panic!() };
        assert_eq!(f.job.text.len() as u64, super::MAX_JOB_BYTES);
        std::fs::write(dir.path().join("big.fio"), format!("{fits}\n\n")).unwrap();
        for (name, why) in [
            ("link.fio", "symbolic link"),
            ("../w.fio", "not beneath"),
            ("/etc/passwd", "not beneath"),
            ("big.fio", "job file `big.fio` is larger than 1024 KiB"),
        ] {
            let e = parse_overridden(&text.replace("w.fio", name), "f.toml", dir.path(), &[]).unwrap_err();
            assert!(e.message.contains(why), "{name}: {e}");
        }
    }

    #[test]
    fn sweeps_become_cells() {
        let text = format!("{BASE}job = \"[w]\\nrw=randwrite\"\n")
            .replace("fs = [\"ext4\"]", "fs = [\"ext4\"]\nfio.bs = [\"4k\", \"64k\"]\nfio.iodepth = [1, 16]");
        let s = parse_str(&text, "f.toml").unwrap();
        let ids: Vec<String> = crate::plan::expand(&s).cells.iter().map(|c| c.id()).collect();
        assert_eq!(
            ids,
            [
                "ext4-S-qoff-t1-bs=4k-iodepth=1",
                "ext4-S-qoff-t1-bs=4k-iodepth=16",
                "ext4-S-qoff-t1-bs=64k-iodepth=1",
                "ext4-S-qoff-t1-bs=64k-iodepth=16"
            ]
        );
        let e = parse_str(&text.replace("fio.bs", "fio.directory"), "f.toml").unwrap_err();
        assert!(e.message.contains("`directory`"), "{e}");
        for (axis, value) in [("fio.name", "..."), ("fio.filename", "a:..")] {
            let e = parse_str(
                &text.replace("fio.bs = [\"4k\", \"64k\"]", &format!("{axis} = [\"w\", \"{value}\"]")),
                "f.toml",
            )
            .unwrap_err();
            assert!(e.message.contains("outside the cell") || e.message.contains("not a plain name"), "{e}");
            assert_eq!(e.key.as_deref(), Some(&*format!("matrix.{axis}[1]")), "{e}");
        }
        let e = parse_str(&text.replace("\"64k\"", "\"64 k\""), "f.toml").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("matrix.fio.bs[1]"), "{e}");
        let lat = text.replace("kind = \"fio\"", "kind = \"lat_fs\"").replace("job = \"[w]\\nrw=randwrite\"\n", "");
        let e = parse_str(&lat, "f.toml").unwrap_err();
        assert!(e.message.contains("only for fio workloads"), "{e}");
    }
}
