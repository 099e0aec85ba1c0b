//! Planning speed: parse, validate and expand a 10,000-cell scenario.
//!
//! Target: under 100 ms. Run with `cargo bench --bench plan`.
//! Reports the median of 20 runs and, as a same-run reference, the time to
//! merely parse the TOML text, so the figure can be read as a ratio on a noisy host.

use std::time::{Duration, Instant};

fn scenario_text() -> String {
    // 25 filesystems × 2 layouts × 2 quota modes × 25 task counts × 4 tests = 10,000 cells.
    let fs: Vec<String> = (0..25).map(|i| format!("\"fs{i}\"")).collect();
    let tasks: Vec<String> = (1..=25).map(|i| i.to_string()).collect();
    let mut text = format!(
        "schema = 1\nname = \"big\"\n[matrix]\nfs = [{}]\nlayout = [\"M\", \"S\"]\nquota = [\"off\", \"on\"]\ntasks = [{}]\ntest = [\"open_close\", \"create_unlink\", \"chown\", \"write_truncate\"]\n",
        fs.join(", "),
        tasks.join(", ")
    );
    for i in 0..25 {
        text.push_str(&format!("[filesystems.fs{i}]\nmount = [\"usrquota\", \"grpquota\"]\n"));
    }
    text.push_str("[backing]\nkind = \"tmpfs-loop\"\n[workload]\nkind = \"lat_fs\"\n");
    text
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let text = scenario_text();
    let mut plan_times = Vec::new();
    let mut parse_times = Vec::new();
    let mut cells = 0;
    for _ in 0..20 {
        let t = Instant::now();
        let _: toml::Table = toml::from_str(&text).unwrap();
        parse_times.push(t.elapsed());
        let t = Instant::now();
        let s = fsbench::scenario::parse_str(&text, "big.toml").unwrap();
        let plan = fsbench::plan::expand(&s);
        cells = plan.cells.len();
        plan_times.push(t.elapsed());
    }
    let (p, r) = (median(plan_times), median(parse_times));
    println!(
        "plan: {cells} cells in {:.2} ms (median of 20); bare TOML parse {:.2} ms; ratio {:.1}×; target < 100 ms: {}",
        p.as_secs_f64() * 1e3,
        r.as_secs_f64() * 1e3,
        p.as_secs_f64() / r.as_secs_f64(),
        if p < Duration::from_millis(100) { "met" } else { "MISSED" }
    );
}
