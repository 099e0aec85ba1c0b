//! `fsbench bisect --git TREE --range GOOD..BAD --build CMD` over a toy repository of 5
//! commits whose build command copies a file as the "image": only the candidates the
//! search needs are built, a second bisection builds nothing (the build cache), a
//! candidate whose build fails is skipped, and bad input exits 2 naming what. The steps
//! are judged by a stand-in judge that reads each built image (no qemu): commit `i`'s
//! image says `i`, and the ones from 3 on are the regression.

use std::path::{Path, PathBuf};
use std::process::Command;

use fsbench::bisect::judge_build::{BuildingJudge, Builds, BuiltJudge, GitArgs};
use fsbench::bisect::search::{Conclusion, StepJudge};
use fsbench::bisect::step::StepMeasure;
use fsbench::scenario::KernelSpec;

use crate::support::{crate_root, fsbench};

/// `git ARGS` in `dir`, which must succeed; its stdout.
fn git(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"])
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// A repository of 5 commits, commit `i` writing `level` = `i`; their ids, oldest first.
fn repo(dir: &Path) -> Vec<String> {
    git(dir, &["init", "-q", "-b", "main"]);
    (0..5)
        .map(|i| {
            std::fs::write(dir.join("level"), format!("{i}\n")).unwrap();
            git(dir, &["add", "level"]);
            git(dir, &["commit", "-q", "-m", &format!("c{i}")]);
            git(dir, &["rev-parse", "HEAD"])
        })
        .collect()
}

/// A build command that appends its commit to `count` and copies `level` as the image;
/// it fails for the commit whose level is `fail`.
fn build_cmd(count: &Path, fail: Option<u32>) -> String {
    let fail = fail.map(|f| format!("[ \"$(cat level)\" = {f} ] && exit 1; ")).unwrap_or_default();
    format!("echo \"$FSBENCH_COMMIT\" >> {}; {fail}cp level \"$FSBENCH_OUT/vmlinuz\"", count.display())
}

fn built(count: &Path) -> Vec<String> {
    std::fs::read_to_string(count).unwrap_or_default().lines().map(str::to_string).collect()
}

/// Bad when the candidate's image says 3 or more and the baseline's less.
#[derive(Default)]
struct ReadsImages {
    images: std::collections::BTreeMap<usize, PathBuf>,
}

impl BuiltJudge for ReadsImages {
    fn built(&mut self, position: usize, kernel: &KernelSpec) {
        self.images.insert(position, kernel.image.clone());
    }
}

impl StepJudge for ReadsImages {
    fn judge(&mut self, b: usize, c: usize) -> anyhow::Result<Option<StepMeasure>> {
        let level = |i: usize| -> u32 { std::fs::read_to_string(&self.images[&i]).unwrap().trim().parse().unwrap() };
        let bad = level(c) >= 3 && level(b) < 3;
        let stop = if bad {
            fsbench::model::pairing::PairStop::Regressed
        } else {
            fsbench::model::pairing::PairStop::Unchanged
        };
        let change = if bad { (-0.3, -0.33, -0.27) } else { (0.0, -0.02, 0.02) };
        let change = fsbench::stats::Change { mean: change.0, ci_low: change.1, ci_high: change.2 };
        let rule = (0.05, fsbench::catalogue::Direction::HigherIsBetter);
        Ok(Some(StepMeasure::judge(stop, Some(change), 0.01, (6, 0), rule)))
    }
}

/// Bisect `tree`'s whole range with `build`, caching in `cache`: the conclusion, the log
/// and how many builds ran.
fn bisect_range(
    tree: &Path,
    build: &str,
    cache: &Path,
    out: &Path,
) -> (Conclusion, fsbench::bisect::log::BisectLog, usize) {
    let a = GitArgs {
        tree: tree.into(),
        range: "main~4..main".into(),
        build: build.into(),
        config: None,
        cache: Some(cache.into()),
    };
    let mut builds = Builds::open(&a, true).unwrap();
    assert!(builds.endpoints().unwrap());
    let s = fsbench::scenario::load_named(Some(&crate_root().join("scenarios/quota-qemu.toml")), &[]).unwrap();
    let cell = fsbench::plan::expand(&s).cells.remove(0);
    let labels: Vec<String> = builds.kernels.iter().map(|k| k.label.clone()).collect();
    let spec = fsbench::runner::kernel_compare(&s, &labels).unwrap();
    let mut log = fsbench::bisect::setup::new_log(&s, std::slice::from_ref(&cell), &spec, 5, &builds.kernels);
    builds.annotate(&mut log);
    let dir = fsbench::bisect::drive::create_dir(out, &s.name).unwrap();
    let mut judge = BuildingJudge { builds: &mut builds, inner: ReadsImages::default() };
    let c = fsbench::bisect::drive::run(&mut judge, &mut log, &dir, true).unwrap();
    let stored = std::fs::read(dir.path.join("bisect.json")).unwrap();
    crate::schemas::conforming("bisect.schema.json", &stored, "bisect.json");
    (c, log, builds.ran)
}

#[test]
fn only_the_needed_commits_are_built_once_and_the_culprit_is_named_by_its_commit() {
    let t = tempfile::tempdir().unwrap();
    let tree = t.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    let ids = repo(&tree);
    let (count, cache, out) = (t.path().join("count"), t.path().join("cache"), t.path().join("results"));
    let cmd = build_cmd(&count, None);
    let (c, log, ran) = bisect_range(&tree, &cmd, &cache, &out);
    assert_eq!(c, Conclusion::Culprit { candidate: 3 });
    assert_eq!(log.culprit.as_deref(), Some(&ids[3][..12]));
    assert_eq!(log.candidates[3].commit.as_deref(), Some(ids[3].as_str()));
    assert_eq!(log.git.as_ref().unwrap().bad, ids[4]);
    // Endpoints 0 and 4, then midpoints 2 (good) and 3 (bad); 1 is never needed.
    let mut b = built(&count);
    b.sort();
    let mut want = vec![ids[0].clone(), ids[2].clone(), ids[3].clone(), ids[4].clone()];
    want.sort();
    assert_eq!((b, ran), (want, 4));
    // The user's checkout is untouched.
    assert_eq!(std::fs::read_to_string(tree.join("level")).unwrap(), "4\n");
    assert_eq!(git(&tree, &["status", "--porcelain"]), "");

    // A resumed bisection gets its builds back from the log; a changed config is refused.
    let g = log.git.clone().unwrap();
    assert_eq!(Builds::resume(&log, &g, true).unwrap().cached(), 4);
    let mut changed = g.clone();
    changed.config_sha256 = Some("0".repeat(64));
    let e = Builds::resume(&log, &changed, true).err().unwrap();
    assert!(format!("{e:#}").contains("changed since"), "{e:#}");

    // A second bisection of the range builds nothing: every image is the cache's.
    let (c, _, ran) = bisect_range(&tree, &cmd, &cache, &out);
    assert_eq!((c, ran), (Conclusion::Culprit { candidate: 3 }, 0));
    assert_eq!(built(&count).len(), 4);
}

#[test]
fn a_commit_that_does_not_build_is_skipped_and_the_range_is_narrowed_around_it() {
    let t = tempfile::tempdir().unwrap();
    let tree = t.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    let ids = repo(&tree);
    let (count, cache, out) = (t.path().join("count"), t.path().join("cache"), t.path().join("results"));
    let (c, log, _) = bisect_range(&tree, &build_cmd(&count, Some(2)), &cache, &out);
    // 2 does not build (skip), 1 is good, 3 bad: the culprit is 3 or the unbuildable 2.
    match c {
        Conclusion::Narrowed { good, bad, why } => {
            assert_eq!((good, bad), (1, 3));
            assert!(why.contains("skipped"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    let skip = log.steps.iter().find(|s| s.candidate == 2).unwrap();
    let reason = skip.measure.reason.as_deref().unwrap();
    assert!(reason.contains(&format!("the build of {} failed", &ids[2][..12])), "{reason}");
    assert!(reason.contains("exited with 1"), "{reason}");
}

/// `fsbench bisect scenarios/quota-qemu.toml --cell … ARGS`: exit code and stderr.
fn cli(args: &[&str], env: &[(&str, &Path)]) -> (Option<i32>, String) {
    let mut cmd = fsbench();
    cmd.current_dir(crate_root())
        .args(["bisect", "scenarios/quota-qemu.toml", "--cell", "ext4-S-qoff-t1-open_close", "-q"])
        .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o = cmd.output().unwrap();
    (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned())
}

#[test]
fn bad_git_input_exits_2_naming_what_and_nothing_is_built() {
    let t = tempfile::tempdir().unwrap();
    let tree = t.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    let ids = repo(&tree);
    let (count, out, cache) = (t.path().join("count"), t.path().join("results"), t.path().join("cache"));
    let (tree_s, out_s, cache_s) = (tree.to_str().unwrap(), out.to_str().unwrap(), cache.to_str().unwrap());
    let cmd = build_cmd(&count, None);
    let not_repo = t.path().to_str().unwrap();
    let wrong_way = format!("{}..{}", ids[3], ids[1]);
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--git", not_repo, "--range", "a..b", "--build", &cmd], "not a git repository"),
        (vec!["--git", tree_s, "--range", "nope..main", "--build", &cmd], "the good end `nope` is not a commit"),
        (vec!["--git", tree_s, "--range", "main~2..nope", "--build", &cmd], "the bad end `nope` is not a commit"),
        (vec!["--git", tree_s, "--range", &wrong_way, "--build", &cmd], "is not an ancestor of the bad end"),
        (vec!["--git", tree_s, "--range", "main..main", "--build", &cmd], "same commit"),
        (vec!["--git", tree_s, "--range", "main~2..main"], "--build <CMD>"),
        (vec!["--git", tree_s, "--range", "main~2..main", "--build", &cmd, "--kernel", "A=/x"], "cannot be used with"),
        (vec!["--git", tree_s, "--range", "main~2..main", "--build", &cmd, "--config", "/nonexistent"], "--config"),
    ];
    for (args, want) in cases {
        let mut all = args.clone();
        all.extend(["--out", out_s, "--build-cache", cache_s]);
        let (code, err) = cli(&all, &[]);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: want {want:?} in:\n{err}");
    }
    assert!(built(&count).is_empty() && !out.exists(), "bad input built or created something");

    // A build command that fails for both endpoints: exit 2 before anything is measured.
    let qemu = t.path().join("qemu");
    std::fs::write(&qemu, "#!/bin/sh\nexit 1\n").unwrap();
    std::fs::set_permissions(&qemu, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let failing = format!("echo \"$FSBENCH_COMMIT\" >> {}; exit 4", count.display());
    let args =
        ["--git", tree_s, "--range", "main~4..main", "--build", &failing, "--out", out_s, "--build-cache", cache_s];
    let (code, err) = cli(&args, &[("FSBENCH_QEMU", &qemu)]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("the build command failed for both endpoints"), "{err}");
    assert!(err.contains("exited with 4"), "{err}");
    assert_eq!(built(&count), [ids[0].clone(), ids[4].clone()], "the endpoints only, each once");
    assert!(!out.exists(), "nothing measured, no bisection directory");

    // The estimate counts the builds and builds nothing.
    let args = ["--git", tree_s, "--range", "main~4..main", "--build", &cmd, "--estimate", "--build-cache", cache_s];
    let (code, err) = cli(&args, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("builds: at most 4 of the 5 commits"), "{err}");
    assert!(err.contains("0 already in the build cache") && err.contains("not known until one build has run"), "{err}");
    assert_eq!(built(&count).len(), 2);
}

#[test]
fn at_the_command_line_the_endpoints_are_built_first_and_a_rerun_builds_nothing() {
    // A stand-in qemu whose guests panic: the endpoints cannot be measured (exit 1), but
    // they were built (and only they), booted from the cache, and the log names their commits.
    let t = tempfile::tempdir().unwrap();
    let tree = t.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    let ids = repo(&tree);
    let qemu = t.path().join("qemu");
    std::fs::write(&qemu, "#!/bin/sh\necho '[    1.0] Kernel panic - not syncing: fake'\nexit 0\n").unwrap();
    std::fs::set_permissions(&qemu, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (count, cache, work) = (t.path().join("count"), t.path().join("cache"), t.path().join("work"));
    let cmd = build_cmd(&count, None);
    for (run, out) in [(1, t.path().join("r1")), (2, t.path().join("r2"))] {
        let args = [
            "--git",
            tree.to_str().unwrap(),
            "--range",
            "main~4..main",
            "--build",
            &cmd,
            "--build-cache",
            cache.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--workdir",
            work.to_str().unwrap(),
            "--min-pairs",
            "2",
            "--max-pairs",
            "2",
            "--json",
        ];
        let (code, err) = cli(&args, &[("FSBENCH_QEMU", &qemu)]);
        assert_eq!(code, Some(1), "run {run}: {err}");
        assert!(err.contains("Kernel panic - not syncing: fake") || err.contains("no modules directory"), "{err}");
        let logs: Vec<PathBuf> =
            std::fs::read_dir(out.join("quota-qemu")).unwrap().map(|e| e.unwrap().path().join("bisect.json")).collect();
        let log: serde_json::Value = serde_json::from_slice(&std::fs::read(&logs[0]).unwrap()).unwrap();
        assert_eq!(log["conclusion"]["kind"], "endpoint_skipped", "{log}");
        assert_eq!(log["candidates"][4]["commit"], ids[4].as_str());
        assert_eq!(log["git"]["good"], ids[0].as_str());
        assert!(log["candidates"][4]["image"].as_str().unwrap().starts_with(cache.to_str().unwrap()));
        // Built once, the endpoints only: the second run found both in the cache.
        assert_eq!(built(&count), [ids[0].clone(), ids[4].clone()], "run {run}");
    }
}
