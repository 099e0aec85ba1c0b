//! What new users tripped over (new users' report): each test pins one hint, message or
//! output that misled or slowed a first-time user down, end to end through the CLI.

use std::os::unix::fs::PermissionsExt;

use crate::support::{crate_root, fsbench};

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

// `--workdir /tmp` used to suggest `chmod go-w /tmp`, which breaks a shared machine
// for everybody; a sticky shared directory gets a private directory inside it instead.
#[test]
fn a_shared_sticky_workdir_gets_a_private_directory_suggested_not_chmod() {
    let tmp = tempfile::tempdir().unwrap();
    let shared = tmp.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let out = fsbench()
        .current_dir(crate_root())
        .args(["run", "scenarios/quickstart.toml", "--set", "backing.kind=dir", "--quiet", "--workdir"])
        .arg(&shared)
        .arg("--out")
        .arg(tmp.path().join("results"))
        .env("XDG_CACHE_HOME", tmp.path().join("cache"))
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("chmod go-w"), "{err}");
    assert!(err.contains(&format!("mkdir -m 700 {}/fsbench-work", shared.display())), "{err}");
    assert!(err.contains("do not change its mode"), "{err}");
}

// `report` on a typo'd path or on the results root used to say "not a run directory
// (no run.json)" for both: the first does not exist, the second holds scenarios.
#[test]
fn report_says_a_missing_path_does_not_exist_and_lists_a_results_roots_scenarios() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("results/quota-smpp/2026");
    let out = fsbench().arg("report").arg(&missing).output().unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("{}: does not exist", missing.display())), "{err}");
    assert!(!err.contains("no run.json"), "{err}");

    let root = tmp.path().join("results");
    crate::support::report::write_seed_run(&root.join("quota-smp/r1"), "BASE");
    let out = fsbench().arg("report").arg(&root).output().unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("a results root, not a run; it holds the scenarios quota-smp"), "{err}");
    assert!(err.contains("quota-smp@latest"), "{err}");
}

// Friction 6: a misspelt scenario name, a duration without its unit and the --archive
// help each used to leave the user guessing.
#[test]
fn a_misspelt_scenario_name_suggests_the_real_one() {
    let out = fsbench().current_dir(crate_root()).args(["plan", "quikstart"]).output().unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("did you mean `quickstart`?"), "{err}");
    let out = fsbench().current_dir(crate_root()).args(["plan", "scenarios/quota-smb.toml"]).output().unwrap();
    let err = stderr_of(&out);
    assert!(err.contains("did you mean `scenarios/quota-smp.toml`?"), "{err}");
}

#[test]
fn a_duration_without_its_unit_says_what_a_duration_looks_like() {
    let out = fsbench().current_dir(crate_root()).args(["plan", "--set", "workload.duration=200"]).output().unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("a duration with its unit, such as `200ms`"), "{err}");
}

#[test]
fn a_missing_archive_says_archive_is_relative_to_the_current_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let out = fsbench()
        .current_dir(tmp.path())
        .arg("plan")
        .arg(crate_root().join("scenarios/kernel-untar.toml"))
        .args(["--archive", "nope.tar.gz"])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("`--archive FILE` is relative to the current directory"), "{err}");
}

/// A quick measured run (dir backing: no root, no mkfs) of one quickstart cell.
fn quick_dir_run(sb: &crate::support::sandbox::Sandbox, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "run",
        "scenarios/quickstart.toml",
        "--set",
        "backing.kind=dir",
        "--only",
        "fs=ext4,tasks=1,test=open_close",
        "--set",
        "workload.warmup=0ms",
        "--set",
        "workload.duration=20ms",
        "--set",
        "workload.repetitions=2",
    ];
    args.extend_from_slice(extra);
    sb.fsbench(&args).output().unwrap()
}

// Misleading 7: `matrix.fs=["zfs"]` suggested `bfs` (a tool nobody benchmarks), and the
// run that skipped every cell became `latest`, hiding the run that measured something.
#[test]
fn an_unsupported_filesystem_gets_no_implausible_suggestion_and_does_not_become_latest() {
    let sb = crate::support::sandbox::Sandbox::new("fsbench-newcomer-");
    let out = quick_dir_run(&sb, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let measured = sb.runs();
    assert_eq!(measured.len(), 1);
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let out = sb
        .fsbench(&["run", "scenarios/quickstart.toml", "--set", r#"matrix.fs=["zfs"]"#, "--only", "tasks=1"])
        .output()
        .unwrap();
    let err = stderr_of(&out);
    let all = format!("{}{err}", stdout_of(&out));
    assert!(!all.contains("bfs"), "{all}");
    assert!(all.contains("measured nothing"), "{all}");
    assert_eq!(sb.runs().len(), 2, "{all}");
    let out = fsbench().arg("report").arg("latest").arg("--results").arg(sb.out()).output().unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains(&format!("`latest` is {}", measured[0].display())), "{err}");
    assert!(err.contains("passed over 1 run that measured nothing"), "{err}");
}

/// A small lat_fs run labelled `label` whose scenario text ends with `extra`.
fn small_run(dir: &std::path::Path, label: &str, extra: &str) -> std::path::PathBuf {
    use crate::support::report::*;
    use fsbench::model::*;
    let params = CellParams {
        fs: "ext4".into(),
        layout: Layout::M,
        quota: QuotaMode::Off,
        tasks: 1,
        test: None,
        fio: Default::default(),
        kernel: None,
    };
    let cells = vec![latfs_cell(params.clone(), &[100.0, 101.0, 99.0, 100.5, 99.5])];
    let text = latfs_scenario_text("quota-smp", extra);
    let m = meta(Some(label), "quota-smp", &text, "lat_fs", vec![params]);
    write_run(&dir.join(label), &m, &cells)
}

// Friction 7: `compare` printed every warning twice on a terminal, once on stderr and
// once under the report's title.
#[test]
fn compare_on_a_terminal_prints_each_warning_once() {
    let tmp = tempfile::tempdir().unwrap();
    let a = small_run(tmp.path(), "A", "repetitions = 5\n");
    let b = small_run(tmp.path(), "B", "repetitions = 5\nduration = \"2s\"\n");
    let cmd = format!("{} compare {} {}", crate::support::exe().display(), a.display(), b.display());
    // script(1) gives the command a terminal, as a person running it has.
    let out = std::process::Command::new("script").args(["-qec", &cmd, "/dev/null"]).output().unwrap();
    let seen = stdout_of(&out);
    assert_eq!(seen.matches("scenario texts differ").count(), 1, "{seen}");
    // Piped, the warnings are on stderr as well, where a person still sees them.
    let out = fsbench().arg("compare").arg(&a).arg(&b).output().unwrap();
    assert!(stderr_of(&out).contains("scenario texts differ"), "{}", stderr_of(&out));
}

// Friction 7: a gate of a run against itself passes whatever it measured; it said nothing.
#[test]
fn a_run_gated_against_itself_is_warned_about() {
    let tmp = tempfile::tempdir().unwrap();
    let a = small_run(tmp.path(), "A", "repetitions = 5\n");
    let out = fsbench().arg("gate").arg("--baseline").arg(&a).arg("--candidate").arg(&a).output().unwrap();
    let err = stderr_of(&out);
    assert!(err.contains("the baseline and the candidate are the same run"), "{err}");
}

// Friction 1: a run made with --set could not be re-packed with its results: `bundle
// pack` wants the run's own scenario text, and no command wrote it out.
#[test]
fn the_scenario_of_a_run_made_with_set_is_printed_and_packs_with_its_results() {
    let sb = crate::support::sandbox::Sandbox::new("fsbench-newcomer-");
    let out = quick_dir_run(&sb, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let run = sb.runs().remove(0);
    let out = fsbench().arg("scenario").arg(&run).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let text = stdout_of(&out);
    assert!(text.contains("duration = \"20ms\""), "{text}");
    let toml = sb.path().join("again.toml");
    std::fs::write(&toml, &text).unwrap();
    let bundle = sb.path().join("again.fsb");
    let out = fsbench()
        .args(["bundle", "pack"])
        .arg(&toml)
        .arg("--with-results")
        .arg(&run)
        .arg("-o")
        .arg(&bundle)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    // Named runs work too.
    let out = fsbench().args(["scenario", "latest", "--results"]).arg(sb.out()).output().unwrap();
    assert_eq!(stdout_of(&out), text);
}

// Misleading 11: the CI example globbed `baseline/quota-smp/*`, which breaks as soon as
// the directory holds two runs. The documented command runs here as written, against a
// baseline directory with two runs.
#[test]
fn the_documented_ci_gate_command_works_with_two_baseline_runs() {
    let doc = std::fs::read_to_string(crate_root().join("docs/compare-and-gate.md")).unwrap();
    let line = doc
        .lines()
        .find_map(|l| l.strip_prefix("- run: fsbench gate "))
        .expect("docs/compare-and-gate.md has a `- run: fsbench gate` CI step");
    let tmp = tempfile::tempdir().unwrap();
    small_run(&tmp.path().join("baseline/quota-smp"), "OLD", "repetitions = 5\n");
    small_run(&tmp.path().join("baseline/quota-smp"), "BASE", "repetitions = 5\n");
    small_run(&tmp.path().join("results/quota-smp"), "candidate", "repetitions = 5\n");
    let summary = tmp.path().join("summary.md");
    let args: Vec<String> = line
        .split_whitespace()
        .map(|a| if a == "\"$GITHUB_STEP_SUMMARY\"" { summary.display().to_string() } else { a.to_string() })
        .collect();
    let out = fsbench().current_dir(tmp.path()).arg("gate").args(&args).output().unwrap();
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(0), "gate {}\n{err}{}", args.join(" "), stdout_of(&out));
    assert!(summary.is_file() && tmp.path().join("gate.xml").is_file());
}

// Friction 3: piped, `plan` wrapped cell names mid-word (`ext2-M-qoff-t|1-open_close`)
// and quota-smp's table ran to 664 lines. Piped, it is compact and names stay whole.
#[test]
fn a_piped_plan_is_compact_and_never_breaks_a_cell_name() {
    let out = fsbench().current_dir(crate_root()).args(["plan", "scenarios/quota-smp.toml"]).output().unwrap();
    let text = stdout_of(&out);
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let plan =
        fsbench().current_dir(crate_root()).args(["plan", "scenarios/quota-smp.toml", "--json"]).output().unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    let ids: Vec<&str> = doc["cells"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 128);
    for id in &ids {
        assert_eq!(text.lines().filter(|l| l.split_whitespace().any(|w| w == *id)).count(), 1, "{id}\n{text}");
    }
    // At most two lines per cell (a long `needs` wraps at a space), not five.
    assert!(text.lines().count() <= 2 * ids.len() + 20, "{} lines:\n{text}", text.lines().count());
}

// Friction 5: quota remedies say "under qemu with --kernel", yet doctor said nothing
// about qemu, KVM or TCG.
#[test]
fn doctor_has_a_qemu_row_that_names_kvm_or_tcg() {
    let out = fsbench().args(["doctor", "--fs", "nosuchfs", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = doc["capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "qemu (run --kernel)")
        .unwrap_or_else(|| panic!("no qemu row: {doc}"))
        .clone();
    let detail = row["detail"].as_str().unwrap();
    match row["state"].as_str().unwrap() {
        "missing" => assert!(row["remedy"].as_str().unwrap().contains("qemu-system-x86"), "{row}"),
        _ => assert!(detail.contains("KVM") || detail.contains("TCG"), "{row}"),
    }
    // Round three, item 22: "KVM: /dev/kvm usable" where qemu then hung on KVM and fell back
    // to TCG; opening /dev/kvm proves nothing about running a guest on it.
    assert!(!detail.contains("usable") || detail.contains("not usable"), "{row}");
}

// Friction 5: `plan` had no `--kernel`, so a run under qemu could not be previewed.
#[test]
fn plan_previews_a_run_under_another_kernel() {
    let tmp = tempfile::tempdir().unwrap();
    let image = tmp.path().join("bzImage");
    std::fs::write(&image, b"not a kernel, only a path that exists").unwrap();
    let out = fsbench()
        .current_dir(crate_root())
        .args(["plan", "scenarios/quickstart.toml", "--kernel"])
        .arg(format!("V3={}", image.display()))
        .args(["--kernel", "V4=/nonexistent/bzImage"])
        .output()
        .unwrap();
    let (text, err) = (stdout_of(&out), stderr_of(&out));
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(text.contains("every cell runs once per kernel in qemu (V3, V4)"), "{text}");
    // Round three, item 14: the estimate counted the cells' windows only (1 s for a 13 s
    // run under one kernel): a boot per kernel under TCG is part of it.
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("with 2 guest boot(s) under TCG (about 10–15 s each"), "{text}");
    assert!(err.contains("kernel V4: no image at /nonexistent/bzImage") && !err.contains("V3"), "{err}");
    let out = fsbench().args(["plan", "--kernel", "no-equals-sign"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains("LABEL=PATH"), "{}", stderr_of(&out));
}

// Misleading 3: a line ran straight through task counts with no value (2 and 4 tasks
// disturbed), as if they had been measured. Each run of measured points is its own line.
#[test]
fn a_plot_line_breaks_where_a_cell_has_no_value() {
    let tmp = tempfile::tempdir().unwrap();
    let run = crate::support::report::write_seed_run(&tmp.path().join("quota-smp/r1"), "BASE");
    for tasks in [2, 4] {
        for q in ["qoff", "qon"] {
            std::fs::remove_file(run.join(format!("cells/ext2-M-{q}-t{tasks}-open_close.json"))).unwrap();
        }
    }
    let plots = tmp.path().join("plots");
    let out = fsbench().arg("report").arg(&run).arg("--plot").arg(&plots).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let names: Vec<String> =
        std::fs::read_dir(&plots).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    let name = names
        .iter()
        .find(|n| n.ends_with(".svg") && n.contains("ext2") && n.contains("-M") && n.contains("open_close"))
        .unwrap_or_else(|| panic!("{names:?}"));
    let svg = std::fs::read_to_string(plots.join(name)).unwrap();
    // Per column: one polyline for tasks 1 alone and one for 8 alone, none through 2 and 4.
    let lines: Vec<&str> =
        svg.lines().filter(|l| l.contains("<polyline") && l.contains("stroke-width=\"2\"")).collect();
    for l in &lines {
        let points: Vec<(i64, i64)> = l
            .split("points=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .split_whitespace()
            .map(|p| p.split_once(',').map(|(x, y)| (x.parse().unwrap(), y.parse().unwrap())).unwrap())
            .collect();
        // The legend's sample line: 20 px, level.
        let legend = matches!(points.as_slice(), [(x0, y0), (x1, y1)] if y0 == y1 && x1 - x0 == 20);
        assert!(legend || points.len() < 2, "a line across missing cells: {l}");
    }
}

// Misleading 9: `scripts/test.sh --check` printed "every package the tests need is
// installed", then "missing: a Debian kernel", and exited 0. Whatever this machine has,
// the answer and the exit status agree.
#[test]
fn test_sh_check_exits_1_exactly_when_it_names_something_missing() {
    let out =
        std::process::Command::new("bash").arg(crate_root().join("scripts/test.sh")).arg("--check").output().unwrap();
    let text = stdout_of(&out);
    let missing = text.contains("missing");
    assert_eq!(out.status.code(), Some(if missing { 1 } else { 0 }), "{text}{}", stderr_of(&out));
    assert_ne!(missing, text.contains("everything the tests need is installed"), "{text}");
}

// Friction 5: doctor's `n/a` rows printed the raw tool error (`mkfs.xfs -O quota …
// invalid option -- 'O'`); the row says what it means instead.
#[test]
#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: built and run as a normal user")]
fn doctor_says_what_a_missing_mkfs_quota_switch_means_not_the_tools_words() {
    skip_unless_root!();
    let out = fsbench().args(["doctor", "--fs", "xfs", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = doc["capabilities"].as_array().unwrap();
    for r in rows.iter().filter(|r| r["state"] == "n/a") {
        assert!(!r["detail"].as_str().unwrap().contains("invalid option"), "{r}");
    }
    // Without mkfs.xfs the row says that instead.
    if let Some(r) = rows.iter().find(|r| r["name"] == "xfs quota feature" && r["state"] == "n/a") {
        assert!(r["detail"].as_str().unwrap().contains("no quota feature set at mkfs time"), "{r}");
    }
}
