//! The house rules of the README's layout section, checked against the source tree, and
//! the section itself checked against the modules.
//!
//! Each rule is a plain text search, so `grep` finds the same violations by hand.

use std::path::{Path, PathBuf};

/// Every `.rs` file under `src/`, with its path relative to the crate root.
fn sources() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = vec![root.join("src")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.push((rel, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// `needle` in `line`, not as the tail of a longer name (`println!` is not in `eprintln!`).
fn contains_word(line: &str, needle: &str) -> bool {
    line.match_indices(needle)
        .any(|(i, _)| !line[..i].chars().next_back().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_'))
}

fn in_app(rel: &str) -> bool {
    rel.starts_with("src/app/") || rel == "src/main.rs"
}

/// Lines of files outside the command layer that contain any of `needles`, except `allowed` files.
fn offenders(needles: &[&str], allowed: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for (rel, text) in sources() {
        if in_app(&rel)
            || allowed.iter().any(|a| if a.ends_with('/') { rel.starts_with(a) } else { rel == *a })
            || rel == "src/layout_rules.rs"
        {
            continue;
        }
        for (n, line) in text.lines().enumerate() {
            if needles.iter().any(|needle| contains_word(line, needle)) {
                found.push(format!("{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn only_the_command_layer_names_clap_or_the_app() {
    let bad = offenders(&["clap", "crate::app", "fsbench::app"], &[]);
    assert!(bad.is_empty(), "outside src/app/ and src/main.rs:\n{}", bad.join("\n"));
}

#[test]
fn only_the_command_layer_decides_exit_codes() {
    // The guest's PID 1 powers the virtual machine off with the run's code; it is not a command.
    let bad = offenders(
        &["exit::SUCCESS", "exit::FAILURE", "exit::USAGE", "exit::INTERRUPTED", "exit::BISECT_", "process::exit"],
        &["src/exit.rs", "src/qemu/guest.rs"],
    );
    assert!(bad.is_empty(), "exit codes decided outside src/app/:\n{}", bad.join("\n"));
}

#[test]
fn only_the_command_layer_prints_command_output() {
    // stdout of a lat_fs or steps worker is its protocol pipe to the parent; the guest's is the serial console.
    let bad = offenders(
        &["println!", "print!(", "stdout()"],
        &["src/workload/latfs/worker.rs", "src/workload/steps/tasks.rs", "src/qemu/guest.rs"],
    );
    assert!(bad.is_empty(), "stdout written outside src/app/:\n{}", bad.join("\n"));
}

/// The files of src/app/ that hold a command (named by a variant of `app::Command`:
/// `Run(run::RunArgs)`) and those that hold what commands share (named in app/mod.rs's
/// doc as [`checks`]), each by its file stem. A file that is neither fails the test.
fn app_files() -> (Vec<String>, Vec<String>) {
    let app = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/app");
    let mod_rs = std::fs::read_to_string(app.join("mod.rs")).unwrap();
    let commands_enum = mod_rs
        .split("pub enum Command {")
        .nth(1)
        .and_then(|rest| rest.split("\n}\n").next())
        .expect("src/app/mod.rs defines `pub enum Command`");
    let doc: String = mod_rs.lines().filter_map(|l| l.strip_prefix("//!")).collect::<Vec<_>>().join("\n");
    let (mut commands, mut shared, mut neither) = (Vec::new(), Vec::new(), Vec::new());
    for entry in std::fs::read_dir(&app).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".rs").filter(|s| *s != "mod") else { continue };
        if commands_enum.contains(&format!("({stem}::")) {
            commands.push(stem.to_string());
        } else if doc.contains(&format!("[`{stem}`]")) {
            shared.push(stem.to_string());
        } else {
            neither.push(name);
        }
    }
    assert!(
        neither.is_empty(),
        "src/app/ files that are neither a command of `app::Command` nor a shared file named in app/mod.rs's doc: {neither:?}"
    );
    commands.sort();
    shared.sort();
    (commands, shared)
}

#[test]
fn the_command_list_is_the_command_files() {
    // The list was once written by hand and missed calibrate, history and export.
    let (commands, shared) = app_files();
    for c in ["run", "gate", "calibrate", "history", "export", "bundle", "shard"] {
        assert!(commands.iter().any(|f| f == c), "{c} is not found as a command file: {commands:?}");
    }
    assert!(shared.iter().any(|f| f == "checks") && !shared.iter().any(|f| f == "run"), "{shared:?}");
}

#[test]
fn no_command_calls_another() {
    let (commands, _) = app_files();
    let mut bad = Vec::new();
    for (rel, text) in sources().iter().filter(|(r, _)| r.starts_with("src/app/") && !r.ends_with("/mod.rs")) {
        for (n, line) in text.lines().enumerate() {
            for c in &commands {
                // A handler is a function: `super::run::run(`. Sharing a type (`super::report::ReportFormat`) is fine.
                let needle = format!("super::{c}::");
                if let Some(i) = line.find(&needle) {
                    let rest = &line[i + needle.len()..];
                    if rest.starts_with(|ch: char| ch.is_ascii_lowercase()) && rest.contains('(') {
                        bad.push(format!("{rel}:{}: {}", n + 1, line.trim()));
                    }
                }
            }
        }
    }
    assert!(bad.is_empty(), "a command calls another command's handler:\n{}", bad.join("\n"));
}

#[test]
fn only_the_command_layer_the_gate_and_the_merge_read_the_report() {
    // Renderers sit at the end of the data flow: measuring, storing or provisioning a cell
    // never formats one. The gate judges the report's comparison, merge renders its
    // groups, history's renderers write CSV records and pages as the report does, and
    // history's paired ratios are the report's join of a paired run, as the gate's are, and
    // so is a bisection step's measure read back from its stored run.
    let allowed = [
        "src/gate/",
        "src/shard/merge.rs",
        "src/history/render.rs",
        "src/history/html.rs",
        "src/history/paired.rs",
        "src/bisect/judge_kernels.rs",
        // A step's profile summary in the log is the report's arm profile diff, cut short.
        "src/bisect/step_profile.rs",
        // A bisection's report (steps, plot, mail) renders with the report's markup and plots.
        "src/bisect/report.rs",
    ];
    let mut bad = Vec::new();
    for (rel, text) in sources() {
        if in_app(&rel)
            || rel.starts_with("src/report/")
            || allowed.iter().any(|a| if a.ends_with('/') { rel.starts_with(a) } else { rel == *a })
            || rel == "src/layout_rules.rs"
        {
            continue;
        }
        // Doc comments may point at the report; only code imports it.
        let code = text.lines().enumerate().filter(|(_, l)| !l.trim_start().starts_with("//"));
        for (n, line) in code {
            if ["crate::report", "fsbench::report"].iter().any(|needle| contains_word(line, needle)) {
                bad.push(format!("{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(bad.is_empty(), "the report imported outside src/app/, src/report/ and {allowed:?}:\n{}", bad.join("\n"));
}

/// The variants of an enum `name` as its definition in `file` lists them (`Latfs(LatfsSpec),`, `LatFs,`).
fn variants_of(file: &str, name: &str) -> Vec<String> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap();
    let body = text.split(&format!("pub enum {name} {{")).nth(1).expect("the enum is defined there");
    let body = &body[..body.find("\n}").expect("the enum ends")];
    body.lines()
        .map(str::trim)
        .filter(|l| l.starts_with(|c: char| c.is_ascii_uppercase()))
        .map(|l| l.split(|c: char| !c.is_ascii_alphanumeric()).next().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn only_the_workloads_and_their_dispatch_name_a_workload_kind() {
    // A workload answers its own questions through `workload::kind`; the runner, plan,
    // validation, reports, qemu, bundles and the gate ask it instead of matching on kinds.
    // The kinds are named in their folders, the dispatch (`workload/kind.rs`), the two
    // places below it that cannot reach it (validation builds the specs; the report picks
    // a kind's renderer), and the definition of the run's `workload` name.
    let allowed =
        ["src/workload/", "src/scenario/validate/by_kind.rs", "src/report/by_kind.rs", "src/model/workload_kind.rs"];
    let mut needles: Vec<String> =
        variants_of("src/scenario/mod.rs", "Workload").iter().map(|v| format!("Workload::{v}")).collect();
    needles
        .extend(variants_of("src/model/workload_kind.rs", "WorkloadKind").iter().map(|v| format!("WorkloadKind::{v}")));
    assert!(needles.len() >= 6, "the workload enums were not found: {needles:?}");
    let names_a_kind = |line: &str| {
        needles.iter().any(|needle| {
            line.match_indices(needle.as_str()).any(|(i, _)| {
                let before = line[..i].chars().next_back();
                let after = line[i + needle.len()..].chars().next();
                !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                    && !after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
            })
        })
    };
    let mut bad = Vec::new();
    for (rel, text) in sources() {
        if rel.ends_with("tests.rs")
            || allowed.iter().any(|a| if a.ends_with('/') { rel.starts_with(a) } else { rel == *a })
            || rel == "src/layout_rules.rs"
        {
            continue;
        }
        let code = text.lines().take_while(|l| l.trim() != "#[cfg(test)]").enumerate();
        for (n, line) in code.filter(|(_, l)| !l.trim_start().starts_with("//")) {
            if names_a_kind(line) {
                bad.push(format!("{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(bad.is_empty(), "a workload kind named outside src/workload/ and {allowed:?}:\n{}", bad.join("\n"));
}

/// The code block of the README's `## Layout` section.
fn readme_layout_block() -> String {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let section = readme.split("\n## Layout\n").nth(1).expect("the README has a `## Layout` section");
    section.split("```").nth(1).expect("the Layout section has a code block").to_string()
}

#[test]
fn the_readme_layout_names_every_module_and_only_modules() {
    let block = readme_layout_block();
    // A name is a segment of a line that is one lowercase word; two or more spaces separate
    // it from its description.
    let names: Vec<&str> = block
        .lines()
        .flat_map(|line| line.split("  ").map(str::trim))
        .filter(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        .collect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let absent: Vec<&&str> =
        names.iter().filter(|n| !root.join(format!("{n}.rs")).is_file() && !root.join(n).is_dir()).collect();
    assert!(absent.is_empty(), "the README's Layout names modules src/ does not have: {absent:?}");
    // Every module is there, as a name or as a word of another's description (`output` in
    // the command layer's line).
    let words: Vec<&str> = block.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).collect();
    let lib = std::fs::read_to_string(root.join("lib.rs")).unwrap();
    let unnamed: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod ")?.strip_suffix(';'))
        .filter(|m| !words.contains(m))
        .collect();
    assert!(unnamed.is_empty(), "modules of src/lib.rs missing from the README's Layout: {unnamed:?}");
}

#[test]
fn the_guided_tour_of_lib_rs_names_every_module() {
    // The tour once left out history, fio and verdict; a module it does not name is one a
    // newcomer reading lib.rs never hears of.
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    let tour: String = lib.lines().filter_map(|l| l.strip_prefix("//!")).collect::<Vec<_>>().join("\n");
    let unnamed: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod ")?.strip_suffix(';'))
        .filter(|m| !tour.contains(&format!("`{m}`")) && !tour.contains(&format!("`{m}::")))
        .collect();
    assert!(unnamed.is_empty(), "modules of src/lib.rs its guided tour does not name: {unnamed:?}");
    assert!(tour.contains("workload::fio"), "the tour does not show where a fio cell runs");
}

#[test]
fn the_seed_readmes_name_test_files_that_exist() {
    // tests/data/seed000/README.md named tests/report_seed000.rs after it moved into tests/it/.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(root.join("tests/data")).unwrap().flatten() {
        let Ok(readme) = std::fs::read_to_string(entry.path().join("README.md")) else { continue };
        for path in readme.split('`').filter(|w| w.starts_with("tests/") && w.ends_with(".rs")) {
            if !root.join(path).is_file() {
                missing.push(format!("{}: {path}", entry.path().display()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "test files named in tests/data/*/README.md that do not exist:\n{}",
        missing.join("\n")
    );
}

#[test]
fn no_function_of_the_command_layer_is_long() {
    // A handler turns arguments into requests and calls the stages: cargo's `exec`s are ~25
    // lines. Counted from the line of `fn` to the `}` at its indentation, tests left out.
    const MAX_LINES: usize = 60;
    let mut long = Vec::new();
    for (rel, text) in sources().iter().filter(|(r, _)| in_app(r)) {
        let lines: Vec<&str> = text.lines().take_while(|l| l.trim() != "#[cfg(test)]").collect();
        for (i, line) in lines.iter().enumerate() {
            let body = line.trim_start();
            let indent = &line[..line.len() - body.len()];
            let is_fn = ["fn ", "pub fn ", "pub(crate) fn ", "pub(super) fn "].iter().any(|p| body.starts_with(p));
            if !is_fn || line.trim_end().ends_with(';') {
                continue;
            }
            let close = format!("{indent}}}");
            if let Some(end) = lines[i..].iter().position(|l| *l == close)
                && end + 1 > MAX_LINES
            {
                long.push(format!("{rel}:{}: {} lines: {}", i + 1, end + 1, body));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions of src/app/ over {MAX_LINES} lines: hand parts to helpers\n{}",
        long.join("\n")
    );
}

/// Files allowed past the size guard, each with the reason: data tables, not logic.
const LONG_FILES: &[(&str, &str)] =
    &[("src/fixture/shape_tables.rs", "the linux-2.5.63 profile: figures and word lists")];

#[test]
fn no_source_file_is_several_rooms() {
    // A file past ~800 lines of code is several concerns; its unit tests do not count.
    const MAX_LINES: usize = 800;
    let mut long = Vec::new();
    for (rel, text) in sources() {
        if rel.ends_with("/tests.rs") || LONG_FILES.iter().any(|(f, _)| *f == rel) {
            continue;
        }
        let code = text.lines().take_while(|l| l.trim() != "#[cfg(test)]").count();
        if code > MAX_LINES {
            long.push(format!("{rel}: {code} lines before its tests"));
        }
    }
    assert!(long.is_empty(), "split these by concern, or list them in LONG_FILES with a reason:\n{}", long.join("\n"));
}
