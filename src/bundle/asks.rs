//! What a bundle asks of the host beyond formatting its own images, each with the
//! flag of `bundle run` that unlocks it: the list `bundle verify` prints, `bundle
//! pack` warns about, and `bundle run` checks.

use crate::model::{TextFormat, UntrustedText};
use crate::scenario::{Backing, Scenario};

use super::budget::MemoryNeed;

/// One thing a bundle asks for and how it is unlocked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    /// What, with its sizes or values (`sysctl vm.dirty_ratio = 10`).
    pub what: String,
    /// The flag that unlocks it; `None` when nothing needs unlocking.
    pub flag: Option<String>,
}

/// The `[sysctl]` entries as the scenario text asks for them (after `--set`), dotted
/// key and value. Read from the text rather than from the filesystems' tunables so
/// that an entry no cell would apply is listed (and judged) all the same.
pub fn requested_sysctls(s: &Scenario) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    if let Ok(t) = s.source.text.parse::<toml::Table>()
        && let Some(table) = t.get("sysctl").and_then(|v| v.as_table())
    {
        for (k, v) in table {
            let value = match v {
                toml::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            out.push((k.clone(), value));
        }
    }
    for spec in s.filesystems.values() {
        for kv in &spec.tunables.sysctl {
            if !out.contains(kv) {
                out.push(kv.clone());
            }
        }
    }
    out
}

/// Everything the bundle asks for, in the order `verify` prints it. `over_budget` says
/// whether `memory` exceeds this host's cap (then `--allow-size` unlocks it).
pub fn asks(s: &Scenario, exec: &[String], memory: &MemoryNeed, over_budget: bool) -> Vec<Ask> {
    let esc = |s: &str| UntrustedText::escape(s, TextFormat::Terminal);
    let mut v = Vec::new();
    for (k, val) in requested_sysctls(s) {
        v.push(Ask { what: format!("sysctl {} = {}", esc(&k), esc(&val)), flag: Some("--allow-sysctl".into()) });
    }
    for e in exec {
        v.push(Ask { what: format!("exec step `{}`", esc(e)), flag: Some("--allow-exec".into()) });
    }
    for o in super::fio_job::refused_options(s) {
        v.push(Ask { what: format!("fio option {}", esc(&o)), flag: Some("--allow-exec".into()) });
    }
    match &s.backing {
        Backing::Device { path } => v.push(Ask {
            what: format!("block device {} (FORMATTED)", path.display()),
            flag: Some(format!("--allow-device {}", path.display())),
        }),
        Backing::Dir { path } if !path.as_os_str().is_empty() => {
            v.push(Ask { what: format!("directory {}", path.display()), flag: Some("--set backing.path=DIR".into()) })
        }
        _ => {}
    }
    for k in &s.kernels {
        v.push(Ask {
            what: format!("kernel `{}` booted in qemu ({})", esc(&k.label), k.image.display()),
            flag: Some("--allow-kernels".into()),
        });
    }
    for (name, spec) in &s.filesystems {
        for (key, val) in &spec.tunables.queue {
            v.push(Ask {
                what: format!("queue setting {key} = {} on the devices of {}", esc(val), esc(name)),
                flag: match &s.backing {
                    Backing::Device { path } => Some(format!("--allow-device {}", path.display())),
                    _ => None,
                },
            });
        }
    }
    // A cgroup limit only holds back the cell's own workers, in a group made for the cell
    // and removed after it: shown, but nothing to unlock.
    for (name, spec) in &s.filesystems {
        for l in &spec.tunables.cgroup {
            v.push(Ask {
                what: format!("cgroup limit {} = {} on the workers of {}'s cells", l.key, esc(&l.text), esc(name)),
                flag: None,
            });
        }
    }
    for part in memory.parts() {
        v.push(Ask { what: part, flag: over_budget.then(|| "--allow-size".to_string()) });
    }
    v
}

/// The flags that unlock `asks`, each once, in order.
pub fn flags(asks: &[Ask]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in asks.iter().filter_map(|a| a.flag.as_ref()) {
        if !out.contains(f) {
            out.push(f.clone());
        }
    }
    out
}
