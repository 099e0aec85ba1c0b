//! A built fileset's sizes follow its declared distribution: the sizes measured on disk
//! after the build equal the power-of-two histogram the cell records, and that histogram
//! passes a chi-square goodness-of-fit test against the declared gamma, uniform or fixed
//! size, while failing it against a distribution it was not drawn from.

use std::path::Path;

use fsbench::workload::ops::spec::*;
use fsbench::workload::ops::{run, size_histogram};
use statrs::distribution::{ChiSquared, ContinuousCDF, Gamma};

/// Build a fully preallocated fileset of `entries` files sized by `size` (one `stat` is the
/// whole window): the recorded histogram and the sizes measured on disk.
fn build(size: SizeDist, entries: u64, seed: u64) -> (Vec<[u64; 2]>, Vec<u64>) {
    let dir = tempfile::tempdir().unwrap();
    let spec = OpsSpec {
        filesets: vec![FilesetSpec {
            name: "set".into(),
            entries,
            dir_width: 20.0,
            dir_gamma: 1.5,
            size,
            prealloc_percent: 100,
            reuse: false,
            read_only: false,
        }],
        groups: vec![ThreadGroup {
            name: "g".into(),
            threads: 1,
            processes: None,
            flow: Flow::Loop(vec![Op::Stat { fileset: 0, pick: Pick::RoundRobin }]),
        }],
        stop: Stop { loops: Some(1), ..Stop::default() },
        seed,
    };
    let w = run(dir.path(), &spec, 0, &|| false).unwrap();
    assert_eq!(w.filesets[0].preallocated, entries);
    let mut sizes = Vec::new();
    walk(&dir.path().join("set"), &mut sizes);
    assert_eq!(sizes.len() as u64, entries);
    (w.filesets[0].size_histogram.clone(), sizes)
}

fn walk(dir: &Path, sizes: &mut Vec<u64>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let m = std::fs::symlink_metadata(e.path()).unwrap();
        if m.is_dir() {
            walk(&e.path(), sizes);
        } else {
            assert!(m.is_file(), "{}", e.path().display());
            sizes.push(m.len());
        }
    }
}

/// Pearson's chi-square of `hist` (power-of-two buckets: 0, then `[2^k, 2^(k+1))`) against
/// `below(s)` = P(size < s), buckets of expectation under 5 pooled with their neighbour:
/// the statistic and its 99.9% critical value.
fn chi_square(hist: &[[u64; 2]], below: impl Fn(u64) -> f64) -> (f64, f64) {
    let n: u64 = hist.iter().map(|b| b[1]).sum();
    let observed = |lo: u64, hi: u64| hist.iter().filter(|b| b[0] >= lo && b[0] < hi).map(|b| b[1]).sum::<u64>();
    let mut edges = vec![0u64, 1];
    edges.extend((1..48).map(|k| 1u64 << k));
    // (expected, observed) per bucket, the last open-ended.
    let mut cells: Vec<(f64, f64)> = Vec::new();
    for (i, &lo) in edges.iter().enumerate() {
        let hi = edges.get(i + 1).copied().unwrap_or(u64::MAX);
        let p = if hi == u64::MAX { 1.0 - below(lo) } else { below(hi) - below(lo) };
        cells.push((n as f64 * p, observed(lo, hi) as f64));
    }
    let mut pooled: Vec<(f64, f64)> = Vec::new();
    let mut acc = (0.0, 0.0);
    for c in cells {
        acc = (acc.0 + c.0, acc.1 + c.1);
        if acc.0 >= 5.0 {
            pooled.push(acc);
            acc = (0.0, 0.0);
        }
    }
    if let Some(last) = pooled.last_mut() {
        *last = (last.0 + acc.0, last.1 + acc.1);
    }
    assert!(pooled.len() >= 3, "too few buckets to test: {pooled:?}");
    let stat: f64 = pooled.iter().map(|(e, o)| (o - e) * (o - e) / e).sum();
    let crit = ChiSquared::new((pooled.len() - 1) as f64).unwrap().inverse_cdf(0.999);
    (stat, crit)
}

/// P(size < s) for gamma sizes rounded to the nearest byte.
fn gamma_below(mean: f64, shape: f64) -> impl Fn(u64) -> f64 {
    let g = Gamma::new(shape, shape / mean).unwrap();
    move |s| if s == 0 { 0.0 } else { g.cdf(s as f64 - 0.5) }
}

/// P(size < s) for sizes uniform in `min..=max`.
fn uniform_below(min: u64, max: u64) -> impl Fn(u64) -> f64 {
    move |s| (s.saturating_sub(min) as f64 / (max - min + 1) as f64).min(1.0)
}

#[test]
fn gamma_sizes_on_disk_fit_the_declared_gamma() {
    let (hist, measured) = build(SizeDist::Gamma { mean: 4096.0, shape: 1.5 }, 4000, 7);
    assert_eq!(size_histogram(measured.into_iter()), hist, "the record is what is on disk");
    let (stat, crit) = chi_square(&hist, gamma_below(4096.0, 1.5));
    assert!(stat < crit, "chi-square {stat} against gamma(4 KiB, 1.5), critical {crit}: {hist:?}");
    // The test has the power to tell another shape, or another mean, apart.
    let (wrong, crit) = chi_square(&hist, gamma_below(4096.0, 3.0));
    assert!(wrong > crit, "chi-square {wrong} against gamma(4 KiB, 3), critical {crit}");
    let (wrong, crit) = chi_square(&hist, gamma_below(4096.0 * 1.2, 1.5));
    assert!(wrong > crit, "chi-square {wrong} against gamma(4.8 KiB, 1.5), critical {crit}");
}

#[test]
fn uniform_and_fixed_sizes_on_disk_fit_their_declaration() {
    let (hist, measured) = build(SizeDist::Uniform { min: 1024, max: 65536 }, 2000, 3);
    assert_eq!(size_histogram(measured.iter().copied()), hist);
    assert!(measured.iter().all(|s| (1024..=65536).contains(s)));
    let (stat, crit) = chi_square(&hist, uniform_below(1024, 65536));
    assert!(stat < crit, "chi-square {stat} against uniform(1 KiB, 64 KiB), critical {crit}: {hist:?}");
    let (wrong, crit) = chi_square(&hist, uniform_below(1024, 98304));
    assert!(wrong > crit, "chi-square {wrong} against uniform(1 KiB, 96 KiB), critical {crit}");
    // A fixed size has one bucket, every file in it, and every file that size.
    let (hist, measured) = build(SizeDist::Fixed(12288), 500, 1);
    assert_eq!(hist, vec![[8192, 500]]);
    assert!(measured.iter().all(|&s| s == 12288));
}
