//! The candidates of a git range (`bisect --git TREE --range GOOD..BAD`): GOOD and the
//! commits of `git rev-list --first-parent GOOD..BAD`, oldest first, each labelled by its
//! short id; and a commit's tree exported for its build (`git archive`, so the user's
//! checkout, index and worktree list are never touched). Every refusal of the range is
//! bad input (exit 2) naming what.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::Context;

use crate::exit::InputError;

/// Hex digits of a commit id in its label.
pub const SHORT_LEN: usize = 12;

/// One candidate commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    /// The full commit id.
    pub id: String,
    /// Its label: the first [`SHORT_LEN`] hex digits.
    pub short: String,
}

impl Commit {
    fn new(id: &str) -> Commit {
        Commit { id: id.to_string(), short: id.chars().take(SHORT_LEN).collect() }
    }
}

/// `git -C tree ARGS` with nothing from the caller's environment choosing another
/// repository; stdout on success, `Err(stderr)` on a non-zero exit.
fn git(tree: &Path, args: &[&str]) -> anyhow::Result<Result<String, String>> {
    let mut cmd = Command::new("git");
    cmd.arg("-C").arg(tree).args(args).stdin(Stdio::null());
    for v in ["GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_CEILING_DIRECTORIES"] {
        cmd.env_remove(v);
    }
    crate::signals::default_in_child(&mut cmd);
    let out = cmd.output().context("cannot run git (is it installed?)")?;
    let text = |b: &[u8]| String::from_utf8_lossy(b).trim().to_string();
    Ok(if out.status.success() { Ok(text(&out.stdout)) } else { Err(text(&out.stderr)) })
}

/// The candidates of `range` (`GOOD..BAD`) in the repository `tree`: GOOD, then the
/// first-parent commits after it up to BAD, oldest first. Refused (bad input): a tree that
/// is not a git repository, a range not of the form `GOOD..BAD`, an end that is not a
/// commit, GOOD not an ancestor of BAD, fewer than two candidates.
pub fn candidates(tree: &Path, range: &str) -> anyhow::Result<Vec<Commit>> {
    let shown = tree.display();
    let bad = |why: String| InputError::anyhow(why);
    if let Err(e) = git(tree, &["rev-parse", "--git-dir"])? {
        return Err(bad(format!("--git {shown}: not a git repository ({})", crate::text::escape_control(&e))));
    }
    let (good, bad_end) = match range.split_once("..") {
        Some((g, b)) if !g.is_empty() && !b.is_empty() && !b.starts_with('.') => (g, b),
        _ => {
            return Err(bad(format!(
                "--range {}: not GOOD..BAD (two commits, the good one first)",
                crate::text::escape_control(range)
            )));
        }
    };
    let resolve = |what: &str, rev: &str| -> anyhow::Result<Commit> {
        let spec = format!("{rev}^{{commit}}");
        match git(tree, &["rev-parse", "--verify", "--quiet", "--end-of-options", &spec])? {
            Ok(id) if !id.is_empty() => Ok(Commit::new(&id)),
            _ => Err(bad(format!(
                "--range: the {what} end `{}` is not a commit of {shown}",
                crate::text::escape_control(rev)
            ))),
        }
    };
    let (g, b) = (resolve("good", good)?, resolve("bad", bad_end)?);
    if g.id == b.id {
        return Err(bad(format!(
            "--range {}: GOOD and BAD are the same commit {}: a bisection needs two or more candidates",
            crate::text::escape_control(range),
            g.short
        )));
    }
    if git(tree, &["merge-base", "--is-ancestor", &g.id, &b.id])?.is_err() {
        return Err(bad(format!(
            "--range {}: the good end {} is not an ancestor of the bad end {}: the range has no order to bisect",
            crate::text::escape_control(range),
            g.short,
            b.short
        )));
    }
    let listed = git(tree, &["rev-list", "--first-parent", "--reverse", &format!("{}..{}", g.id, b.id)])?
        .map_err(|e| anyhow::anyhow!("git rev-list in {shown}: {}", crate::text::escape_control(&e)))?;
    let mut out = vec![g];
    out.extend(listed.lines().map(str::trim).filter(|l| !l.is_empty()).map(Commit::new));
    if out.len() < 2 {
        return Err(bad(format!("--range {}: fewer than two candidates", crate::text::escape_control(range))));
    }
    Ok(out)
}

/// Write the tree of `commit` (a full id) of the repository `tree` into the directory
/// `dest` (`git archive`, unpacked here): the user's checkout is never touched.
pub fn export(tree: &Path, commit: &str, dest: &Path) -> anyhow::Result<()> {
    let mut cmd = Command::new("git");
    cmd.arg("-C").arg(tree).args(["archive", "--format=tar", commit]);
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    for v in ["GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY"] {
        cmd.env_remove(v);
    }
    crate::signals::default_in_child(&mut cmd);
    let mut child = cmd.spawn().context("cannot run git archive")?;
    let stdout = child.stdout.take().expect("piped");
    let unpacked = tar::Archive::new(stdout).unpack(dest);
    let out = child.wait_with_output().context("git archive")?;
    if !out.status.success() {
        anyhow::bail!(
            "git archive {commit} failed: {}",
            crate::text::escape_control(String::from_utf8_lossy(&out.stderr).trim())
        );
    }
    unpacked.with_context(|| format!("cannot unpack commit {commit} into {}", dest.display()))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `git ARGS` in `dir`, which must succeed.
    pub(crate) fn run(dir: &Path, args: &[&str]) -> String {
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

    /// A repository of `n` commits, commit `i` setting `level` to `i`; their ids, oldest first.
    pub(crate) fn repo(dir: &Path, n: usize) -> Vec<String> {
        run(dir, &["init", "-q", "-b", "main"]);
        (0..n)
            .map(|i| {
                std::fs::write(dir.join("level"), format!("{i}\n")).unwrap();
                run(dir, &["add", "level"]);
                run(dir, &["commit", "-q", "-m", &format!("c{i}")]);
                run(dir, &["rev-parse", "HEAD"])
            })
            .collect()
    }

    #[test]
    fn a_range_lists_good_then_its_first_parent_commits_oldest_first() {
        let d = tempfile::tempdir().unwrap();
        let ids = repo(d.path(), 5);
        let c = candidates(d.path(), &format!("{}..main", ids[1])).unwrap();
        assert_eq!(c.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), &ids[1..]);
        assert_eq!(c[0].short, ids[1][..SHORT_LEN]);
        let out = tempfile::tempdir().unwrap();
        export(d.path(), &ids[2], out.path()).unwrap();
        assert_eq!(std::fs::read_to_string(out.path().join("level")).unwrap(), "2\n");
        // The user's checkout is where it was.
        assert_eq!(std::fs::read_to_string(d.path().join("level")).unwrap(), "4\n");
    }

    #[test]
    fn ranges_that_cannot_be_bisected_are_bad_input_naming_why() {
        let d = tempfile::tempdir().unwrap();
        let ids = repo(d.path(), 3);
        let no_repo = tempfile::tempdir().unwrap();
        let refused = |tree: &Path, range: &str| {
            let e = candidates(tree, range).unwrap_err();
            assert!(e.downcast_ref::<InputError>().is_some(), "{e:#}");
            format!("{e:#}")
        };
        assert!(refused(no_repo.path(), "a..b").contains("not a git repository"));
        assert!(refused(d.path(), "main").contains("not GOOD..BAD"));
        assert!(refused(d.path(), "nope..main").contains("good end `nope` is not a commit"));
        assert!(refused(d.path(), &format!("{}..nope", ids[0])).contains("bad end `nope`"));
        assert!(refused(d.path(), "main..main").contains("same commit"));
        assert!(refused(d.path(), &format!("main..{}", ids[0])).contains("not an ancestor"));
    }
}
