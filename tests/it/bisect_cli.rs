//! `fsbench bisect` at the command line, without qemu: bad input is refused with exit 2
//! before anything boots, the estimate is printed, and the bisect log conforms to its schema.

use crate::support::{crate_root, fsbench};

/// Two distinct readable "images" in `dir` (bisect reads them; nothing boots in these tests).
fn images(dir: &std::path::Path) -> (String, String) {
    let (a, b) = (dir.join("vmlinuz-a"), dir.join("vmlinuz-b"));
    std::fs::write(&a, b"a").unwrap();
    std::fs::write(&b, b"b").unwrap();
    (a.display().to_string(), b.display().to_string())
}

/// `fsbench bisect scenarios/quota-qemu.toml ARGS`: exit code and stderr.
fn bisect(args: &[&str], out: &std::path::Path) -> (Option<i32>, String) {
    let o = fsbench()
        .current_dir(crate_root())
        .args(["bisect", "scenarios/quota-qemu.toml", "--out"])
        .arg(out)
        .args(args)
        .output()
        .unwrap();
    (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned())
}

#[test]
fn lists_that_cannot_be_bisected_exit_2_naming_why_and_nothing_is_created() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = images(d.path());
    let out = d.path().join("results");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec![format!("--kernel=A={a}")], "two or more candidate kernels"),
        (vec![format!("--kernel=A={a}"), format!("--kernel=B={}/missing", d.path().display())], "cannot read image"),
        (vec![format!("--kernel=A={a}"), format!("--kernel=B={b}"), format!("--kernel=C={a}")], "same kernel booted"),
        (vec![format!("--kernel=A={a}"), format!("--kernel=A={b}")], "`A` is given twice"),
        // quota-qemu has 16 cells: one must be named.
        (vec![format!("--kernel=A={a}"), format!("--kernel=B={b}")], "judge them all (Holm-adjusted) with --all-cells"),
        (
            vec![format!("--kernel=A={a}"), format!("--kernel=B={b}"), "--all-cells".into(), "--cell=x".into()],
            "cannot be used with",
        ),
        (vec![format!("--kernel=A={a}"), format!("--kernel=B={b}"), "--cell=nope".into()], "--cell nope: no such cell"),
    ];
    for (args, want) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, stderr) = bisect(&args, &out);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: want {want:?} in:\n{stderr}");
    }
    assert!(!out.exists(), "bad input left a results directory");
}

#[test]
fn the_estimate_counts_steps_and_boots_before_anything_boots() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = images(d.path());
    let list = d.path().join("kernels.txt");
    std::fs::write(&list, format!("# good first\nV0={a}\nV1={b}\nV2={a},cmdline=quiet\nV3={b},cmdline=slub_debug=F\n"))
        .unwrap();
    let out = d.path().join("results");
    let (code, stderr) = bisect(
        &[
            "--kernels",
            list.to_str().unwrap(),
            "--cell",
            "ext4-S-qoff-t1-open_close",
            "--estimate",
            "--max-pairs",
            "32",
        ],
        &out,
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("4 candidates: at most 4 steps"), "{stderr}");
    assert!(stderr.contains("12-70 guest boots a step"), "{stderr}");
    assert!(!out.exists());
    // Every cell of quota-qemu's quota-off half (8 cells): eight pair groups a step.
    let (code, stderr) = bisect(
        &["--kernels", list.to_str().unwrap(), "--only", "quota=off", "--all-cells", "--estimate", "--max-pairs", "32"],
        &out,
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("96-560 guest boots a step"), "{stderr}");
    assert!(!out.exists());
}

/// A finished bisection of four candidates under `d` whose culprit is V2 (judged by a
/// stand-in that knows the truth); its directory.
fn bisected(d: &std::path::Path) -> std::path::PathBuf {
    use fsbench::bisect::search::StepJudge;
    use fsbench::bisect::step::{StepMeasure, StepVerdict};

    /// Bad from position 2 on, every step 6 pairs.
    struct Truth;
    impl StepJudge for Truth {
        fn judge(&mut self, b: usize, c: usize) -> anyhow::Result<Option<StepMeasure>> {
            let bad = c >= 2 && b < 2;
            let stop = if bad {
                fsbench::model::pairing::PairStop::Regressed
            } else {
                fsbench::model::pairing::PairStop::Unchanged
            };
            let change = if bad { (-0.3, -0.33, -0.27) } else { (0.0, -0.02, 0.02) };
            let change = fsbench::stats::Change { mean: change.0, ci_low: change.1, ci_high: change.2 };
            let m = StepMeasure::judge(
                stop,
                Some(change),
                0.01,
                (6, 0),
                (0.05, fsbench::catalogue::Direction::HigherIsBetter),
            );
            assert_eq!(m.verdict == StepVerdict::Bad, bad);
            Ok(Some(m))
        }
    }
    let s = fsbench::scenario::load_named(Some(&crate_root().join("scenarios/quota-qemu.toml")), &[]).unwrap();
    let cell = fsbench::plan::expand(&s).cells.remove(0);
    let kernels: Vec<_> = ["V0", "V1", "V2", "V3"]
        .iter()
        .map(|l| fsbench::qemu::parse_kernel_arg(&format!("{l}=/k/{l}")).unwrap())
        .collect();
    let spec = fsbench::runner::kernel_compare(&s, &["V0".into(), "V1".into()]).unwrap();
    let mut log = fsbench::bisect::setup::new_log(&s, std::slice::from_ref(&cell), &spec, 5, &kernels);
    let dir = fsbench::bisect::drive::create_dir(d, &s.name).unwrap();
    let c = fsbench::bisect::drive::run(&mut Truth, &mut log, &dir, true).unwrap();
    assert_eq!(c, fsbench::bisect::search::Conclusion::Culprit { candidate: 2 });
    dir.path.clone()
}

#[test]
fn the_bisect_log_conforms_to_its_schema() {
    let d = tempfile::tempdir().unwrap();
    let dir = bisected(d.path());
    let stored = std::fs::read(dir.join("bisect.json")).unwrap();
    let doc = crate::schemas::conforming("bisect.schema.json", &stored, "bisect.json");
    assert_eq!(doc["culprit"], "V2");
    assert_eq!(doc["conclusion"]["kind"], "culprit");
}

/// `report BISECT_DIR`: the steps as a table with the conclusion, the culprit's mail in 80
/// columns, the plot of ratio against position (PNG and SVG) and the HTML page.
#[test]
fn report_shows_a_bisection_as_a_table_a_plot_a_page_and_a_mail() {
    let d = tempfile::tempdir().unwrap();
    let dir = bisected(d.path());
    let run = |extra: &[&str]| {
        let out = crate::support::fsbench().arg("report").arg(&dir).args(extra).output().unwrap();
        assert!(out.status.success(), "{extra:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let text = run(&[]);
    assert!(text.contains("first bad: V2 (position 3 of 4)"), "{text}");
    assert!(text.contains("endpoints") && text.contains("midpoint") && text.contains("culprit"), "{text}");
    let mail = run(&["--format", "email"]);
    assert!(mail.starts_with("Subject: [fsbench bisect] quota-qemu: first bad V2 (total_loops)"), "{mail}");
    assert!(mail.lines().all(|l| l.chars().count() <= 80), "{mail}");
    assert!(mail.contains("culprit image: /k/V2"), "{mail}");
    let plots = d.path().join("plots");
    let page = d.path().join("bisect.html");
    run(&["--plot", plots.to_str().unwrap(), "--html", page.to_str().unwrap()]);
    let png = std::fs::read(plots.join("bisect.png")).unwrap();
    assert!(png.starts_with(b"\x89PNG") && png.len() > 5000, "{} bytes", png.len());
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<svg") && html.contains("first bad: V2") && !html.contains("<script"), "page");
    let json = run(&["--json"]);
    assert!(json.contains("\"culprit\": \"V2\""), "{json}");
    let csv = crate::support::fsbench().arg("report").arg(&dir).args(["--format", "csv"]).output().unwrap();
    assert_eq!(csv.status.code(), Some(2));
}

/// `fsbench bisect-cache ARGS --build-cache DIR`: exit code, stdout, stderr.
fn cache_cmd(args: &[&str], dir: &std::path::Path) -> (Option<i32>, String, String) {
    let o = fsbench().args(["bisect-cache"]).args(args).arg("--build-cache").arg(dir).output().unwrap();
    (o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

#[test]
fn the_build_cache_is_listed_and_pruned_of_fsbench_builds_only() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("builds");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let key = |n: u8| format!("{n:064x}");
    // Three builds used 1, 20 and 50 days ago, as `bisect --git` leaves them.
    for (n, days) in [(1u8, 1u64), (2, 20), (3, 50)] {
        let e = dir.join(key(n));
        std::fs::create_dir(&e).unwrap();
        std::fs::write(e.join("vmlinuz"), vec![0u8; 4096]).unwrap();
        let record = format!(
            "{{\"commit\": \"c{n}\", \"command\": \"make\", \"config_sha256\": null, \"seconds\": 1.0, \
             \"finished\": \"2026-12-01T00:00:00Z\"}}"
        );
        std::fs::write(e.join("build.json"), record).unwrap();
        std::fs::set_permissions(&e, std::fs::Permissions::from_mode(0o700)).unwrap();
        let t = std::time::SystemTime::now() - std::time::Duration::from_secs(days * 86_400);
        std::fs::File::open(&e).unwrap().set_modified(t).unwrap();
    }
    // Someone else's things in the cache: never touched.
    std::fs::write(dir.join("README"), "mine").unwrap();
    std::fs::create_dir(dir.join(key(9))).unwrap();

    let (code, out, err) = cache_cmd(&["list"], &dir);
    assert_eq!(code, Some(0), "{err}");
    let c1 = out.find("commit c1").expect(&out);
    assert!(c1 < out.find("commit c2").unwrap() && out.find("commit c2").unwrap() < out.find("commit c3").unwrap());
    assert!(out.contains("3 builds") && out.contains("2 other names"), "{out}");

    let (code, out, err) = cache_cmd(&["prune", "--older-than", "30", "--dry-run"], &dir);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("would remove commit c3") && !out.contains("c2"), "{out}");
    assert!(dir.join(key(3)).is_dir(), "a dry run removed a build");

    let (code, out, err) = cache_cmd(&["prune", "--keep", "1"], &dir);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("removed 2 names") && out.contains("1 builds kept"), "{out}");
    assert!(dir.join(key(1)).join("vmlinuz").is_file());
    assert!(!dir.join(key(2)).exists() && !dir.join(key(3)).exists());
    assert!(dir.join(key(9)).is_dir() && dir.join("README").is_file());

    // Bad input: exit 2, naming what.
    for (args, want) in [
        (vec!["prune"], "--keep"),
        (vec!["prune", "--older-than=-1"], "--older-than -1: days"),
        (vec!["prune", "--keep", "1", "--older-than", "3"], "cannot be used with"),
    ] {
        let (code, _, err) = cache_cmd(&args, &dir);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: want {want:?} in {err}");
    }
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let (code, _, err) = cache_cmd(&["prune", "--keep", "0"], &dir);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("mode 0777"), "{err}");
    assert!(dir.join(key(1)).is_dir(), "a cache others may write was pruned");
}
