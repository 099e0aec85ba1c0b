//! Steps reports as long-format CSV: one record per step of every iteration.

use super::groups::StepsGroup;
use crate::model::TextFormat;
use crate::report::format::csv_record;
use crate::report::monitors;

/// Long-format CSV of steps: one record per step of every iteration.
pub(super) fn steps_csv(groups: &[StepsGroup]) -> String {
    let head = [
        "label",
        "config",
        "fs",
        "iteration",
        "step",
        "op",
        "label_cmd",
        "user_s",
        "system_s",
        "elapsed_s",
        "cpu_percent",
        "max_rss_kib",
        "flagged",
        "mb_written",
        "write_ios",
        "peak_dirty_mb",
        "util_percent",
    ]
    .map(String::from);
    let mut out = csv_record(&head);
    for g in groups {
        for (i, it) in g.iterations.iter().enumerate() {
            for (j, s) in it.iter().enumerate() {
                let mut rec = vec![
                    g.label.clone(),
                    g.config.clone(),
                    g.fs.clone(),
                    (i + 1).to_string(),
                    (j + 1).to_string(),
                    s.op.escaped(TextFormat::Terminal).into_owned(),
                    s.label.escaped(TextFormat::Terminal).into_owned(),
                    format!("{:.6}", s.user_us as f64 / 1e6),
                    format!("{:.6}", s.system_us as f64 / 1e6),
                    format!("{:.6}", s.elapsed_us as f64 / 1e6),
                    s.cpu_percent().map(|p| p.to_string()).unwrap_or_default(),
                    s.max_rss_kib.to_string(),
                    g.flags.iter().any(|f| f.step == j).to_string(),
                ];
                rec.extend(monitors::step_csv(s));
                out.push_str(&csv_record(&rec));
            }
        }
    }
    out
}
