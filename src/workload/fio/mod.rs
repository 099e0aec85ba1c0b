//! The fio workload: the scenario's job composed for each cell ([`compose`]), checked
//! by fio before anything is provisioned ([`check`]), run once per repetition as a
//! contained child writing its JSON to a file, and that file read into typed figures
//! ([`json`]).

// A ScenarioError is built at most once per invocation, as in `scenario`: boxing it would buy nothing.
pub mod answers;
#[allow(clippy::result_large_err)]
pub mod check;
pub mod compose;
pub mod confine;
pub mod json;
pub mod need;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::model::{FioRepetition, FioResult};
use crate::monitor::Watch;
use crate::scenario::FioSpec;
use crate::workload::child::{self, Waited};
use compose::{CellJob, compose};

pub use check::{FIO, fio_version, parse_only};

/// What a fio cell runs: the spec, the cell's task directories, and where fio's files go.
pub struct FioRun<'a> {
    /// The scenario's fio options.
    pub spec: &'a FioSpec,
    /// One directory per task on the filesystems under test.
    pub task_dirs: &'a [PathBuf],
    /// The cell's task count.
    pub tasks: u32,
    /// The cell's sweep values.
    pub sweeps: &'a BTreeMap<String, String>,
    /// A directory of the run's work directory for this cell: the job file, and per
    /// repetition fio's JSON output and its stderr. Not on the filesystem under test.
    pub out_dir: &'a Path,
}

/// Why a fio cell failed.
#[derive(Debug, thiserror::Error)]
pub enum FioError {
    /// fio could not be started, or its files not written or read.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
    /// fio exited with a failure.
    #[error("{version} exited with status {status} in repetition {repetition}: {stderr}")]
    Failed {
        /// fio's version.
        version: String,
        /// Exit status (or 128 + signal).
        status: i32,
        /// 1-based repetition.
        repetition: u32,
        /// The end of what fio printed to stderr.
        stderr: String,
    },
    /// fio's output file could not be read as fio's JSON.
    #[error("repetition {repetition}: {source}")]
    Output {
        /// 1-based repetition.
        repetition: u32,
        /// What was wrong with it.
        source: json::FioJsonError,
    },
    /// SIGINT or SIGTERM arrived: fio was stopped.
    #[error("interrupted: fio was stopped")]
    Stopped,
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> FioError {
    let what = what.into();
    move |source| FioError::Io { what, source }
}

/// Run the cell's repetitions, reading `watch`'s counters around each and judging
/// each for disturbance; `starting(i, n)` before repetition `i` (from 1) of at most `n`.
///
/// A disturbed repetition is kept (marked) and replaced by another by lat_fs's rerun rule
/// ([`crate::workload::reruns`]: at most `workload.max_reruns` per cell, after waiting for
/// a quiet moment; a pair's member reruns nothing), until `repetitions` counted ones are
/// taken or the budget is spent.
pub fn run_monitored(run: &FioRun, watch: Option<&Watch>, starting: &dyn Fn(u32, u32)) -> Result<FioResult, FioError> {
    let version = fio_version().unwrap_or_else(|| "fio (version unknown)".into());
    std::fs::create_dir_all(run.out_dir).map_err(io(format!("cannot create {}", run.out_dir.display())))?;
    let (job, _) = compose(run.spec, &CellJob { task_dirs: run.task_dirs, tasks: run.tasks, sweeps: run.sweeps });
    let job_file = run.out_dir.join("job.fio");
    std::fs::write(&job_file, &job).map_err(io(format!("cannot write {}", job_file.display())))?;
    let n = run.spec.repetitions;
    let mut result = FioResult { job, ..Default::default() };
    let mut reruns = crate::workload::reruns::Reruns {
        max: run.spec.max_reruns,
        done: 0,
        threshold: run.spec.disturbance,
        needed_cpus: run.tasks.max(1),
        pair_member: run.spec.pair_member,
    };
    let mut counted = 0;
    while counted < n {
        if crate::signals::interrupted() {
            return Err(FioError::Stopped);
        }
        let i = result.repetitions.len() as u32;
        starting(i + 1, n + run.spec.max_reruns);
        let window = run.spec.disturbance.map(|t| (t, crate::host::cpu::Window::start(std::process::id())));
        let before = watch.map(Watch::snapshot);
        let output = run_once(run, &job_file, i + 1, &version)?;
        let counters = watch.zip(before).map(|(w, b)| b.delta(&w.snapshot()));
        let needed = output.jobs.len().max(1) as u32;
        result.fio_version = output.version;
        result.repetitions.push(FioRepetition {
            index: i,
            total: output.total,
            jobs: output.jobs,
            disturbance: window.and_then(|(t, w)| w.finish(t, needed)),
            counters,
            round: 0,
        });
        let disturbed = result.repetitions.last().is_some_and(|x| !x.counts());
        match reruns.after(disturbed) {
            crate::workload::reruns::Next::Counted => counted += 1,
            crate::workload::reruns::Next::Rerun => {}
            crate::workload::reruns::Next::Spent => break,
        }
    }
    result.reruns = reruns.done;
    summarise(&mut result);
    Ok(result)
}

/// A fio cell as one member of a pair (`[compare] arms`): the mean IOPS of its
/// repetitions, disturbed ones included, with the load they saw, as a lat_fs member is the
/// mean of its loops; a failed or skipped cell, or one without fio figures, voids its pair.
pub fn member_value(r: &crate::model::CellResult) -> Result<crate::workload::kind::Member, String> {
    r.measured()?;
    let Some(f) = &r.fio else { return Err("no fio figures".into()) };
    let value = reps_value(f.repetitions.iter())?;
    let load = crate::host::pair_load::MemberLoad::of(f.repetitions.iter().filter_map(|x| x.disturbance.as_ref()));
    Ok(crate::workload::kind::Member { value, loads: vec![load] })
}

/// The value of round `round` of a stored fio cell (a resumed paired run's pairs).
pub fn round_value(r: &crate::model::CellResult, round: u32) -> Result<f64, String> {
    let Some(f) = &r.fio else { return Err("no fio figures".into()) };
    reps_value(f.repetitions.iter().filter(|x| x.round == round))
}

/// `next`'s repetitions as round `round` of `earlier` (a paired run's next member
/// measurement), with the statistics over all of them.
pub fn absorb_round(earlier: FioResult, next: FioResult, round: u32) -> FioResult {
    let mut r = earlier;
    r.repetitions.extend(next.repetitions.into_iter().map(|x| FioRepetition { round, ..x }));
    r.reruns += next.reruns;
    if r.fio_version.is_empty() {
        r.fio_version = next.fio_version;
    }
    summarise(&mut r);
    r
}

/// The mean IOPS of `reps`, or why they make no member value.
pub fn reps_value<'r>(reps: impl Iterator<Item = &'r FioRepetition>) -> Result<f64, String> {
    let v: Vec<f64> = reps.map(|x| x.total.all.iops).collect();
    if v.is_empty() {
        return Err("no fio repetitions".into());
    }
    Ok(v.iter().sum::<f64>() / v.len() as f64)
}

/// What the noise guards did to a fio cell, said once over all its rounds (a paired cell's
/// members): the words of [`crate::workload::reruns::noise_notes`], as lat_fs says them.
pub fn noise_notes(res: &FioResult) -> Vec<String> {
    let disturbed: Vec<u32> = res.repetitions.iter().filter(|x| !x.counts()).map(|x| x.round).collect();
    crate::workload::reruns::noise_notes(
        &disturbed,
        res.repetitions.len(),
        res.rounds_done(),
        res.reruns,
        res.iops.n == 0,
    )
}

/// The cell's statistics over its undisturbed repetitions.
pub fn summarise(r: &mut FioResult) {
    let of = |f: &dyn Fn(&FioRepetition) -> f64| -> Vec<f64> {
        r.repetitions.iter().filter(|x| x.counts()).map(f).collect()
    };
    let iops = of(&|x| x.total.all.iops);
    let bw = of(&|x| x.total.all.bw_bytes);
    let p99 = of(&|x| x.total.all.clat_ns.p99 / 1e3);
    let mean = of(&|x| x.total.all.clat_ns.mean / 1e3);
    r.iops = crate::stats::summarize(&iops);
    r.bw_bytes = crate::stats::summarize(&bw);
    r.clat_p99_us = crate::stats::summarize(&p99);
    r.clat_mean_us = crate::stats::summarize(&mean);
}

/// One fio run: started contained in the first task's directory, in a mount namespace
/// where only the cell's directories are writable ([`confine`]), waited for (stopped
/// on SIGINT/SIGTERM to fsbench), and its output file read.
fn run_once(run: &FioRun, job_file: &Path, repetition: u32, version: &str) -> Result<json::FioOutput, FioError> {
    let out_file = run.out_dir.join(format!("rep{repetition}.json"));
    let err_file = run.out_dir.join(format!("rep{repetition}.stderr"));
    // A stale file from an earlier attempt must not be read as this run's.
    let _ = std::fs::remove_file(&out_file);
    let stderr = std::fs::File::create(&err_file).map_err(io(format!("cannot create {}", err_file.display())))?;
    let cwd = run.task_dirs.first().map(PathBuf::as_path).unwrap_or(run.out_dir);
    let mut cmd = Command::new(FIO);
    cmd.arg("--output-format=json+")
        .arg(format!("--output={}", out_file.display()))
        .arg(job_file)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr);
    child::contain(&mut cmd);
    // Only the cell's directories and this output directory writable (as root: `confine`).
    let mut writable: Vec<&Path> = run.task_dirs.iter().map(PathBuf::as_path).collect();
    writable.push(run.out_dir);
    confine::confine(&mut cmd, &writable).map_err(io("cannot confine fio"))?;
    let child = cmd.spawn().map_err(io("cannot start fio (confined to the cell)"))?;
    let pid = child.id() as libc::pid_t;
    // Reaped by pid inside wait_or_stop; the Child handle is only dropped.
    drop(child);
    let reaped = match child::wait_or_stop(pid, &crate::signals::interrupted).map_err(io("cannot wait for fio"))? {
        Waited::Stopped => return Err(FioError::Stopped),
        Waited::Exited(r) => r,
    };
    let status = if libc::WIFEXITED(reaped.status) {
        libc::WEXITSTATUS(reaped.status)
    } else {
        128 + libc::WTERMSIG(reaped.status)
    };
    if status != 0 {
        let said = std::fs::read_to_string(&err_file).unwrap_or_default();
        let tail: Vec<&str> = said.lines().rev().take(5).collect::<Vec<_>>().into_iter().rev().collect();
        return Err(FioError::Failed { version: version.to_string(), status, repetition, stderr: tail.join(" / ") });
    }
    let text = std::fs::read_to_string(&out_file).map_err(io(format!("cannot read {}", out_file.display())))?;
    json::parse(&text, version).map_err(|source| FioError::Output { repetition, source })
}

/// The scenario's fio job spec, when its workload is fio (for the bundle budget, which
/// counts fio's buffers and files without naming a workload variant).
pub fn spec_of(s: &crate::scenario::Scenario) -> Option<&crate::scenario::FioSpec> {
    match &s.workload {
        crate::scenario::Workload::Fio(spec) => Some(spec),
        _ => None,
    }
}
