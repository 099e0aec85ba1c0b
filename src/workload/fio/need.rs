//! What one fio cell can ask of the host, counted from its job as fio will read it
//! (`scenario::fio_job`) before anything runs: the I/O buffers fio allocates and the
//! bytes of the files it lays out.
//!
//! - fio allocates per job `max(bs) × iodepth` bytes of I/O buffers (`orig_buffer_size`
//!   in fio's init.c), whatever `thread` and `mem=`/`iomem=` say (threads share an
//!   address space, not their buffers; `shm`/`mmap` back the same bytes), and a job
//!   runs as `numjobs` clones: `numjobs = "tasks"` makes that the cell's task count.
//!   Every job section is counted as running at once (a `stonewall` lowers the real peak).
//! - Each clone has about [`PER_JOB_OVERHEAD`] of its own besides (fio's process,
//!   statistics, its share of the page cache), measured with fio 3.33: one job of 4 KiB
//!   blocks at iodepth 4 peaked at 41 MiB in its memory cgroup with 32 MiB of file pages,
//!   eight at 271 MiB with 256 MiB.
//! - A job's files are `size` bytes, or `filesize × nrfiles` (the larger when both
//!   are given; a range counts its top), per clone. `fill_device` and a `size` in
//!   percent have no bound but the filesystem's own: [`FioNeed::unbounded`].
//!
//! A value fsbench cannot count (`bs=$pagesize`, an expression) is named in
//! [`FioNeed::uncounted`], never guessed as zero.

use std::collections::BTreeMap;

use crate::scenario::fio_job::LineKind;
use crate::scenario::{FioNumjobs, FioSpec};

/// Memory of one fio job clone besides its I/O buffers.
pub const PER_JOB_OVERHEAD: u64 = 8 << 20;

/// Memory of the fio process that starts the clones.
pub const BASE_OVERHEAD: u64 = 32 << 20;

/// The most a single count may be (a hostile `numjobs=1e18` saturates here, not wraps).
const MAX_COUNT: u64 = 1 << 40;

/// What one cell's fio job asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FioNeed {
    /// Bytes of I/O buffers of every clone of every job section.
    pub buffers: u64,
    /// Clones of every job section (each one a process or thread of fio).
    pub jobs: u64,
    /// How [`Self::buffers`] is made up: `[w] 16.0 MiB × iodepth 64 × 2 jobs`.
    pub buffers_shown: Vec<String>,
    /// Bytes of files laid out by every clone of every job section.
    pub files: u64,
    /// How [`Self::files`] is made up: `[w] 64.0 MiB × 2 jobs`.
    pub files_shown: Vec<String>,
    /// Options whose files have no bound but the filesystem's (`[w] fill_device=1`).
    pub unbounded: Vec<String>,
    /// Values that could not be counted (`[w] bs=$pagesize`).
    pub uncounted: Vec<String>,
}

impl FioNeed {
    /// What the fio process tree can hold in memory: buffers and overheads.
    pub fn memory(&self) -> u64 {
        self.buffers.saturating_add(self.jobs.saturating_mul(PER_JOB_OVERHEAD)).saturating_add(BASE_OVERHEAD)
    }
}

/// The options of one job section fio will run, in the order fio applies them: the
/// global sections above it, its own lines, then what fsbench appends.
struct JobSection {
    name: String,
    options: Vec<(String, Option<String>)>,
}

/// The job sections of `spec` as one cell of `tasks` tasks with `sweeps` runs them.
fn job_sections(spec: &FioSpec, tasks: u32, sweeps: &BTreeMap<String, String>) -> Vec<JobSection> {
    let mut global: Vec<(String, Option<String>)> = Vec::new();
    let mut out: Vec<JobSection> = Vec::new();
    let mut in_global = false;
    for l in spec.job.lines() {
        match l.kind {
            LineKind::Header { name, global: g } => {
                in_global = g;
                if !g {
                    out.push(JobSection { name, options: global.clone() });
                }
            }
            LineKind::Option { name, value } if in_global => global.push((name, value)),
            LineKind::Option { name, value } => {
                if let Some(j) = out.last_mut() {
                    j.options.push((name, value));
                }
            }
            _ => {}
        }
    }
    for j in &mut out {
        if spec.numjobs == FioNumjobs::Tasks {
            j.options.push(("numjobs".into(), Some(tasks.to_string())));
        }
        for (k, v) in sweeps {
            j.options.push((k.clone(), Some(v.clone())));
        }
    }
    out
}

/// The last value of any of `names` (fio's aliases of one option): the one fio keeps.
fn last<'j>(j: &'j JobSection, names: &[&str]) -> Option<(&'j str, &'j str)> {
    j.options
        .iter()
        .rev()
        .find(|(n, _)| names.contains(&n.as_str()))
        .map(|(n, v)| (n.as_str(), v.as_deref().unwrap_or("")))
}

/// A size or count as fio writes one (`4k`, `16m`, `1GiB`, `512`, `0x1000`), its
/// suffixes taken as powers of 1024 (fio's default `kb_base`; under `kb_base=1000`
/// this counts a little more than fio allocates, never less).
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim().to_ascii_lowercase();
    if let Some(hex) = t.strip_prefix("0x") {
        return u64::from_str_radix(hex, 16).ok();
    }
    let digits = t.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(t.len());
    let (number, suffix) = t.split_at(digits);
    let number: f64 = number.parse().ok().filter(|n: &f64| n.is_finite() && *n >= 0.0)?;
    let unit = match suffix.trim_end_matches('b').trim_end_matches('i') {
        "" => 1u64,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        "t" => 1 << 40,
        "p" => 1 << 50,
        _ => return None,
    };
    let bytes = number * unit as f64;
    Some(if bytes >= u64::MAX as f64 { u64::MAX } else { bytes.ceil() as u64 })
}

/// The largest size in a value of several (`4k,64k`, `4k-1m`, `4k/10:64k/50`), or the
/// text that is not a size.
fn largest(value: &str) -> Result<u64, String> {
    let mut max = 0;
    for token in value.split([',', ':', '-', '/']).map(str::trim).filter(|t| !t.is_empty()) {
        max = max.max(parse_size(token).ok_or_else(|| token.to_string())?);
    }
    Ok(max)
}

/// What one cell's fio job asks for.
pub fn cell_need(spec: &FioSpec, tasks: u32, sweeps: &BTreeMap<String, String>) -> FioNeed {
    let mut need = FioNeed::default();
    for j in job_sections(spec, tasks, sweeps) {
        let section = crate::scenario::fio_job::shown_section(&j.name);
        let value_of = |names: &[&str], default: u64, need: &mut FioNeed| -> u64 {
            match last(&j, names) {
                None => default,
                Some((n, v)) => largest(v).unwrap_or_else(|_| {
                    need.uncounted.push(format!("{section} {n}={}", crate::text::escape_control(v)));
                    default
                }),
            }
        };
        let bs = [&["bs", "blocksize"][..], &["bsrange", "blocksize_range"], &["bssplit"]]
            .iter()
            .map(|names| value_of(names, 0, &mut need))
            .max()
            .unwrap_or(0)
            .max(4096);
        let iodepth = value_of(&["iodepth"], 1, &mut need).clamp(1, MAX_COUNT);
        let clones = value_of(&["numjobs"], 1, &mut need).clamp(1, MAX_COUNT);
        let buffers = bs.saturating_mul(iodepth).saturating_mul(clones);
        need.buffers = need.buffers.saturating_add(buffers);
        need.jobs = need.jobs.saturating_add(clones);
        need.buffers_shown.push(format!(
            "{section} {} × iodepth {iodepth} × {}",
            crate::text::bytes_short(bs),
            crate::text::plural(clones as usize, "job", "jobs")
        ));
        if let Some((n, v)) = last(&j, &["fill_device", "fill_fs"]).filter(|(_, v)| *v != "0") {
            need.unbounded.push(format!("{section} {n}={}", crate::text::escape_control(v)));
        }
        let size = match last(&j, &["size"]) {
            Some((n, v)) if v.contains('%') => {
                need.unbounded.push(format!("{section} {n}={}", crate::text::escape_control(v)));
                0
            }
            _ => value_of(&["size"], 0, &mut need),
        };
        let per_file = value_of(&["filesize"], 0, &mut need);
        let nrfiles = value_of(&["nrfiles", "nr_files"], 1, &mut need).clamp(1, MAX_COUNT);
        let files = size.max(per_file.saturating_mul(nrfiles));
        if files > 0 {
            need.files = need.files.saturating_add(files.saturating_mul(clones));
            need.files_shown.push(format!(
                "{section} {} × {}",
                crate::text::bytes_short(files),
                crate::text::plural(clones as usize, "job", "jobs")
            ));
        }
    }
    need
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Workload;

    fn spec(job: &str, numjobs: &str) -> FioSpec {
        let text = format!(
            "schema = 1\nname = \"f\"\n[matrix]\nfs = [\"ext4\"]\n[backing]\nkind = \"dir\"\n[workload]\nkind = \"fio\"\nnumjobs = \"{numjobs}\"\njob = '''\n{job}'''\n"
        );
        match crate::scenario::parse_str(&text, "f.toml").unwrap().workload {
            Workload::Fio(f) => f,
            _ => unreachable!(),
        }
    }

    #[test]
    fn sizes_are_read_as_fio_writes_them() {
        assert_eq!(parse_size("4k"), Some(4096));
        assert_eq!(parse_size("16M"), Some(16 << 20));
        assert_eq!(parse_size("1GiB"), Some(1 << 30));
        assert_eq!(parse_size("1.5k"), Some(1536));
        assert_eq!(parse_size("0x1000"), Some(4096));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("$pagesize"), None);
        assert_eq!(parse_size("99999999999p"), Some(u64::MAX));
        assert_eq!(largest("4k/10:64k/50"), Ok(64 << 10));
        assert_eq!(largest("4k-1m,8k"), Ok(1 << 20));
    }

    /// Security review, round three: `bs=16m iodepth=64 numjobs=2` took fio over 1 GiB
    /// where verify said 128 MiB.
    #[test]
    fn buffers_are_max_bs_times_iodepth_times_clones() {
        let n = cell_need(&spec("[w]\nrw=write\nbs=16m\niodepth=64\nnumjobs=2\n", "job"), 1, &BTreeMap::new());
        assert_eq!((n.buffers, n.jobs), (2 << 30, 2), "{n:?}");
        assert!(n.memory() > 1 << 30);
        assert_eq!(n.buffers_shown, ["`[w]` 16.0 MiB × iodepth 64 × 2 jobs"]);
        // Global options count for the jobs below them; a job's own value wins; sweeps win over both.
        let job = "[global]\nbs=1m\niodepth=8\n[a]\nrw=read\n[b]\nbs=4k\nbssplit=4k/50:128k/50\n";
        let n = cell_need(&spec(job, "tasks"), 4, &BTreeMap::new());
        assert_eq!(n.buffers, (1 << 20) * 8 * 4 + (128 << 10) * 8 * 4, "{n:?}");
        let sweeps = BTreeMap::from([("iodepth".to_string(), "1".to_string())]);
        assert_eq!(cell_need(&spec(job, "tasks"), 4, &sweeps).buffers, (1 << 20) * 4 + (128 << 10) * 4);
    }

    #[test]
    fn files_are_counted_per_clone_and_unbounded_ones_named() {
        let n =
            cell_need(&spec("[w]\nsize=64m\nnumjobs=3\n[x]\nfilesize=1m-4m\nnrfiles=10\n", "job"), 1, &BTreeMap::new());
        assert_eq!(n.files, (64 << 20) * 3 + (40 << 20), "{n:?}");
        let n = cell_need(&spec("[w]\nfill_device=1\n[x]\nsize=50%\n[y]\nfill_device=0\n", "job"), 1, &BTreeMap::new());
        assert_eq!(n.unbounded, ["`[w]` fill_device=1", "`[x]` size=50%"]);
        let n = cell_need(&spec("[w]\nbs=$pagesize\n", "job"), 1, &BTreeMap::new());
        assert_eq!(n.uncounted, ["`[w]` bs=$pagesize"]);
    }
}
