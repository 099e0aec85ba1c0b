//! The JSON documents of the commands that print data (`doctor`, `list`, `plan`, `validate`,
//! `gate` with `--json`): stable, versioned by `schema` like the result files, and described by
//! the JSON Schemas checked in under `schemas/` (generated from these types; a test keeps
//! them current and validates each command's output against its schema).
//!
//! Compatibility: fields are only ever added; a change that removes or retypes a field
//! raises [`OUTPUT_SCHEMA_VERSION`].

use schemars::JsonSchema;
use serde::Serialize;

use crate::gate::GateReport;
use crate::model::{CellParams, SkipReason};
use crate::provision::capability::Capability;

/// Version of every document below.
pub const OUTPUT_SCHEMA_VERSION: u32 = 1;

/// `fsbench doctor --json`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DoctorJson {
    /// Document version ([`OUTPUT_SCHEMA_VERSION`]).
    pub schema: u32,
    /// Every capability checked, in the table's order.
    pub capabilities: Vec<Capability>,
    /// Whether a signal stopped the checks (rows then say `unknown`).
    pub interrupted: bool,
}

/// One scenario of `fsbench list`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ListedScenario {
    /// Its `name`, or `None` when the file does not load.
    pub name: Option<String>,
    /// The file (`scenarios/quota-smp.toml`), or `None` for one embedded in the binary.
    pub file: Option<String>,
    /// Cells it expands to (when it loads).
    pub cells: Option<usize>,
    /// Its `description`.
    pub description: String,
    /// Why it does not load, first line.
    pub error: Option<String>,
}

/// `fsbench list --json`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ListJson {
    /// Document version ([`OUTPUT_SCHEMA_VERSION`]).
    pub schema: u32,
    /// Files in `./scenarios/` first, then embedded scenarios no file shadows.
    pub scenarios: Vec<ListedScenario>,
}

/// One file of `fsbench validate --json`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ValidatedFile {
    /// The file as named on the command line.
    pub file: String,
    /// Whether it is a valid scenario (with `--set` and `--only` applied).
    pub ok: bool,
    /// Its workload kind, when valid.
    pub workload: Option<String>,
    /// Cells it expands to, when valid.
    pub cells: Option<usize>,
    /// The error (file:line:column, key, hint), when not.
    pub error: Option<String>,
}

/// `fsbench validate --json` (the exit code is 2 when any file is bad, as without `--json`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ValidateJson {
    /// Document version ([`OUTPUT_SCHEMA_VERSION`]).
    pub schema: u32,
    /// Every file, in the order given.
    pub files: Vec<ValidatedFile>,
}

/// One cell of `fsbench plan --json`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PlannedCell {
    /// Position in the full expansion (before `--only`), from 0.
    pub index: usize,
    /// Cell id (`ext4-M-qoff-t1-chown`), the name of its result file.
    pub id: String,
    /// Axis values.
    pub params: CellParams,
    /// What the cell needs (root, loop devices, mkfs tools, ...).
    pub needs: Vec<String>,
    /// Why it would be skipped on this host, or `null` when it can run.
    pub skip: Option<SkipReason>,
}

/// `fsbench plan --json`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PlanJson {
    /// Document version ([`OUTPUT_SCHEMA_VERSION`]).
    pub schema: u32,
    /// Scenario name.
    pub scenario: String,
    /// Cells in run order.
    pub cells: Vec<PlannedCell>,
}

/// `fsbench gate --json`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct GateJson {
    /// Document version ([`OUTPUT_SCHEMA_VERSION`]).
    pub schema: u32,
    /// Whether any comparison regressed (the exit code is 1 then).
    pub regressed: bool,
    /// Comparisons per verdict.
    pub counts: GateCounts,
    /// Every comparison.
    pub report: GateReport,
}

/// How many comparisons got each verdict.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct GateCounts {
    /// Significantly worse beyond the threshold.
    pub regressed: usize,
    /// Significantly better beyond the threshold.
    pub improved: usize,
    /// Neither.
    pub unchanged: usize,
    /// On one side only, or without samples.
    pub missing: usize,
}

impl GateJson {
    /// The document of a gate report.
    pub fn of(report: GateReport) -> GateJson {
        use crate::gate::Verdict;
        let counts = GateCounts {
            regressed: report.count(Verdict::Regressed),
            improved: report.count(Verdict::Improved),
            unchanged: report.count(Verdict::Unchanged),
            missing: report.count(Verdict::Missing),
        };
        GateJson { schema: OUTPUT_SCHEMA_VERSION, regressed: counts.regressed > 0, counts, report }
    }
}

/// A document as the commands print it: pretty JSON and a newline.
pub fn to_json<T: Serialize>(doc: &T) -> String {
    serde_json::to_string_pretty(doc).expect("output documents serialize") + "\n"
}

/// The checked-in schemas: `(file under schemas/, schema text)`.
pub fn schemas() -> Vec<(&'static str, String)> {
    fn text<T: JsonSchema>() -> String {
        serde_json::to_string_pretty(&schemars::schema_for!(T)).expect("schema serializes") + "\n"
    }
    vec![
        ("doctor.schema.json", text::<DoctorJson>()),
        ("list.schema.json", text::<ListJson>()),
        ("plan.schema.json", text::<PlanJson>()),
        ("validate.schema.json", text::<ValidateJson>()),
        ("gate.schema.json", text::<GateJson>()),
    ]
}
