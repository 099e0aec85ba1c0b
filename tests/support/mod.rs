//! Shared by every integration test binary (`tests/it/` and the few tests that
//! need a process of their own): the fsbench binary, the crate's files, the one
//! skip policy, and in submodules the kernel-object leak checks and provisioning
//! helpers, lat_fs task directories, result fixtures and `fsbench run` sandboxes.
//!
//! Skip policy: a root-only test carries
//! `#[cfg_attr(not(fsbench_root_tests), ignore = "needs root: ...")]`, so when the tests
//! are built by a normal user libtest reports it as ignored (build.rs sets the cfg when
//! building as root or with `FSBENCH_REQUIRE_ROOT_TESTS`), and starts with
//! `skip_unless_root!()` for a binary built as root but run as someone else. A test that
//! cannot run here for another reason (a tool missing) prints `SKIP <test>: <reason>` and
//! returns. With `FSBENCH_REQUIRE_ROOT_TESTS` set (scripts/test.sh sets it when run as
//! root) every such skip panics instead, so CI cannot go green by skipping.
//!
//! Every binary uses only part of this module.
#![allow(dead_code, unused_macros)]

/// The running test's name as libtest lists it (`module::test`), for skip messages.
macro_rules! test_name {
    () => {{
        fn here() {}
        $crate::support::test_path(std::any::type_name_of_val(&here))
    }};
}

/// Return from the running test unless we are root (see [`root_or_skip`]).
macro_rules! skip_unless_root {
    () => {
        if !$crate::support::root_or_skip(&test_name!()) {
            return;
        }
    };
}

pub mod hogs;
pub mod jsonschema;
pub mod kernel;
pub mod latfs;
pub mod report;
pub mod sandbox;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The environment variable that turns every skip into a failure.
pub const REQUIRE_ENV: &str = "FSBENCH_REQUIRE_ROOT_TESTS";

/// The fsbench binary built for these tests (also re-executed as the lat_fs worker).
pub fn exe() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_fsbench"))
}

/// A command running the fsbench binary. For `.assert()`, import `assert_cmd::prelude::*`.
pub fn fsbench() -> std::process::Command {
    std::process::Command::new(exe())
}

/// The crate root: `scenarios/`, `schemas/`, `fixtures/` and `tests/` are under it.
pub fn crate_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The checked-in 2% kernel tree archive.
pub fn small_fixture() -> PathBuf {
    crate_root().join("fixtures/linux-2.5.63-small.tar.gz")
}

/// Whether the tests run as root.
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Whether a skip is a failure: `FSBENCH_REQUIRE_ROOT_TESTS` is set.
pub fn skips_are_failures() -> bool {
    std::env::var_os(REQUIRE_ENV).is_some()
}

/// Skip `test` for `reason`: print why, or panic when skips are failures.
pub fn skip(test: &str, reason: &str) {
    assert!(!skips_are_failures(), "{test} must run ({REQUIRE_ENV} is set) but cannot: {reason}");
    eprintln!("SKIP {test}: {reason}");
}

/// True when running as root; otherwise skips `test` (see [`skip`]) and returns false.
pub fn root_or_skip(test: &str) -> bool {
    if is_root() {
        return true;
    }
    let uid = nix::unistd::geteuid();
    skip(test, &format!("needs root for tmpfs, loop devices, mount(2), mkfs and per-task uids (running as uid {uid})"));
    false
}

/// `it::module::test::here` (a type name) as libtest names the test: `module::test`.
pub fn test_path(type_name: &str) -> String {
    let path = type_name.strip_suffix("::here").unwrap_or(type_name);
    path.split_once("::").map_or(path, |(_crate, rest)| rest).to_string()
}

/// The name libtest gives test `name` of module `module` (a `module_path!()`), for
/// re-running this test binary with `--exact`: the crate name is not part of it.
pub fn libtest_name(module: &str, name: &str) -> String {
    match module.split_once("::") {
        Some((_crate, rest)) => format!("{rest}::{name}"),
        None => name.to_string(),
    }
}

/// Call `f` every `every` until it returns `Some` or `timeout` has passed.
pub fn poll<T>(timeout: Duration, every: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if start.elapsed() > timeout {
            return None;
        }
        std::thread::sleep(every);
    }
}
