//! How scenario text gets in: from a string, a file or an embedded name, with `--set` overrides, to a [`Scenario`].

use std::cell::Cell;
use std::path::{Path, PathBuf};

use super::diagnose::{Ctx, from_toml_error};
use super::error::ScenarioError;
use super::file::{ScenarioFile, embedded};
use super::validate::validate;
use super::{Scenario, ScenarioSource};

thread_local! {
    // Per thread rather than global: tests run in parallel threads and must not count each other's parses.
    static PARSES: Cell<usize> = const { Cell::new(0) };
}

/// Scenario texts parsed on this thread so far; it exists so tests can check a command parses its scenario once.
pub fn parses_on_this_thread() -> usize {
    PARSES.with(Cell::get)
}

/// Parse and validate scenario text. `origin` names it in errors.
pub fn parse_str(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
    parse_with(text, origin, Path::new("."), &[])
}

/// Read, parse and validate a scenario file.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    load_with(path, &[])
}

/// Read a scenario file, apply `--set` overrides, parse and validate.
pub fn load_with(path: &Path, overrides: &[String]) -> Result<Scenario, ScenarioError> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
        origin: origin.clone(),
        line: None,
        column: None,
        key: None,
        message: format!("cannot read scenario: {e}"),
        help: None,
        snippet: None,
    })?;
    let base = path.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
    let base = if base.as_os_str().is_empty() { PathBuf::from(".") } else { base };
    parse_overridden(&text, &origin, &base, overrides)
}

/// Apply `--set` overrides to `text`, then parse and validate.
pub fn parse_overridden(
    text: &str,
    origin: &str,
    base_dir: &Path,
    overrides: &[String],
) -> Result<Scenario, ScenarioError> {
    if overrides.is_empty() {
        return parse_with(text, origin, base_dir, &[]);
    }
    let (text, applied) = super::overrides::apply(text, origin, overrides)?;
    parse_with(&text, origin, base_dir, &applied)
}

/// The scenario named on the command line: `None` is quickstart, an embedded name not on disk that one, else a file.
pub fn load_named(path: Option<&Path>, set: &[String]) -> Result<Scenario, ScenarioError> {
    match path {
        None => {
            let e = embedded("quickstart").expect("quickstart is embedded");
            parse_overridden(e.text, "<embedded:quickstart>", Path::new("."), set)
        }
        // An existing file wins, so an embedded name never hides a real file of the same name.
        Some(p) if !p.exists() && embedded(&p.to_string_lossy()).is_some() => {
            let e = embedded(&p.to_string_lossy()).expect("checked");
            parse_overridden(e.text, &format!("<embedded:{}>", e.name), Path::new("."), set)
        }
        Some(p) => load_with(p, set).map_err(|mut e| {
            if !p.exists() && e.help.is_none() {
                e.help = nearest_scenario_name(p);
            }
            e
        }),
    }
}

/// For a scenario named on the command line that does not exist (`quikstart`), the
/// nearest embedded name or file in `./scenarios/`, worded as a help line.
fn nearest_scenario_name(p: &Path) -> Option<String> {
    let given = p.to_string_lossy();
    let stem = p.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let mut files: Vec<String> = std::fs::read_dir("scenarios")
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let names: Vec<&str> =
        super::file::EMBEDDED.iter().map(|e| e.name).chain(files.iter().map(String::as_str)).collect();
    // A file in scenarios/ is named by its path; an embedded scenario by its name alone.
    let shown = |near: &str| {
        if files.iter().any(|f| f == near) && (given.contains('/') || super::file::embedded(near).is_none()) {
            format!("`scenarios/{near}.toml`")
        } else {
            format!("`{near}`")
        }
    };
    if let Some(near) = super::suggest(&stem, names.iter().copied()) {
        return Some(format!("did you mean {}? (`fsbench list` shows the scenarios at hand)", shown(near)));
    }
    // No near miss: the scenarios whose names hold what was typed (`quota` → quota-qemu, quota-smp).
    let lower = stem.to_ascii_lowercase();
    let mut holding: Vec<&str> =
        names.iter().copied().filter(|n| !lower.is_empty() && n.to_ascii_lowercase().contains(&lower)).collect();
    holding.sort_unstable();
    holding.dedup();
    if holding.is_empty() {
        return Some("`fsbench list` shows the scenarios at hand".to_string());
    }
    let listed: Vec<String> = holding.iter().map(|n| shown(n)).collect();
    Some(format!("scenarios named like it: {} (`fsbench list` shows them all)", listed.join(", ")))
}

/// The one place scenario text becomes a [`Scenario`]: every loader ends here, so the parse counter lives here.
fn parse_with(
    text: &str,
    origin: &str,
    base_dir: &Path,
    overrides: &[(String, String)],
) -> Result<Scenario, ScenarioError> {
    PARSES.with(|n| n.set(n.get() + 1));
    let ctx = Ctx::new(text, origin, overrides);
    let file: ScenarioFile = toml::from_str(text).map_err(|e| from_toml_error(&ctx, &e))?;
    let mut scenario = validate(&ctx, file, base_dir)?;
    scenario.source =
        ScenarioSource { origin: origin.to_string(), base_dir: base_dir.to_path_buf(), text: text.to_string() };
    Ok(scenario)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_loader_counts_one_parse() {
        let quickstart = embedded("quickstart").unwrap().text;
        let before = parses_on_this_thread();
        parse_str(quickstart, "q").unwrap();
        assert_eq!(parses_on_this_thread(), before + 1);
        parse_overridden(quickstart, "q", Path::new("."), &["name=other".to_string()]).unwrap();
        assert_eq!(parses_on_this_thread(), before + 2);
        load_named(None, &[]).unwrap();
        assert_eq!(parses_on_this_thread(), before + 3);
        // Rejected text was still parsed.
        parse_str("schema = 2", "bad").unwrap_err();
        assert_eq!(parses_on_this_thread(), before + 4);
        // A file that cannot be read never reaches the parser.
        load_named(Some(Path::new("/nonexistent/fsbench/x.toml")), &[]).unwrap_err();
        assert_eq!(parses_on_this_thread(), before + 4);
    }

    #[test]
    fn load_named_finds_embedded_scenarios_by_name() {
        let s = load_named(None, &[]).unwrap();
        assert_eq!(s.source.origin, "<embedded:quickstart>");
        let s = load_named(Some(Path::new("quota-smp")), &[]).unwrap();
        assert_eq!(s.source.origin, "<embedded:quota-smp>");
        let e = load_named(Some(Path::new("no-such-scenario")), &[]).unwrap_err();
        assert!(e.message.contains("cannot read scenario"), "{e}");
    }

    /// `run scenarios/quota.toml` said only "os error 2": no near miss, but two scenarios
    /// hold the name, and a missing file always gets a help line.
    #[test]
    fn a_missing_scenario_file_names_the_scenarios_like_it() {
        let e = load_named(Some(Path::new("scenarios/quota.toml")), &[]).unwrap_err();
        let help = e.help.clone().unwrap_or_default();
        assert!(help.contains("quota-qemu") && help.contains("quota-smp"), "{help}");
        let e = load_named(Some(Path::new("scenarios/zzzzzzzz.toml")), &[]).unwrap_err();
        assert!(e.help.unwrap_or_default().contains("fsbench list"));
    }
}
