//! What an op mix answers about itself ([`crate::workload::kind`]), and how its cell runs:
//! one [`super::run`] per repetition in the cell's first task directory, each judged for
//! disturbance and read around by the cell's counters.

use std::time::Duration;

use super::spec::OpsWorkload;
use crate::catalogue::Metric;
use crate::model::{CellParams, CellResult, CellStatus, OPS_METRICS, OpsMetric, OpsRepetition, OpsResult, SkipReason};
use crate::workload::kind::{CellRun, KindAnswers, OpsKind, WorkloadAnswers};

impl KindAnswers for OpsKind {
    fn default_metric(&self) -> Metric {
        Metric::Ops(OpsMetric::Ops)
    }

    fn metric(&self, requested: Option<&str>) -> Result<Metric, &'static str> {
        match requested {
            None => Ok(self.default_metric()),
            Some(m) => OpsMetric::parse(m).map(Metric::Ops).ok_or("ops, p99, mbps"),
        }
    }

    fn paired_metrics(&self) -> Vec<Metric> {
        OPS_METRICS.iter().filter_map(|n| OpsMetric::parse(n)).map(Metric::Ops).collect()
    }
}

/// fsbench's own memory per fileset entry while an op-mix cell runs, in bytes: the
/// layout's entry (directory, name, size: 24 bytes), its state word (4), and what building
/// and the directories add. `benches/ops_scale.sh` measured 42.7 for a 1,000,000-entry
/// fileset (the whole peak resident set over the entries; 26.6 above a 1,000-entry run,
/// benches/README.md), rounded up.
pub const BYTES_PER_ENTRY: u64 = 48;

/// The entries of every fileset of `w`.
fn entries(w: &OpsWorkload) -> u64 {
    w.spec.filesets.iter().map(|f| f.entries).sum()
}

/// fsbench's own memory for the filesets of `w` (not the filesystem's: an image on tmpfs
/// holds its data in memory too, which `validate` weighs against the image size).
pub fn fileset_memory(w: &OpsWorkload) -> u64 {
    entries(w).saturating_mul(BYTES_PER_ENTRY)
}

/// Rough cost of building the filesets: 20 µs per file plus the bytes at 500 MB/s.
fn build_estimate(w: &OpsWorkload) -> Duration {
    let files: u64 = w.spec.filesets.iter().map(|f| f.entries * f.prealloc_percent as u64 / 100).sum();
    let (bytes, _) = w.fileset_bytes();
    Duration::from_secs_f64(files as f64 * 20e-6 + bytes / 500e6)
}

/// A window: its warm-up and duration, or a guess of a second when it stops on loops alone.
fn window(w: &OpsWorkload) -> Duration {
    w.spec.stop.warmup.unwrap_or_default() + w.spec.stop.duration.unwrap_or(Duration::from_secs(1))
}

impl WorkloadAnswers for OpsWorkload {
    fn kind(&self) -> &'static dyn KindAnswers {
        &OpsKind
    }

    /// The filesets' size and cost, so that a huge one is seen before it is built.
    fn plan_note(&self) -> Option<String> {
        let files: u64 = self.spec.filesets.iter().map(|f| f.entries * f.prealloc_percent as u64 / 100).sum();
        let (pre, all) = self.fileset_bytes();
        Some(format!(
            "op mix: {} entries in {} fileset(s), about {} preallocated ({}; {} with every entry at its size); \
             fsbench's own memory for them about {} ({BYTES_PER_ENTRY} B per entry); building about {} per repetition",
            entries(self),
            self.spec.filesets.len(),
            files,
            crate::text::bytes_short(pre as u64),
            crate::text::bytes_short(all as u64),
            crate::text::bytes_short(fileset_memory(self)),
            crate::text::human_duration(build_estimate(self)),
        ))
    }

    /// fsbench keeps a few words per entry: a fileset whose entries would not fit in the
    /// memory this host can give is refused before anything is built.
    fn cannot_run(&self, _p: &CellParams, _root: bool) -> Option<SkipReason> {
        let need = fileset_memory(self);
        let avail = crate::host::memory::mem_available().ok()?;
        (need > avail).then(|| SkipReason {
            reason: format!(
                "the filesets' {} entries need about {} of fsbench's memory ({BYTES_PER_ENTRY} B each), more than this \
                 host's MemAvailable {}",
                entries(self),
                crate::text::bytes_short(need),
                crate::text::bytes_short(avail)
            ),
            remedy: Some("lower `workload.scale` or the filesets' `entries`".into()),
        })
    }

    fn cell_estimate(&self) -> Duration {
        (window(self) + build_estimate(self)) * self.repetitions
    }

    fn guest_cell_work(&self) -> Duration {
        (window(self) + build_estimate(self) * 4 + Duration::from_secs(5)) * self.repetitions
    }

    fn member_value(&self, r: &CellResult) -> Result<crate::workload::kind::Member, String> {
        r.measured()?;
        let Some(o) = &r.ops else { return Err("no op-mix figures".into()) };
        let value = reps_value(o.repetitions.iter())?;
        let load = crate::host::pair_load::MemberLoad::of(o.repetitions.iter().filter_map(|x| x.disturbance.as_ref()));
        Ok(crate::workload::kind::Member { value, loads: vec![load] })
    }

    fn round_value(&self, r: &CellResult, round: u32) -> Result<f64, String> {
        let Some(o) = &r.ops else { return Err("no op-mix figures".into()) };
        reps_value(o.repetitions.iter().filter(|x| x.round == round))
    }

    fn profiled_once(&self) -> Option<crate::scenario::Workload> {
        let mut one = self.clone();
        (one.repetitions, one.disturbance) = (1, None);
        Some(crate::scenario::Workload::Ops(one))
    }

    /// The op mix's workers are threads of fsbench (or of its forked worker processes)...
    fn runs_in_process(&self, _tasks: u32, _in_cgroup: bool) -> bool {
        true
    }

    /// ...named `ops-N` ([`super::run`]) in either: the supervising thread is left out.
    fn worker_threads(&self) -> Option<&'static str> {
        Some(super::WORKER_THREAD_PREFIX)
    }

    fn run_cell(&self, at: &mut CellRun<'_>, r: &mut CellResult) -> anyhow::Result<()> {
        let dir = at.task_dirs.first().map(|d| d.as_path()).unwrap_or(at.target);
        let mut res = OpsResult::default();
        let n = self.repetitions;
        for i in 0..n {
            (at.phase)(&format!("repetition {}/{n}", i + 1));
            let workers: u32 = self.spec.groups.iter().map(|g| g.workers()).sum();
            let judge = self.disturbance.map(|t| (t, crate::host::cpu::Window::start(std::process::id())));
            let before = at.watch.map(crate::monitor::Watch::snapshot);
            let w = super::run(dir, &self.spec, i, at.cancel)?;
            let mut rep = w.repetition;
            rep.counters = at.watch.zip(before).map(|(wa, b)| b.delta(&wa.snapshot()));
            rep.disturbance = judge.and_then(|(t, win)| win.finish(t, workers.min(host_cpus())));
            if i == 0 {
                res.filesets = w.filesets;
            }
            res.repetitions.push(rep);
        }
        if (self.scale - 1.0).abs() > f64::EPSILON {
            r.notes.push(format!("filesets scaled by {} (workload.scale)", self.scale));
        }
        let disturbed = res.repetitions.iter().filter(|x| !x.counts()).count();
        if disturbed > 0 {
            r.notes.push(format!(
                "{disturbed} of {} repetitions disturbed by other processes (kept, left out of statistics)",
                res.repetitions.len()
            ));
        }
        summarise(&mut res);
        if res.ops_per_s.n == 0 && !res.repetitions.is_empty() {
            r.status = CellStatus::Disturbed;
        }
        r.ops = Some(res);
        Ok(())
    }
}

fn host_cpus() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

/// The mean ops/s of `reps`, or why they make no member value.
pub fn reps_value<'r>(reps: impl Iterator<Item = &'r OpsRepetition>) -> Result<f64, String> {
    let v: Vec<f64> = reps.map(|x| x.total.ops_per_s).collect();
    if v.is_empty() {
        return Err("no op-mix repetitions".into());
    }
    Ok(v.iter().sum::<f64>() / v.len() as f64)
}

/// The cell's statistics over its undisturbed repetitions.
pub fn summarise(r: &mut OpsResult) {
    let of = |m: OpsMetric| -> Vec<f64> { r.repetitions.iter().filter(|x| x.counts()).map(|x| m.of(x)).collect() };
    r.ops_per_s = crate::stats::summarize(&of(OpsMetric::Ops));
    r.p99_us = crate::stats::summarize(&of(OpsMetric::P99));
    r.mb_per_s = crate::stats::summarize(&of(OpsMetric::Mbps));
}

/// `next`'s repetitions as round `round` of `earlier` (a paired run's next member
/// measurement), with the statistics over all of them.
pub fn absorb_round(earlier: OpsResult, next: OpsResult, round: u32) -> OpsResult {
    let mut r = earlier;
    r.repetitions.extend(next.repetitions.into_iter().map(|x| OpsRepetition { round, ..x }));
    if r.filesets.is_empty() {
        r.filesets = next.filesets;
    }
    summarise(&mut r);
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Workload;

    #[test]
    fn the_plan_says_what_a_ten_million_entry_fileset_costs() {
        let text = "schema = 1\nname = \"big\"\n[matrix]\nfs = [\"tmpfs\"]\n[backing]\nkind = \"dir\"\n\
                    [workload]\nkind = \"ops\"\nduration = \"10s\"\n[[workload.fileset]]\nname = \"f\"\n\
                    entries = 10000000\ndir_width = 20\nsize = \"1KiB\"\nprealloc = 50\n[[workload.group]]\n\
                    name = \"s\"\nthreads = 1\nloop = [ { op = \"stat\", fileset = \"f\" } ]\n";
        let Workload::Ops(w) = crate::scenario::parse_str(text, "big.toml").unwrap().workload else { panic!() };
        let note = w.plan_note().unwrap();
        assert!(
            note.contains("10000000 entries in 1 fileset(s), about 5000000 preallocated (4.8 GiB; 9.5 GiB"),
            "{note}"
        );
        assert!(
            note.contains(&format!(
                "about {} ({BYTES_PER_ENTRY} B per entry)",
                crate::text::bytes_short(10_000_000 * BYTES_PER_ENTRY)
            )),
            "{note}"
        );
        // 20 µs per file and the bytes at 500 MB/s.
        assert!(note.contains("building about 1m50s per repetition"), "{note}");
        assert_eq!(fileset_memory(&w), 10_000_000 * BYTES_PER_ENTRY);
    }
}
