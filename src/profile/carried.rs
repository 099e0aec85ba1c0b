//! Where a change starts. A function's total share counts its callees' samples, so one
//! change deep in a call path shows, undiminished, at every caller above it: when
//! `data=journal` makes `ext4_write_begin` grow by 50 points, `generic_perform_write`,
//! `vfs_write` and the system call grow by about as much, and a diff ranked by total
//! change fills its top ten with one change seen from ten frames. A reader of a
//! differential flame graph looks for the narrowest frame where the colour starts; this
//! is that rule.
//!
//! A function whose change (in points of total share) is, for at least [`CARRIED`] of it
//! and with the same sign, a change of the samples in which one callee is below it (a
//! direct call, or up to [`REACH`] frames down: a system call's entry and dispatch frames
//! serve every system call and do not change themselves) is **carried** by that callee:
//! it is shown on the callee's call path (nearest caller first) instead of as a change of its own; of several such callees, the nearest below.
//! Only a callee whose own change is beyond the noise carries (a change is never hidden
//! behind one that is not listed).
//! What is left are the functions where a change starts: in their own code, or split
//! among several callees (a function whose callees changed both ways, as
//! `generic_perform_write` between `ext4_da_write_begin` and `ext4_write_begin`, is
//! carried by the larger one only when that one call moved as much as the function).

use std::collections::{BTreeSet, HashMap};

/// The part of a caller's change that must be in the samples with one callee below it for
/// that callee to carry it.
pub const CARRIED: f64 = 0.9;

/// How many frames below a caller a callee may be and carry it.
pub const REACH: usize = 4;

/// (caller, callee) → the change, B's less A's, of the share of samples with the callee at
/// most [`REACH`] frames below the caller, in points, and the fewest frames between them.
pub type CallChanges = HashMap<(String, String), (f64, usize)>;

/// For each of `beyond` (the changes beyond the noise: function and change in points):
/// `None` when a callee carries it, else the callers it carries, nearest first.
pub fn fold(beyond: &[(&str, f64)], calls: &CallChanges) -> Vec<Option<Vec<String>>> {
    let delta: HashMap<&str, f64> = beyond.iter().copied().collect();
    // By caller: its calls, for one lookup per caller.
    let mut by_caller: HashMap<&str, Vec<(&str, f64, usize)>> = HashMap::new();
    for ((caller, callee), (d, near)) in calls {
        if caller != callee && delta.contains_key(caller.as_str()) {
            by_caller.entry(caller).or_default().push((callee, *d, *near));
        }
    }
    // Caller → the callee that carries it; by name, so that which of two functions that
    // call each other carries the other does not depend on a hash order.
    let mut carrier: HashMap<&str, &str> = HashMap::new();
    let mut callers: Vec<(&str, f64)> = delta.iter().map(|(&k, &v)| (k, v)).collect();
    callers.sort_by(|x, y| x.0.cmp(y.0));
    for (caller, dc) in callers {
        let best = by_caller
            .get(caller)
            .into_iter()
            .flatten()
            .filter(|(callee, d, _)| {
                d.signum() == dc.signum()
                    && d.abs() >= CARRIED * dc.abs()
                    && delta.get(callee).is_some_and(|x| x.signum() == dc.signum())
                    && !reaches(&carrier, callee, caller)
            })
            .min_by(|x, y| x.2.cmp(&y.2).then_with(|| y.1.abs().total_cmp(&x.1.abs())).then_with(|| x.0.cmp(y.0)));
        if let Some(&(callee, _, _)) = best {
            carrier.insert(caller, callee);
        }
    }
    // The callers each function carries directly, largest change first.
    let mut carried_by: HashMap<&str, Vec<&str>> = HashMap::new();
    for (&caller, &callee) in &carrier {
        carried_by.entry(callee).or_default().push(caller);
    }
    for callers in carried_by.values_mut() {
        callers.sort_by(|x, y| delta[y].abs().total_cmp(&delta[x].abs()).then_with(|| x.cmp(y)));
    }
    beyond
        .iter()
        .map(|&(name, _)| {
            if carrier.contains_key(name) {
                return None;
            }
            // Up the path: the largest carried caller of the last one, never one seen twice
            // (recursion between two functions would otherwise go round).
            let mut path = Vec::new();
            let mut seen = BTreeSet::from([name]);
            let mut at = name;
            while let Some(&next) = carried_by.get(at).and_then(|v| v.iter().find(|f| !seen.contains(*f))) {
                seen.insert(next);
                path.push(next.to_string());
                at = next;
            }
            Some(path)
        })
        .collect()
}

/// Whether `from`'s carriers lead to `to` (a carry that would close a circle is not made:
/// in a circle every function would be folded and its change shown nowhere).
fn reaches(carrier: &HashMap<&str, &str>, from: &str, to: &str) -> bool {
    let mut at = from;
    for _ in 0..=carrier.len() {
        if at == to {
            return true;
        }
        match carrier.get(at) {
            Some(next) => at = next,
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(name: &'static str, delta_pp: f64) -> (&'static str, f64) {
        (name, delta_pp)
    }

    /// A kept change: its name and the callers it carries.
    #[derive(Debug)]
    struct Kept {
        name: &'static str,
        carries: Vec<String>,
    }

    /// The kept changes of `beyond` and how many were folded.
    fn fold_all(beyond: Vec<(&'static str, f64)>, calls: &CallChanges) -> (Vec<Kept>, usize) {
        let out = fold(&beyond, calls);
        let folded = out.iter().filter(|o| o.is_none()).count();
        let kept = beyond.iter().zip(out).filter_map(|(&(name, _), o)| Some(Kept { name, carries: o? })).collect();
        (kept, folded)
    }

    /// Direct calls.
    fn calls(list: &[(&str, &str, f64)]) -> CallChanges {
        list.iter().map(|(a, b, d)| ((a.to_string(), b.to_string()), (*d, 1))).collect()
    }

    #[test]
    fn a_chain_of_callers_folds_into_the_function_where_the_change_starts() {
        // sys → vfs_write → perform → {write_begin +50, da_write_begin −27, journalled_end +7}
        let beyond = vec![
            change("sys", 19.0),
            change("vfs_write", 18.8),
            change("perform", 19.4),
            change("write_begin", 49.5),
            change("journalled_end", 7.3),
            change("da_write_begin", -27.0),
        ];
        let c = calls(&[
            ("sys", "vfs_write", 18.9),
            ("vfs_write", "perform", 19.2),
            ("perform", "write_begin", 49.5),
            ("perform", "da_write_begin", -27.0),
            ("perform", "journalled_end", 7.3),
        ]);
        let (kept, folded) = fold_all(beyond, &c);
        let names: Vec<&str> = kept.iter().map(|k| k.name).collect();
        assert_eq!(names, ["write_begin", "journalled_end", "da_write_begin"]);
        assert_eq!(folded, 3);
        assert_eq!(kept[0].carries, ["perform", "vfs_write", "sys"]);
        assert!(kept[1].carries.is_empty() && kept[2].carries.is_empty());
    }

    #[test]
    fn a_change_split_among_callees_or_carried_by_one_within_the_noise_stays() {
        // Half through each of two callees: the caller is where the change starts.
        let beyond = vec![change("f", 10.0), change("g", 5.0), change("h", 5.0), change("k", 3.0)];
        let c = calls(&[("f", "g", 5.0), ("f", "h", 5.0), ("k", "quiet", 3.0), ("k", "k", 3.0)]);
        let (kept, folded) = fold_all(beyond, &c);
        assert_eq!(folded, 0);
        assert_eq!(kept.len(), 4);
        // `quiet` is not beyond the noise: `k` is not hidden behind it, nor behind itself.
        assert!(kept.iter().all(|k| k.carries.is_empty()));
        // A callee that moved the other way carries nothing.
        let (kept, folded) = fold_all(vec![change("f", 10.0), change("g", -10.0)], &calls(&[("f", "g", -10.0)]));
        assert_eq!((kept.len(), folded), (2, 0));
    }

    #[test]
    fn a_caller_is_carried_across_frames_that_did_not_change_by_the_nearest_callee() {
        // libc → entry → dispatch → sys_ftruncate → setattr: entry and dispatch serve every
        // system call and did not change; libc's change is sys_ftruncate's, three below.
        let beyond = vec![change("libc", -17.0), change("sys_ftruncate", -16.0), change("setattr", -15.5)];
        let mut c = calls(&[("libc", "entry", -17.0), ("sys_ftruncate", "setattr", -15.5)]);
        c.insert(("libc".into(), "sys_ftruncate".into()), (-16.0, 3));
        c.insert(("libc".into(), "setattr".into()), (-15.5, 4));
        let (kept, folded) = fold_all(beyond, &c);
        assert_eq!(folded, 2);
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].name, "setattr");
        assert_eq!(kept[0].carries, ["sys_ftruncate", "libc"], "the nearest callee carries libc");
    }

    #[test]
    fn mutual_recursion_does_not_loop() {
        let beyond = vec![change("a", 10.0), change("b", 10.0), change("c", 10.0)];
        let c = calls(&[("a", "b", 10.0), ("b", "a", 10.0), ("b", "c", 9.5)]);
        let (kept, folded) = fold_all(beyond.clone(), &c);
        // `a` is carried by `b` (first by name); `b` back by `a` would close a circle, so
        // `b` is carried by `c`, the other callee that holds its change.
        let names: Vec<&str> = kept.iter().map(|k| k.name).collect();
        assert_eq!((names, folded), (vec!["c"], 2));
        assert_eq!(kept[0].carries, ["b", "a"]);
        // Without `c` to carry it, `b` stays (folding both would show their change nowhere).
        let c = calls(&[("a", "b", 10.0), ("b", "a", 10.0), ("b", "c", 5.0)]);
        let (kept, folded) = fold_all(beyond, &c);
        let names: Vec<&str> = kept.iter().map(|k| k.name).collect();
        assert_eq!((names, folded), (vec!["b", "c"], 1));
        assert_eq!(kept[0].carries, ["a"]);
    }
}
