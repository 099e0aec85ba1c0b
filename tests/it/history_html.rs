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
