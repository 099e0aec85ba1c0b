//! `fsbench bisect` simulated: 1,000 bisections over 64 candidates with a true 10% step at
//! a random position and 1,000 without a step, members drawn at this machine's noise
//! (7–10% CV per member, 5% drift shared by a pair's members), each bisected the paired
//! way (`fsbench bisect`: every step a pair group through the runner's pair machinery, the
//! endpoints and the culprit confirmed) and the plain way (`git bisect run` around
//! `gate --bisect`: the good endpoint measured once, each step one unpaired run).
//!
//! `cargo bench --bench bisect` prints both success rates side by side and exits 1 when the
//! paired way misses its targets (culprit exactly right in ≥ 95%, "no regression" in ≥ 95%
//! of the ranges without a step, false culprit in ≤ 1%). Environment:
//! `FSBENCH_BENCH_BISECTIONS=N` (default 1000), `FSBENCH_BENCH_MAX_PAIRS=N` (the step
//! budget, default fsbench's), `FSBENCH_BENCH_SEED=N`.

use std::time::Instant;

use fsbench::bisect::simulate::{MACHINE_NOISE, SimConfig, render, simulate};
use fsbench::bisect::{DEFAULT_MAX_PAIRS, DEFAULT_MIN_PAIRS};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let cfg = SimConfig {
        candidates: 64,
        bisections: env("FSBENCH_BENCH_BISECTIONS", 1000) as usize,
        step: 0.9,
        threshold: 0.05,
        min_pairs: DEFAULT_MIN_PAIRS,
        max_pairs: env("FSBENCH_BENCH_MAX_PAIRS", DEFAULT_MAX_PAIRS as u64) as u32,
        seed: env("FSBENCH_BENCH_SEED", 2026),
        noise: MACHINE_NOISE,
    };
    let t = Instant::now();
    let r = simulate(&cfg);
    print!("{}", render(&r));
    println!("simulated in {:.1} s", t.elapsed().as_secs_f64());
    let n = cfg.bisections as f64;
    let met = r.paired.exact as f64 >= 0.95 * n
        && r.paired.no_regression as f64 >= 0.95 * n
        && r.paired.false_culprit as f64 <= 0.01 * n;
    if !met {
        eprintln!("fsbench bisect missed its targets (exact >= 95%, no regression >= 95%, false culprit <= 1%)");
        std::process::exit(1);
    }
}
