//! The job file fio runs for one cell: the scenario's job with, at the end of every
//! section fio runs as a job (as fio reads the headers: `scenario::fio_job`), what
//! fsbench sets there. fio takes the last value of an option in a
//! section, so these lines win over the job's own and over `[global]`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::scenario::fio_job::LineKind;
use crate::scenario::{FioNumjobs, FioSpec};

/// What one cell gives its job: where the tasks work, how many, and the swept option values.
#[derive(Debug, Clone)]
pub struct CellJob<'a> {
    /// One directory per task (fio's `directory=` takes them all; clones are spread over them).
    pub task_dirs: &'a [PathBuf],
    /// The cell's task count.
    pub tasks: u32,
    /// `[matrix] fio.*` values of the cell.
    pub sweeps: &'a BTreeMap<String, String>,
}

/// The job text for one cell, and for each of its lines the 0-based line of the
/// scenario's job it came from (`None` for lines fsbench added).
pub fn compose(spec: &FioSpec, cell: &CellJob) -> (String, Vec<Option<usize>>) {
    let mut text = String::new();
    let mut origin = Vec::new();
    let mut in_job_section = false;
    let ours = fsbench_lines(spec, cell);
    let close = |text: &mut String, origin: &mut Vec<Option<usize>>, in_job: bool| {
        if in_job {
            for l in &ours {
                text.push_str(l);
                text.push('\n');
                origin.push(None);
            }
        }
    };
    // Sections as fio reads them (`scenario::fio_job`): a section fio runs as a job gets
    // fsbench's lines whatever its name, `[ global]` included.
    for (read, line) in spec.job.lines().iter().zip(spec.job.text.lines()) {
        let i = read.line;
        if let LineKind::Header { global, .. } = read.kind {
            close(&mut text, &mut origin, in_job_section);
            in_job_section = !global;
        }
        text.push_str(line);
        text.push('\n');
        origin.push(Some(i));
    }
    close(&mut text, &mut origin, in_job_section);
    (text, origin)
}

/// The lines fsbench appends to every job section.
fn fsbench_lines(spec: &FioSpec, cell: &CellJob) -> Vec<String> {
    // `:` separates directories in fio; a colon inside a path is written `\:`.
    let dirs: Vec<String> = cell.task_dirs.iter().map(|d| d.display().to_string().replace(':', "\\:")).collect();
    let mut out = vec![
        "; set by fsbench for this cell".to_string(),
        format!("directory={}", dirs.join(":")),
        format!("runtime={}ms", spec.duration.as_millis()),
        "time_based=1".to_string(),
    ];
    if let Some(w) = spec.warmup {
        out.push(format!("ramp_time={}ms", w.as_millis()));
    }
    if spec.numjobs == FioNumjobs::Tasks {
        out.push(format!("numjobs={}", cell.tasks));
    }
    for (k, v) in cell.sweeps {
        out.push(format!("{k}={v}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::FioJob;
    use std::time::Duration;

    #[test]
    fn fsbench_lines_close_every_job_section_and_map_back() {
        let spec = FioSpec {
            job: FioJob {
                text: "[global]\nioengine=psync\n[a]\nbs=4k\n[b]\nrw=read\n".into(),
                origin: "s.toml".into(),
                key: "workload.job".into(),
                first_line: 1,
                first_column: 1,
            },
            duration: Duration::from_millis(1500),
            warmup: None,
            repetitions: 1,
            numjobs: FioNumjobs::Tasks,
            disturbance: None,
            max_reruns: 0,
            pair_member: false,
        };
        let dirs = vec![PathBuf::from("/m/0"), PathBuf::from("/m/a:b")];
        let sweeps = BTreeMap::from([("bs".to_string(), "64k".to_string())]);
        let (text, origin) = compose(&spec, &CellJob { task_dirs: &dirs, tasks: 2, sweeps: &sweeps });
        let expected_a = "[a]\nbs=4k\n; set by fsbench for this cell\ndirectory=/m/0:/m/a\\:b\nruntime=1500ms\ntime_based=1\nnumjobs=2\nbs=64k\n[b]";
        assert!(text.contains(expected_a), "{text}");
        assert!(text.starts_with("[global]\nioengine=psync\n[a]"), "{text}");
        assert!(text.ends_with("rw=read\n; set by fsbench for this cell\ndirectory=/m/0:/m/a\\:b\nruntime=1500ms\ntime_based=1\nnumjobs=2\nbs=64k\n"));
        assert_eq!(text.lines().count(), origin.len());
        assert_eq!(origin[3], Some(3));
        assert_eq!(origin[4], None);
    }

    /// Security review, round three: `[ global]` is a job to fio, and ran without
    /// fsbench's `runtime` because compose trimmed the header. Sections are now closed as
    /// fio reads them (validation refuses these spellings before; compose agrees with fio anyway).
    #[test]
    fn every_section_fio_runs_as_a_job_gets_fsbenchs_lines() {
        let spec = |text: &str| FioSpec {
            job: FioJob {
                text: text.into(),
                origin: "s.toml".into(),
                key: "workload.job".into(),
                first_line: 1,
                first_column: 1,
            },
            duration: Duration::from_secs(1),
            warmup: None,
            repetitions: 1,
            numjobs: FioNumjobs::Job,
            disturbance: None,
            max_reruns: 0,
            pair_member: false,
        };
        let dirs = vec![PathBuf::from("/m/0")];
        let cell = CellJob { task_dirs: &dirs, tasks: 1, sweeps: &BTreeMap::new() };
        let (text, _) = compose(&spec("[ global]\nbs=4k\n[globalx]\nsize=1m\n  [w] ; c\nrw=read\n"), &cell);
        let runtimes: Vec<usize> =
            text.lines().enumerate().filter(|(_, l)| *l == "runtime=1000ms").map(|(i, _)| i).collect();
        // After ` global` (a job) and after `w`; not after `globalx` (global to fio).
        assert_eq!(runtimes.len(), 2, "{text}");
        assert!(text.starts_with("[ global]\nbs=4k\n; set by fsbench"), "{text}");
        assert!(text.contains("[globalx]\nsize=1m\n  [w] ; c"), "{text}");
    }
}
