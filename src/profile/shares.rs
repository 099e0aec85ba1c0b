//! Where a profile's samples went, per function: its **self** share (samples whose leaf
//! it is) and its **total** share (samples with it anywhere on the stack: itself and
//! what it called, counted once per sample however deep the recursion).
//!
//! Shares are of every sample of the profile (the remainder line's included), so a
//! function's share reads the same whatever was merged to fit the cap. The root frame
//! (the process's name) and the remainder line are not functions and are not listed.

use std::collections::{HashMap, HashSet};

use super::folded::{Folded, REMAINDER};

/// One function's shares of a profile, in percent of its samples.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionShare {
    /// The function (a frame as folded: already escaped when read from a file).
    pub name: String,
    /// Percent of samples in which it was the leaf (on the CPU itself).
    pub self_pct: f64,
    /// Percent of samples in which it was on the stack (itself or its callees).
    pub total_pct: f64,
}

/// Every function's samples: (self, total), by name. Shares are of [`Folded::samples`].
pub fn counts(f: &Folded) -> HashMap<&str, (u64, u64)> {
    let mut out: HashMap<&str, (u64, u64)> = HashMap::new();
    for (frames, n) in &f.stacks {
        if frames.first().map(String::as_str) == Some(REMAINDER) || frames.len() < 2 {
            continue;
        }
        let functions = &frames[1..];
        if let Some(leaf) = functions.last() {
            out.entry(leaf).or_default().0 += n;
        }
        let mut seen = HashSet::with_capacity(functions.len());
        for func in functions {
            if seen.insert(func.as_str()) {
                out.entry(func).or_default().1 += n;
            }
        }
    }
    out
}

/// Samples with one function below another on the stack, and how near below.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Below {
    /// Samples with the callee below the caller within the reach (once per sample).
    pub samples: u64,
    /// The fewest frames between them in any such sample: 1 for a direct call.
    pub nearest: usize,
}

/// For every (caller, callee) with `callee` at most `reach` frames below `caller` on a
/// stack (1: direct calls only): the samples in which it is, counted once per sample
/// however often it recurs, and the nearest it was. Of the same samples as [`counts`]
/// (the root frame and the remainder are not functions).
pub fn below_counts(f: &Folded, reach: usize) -> HashMap<(&str, &str), Below> {
    let mut out: HashMap<(&str, &str), Below> = HashMap::new();
    for (frames, n) in &f.stacks {
        if frames.first().map(String::as_str) == Some(REMAINDER) || frames.len() < 3 {
            continue;
        }
        let functions = &frames[1..];
        let mut seen: HashMap<(&str, &str), usize> = HashMap::new();
        for (i, caller) in functions.iter().enumerate() {
            for (d, callee) in functions.iter().enumerate().skip(i + 1).take(reach).map(|(j, c)| (j - i, c)) {
                let near = seen.entry((caller.as_str(), callee.as_str())).or_insert(d);
                *near = (*near).min(d);
            }
        }
        for (pair, d) in seen {
            let b = out.entry(pair).or_insert(Below { samples: 0, nearest: d });
            b.samples += n;
            b.nearest = b.nearest.min(d);
        }
    }
    out
}

/// Every function's shares, by total share (then name) descending.
pub fn shares(f: &Folded) -> Vec<FunctionShare> {
    let all = f.samples();
    if all == 0 {
        return Vec::new();
    }
    let pct = |n: u64| 100.0 * n as f64 / all as f64;
    let mut out: Vec<FunctionShare> = counts(f)
        .into_iter()
        .map(|(name, (own, total))| FunctionShare { name: name.to_string(), self_pct: pct(own), total_pct: pct(total) })
        .collect();
    out.sort_by(|a, b| b.total_pct.total_cmp(&a.total_pct).then_with(|| a.name.cmp(&b.name)));
    out
}

/// The `n` functions with the largest self share (ties by name), none with no self samples.
pub fn top_self(all: &[FunctionShare], n: usize) -> Vec<FunctionShare> {
    let mut v: Vec<FunctionShare> = all.iter().filter(|s| s.self_pct > 0.0).cloned().collect();
    v.sort_by(|a, b| b.self_pct.total_cmp(&a.self_pct).then_with(|| a.name.cmp(&b.name)));
    v.truncate(n);
    v
}

/// The `n` functions with the largest total share.
pub fn top_total(all: &[FunctionShare], n: usize) -> Vec<FunctionShare> {
    all.iter().take(n).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(lines: &[(&str, u64)]) -> Folded {
        Folded { stacks: lines.iter().map(|(s, n)| (s.split(';').map(String::from).collect(), *n)).collect() }
    }

    #[test]
    fn self_is_the_leaf_and_total_counts_a_recursive_function_once_per_sample() {
        let p = f(&[
            ("fsbench;main;vfs_write;ext4_da_write_begin", 60),
            ("fsbench;main;vfs_write;vfs_write;copy_page", 20),
            ("fsbench;main", 10),
            ("[other stacks]", 10),
        ]);
        let s = shares(&p);
        let get = |n: &str| s.iter().find(|x| x.name == n).unwrap().clone();
        assert_eq!(get("main").total_pct, 90.0);
        assert_eq!(get("main").self_pct, 10.0);
        assert_eq!(get("vfs_write").total_pct, 80.0, "recursion is not counted twice");
        assert_eq!(get("vfs_write").self_pct, 0.0);
        assert_eq!(get("ext4_da_write_begin").self_pct, 60.0);
        assert!(!s.iter().any(|x| x.name == "fsbench" || x.name == "[other stacks]"));
        assert_eq!(
            top_self(&s, 2).iter().map(|x| x.name.as_str()).collect::<Vec<_>>(),
            ["ext4_da_write_begin", "copy_page"]
        );
        assert_eq!(top_total(&s, 1)[0].name, "main");
        let calls = below_counts(&p, 1);
        assert_eq!(calls[&("main", "vfs_write")], Below { samples: 80, nearest: 1 });
        assert_eq!(calls[&("vfs_write", "vfs_write")].samples, 20, "a recursive call once per sample");
        assert_eq!(calls[&("vfs_write", "ext4_da_write_begin")].samples, 60);
        assert!(!calls.contains_key(&("fsbench", "main")), "the root frame is not a function");
        assert_eq!(calls.len(), 4);
        // Further below: main above copy_page two frames down, counted once per sample.
        let below = below_counts(&p, 3);
        assert_eq!(below[&("main", "copy_page")], Below { samples: 20, nearest: 3 });
        assert_eq!(below[&("main", "ext4_da_write_begin")], Below { samples: 60, nearest: 2 });
        assert_eq!(below[&("vfs_write", "copy_page")], Below { samples: 20, nearest: 1 });
        assert!(!below_counts(&p, 2).contains_key(&("main", "copy_page")));
    }
}
