//! What a paired run's scenario text says about reading its pairs: the `[compare]` bounds
//! (whose look schedule sets the interval level) and a steps member's iterations.

use crate::scenario::{DEFAULT_MAX_PAIRS, DEFAULT_MIN_PAIRS};

/// A paired run's pair settings, from the scenario text stored with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairSettings {
    /// `compare.pairs.min`.
    pub min_pairs: u32,
    /// `compare.pairs.max`.
    pub max_pairs: u32,
    /// A steps member's iterations (`workload.iterations`); `None` for lat_fs or when unreadable.
    pub steps_iterations: Option<u32>,
    /// Why the settings are defaults, when the text could not be read.
    pub warnings: Vec<String>,
}

/// The pair settings of the scenario `text` (stored in `run.json`, after `--set`).
///
/// The whole scenario is validated first; on another host that can fail (an archive path
/// that does not exist here) while these numbers are still wanted, so then only the
/// `[compare]` and `[workload]` tables are read, with the scenario's defaults (6..32 pairs,
/// `max` no less than `min`).
pub fn pair_settings(text: &str, origin: &str) -> PairSettings {
    if let Ok(s) = crate::scenario::parse_str(text, origin) {
        let (min_pairs, max_pairs) =
            s.compare.map_or((DEFAULT_MIN_PAIRS, DEFAULT_MAX_PAIRS), |c| (c.min_pairs, c.max_pairs));
        let steps_iterations = crate::workload::kind::of(&s.workload).iterations_per_member();
        return PairSettings { min_pairs, max_pairs, steps_iterations, warnings: Vec::new() };
    }
    let table: Option<toml::Table> = text.parse().ok();
    let int = |path: &[&str]| -> Option<u32> {
        let mut v = table.as_ref()?.get(path[0])?;
        for k in &path[1..] {
            v = v.get(k)?;
        }
        v.as_integer().and_then(|i| u32::try_from(i).ok())
    };
    let min_pairs = int(&["compare", "pairs", "min"]).unwrap_or(DEFAULT_MIN_PAIRS).max(1);
    let max_pairs = int(&["compare", "pairs", "max"]).unwrap_or(DEFAULT_MAX_PAIRS.max(min_pairs)).max(min_pairs);
    let mut warnings = Vec::new();
    if table.is_none() {
        warnings.push(format!(
            "the run's scenario text is not TOML: pairs read with the default bounds {DEFAULT_MIN_PAIRS}..{DEFAULT_MAX_PAIRS}"
        ));
    }
    PairSettings { min_pairs, max_pairs, steps_iterations: int(&["workload", "iterations"]), warnings }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_come_from_the_scenario_or_its_defaults() {
        let text = "schema = 1\nname = \"t\"\n[matrix]\nfs = [\"ext4\", \"ext2\"]\n[backing]\nkind = \"dir\"\npath = \"/tmp\"\n\
                    [workload]\nkind = \"lat_fs\"\n[compare]\narms = \"fs\"\npairs = { min = 4, max = 10 }\n";
        let s = pair_settings(text, "t.toml");
        assert_eq!((s.min_pairs, s.max_pairs, s.steps_iterations), (4, 10, None));
        assert!(s.warnings.is_empty());
        // A scenario that does not validate here (an archive elsewhere) still gives its numbers.
        let s = pair_settings(
            "[archive]\npath = \"/nowhere\"\n[workload]\niterations = 3\n[compare]\npairs = { min = 8 }\n",
            "x",
        );
        assert_eq!((s.min_pairs, s.max_pairs, s.steps_iterations), (8, 32, Some(3)));
        let s = pair_settings("[compare]\npairs = { min = 40 }\n", "x");
        assert_eq!((s.min_pairs, s.max_pairs), (40, 40));
        let s = pair_settings("not toml [", "x");
        assert_eq!((s.min_pairs, s.max_pairs, s.warnings.len()), (6, 32, 1));
    }
}
