//! Run one lat_fs cell directly on given task directories, without a scenario.
//!
//! Used by `benches/latfs.sh` to compare fsbench's workers with the C reference
//! on the same filesystem. Prints one line per repetition in the reference's
//! format (`rep <r> total_loops <x> latency_us <y>`), then a summary line.
//!
//! `cargo run --release --example latfs_direct -- --exe target/release/fsbench \
//!     --test chown --per-task-uid --quota-refs 2 --write DIR0 DIR1`

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use fsbench::model::LatfsTest;
use fsbench::scenario::LatfsSpec;
use fsbench::workload::latfs::{self, LatfsRun};

/// Command line of the example.
#[derive(Debug, Parser)]
struct Args {
    /// The fsbench binary that runs the workers.
    #[arg(long)]
    exe: PathBuf,
    /// open_close, create_unlink, chown or write_truncate.
    #[arg(long)]
    test: LatfsTest,
    /// Each task runs as uid = gid = (task << 3) + 100.
    #[arg(long)]
    per_task_uid: bool,
    /// Extra quota references per task.
    #[arg(long, default_value_t = 0)]
    quota_refs: u32,
    /// Open O_WRONLY instead of O_RDONLY.
    #[arg(long)]
    write: bool,
    /// Warm-up in milliseconds.
    #[arg(long, default_value_t = 300)]
    warmup_ms: u64,
    /// Timed window in milliseconds.
    #[arg(long, default_value_t = 1000)]
    duration_ms: u64,
    /// Repetitions.
    #[arg(long, default_value_t = 1)]
    reps: u32,
    /// One directory per task.
    #[arg(required = true)]
    dirs: Vec<PathBuf>,
}

fn main() {
    let a = Args::parse();
    let spec = LatfsSpec {
        per_task_uid: a.per_task_uid,
        quota_refs: a.quota_refs,
        open_for_write: a.write,
        warmup: Duration::from_millis(a.warmup_ms),
        duration: Duration::from_millis(a.duration_ms),
        repetitions: a.reps,
        rounds: 1,
        noise: Default::default(),
        latency: Default::default(),
    };
    let run = LatfsRun { test: a.test, spec: &spec, task_dirs: &a.dirs, exe: &a.exe };
    match latfs::run(&run) {
        Ok(r) => {
            for (i, rep) in r.repetitions.iter().enumerate() {
                println!("rep {i} total_loops {:.4} latency_us {:.4}", rep.total_loops_per_ms, rep.latency_us);
            }
            let s = &r.total_loops;
            println!(
                "summary total_loops median {:.4} mean {:.4} stddev {:.4} ci95 {:.4}..{:.4} cv {:.4}",
                s.median, s.mean, s.stddev, s.ci95_low, s.ci95_high, s.cv
            );
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
