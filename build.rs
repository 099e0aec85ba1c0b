//! Build metadata for `fsbench --version`: the git commit and the build date.
//!
//! A build from a tarball (no `.git`, no git) says `unknown commit` instead of failing;
//! `SOURCE_DATE_EPOCH` (reproducible builds) sets the date.
//!
//! It also sets `cfg(fsbench_root_tests)` when the tests are built as root or with
//! `FSBENCH_REQUIRE_ROOT_TESTS` set; without it libtest reports the root-only tests as
//! ignored, so a run as a normal user says how many it did not run.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !s.is_empty()).then_some(s)
}

/// `YYYY-MM-DD` of a Unix time: the date of its RFC 3339 form.
fn date(secs: u64) -> String {
    let rfc3339 = humantime::format_rfc3339_seconds(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs));
    rfc3339.to_string()[..10].to_string()
}

/// Whether this build script runs as root: the effective uid of `/proc/self/status`.
fn built_as_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let uid = status.lines().find_map(|l| l.strip_prefix("Uid:")).and_then(|ids| ids.split_whitespace().nth(1));
    uid == Some("0")
}

fn main() {
    // Root-only tests run (and skip at run time when not root) where they can run; elsewhere
    // they are ignored. FSBENCH_REQUIRE_ROOT_TESTS turns the cfg on whoever builds, so that
    // a skip it forbids fails instead of hiding as "ignored". USER changes with sudo and su,
    // which rebuilds the tests for the new user.
    println!("cargo:rustc-check-cfg=cfg(fsbench_root_tests)");
    println!("cargo:rerun-if-env-changed=FSBENCH_REQUIRE_ROOT_TESTS");
    println!("cargo:rerun-if-env-changed=USER");
    if built_as_root() || std::env::var_os("FSBENCH_REQUIRE_ROOT_TESTS").is_some() {
        println!("cargo:rustc-cfg=fsbench_root_tests");
    }
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    // Rebuild the version when HEAD moves: HEAD itself, and the branch it points to.
    for path in [
        git(&["rev-parse", "--git-path", "HEAD"]),
        git(&["rev-parse", "--symbolic-full-name", "HEAD"]).and_then(|r| git(&["rev-parse", "--git-path", &r])),
    ]
    .into_iter()
    .flatten()
    {
        println!("cargo:rerun-if-changed={path}");
    }
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown commit".into());
    let secs = std::env::var("SOURCE_DATE_EPOCH").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
    });
    println!("cargo:rustc-env=FSBENCH_COMMIT={commit}");
    println!("cargo:rustc-env=FSBENCH_BUILD_DATE={}", date(secs));
}
