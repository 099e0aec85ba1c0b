//! Text fields of loaded result files made safe to print.
//!
//! Result files travel between labs (bundles, shared result trees), so their
//! free-text fields are someone else's bytes: a label or host name holding
//! terminal escapes would rewrite the screen of whoever runs `report`,
//! `compare`, `gate` or `bundle verify`. Every such field is escaped once, as it
//! is loaded, so no printer can forget to ([`crate::text::escape_control`]).
//! The scenario text keeps its newlines: it is parsed, never printed raw.

use super::LoadedRun;
use crate::text::escape_control;

fn esc(s: &mut String) {
    *s = escape_control(s);
}

/// Escape the free-text fields of a loaded run in place.
pub(super) fn escape_text(run: &mut LoadedRun) {
    let m = &mut run.meta;
    for s in [
        &mut m.tool_version,
        &mut m.run_id,
        &mut m.scenario_name,
        &mut m.scenario_origin,
        &mut m.host.hostname,
        &mut m.host.kernel_release,
        &mut m.host.kernel_version,
        &mut m.host.kernel_cmdline,
        &mut m.host.cpu_model,
        &mut m.started,
    ] {
        esc(s);
    }
    for s in [&mut m.label, &mut m.finished].into_iter().flatten() {
        esc(s);
    }
    // Checked on load (bounds), escaped again so no printer depends on that check.
    m.meta = std::mem::take(&mut m.meta).into_iter().map(|(k, v)| (escape_control(&k), escape_control(&v))).collect();
    for c in &mut run.cells {
        esc(&mut c.id);
        esc(&mut c.started);
        esc(&mut c.finished);
        c.error.iter_mut().chain(c.notes.iter_mut()).for_each(esc);
        if let Some(s) = &mut c.skip {
            esc(&mut s.reason);
            s.remedy.iter_mut().for_each(esc);
        }
    }
    run.problems.iter_mut().for_each(esc);
}

#[cfg(test)]
mod tests {
    #[test]
    fn labels_hosts_and_errors_lose_their_escapes_but_not_their_text() {
        let mut s = String::from("EVIL\u{1b}[2J");
        super::esc(&mut s);
        assert_eq!(s, "EVIL\\u{1b}[2J");
        let mut t = String::from("plain-host");
        super::esc(&mut t);
        assert_eq!(t, "plain-host");
    }
}
