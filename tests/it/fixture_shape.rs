//! The generated kernel tree has the profile's shape and is deterministic.

use fsbench::fixture::{FixtureStats, generate_kernel_tree, plan_kernel_tree};

fn within(actual: f64, expected: f64, tol: f64) -> bool {
    (actual / expected - 1.0).abs() <= tol
}

#[test]
fn full_scale_plan_matches_the_profile() {
    let plan = plan_kernel_tree("linux-2.5.63", 1.0, 1).unwrap();
    let s = FixtureStats::of_plan(&plan);
    eprintln!("{s}");
    assert!(within(s.files as f64, 13_782.0, 0.03), "files {}", s.files);
    assert!(within(s.dirs as f64, 776.0, 0.03), "dirs {}", s.dirs);
    let want_files = [6u64, 327, 6504, 5921, 899, 116, 9];
    for (d, &w) in want_files.iter().enumerate() {
        let got = s.files_per_depth.get(d).copied().unwrap_or(0);
        assert!(got.abs_diff(w) <= (w / 20).max(3), "files at depth {d}: {got} vs {w}");
    }
    let want_dirs = [16u64, 223, 398, 104, 33, 1];
    for (d, &w) in want_dirs.iter().enumerate() {
        let got = s.dirs_per_depth.get(d).copied().unwrap_or(0);
        assert!(got.abs_diff(w) <= (w / 20).max(2), "dirs at depth {}: {got} vs {w}", d + 1);
    }
    // p10 481, p25 1403, p50 4193, p75 11655, p90 27617, p95 46467, p99 107806
    let want_p = [481.0, 1403.0, 4193.0, 11655.0, 27617.0, 46467.0, 107806.0];
    for (i, &w) in want_p.iter().enumerate() {
        assert!(within(s.size_percentiles[i] as f64, w, 0.05), "percentile {i}: {} vs {w}", s.size_percentiles[i]);
    }
    let want_buckets = [1478u64, 1191, 1837, 2300, 2385, 2186, 1307, 708, 296, 64, 30];
    for (i, &w) in want_buckets.iter().enumerate() {
        assert!(s.size_buckets[i].abs_diff(w) <= (w / 10).max(15), "bucket {i}: {} vs {w}", s.size_buckets[i]);
    }
    assert!(within(s.content_bytes as f64, 166.4e6, 0.05), "content {}", s.content_bytes);
    // The profile's extension table covers 13,546 files (other extensions are
    // not listed), so its shares are compared, scaled to the whole tree.
    let want_ext = [5671.0, 5832.0, 587.0, 320.0, 1136.0];
    for (i, &w) in want_ext.iter().enumerate() {
        let w: f64 = w * s.files as f64 / 13_546.0;
        assert!(within(s.files_per_ext[i] as f64, w, 0.03), "ext {i}: {} vs {w}", s.files_per_ext[i]);
    }
    // Every path fits the profile's limits: at most 60 chars below the top, names at most 28.
    for i in 0..plan.files.len() {
        assert!(plan.file_rel(i).len() <= 60 + 28, "{}", plan.file_rel(i));
    }
}

#[test]
fn scaled_archive_is_deterministic_and_compresses_like_kernel_c() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (d.path().join("a.tar.gz"), d.path().join("b.tar.gz"));
    let sa = generate_kernel_tree("linux-2.5.63", 0.05, 7, &a).unwrap();
    let sb = generate_kernel_tree("linux-2.5.63", 0.05, 7, &b).unwrap();
    eprintln!("{sa}");
    assert_eq!(sa, sb);
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap(), "same seed, same bytes");
    assert!(within(sa.files as f64, 13_782.0 * 0.05, 0.05), "files {}", sa.files);
    assert!(within(sa.gzip_ratio(), 4.56, 0.05), "gzip ratio {:.2}", sa.gzip_ratio());
    let c = d.path().join("c.tar.gz");
    generate_kernel_tree("linux-2.5.63", 0.05, 8, &c).unwrap();
    assert_ne!(std::fs::read(&a).unwrap(), std::fs::read(&c).unwrap(), "another seed, other bytes");
}

#[test]
fn unknown_profile_and_bad_scale_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let e = generate_kernel_tree("linux-9.9", 1.0, 1, &d.path().join("x")).unwrap_err();
    assert!(e.to_string().contains("unknown fixture profile `linux-9.9`"), "{e}");
    assert!(generate_kernel_tree("linux-2.5.63", 0.0, 1, &d.path().join("x")).is_err());
    assert!(!d.path().join("x").exists());
}
