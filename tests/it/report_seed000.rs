//! Seed 000 typed in as result files comes back out of `fsbench compare` in the seed's layout.

use assert_cmd::prelude::*;

use crate::support::fsbench;
use crate::support::report::*;

/// Find the seed table's header in the output and check the rows under it, field by field.
fn assert_table_in(output: &str, t: &SeedTable, from: usize) -> usize {
    let lines: Vec<&str> = output.lines().collect();
    let pos = from
        + lines[from..]
            .iter()
            .position(|l| l.split_whitespace().collect::<Vec<_>>() == t.header)
            .unwrap_or_else(|| panic!("header {:?} not in output:\n{output}", t.header));
    for (k, row) in t.rows.iter().enumerate() {
        let got: Vec<&str> = lines[pos + 1 + k].split_whitespace().collect();
        assert_eq!(got, *row, "table {}-{}-{} row {k}", t.fs, t.layout, t.test);
    }
    // The title precedes the header, as in the seed.
    assert_eq!(lines[pos - 2], format!("lat_fs_{}", t.test));
    pos
}

#[test]
fn seed000_round_trips_through_compare() {
    let tmp = tempfile::tempdir().unwrap();
    let base = write_seed_run(&tmp.path().join("base"), "BASE");
    let v3 = write_seed_run(&tmp.path().join("v3"), "V3");
    let tables = parse_seed000();
    assert_eq!(tables.len(), 16, "seed has 16 tables");
    let plots = tmp.path().join("images");
    let out = fsbench()
        .arg("compare")
        .arg(format!("BASE={}", base.display()))
        .arg(format!("V3={}", v3.display()))
        .arg("--plot")
        .arg(&plots)
        .assert()
        .success();
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    // Each table is searched after the previous one: same order as the seed.
    let mut next = 0;
    for t in &tables {
        next = assert_table_in(&stdout, t, next) + 1;
    }
    // Sections as in the seed.
    for s in [
        "Results for ext2 mounttype:M",
        "Results for ext2 mounttype:S",
        "Results for ext4 mounttype:M",
        "Results for ext4 mounttype:S",
    ] {
        assert!(stdout.lines().any(|l| l == s), "missing section {s}");
    }
    // One repetition per cell: ratios are shown but cannot be tested for significance.
    assert!(stdout.contains("V3/BASE-ext2-M-qon"));
    assert!(stdout.contains("1.2134?"), "927.6667/764.5 = 1.2134, untestable:\n{stdout}");
    assert!(!stdout.lines().any(|l| l.contains('*') && l.starts_with(char::is_numeric)));

    // The plot directory holds the seed's image names and its text, byte for byte.
    for t in &tables {
        for ext in ["png", "svg"] {
            let p = plots.join(format!("{}-{}-lat_fs_{}.{ext}", t.fs, t.layout, t.test));
            assert!(p.metadata().map(|m| m.len() > 1000).unwrap_or(false), "{} missing or empty", p.display());
        }
    }
    let report = std::fs::read_to_string(plots.join("report.txt")).unwrap();
    let seed_body = &SEED000[SEED000.find("Results for ext2 mounttype:M\n\nlat_fs").unwrap()..];
    assert_eq!(report.trim_end(), seed_body.replace("./images/", "./").trim_end());
}

#[test]
fn seed_text_is_exact_with_the_seed_image_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let base = fsbench::results::load_run(&write_seed_run(&tmp.path().join("b"), "BASE")).unwrap();
    let v3 = fsbench::results::load_run(&write_seed_run(&tmp.path().join("v"), "V3")).unwrap();
    let text = fsbench::report::seed_text(&[("BASE", &base), ("V3", &v3)], Some("./images/"));
    let seed_body = &SEED000[SEED000.find("Results for ext2 mounttype:M\n\nlat_fs").unwrap()..];
    assert_eq!(text.trim_end(), seed_body.trim_end());
}

#[test]
fn report_of_one_run_has_its_columns_only() {
    let tmp = tempfile::tempdir().unwrap();
    let base = write_seed_run(&tmp.path().join("base"), "BASE");
    let out = fsbench().arg("report").arg(&base).assert().success();
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let first = &parse_seed000()[0];
    let header: Vec<&str> = stdout.lines().find(|l| l.starts_with("#nr_task")).unwrap().split_whitespace().collect();
    assert_eq!(header, ["#nr_task", "BASE-ext2-M-qoff", "BASE-ext2-M-qon"]);
    let row1: Vec<&str> = stdout.lines().find(|l| l.starts_with("1 ")).unwrap().split_whitespace().collect();
    assert_eq!(row1, [first.rows[0][0].as_str(), &first.rows[0][1], &first.rows[0][2]]);
}

#[test]
fn other_formats_carry_the_same_numbers() {
    let tmp = tempfile::tempdir().unwrap();
    let base = write_seed_run(&tmp.path().join("base"), "BASE");
    let v3 = write_seed_run(&tmp.path().join("v3"), "V3");
    let run = |fmt: &str| {
        let o = fsbench()
            .args(["compare", "--format", fmt])
            .arg(format!("BASE={}", base.display()))
            .arg(format!("V3={}", v3.display()))
            .assert()
            .success();
        String::from_utf8(o.get_output().stdout.clone()).unwrap()
    };
    let csv = run("csv");
    assert_eq!(csv.lines().count(), 1 + 256, "header + one row per cell");
    assert!(
        csv.lines().any(
            |l| l.starts_with("V3,ext2,M,on,open_close,1,V3-ext2-M-qon,1,927.6667,") && l.ends_with(",1.2134,,,,,")
        ),
        "{csv}"
    );
    let md = run("markdown");
    assert!(md.contains("| #nr_task | BASE-ext2-M-qoff | BASE-ext2-M-qon | V3-ext2-M-qoff | V3-ext2-M-qon |"));
    assert!(md.contains("| 1 | 948.1667 | 764.5000 | 946.3333 | 927.6667 |"));
    let json: serde_json::Value = serde_json::from_str(&run("json")).unwrap();
    let t0 = &json["tables"][0];
    assert_eq!(t0["fs"], "ext2");
    assert_eq!(t0["columns"][3]["name"], "V3-ext2-M-qon");
    assert_eq!(t0["values"][0][3]["summary"]["median"], 927.6667);
    assert!((t0["ratios"]["values"][0][1]["ratio"].as_f64().unwrap() - 927.6667 / 764.5).abs() < 1e-9);
}
