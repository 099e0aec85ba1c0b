//! The integration tests, linked as one binary (one link instead of one per file).
//! Each module was a file of its own in `tests/`; helpers are in `tests/support/`.
//!
//! The tests here run as threads of one process. A test that touches process-wide
//! state (signal handlers or raise(), environment variables of this process, the
//! current directory, the umask, or anything that looks at all children of the
//! process) must not live here: give it its own `tests/<name>.rs` with
//! `mod support;`, as `tests/provision_signals.rs` and `tests/latfs_failures.rs` do.
//! Running the fsbench binary as a subprocess is fine.

#[macro_use]
#[path = "../support/mod.rs"]
mod support;

mod bad_input;
mod bisect_cli;
mod bisect_git;
mod bisect_profiles;
mod bundle_fio_hostile;
mod bundle_fio_job;
mod bundle_hostile;
mod bundle_roundtrip;
mod cgroup_limits;
mod cli_docs;
mod compare_marks;
mod export_cli;
mod fio_run;
mod fixture_cache;
mod fixture_checked_in;
mod fixture_cli;
mod fixture_shape;
mod fuzz_front_door;
mod gate_calibrated;
mod gate_cli;
mod gate_history_burst;
mod gate_paired;
mod history;
mod history_html;
mod history_index;
mod hostile_results;
mod latfs_run;
mod lifecycle;
mod monitors;
mod newcomer;
mod newcomer_round3;
mod one_sample_set;
mod ops_dbench;
mod ops_engine;
mod ops_fileset;
mod ops_personalities;
mod ops_run;
mod paired_run;
mod profile_hostile;
mod profile_kthreads;
mod profile_paired;
mod profile_run;
mod provision_faults;
mod provision_layouts;
mod provision_stale;
mod provision_tunables;
mod qemu_bisect;
mod qemu_lifecycle;
mod qemu_paired;
mod qemu_quota;
mod report_cli;
mod report_html;
mod report_seed000;
mod report_seed002;
mod results_store;
mod results_tree;
mod run_e2e;
mod run_lookup;
mod schemas;
mod shard_cli;
mod shard_k8s;
mod slurm_array;
mod steps_archive;
mod steps_run;
mod steps_tasks;
mod steps_untar;
mod steps_untrusted;
mod steps_variants;
mod strict;
