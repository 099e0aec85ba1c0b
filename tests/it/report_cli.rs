//! `fsbench report` and `fsbench compare` on bad input, significance, refusals, steps.

use assert_cmd::prelude::*;
use fsbench::model::*;

use crate::support::fsbench;
use crate::support::report::*;

fn out(o: &assert_cmd::assert::Assert) -> (String, String) {
    let o = o.get_output();
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

fn params(quota: QuotaMode, tasks: u32) -> CellParams {
    CellParams {
        fs: "ext4".into(),
        layout: Layout::M,
        quota,
        tasks,
        test: Some(LatfsTest::Chown),
        fio: Default::default(),
        kernel: None,
    }
}

/// A run of 2 quota modes × 2 task counts with 5 repetitions around `center(quota, tasks)`.
fn five_rep_run(
    dir: &std::path::Path,
    label: &str,
    text: &str,
    center: impl Fn(QuotaMode, u32) -> f64,
) -> std::path::PathBuf {
    let mut cells = Vec::new();
    for q in [QuotaMode::Off, QuotaMode::On] {
        for t in [1, 2] {
            let c = center(q, t);
            let mut cell = latfs_cell(params(q, t), &[c * 0.99, c * 1.01, c, c * 0.995, c * 1.005]);
            // Each repetition its own round: separate runs of several rounds can be tested
            // (one round on a side is the gate's "cannot decide", and compare's `?`).
            for (i, r) in cell.latfs.as_mut().unwrap().repetitions.iter_mut().enumerate() {
                r.round = i as u32;
            }
            cells.push(cell);
        }
    }
    let planned = cells.iter().map(|c| c.params.clone()).collect();
    write_run(dir, &meta(Some(label), "quota-smp", text, "lat_fs", planned), &cells)
}

#[test]
fn significant_differences_are_marked_and_noise_is_not() {
    let tmp = tempfile::tempdir().unwrap();
    let text = latfs_scenario_text("quota-smp", "repetitions = 5\n");
    let a =
        five_rep_run(
            &tmp.path().join("a"),
            "BASE",
            &text,
            |q, t| if q == QuotaMode::On { 100.0 } else { 1000.0 * t as f64 },
        );
    // V3: quota-on doubles (significant), quota-off unchanged (not significant).
    let b =
        five_rep_run(
            &tmp.path().join("b"),
            "V3",
            &text,
            |q, t| if q == QuotaMode::On { 200.0 } else { 1000.0 * t as f64 },
        );
    let plots = tmp.path().join("plots");
    let a = fsbench().arg("compare").arg(&a).arg(&b).arg("--plot").arg(&plots).assert().success();
    let (stdout, _) = out(&a);
    let row1 = stdout.lines().filter(|l| l.starts_with("1 ")).nth(1).unwrap();
    let cols: Vec<&str> = row1.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
    assert_eq!(cols.len(), 3, "{stdout}");
    assert!(cols[1].starts_with("1.0000 [") && cols[2].starts_with("2.0000* ["), "{stdout}");
    assert!(stdout.contains("V3/BASE-ext4-M-qoff") && stdout.contains("V3/BASE-ext4-M-qon"), "{stdout}");
    let words = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    // Under each ratio table: how many comparisons the correction counted.
    assert!(words.contains("after Holm–Bonferroni correction over the 4 tested comparisons in this table"), "{stdout}");
    // The legend says which interval the brackets are (the one `stats::ratio_interval` computes).
    // One statistic (new users' report): the ratio is of means, the one whose interval is printed.
    assert!(words.contains("ratio = mean / mean of BASE"), "{stdout}");
    assert!(words.contains("[..] its 95% CI (Fieller's interval)"), "{stdout}");
    assert!(plots.join("ext4-M-lat_fs_chown.png").exists());
    // The PNG decodes and has the plot's size.
    let img = image::open(plots.join("ext4-M-lat_fs_chown.png")).unwrap();
    assert_eq!((img.width(), img.height()), (900, 600));
    let svg = std::fs::read_to_string(plots.join("ext4-M-lat_fs_chown.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("V3-ext4-M-qon"));
}

#[test]
fn many_borderline_differences_are_not_all_significant_after_holm() {
    // Each of 4 ratios alone has p just below 0.05 (uncorrected: 4 stars); Holm over the
    // table's 4 comparisons keeps none: chance findings in a big table are not findings.
    let tmp = tempfile::tempdir().unwrap();
    let text = latfs_scenario_text("quota-smp", "repetitions = 5\n");
    let a = five_rep_run(&tmp.path().join("a"), "BASE", &text, |_, _| 1000.0);
    let b = five_rep_run(&tmp.path().join("b"), "V3", &text, |_, _| 1000.0 * 1.013);
    let o = fsbench().args(["compare", "--format", "csv"]).arg(&a).arg(&b).assert().success();
    let (csv, _) = out(&o);
    let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |n: &str| head.iter().position(|h| *h == n).unwrap();
    let (p, holm, sig) = (col("p_value"), col("p_holm"), col("significant"));
    let rows: Vec<Vec<&str>> =
        csv.lines().skip(1).map(|l| l.split(',').collect::<Vec<_>>()).filter(|r| !r[p].is_empty()).collect();
    assert!(!rows.is_empty(), "{csv}");
    for r in &rows {
        let (pv, ph): (f64, f64) = (r[p].parse().unwrap(), r[holm].parse().unwrap());
        assert!(pv < 0.05 && ph >= pv, "{csv}");
    }
    assert!(rows.iter().all(|r| r[sig] == "false"), "{csv}");
}

#[test]
fn incompatible_runs_are_refused_with_the_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let text = latfs_scenario_text("quota-smp", "repetitions = 5\n");
    let a = five_rep_run(&tmp.path().join("a"), "BASE", &text, |_, _| 10.0);
    // Another scenario name, the same quantities (a renamed copy): compared, with a note
    // (New users' report: it used to be refused).
    let mut cells = vec![latfs_cell(params(QuotaMode::Off, 1), &[1.0])];
    let other = write_run(&tmp.path().join("o"), &meta(Some("X"), "my-quota-smp", &text, "lat_fs", vec![]), &cells);
    let (_, err) = out(&fsbench().arg("compare").arg(&a).arg(&other).assert().success());
    assert!(err.contains("scenario names differ") && err.contains("my-quota-smp"), "{err}");
    // Same name, a condition of the measurement differs (quota_refs): shown key by key, compared.
    let changed = latfs_scenario_text("quota-smp", "repetitions = 5\n").replace("quota_refs = 2", "quota_refs = 0");
    let c = five_rep_run(&tmp.path().join("c"), "V3", &changed, |_, _| 10.0);
    let (stdout, err) = out(&fsbench().arg("compare").arg(&a).arg(&c).assert().success());
    assert!(err.contains("warning: BASE → V3: workload.quota_refs: 2 → 0"), "{err}");
    assert!(stdout.contains("V3-ext4-M-qoff"));
    // A measured quantity differs (the workload kind in the text): refused, saying why.
    let steps = changed.replace("kind = \"lat_fs\"", "kind = \"steps\"");
    let f = five_rep_run(&tmp.path().join("f"), "V4", &steps, |_, _| 10.0);
    let (_, err) = out(&fsbench().arg("compare").arg(&a).arg(&f).assert().code(2));
    assert!(err.contains("did not measure the same quantities: they measure different workloads"), "{err}");
    // Only the repetitions differ: a warning, and the comparison runs.
    let fewer = latfs_scenario_text("quota-smp", "repetitions = 3\n");
    let d = five_rep_run(&tmp.path().join("d"), "V3", &fewer, |_, _| 10.0);
    let page = tmp.path().join("d.html");
    let (stdout, err) = out(&fsbench().arg("compare").arg(&a).arg(&d).arg("--html").arg(&page).assert().success());
    assert!(err.contains("warning: scenario texts differ"), "{err}");
    assert!(stdout.contains("V3-ext4-M-qoff"));
    // The page shows the one check's warnings, once.
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(html.matches("scenario texts differ").count(), 1, "{html}");
    // Mount options differ in a cell both runs have.
    cells[0].filesystems[0].mount_options_requested.push("barrier=0".into());
    let planned = cells.iter().map(|c| c.params.clone()).collect();
    let e = write_run(&tmp.path().join("e"), &meta(Some("V3"), "quota-smp", &text, "lat_fs", planned), &cells);
    let (_, err) = out(&fsbench().arg("compare").arg(&a).arg(&e).assert().success());
    assert!(err.contains("mount options differ"), "{err}");
}

#[test]
fn bad_input_names_file_and_field_and_the_rest_renders() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_seed_run(&tmp.path().join("base"), "BASE");
    let bad = dir.join("cells/ext2-M-qoff-t1-open_close.json");
    std::fs::write(
        &bad,
        std::fs::read_to_string(&bad)
            .unwrap()
            .replace("\"total_loops_per_ms\": 948.1667", "\"total_loops_per_ms\": \"fast\""),
    )
    .unwrap();
    let trunc = dir.join("cells/ext4-S-qon-t8-chown.json");
    std::fs::write(&trunc, &std::fs::read(&trunc).unwrap()[..40]).unwrap();
    let (stdout, err) = out(&fsbench().arg("report").arg(&dir).assert().code(2));
    assert!(
        err.contains(&format!(
            "{}: latfs.repetitions[0].total_loops_per_ms: invalid type: string \"fast\"",
            bad.display()
        )),
        "{err}"
    );
    assert!(err.contains(&format!("{}: (whole file): not valid JSON", trunc.display())), "{err}");
    // The bad cells show as `-`, every other number is there.
    let row1: Vec<&str> = stdout.lines().find(|l| l.starts_with("1 ")).unwrap().split_whitespace().collect();
    assert_eq!(row1, ["1", "-", "764.5000"]);
    assert!(stdout.contains("15674.1247"));
    assert!(stdout.contains("Unreadable result files (2)"));
}

#[test]
fn unusable_input_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, err) = out(&fsbench().arg("report").arg(tmp.path()).assert().code(2));
    assert!(err.contains(&format!("{}: not a run directory (no run.json)", tmp.path().display())), "{err}");
    let dir = write_seed_run(&tmp.path().join("base"), "BASE");
    let run_json = dir.join("run.json");
    std::fs::write(
        &run_json,
        std::fs::read_to_string(&run_json).unwrap().replacen("\"schema\": 1", "\"schema\": 2", 1),
    )
    .unwrap();
    let (_, err) = out(&fsbench().arg("report").arg(&dir).assert().code(2));
    assert!(err.contains("result format version 2 is newer than this fsbench reads (up to 1)"), "{err}");
    let good = write_seed_run(&tmp.path().join("v3"), "V3");
    let (_, err) = out(&fsbench()
        .arg("compare")
        .arg(format!("V3={}", good.display()))
        .arg(format!("BASE={}", tmp.path().join("nope").display()))
        .assert()
        .code(2));
    assert!(err.contains("nope: does not exist"), "{err}");
}

#[test]
fn steps_report_prints_time_lines_per_iteration_and_flags_changes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_untar_run(tmp.path(), "2.5.63", &[("ext4", [850, 7100, 6800]), ("ext2", [900, 950, 920])]);
    // FSBENCH_PLOT_DEMO keeps the plots for looking at them by hand.
    let plots =
        std::env::var_os("FSBENCH_PLOT_DEMO").map(std::path::PathBuf::from).unwrap_or_else(|| tmp.path().join("plots"));
    let (stdout, _) = out(&fsbench().arg("report").arg(&dir).arg("--plot").arg(&plots).assert().success());
    assert!(
        stdout
            .contains("2.5.63:\next4:\niteration 1:\nrm -rf linux-2.5.63 0.02user 1.71system 0:02.16elapsed 80%CPU\n"),
        "{stdout}"
    );
    assert!(stdout.contains("sync 0.00user 0.03system 0:00.96elapsed 3%CPU"));
    let flags: Vec<&str> = stdout.lines().filter(|l| l.starts_with("! ")).collect();
    assert_eq!(flags.len(), 1, "only ext4's untar changes: {stdout}");
    assert!(flags[0].contains("tar zxf linux-2.5.63.tar.gz"));
    assert!(plots.join("2.5.63-ext4-steps.png").exists() && plots.join("2.5.63-ext2-steps.svg").exists());
    let csv = out(&fsbench().args(["report", "--format", "csv"]).arg(&dir).assert().success()).0;
    assert_eq!(csv.lines().count(), 1 + 2 * 3 * 3);
    assert!(
        csv.contains("2.5.63,ext4,ext4,2,2,untar,tar zxf linux-2.5.63.tar.gz,4.830000,5.860000,76.000000,14,0,true"),
        "{csv}"
    );
}

#[test]
fn noisy_cells_are_named_under_their_table() {
    let tmp = tempfile::tempdir().unwrap();
    let text = latfs_scenario_text("quota-smp", "");
    let cells = vec![
        latfs_cell(params(QuotaMode::Off, 1), &[100.0, 101.0, 99.0]), // CV 1%: quiet
        latfs_cell(params(QuotaMode::Off, 2), &[100.0, 160.0, 70.0]), // CV 40%: noisy
    ];
    let planned = cells.iter().map(|c| c.params.clone()).collect();
    let dir = write_run(tmp.path(), &meta(Some("BASE"), "quota-smp", &text, "lat_fs", planned), &cells);
    let (stdout, _) = out(&fsbench().arg("report").arg(&dir).assert().success());
    let line = stdout.lines().find(|l| l.starts_with("noisy repetitions:")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(line.contains("2 tasks BASE-ext4-M-qoff (CV "), "{line}");
    assert!(!line.contains("1 tasks"), "{line}");
}

fn disturbance(disturbed: bool) -> Option<Disturbance> {
    Some(Disturbance {
        wall_us: 300_000,
        own_cpu_us: 290_000,
        kernel_cpu_us: 4_000,
        foreign_cpu_us: if disturbed { 250_000 } else { 1_000 },
        steal_us: 0,
        share: if disturbed { 0.83 } else { 0.003 },
        disturbed,
        ..Disturbance::default()
    })
}

#[test]
fn disturbed_repetitions_and_cells_are_left_out_and_said_so() {
    let tmp = tempfile::tempdir().unwrap();
    let text = latfs_scenario_text("quota-smp", "repetitions = 5\n");
    // t1: one disturbed repetition (a slow outlier) among five; t2: every repetition disturbed.
    let mut part = latfs_cell(params(QuotaMode::Off, 1), &[1000.0, 1001.0, 400.0, 999.0, 1000.5]);
    for (i, r) in part.latfs.as_mut().unwrap().repetitions.iter_mut().enumerate() {
        r.disturbance = disturbance(i == 2);
    }
    let mut all = latfs_cell(params(QuotaMode::Off, 2), &[500.0, 510.0]);
    for r in &mut all.latfs.as_mut().unwrap().repetitions {
        r.disturbance = disturbance(true);
    }
    all.status = CellStatus::Disturbed;
    all.notes.push("every repetition was disturbed and the rerun budget (3) ran out: no statistics".into());
    let planned = vec![part.params.clone(), all.params.clone()];
    let run =
        write_run(&tmp.path().join("r"), &meta(Some("BASE"), "quota-smp", &text, "lat_fs", planned), &[part, all]);
    let o = fsbench().arg("report").arg(&run).assert().success();
    let (stdout, _) = out(&o);
    // The outlier is out of the median and the spread: 4 samples around 1000, not noisy.
    let row = stdout.lines().find(|l| l.starts_with("1 ")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(row.contains("1000.2500"), "{stdout}");
    assert!(!stdout.contains("noisy repetitions"), "{stdout}");
    assert!(stdout.contains("disturbed repetitions") && stdout.contains("(1 of 5)"), "{stdout}");
    assert!(stdout.contains("disturbed") && stdout.contains("rerun budget"), "{stdout}");
    // The gate leaves the disturbed cell out as missing, never as unchanged.
    let g = fsbench().args(["gate", "--baseline"]).arg(&run).arg("--candidate").arg(&run).output().unwrap();
    let gout = String::from_utf8_lossy(&g.stdout);
    let line = gout.lines().find(|l| l.contains("t2-chown")).unwrap_or_else(|| panic!("{gout}"));
    assert!(line.contains("missing"), "{gout}");
}

#[test]
fn a_cell_whose_every_repetition_was_disturbed_shows_its_numbers_marked() {
    // Paired comparisons: on a busy machine every repetition of a cell can be disturbed, and the
    // report then showed `-` with no number at all.
    let tmp = tempfile::tempdir().unwrap();
    let text = latfs_scenario_text("quota-smp", "repetitions = 3\n");
    let mut all = latfs_cell(params(QuotaMode::Off, 1), &[500.0, 510.0, 520.0]);
    for r in &mut all.latfs.as_mut().unwrap().repetitions {
        r.disturbance = disturbance(true);
    }
    all.status = CellStatus::Disturbed;
    let planned = vec![all.params.clone()];
    let run = write_run(&tmp.path().join("r"), &meta(Some("BASE"), "quota-smp", &text, "lat_fs", planned), &[all]);
    let (stdout, _) = out(&fsbench().arg("report").arg(&run).assert().success());
    let row = stdout.lines().find(|l| l.starts_with("1 ")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(row.contains("510.0000~") && !row.contains(" -"), "{stdout}");
    assert!(
        stdout.contains("~: every repetition disturbed") && stdout.contains("1 task BASE-ext4-M-qoff (3 of 3)"),
        "{stdout}"
    );
    let (md, _) = out(&fsbench().arg("report").arg(&run).args(["--format", "markdown"]).assert().success());
    assert!(md.contains("510.0000~") && md.contains("every repetition disturbed"), "{md}");
    let (csv, _) = out(&fsbench().arg("report").arg(&run).args(["--format", "csv"]).assert().success());
    assert!(csv.lines().next().unwrap().ends_with(",all_disturbed"), "{csv}");
    assert!(csv.contains(",510.0000,") && csv.lines().nth(1).unwrap().ends_with(",true"), "{csv}");
    let html = tmp.path().join("r.html");
    fsbench().arg("report").arg(&run).arg("--html").arg(&html).assert().success();
    assert!(std::fs::read_to_string(&html).unwrap().contains("510.0000~"), "the HTML page shares the tables");
    // Its plot says that nothing in it was measured undisturbed instead of drawing the
    // disturbed numbers as a measurement (issue 26).
    let plots = tmp.path().join("plots");
    fsbench().arg("report").arg(&run).arg("--plot").arg(&plots).assert().success();
    let svg = std::fs::read_to_string(plots.join("ext4-M-lat_fs_chown.svg")).unwrap();
    assert!(svg.contains("no measured values: every cell disturbed"), "{svg:.2000}");
    // Still out of gates: the cell has no samples to compare.
    let g = fsbench().args(["gate", "--baseline"]).arg(&run).arg("--candidate").arg(&run).output().unwrap();
    let gout = String::from_utf8_lossy(&g.stdout);
    let line = gout.lines().find(|l| l.contains("t1-chown")).unwrap_or_else(|| panic!("{gout}"));
    assert!(line.contains("missing"), "{gout}");
}

#[test]
fn a_disturbed_step_is_marked_in_markdown_and_html_tables() {
    let tmp = tempfile::tempdir().unwrap();
    let mut it = vec![
        step("rm -rf linux-2.5.63", "rm_rf", 20, 1710, 2160),
        step("tar zxf linux-2.5.63.tar.gz", "untar", 4830, 5860, 9000),
    ];
    it[1].disturbance = disturbance(true);
    let clean = vec![
        step("rm -rf linux-2.5.63", "rm_rf", 20, 1710, 2160),
        step("tar zxf linux-2.5.63.tar.gz", "untar", 4830, 5860, 7000),
    ];
    let cell = steps_cell("ext3", vec![clean, it]);
    let planned = vec![cell.params.clone()];
    let m = meta(Some("BASE"), "kernel-untar", &steps_scenario_text("kernel-untar"), "steps", planned);
    let run = write_run(&tmp.path().join("r"), &m, &[cell]);
    let o = fsbench().arg("report").arg(&run).args(["--format", "markdown"]).assert().success();
    let (md, _) = out(&o);
    assert_eq!(md.matches("(disturbed)").count(), 1, "{md}");
    assert!(md.contains("tar zxf linux-2.5.63.tar.gz (disturbed)"), "{md}");
    assert!(md.contains("iteration 2 untar (0.83 CPU)") && md.contains("left out of comparisons"), "{md}");
    let html = tmp.path().join("r.html");
    fsbench().arg("report").arg(&run).arg("--html").arg(&html).assert().success();
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("(disturbed)") && page.contains("iteration 2 untar (0.83 CPU)"),
        "the HTML page shares the walk"
    );
}

#[test]
fn compare_refuses_a_percentile_metric_with_plot_or_html_instead_of_drawing_total_loops() {
    // Issue 26: `compare --metric p99 --plot DIR` printed p99 tables and drew total loops
    // under them without a word; the page did the same.
    let tmp = tempfile::tempdir().unwrap();
    let text = latfs_scenario_text("quota-smp", "");
    let cell = latfs_cell(params(QuotaMode::Off, 1), &[500.0, 510.0, 520.0]);
    let planned = vec![cell.params.clone()];
    let run = write_run(&tmp.path().join("r"), &meta(Some("BASE"), "quota-smp", &text, "lat_fs", planned), &[cell]);
    let (a, b) = (format!("A={}", run.display()), format!("B={}", run.display()));
    for (flag, target) in [("--plot", tmp.path().join("plots")), ("--html", tmp.path().join("c.html"))] {
        let o = fsbench().args(["compare", &a, &b, "--metric", "p99", flag]).arg(&target).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flag}: {err}");
        assert!(err.contains("--metric p99 is for the tables only") && err.contains(flag), "{err}");
        assert!(!target.exists(), "{flag}: nothing written");
        // total_loops is what they draw: accepted.
        let o = fsbench().args(["compare", &a, &b, "--metric", "total_loops", flag]).arg(&target).output().unwrap();
        assert!(o.status.success(), "{flag}: {}", String::from_utf8_lossy(&o.stderr));
    }
}

#[test]
fn the_gate_page_shows_each_warning_once() {
    // Issue 26, Friction 7: the gate's HTML page printed its warnings twice (under the run
    // list and under the verdicts).
    let tmp = tempfile::tempdir().unwrap();
    let a =
        five_rep_run(&tmp.path().join("a"), "BASE", &latfs_scenario_text("quota-smp", "repetitions = 5\n"), |_, _| {
            10.0
        });
    let fewer = latfs_scenario_text("quota-smp", "repetitions = 3\n");
    let d = five_rep_run(&tmp.path().join("d"), "V3", &fewer, |_, _| 10.0);
    let page = tmp.path().join("g.html");
    let o = fsbench()
        .args(["gate", "--baseline"])
        .arg(&a)
        .arg("--candidate")
        .arg(&d)
        .arg("--html")
        .arg(&page)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("scenario texts differ"), "{err}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(html.matches("scenario texts differ").count(), 1, "{html}");
}
