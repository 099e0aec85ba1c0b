//! The scenario file as written: plain serde structs, unknown keys rejected.

use crate::cli::SchemaArgs;

/// `fsbench schema`.
pub fn cli_schema(_args: &SchemaArgs) -> anyhow::Result<i32> {
    anyhow::bail!("schema is not wired yet")
}

/// `fsbench list`.
pub fn cli_list() -> anyhow::Result<i32> {
    anyhow::bail!("list is not wired yet")
}
