//! Validation: the file structs become domain types, errors point at file:line:column.

/// A scenario that cannot be used, with where and why.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ScenarioError(pub String);

/// Parse and validate scenario text.
pub fn parse_str(_text: &str, _origin: &str) -> Result<super::Scenario, ScenarioError> {
    Err(ScenarioError("not built yet".into()))
}

/// Read, parse and validate a scenario file.
pub fn load(_path: &std::path::Path) -> Result<super::Scenario, ScenarioError> {
    Err(ScenarioError("not built yet".into()))
}
