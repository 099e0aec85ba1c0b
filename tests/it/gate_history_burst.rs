//! New users' report (issue #38, item 2): "the history gate cries wolf on a history made in
//! one burst". Seven quickstart runs 17 s apart, then an A/A candidate at a higher load:
//! `gate --history 5` said `create_unlink 65.08 51.42 -19.2% [-24.6%, -13.4%] regressed`.
//! A history gathered in minutes shows the spread of minutes; without a calibration it now
//! decides nothing (`inconclusive`, saying why and what to do), with one the calibrated
//! spread between runs bounds the interval, and a history spread over days still gates a
//! real regression.

use std::path::Path;

use crate::gate_calibrated::{gate, run, verdict};
use crate::gate_cli::quiet_calibration;

/// Run means that spread about 0.4% between runs, each run tight within itself.
const MEANS: [f64; 7] = [1000.0, 1004.0, 996.0, 1002.0, 998.0, 1001.0, 999.0];

fn hist(candidate: &Path) -> (i32, String, String) {
    gate(&["--history".as_ref(), "7".as_ref(), "--candidate".as_ref(), candidate.as_os_str(), "--json".as_ref()])
}

fn note(json: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    v["report"]["rows"][0]["note"].as_str().unwrap_or_default().to_string()
}

#[test]
fn a_history_made_in_one_burst_never_gates_regressed_without_a_calibration() {
    let d = tempfile::tempdir().unwrap();
    // Seven runs, the last 17 s after the first.
    for (i, m) in MEANS.iter().enumerate() {
        run(d.path(), &format!("H{i}"), *m, &format!("2010-11-11T12:00:{:02}Z", i * 17 / 6));
    }
    // The A/A candidate, measured later under a higher load: 10% slower, and tight.
    let aa = run(d.path(), "AA", 900.0, "2010-11-11T13:00:00Z");
    let (code, out, err) = hist(&aa);
    assert_eq!((code, verdict(&out).as_str()), (0, "inconclusive"), "{out}{err}");
    let said = note(&out);
    assert!(said.contains("7 runs started within 17s") && said.contains("one burst"), "{said}");
    assert!(said.contains("fsbench calibrate") && said.contains("at least 6 hours"), "{said}");
    assert!(err.contains("1 comparison(s) inconclusive") && err.contains("one burst"), "{err}");
    // With --inconclusive fail, the policy decides as for any inconclusive row.
    let (code, _, _) = gate(&[
        "--history".as_ref(),
        "7".as_ref(),
        "--candidate".as_ref(),
        aa.as_os_str(),
        "--inconclusive".as_ref(),
        "fail".as_ref(),
    ]);
    assert_eq!(code, 1);

    // With a calibration its spread between runs bounds the interval: a 0.1% calibrated
    // spread decides this -10% (a real regression as far as the calibration can tell).
    quiet_calibration(d.path(), "total_loops", &[&crate::gate_calibrated::params().id()]);
    let (code, out, err) = hist(&aa);
    assert_eq!((code, verdict(&out).as_str()), (1, "regressed"), "{out}{err}");
    assert!(!note(&out).contains("one burst"), "{out}");
}

#[test]
fn a_history_spread_over_days_still_gates_a_twenty_percent_regression() {
    let d = tempfile::tempdir().unwrap();
    for (i, m) in MEANS.iter().enumerate() {
        run(d.path(), &format!("H{i}"), *m, &format!("2010-11-1{i}T02:00:00Z"));
    }
    let slow = run(d.path(), "SLOW", 800.0, "2010-11-19T02:00:00Z");
    let (code, out, err) = hist(&slow);
    assert_eq!((code, verdict(&out).as_str()), (1, "regressed"), "{out}{err}");
    assert!(!err.contains("one burst"), "{err}");
    let same = run(d.path(), "SAME", 1000.5, "2010-11-17T02:00:00Z");
    let (code, out, err) = hist(&same);
    assert_eq!((code, verdict(&out).as_str()), (0, "unchanged"), "{out}{err}");
}
