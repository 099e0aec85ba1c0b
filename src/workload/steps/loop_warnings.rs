//! Checks on the shape of a steps loop, made where the numbers are measured so that the
//! stored result and every report of it carry the same warnings.

use crate::model::StepTiming;

/// Warnings about the loop: an `rm_rf` after the first iteration that removed nothing
/// while the iteration before it unpacked entries measures a filesystem growing every
/// iteration, not the seed's remove-and-unpack loop.
pub fn loop_warnings(iterations: &[Vec<StepTiming>]) -> Vec<String> {
    members_loop_warnings(iterations, None)
}

/// [`loop_warnings`] of a paired cell whose members of `per` iterations each are appended
/// one after the other: each member starts on a fresh filesystem, so its first `rm_rf`
/// removing nothing is the loop's first iteration, not a miss.
pub fn members_loop_warnings(iterations: &[Vec<StepTiming>], per: Option<usize>) -> Vec<String> {
    let mut out = Vec::new();
    for i in 1..iterations.len() {
        if per.is_some_and(|n| n > 0 && i % n == 0) {
            continue;
        }
        let created: u64 = iterations[i - 1].iter().filter(|s| s.op == "untar").filter_map(|s| s.entries).sum();
        if created == 0 {
            continue;
        }
        for s in iterations[i].iter().filter(|s| s.op == "rm_rf" && s.entries == Some(0)) {
            out.push(format!(
                "iteration {}: `{}` removed nothing although iteration {} unpacked {created} entries; \
                 the path is not what the archive unpacks (write path = \"{{archive.top}}\")",
                i + 1,
                s.label.escaped(crate::model::TextFormat::Terminal),
                i
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_rm_rf_that_misses_the_tree_is_warned_about() {
        let step = |op: &str, label: &str, entries| StepTiming {
            label: label.into(),
            op: op.into(),
            user_us: 0,
            system_us: 0,
            elapsed_us: 1000,
            max_rss_kib: 0,
            entries,
            ..StepTiming::default()
        };
        let it = |rm| {
            vec![step("rm_rf", "rm -rf linux-2.5.63", Some(rm)), step("untar", "tar zxf linux-6.1.tar.gz", Some(900))]
        };
        let w = loop_warnings(&[it(0), it(0), it(0)]);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w[0].starts_with("iteration 2: `rm -rf linux-2.5.63` removed nothing although iteration 1 unpacked 900"),
            "{}",
            w[0]
        );
        assert!(loop_warnings(&[it(0), it(900), it(900)]).is_empty());
        // Members of two iterations appended: iteration 3 starts a member on a fresh filesystem.
        assert!(members_loop_warnings(&[it(0), it(900), it(0), it(900)], Some(2)).is_empty());
        assert_eq!(members_loop_warnings(&[it(0), it(0), it(0), it(900)], Some(2)).len(), 1);
    }
}
