//! The fio report on hand-made runs: its charts' bars and whiskers, its kernel counters
//! in every format.

use super::*;
use crate::model::*;
use crate::report::markup::Plain;
use crate::results::RunMeta;

fn counters(write_ios: u64, switches: u64) -> Counters {
    Counters {
        window_us: 2_000_000,
        devices: vec![DeviceCounters {
            write_ios,
            write_sectors: write_ios * 8,
            io_ticks_ms: write_ios / 10,
            ..Default::default()
        }],
        context_switches: Some(switches),
        ..Default::default()
    }
}

fn rep(index: u32, iops: f64, p99_us: f64, c: Option<Counters>) -> FioRepetition {
    let mut r = FioRepetition { index, counters: c, ..Default::default() };
    r.total.all.iops = iops;
    r.total.all.clat_ns.p99 = p99_us * 1e3;
    r
}

fn summary(v: &[f64]) -> Summary {
    crate::stats::summarize(v)
}

/// A fio cell on `fs` whose repetitions have `iops` and `p99` (µs), and write IOs `ios` (no counters when empty).
fn cell(fs: &str, iops: &[f64], p99: &[f64], ios: &[u64]) -> CellResult {
    let params = CellParams {
        fs: fs.into(),
        layout: Layout::S,
        quota: QuotaMode::Off,
        tasks: 1,
        test: None,
        fio: Default::default(),
        kernel: None,
    };
    let reps = (0..iops.len())
        .map(|i| rep(i as u32, iops[i], p99[i], ios.get(i).map(|&n| counters(n, 2000 * (i as u64 + 1)))))
        .collect();
    CellResult {
        fio: Some(FioResult {
            fio_version: "fio-3.33".into(),
            repetitions: reps,
            iops: summary(iops),
            clat_p99_us: summary(p99),
            ..Default::default()
        }),
        ..CellResult::new(&params, CellStatus::Ok, "")
    }
}

fn run(cells: Vec<CellResult>) -> LoadedRun {
    LoadedRun {
        dir: "results/fio/r1".into(),
        meta: RunMeta { workload: WorkloadKind::Fio, ..Default::default() },
        cells,
        problems: vec![],
    }
}

#[test]
fn charts_have_a_bar_per_label_and_cell_with_the_interval_as_whiskers() {
    let a =
        run(vec![cell("ext4", &[100.0, 110.0, 120.0], &[50.0, 70.0, 60.0], &[]), cell("xfs", &[300.0], &[9.0], &[])]);
    let b = run(vec![cell("ext4", &[90.0, 95.0], &[80.0, 85.0], &[])]);
    let runs = [("base", &a), ("new", &b)];
    let c = charts(&runs);
    assert_eq!(c.len(), 2);
    let (iops, p99) = (&c[0], &c[1]);
    assert_eq!((iops.stem.as_str(), p99.stem.as_str()), ("fio-iops", "fio-clat-p99"));
    assert_eq!(iops.labels, ["base", "new"]);
    assert_eq!(iops.cells, ["ext4-S-qoff-t1", "xfs-S-qoff-t1"]);
    assert_eq!(iops.bars.len(), 3);
    let s = summary(&[100.0, 110.0, 120.0]);
    assert_eq!(iops.bars[0].value, 110.0);
    assert_eq!(iops.bars[0].whisker, Some((s.ci95_low, s.ci95_high)));
    // One repetition: no interval, no whisker.
    assert_eq!((iops.bars[1].cell.as_str(), iops.bars[1].whisker), ("xfs-S-qoff-t1", None));
    assert_eq!((iops.bars[2].label.as_str(), iops.bars[2].value), ("new", 92.5));
    assert_eq!((p99.bars[0].value, p99.bars[0].whisker), (60.0, Some((50.0, 70.0))));
    assert!(iops.value_desc.starts_with("median IOPS over undisturbed repetitions"));
    let text = FioReport::build(&runs, None).seed_text(Some("./"));
    assert!(text.ends_with("\n./fio-iops.png\n./fio-clat-p99.png\n"), "{text}");
    assert!(!text.contains("\n\n\n./fio"), "{text}");
    // Nothing measured: no charts, so no empty figure.
    let none = run(vec![]);
    assert!(charts(&[("x", &none)]).is_empty());
}

#[test]
fn kernel_counters_of_fio_cells_are_in_every_format() {
    let r = run(vec![
        cell("ext4", &[100.0, 110.0], &[50.0, 60.0], &[400, 600]),
        cell("xfs", &[300.0, 310.0], &[9.0, 10.0], &[0, 0]),
        cell("btrfs", &[200.0, 210.0], &[20.0, 25.0], &[]),
    ]);
    let runs = [("base", &r)];
    let rep = FioReport::build(&runs, None);
    // A row per cell that recorded counters; the btrfs cell recorded none.
    let ids: Vec<&str> = rep.counters.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["ext4-S-qoff-t1", "xfs-S-qoff-t1"]);
    assert_eq!(rep.counters[0].write_ios, [400, 600]);

    let mut m: Box<dyn Markup> = Box::new(Plain::default());
    rep.write(&mut *m, false);
    let text = m.finish();
    assert!(text.contains("Kernel counters per repetition"), "{text}");
    let row = text.lines().find(|l| l.starts_with("base ext4-S-qoff-t1")).expect("the ext4 counters row");
    assert!(row.contains("400 600"), "{row}");
    // The quiet xfs cell is counted in the note, not listed.
    assert!(!text.lines().any(|l| l.starts_with("base xfs-S-qoff-t1")), "{text}");
    assert!(text.contains("1 cell left out: their block devices saw no write"), "{text}");

    let csv = rep.csv();
    let mut lines = csv.lines();
    assert!(lines.next().unwrap().ends_with(",iops_ratio,write_ios_median,mb_written_median,util_percent"));
    assert!(lines.next().unwrap().ends_with(",,500.0000,2.0480,2.5"), "{csv}");
    // The cell without counters keeps its columns, empty.
    assert!(csv.lines().nth(3).unwrap().ends_with(",,,"), "{csv}");

    let json = crate::report::json::to_json(&Box::new(FioReport::build(&runs, None)).json(&[]));
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["counters"].as_array().unwrap().len(), 2, "{json}");
    assert_eq!(doc["counters"][0]["write_ios"], serde_json::json!([400, 600]));

    // Without counters anywhere: no section, no columns, no JSON key (older files keep their shape).
    let plain = run(vec![cell("btrfs", &[200.0], &[20.0], &[])]);
    let runs = [("base", &plain)];
    let rep = FioReport::build(&runs, None);
    assert!(rep.csv().lines().next().unwrap().ends_with(",iops_ratio"));
    let json = crate::report::json::to_json(&Box::new(rep).json(&[]));
    assert!(!json.contains("\"counters\""), "{json}");
}

/// Issue 38 item 13: `IOPS -22108..58540` at n = 2. The mean of IOPS has no interval below
/// zero, in the table, the CSV and the chart's whisker; one repetition has none at all.
#[test]
fn the_iops_interval_never_reaches_below_zero_and_one_repetition_has_none() {
    let r = run(vec![cell("ext4", &[1000.0, 35000.0], &[50.0, 60.0], &[]), cell("xfs", &[17070.0], &[9.0], &[])]);
    let runs = [("base", &r)];
    let rep = FioReport::build(&runs, None);
    let rows = rep.table_rows("base", false);
    let high = summary(&[1000.0, 35000.0]).ci95_high;
    assert_eq!(rows[0][3], format!("0..{high:.0}"), "{rows:?}");
    assert_eq!(rows[1][3], "-", "{rows:?}");
    let csv = rep.csv();
    let line = csv.lines().find(|l| l.contains("ext4-S-qoff-t1")).unwrap();
    assert!(line.contains(&format!(",0,{high},")), "{line}");
    let c = charts(&runs);
    assert_eq!(c[0].bars[0].whisker, Some((0.0, high)));
    assert_eq!(c[0].bars[1].whisker, None);
}

/// Issue 38 item 34: fio's IOPS ratio had no interval and no mark. It gets lat_fs's: the
/// ratio of means on the catalogue's `iops` samples, Fieller's interval, and a mark; two
/// separate one-round runs are `?` (the gate's rule), with the note saying why.
#[test]
fn the_iops_ratio_has_an_interval_and_the_mark_of_lat_fs_ratios() {
    let a = run(vec![cell("ext4", &[1000.0, 1010.0, 990.0, 1005.0], &[50.0; 4], &[])]);
    let b = run(vec![cell("ext4", &[2000.0, 2020.0, 1980.0, 2010.0], &[50.0; 4], &[])]);
    let runs = [("base", &a), ("new", &b)];
    let rep = FioReport::build(&runs, Some(&CompareOptions::default()));
    let rows = rep.table_rows("new", true);
    let ratio = rows[0].last().unwrap();
    assert!(ratio.starts_with("2.0000? [") && ratio.ends_with(']'), "{rows:?}");
    let r = rep.rows.iter().find(|r| r.label == "new").unwrap().iops_ratio_of_means.clone().unwrap();
    let (lo, hi) = (r.ci_low, r.ci_high);
    assert!(lo > 1.9 && lo < 2.0 && hi > 2.0 && hi < 2.1, "{lo} {hi}");
    assert_eq!(r.untested, Some(crate::report::compare::Untested::WithinRunOnly));
    let mut m: Box<dyn Markup> = Box::new(Plain::default());
    rep.write(&mut *m, true);
    let text = m.finish().split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(text.contains("IOPS ratio = mean IOPS / mean IOPS of base") && text.contains("? not tested"), "{text}");
    assert!(text.contains("cannot be decided from the spread within a run"), "{text}");
}
