//! Stored profiles are other people's bytes: `report` (text and HTML) shows the good ones
//! (top functions, a flame graph) and says "no profile: ..." for a huge, garbled, linked or
//! missing one, escapes control characters and markup in frames, cuts deep stacks, and
//! never fails because of a profile.

use std::path::Path;

use fsbench::model::{CellParams, CellProfile, LatfsTest, Layout, QuotaMode};

use crate::support::fsbench;
use crate::support::report::{latfs_cell, latfs_scenario_text, meta, write_run};

fn params(tasks: u32) -> CellParams {
    CellParams {
        fs: "ext4".into(),
        layout: Layout::S,
        quota: QuotaMode::Off,
        tasks,
        test: Some(LatfsTest::WriteTruncate),
        fio: Default::default(),
        kernel: None,
    }
}

fn profiled(id: &str) -> CellProfile {
    CellProfile {
        event: Some("cpu-clock".into()),
        frequency_hz: Some(999),
        kernel_release: Some("6.18.0".into()),
        samples: 10,
        stacks: 2,
        file: Some(format!("profiles/{id}.folded")),
        ..CellProfile::default()
    }
}

/// A run of 8 cells (tasks 1..8), each with a profile record, and their profile files as `files` says.
fn run_with_profiles(dir: &Path, files: &[(u32, Option<Vec<u8>>)]) -> std::path::PathBuf {
    let text = latfs_scenario_text("hostile-profiles", "");
    let cells: Vec<_> = files
        .iter()
        .map(|(t, _)| {
            let mut c = latfs_cell(params(*t), &[10.0, 11.0, 12.0]);
            c.profile = Some(profiled(&c.id));
            c
        })
        .collect();
    let planned = cells.iter().map(|c| c.params.clone()).collect();
    let run = write_run(dir, &meta(None, "hostile-profiles", &text, "lat_fs", planned), &cells);
    std::fs::create_dir_all(run.join("profiles")).unwrap();
    for ((_, bytes), c) in files.iter().zip(&cells) {
        if let Some(b) = bytes {
            std::fs::write(run.join("profiles").join(format!("{}.folded", c.id)), b).unwrap();
        }
    }
    run
}

#[test]
fn hostile_profiles_are_escaped_cut_or_refused_and_the_report_still_renders() {
    let d = tempfile::tempdir().unwrap();
    let deep: Vec<String> = (0..5000).map(|i| format!("deep_{i}")).collect();
    let run = run_with_profiles(
        d.path(),
        &[
            // A good one, with a terminal escape and markup in frames.
            (1, Some(b"fsbench;vfs_write;ext4_da_write_begin 6\nfsbench;evil\x1b]0;owned\x07;<script>alert(1)</script> 4\n".to_vec())),
            // Garbled: not `stack count`.
            (2, Some(b"fsbench;vfs_write lots\n".to_vec())),
            // Over the read cap.
            (3, Some(vec![b'x'; 5 << 20])),
            // Missing.
            (4, None),
            // 5000 frames deep.
            (5, Some(format!("fsbench;{} 3\n", deep.join(";")).into_bytes())),
            // Not UTF-8.
            (6, Some(b"\xff\xfe;x 1\n".to_vec())),
        ],
    );
    // A link instead of a file is never followed.
    let linked = run.join("profiles/ext4-S-qoff-t6-write_truncate.folded");
    std::fs::remove_file(&linked).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", &linked).unwrap();

    let out = fsbench().arg("report").arg(&run).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains('\x1b') && !text.contains('\x07'), "control characters are shown, not obeyed");
    assert!(text.contains("Profile of ext4-S-qoff-t1-write_truncate"), "{text}");
    assert!(text.contains("ext4_da_write_begin"), "{text}");
    assert!(text.contains("ext4-S-qoff-t2-write_truncate: no profile:") && text.contains("line 1 is not"), "{text}");
    assert!(
        text.contains("ext4-S-qoff-t3-write_truncate: no profile:") && text.contains("MiB a profile may be"),
        "{text}"
    );
    assert!(text.contains("ext4-S-qoff-t4-write_truncate: no profile:") && text.contains("missing"), "{text}");
    assert!(text.contains("ext4-S-qoff-t6-write_truncate: no profile:"), "{text}");
    assert!(!text.contains("root:x:0"), "the link was not followed");
    // The deep stack keeps its leaf.
    assert!(text.contains("Profile of ext4-S-qoff-t5-write_truncate") && text.contains("deep_4999"), "{text}");

    let page = d.path().join("page.html");
    let out = fsbench().arg("report").arg(&run).arg("--html").arg(&page).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("<script"), "no script on the page, the flame graph's included");
    assert!(html.contains("href=\"data:image/svg+xml,"), "the flame graphs are embedded");
    assert!(html.contains("Flame graph of ext4-S-qoff-t1-write_truncate"));
}

#[test]
fn compare_lists_the_functions_that_grew_beyond_the_noise_and_a_garbled_side_says_so() {
    let d = tempfile::tempdir().unwrap();
    let a = run_with_profiles(
        &d.path().join("a"),
        &[
            (1, Some(b"w;vfs_write;ext4_da_write_begin 600\nw;do_truncate 400\n".to_vec())),
            (2, Some(b"w;x 5\n".to_vec())),
        ],
    );
    let b = run_with_profiles(
        &d.path().join("b"),
        &[
            (
                1,
                Some(
                    b"w;vfs_write;ext4_journalled_write_end;jbd2_journal_get_write_access 500\nw;do_truncate 400\n"
                        .to_vec(),
                ),
            ),
            (2, Some(b"garbage\n".to_vec())),
        ],
    );
    let out = fsbench().arg("compare").arg(&a).arg(&b).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let section = &text[text.find("Profile diff of ext4-S-qoff-t1-write_truncate").expect(&text)..];
    assert!(section.contains("function (grew)") && section.contains("jbd2_journal_get_write_access"), "{section}");
    assert!(section.contains("function (shrank)") && section.contains("ext4_da_write_begin"), "{section}");
    // do_truncate: 40.0% vs 44.4% of samples: within the noise of 1000 and 900 samples.
    let grown_and_shrunk: Vec<&str> = section.lines().filter(|l| l.contains("do_truncate")).collect();
    assert!(grown_and_shrunk.is_empty(), "{section}");
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(
            "ext4-S-qoff-t2-write_truncate (a → b): b: no profile: ext4-S-qoff-t2-write_truncate.folded: line 1 is not"
        ),
        "{text}"
    );
}

/// `compare --format email` in the 0-day layout, checked line by line against a stored
/// example (`tests/it/email_example.txt`; `FSBENCH_BLESS=1` writes it anew).
/// Two lat_fs runs under `d`, `ordered` (a) and `journal` (b), of one write_truncate cell
/// with profiles: journal 48% slower, its profile grown in jbd2.
fn ordered_and_journal_runs(d: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let mk = |dir: &str, label: &str, samples: &[f64], folded: &[u8]| {
        let text = latfs_scenario_text("email", "");
        let mut c = latfs_cell(params(1), samples);
        c.filesystems[0].mount_options_requested = vec!["barrier=0".into(), format!("data={label}")];
        c.profile = Some(profiled(&c.id));
        let run = write_run(&d.join(dir), &meta(Some(label), "email", &text, "lat_fs", vec![c.params.clone()]), &[c]);
        std::fs::create_dir_all(run.join("profiles")).unwrap();
        std::fs::write(run.join("profiles/ext4-S-qoff-t1-write_truncate.folded"), folded).unwrap();
        run
    };
    let a = mk("a", "ordered", &[42.0, 44.0, 41.0], b"w;vfs_write;ext4_da_write_begin 600\nw;do_truncate 400\n");
    let b = mk(
        "b",
        "journal",
        &[22.0, 20.5, 23.0],
        b"w;vfs_write;ext4_write_begin 300\nw;vfs_write;ext4_journalled_write_end;jbd2_journal_get_write_access 300\nw;do_truncate 400\n",
    );
    (a, b)
}

#[test]
fn compare_format_email_fits_80_columns_in_the_stored_layout() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = ordered_and_journal_runs(d.path());
    let out = fsbench().arg("compare").arg(&a).arg(&b).args(["--format", "email"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    for l in text.lines() {
        assert!(l.chars().count() <= 80, "{} columns: {l}", l.chars().count());
    }
    // The run directory is the test's own temporary one.
    let text = text.replace(&a.display().to_string(), "RUN_DIR_OF_A");
    let stored = crate::support::crate_root().join("tests/it/email_example.txt");
    if std::env::var_os("FSBENCH_BLESS").is_some() {
        std::fs::write(&stored, &text).unwrap();
    }
    let expected = std::fs::read_to_string(&stored).unwrap();
    for (i, (got, want)) in text.lines().zip(expected.lines()).enumerate() {
        assert_eq!(got, want, "line {} differs from {}", i + 1, stored.display());
    }
    assert_eq!(text.lines().count(), expected.lines().count(), "{text}");
    // And what it says.
    assert!(text.contains("FYI, we noticed a -48.4% regression of lat_fs.write_truncate.total_loops"), "{text}");
    assert!(text.contains("perf-profile.children.jbd2_journal_get_write_access"), "{text}");
}

/// `gate --email FILE`: the gate as a mail of at most 80 columns: a subject with the
/// verdicts, the verdict table, the 0-day `%stddev %change` details with the profile's
/// changes, and the gate's own command line to reproduce it.
#[test]
fn gate_email_is_a_mail_of_the_verdicts_and_their_details() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = ordered_and_journal_runs(d.path());
    let mail = d.path().join("gate.txt");
    let out = fsbench()
        .args(["gate", "--baseline"])
        .arg(&a)
        .arg("--candidate")
        .arg(&b)
        .arg("--email")
        .arg(&mail)
        .output()
        .unwrap();
    let code = out.status.code();
    assert!(matches!(code, Some(0 | 1)), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&mail).unwrap();
    for l in text.lines() {
        assert!(l.chars().count() <= 80, "{} columns: {l}", l.chars().count());
    }
    let subject = text.lines().next().unwrap();
    assert!(subject.starts_with("Subject: [fsbench] "), "{text}");
    // The subject says what the exit status says (1: a cell regressed).
    if code == Some(1) {
        assert!(subject.contains("1 regressed, worst ext4-S-qoff-t1-write_truncate total_loops -48"), "{subject}");
    } else {
        assert!(subject.contains("no regression"), "{subject}");
    }
    assert!(text.contains("ext4-S-qoff-t1-write_truncate") && text.contains("%stddev"), "{text}");
    assert!(text.contains("perf-profile.children.jbd2_journal_get_write_access"), "{text}");
    // The gate's own command line, continued with `\` within 80 columns.
    let tail = &text[text.find("The gate:").expect("the gate's command line")..];
    assert!(tail.contains("        fsbench gate --baseline") && tail.contains(" \\\n"), "{tail}");
}

/// `gate` prints the profile changes behind its verdicts under its table and writes them
/// into the `--markdown` summary: the journalled write path grew, delalloc's shrank, each
/// line within the output's width, a frame's control characters escaped.
#[test]
fn gate_shows_the_profile_changes_in_the_terminal_and_the_markdown_summary() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = ordered_and_journal_runs(d.path());
    // A hostile frame in the candidate's profile: an escape sequence in a function name.
    let hostile = b"w;vfs_write;ext4_write_begin 300\nw;vfs_write;ext4_journalled_write_end;jbd2_journal_get_write_access 300\nw;do_truncate 300\nw;evil\x1b[2Jname 100\n";
    std::fs::write(b.join("profiles/ext4-S-qoff-t1-write_truncate.folded"), hostile).unwrap();
    let md = d.path().join("summary.md");
    let out = fsbench()
        .args(["gate", "--baseline"])
        .arg(&a)
        .arg("--candidate")
        .arg(&b)
        .arg("--markdown")
        .arg(&md)
        .output()
        .unwrap();
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let at = text.find("Profile changes:").unwrap_or_else(|| panic!("no profile changes under the table: {text}"));
    let why = &text[at..];
    assert!(why.contains("ext4-S-qoff-t1-write_truncate (ordered → journal)"), "{why}");
    assert!(why.contains("one profile a side") && why.contains("(1 caller carried by"), "{why}");
    let line = |f: &str| why.lines().find(|l| l.ends_with(&format!(" {f}"))).unwrap_or_else(|| panic!("{f}: {why}"));
    assert!(line("jbd2_journal_get_write_access").trim_start().starts_with("grew "), "{why}");
    assert!(line("ext4_da_write_begin").trim_start().starts_with("shrank "), "{why}");
    assert!(!why.contains('\x1b') && why.contains("evil\\u{1b}[2Jname"), "{why}");
    // Piped: laid out for 100 columns.
    for l in why.lines() {
        assert!(l.chars().count() <= 100, "{} columns: {l}", l.chars().count());
    }
    let md = std::fs::read_to_string(&md).unwrap();
    let at = md.find("### Profile diff of ext4-S-qoff-t1-write_truncate").unwrap_or_else(|| panic!("{md}"));
    assert!(md[at..].contains("| function (grew) |") && md[at..].contains("| jbd2_journal_get_write_access |"), "{md}");
    assert!(!md.contains('\x1b'), "{md}");
    // And `--json`: each cell's diff cut to its largest changes, named and escaped.
    let out = fsbench().args(["gate", "--json", "--baseline"]).arg(&a).arg("--candidate").arg(&b).output().unwrap();
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", String::from_utf8_lossy(&out.stderr));
    let doc = crate::schemas::conforming("gate.schema.json", &out.stdout, "gate --json");
    let diff = &doc["profile_diffs"][0];
    assert_eq!(diff["judged"], "single_profile", "{diff:#}");
    let names = |way: &str| -> Vec<String> {
        diff[way].as_array().unwrap().iter().map(|f| f["function"].as_str().unwrap().to_string()).collect()
    };
    assert!(names("grown").contains(&"jbd2_journal_get_write_access".to_string()), "{diff:#}");
    assert!(names("grown").contains(&"evil\\u{1b}[2Jname".to_string()), "{diff:#}");
    assert_eq!(names("shrunk")[0], "ext4_da_write_begin", "{diff:#}");
}

/// `history --function NAME`: a function's share per run and cell from the stored
/// profiles; a garbled profile says so in its row and the rest are listed.
#[test]
fn history_lists_a_functions_share_per_run() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("hostile-profiles");
    let runs = [
        b"w;vfs_write;jbd2_journal_get_write_access 30\nw;other 70\n".to_vec(),
        b"w;vfs_write;jbd2_journal_get_write_access 60\nw;other 40\n".to_vec(),
        b"garbage\n".to_vec(),
    ];
    for (i, bytes) in runs.iter().enumerate() {
        let run = run_with_profiles(&dir.join(format!("run{i}")), &[(1, Some(bytes.clone()))]);
        // Distinct runs, in order.
        let meta = run.join("run.json");
        let text = std::fs::read_to_string(&meta).unwrap();
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["run_id"] = format!("2010111{i}T120000Z-host").into();
        v["started"] = format!("2010-11-1{i}T12:00:00Z").into();
        std::fs::write(&meta, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    }
    let out = fsbench()
        .args(["history", "--no-index", "--function", "jbd2_journal_get_write_access"])
        .arg(&dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let rows: Vec<&str> = text.lines().filter(|l| l.contains("ext4-S-qoff-t1-write_truncate")).collect();
    assert_eq!(rows.len(), 3, "{text}");
    assert!(rows[0].contains("30.00") && rows[1].contains("60.00") && rows[2].contains("no profile"), "{text}");
    let out = fsbench().args(["history", "--function", "x", "--json"]).arg(&dir).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
