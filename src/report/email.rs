//! `compare --format email`: a comparison of two lat_fs runs as plain text of at most 80
//! columns, in the layout of the 0-day bot's regression mails that kernel developers
//! already read: a headline, the machine, the scenario's parameters, a
//! `%stddev %change %stddev` table of the metric, the monitors and the profile's most
//! changed functions, and how to reproduce.
//!
//! The mail is about one cell, the one whose total loops changed most (a regression
//! before an improvement of the same size); the other cells are counted, not shown.
//! Pure: runs in, text out; every string from a result file is escaped where it is read.

use std::fmt::Write as _;

use crate::model::{CellResult, LatfsRepetition};
use crate::profile::diff;
use crate::profile::folded::Folded;
use crate::results::LoadedRun;

/// Widest line.
pub const WIDTH: usize = 80;
/// Profile rows: the most grown and the most shrunk functions, each.
pub const PROFILE_ROWS: usize = 5;

/// Mean and relative standard deviation (percent) of some values.
fn mean_sd(v: &[f64]) -> Option<(f64, Option<f64>)> {
    if v.is_empty() {
        return None;
    }
    let s = crate::stats::summarize(v);
    let rel = (s.n >= 2 && s.mean != 0.0).then(|| 100.0 * s.stddev / s.mean.abs());
    Some((s.mean, rel))
}

/// `   17.45 ±  6%` (14 columns, 15 from a value of a million on).
fn value(v: f64, sd: Option<f64>) -> String {
    match sd {
        Some(sd) if sd.round() >= 1.0 => format!("{v:>8.2} ±{:>3.0}%", sd.min(999.0)),
        _ => format!("{v:>8.2}      "),
    }
}

/// One table row; a name that does not fit goes on the next line, indented.
fn row(out: &mut String, a: String, change: String, b: String, name: &str) {
    let numbers = format!("{a} {change:>8} {b}  ");
    if numbers.chars().count() + name.chars().count() <= WIDTH {
        let _ = writeln!(out, "{numbers}{name}");
    } else {
        let _ = writeln!(out, "{}", numbers.trim_end());
        let _ = writeln!(out, "{:>8}{}", "", crate::text::first_line_cut(name, WIDTH - 8));
    }
}

/// Rows of per-repetition values: their mean ± %stddev on each side and the change.
fn series_row(out: &mut String, a: &[f64], b: &[f64], name: &str) {
    let (Some((ma, sa)), Some((mb, sb))) = (mean_sd(a), mean_sd(b)) else { return };
    let change = if ma != 0.0 { format!("{:+.1}%", 100.0 * (mb - ma) / ma.abs()) } else { String::new() };
    row(out, value(ma, sa), change, value(mb, sb), name);
}

/// The repetitions of a cell that count toward its statistics.
fn counted(c: &CellResult) -> Vec<&LatfsRepetition> {
    c.latfs.as_ref().map(|l| l.repetitions.iter().filter(|r| r.counts()).collect()).unwrap_or_default()
}

/// Per-repetition monitor values of a cell: (name, values).
fn monitors(c: &CellResult) -> Vec<(&'static str, Vec<f64>)> {
    let reps = counted(c);
    let per_s = |n: u64, us: u64| if us == 0 { None } else { Some(n as f64 * 1e6 / us as f64) };
    let pick = |f: &dyn Fn(&crate::model::Counters) -> Option<f64>| -> Vec<f64> {
        reps.iter().filter_map(|r| r.counters.as_ref().and_then(f)).collect()
    };
    vec![
        ("monitors.context_switches_per_s", pick(&|c| per_s(c.context_switches?, c.window_us))),
        ("monitors.block.write_ios_per_s", pick(&|c| per_s(c.devices.iter().map(|d| d.write_ios).sum(), c.window_us))),
        ("monitors.block.flush_ios_per_s", pick(&|c| per_s(c.devices.iter().map(|d| d.flush_ios).sum(), c.window_us))),
        ("monitors.vm.nr_dirtied_per_s", pick(&|c| per_s(c.vm.as_ref()?.nr_dirtied, c.window_us))),
    ]
}

/// The machine a run ran on, as 0-day says it.
fn machine(run: &LoadedRun) -> String {
    let h = &run.meta.host;
    let vm = match run.meta.environment.as_ref().map(|e| e.virtual_machine) {
        Some(true) => "virtual machine",
        Some(false) => "bare metal",
        None => "virtual machine or not: not recorded",
    };
    format!(
        "{} threads {} with {} GiB memory, Linux {}, {vm}",
        h.cpu_count,
        h.cpu_model,
        h.memory_bytes >> 30,
        h.kernel_release
    )
}

/// The `%change` rows of a profile diff (`perf-profile.children.FUNCTION`), the most grown
/// and the most shrunk, and a sentence on how they were judged; or why there is none.
pub fn profile_rows(out: &mut String, outcome: Result<(diff::ProfileDiff, Folded, Folded), String>) {
    let d = match outcome {
        Ok((d, _, _)) => d,
        Err(why) => {
            let _ = writeln!(out, "\n{}", crate::text::wrap(&format!("perf-profile: {why}"), WIDTH, "  "));
            return;
        }
    };
    let few = |v: &[diff::FunctionChange]| v.iter().take(PROFILE_ROWS).cloned().collect::<Vec<_>>();
    for c in few(&d.grown).iter().chain(&few(&d.shrunk)) {
        let name = format!("perf-profile.children.{}", c.name);
        row(out, value(c.a_pct, None), format!("{:+.1}", c.delta_pp), value(c.b_pct, None), &name);
    }
    if d.grown.is_empty() && d.shrunk.is_empty() {
        out.push_str("perf-profile: no function's share changed beyond the noise\n");
    }
    out.push('\n');
    let how = super::profile_diff::judged_text(&d, super::profile_diff::Kind::OnCpu);
    let _ = writeln!(
        out,
        "{}",
        crate::text::wrap(
            &format!(
                "perf-profile: % of the samples, change in points; {how}{}.",
                super::profile_diff::carried_text(&d, "not listed")
            ),
            WIDTH,
            ""
        )
    );
}

/// The email of `runs` (the baseline first, the candidate second): `Err` says why there is none.
pub fn render(runs: &[(&str, &LoadedRun)]) -> Result<String, String> {
    let [(la, a), (lb, b)] = runs else {
        return Err(format!("--format email compares two runs, not {}", runs.len()));
    };
    // The cells of both with a mean on each side, by change (regressions first at equal size).
    let mut pairs: Vec<(&CellResult, &CellResult, f64)> = a
        .cells
        .iter()
        .filter_map(|ca| {
            let cb = b.cells.iter().find(|c| c.id == ca.id)?;
            let (ma, mb) = (ca.latfs.as_ref()?.total_loops.mean, cb.latfs.as_ref()?.total_loops.mean);
            (ca.latfs.as_ref()?.total_loops.n > 0 && cb.latfs.as_ref()?.total_loops.n > 0 && ma > 0.0)
                .then(|| (ca, cb, 100.0 * (mb - ma) / ma))
        })
        .collect();
    if pairs.is_empty() {
        return Err("--format email needs lat_fs cells measured in both runs".into());
    }
    pairs.sort_by(|x, y| y.2.abs().total_cmp(&x.2.abs()).then_with(|| x.2.total_cmp(&y.2)));
    let (ca, cb, change) = pairs[0];
    let test = ca.params.test.map(|t| t.name().to_string()).unwrap_or_default();
    let metric = format!("lat_fs.{test}.total_loops");
    let what = if change < 0.0 { "regression" } else { "improvement" };
    let mut out = String::new();
    out.push_str("Greeting,\n\n");
    let head = format!("FYI, we noticed a {change:+.1}% {what} of {metric}, {} {lb} vs {la}:", ca.id);
    let _ = writeln!(out, "{}\n", crate::text::wrap(&head, WIDTH, ""));
    let _ = writeln!(out, "baseline:  {la} (run {})", a.meta.run_id);
    let _ = writeln!(out, "candidate: {lb} (run {})\n", b.meta.run_id);
    let _ = writeln!(out, "testcase: lat_fs");
    let _ = writeln!(out, "{}", crate::text::wrap(&format!("test machine: {}", machine(b)), WIDTH, "  "));
    out.push_str("with following parameters:\n\n");
    let p = &ca.params;
    for (k, v) in [
        ("fs", p.fs.clone()),
        ("layout", format!("{:?}", p.layout)),
        ("quota", format!("{:?}", p.quota).to_lowercase()),
        ("tasks", p.tasks.to_string()),
        ("test", test.clone()),
    ] {
        let _ = writeln!(out, "        {k}: {v}");
    }
    for (label, c) in [(la, ca), (lb, cb)] {
        // The options asked for (the read-back per-mount options omit the superblock's `data=`).
        let opts: Vec<String> = c.filesystems.iter().map(|f| f.mount_options_requested.join(",")).collect();
        let line = format!("        mount ({label}): {}", opts.first().map_or("", String::as_str));
        let _ = writeln!(out, "{}", crate::text::wrap(&line, WIDTH, "            "));
    }
    out.push_str("\nDetails are as below:\n");
    let _ = writeln!(out, "{}\n", "-".repeat(WIDTH));
    let _ = writeln!(out, "{:>14} {:>23}", crate::text::first_line_cut(la, 14), crate::text::first_line_cut(lb, 23));
    let _ = writeln!(out, "{} {}", "-".repeat(14), "-".repeat(23));
    let _ = writeln!(out, "{:>14} {:>8} {:>14}", "%stddev", "%change", "%stddev");
    let _ = writeln!(out, "{:>7}{:>13}{:>11}", "\\", "|", "\\");
    let loops = |c: &CellResult| counted(c).iter().map(|r| r.total_loops_per_ms).collect::<Vec<f64>>();
    series_row(&mut out, &loops(ca), &loops(cb), &metric);
    for ((name, va), (_, vb)) in monitors(ca).into_iter().zip(monitors(cb)) {
        series_row(&mut out, &va, &vb, name);
    }
    if ca.profile.is_none() || cb.profile.is_none() {
        out.push_str("\nperf-profile: not recorded (run with --profile)\n");
    } else {
        profile_rows(&mut out, super::profile_diff::judge((ca, la), (cb, lb), super::profile_diff::Kind::OnCpu, false));
    }
    if pairs.len() > 1 {
        let _ = writeln!(out, "\n{} other cells compared: fsbench compare for all of them.", pairs.len() - 1);
    }
    out.push_str("\nTo reproduce:\n\n");
    let only = format!(
        "fs={},layout={:?},quota={},tasks={},test={test}",
        p.fs,
        p.layout,
        format!("{:?}", p.quota).to_lowercase(),
        p.tasks
    );
    let _ = writeln!(out, "        fsbench bundle pack {} \\", a.meta.scenario_origin);
    let _ = writeln!(out, "                --with-results RUN_DIR -o repro.fsb");
    let _ = writeln!(out, "        fsbench run {} --profile \\", a.meta.scenario_origin);
    let _ = writeln!(out, "                --only {only}");
    let _ = writeln!(out, "\nwhere RUN_DIR is {}", a.dir.display());
    // Every line within the width, whatever a path or a name was.
    Ok(out.lines().map(|l| crate::text::first_line_cut(l, WIDTH)).collect::<Vec<_>>().join("\n") + "\n")
}
