//! Finding runs by name: the `--results` option and the lookup that `report`, `compare`
//! and `gate` share.

use clap::Args;

use crate::exit::InputError;

/// Where run names (`@LABEL`, `latest`, `SCENARIO@LABEL`) are looked up (report, compare, gate).
#[derive(Debug, Clone, Args)]
pub struct RunLookup {
    /// The results root that `SCENARIO@LABEL` and `latest` look in (`run --out`'s default).
    #[arg(long, value_name = "DIR", default_value = "results")]
    pub results: std::path::PathBuf,
}

/// Resolve run names given together to run directories, saying which run a name chose.
/// A name that matches nothing is bad input (exit 2).
pub fn resolve_runs(specs: &[&str], lookup: &RunLookup) -> anyhow::Result<Vec<std::path::PathBuf>> {
    let resolved = crate::results::find::resolve_runs(specs, &lookup.results)
        .map_err(|e| InputError::anyhow(crate::text::escape_control(&e.to_string())))?;
    Ok(resolved
        .into_iter()
        .map(|r| {
            if let Some(n) = &r.note {
                eprintln!("fsbench: {}", crate::text::escape_control(n));
            }
            r.dir
        })
        .collect())
}
