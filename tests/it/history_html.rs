//! `fsbench history --html`: one self-contained page, a chart per series with its change
//! points, each point linked to its run; rendered in headless Chromium like the report page.

use std::path::Path;

use crate::support::fsbench;
use crate::support::report::latfs_scenario_text;

/// 30 runs under `root/hist`, 10% more loops from run 15 on, one with a hostile `--meta` value.
fn stepped_history(root: &Path) {
    let text = latfs_scenario_text("hist", "");
    for i in 0..30 {
        let value = if i < 15 { 100.0 } else { 110.0 } * (1.0 + 0.01 * ((i * 7) % 5) as f64 / 4.0);
        let commit = format!("c{i}");
        let tags: Vec<(&str, &str)> =
            if i == 3 { vec![("note", "<script>alert(1)</script>")] } else { vec![("commit", &commit)] };
        super::history::write_history_run(root, i, &text, value, &tags);
    }
}

fn history_page(root: &Path) -> (std::path::PathBuf, String) {
    stepped_history(root);
    std::fs::create_dir(root.join("pages")).unwrap();
    let page = root.join("pages/history.html");
    let out = fsbench().arg("history").arg(root.join("hist")).arg("--html").arg(&page).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    (page, html)
}

#[test]
fn the_history_page_charts_every_series_marks_its_change_points_and_links_each_run() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, html) = history_page(tmp.path());
    assert!(html.contains("Content-Security-Policy") && html.contains("default-src 'none'"), "{html}");
    assert!(!html.contains("<script"), "no script, and hostile text escaped");
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{html}");
    // Two cells, one metric each: two charts, each with the step found at run 16.
    assert_eq!(html.matches("<svg class=\"history-chart\"").count(), 2);
    assert_eq!(html.matches("class=\"change-point\"").count(), 2, "{html}");
    assert_eq!(html.matches("<circle class=\"point\"").count(), 60);
    // Links are relative to the page's directory, to each run's directory.
    let first = std::fs::read_dir(tmp.path().join("hist")).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name());
    let mut names: Vec<_> = first.map(|n| n.to_string_lossy().into_owned()).collect();
    names.sort();
    assert!(html.contains(&format!("<a href=\"../hist/{}/\">", names[0])), "{html}");
    assert!(html.contains("change +10."), "{html}");
}

#[test]
fn the_history_page_renders_in_chromium_with_its_charts_and_change_points() {
    let tmp = tempfile::tempdir().unwrap();
    let (page, _) = history_page(tmp.path());
    let Some(dom) = super::report_html::render_in_chromium(&test_name!(), &page) else { return };
    assert_eq!(dom.matches("<svg").count(), 2, "every chart in the DOM");
    assert_eq!(dom.matches("class=\"change-point\"").count(), 2);
    assert_eq!(dom.matches("<circle").count(), 60);
}

/// Issue #38, item 16: the run list had no label column; x was each series' own order, so a
/// series missing a run no longer lined up with its neighbours; the y axis left 0 out without
/// saying so.
#[test]
fn the_history_page_lines_series_up_by_run_labels_runs_and_says_where_the_y_axis_starts() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let text = latfs_scenario_text("hist", "");
    let mut dirs = Vec::new();
    for i in 0..8 {
        dirs.push(super::history::write_history_run(root, i, &text, 100.0 + i as f64, &[]));
    }
    // Run 3 (the 4th) measured ext2 only; run 2 has a label.
    let gone: Vec<_> = std::fs::read_dir(dirs[3].join("cells"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().contains("ext4"))
        .collect();
    assert_eq!(gone.len(), 1, "{gone:?}");
    std::fs::remove_file(&gone[0]).unwrap();
    let meta_path = dirs[2].join("run.json");
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&meta_path).unwrap()).unwrap();
    m["label"] = "nightly-<3>".into();
    std::fs::write(&meta_path, serde_json::to_vec(&m).unwrap()).unwrap();
    let page = root.join("history.html");
    let out = fsbench().arg("history").arg(root.join("hist")).arg("--html").arg(&page).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<th>label</th>") && html.contains("<td>nightly-&lt;3&gt;</td>"), "{html}");
    // Both charts put run 5 at one x, though the ext4 series has no point for run 4.
    let cx = |chart: &str, run: usize| -> String {
        let at = chart.find(&format!("data-run=\"{run}\" cx=\"")).unwrap_or_else(|| panic!("run {run}: {chart}"));
        chart[at..].split('"').nth(3).unwrap().to_string()
    };
    let charts: Vec<&str> = html.split("<svg class=\"history-chart\"").skip(1).collect();
    assert_eq!(charts.len(), 2);
    let (ext2, ext4) =
        if charts[0].contains("data-run=\"4\"") { (charts[0], charts[1]) } else { (charts[1], charts[0]) };
    assert!(!ext4.contains("data-run=\"4\""), "{ext4}");
    for run in [1, 5, 8] {
        assert_eq!(cx(ext2, run), cx(ext4, run), "run {run}");
    }
    // Values from 100 to 107: the scale leaves 0 out, and says so.
    assert_eq!(html.matches("class=\"axis-note\"").count(), 2, "{html}");
    assert!(html.contains("not from 0"), "{html}");
}
