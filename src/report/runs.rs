//! The runs of a scenario directory as a list to choose from (`fsbench report results/<scenario>`).

use std::path::Path;

use super::Format;
use super::format::{csv_record, markdown};
use super::json::{ListedRun, RunListJson};
use crate::model::OUTPUT_SCHEMA_VERSION;
use crate::results::find::RunSummary;
use crate::text::{escape_control, first_line_cut};

/// How the listing names the cells of a run: `128/128`, `64/128, 64 skipped, unfinished`.
fn cells(r: &RunSummary) -> String {
    let mut s = format!("{}/{}", r.ok, r.planned);
    for (n, what) in [(r.skipped, "skipped"), (r.failed, "failed"), (r.unreadable, "unreadable")] {
        if n > 0 {
            s.push_str(&format!(", {n} {what}"));
        }
    }
    if r.state() != "finished" {
        s.push_str(&format!(", {}", r.state()));
    }
    s
}

/// Words in columns read best left-aligned, two spaces apart, without rules.
fn left_aligned(header: &[String], rows: &[Vec<String>]) -> String {
    let mut t = comfy_table::Table::new();
    t.load_style(comfy_table::presets::NOTHING).set_header(header);
    for r in rows {
        t.add_row(r);
    }
    // comfy-table pads every cell by one space on each side: the first column's is not needed.
    t.to_string().lines().map(|l| format!("{}\n", l.strip_prefix(' ').unwrap_or(l).trim_end())).collect()
}

/// `2010-11-11 12:00` from RFC 3339.
fn minute(rfc3339: &str) -> String {
    rfc3339.get(..16).unwrap_or(rfc3339).replace('T', " ")
}

fn name(r: &RunSummary) -> String {
    r.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// The listing of `dir`'s runs (oldest first) as a document (`fsbench report SCENARIO_DIR --json`).
pub fn run_list_json(dir: &Path, runs: &[RunSummary]) -> RunListJson {
    RunListJson {
        schema: OUTPUT_SCHEMA_VERSION,
        dir: dir.to_path_buf(),
        runs: runs
            .iter()
            .map(|r| ListedRun {
                run: name(r),
                dir: r.dir.clone(),
                label: r.meta.label.clone(),
                host: r.meta.host.hostname.clone(),
                kernel: r.meta.host.kernel_release.clone(),
                started: r.meta.started.clone(),
                finished: r.meta.finished.clone(),
                state: r.state().to_string(),
                planned: r.planned,
                ok: r.ok,
                skipped: r.skipped,
                failed: r.failed,
                unreadable: r.unreadable,
                meta: r.meta.meta.clone(),
            })
            .collect(),
    }
}

/// `header` and `rows` with a last `meta` column (`commit=abc branch=main`, cut to fit) when any
/// run recorded `--meta` pairs; unchanged otherwise.
fn with_tags_column(
    mut header: Vec<String>,
    mut rows: Vec<Vec<String>>,
    runs: &[RunSummary],
) -> (Vec<String>, Vec<Vec<String>>) {
    if runs.iter().all(|r| r.meta.meta.is_empty()) {
        return (header, rows);
    }
    header.push("meta".into());
    for (row, r) in rows.iter_mut().zip(runs) {
        let pairs: Vec<String> = r.meta.meta.iter().map(|(k, v)| format!("{k}={v}")).collect();
        row.push(first_line_cut(&escape_control(&pairs.join(" ")), 30));
    }
    (header, rows)
}

/// The listing of `dir`'s runs (oldest first) in `format`.
pub fn render_run_list(dir: &Path, runs: &[RunSummary], format: Format) -> String {
    let header: Vec<String> =
        ["run", "label", "host", "kernel", "started", "cells measured"].map(String::from).to_vec();
    // Host names and kernel releases are other people's text: shown, never obeyed, and cut so
    // a line fits 100 columns.
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            vec![
                name(r),
                r.meta.label.clone().unwrap_or_else(|| "-".into()),
                first_line_cut(&escape_control(&r.meta.host.hostname), 14),
                first_line_cut(&escape_control(&r.meta.host.kernel_release), 20),
                minute(&r.meta.started),
                cells(r),
            ]
        })
        .collect();
    // `run --meta` pairs get a column only when some run has them: older listings stay as they were.
    let (header, rows) = with_tags_column(header, rows, runs);
    let rows: Vec<Vec<String>> =
        rows.into_iter().map(|r| r.into_iter().map(|c| escape_control(&c)).collect()).collect();
    match format {
        Format::Json => super::json::to_json(&run_list_json(dir, runs)),
        Format::Csv => {
            let mut s = csv_record(&header);
            for r in &rows {
                s.push_str(&csv_record(r));
            }
            s
        }
        Format::Markdown => {
            format!("# Runs in {}\n\n{}", escape_control(&dir.display().to_string()), markdown(&header, &rows))
        }
        Format::Table => {
            let example = runs
                .iter()
                .rev()
                .find_map(|r| r.meta.label.as_deref())
                .map(|l| format!("@{l}"))
                .unwrap_or_else(|| "latest".into());
            format!(
                "{} in {}, oldest first:\n\n{}\nName a run by its directory, by `@LABEL` or as `latest`, e.g.\n  fsbench report {}@{}\n",
                crate::text::plural(runs.len(), "run", "runs"),
                escape_control(&dir.display().to_string()),
                left_aligned(&header, &rows),
                escape_control(&dir.display().to_string()),
                example.trim_start_matches('@'),
            )
        }
    }
}
