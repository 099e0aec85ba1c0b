//! Hostile text in result files: every string field of `run.json` and of a cell file is
//! poisoned in turn (newlines that start Markdown blocks, HTML, links, table rows,
//! terminal escapes, 65,536 characters) and every reader must print it as text or refuse
//! the file naming it, never obey it and never panic.
//!
//! Story: a run's planned `fs`, a step's `label` and `op`, and serde's quoted enum variants
//! reached the terminal and Markdown unescaped, because escaping went by a hand-kept list of
//! fields; a label of 65,536 characters panicked `report`, `compare` and `merge`.

use fsbench::gate::{GateOptions, evaluate, render_markdown, render_table};
use fsbench::model::{CellParams, LatfsTest, Layout, QuotaMode};
use fsbench::report::Format;
use fsbench::results::load_run;
use serde_json::Value;

use crate::support::fsbench;
use crate::support::report::{latfs_cell, latfs_scenario_text, meta, step, steps_cell, steps_scenario_text};

/// Markdown blocks, inline HTML, a link, a table row and terminal escapes in one value.
const INJECTION: &str = "x\n## fsbench gate: no regression\n<img src=https://evil.example/p.png>\n\
                         [EVIL](https://evil.example)\n| EVIL | row |\n\u{1b}[2J\u{1b}]8;;https://evil.example\u{7}\u{9b}31m\r";

fn payloads() -> Vec<String> {
    vec![INJECTION.to_string(), "L".repeat(65_536), format!("{}\n# EVIL", "é".repeat(5000))]
}

/// A lat_fs run and a steps run (run.json, one cell file), as JSON to poison.
fn seeds() -> Vec<(Value, Value)> {
    let p = CellParams {
        fs: "ext4".into(),
        layout: Layout::S,
        quota: QuotaMode::Off,
        tasks: 2,
        test: Some(LatfsTest::Chown),
        fio: Default::default(),
        kernel: None,
    };
    let text = latfs_scenario_text("hostile", "");
    let mut m = meta(Some("BASE"), "hostile", &text, "lat_fs", vec![p.clone()]);
    m.host.hostname = "host-a".into();
    let mut c = latfs_cell(p, &[100.0, 101.0, 99.5]);
    c.notes = vec!["a note".into()];
    c.error = Some("an error".into());
    c.filesystems[0].device = Some("/dev/loop0".into());
    c.filesystems[0].features = vec!["has_journal".into()];
    c.filesystems[0].queue.insert("read_ahead_kb".into(), "128".into());
    let latfs = (serde_json::to_value(&m).unwrap(), serde_json::to_value(&c).unwrap());
    let it = || vec![step("rm -rf linux", "rm_rf", 1, 2, 30), step("tar zxf linux.tar.gz", "untar", 10, 20, 300)];
    let sc = steps_cell("ext3", vec![it(), it(), it()]);
    let sm = meta(Some("BASE"), "steps", &steps_scenario_text("steps"), "steps", vec![sc.params.clone()]);
    let steps = (serde_json::to_value(&sm).unwrap(), serde_json::to_value(&sc).unwrap());
    vec![latfs, steps]
}

/// The number of string leaves (values, not keys) in `v`.
fn strings(v: &Value) -> usize {
    match v {
        Value::String(_) => 1,
        Value::Array(a) => a.iter().map(strings).sum(),
        Value::Object(m) => m.values().map(strings).sum(),
        _ => 0,
    }
}

/// Replace the `pick`-th string leaf of `v` with `with`.
fn poison(v: &mut Value, pick: &mut usize, with: &str) -> bool {
    match v {
        Value::String(s) => {
            if *pick == 0 {
                *s = with.to_string();
                return true;
            }
            *pick -= 1;
            false
        }
        Value::Array(a) => a.iter_mut().any(|x| poison(x, pick, with)),
        Value::Object(m) => m.values_mut().any(|x| poison(x, pick, with)),
        _ => false,
    }
}

fn write(dir: &std::path::Path, meta: &Value, cell: &Value) {
    std::fs::create_dir_all(dir.join("cells")).unwrap();
    std::fs::write(dir.join("run.json"), serde_json::to_vec(meta).unwrap()).unwrap();
    std::fs::write(dir.join("cells/cell.json"), serde_json::to_vec(cell).unwrap()).unwrap();
}

/// Text for a terminal: no control character but the line breaks and tabs it is laid out with.
fn assert_terminal_safe(what: &str, out: &str) {
    let bad =
        out.chars().find(|c| (c.is_control() && !matches!(c, '\n' | '\t')) || ('\u{202a}'..='\u{202e}').contains(c));
    assert!(bad.is_none(), "{what}: raw control character {bad:?} in terminal output");
}

/// Markdown: no line the attacker started (a heading, HTML, a link, a table row) and no raw
/// HTML or link outside a code block (inside one they are text).
fn assert_markdown_safe(what: &str, out: &str) {
    assert_terminal_safe(what, out);
    let mut fence: Option<usize> = None;
    for line in out.lines() {
        let l = line.trim_start();
        let ticks = l.len() - l.trim_start_matches('`').len();
        match fence {
            Some(n) if ticks >= n && l.trim_end().len() == ticks => fence = None,
            Some(_) => continue,
            None if ticks >= 3 => fence = Some(ticks),
            None => {}
        }
        let injected = l.starts_with("## fsbench gate: no regression")
            || l.starts_with("# EVIL")
            || l.starts_with('<')
            || l.starts_with("[EVIL")
            || l.starts_with("| EVIL |");
        assert!(!injected, "{what}: attacker's line in Markdown: {line:.300}");
        assert!(!line.contains("<img"), "{what}: raw HTML in Markdown: {line:.300}");
        assert!(!line.contains("](https://evil"), "{what}: a link in Markdown: {line:.300}");
    }
}

/// Render a loaded run every way `report`, `compare`, `gate` and `merge` do, checking each.
fn render_everything(what: &str, run: &fsbench::results::LoadedRun) {
    for p in &run.problems {
        assert_terminal_safe(what, p);
    }
    assert_terminal_safe(what, &fsbench::report::render_run(run, Format::Table));
    assert_terminal_safe(what, &fsbench::report::render_run(run, Format::Csv));
    assert_markdown_safe(what, &fsbench::report::render_run(run, Format::Markdown));
    let _ = fsbench::report::render_run(run, Format::Json);
    let both = vec![("A".to_string(), run.clone()), ("B".to_string(), run.clone())];
    for (f, md) in [(Format::Table, false), (Format::Markdown, true)] {
        match fsbench::report::render_compare(&both, f) {
            Ok(out) if md => assert_markdown_safe(what, &out),
            Ok(out) => assert_terminal_safe(what, &out),
            Err(e) => assert_terminal_safe(what, &e.to_string()),
        }
    }
    let opts = GateOptions { threshold: None, metric: None, allow_missing: true };
    match evaluate(run, run, &opts) {
        Ok(rep) => {
            assert_markdown_safe(what, &render_markdown(&rep, Default::default(), &[]));
            assert_terminal_safe(what, &render_table(&rep, 100));
        }
        Err(e) => assert_terminal_safe(what, &format!("{e:#}")),
    }
    if let Ok(groups) = fsbench::shard::merge::group_runs(vec![run.clone()]) {
        for g in &groups {
            if let Ok(hosts) = fsbench::shard::merge::merge_by_host(g) {
                if let Ok(out) = fsbench::shard::merge::render_group(&hosts, Format::Table) {
                    assert_terminal_safe(what, &out);
                }
                if let Ok(out) = fsbench::shard::merge::render_group(&hosts, Format::Markdown) {
                    assert_markdown_safe(what, &out);
                }
            }
        }
    }
}

#[test]
fn every_string_field_poisoned_in_turn_is_printed_as_text_or_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cases = 0;
    for (seed, (m, c)) in seeds().into_iter().enumerate() {
        for in_meta in [true, false] {
            let target = if in_meta { &m } else { &c };
            for pick in 0..strings(target) {
                for (k, payload) in payloads().iter().enumerate() {
                    let (mut m, mut c) = (m.clone(), c.clone());
                    poison(if in_meta { &mut m } else { &mut c }, &mut pick.clone(), payload);
                    let dir = tmp.path().join(format!("s{seed}-{in_meta}-{pick}-{k}"));
                    write(&dir, &m, &c);
                    let what = format!(
                        "seed {seed}, {} string #{pick}, payload {k}",
                        if in_meta { "run.json" } else { "cell" }
                    );
                    match load_run(&dir) {
                        Ok(run) => render_everything(&what, &run),
                        Err(e) => {
                            let e = e.to_string();
                            assert_terminal_safe(&what, &e);
                            assert!(e.contains("run.json") && !e.contains('\n'), "{what}: {e:.300}");
                            assert!(e.len() < 2000, "{what}: an error message quotes the whole value");
                        }
                    }
                    std::fs::remove_dir_all(&dir).unwrap();
                    cases += 1;
                }
            }
        }
    }
    assert!(cases > 100, "only {cases} cases: the seeds lost their strings");
}

#[test]
fn a_label_of_65536_characters_is_refused_on_load_naming_the_file_and_field() {
    let (mut m, c) = seeds().remove(1);
    m["label"] = Value::String("L".repeat(65_536));
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), &m, &c);
    let err = load_run(tmp.path()).unwrap_err().to_string();
    assert!(err.contains("run.json: label: 65536 characters, more than the 4096"), "{err}");
    let (m, mut c) = seeds().remove(1);
    c["steps"]["iterations"][0][1]["label"] = Value::String("L".repeat(65_536));
    write(tmp.path(), &m, &c);
    let run = load_run(tmp.path()).unwrap();
    assert!(
        run.problems[0].contains("cell.json: steps.iterations[0][1].label: 65536 characters"),
        "{:?}",
        run.problems
    );
}

#[test]
fn report_and_gate_markdown_show_a_newline_label_fs_and_op_as_text() {
    // The attack from the review: a step label, a planned fs and an op carrying blocks.
    let (mut m, mut c) = seeds().remove(1);
    m["planned_cells"][0]["fs"] = Value::String(INJECTION.into());
    c["steps"]["iterations"][0][0]["label"] = Value::String(INJECTION.into());
    c["steps"]["iterations"][1][1]["op"] = Value::String(INJECTION.into());
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("base");
    write(&run, &m, &c);
    let report = fsbench().args(["report", "--format", "markdown"]).arg(&run).output().unwrap();
    assert_markdown_safe("report --format markdown", &String::from_utf8_lossy(&report.stdout));
    assert_terminal_safe("report stderr", &String::from_utf8_lossy(&report.stderr));
    let plain = fsbench().arg("report").arg(&run).output().unwrap();
    assert_terminal_safe("report", &String::from_utf8_lossy(&plain.stdout));
    let md = tmp.path().join("gate.md");
    let gate = fsbench()
        .args(["gate", "--baseline"])
        .arg(&run)
        .arg("--candidate")
        .arg(&run)
        .arg("--markdown")
        .arg(&md)
        .output()
        .unwrap();
    assert_terminal_safe("gate", &String::from_utf8_lossy(&gate.stdout));
    assert_terminal_safe("gate stderr", &String::from_utf8_lossy(&gate.stderr));
    if let Ok(text) = std::fs::read_to_string(&md) {
        assert_markdown_safe("gate --markdown", &text);
        // One heading: a hostile name may show its `## ` as text inside a row, never start a line.
        assert_eq!(text.lines().filter(|l| l.starts_with("## fsbench gate")).count(), 1, "{text}");
    }
}

/// The fields of one CSV text (RFC 4180 quoting undone), every record.
fn csv_fields(csv: &str) -> Vec<String> {
    let (mut fields, mut cur, mut quoted, mut chars) = (Vec::new(), String::new(), false, csv.chars().peekable());
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' | '\n' if !quoted => fields.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    fields
}

/// No field a spreadsheet would run as a formula; numbers may begin with a sign.
fn assert_csv_inert(what: &str, csv: &str) {
    let fields = csv_fields(csv);
    assert!(fields.len() > 10, "{what}: {csv}");
    for f in fields {
        let formula = f.len() > 1 && f.starts_with(['=', '+', '-', '@', '\t', '\r']) && f.parse::<f64>().is_err();
        assert!(!formula, "{what}: a spreadsheet would run {f:?}");
    }
}

#[test]
fn csv_cells_from_hostile_labels_steps_and_meta_open_as_text_in_a_spreadsheet() {
    // Story: a label `=HYPERLINK(...)` or a step `@SUM(...)` from another lab's result file
    // became a live formula when report's or history's CSV was opened in a spreadsheet.
    let tmp = tempfile::tempdir().unwrap();
    let (mut lm, lc) = seeds().remove(0);
    lm["label"] = Value::String("=HYPERLINK(\"https://evil.example\",\"x\")".into());
    write(&tmp.path().join("latfs"), &lm, &lc);
    let (mut sm, mut sc) = seeds().remove(1);
    sm["label"] = Value::String("+cmd|' /C calc'!A0".into());
    sc["steps"]["iterations"][0][0]["label"] = Value::String("@SUM(A1:A9)".into());
    sc["steps"]["iterations"][0][1]["label"] = Value::String("-2+3+cmd|' /C calc'!A0".into());
    write(&tmp.path().join("steps"), &sm, &sc);
    for run in ["latfs", "steps"] {
        let out = fsbench().args(["report", "--format", "csv"]).arg(tmp.path().join(run)).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let csv = String::from_utf8_lossy(&out.stdout);
        assert!(csv.contains("'=HYPERLINK") || csv.contains("'+cmd"), "{csv}");
        assert_csv_inert(&format!("report {run}"), &csv);
    }
    let out = fsbench()
        .args(["compare", "--format", "csv"])
        .arg(format!("A={}", tmp.path().join("steps").display()))
        .arg(format!("B={}", tmp.path().join("steps").display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_csv_inert("compare steps", &String::from_utf8_lossy(&out.stdout));
    let text = latfs_scenario_text("hist", "");
    for i in 0..3 {
        crate::history::write_history_run(tmp.path(), i, &text, 100.0, &[("commit", "=1+1"), ("who", "@me")]);
    }
    let out = fsbench().args(["history", "--csv"]).arg(tmp.path().join("hist")).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let csv = String::from_utf8_lossy(&out.stdout);
    assert!(csv.contains(",'=1+1,'@me"), "{csv}");
    assert_csv_inert("history", &csv);
}
