//! fio's own judgement of a scenario's job, before anything is provisioned: every
//! sweep combination composed and given to `fio --parse-only`, and an option fio
//! refuses located back at the scenario line (or job-file line, or sweep value).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use super::compose::{CellJob, compose};
use crate::scenario::fio_job::LineKind;
use crate::scenario::{FioJob, Scenario, ScenarioError, Workload};

/// The fio program fsbench runs.
pub const FIO: &str = "fio";

/// `fio --version` (`fio-3.33`), or `None` when fio is not installed.
pub fn fio_version() -> Option<String> {
    let out = crate::signals::default_in_child(&mut Command::new(FIO)).arg("--version").output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Check a fio scenario's job with `fio --parse-only` for every combination of its
/// sweeps. Without fio installed there is nothing to ask: the cells skip with the remedy.
pub fn parse_only(s: &Scenario) -> Result<(), ScenarioError> {
    let Workload::Fio(spec) = &s.workload else { return Ok(()) };
    if fio_version().is_none() {
        return Ok(());
    }
    let tasks = s.matrix.tasks.iter().copied().max().unwrap_or(1);
    let dirs: Vec<PathBuf> = (0..tasks).map(|t| PathBuf::from(format!("/fsbench-parse-check/{t}"))).collect();
    let mut sweeps = vec![BTreeMap::new()];
    for axis in &s.matrix.fio {
        sweeps = sweeps
            .into_iter()
            .flat_map(|done: BTreeMap<String, String>| {
                axis.values.iter().map(move |v| {
                    let mut next = done.clone();
                    next.insert(axis.option.clone(), v.clone());
                    next
                })
            })
            .collect();
    }
    let dir = tempfile::tempdir().map_err(|e| io_error(s, e))?;
    let file = dir.path().join("job.fio");
    for sweep in &sweeps {
        let (text, origin) = compose(spec, &CellJob { task_dirs: &dirs, tasks, sweeps: sweep });
        std::fs::write(&file, &text).map_err(|e| io_error(s, e))?;
        let mut cmd = Command::new(FIO);
        crate::signals::default_in_child(&mut cmd).arg("--parse-only").arg(&file);
        // Parsing writes nothing: confined with no writable directory at all.
        super::confine::confine(&mut cmd, &[]).map_err(|e| io_error(s, e))?;
        let out = cmd.output().map_err(|e| io_error(s, e))?;
        if out.status.success() {
            continue;
        }
        // A hangup or Ctrl-C that reached fio too: no refusal of fio's to locate.
        if crate::signals::interrupted() {
            return Err(io_error(s, std::io::Error::new(std::io::ErrorKind::Interrupted, "interrupted")));
        }
        let said = format!("{}{}", String::from_utf8_lossy(&out.stderr), String::from_utf8_lossy(&out.stdout));
        return Err(locate(s, &text, &origin, sweep, &said));
    }
    Ok(())
}

/// The option fio complained about (`Bad option <bogus=3>`, `failed parsing rw=randwite`).
fn refused_option(said: &str) -> Option<&str> {
    said.lines().find_map(|l| {
        l.find("Bad option <")
            .map(|i| l[i + "Bad option <".len()..].trim_end_matches('>'))
            .or_else(|| l.find("failed parsing ").map(|i| l[i + "failed parsing ".len()..].trim()))
    })
}

/// fio's refusal as a scenario error at the line it came from.
fn locate(
    s: &Scenario,
    text: &str,
    origin: &[Option<usize>],
    sweep: &BTreeMap<String, String>,
    said: &str,
) -> ScenarioError {
    let Workload::Fio(spec) = &s.workload else { unreachable!("checked by parse_only") };
    let summary: Vec<&str> = said.lines().map(str::trim).filter(|l| !l.is_empty()).take(4).collect();
    let help = Some(format!("fio says: {}", summary.join(" / ")));
    let Some(option) = refused_option(said) else {
        return ScenarioError {
            origin: s.source.origin.clone(),
            line: None,
            column: None,
            key: Some(spec.job.key.clone()),
            message: "fio refuses the job".into(),
            help,
            snippet: None,
        };
    };
    let (name, value) = match option.split_once('=') {
        Some((n, v)) => (n.trim(), Some(v.trim())),
        None => (option.trim(), None),
    };
    // The composed line fio quoted, read as fio reads it (a comment after it, blanks around
    // `=`); the last one of that option wins in fio, so the last such line.
    let composed = FioJob { text: text.to_string(), ..spec.job.clone() };
    let line = composed
        .lines()
        .iter()
        .rev()
        .find(|l| matches!(&l.kind, LineKind::Option { name: n, value: v } if n == name && v.as_deref() == value))
        .map(|l| l.line);
    let refused = format!("fio refuses `{option}`");
    if let Some(job_line) = line.and_then(|i| origin.get(i).copied().flatten()) {
        return spec.job.error_at(job_line, refused, help);
    }
    // A line fsbench added: a sweep's value, when the cell has an axis of that option.
    let axis = s.matrix.fio.iter().find(|a| a.option == name);
    let index = axis.zip(sweep.get(name)).and_then(|(a, v)| a.values.iter().position(|x| x == v));
    match axis.zip(index) {
        Some((a, index)) => {
            let (line, column) =
                Some(a.at[index]).filter(|(l, _)| *l > 0).map_or((None, None), |(l, c)| (Some(l), Some(c)));
            ScenarioError {
                origin: s.source.origin.clone(),
                line,
                column,
                key: Some(format!("matrix.fio.{name}[{index}]")),
                message: refused,
                help,
                snippet: None,
            }
        }
        // Neither: the job's line of that option if fio re-spelled it, else the job as a whole.
        None => match spec.job.line_of(option) {
            Some(job_line) => spec.job.error_at(job_line, refused, help),
            None => ScenarioError {
                origin: s.source.origin.clone(),
                line: None,
                column: None,
                key: Some(spec.job.key.clone()),
                message: refused,
                help,
                snippet: None,
            },
        },
    }
}

fn io_error(s: &Scenario, e: std::io::Error) -> ScenarioError {
    ScenarioError {
        origin: s.source.origin.clone(),
        line: None,
        column: None,
        key: None,
        message: format!("cannot ask fio to check the job: {e}"),
        help: None,
        snippet: None,
    }
}

/// Why a fio cell cannot run without fio, and the remedy, as a missing mkfs says it.
pub fn fio_missing() -> crate::model::SkipReason {
    crate::model::SkipReason {
        reason: format!("`{FIO}` is not installed (fio workloads run it)"),
        remedy: Some("apt-get install fio".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "schema = 1\nname = \"f\"\n[matrix]\nfs = [\"ext4\"]\nfio.bs = [\"4k\", \"8k\"]\n[backing]\nkind = \"dir\"\n[workload]\nkind = \"fio\"\njob = \"\"\"\n[w]\nrw=randwrite\nsize=1m\n\"\"\"\n";

    #[test]
    fn refused_options_are_read_from_fios_messages() {
        assert_eq!(refused_option("Bad option <bogus=3>\nDid you mean bs?\nfio: job a dropped"), Some("bogus=3"));
        assert_eq!(
            refused_option("        valid values: read\nfio: failed parsing rw=randwite\n"),
            Some("rw=randwite")
        );
        assert_eq!(refused_option("fio: something else"), None);
    }

    #[test]
    fn fio_refusals_point_at_the_scenario_line() {
        if fio_version().is_none() {
            eprintln!("skipped: fio is not installed (apt-get install fio)");
            return;
        }
        let ok = crate::scenario::parse_str(BASE, "f.toml").unwrap();
        parse_only(&ok).unwrap();
        let bad = crate::scenario::parse_str(&BASE.replace("size=1m", "size=1m\nbogus=3"), "f.toml").unwrap();
        let e = parse_only(&bad).unwrap_err();
        assert_eq!((e.origin.as_str(), e.line, e.column), ("f.toml", Some(14), Some(1)), "{e}");
        assert!(e.message.contains("`bogus=3`"), "{e}");
        let typo = crate::scenario::parse_str(&BASE.replace("rw=randwrite", "rw=randwite"), "f.toml").unwrap();
        assert_eq!(parse_only(&typo).unwrap_err().line, Some(12));
        // Security review, round three: an inline option with a comment after it was put on
        // a sweep key that does not exist (`matrix.fio.bogus[0]`).
        let commented =
            crate::scenario::parse_str(&BASE.replace("size=1m", "size=1m\nbogus = 3 ; why"), "f.toml").unwrap();
        let e = parse_only(&commented).unwrap_err();
        assert_eq!((e.line, e.key.as_deref()), (Some(14), Some("workload.job")), "{e}");
        let text = BASE.replace("fio.bs = [\"4k\", \"8k\"]", "fio.rw = [\"write\", \"wrte\"]");
        let e = parse_only(&crate::scenario::parse_str(&text, "f.toml").unwrap()).unwrap_err();
        assert_eq!((e.line, e.column, e.key.as_deref()), (Some(5), Some(20), Some("matrix.fio.rw[1]")), "{e}");
    }
}
