//! lat_fs runs in-process: a short spec and task directories.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use fsbench::scenario::LatfsSpec;

/// A short lat_fs spec: 20 ms warm-up, the given window, 2 repetitions, lmbench -L 2 -w.
pub fn spec(per_task_uid: bool, duration: Duration) -> LatfsSpec {
    LatfsSpec {
        per_task_uid,
        quota_refs: 2,
        open_for_write: true,
        warmup: Duration::from_millis(20),
        duration,
        repetitions: 2,
        rounds: 1,
        noise: Default::default(),
        latency: fsbench::scenario::LatencyMode::Mean,
    }
}

/// A fresh directory with `n` task directories, writable for every uid.
pub fn task_dirs(n: usize) -> (tempfile::TempDir, Vec<PathBuf>) {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let dirs: Vec<PathBuf> = (0..n).map(|i| tmp.path().join(i.to_string())).collect();
    for d in &dirs {
        std::fs::create_dir(d).unwrap();
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    (tmp, dirs)
}
