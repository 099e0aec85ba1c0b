//! Finding runs: the runs of a scenario directory, and run names resolved to run
//! directories in one place, for every command that takes a run.
//!
//! A run is named by its directory, or by what people remember of it:
//! - `@LABEL`: the newest run with that `--label`; `latest` (or `@latest`): the newest run;
//! - `SCENARIO@LABEL`, `SCENARIO@latest`: the same in `SCENARIO`, a scenario name under the
//!   results root (`quota-smp@BASE` is `results/quota-smp/...`) or a scenario directory
//!   (`results/quota-smp@BASE`).
//!
//! A name without a scenario looks in the scenario directory of the other runs named on the
//! same command line, by their directory or as `SCENARIO@LABEL` (`compare BASE=quota-smp@BASE
//! V3=latest`), else in the only scenario under the results root (for `@LABEL`: the only one
//! with a run so labelled); otherwise it asks for the scenario.
//!
//! `latest` and `@LABEL` are names first: a file or directory of that name in the current
//! directory is taken only when written as a path (`./@BASE`).
//! "Newest" is by start time, then run id.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{LoadedRun, RUN_FILE, ResultsError, RunMeta, load_run};
use crate::model::CellStatus;

/// Why a run name could not be resolved or a scenario directory listed.
#[derive(Debug, thiserror::Error)]
pub enum FindError {
    /// A directory could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A scenario directory holds no run.
    #[error("{0}: no runs here (a run directory holds a run.json)")]
    NoRuns(PathBuf),
    /// No run has the label asked for.
    #[error("`{spec}`: no run labelled `{label}` in {dir} ({known})")]
    NoLabel {
        /// The name as given.
        spec: String,
        /// The label looked for.
        label: String,
        /// Where.
        dir: PathBuf,
        /// The labels there are, or that there are none.
        known: String,
    },
    /// A name without a scenario, and no way to tell which scenario.
    #[error("`{spec}`: which scenario? {why}; write it as `SCENARIO@{which}` (e.g. `{example}@{which}`)")]
    NoScenario {
        /// The name as given.
        spec: String,
        /// `BASE` or `latest`.
        which: String,
        /// What was found under the results root.
        why: String,
        /// A scenario to show in the example.
        example: String,
    },
    /// A name that is neither a run name nor an existing path (`paired-nodelalloc`).
    #[error("{spec}: does not exist; {hint}")]
    NoSuchRun {
        /// The name as given.
        spec: String,
        /// The run name that was probably meant, or how runs are named.
        hint: String,
    },
    /// A run directory could not be loaded.
    #[error(transparent)]
    Load(#[from] ResultsError),
}

/// One run of a scenario directory, as the listing shows it.
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    /// The run directory.
    pub dir: PathBuf,
    /// Its run.json.
    #[serde(skip)]
    pub meta: RunMeta,
    /// Cells planned.
    pub planned: usize,
    /// Cells measured.
    pub ok: usize,
    /// Cells skipped.
    pub skipped: usize,
    /// Cells failed.
    pub failed: usize,
    /// Cell files that could not be read.
    pub unreadable: usize,
    /// Whether no stored cell has a result: every one was skipped (or none was stored).
    #[serde(skip)]
    pub measured_nothing: bool,
}

impl RunSummary {
    fn of(run: &LoadedRun) -> RunSummary {
        let count = |s: CellStatus| run.cells.iter().filter(|c| c.status == s).count();
        RunSummary {
            dir: run.dir.clone(),
            meta: run.meta.clone(),
            planned: run.meta.planned_cells.len(),
            ok: count(CellStatus::Ok),
            skipped: count(CellStatus::Skipped),
            failed: count(CellStatus::Failed),
            unreadable: run.problems.len(),
            measured_nothing: run.cells.iter().all(|c| c.status == CellStatus::Skipped),
        }
    }

    /// `finished`, `interrupted` or `unfinished`.
    pub fn state(&self) -> &'static str {
        match (&self.meta.finished, self.meta.interrupted) {
            (Some(_), false) => "finished",
            (_, true) => "interrupted",
            (None, false) => "unfinished",
        }
    }
}

/// Whether `dir` is a run directory.
pub fn is_run_dir(dir: &Path) -> bool {
    dir.join(RUN_FILE).is_file()
}

/// Whether `dir` is a directory of runs (a scenario directory): not a run itself, holding one.
pub fn is_scenario_dir(dir: &Path) -> bool {
    !is_run_dir(dir) && run_dirs(dir).is_ok_and(|d| !d.is_empty())
}

/// The run directories directly inside `dir`, by name.
fn run_dirs(dir: &Path) -> Result<Vec<PathBuf>, FindError> {
    let rd = std::fs::read_dir(dir).map_err(|source| FindError::Io { path: dir.to_path_buf(), source })?;
    let mut out: Vec<PathBuf> = rd
        .filter_map(|e| e.ok())
        // Symlinks are not followed: a results tree is someone else's, and a link may lead anywhere.
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .filter(|p| is_run_dir(p))
        .collect();
    out.sort();
    Ok(out)
}

/// The runs of a scenario directory, oldest first, and one `dir: error` line per run
/// directory that could not be loaded: a broken run is shown, and does not hide the others.
pub fn list_runs(scenario_dir: &Path) -> Result<(Vec<RunSummary>, Vec<String>), FindError> {
    let dirs = run_dirs(scenario_dir)?;
    if dirs.is_empty() {
        return Err(FindError::NoRuns(scenario_dir.to_path_buf()));
    }
    let mut out = Vec::new();
    let mut unreadable = Vec::new();
    for d in dirs {
        match load_run(&d) {
            Ok(run) => out.push(RunSummary::of(&run)),
            Err(e) => unreadable.push(e.to_string()),
        }
    }
    out.sort_by(|a, b| (&a.meta.started, &a.meta.run_id).cmp(&(&b.meta.started, &b.meta.run_id)));
    Ok((out, unreadable))
}

/// A resolved run name: the directory, and a remark when the choice is worth telling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The run directory.
    pub dir: PathBuf,
    /// E.g. "`@BASE`: 3 runs labelled BASE in results/quota-smp; the newest".
    pub note: Option<String>,
}

/// What a name asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Spec {
    Dir(PathBuf),
    Named { scenario: Option<String>, label: Option<String> },
}

fn parse(spec: &str) -> Spec {
    let named = |scenario: Option<&str>, which: &str| Spec::Named {
        scenario: scenario.map(str::to_string),
        label: (which != "latest").then(|| which.to_string()),
    };
    // `latest` and `@LABEL` are names even where such a path exists: `./@BASE` is the path.
    if spec == "latest" {
        return named(None, "latest");
    }
    if let Some(which) = spec.strip_prefix('@')
        && !which.is_empty()
        && !which.contains('/')
    {
        return named(None, which);
    }
    // Any other path that exists is a path, whatever characters it has.
    if Path::new(spec).exists() {
        return Spec::Dir(PathBuf::from(spec));
    }
    match spec.rsplit_once('@') {
        _ if spec == "latest" => named(None, "latest"),
        Some((scenario, which)) if !which.is_empty() && !which.contains('/') => {
            named(Some(scenario).filter(|s| !s.is_empty()), which)
        }
        _ => Spec::Dir(PathBuf::from(spec)),
    }
}

/// Resolve run names given together (`compare A B C`, `gate --baseline A --candidate B`)
/// against `results_root`, in order. See the module documentation for the forms.
pub fn resolve_runs(specs: &[&str], results_root: &Path) -> Result<Vec<Resolved>, FindError> {
    let parsed: Vec<Spec> = specs.iter().map(|s| parse(s)).collect();
    let scenario_dir = |s: &str| if Path::new(s).is_dir() { PathBuf::from(s) } else { results_root.join(s) };
    // The scenario of the other runs (named by directory or as SCENARIO@LABEL), for the
    // names that give none.
    let sibling_scenario = parsed
        .iter()
        .find_map(|s| match s {
            Spec::Dir(d) if is_run_dir(d) => d.parent().map(Path::to_path_buf),
            _ => None,
        })
        .or_else(|| {
            parsed.iter().find_map(|s| match s {
                Spec::Named { scenario: Some(sc), .. } => Some(scenario_dir(sc)).filter(|d| is_scenario_dir(d)),
                _ => None,
            })
        })
        // `compare BASE=@BASE V3=latest` (the README's line): the only scenario with a run
        // labelled BASE is the scenario of `latest` too, however many scenarios the root holds.
        .or_else(|| {
            parsed.iter().find_map(|s| match s {
                Spec::Named { scenario: None, label: Some(l) } => {
                    only_scenario("", Some(l), results_root).ok().filter(|d| {
                        list_runs(d)
                            .is_ok_and(|(runs, _)| runs.iter().any(|r| r.meta.label.as_deref() == Some(l.as_str())))
                    })
                }
                _ => None,
            })
        });
    let mut out = Vec::new();
    for (spec, p) in specs.iter().zip(parsed) {
        match p {
            Spec::Dir(dir) if std::fs::symlink_metadata(&dir).is_err() => {
                return Err(FindError::NoSuchRun {
                    spec: spec.to_string(),
                    hint: missing_run_hint(spec, results_root),
                });
            }
            Spec::Dir(dir) => out.push(Resolved { dir, note: None }),
            Spec::Named { scenario, label } => {
                let dir = match scenario {
                    Some(s) => scenario_dir(&s),
                    None => match &sibling_scenario {
                        Some(d) => d.clone(),
                        None => only_scenario(spec, label.as_deref(), results_root)?,
                    },
                };
                out.push(pick(spec, &dir, label.as_deref())?);
            }
        }
    }
    Ok(out)
}

/// For a name that is no path (`paired-nodelalloc`), the run name that was probably meant:
/// the scenario of that name (or the nearest one) under the results root, as `NAME@latest`.
fn missing_run_hint(spec: &str, root: &Path) -> String {
    let trimmed = spec.trim_end_matches('/');
    if is_scenario_dir(&root.join(trimmed)) {
        return format!("`{trimmed}@latest` names the newest run of the scenario {trimmed} under {}", root.display());
    }
    let scenarios: Vec<String> = std::fs::read_dir(root)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()) && is_scenario_dir(&e.path()))
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    let base = Path::new(trimmed).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    match crate::scenario::suggest(&base, scenarios.iter().map(String::as_str)) {
        Some(near) => {
            format!("did you mean `{near}@latest` (the newest run of the scenario {near} under {})?", root.display())
        }
        None => format!(
            "name a run directory (results/<scenario>/<run-id>), `SCENARIO@latest` or `SCENARIO@LABEL` (runs are looked up under {})",
            root.display()
        ),
    }
}

fn only_scenario(spec: &str, label: Option<&str>, root: &Path) -> Result<PathBuf, FindError> {
    let which = label.unwrap_or("latest").to_string();
    let scenarios: Vec<PathBuf> = match std::fs::read_dir(root) {
        Ok(rd) => {
            let mut v: Vec<PathBuf> = rd
                .filter_map(|e| e.ok())
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .filter(|p| is_scenario_dir(p))
                .collect();
            v.sort();
            v
        }
        Err(_) => Vec::new(),
    };
    let name = |p: &PathBuf| p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    // `@LABEL`: only the scenarios that have a run so labelled are candidates (and examples).
    let scenarios = match label {
        Some(l) if scenarios.len() > 1 => {
            let labelled: Vec<PathBuf> = scenarios
                .iter()
                .filter(|d| list_runs(d).is_ok_and(|(runs, _)| runs.iter().any(|r| r.meta.label.as_deref() == Some(l))))
                .cloned()
                .collect();
            if labelled.is_empty() { scenarios } else { labelled }
        }
        _ => scenarios,
    };
    match scenarios.len() {
        1 => Ok(scenarios[0].clone()),
        0 => Err(FindError::NoScenario {
            spec: spec.into(),
            which,
            why: format!("no scenario directory with runs under {}", root.display()),
            example: "quota-smp".into(),
        }),
        _ => Err(FindError::NoScenario {
            spec: spec.into(),
            which,
            why: format!("{} holds {}", root.display(), scenarios.iter().map(name).collect::<Vec<_>>().join(", ")),
            example: name(&scenarios[0]),
        }),
    }
}

/// The newest run in `dir` with `label` (any label when `None`).
fn pick(spec: &str, dir: &Path, label: Option<&str>) -> Result<Resolved, FindError> {
    let (runs, unreadable) = list_runs(dir)?;
    let mut matching: Vec<&RunSummary> =
        runs.iter().filter(|r| label.is_none() || r.meta.label.as_deref() == label).collect();
    // `latest` means the newest run with something in it: a run whose every cell was
    // skipped (a filesystem this host lacks) has no numbers to report or compare.
    let mut passed_over = 0;
    if label.is_none() && matching.iter().any(|r| !r.measured_nothing) {
        let before = matching.len();
        matching.retain(|r| !r.measured_nothing);
        passed_over = before - matching.len();
    }
    let Some(newest) = matching.last() else {
        let mut labels: Vec<&str> = runs.iter().filter_map(|r| r.meta.label.as_deref()).collect();
        labels.sort();
        labels.dedup();
        let known = if labels.is_empty() {
            "no run there has a label".into()
        } else {
            format!("labels: {}", labels.join(", "))
        };
        return Err(FindError::NoLabel {
            spec: spec.into(),
            label: label.unwrap_or_default().into(),
            dir: dir.to_path_buf(),
            known,
        });
    };
    let note = (matching.len() > 1 || label.is_none()).then(|| {
        let what = match label {
            Some(l) => format!("{} runs labelled {l}", matching.len()),
            None => crate::text::plural(matching.len(), "run", "runs"),
        };
        format!("`{spec}` is {} ({what} in {}; the newest)", newest.dir.display(), dir.display())
    });
    let note = match (note, passed_over) {
        (Some(n), k) if k > 0 => Some(format!(
            "{n}; passed over {} that measured nothing (every cell skipped)",
            crate::text::plural(k, "run", "runs")
        )),
        (n, _) => n,
    };
    // A run that could not be read might have been the newest: say so rather than guess silently.
    let note = match (note, unreadable.len()) {
        (n, 0) => n,
        (Some(n), k) => Some(format!("{n}; {} not readable, not considered", crate::text::plural(k, "run", "runs"))),
        (None, k) => Some(format!(
            "`{spec}` is {}; {} in {} not readable, not considered",
            newest.dir.display(),
            crate::text::plural(k, "run", "runs"),
            dir.display()
        )),
    };
    Ok(Resolved { dir: newest.dir.clone(), note })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_into_what_they_ask_for() {
        let named = |s: Option<&str>, l: Option<&str>| Spec::Named {
            scenario: s.map(String::from),
            label: l.map(String::from),
        };
        assert_eq!(parse("latest"), named(None, None));
        assert_eq!(parse("@latest"), named(None, None));
        assert_eq!(parse("@BASE"), named(None, Some("BASE")));
        assert_eq!(parse("quota-smp@V3"), named(Some("quota-smp"), Some("V3")));
        assert_eq!(parse("/no/such/results/quota-smp@latest"), named(Some("/no/such/results/quota-smp"), None));
        assert_eq!(parse("/no/such/run"), Spec::Dir("/no/such/run".into()));
        assert_eq!(parse("x@a/b"), Spec::Dir("x@a/b".into()));
        // Names first, even where such a path exists; a path is written as one.
        let d = tempfile::tempdir().unwrap();
        let at = d.path().join("@BASE");
        std::fs::create_dir(&at).unwrap();
        assert_eq!(parse("@BASE"), named(None, Some("BASE")));
        assert_eq!(parse(at.to_str().unwrap()), Spec::Dir(at.clone()));
    }

    /// A new user typed a scenario name where a run was wanted (`gate paired-nodelalloc`)
    /// and was told "not a run directory (no run.json)" about a path that does not exist.
    #[test]
    fn a_bare_scenario_name_suggests_its_latest_run() {
        let root = tempfile::tempdir().unwrap();
        let run = root.path().join("paired-nodelalloc").join("20261204-000000-aaaa");
        std::fs::create_dir_all(&run).unwrap();
        std::fs::write(run.join(RUN_FILE), "{}").unwrap();
        let here = tempfile::tempdir().unwrap();
        let cwd = std::env::current_dir().unwrap();
        let missing = here.path().join("paired-nodelalloc");
        let err = resolve_runs(&[missing.to_str().unwrap()], root.path()).unwrap_err().to_string();
        assert!(err.contains("does not exist"), "{err}");
        let err = missing_run_hint("paired-nodelalloc", root.path());
        assert!(err.contains("`paired-nodelalloc@latest`"), "{err}");
        let err = missing_run_hint("paired-nodelaloc", root.path());
        assert!(err.contains("did you mean `paired-nodelalloc@latest`"), "{err}");
        let err = missing_run_hint("zzz", root.path());
        assert!(err.contains("SCENARIO@latest"), "{err}");
        assert_eq!(std::env::current_dir().unwrap(), cwd);
    }
}
