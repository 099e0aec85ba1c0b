//! `fsbench schema` and `fsbench list`: the scenario format and the scenarios at hand.

use clap::{Args, ValueEnum};

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

/// `fsbench list`: the scenarios in `./scenarios/`, then the embedded ones not shadowed by a file.
pub fn list() -> anyhow::Result<i32> {
    let mut table = comfy_table::Table::new();
    table.load_style(comfy_table::presets::NOTHING);
    table.set_header(["scenario", "source", "cells", "description"]);
    let mut seen = std::collections::BTreeSet::new();
    let mut rows = Vec::new();
    if let Ok(entries) = std::fs::read_dir("scenarios") {
        let mut paths: Vec<_> =
            entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "toml")).collect();
        paths.sort();
        for path in paths {
            match crate::scenario::load(&path) {
                Ok(s) => {
                    seen.insert(s.name.clone());
                    let cells = crate::plan::expand(&s).cells.len();
                    rows.push([s.name.clone(), path.display().to_string(), cells.to_string(), s.description.clone()]);
                }
                Err(e) => rows.push([
                    "?".into(),
                    path.display().to_string(),
                    "-".into(),
                    format!("invalid: {}", e.to_string().lines().next().unwrap_or("")),
                ]),
            }
        }
    }
    for e in EMBEDDED {
        if seen.contains(e.name) {
            continue;
        }
        let s = crate::scenario::parse_str(e.text, &format!("<embedded:{}>", e.name))
            .expect("embedded scenarios are valid");
        let cells = crate::plan::expand(&s).cells.len();
        rows.push([s.name.clone(), "(embedded)".into(), cells.to_string(), s.description.clone()]);
    }
    for row in rows {
        table.add_row(row);
    }
    println!("{table}");
    println!("\nRun one with `fsbench run scenarios/<name>.toml` (or `fsbench run <name>` for an embedded one).");
    Ok(exit::SUCCESS)
}
