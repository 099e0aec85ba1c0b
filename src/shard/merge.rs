//! `fsbench merge`: gather the shards of one run, check they are complete, render them.
//!
//! How shards of one logical run are recognised: their `run.json` carries a
//! `shard` record with the shard number, the shard count and a run key
//! ([`super::run_key`]: `FSBENCH_RUN_KEY`, else `slurm-<array job id>`, else
//! scenario hash and N). Runs with the same scenario name, key and count are
//! one group; within a group every shard must come from the same scenario text
//! (sha256), else the merge is refused. Unsharded runs of one scenario text form
//! a group of their own (the same scenario run on several hosts).
//!
//! Hosts are a dimension, never averaged: the shards are merged per host into
//! one run each, and several hosts are rendered side by side by the compare
//! report (one column per host, ratios to the first host). A group whose shards
//! all ran on one host renders exactly like a single-machine run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::report::Format;
use crate::results::{LoadedRun, ResultsError};

/// Why shards cannot be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// A directory could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A directory holds no run directory at any depth up to `<root>/<scenario>/<run>`.
    #[error("{0}: no run directory found (expected a run directory, results/<scenario>/ or a results root)")]
    NoRuns(PathBuf),
    /// A run directory could not be loaded.
    #[error(transparent)]
    Load(#[from] ResultsError),
    /// Shards with one run key come from different scenario texts.
    #[error("shards of run `{key}` come from different scenario texts: {details}")]
    ScenarioMismatch {
        /// The run key.
        key: String,
        /// `dir: sha256` pairs.
        details: String,
    },
    /// Shards of one run planned different cell sets (e.g. different `--only`).
    #[error("shards of run `{key}` do not partition one plan: {details}")]
    NotAPartition {
        /// The run key.
        key: String,
        /// What is inconsistent.
        details: String,
    },
    /// `FSBENCH_RUN_KEY` selects a key no given run has.
    #[error("FSBENCH_RUN_KEY={0}: no shard of that run among the given directories")]
    KeyNotFound(String),
    /// Rendering side by side failed (incompatible runs).
    #[error("cannot put hosts side by side: {0}")]
    Compare(#[from] crate::report::CompareError),
}

/// The runs that belong together: the shards of one sharded run, or unsharded runs of one scenario text.
#[derive(Debug, Clone)]
pub struct RunGroup {
    /// Scenario name.
    pub scenario: String,
    /// Run key of the shards; `None` for unsharded runs.
    pub key: Option<String>,
    /// Number of shards; `None` for unsharded runs.
    pub count: Option<u32>,
    /// The runs, sorted by shard number then directory.
    pub runs: Vec<LoadedRun>,
}

/// What is wrong with a group's shards (empty when complete).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Completeness {
    /// Shard numbers (from 1) no run directory has.
    pub missing: Vec<u32>,
    /// Shard numbers that several run directories claim, with those directories (the first is used).
    pub duplicated: Vec<(u32, Vec<PathBuf>)>,
}

impl Completeness {
    /// True when every shard is there exactly once.
    pub fn is_complete(&self) -> bool {
        self.missing.is_empty() && self.duplicated.is_empty()
    }
}

/// Every run directory under the given directories: each is a run directory
/// (has `run.json`), or is searched two levels down (`<scenario>/<run>`, `<root>/<scenario>/<run>`).
pub fn find_run_dirs(dirs: &[PathBuf]) -> Result<Vec<PathBuf>, MergeError> {
    let mut found = Vec::new();
    for dir in dirs {
        if dir.join(crate::results::RUN_FILE).is_file() {
            found.push(dir.clone());
            continue;
        }
        let mut here = Vec::new();
        for entry in walkdir::WalkDir::new(dir).min_depth(1).max_depth(3).sort_by_file_name() {
            let entry = entry.map_err(|e| MergeError::Io {
                path: e.path().unwrap_or(dir).to_path_buf(),
                source: e.into_io_error().unwrap_or_else(|| std::io::Error::other("filesystem loop")),
            })?;
            if entry.file_type().is_file() && entry.file_name() == crate::results::RUN_FILE {
                here.push(entry.path().parent().unwrap_or(dir).to_path_buf());
            }
        }
        if here.is_empty() {
            return Err(MergeError::NoRuns(dir.clone()));
        }
        found.extend(here);
    }
    // The same run named twice (a run directory and its root) is one run, not a duplicated shard.
    let mut seen = std::collections::HashSet::new();
    found.retain(|d| seen.insert(d.canonicalize().unwrap_or_else(|_| d.clone())));
    Ok(found)
}

/// Sort loaded runs into groups, in the order groups first appear.
pub fn group_runs(runs: Vec<LoadedRun>) -> Result<Vec<RunGroup>, MergeError> {
    let mut groups: Vec<RunGroup> = Vec::new();
    for run in runs {
        let (key, count) = match &run.meta.shard {
            Some(s) => (Some(s.key.clone()), Some(s.count)),
            None => (None, None),
        };
        let same = |g: &RunGroup| {
            g.scenario == run.meta.scenario_name
                && g.key == key
                && g.count == count
                // Unsharded runs group by scenario text; shards by key (a differing text is an error below).
                && (key.is_some() || g.runs[0].meta.scenario_sha256 == run.meta.scenario_sha256)
        };
        match groups.iter_mut().find(|g| same(g)) {
            Some(g) => g.runs.push(run),
            None => groups.push(RunGroup { scenario: run.meta.scenario_name.clone(), key, count, runs: vec![run] }),
        }
    }
    for g in &mut groups {
        g.runs.sort_by(|a, b| {
            let n = |r: &LoadedRun| r.meta.shard.as_ref().map(|s| s.index).unwrap_or(0);
            n(a).cmp(&n(b)).then_with(|| a.dir.cmp(&b.dir))
        });
        if let Some(key) = &g.key {
            let sha0 = &g.runs[0].meta.scenario_sha256;
            if g.runs.iter().any(|r| &r.meta.scenario_sha256 != sha0) {
                let details = g
                    .runs
                    .iter()
                    .map(|r| {
                        format!(
                            "{}: {}",
                            r.dir.display(),
                            &r.meta.scenario_sha256[..12.min(r.meta.scenario_sha256.len())]
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", ");
                return Err(MergeError::ScenarioMismatch { key: key.clone(), details });
            }
        }
    }
    Ok(groups)
}

/// Which shards of a sharded group are missing or duplicated (nothing for unsharded groups).
pub fn completeness(g: &RunGroup) -> Completeness {
    let Some(count) = g.count else { return Completeness::default() };
    let mut by_number: BTreeMap<u32, Vec<PathBuf>> = BTreeMap::new();
    for r in &g.runs {
        if let Some(s) = &r.meta.shard {
            by_number.entry(s.index).or_default().push(r.dir.clone());
        }
    }
    Completeness {
        missing: (1..=count).filter(|n| !by_number.contains_key(n)).collect(),
        duplicated: by_number.into_iter().filter(|(_, d)| d.len() > 1).collect(),
    }
}

/// One run per shard number (the first of duplicates), checked to be parts of one plan.
fn chosen_shards(g: &RunGroup) -> Result<Vec<&LoadedRun>, MergeError> {
    let mut chosen: Vec<&LoadedRun> = Vec::new();
    for r in &g.runs {
        let n = r.meta.shard.as_ref().map(|s| s.index);
        if n.is_none() || !chosen.iter().any(|c| c.meta.shard.as_ref().map(|s| s.index) == n) {
            chosen.push(r);
        }
    }
    if let Some(key) = &g.key {
        let total = chosen[0].meta.shard.as_ref().map(|s| s.total_cells).unwrap_or(0);
        let mut owner: BTreeMap<usize, u32> = BTreeMap::new();
        for r in &chosen {
            let s = r.meta.shard.as_ref().expect("sharded group");
            if s.total_cells != total || s.cell_indices.len() != r.meta.planned_cells.len() {
                return Err(MergeError::NotAPartition {
                    key: key.clone(),
                    details: format!(
                        "{} plans {} of {} cells, shard 1 a plan of {total}",
                        r.dir.display(),
                        s.cell_indices.len(),
                        s.total_cells
                    ),
                });
            }
            for &i in &s.cell_indices {
                if let Some(other) = owner.insert(i, s.index) {
                    return Err(MergeError::NotAPartition {
                        key: key.clone(),
                        details: format!("cell #{i} is planned by shards {other} and {}", s.index),
                    });
                }
            }
        }
    }
    Ok(chosen)
}

/// Merge a group into one run per host, labelled for rendering.
///
/// One host: the run keeps its `--label` (so it renders like a single-machine
/// run). Several hosts: each is labelled by its host name (`LABEL@host` when the
/// runs had a label); a host name seen twice among unsharded runs gets `#2`.
pub fn merge_by_host(g: &RunGroup) -> Result<Vec<(String, LoadedRun)>, MergeError> {
    let chosen = chosen_shards(g)?;
    let mut hosts: Vec<(String, Vec<&LoadedRun>)> = Vec::new();
    for r in chosen {
        let host = r.meta.host.hostname.clone();
        match hosts.iter_mut().find(|(h, _)| *h == host && g.key.is_some()) {
            Some((_, v)) => v.push(r),
            None => hosts.push((host, vec![r])),
        }
    }
    let several = hosts.len() > 1;
    let mut out: Vec<(String, LoadedRun)> = Vec::new();
    for (host, runs) in hosts {
        let merged = merge_runs(&runs, g.key.as_deref());
        let label = if several {
            let base = match &merged.meta.label {
                Some(l) => format!("{l}@{host}"),
                None => host.clone(),
            };
            let n = out.iter().filter(|(l, _)| *l == base || l.starts_with(&format!("{base}#"))).count();
            if n == 0 { base } else { format!("{base}#{}", n + 1) }
        } else {
            merged.label().to_string()
        };
        out.push((label, merged));
    }
    Ok(out)
}

/// Put the shards that ran on one host together as one run, cells in plan order.
fn merge_runs(runs: &[&LoadedRun], key: Option<&str>) -> LoadedRun {
    if runs.len() == 1 && runs[0].meta.shard.is_none() {
        return runs[0].clone();
    }
    let first = runs[0];
    let mut meta = first.meta.clone();
    let mut planned: Vec<(usize, crate::model::CellParams)> = Vec::new();
    for r in runs {
        let indices = r.meta.shard.as_ref().map(|s| s.cell_indices.clone()).unwrap_or_default();
        planned.extend(indices.into_iter().zip(r.meta.planned_cells.iter().cloned()));
    }
    planned.sort_by_key(|(i, _)| *i);
    let order: std::collections::HashMap<String, usize> = planned.iter().map(|(i, p)| (p.id(), *i)).collect();
    let mut cells: Vec<crate::model::CellResult> = runs.iter().flat_map(|r| r.cells.iter().cloned()).collect();
    cells.sort_by(|a, b| {
        let k = |c: &crate::model::CellResult| order.get(&c.id).copied().unwrap_or(usize::MAX);
        k(a).cmp(&k(b)).then_with(|| a.id.cmp(&b.id))
    });
    let numbers: Vec<String> = runs.iter().filter_map(|r| r.meta.shard.as_ref().map(|s| s.index.to_string())).collect();
    meta.run_id = format!(
        "{} (shards {} of {})",
        key.unwrap_or(&meta.run_id),
        numbers.join(","),
        meta.shard.as_ref().map(|s| s.count).unwrap_or(1)
    );
    meta.planned_cells = planned.into_iter().map(|(_, p)| p).collect();
    meta.started = runs.iter().map(|r| r.meta.started.clone()).min().unwrap_or_default();
    meta.finished =
        runs.iter().map(|r| r.meta.finished.clone()).collect::<Option<Vec<_>>>().and_then(|f| f.into_iter().max());
    meta.interrupted = runs.iter().any(|r| r.meta.interrupted);
    meta.shard = None;
    LoadedRun {
        dir: common_parent(runs.iter().map(|r| r.dir.as_path())),
        meta,
        cells,
        problems: runs.iter().flat_map(|r| r.problems.iter().cloned()).collect(),
    }
}

fn common_parent<'a>(mut dirs: impl Iterator<Item = &'a Path>) -> PathBuf {
    let Some(first) = dirs.next() else { return PathBuf::new() };
    let mut common = first.parent().unwrap_or(first).to_path_buf();
    for d in dirs {
        while !d.starts_with(&common) {
            if !common.pop() {
                break;
            }
        }
    }
    common
}

/// Human summary of a group: which shards ran where, and what is missing or duplicated.
pub fn describe(g: &RunGroup, c: &Completeness) -> Vec<String> {
    let mut lines = Vec::new();
    match (&g.key, g.count) {
        (Some(key), Some(count)) => {
            let mut per_host: Vec<(String, Vec<u32>)> = Vec::new();
            for r in &g.runs {
                let n = r.meta.shard.as_ref().map(|s| s.index).unwrap_or(0);
                match per_host.iter_mut().find(|(h, _)| *h == r.meta.host.hostname) {
                    Some((_, v)) => v.push(n),
                    None => per_host.push((r.meta.host.hostname.clone(), vec![n])),
                }
            }
            let hosts =
                per_host.iter().map(|(h, v)| format!("{h} (shards {})", join(v))).collect::<Vec<_>>().join(", ");
            lines.push(format!(
                "merged {} of {count} shards of run {key} (scenario {}, sha256 {}) from {hosts}",
                count as usize - c.missing.len(),
                g.scenario,
                &g.runs[0].meta.scenario_sha256[..12.min(g.runs[0].meta.scenario_sha256.len())]
            ));
        }
        _ => lines.push(format!(
            "{} unsharded run(s) of scenario {} from {}",
            g.runs.len(),
            g.scenario,
            g.runs.iter().map(|r| r.meta.host.hostname.as_str()).collect::<Vec<_>>().join(", ")
        )),
    }
    if !c.missing.is_empty() {
        lines.push(format!("missing shards: {}", join(&c.missing)));
    }
    for (n, dirs) in &c.duplicated {
        let list = dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ");
        lines.push(format!("duplicated shard {n}: {list} (using the first)"));
    }
    lines
}

fn join(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// Render a merged group: one host as a single run, several hosts side by side.
pub fn render_group(hosts: &[(String, LoadedRun)], format: Format) -> Result<String, MergeError> {
    match hosts {
        [(_, run)] => Ok(crate::report::render_run(run, format)),
        _ => Ok(crate::report::render_compare(hosts, format)?),
    }
}

/// A merged group as a report document: one host as a single run, several hosts side by side.
pub fn group_json(hosts: &[(String, LoadedRun)]) -> Result<crate::report::json::ReportJson, MergeError> {
    match hosts {
        [(_, run)] => Ok(crate::report::run_json(run)),
        _ => Ok(crate::report::compare_json(hosts, &crate::report::CompareOptions::default())?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CellParams, Layout, QuotaMode};
    use crate::results::{HostInfo, RunMeta, RunShard};

    fn params(tasks: u32) -> CellParams {
        CellParams {
            fs: "ext4".into(),
            layout: Layout::S,
            quota: QuotaMode::Off,
            tasks,
            test: None,
            fio: Default::default(),
            kernel: None,
        }
    }

    fn shard_run(host: &str, key: &str, index: u32, count: u32, cells: &[usize], sha: &str) -> LoadedRun {
        let meta = RunMeta {
            schema: crate::model::RESULT_SCHEMA_VERSION,
            tool_version: "0".into(),
            run_id: format!("r-{host}-{index}"),
            scenario_name: "s".into(),
            scenario_origin: "s.toml".into(),
            scenario_text: String::new(),
            scenario_sha256: sha.into(),
            archive: None,
            workload: crate::model::WorkloadKind::Steps,
            label: None,
            host: HostInfo { hostname: host.into(), ..Default::default() },
            started: format!("2026-01-01T00:00:0{index}Z"),
            finished: Some(format!("2026-01-01T00:01:0{index}Z")),
            planned_cells: cells.iter().map(|&i| params(i as u32 + 1)).collect(),
            interrupted: false,
            shard: Some(RunShard { index, count, key: key.into(), total_cells: 4, cell_indices: cells.to_vec() }),
            environment: None,
            order: None,
            derived: None,
            meta: Default::default(),
            pair_seed: None,
            kernels: Vec::new(),
        };
        LoadedRun {
            dir: PathBuf::from(format!("/r/s/{host}-{index}-{key}")),
            meta,
            cells: Vec::new(),
            problems: Vec::new(),
        }
    }

    #[test]
    fn groups_by_key_and_reports_missing_and_duplicated_by_number() {
        let runs = vec![
            shard_run("a", "k1", 1, 4, &[0], "aa"),
            shard_run("b", "k1", 3, 4, &[2], "aa"),
            shard_run("c", "k1", 3, 4, &[2], "aa"),
            shard_run("a", "k2", 1, 1, &[0, 1, 2, 3], "aa"),
        ];
        let groups = group_runs(runs).unwrap();
        assert_eq!(groups.len(), 2);
        let c = completeness(&groups[0]);
        assert_eq!(c.missing, vec![2, 4]);
        assert_eq!(c.duplicated.len(), 1);
        assert_eq!(c.duplicated[0].0, 3);
        assert!(completeness(&groups[1]).is_complete());
        let text = describe(&groups[0], &c).join("\n");
        assert!(text.contains("missing shards: 2,4") && text.contains("duplicated shard 3"), "{text}");
    }

    #[test]
    fn differing_scenario_texts_in_one_run_are_refused() {
        let runs = vec![shard_run("a", "k", 1, 2, &[0, 1], "aa"), shard_run("a", "k", 2, 2, &[2, 3], "bb")];
        assert!(matches!(group_runs(runs), Err(MergeError::ScenarioMismatch { .. })));
    }

    #[test]
    fn overlapping_shards_are_not_a_partition() {
        let runs = vec![shard_run("a", "k", 1, 2, &[0, 1], "aa"), shard_run("a", "k", 2, 2, &[1, 2], "aa")];
        let g = group_runs(runs).unwrap();
        assert!(matches!(merge_by_host(&g[0]), Err(MergeError::NotAPartition { .. })));
    }

    #[test]
    fn hosts_stay_apart_and_cells_come_back_in_plan_order() {
        let runs = vec![
            shard_run("b", "k", 2, 4, &[1], "aa"),
            shard_run("a", "k", 1, 4, &[3, 0], "aa"),
            shard_run("b", "k", 4, 4, &[2], "aa"),
            shard_run("a", "k", 3, 4, &[], "aa"),
        ];
        let g = group_runs(runs).unwrap();
        assert!(completeness(&g[0]).is_complete());
        let hosts = merge_by_host(&g[0]).unwrap();
        let labels: Vec<&str> = hosts.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(labels, ["a", "b"], "one entry per host, in shard order");
        let tasks = |r: &LoadedRun| r.meta.planned_cells.iter().map(|p| p.tasks).collect::<Vec<_>>();
        assert_eq!(tasks(&hosts[0].1), [1, 4]);
        assert_eq!(tasks(&hosts[1].1), [2, 3]);
        assert!(hosts[0].1.meta.run_id.contains("shards 1,3 of 4"), "{}", hosts[0].1.meta.run_id);
    }

    #[test]
    fn one_host_keeps_its_label() {
        let mut a = shard_run("a", "k", 1, 2, &[0, 1], "aa");
        a.meta.label = Some("BASE".into());
        let mut b = shard_run("a", "k", 2, 2, &[2, 3], "aa");
        b.meta.label = Some("BASE".into());
        let g = group_runs(vec![a, b]).unwrap();
        let hosts = merge_by_host(&g[0]).unwrap();
        assert_eq!(hosts.len(), 1);
        assert_eq!(hosts[0].0, "BASE");
        assert_eq!(hosts[0].1.meta.planned_cells.len(), 4);
        assert_eq!(hosts[0].1.dir, PathBuf::from("/r/s"));
    }

    #[test]
    fn finds_runs_in_a_results_root() {
        let t = tempfile::tempdir().unwrap();
        for p in ["s/r1", "s/r2", "other/r3"] {
            std::fs::create_dir_all(t.path().join(p)).unwrap();
            std::fs::write(t.path().join(p).join("run.json"), "{}").unwrap();
        }
        std::fs::create_dir_all(t.path().join("empty")).unwrap();
        assert_eq!(find_run_dirs(&[t.path().to_path_buf()]).unwrap().len(), 3);
        assert_eq!(find_run_dirs(&[t.path().join("s")]).unwrap().len(), 2);
        assert_eq!(find_run_dirs(&[t.path().join("s/r1")]).unwrap().len(), 1);
        assert_eq!(
            find_run_dirs(&[t.path().join("s"), t.path().join("s/r1")]).unwrap().len(),
            2,
            "named twice, counted once"
        );
        assert!(matches!(find_run_dirs(&[t.path().join("empty")]), Err(MergeError::NoRuns(_))));
    }
}
