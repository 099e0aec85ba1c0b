//! Seed 002 typed in as result files comes back out of `fsbench compare` with the seed's
//! lines exactly, followed by one side-by-side table per step with ratios.

use assert_cmd::prelude::*;

use crate::support::fsbench;
use crate::support::report::*;

/// The three kernels' runs, written under `root`; returns `LABEL=DIR` arguments in the seed's order.
fn seed_runs(root: &std::path::Path) -> Vec<String> {
    parse_seed002()
        .iter()
        .enumerate()
        .map(|(i, (kernel, _))| {
            let dir = write_seed002_run(&root.join(format!("k{i}")), kernel);
            format!("{}={}", seed002_label(kernel), dir.display())
        })
        .collect()
}

#[test]
fn every_seed002_line_parses_back_to_itself() {
    let data = parse_seed002();
    assert_eq!(data.len(), 3, "three kernels");
    for (_, fss) in &data {
        assert_eq!(fss.iter().map(|f| f.0.as_str()).collect::<Vec<_>>(), ["reiserfs", "reiser4", "ext3", "xfs"]);
        for (_, lines) in fss {
            assert_eq!(lines.len(), 3);
            for l in lines {
                assert_eq!(parse_time_line(l).seed_line(), *l);
            }
        }
    }
}

#[test]
fn seed002_round_trips_through_compare_with_side_by_side_tables() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = seed_runs(tmp.path());
    let plots = tmp.path().join("images");
    let out = fsbench().arg("compare").args(&runs).arg("--plot").arg(&plots).assert().success();
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();

    // The seed's block, from the first rule to the last sync line, with the label of its third kernel.
    let start = SEED002.find("-----------------------------------------------------------------\n2.5.60:").unwrap();
    let start = SEED002[..start].rfind('\n').unwrap() + 1;
    let end = SEED002.rfind("\n-\nTo unsubscribe").unwrap();
    let seed_block = SEED002[start..end].replace("2.5.62-mm3 elevator=as:", "2.5.62-mm3:") + "\n";
    let at = stdout.find(&seed_block).unwrap_or_else(|| panic!("seed lines not in output:\n{stdout}"));

    // Then one table per step, a row per filesystem, a column per kernel, ratios to 2.5.60.
    let tables = &stdout[at + seed_block.len()..];
    let mut from = 0;
    for step in ["step 1: rm -rf linux-2.5.63", "step 2: tar zxf linux-2.5.63.tar.gz", "step 3: sync"] {
        from += tables[from..].find(step).unwrap_or_else(|| panic!("no table `{step}`:\n{tables}"));
    }
    let header = tables.lines().find(|l| l.starts_with("fs ")).unwrap();
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["fs", "2.5.60", "[s]", "2.5.63", "[s]", "2.5.62-mm3", "[s]", "2.5.63/2.5.60", "2.5.62-mm3/2.5.60"]
    );
    // xfs untar: 35.17 s, 38.43 s, 42.07 s; one iteration each, so the ratios cannot be tested.
    let xfs_untar = tables[tables.find("step 2:").unwrap()..].lines().find(|l| l.starts_with("xfs ")).unwrap();
    assert_eq!(
        xfs_untar.split_whitespace().collect::<Vec<_>>(),
        ["xfs", "35.170", "38.430", "42.070", "1.0927?", "1.1962?"]
    );
    // ext3's sync, the seed's "something changed after 2.5.60": 8.14 s -> 15.11 s.
    let ext3_sync = tables[tables.find("step 3:").unwrap()..].lines().find(|l| l.starts_with("ext3 ")).unwrap();
    assert!(ext3_sync.contains("1.8563?"), "{ext3_sync}");
    assert!(stdout.contains("ratio = mean / mean of 2.5.60"));

    // The plots: one per step and one per filesystem.
    for stem in [
        "compare-step1-rm",
        "compare-step2-tar",
        "compare-step3-sync",
        "compare-reiserfs-iterations",
        "compare-reiser4-iterations",
        "compare-ext3-iterations",
        "compare-xfs-iterations",
    ] {
        let p = plots.join(format!("{stem}.png"));
        assert!(p.metadata().map(|m| m.len() > 1000).unwrap_or(false), "{} missing or empty", p.display());
    }
    let report = std::fs::read_to_string(plots.join("report.txt")).unwrap();
    assert_eq!(report, seed_block);
}

#[test]
fn steps_compare_csv_and_json_carry_the_ratios() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = seed_runs(tmp.path());
    let run = |fmt: &str| {
        let o = fsbench().args(["compare", "--format", fmt]).args(&runs).assert().success();
        String::from_utf8(o.get_output().stdout.clone()).unwrap()
    };
    let csv = run("csv");
    assert_eq!(csv.lines().count(), 1 + 3 * 4 * 3, "header + step x fs x label");
    assert!(csv.lines().any(|l| l.starts_with("2,tar zxf linux-2.5.63.tar.gz,xfs,2.5.63,1,1,38.430000,0.000000,1.09")));
    let json: serde_json::Value = serde_json::from_str(&run("json")).unwrap();
    assert_eq!(json["comparison"]["labels"][2], "2.5.62-mm3");
    assert_eq!(json["comparison"]["tables"].as_array().unwrap().len(), 3);
    let md = run("markdown");
    assert!(md.contains("| fs | 2.5.60 [s] | 2.5.63 [s] | 2.5.62-mm3 [s] |"), "{md}");
}
