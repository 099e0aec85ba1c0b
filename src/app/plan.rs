//! `fsbench validate` and `fsbench plan`: what a scenario means, before anything is touched.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::scenario_options::ScenarioOptions;
use crate::exit;
use crate::exit::InputError;
use crate::model::CellParams;
use crate::plan::{self, needs, render_plan_table};
use crate::scenario::Scenario;

/// `fsbench validate`.
#[derive(Debug, Clone, Args)]
pub struct ValidateArgs {
    /// Scenario files to check.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub scenario_options: ScenarioOptions,
    /// Print JSON (`schemas/validate.schema.json`) instead of one line per file.
    #[arg(long)]
    pub json: bool,
}

/// Output format of `plan`.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum PlanFormat {
    /// A terminal table.
    Table,
    /// JSON, one object per cell.
    Json,
}

/// `fsbench plan`.
#[derive(Debug, Clone, Args)]
pub struct PlanArgs {
    /// Scenario file; the embedded quickstart scenario when omitted.
    pub scenario: Option<PathBuf>,
    #[command(flatten)]
    pub scenario_options: ScenarioOptions,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: PlanFormat,
    /// Print JSON (`schemas/plan.schema.json`): the same as `--format json`.
    #[arg(long)]
    pub json: bool,
    /// Preview a run under another kernel in qemu, as `run --kernel` takes it:
    /// `LABEL=PATH[,modules=DIR]`. May be repeated; replaces the scenario's `[[kernels]]`.
    #[arg(long = "kernel", value_name = "LABEL=PATH[,modules=DIR]")]
    pub kernels: Vec<String>,
    /// Preview `run --paired`: one paired run whose arms are the kernels (two or more).
    #[arg(long)]
    pub paired: bool,
}

/// `fsbench validate`: every file is checked, `--set` and `--only` included; exit 2 if any is bad.
pub fn validate(args: &ValidateArgs) -> anyhow::Result<i32> {
    let mut files = Vec::new();
    for file in &args.files {
        let name = file.display().to_string();
        let bad = |error: String| super::output::ValidatedFile {
            file: name.clone(),
            ok: false,
            workload: None,
            cells: None,
            error: Some(error),
        };
        // Scenario errors name their file, line and key themselves.
        let s = match crate::scenario::load_with(file, &args.scenario_options.overrides()?) {
            Ok(s) => s,
            Err(e) => {
                files.push(bad(e.to_string()));
                continue;
            }
        };
        // A fio job is judged by fio itself, as `run` does before provisioning.
        if let Err(e) = crate::workload::fio::parse_only(&s) {
            files.push(bad(e.to_string()));
            continue;
        }
        files.push(match plan::plan_for(&s, &args.scenario_options.only) {
            Ok(p) => {
                for w in crate::provision::capability::fs_type_warnings(&s) {
                    eprintln!("warning: {name}: {w}");
                }
                super::output::ValidatedFile {
                    file: name.clone(),
                    ok: true,
                    workload: Some(s.workload.kind().to_string()),
                    cells: Some(p.cells.len()),
                    error: None,
                }
            }
            Err(e) => bad(format!("{name}: {e}")),
        });
    }
    let failed = files.iter().filter(|f| !f.ok).count();
    if args.json {
        let doc = super::output::ValidateJson { schema: super::output::OUTPUT_SCHEMA_VERSION, files };
        print!("{}", super::output::to_json(&doc));
    } else {
        for f in &files {
            match (&f.error, &f.workload, f.cells) {
                (Some(e), _, _) => eprintln!("error: {e}"),
                (None, Some(w), Some(n)) => println!("{}: ok ({w} workload, {})", f.file, crate::text::cell_count(n)),
                _ => {}
            }
        }
    }
    Ok(if failed > 0 { exit::USAGE } else { exit::SUCCESS })
}

/// `fsbench plan`.
pub fn plan(args: &PlanArgs) -> anyhow::Result<i32> {
    // The capability check may probe quota with a tiny real mount: let Ctrl-C release it.
    crate::signals::install();
    let mut s = crate::scenario::load_named(args.scenario.as_deref(), &args.scenario_options.overrides()?)?;
    // `--kernel` as `run` takes it, so a qemu run can be previewed before anything boots.
    if !args.kernels.is_empty() {
        s.kernels = args
            .kernels
            .iter()
            .map(|a| crate::qemu::parse_kernel_arg(a).map_err(|e| InputError::anyhow(e.to_string())))
            .collect::<anyhow::Result<_>>()?;
    }
    for k in &s.kernels {
        if !k.image.exists() {
            eprintln!("warning: kernel {}: no image at {} (run would fail to boot it)", k.label, k.image.display());
        }
    }
    crate::workload::fio::parse_only(&s)?;
    let only = super::measure::select_kernels(&args.scenario_options.only, &mut s.kernels)?;
    let plan = plan::plan_for(&s, &only)?;
    // `--paired` (or `[compare] arms = "kernel"`): the cells under each kernel, paired.
    let kernel_pairs = if args.paired || s.compare.as_ref().is_some_and(|c| c.arms == crate::scenario::KERNEL_ARMS) {
        let labels: Vec<String> = s.kernels.iter().map(|k| k.label.clone()).collect();
        let spec = crate::runner::kernel_compare(&s, &labels)?;
        Some((spec, labels))
    } else {
        None
    };
    // Cells that run under other kernels in qemu are checked inside each guest, not here.
    let in_guests = !s.kernels.is_empty();
    let check = |s: &Scenario, p: &CellParams| {
        if in_guests { None } else { crate::provision::capability::host_check(s, p, None) }
    };
    let format = if args.json { PlanFormat::Json } else { args.format };
    match format {
        PlanFormat::Table => {
            let piped = !std::io::IsTerminal::is_terminal(&std::io::stdout());
            let verdicts: Vec<_> = plan.cells.iter().map(|c| check(&s, &c.params)).collect();
            print!("{}", render_plan_table(&s, &plan, &verdicts, super::print::output_width(), piped));
            if let Some((spec, labels)) = &kernel_pairs {
                print!("{}", plan::render_kernel_pairing(&s, spec, &plan, labels, super::print::output_width()));
            } else if let Some(pairing) = plan::render_pairing(&s, &plan, super::print::output_width()) {
                print!("{pairing}");
            }
            if in_guests && kernel_pairs.is_none() {
                let labels: Vec<&str> = s.kernels.iter().map(|k| k.label.as_str()).collect();
                println!(
                    "\nevery cell runs once per kernel in qemu ({}); what each guest kernel supports is checked inside it",
                    labels.join(", ")
                );
            }
        }
        PlanFormat::Json => {
            // A kernel-paired run's cells are the plan's under each kernel.
            let armed = kernel_pairs.as_ref().map(|(_, labels)| plan::kernel_arm_cells(&plan.cells, labels));
            let cells = armed
                .as_ref()
                .unwrap_or(&plan.cells)
                .iter()
                .map(|c| super::output::PlannedCell {
                    index: c.index,
                    id: c.id(),
                    params: c.params.clone(),
                    needs: needs(&s, &c.params),
                    skip: check(&s, &c.params),
                })
                .collect();
            let doc = super::output::PlanJson {
                schema: super::output::OUTPUT_SCHEMA_VERSION,
                scenario: s.name.clone(),
                cells,
            };
            print!("{}", super::output::to_json(&doc));
        }
    }
    // A probe cut short by the signal answered nothing: the plan above is incomplete.
    if crate::signals::interrupted() {
        eprintln!("fsbench: plan interrupted; cells marked interrupted were not checked");
        return Ok(exit::INTERRUPTED);
    }
    Ok(exit::SUCCESS)
}
