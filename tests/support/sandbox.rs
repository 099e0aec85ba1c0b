//! `fsbench run` in a private directory, and reading the run directories it writes.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A temporary directory holding a run's work directory, results root and cache.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    /// A sandbox in a fresh temporary directory named `<prefix>XXXXXX`.
    pub fn new(prefix: &str) -> Sandbox {
        Sandbox { dir: tempfile::Builder::new().prefix(prefix).tempdir().unwrap() }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The `--workdir`.
    pub fn work(&self) -> PathBuf {
        self.path().join("work")
    }

    /// The `--out` results root.
    pub fn out(&self) -> PathBuf {
        self.path().join("results")
    }

    /// `fsbench <args> --workdir <work> --out <out> --quiet`, run from the crate root (so
    /// `scenarios/...` resolves) with its cache inside the sandbox.
    ///
    /// A `run` gets `--set workload.disturbance=off` unless the test sets `disturbance`
    /// itself or resumes: tests run in parallel, and another test's mkfs or untar is
    /// foreign CPU time that would mark repetitions disturbed and rerun them, so tests of
    /// other behaviour would count repetitions that depend on their neighbours.
    pub fn fsbench(&self, args: &[&str]) -> Command {
        let mut c = super::fsbench();
        c.current_dir(super::crate_root()).args(args);
        let runs = args.first() == Some(&"run") || args.starts_with(&["bundle", "run"]);
        if runs && !args.iter().any(|a| a.contains("disturbance") || *a == "--resume") {
            c.args(["--set", "workload.disturbance=off"]);
        }
        c.arg("--workdir").arg(self.work()).arg("--out").arg(self.out()).arg("--quiet");
        c.env("XDG_CACHE_HOME", self.path().join("cache"));
        c
    }

    /// The run directories under the results root.
    pub fn runs(&self) -> Vec<PathBuf> {
        run_dirs(&self.out())
    }

    /// Write the scenario `text` to `<sandbox>/<name>`, `run` it (it must succeed) and
    /// return the run directory it stored (the first, when the sandbox holds several).
    pub fn run_scenario(&self, name: &str, text: &str) -> PathBuf {
        self.run_scenario_with(name, text, &[]).0
    }

    /// [`Sandbox::run_scenario`] with `extra` arguments after the scenario's file
    /// (`--allow-device D`): the run directory and what `run` printed on stdout.
    pub fn run_scenario_with(&self, name: &str, text: &str, extra: &[&str]) -> (PathBuf, String) {
        let file = self.path().join(name);
        std::fs::write(&file, text).unwrap();
        let mut args = vec!["run", file.to_str().unwrap()];
        args.extend(extra);
        let out = self.fsbench(&args).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{}{stdout}", String::from_utf8_lossy(&out.stderr));
        (self.runs().swap_remove(0), stdout)
    }
}

/// The stored cell file `cells/<id>.json` of `run`, parsed.
pub fn cell_json(run: &Path, id: &str) -> serde_json::Value {
    let path = run.join("cells").join(format!("{id}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every run directory under results root `out` (`<out>/<scenario>/<run>/run.json`), sorted.
pub fn run_dirs(out: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = subdirs(out).iter().flat_map(|scenario| runs_in(scenario)).collect();
    v.sort();
    v
}

/// The run directories directly in `dir` (one scenario's directory), sorted.
pub fn runs_in(dir: &Path) -> Vec<PathBuf> {
    subdirs(dir).into_iter().filter(|p| p.join("run.json").is_file()).collect()
}

/// The ids of the cells a run has stored (`cells/<id>.json`; temporary files left out), sorted.
pub fn cell_ids(run: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(run.join("cells"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .filter_map(|n| n.strip_suffix(".json").map(String::from))
        .collect();
    v.sort();
    v
}

fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> =
        std::fs::read_dir(dir).into_iter().flatten().flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
    v.sort();
    v
}
