//! `fsbench merge` and `fsbench submit slurm|k8s`: one scenario over many machines.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};

use super::output::{DuplicatedShard, MergeJson, MergedGroup, OUTPUT_SCHEMA_VERSION, to_json};
use super::report::ReportFormat;
use crate::exit::{self, InputError};
use crate::report::Format;
use crate::results::{load_run, write_atomic};
use crate::scenario::Scenario;
use crate::shard::merge::{
    MergeError, completeness, describe, find_run_dirs, group_json, group_runs, merge_by_host, render_group,
};
use crate::shard::slurm::{SlurmJob, absolute, sbatch, scenario_arg};

/// `fsbench merge`.
#[derive(Debug, Clone, Args)]
pub struct MergeArgs {
    /// Run directories, or directories containing run directories (a shared results root).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Output format of the merged report.
    #[arg(long, value_enum, default_value = "table")]
    pub format: ReportFormat,
    /// Print JSON (`schemas/merge.schema.json`: every merged run with its missing and duplicated
    /// shards, which also go to stderr): the same as `--format json`.
    #[arg(long)]
    pub json: bool,
    /// Also write each merged run (one per host) as a run directory under this results root
    /// (`<DIR>/<scenario>/<run>-merged/`), for report, compare and gate like any other run.
    /// Nothing is written when a shard is missing, duplicated or unfinished, unless
    /// --allow-missing (a duplicated shard is never written).
    #[arg(long, value_name = "DIR")]
    pub out: Option<std::path::PathBuf>,
    /// With --out: write the merged runs even when shards are missing or unfinished
    /// (the merged run then lacks their cells; it is never resumable).
    #[arg(long, requires = "out")]
    pub allow_missing: bool,
}

/// `fsbench submit ...`.
#[derive(Debug, Clone, Subcommand)]
pub enum SubmitCommand {
    /// Write (and with --submit, sbatch) a Slurm array job running the shards, plus a dependent merge job.
    Slurm(SubmitSlurmArgs),
    /// Write a Kubernetes indexed Job manifest running the shards.
    K8s(SubmitK8sArgs),
}

/// `fsbench submit slurm`.
#[derive(Debug, Clone, Args)]
pub struct SubmitSlurmArgs {
    /// The scenario file.
    pub scenario: PathBuf,
    /// Number of shards (array tasks).
    #[arg(long)]
    pub shards: u32,
    /// Slurm partition.
    #[arg(long)]
    pub partition: Option<String>,
    /// Shared results root the shards write to.
    #[arg(long, default_value = "results", value_name = "DIR")]
    pub out: PathBuf,
    /// Where to write the sbatch script (default: stdout).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Submit with sbatch after writing.
    #[arg(long)]
    pub submit: bool,
}

/// `fsbench submit k8s`.
#[derive(Debug, Clone, Args)]
pub struct SubmitK8sArgs {
    /// The scenario file.
    pub scenario: PathBuf,
    /// Number of shards (completions).
    #[arg(long)]
    pub shards: u32,
    /// Container image that has fsbench.
    #[arg(long, default_value = "fsbench:latest")]
    pub image: String,
    /// Where to write the manifest, JSON for `kubectl apply -f` (default: stdout).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

/// The scenario of a submit command, with a warning when shards outnumber cells.
fn load_for_submit(scenario: &std::path::Path, shards: u32, unit: &str) -> anyhow::Result<Scenario> {
    if shards == 0 {
        return Err(InputError::anyhow("--shards must be at least 1"));
    }
    let s = crate::scenario::load_named(Some(scenario), &[])?;
    let cells = crate::plan::expand(&s).cells.len();
    if shards as usize > cells {
        eprintln!(
            "fsbench: warning: {shards} shards for {cells} cells: {} {unit} will have no cell",
            shards as usize - cells
        );
    }
    Ok(s)
}

/// `fsbench submit slurm`.
pub fn submit_slurm(args: &SubmitSlurmArgs) -> anyhow::Result<i32> {
    let s = load_for_submit(&args.scenario, args.shards, "shards")?;
    let job = SlurmJob {
        exe: std::env::current_exe().context("cannot find the fsbench executable")?,
        scenario: scenario_arg(&args.scenario)?,
        scenario_name: s.name.clone(),
        shards: args.shards,
        partition: args.partition.clone(),
        out: absolute(&args.out)?,
    };
    job.check().map_err(InputError::anyhow)?;
    let script = job.array_script();
    // sbatch does not create the directory of --output: a missing one loses every log.
    std::fs::create_dir_all(job.log_dir()).with_context(|| format!("cannot create {}", job.log_dir().display()))?;
    match &args.output {
        Some(path) => {
            write_atomic(path, script.as_bytes()).with_context(|| format!("cannot write {}", path.display()))?;
            eprintln!("fsbench: wrote {} ({} array tasks)", path.display(), args.shards);
        }
        None if !args.submit => print!("{script}"),
        None => {}
    }
    if args.submit {
        let array_args = vec!["--parsable".to_string()];
        let (array_args, stdin) = match &args.output {
            Some(p) => ([array_args, vec![absolute(p)?.to_string_lossy().into_owned()]].concat(), None),
            None => (array_args, Some(script.as_str())),
        };
        let array_id = sbatch(&array_args, stdin)?;
        let merge_id = sbatch(&job.merge_sbatch_args(&array_id), None)?;
        println!("submitted array job {array_id} ({} shards) and merge job {merge_id}", args.shards);
        eprintln!(
            "fsbench: shard logs in {}/fsbench-{array_id}_*.out, merged report in {}/merge-{merge_id}.out",
            job.log_dir().display(),
            job.log_dir().display()
        );
    }
    Ok(exit::SUCCESS)
}

/// `fsbench submit k8s`.
pub fn submit_k8s(args: &SubmitK8sArgs) -> anyhow::Result<i32> {
    use crate::shard::k8s::{RESULTS_CLAIM, manifest_json};
    let s = load_for_submit(&args.scenario, args.shards, "pods")?;
    let json = manifest_json(&s.name, &s.source.text, args.shards, &args.image);
    match &args.output {
        Some(path) => {
            write_atomic(path, json.as_bytes()).with_context(|| format!("cannot write {}", path.display()))?;
            eprintln!(
                "fsbench: wrote {}: `kubectl apply -f {}`, then `fsbench merge` on the {RESULTS_CLAIM} volume",
                path.display(),
                path.display()
            );
        }
        None => print!("{json}"),
    }
    Ok(exit::SUCCESS)
}

/// Why `merge --out` writes nothing: a duplicated shard (which of them is real cannot be
/// told), or without `--allow-missing` a missing or unfinished one.
fn refuse_out(groups: &[crate::shard::merge::RunGroup], allow_missing: bool) -> Option<String> {
    for g in groups {
        let c = completeness(g);
        if let Some((n, dirs)) = c.duplicated.first() {
            let list = dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ");
            return Some(format!(
                "shard {n} of run {} is in several directories ({list}); remove all but the real one",
                g.key.as_deref().unwrap_or(&g.scenario)
            ));
        }
        if allow_missing {
            continue;
        }
        if !c.missing.is_empty() {
            return Some(format!(
                "shards {} of run {} are missing; pass --allow-missing to write the merge of the others",
                join_numbers(&c.missing),
                g.key.as_deref().unwrap_or(&g.scenario)
            ));
        }
        if let Some(r) = g.runs.iter().find(|r| r.meta.finished.is_none() || r.meta.interrupted) {
            return Some(format!(
                "{} did not finish; finish it with `fsbench run --resume`, or pass --allow-missing",
                r.dir.display()
            ));
        }
    }
    None
}

fn join_numbers(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// `fsbench merge`: exit 1 when shards are missing or unfinished, 2 on bad input.
pub fn merge(args: &MergeArgs) -> anyhow::Result<i32> {
    let input = |e: MergeError| InputError::anyhow(e.to_string());
    if let Some(out) = &args.out {
        super::checks::check_output_dir("--out", out)?;
    }
    let format = Format::from(args.format.or_json(args.json));
    let dirs = find_run_dirs(&args.dirs).map_err(input)?;
    let mut runs = Vec::new();
    for d in &dirs {
        runs.push(load_run(d).map_err(|e| input(e.into()))?);
    }
    let groups = this_jobs_groups(group_runs(runs).map_err(input)?).map_err(input)?;
    // A merged run written to --out looks like any run: decide for every group before
    // writing any, so that a planted or missing shard leaves nothing behind.
    let write_out = args.out.as_deref().filter(|out| match refuse_out(&groups, args.allow_missing) {
        None => true,
        Some(why) => {
            eprintln!("fsbench: writing nothing to {}: {why}", out.display());
            false
        }
    });
    let mut code = exit::SUCCESS;
    let mut outputs = Vec::new();
    let mut merged = Vec::new();
    for g in &groups {
        let c = completeness(g);
        let summary = describe(g, &c);
        // Tables and Markdown carry the summary themselves; keep CSV and JSON on stdout parseable.
        if matches!(format, Format::Csv | Format::Json) {
            for line in &summary {
                eprintln!("fsbench: {line}");
            }
        }
        // Missing shards and runs that never finished (killed, interrupted) both mean
        // the merged tables are not the whole scenario.
        let unfinished = g.runs.iter().any(|r| r.meta.finished.is_none() || r.meta.interrupted);
        let hosts = merge_by_host(g).map_err(input)?;
        if let Some(out) = write_out {
            write_merged(out, g, &hosts)?;
        }
        if !c.is_complete() || unfinished || hosts.iter().any(|(_, r)| !r.problems.is_empty()) {
            code = exit::FAILURE;
        }
        if format == Format::Json {
            merged.push(merged_group(g, &c, !unfinished, group_json(&hosts).map_err(input)?));
            continue;
        }
        let body = render_group(&hosts, format).map_err(input)?;
        outputs.push(with_summary(format, &summary, body));
    }
    let text = match format {
        Format::Json => to_json(&MergeJson { schema: OUTPUT_SCHEMA_VERSION, merged }),
        _ => outputs.join("\n"),
    };
    print!("{text}");
    Ok(code)
}

/// A group in `merge --json`: its shards, what is missing or duplicated, and its report.
fn merged_group(
    g: &crate::shard::merge::RunGroup,
    c: &crate::shard::merge::Completeness,
    finished: bool,
    report: crate::report::json::ReportJson,
) -> MergedGroup {
    MergedGroup {
        scenario: g.scenario.clone(),
        key: g.key.clone(),
        shards: g.count,
        runs: g.runs.len(),
        missing: c.missing.clone(),
        duplicated: c
            .duplicated
            .iter()
            .map(|(shard, dirs)| DuplicatedShard { shard: *shard, dirs: dirs.clone() })
            .collect(),
        complete: c.is_complete(),
        finished,
        report,
    }
}

/// The groups of the job `merge` runs in: the merge job of `fsbench submit slurm` runs
/// with the array's key (`FSBENCH_RUN_KEY`), and merges only that run; else all of them.
fn this_jobs_groups(
    mut groups: Vec<crate::shard::merge::RunGroup>,
) -> Result<Vec<crate::shard::merge::RunGroup>, MergeError> {
    if let Some(key) = std::env::var(crate::shard::env::RUN_KEY_VAR).ok().filter(|k| !k.is_empty()) {
        groups.retain(|g| g.key.as_deref() == Some(key.as_str()));
        if groups.is_empty() {
            return Err(MergeError::KeyNotFound(key));
        }
    }
    Ok(groups)
}

/// A group's rendered tables under its summary (a quote in Markdown); CSV alone, so that
/// stdout stays parseable (the summary went to stderr).
fn with_summary(format: Format, summary: &[String], body: String) -> String {
    match format {
        Format::Table => format!("{}\n\n{body}", summary.join("\n")),
        Format::Markdown => {
            format!("{}\n\n{body}", summary.iter().map(|l| format!("> {l}")).collect::<Vec<_>>().join("\n"))
        }
        _ => body,
    }
}

/// Write a group's merged run (one per host when it ran on several) into `out`.
fn write_merged(
    out: &std::path::Path,
    g: &crate::shard::merge::RunGroup,
    hosts: &[(String, crate::results::LoadedRun)],
) -> anyhow::Result<()> {
    let derived = crate::results::Derived {
        kind: crate::results::DerivedKind::Merged,
        from: g.runs.iter().map(|r| r.dir.display().to_string()).collect(),
    };
    for (label, run) in hosts {
        let base = g
            .key
            .clone()
            .unwrap_or_else(|| g.runs.first().map(|r| r.meta.run_id.clone()).unwrap_or_else(|| "run".into()));
        let name = if hosts.len() > 1 { format!("{base}-merged-{label}") } else { format!("{base}-merged") };
        let dir = crate::results::RunWriter::write_whole(out, &name, &run.meta, &run.cells, derived.clone())?;
        eprintln!("fsbench: wrote merged run {}", dir.display());
    }
    Ok(())
}
