//! `--html`: the self-contained report page, checked as text and rendered in a real headless
//! Chromium (screenshot not blank, the DOM holds the run's numbers). The pages and their
//! screenshots are kept under `target/tmp/html-report/` for people (and CI artifacts) to look at.

use std::path::{Path, PathBuf};

use assert_cmd::prelude::*;

use crate::support::report::*;
use crate::support::{fsbench, is_root, skip};

/// Where pages and screenshots are kept after the test.
fn artifact_dir() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("html-report");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The quota-smp comparison of seed 000 (BASE against V3) as a page.
fn quota_smp_page(tmp: &Path) -> PathBuf {
    let a = write_seed_run(&tmp.join("base"), "BASE");
    let b = write_seed_run(&tmp.join("v3"), "V3");
    let page = artifact_dir().join("quota-smp-compare.html");
    fsbench().arg("compare").arg(&a).arg(&b).arg("--html").arg(&page).assert().success();
    page
}

/// The kernel-untar comparison (steps) as a page.
fn untar_page(tmp: &Path) -> PathBuf {
    let a = write_untar_run(&tmp.join("a"), "2.5.63", &[("ext4", [850, 7100, 6800]), ("ext2", [900, 950, 920])]);
    let b = write_untar_run(&tmp.join("b"), "V3", &[("ext4", [800, 810, 790]), ("ext2", [880, 900, 910])]);
    let page = artifact_dir().join("kernel-untar-compare.html");
    fsbench().arg("compare").arg(&a).arg(&b).arg("--html").arg(&page).assert().success();
    page
}

/// The contents list comes after the title and the run list, before the first table.
fn contents_come_first(html: &str) {
    let nav = html.find("<nav>").expect("a contents list");
    assert!(html.find("</ul>").unwrap() < nav, "the run list comes before the contents");
    assert!(nav < html.find("<table>").unwrap(), "the contents come before the first table");
    assert!(nav < html.find("<h2 id=").unwrap(), "the contents come before the first section");
}

/// Every value of seed 000's tables, as the report prints it.
fn seed_values() -> Vec<String> {
    parse_seed000().iter().flat_map(|t| t.rows.iter().flat_map(|r| r[1..].to_vec())).collect()
}

#[test]
fn quota_smp_page_holds_every_table_plot_and_number_and_loads_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let html = std::fs::read_to_string(quota_smp_page(tmp.path())).unwrap();
    let tables = parse_seed000().len();
    // One plot per seed table; per table the values and the ratios; two provenance tables per run.
    assert_eq!(html.matches("<figure>").count(), tables, "one plot per table");
    assert_eq!(html.matches("<svg").count(), tables);
    assert_eq!(html.matches("<table>").count(), 2 * tables + 2 * 2, "values + ratios per table, provenance per run");
    contents_come_first(&html);
    for v in seed_values() {
        assert!(html.contains(&format!("<td class=\"num\">{v}</td>")), "{v} missing");
    }
    // Self-contained: nothing to fetch, nothing to run.
    for bad in ["<script", "<link", " src=", "@import", "url("] {
        assert!(!html.contains(bad), "page contains {bad}");
    }
    assert!(html.contains("Provenance and environment") && html.contains("host.hostname"));
    assert!(html.contains("@media print"));
}

#[test]
fn text_from_results_is_escaped_in_the_page() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_seed_run(tmp.path(), "BASE");
    // A hand-edited run.json: markup and a terminal escape in text fields.
    let path = dir.join("run.json");
    let mut meta: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    meta["host"]["hostname"] = "<img src=x onerror=alert(1)>\u{1b}[2J".into();
    let text = "name = \"</pre><script>alert(2)</script>\"";
    meta["scenario_text"] = text.into();
    // Consistent with its hash: a run.json whose text does not match is refused before any page.
    meta["scenario_sha256"] = fsbench::results::sha256_hex(text.as_bytes()).into();
    std::fs::write(&path, serde_json::to_vec(&meta).unwrap()).unwrap();
    let page = tmp.path().join("p.html");
    fsbench().arg("report").arg(&dir).arg("--html").arg(&page).assert().success();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("<img") && !html.contains("<script") && !html.contains('\u{1b}'));
    assert!(html.contains("&lt;img src=x onerror=alert(1)&gt;\\u{1b}[2J"));
    assert!(html.contains("&lt;/pre&gt;&lt;script&gt;"));
}

#[test]
fn report_html_takes_one_run_and_a_writable_file() {
    let tmp = tempfile::tempdir().unwrap();
    let a = write_seed_run(&tmp.path().join("a"), "BASE");
    let b = write_seed_run(&tmp.path().join("b"), "V3");
    let page = tmp.path().join("p.html");
    fsbench().arg("report").arg(&a).arg(&b).arg("--html").arg(&page).assert().code(2);
    fsbench().arg("report").arg(&a).arg("--html").arg(tmp.path().join("no/such/dir/p.html")).assert().code(2);
    assert!(!page.exists());
}

/// A Chromium on PATH.
pub fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|n| std::env::split_paths(&path).map(move |d| d.join(n)))
        .find(|p| p.is_file())
}

/// Run headless Chromium on `page` with `what` (`--screenshot=..` or `--dump-dom`); its stdout.
fn headless(chromium: &Path, page: &Path, what: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    // No network, no first-run work, a fresh profile: the page must render from itself alone.
    let out = std::process::Command::new("timeout")
        .arg("120")
        .arg(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--window-size=1280,2000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(what)
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "chromium {what}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Render `page` in Chromium: keep a screenshot next to it, check it is a page with plots
/// on it (not blank, not only text), and return the DOM as Chromium built it.
pub fn render_in_chromium(test: &str, page: &Path) -> Option<String> {
    let Some(chromium) = chromium() else {
        if is_root() {
            skip(test, "chromium is not installed (scripts/test.sh installs it as root)");
        } else {
            eprintln!("SKIP {test}: chromium is not installed");
        }
        return None;
    };
    let png = page.with_extension("png");
    let _ = std::fs::remove_file(&png);
    headless(&chromium, page, &format!("--screenshot={}", png.display()));
    let img = image::open(&png).unwrap_or_else(|e| panic!("{}: {e}", png.display())).to_rgb8();
    assert_eq!((img.width(), img.height()), (1280, 2000));
    let total = (img.width() * img.height()) as usize;
    let inked = img.pixels().filter(|p| p.0.iter().any(|c| *c < 200)).count();
    // Plot lines and bars are the only saturated colours on the page.
    let coloured = img.pixels().filter(|p| p.0.iter().max().unwrap() - p.0.iter().min().unwrap() > 80).count();
    assert!(inked * 100 > total, "screenshot {} is nearly blank: {inked} of {total} pixels inked", png.display());
    assert!(coloured > 2000, "screenshot {} shows no plot: {coloured} coloured pixels", png.display());
    eprintln!("{test}: screenshot {} ({inked} inked, {coloured} coloured pixels)", png.display());
    Some(headless(&chromium, page, "--dump-dom"))
}

#[test]
fn quota_smp_page_renders_in_chromium_with_the_runs_numbers() {
    let tmp = tempfile::tempdir().unwrap();
    let page = quota_smp_page(tmp.path());
    let Some(dom) = render_in_chromium(&test_name!(), &page) else { return };
    let tables = parse_seed000().len();
    assert_eq!(dom.matches("<svg").count(), tables, "every plot in the DOM");
    assert_eq!(dom.matches("<table>").count(), 2 * tables + 4, "every table in the DOM");
    for v in seed_values() {
        assert!(dom.contains(&format!(">{v}</td>")), "{v} missing from the rendered DOM");
    }
    // Printable: Chromium's print path (print CSS) makes a PDF of it, kept beside the page.
    let pdf = page.with_extension("pdf");
    let _ = std::fs::remove_file(&pdf);
    let chromium = chromium().unwrap();
    headless(&chromium, &page, &format!("--print-to-pdf={}", pdf.display()));
    let bytes = std::fs::read(&pdf).unwrap();
    assert!(bytes.starts_with(b"%PDF") && bytes.len() > 100_000, "{}: {} bytes", pdf.display(), bytes.len());
}

#[test]
fn kernel_untar_page_renders_in_chromium_with_every_iteration() {
    let tmp = tempfile::tempdir().unwrap();
    let page = untar_page(tmp.path());
    let html = std::fs::read_to_string(&page).unwrap();
    // Two runs × two filesystems: one table and one per-iteration chart each.
    assert_eq!(html.matches("<figure>").count(), 4);
    // The side-by-side step tables open the page: the contents come before them, and list them.
    contents_come_first(&html);
    assert!(html.contains("<li><a href=\"#s2\">Steps side by side</a></li>"), "{html}");
    let Some(dom) = render_in_chromium(&test_name!(), &page) else { return };
    assert_eq!(dom.matches("<svg").count(), 4);
    // ext4's untar of iteration 2 in the first run: 7100 * 10 + 5000 ms.
    for t in ["1:16.00elapsed", "0:13.10elapsed", "0:02.16elapsed", "80%CPU"] {
        assert!(dom.contains(t), "{t} missing from the rendered DOM");
    }
}

#[test]
fn gate_page_shows_the_verdicts_above_the_comparison() {
    let tmp = tempfile::tempdir().unwrap();
    let a = write_seed_run(&tmp.path().join("base"), "BASE");
    let b = write_seed_run(&tmp.path().join("v3"), "V3");
    let page = artifact_dir().join("quota-smp-gate.html");
    // One repetition per cell: nothing can be significant, so no regression.
    fsbench()
        .arg("gate")
        .arg("--baseline")
        .arg(&a)
        .arg("--candidate")
        .arg(&b)
        .arg("--html")
        .arg(&page)
        .assert()
        .success();
    let html = std::fs::read_to_string(&page).unwrap();
    let gate = html.find("Gate: no regression").expect("verdict heading");
    assert!(gate < html.find("<figure>").unwrap(), "verdicts come before the tables");
    assert!(html.contains("<th scope=\"col\">verdict</th>") && html.contains("regressed, "));
    assert_eq!(html.matches("<svg").count(), parse_seed000().len());
    // Rows the data could not decide are tinted, so they do not read as settled (issue 26, Friction 9).
    let inconclusive: Vec<&str> = html.lines().filter(|l| l.contains("<td>inconclusive</td>")).collect();
    assert!(!inconclusive.is_empty(), "one repetition per cell decides nothing");
    assert!(inconclusive.iter().all(|l| l.starts_with("<tr class=\"unsure\">")), "{inconclusive:?}");
}
