//! `fsbench schema`, `fsbench list` and `fsbench scenario`: the scenario format, the
//! scenarios at hand, and the scenario a stored run ran.

use clap::{Args, ValueEnum};

use super::output::{ListJson, ListedScenario};
use crate::exit;
use crate::scenario::file::EMBEDDED;

/// `fsbench schema`.
#[derive(Debug, Clone, Args)]
pub struct SchemaArgs {
    /// Which schema: the scenario format or the result format.
    #[arg(value_enum, default_value = "scenario")]
    pub which: SchemaKind,
}

/// The JSON Schemas fsbench can print.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum SchemaKind {
    /// Scenario files (`schemas/scenario.schema.json`).
    Scenario,
    /// Cell result files (`schemas/result.schema.json`).
    Result,
}

/// `fsbench schema`.
pub fn schema(args: &SchemaArgs) -> anyhow::Result<i32> {
    let text = match args.which {
        SchemaKind::Scenario => crate::scenario::file::scenario_schema_json(),
        SchemaKind::Result => crate::results::result_schema_json(),
    };
    print!("{text}");
    Ok(exit::SUCCESS)
}

/// `fsbench list`.
#[derive(Debug, Clone, Args)]
pub struct ListArgs {
    /// Print JSON (`schemas/list.schema.json`) instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// The scenarios in `./scenarios/`, then the embedded ones not shadowed by a file.
fn scenarios() -> Vec<ListedScenario> {
    let mut seen = std::collections::BTreeSet::new();
    let mut rows = Vec::new();
    if let Ok(entries) = std::fs::read_dir("scenarios") {
        let mut paths: Vec<_> =
            entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "toml")).collect();
        paths.sort();
        for path in paths {
            let file = Some(path.display().to_string());
            rows.push(match crate::scenario::load(&path) {
                Ok(s) => {
                    seen.insert(s.name.clone());
                    let cells = Some(crate::plan::expand(&s).cells.len());
                    ListedScenario {
                        name: Some(s.name.clone()),
                        file,
                        cells,
                        description: s.description.clone(),
                        error: None,
                    }
                }
                Err(e) => ListedScenario {
                    name: None,
                    file,
                    cells: None,
                    description: String::new(),
                    error: Some(e.to_string().lines().next().unwrap_or("").to_string()),
                },
            });
        }
    }
    for e in EMBEDDED {
        if seen.contains(e.name) {
            continue;
        }
        let s = crate::scenario::parse_str(e.text, &format!("<embedded:{}>", e.name))
            .expect("embedded scenarios are valid");
        let cells = Some(crate::plan::expand(&s).cells.len());
        rows.push(ListedScenario {
            name: Some(s.name.clone()),
            file: None,
            cells,
            description: s.description.clone(),
            error: None,
        });
    }
    rows
}

/// `fsbench list`: a table, or JSON with `--json`.
pub fn list(args: &ListArgs) -> anyhow::Result<i32> {
    let rows = scenarios();
    if args.json {
        print!(
            "{}",
            super::output::to_json(&ListJson { schema: super::output::OUTPUT_SCHEMA_VERSION, scenarios: rows })
        );
        return Ok(exit::SUCCESS);
    }
    let mut table = comfy_table::Table::new();
    table.load_style(comfy_table::presets::NOTHING);
    // Descriptions wrap to the terminal (or to 100 columns when piped) instead of running on.
    table.set_content_arrangement(comfy_table::ContentArrangement::Dynamic).set_width(super::print::output_width());
    table.set_header(["scenario", "source", "cells", "description"]);
    for r in rows {
        let (description, cells) = match &r.error {
            Some(e) => (format!("invalid: {e}"), "-".to_string()),
            None => (r.description.clone(), r.cells.map(|c| c.to_string()).unwrap_or_default()),
        };
        table.add_row([
            r.name.unwrap_or_else(|| "?".into()),
            r.file.unwrap_or_else(|| "(embedded)".into()),
            cells,
            description,
        ]);
    }
    println!("{table}");
    println!("\nRun one with `fsbench run scenarios/<name>.toml` (or `fsbench run <name>` for an embedded one).");
    Ok(exit::SUCCESS)
}

/// `fsbench scenario`.
#[derive(Debug, Clone, Args)]
pub struct ScenarioArgs {
    /// The run: a directory (`results/<scenario>/<run-id>`) or a name (`@LABEL`, `latest`,
    /// `SCENARIO@LABEL`).
    pub run: String,
    #[command(flatten)]
    pub lookup: super::runs::RunLookup,
}

/// `fsbench scenario RUN`: the scenario text the run ran, `--set` and `--archive` applied,
/// byte for byte as run.json holds it (so `bundle pack` of it accepts `--with-results RUN`).
pub fn scenario(args: &ScenarioArgs) -> anyhow::Result<i32> {
    let dirs = super::runs::resolve_runs(&[args.run.as_str()], &args.lookup)?;
    let run = crate::results::load_run(&dirs[0]).map_err(|e| crate::exit::InputError::anyhow(e.to_string()))?;
    print!("{}", run.meta.scenario_text);
    Ok(exit::SUCCESS)
}
