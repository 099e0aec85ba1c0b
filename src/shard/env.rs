//! Which shard this process runs: from `--shard K/N`, or from the job engine's variables.
//!
//! Precedence: an explicit `--shard` wins and the environment is not read.
//! Otherwise a Slurm array task (`SLURM_ARRAY_TASK_ID` - `SLURM_ARRAY_TASK_MIN`
//! of `SLURM_ARRAY_TASK_COUNT`), otherwise a Kubernetes indexed Job
//! (`JOB_COMPLETION_INDEX`, 0-based, of `--shard-count` or
//! `FSBENCH_SHARD_COUNT`). Values that contradict each other are errors, never
//! guesses: a wrong shard silently runs the wrong cells on hundreds of machines.

use super::ShardSpec;

/// Environment variable giving the number of shards next to `JOB_COMPLETION_INDEX`.
pub const SHARD_COUNT_VAR: &str = "FSBENCH_SHARD_COUNT";
/// Environment variable naming the logical run that shards belong to (overrides the default key).
pub const RUN_KEY_VAR: &str = "FSBENCH_RUN_KEY";

/// Why the shard cannot be determined.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ShardEnvError {
    /// `--shard` is not `K/N` with 1 <= K <= N.
    #[error("--shard {0}: expected K/N with 1 <= K <= N (e.g. --shard 3/8)")]
    BadSpec(String),
    /// A variable holds something other than a number.
    #[error("{var}={value}: expected a non-negative integer")]
    NotANumber {
        /// The variable (or option).
        var: &'static str,
        /// Its value.
        value: String,
    },
    /// A variable that the others require is missing.
    #[error("{present} is set but {missing} is not; {hint}")]
    Missing {
        /// The variable that is set.
        present: &'static str,
        /// The one that is missing.
        missing: &'static str,
        /// How to fix it.
        hint: &'static str,
    },
    /// Two sources give different shard counts.
    #[error("shard count {a_name}={a} disagrees with {b_name}={b}")]
    CountMismatch {
        /// First source.
        a_name: &'static str,
        /// Its count.
        a: u32,
        /// Second source.
        b_name: &'static str,
        /// Its count.
        b: u32,
    },
    /// The index is outside 0..count.
    #[error("{what}: index {index} is not below the shard count {count}")]
    OutOfRange {
        /// Where the index came from.
        what: String,
        /// 0-based index.
        index: i64,
        /// Number of shards.
        count: u32,
    },
    /// Both a Slurm array task and a Kubernetes indexed Job are described.
    #[error("both SLURM_ARRAY_TASK_ID and JOB_COMPLETION_INDEX are set: pass --shard K/N to say which shard this is")]
    TwoEngines,
    /// `--shard-count` without an index to go with it.
    #[error("--shard-count needs JOB_COMPLETION_INDEX (a Kubernetes indexed Job); use --shard K/N otherwise")]
    CountWithoutIndex,
}

fn number(var: &'static str, value: &str) -> Result<i64, ShardEnvError> {
    value
        .trim()
        .parse::<i64>()
        .ok()
        .filter(|v| *v >= 0)
        .ok_or(ShardEnvError::NotANumber { var, value: value.to_string() })
}

fn count_of(var: &'static str, value: &str) -> Result<u32, ShardEnvError> {
    let n = number(var, value)?;
    u32::try_from(n).ok().filter(|n| *n >= 1).ok_or(ShardEnvError::NotANumber { var, value: value.to_string() })
}

/// The shard to run, or `None` for an unsharded run.
///
/// `env` looks up an environment variable (tests pass a map; the runner passes
/// `std::env::var`). Empty variables count as unset.
pub fn resolve_shard(
    shard: Option<&str>,
    shard_count: Option<u32>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<ShardSpec>, ShardEnvError> {
    let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    if let Some(text) = shard {
        let spec = ShardSpec::parse(text)?;
        if let Some(n) = shard_count.filter(|n| *n != spec.count) {
            return Err(ShardEnvError::CountMismatch {
                a_name: "--shard",
                a: spec.count,
                b_name: "--shard-count",
                b: n,
            });
        }
        return Ok(Some(spec));
    }
    let slurm = var("SLURM_ARRAY_TASK_ID");
    let k8s = var("JOB_COMPLETION_INDEX");
    match (slurm, k8s) {
        (Some(_), Some(_)) => Err(ShardEnvError::TwoEngines),
        (Some(id), None) => {
            let id = number("SLURM_ARRAY_TASK_ID", &id)?;
            let hint = "Slurm sets all SLURM_ARRAY_TASK_* variables in array jobs (sbatch --array)";
            let count = var("SLURM_ARRAY_TASK_COUNT").ok_or(ShardEnvError::Missing {
                present: "SLURM_ARRAY_TASK_ID",
                missing: "SLURM_ARRAY_TASK_COUNT",
                hint,
            })?;
            let count = count_of("SLURM_ARRAY_TASK_COUNT", &count)?;
            let min = var("SLURM_ARRAY_TASK_MIN").ok_or(ShardEnvError::Missing {
                present: "SLURM_ARRAY_TASK_ID",
                missing: "SLURM_ARRAY_TASK_MIN",
                hint,
            })?;
            let min = number("SLURM_ARRAY_TASK_MIN", &min)?;
            if let Some(n) = shard_count.filter(|n| *n != count) {
                return Err(ShardEnvError::CountMismatch {
                    a_name: "SLURM_ARRAY_TASK_COUNT",
                    a: count,
                    b_name: "--shard-count",
                    b: n,
                });
            }
            let index = id - min;
            let what = format!("SLURM_ARRAY_TASK_ID={id} - SLURM_ARRAY_TASK_MIN={min} (use a contiguous --array=1-N)");
            let idx = u32::try_from(index).ok().filter(|i| *i < count).ok_or(ShardEnvError::OutOfRange {
                what,
                index,
                count,
            })?;
            Ok(ShardSpec::new(idx, count))
        }
        (None, Some(index)) => {
            let index = number("JOB_COMPLETION_INDEX", &index)?;
            let from_env = var(SHARD_COUNT_VAR).map(|v| count_of(SHARD_COUNT_VAR, &v)).transpose()?;
            let count = match (shard_count, from_env) {
                (Some(a), Some(b)) if a != b => {
                    return Err(ShardEnvError::CountMismatch {
                        a_name: "--shard-count",
                        a,
                        b_name: SHARD_COUNT_VAR,
                        b,
                    });
                }
                (Some(a), _) => a,
                (None, Some(b)) => b,
                (None, None) => {
                    return Err(ShardEnvError::Missing {
                        present: "JOB_COMPLETION_INDEX",
                        missing: "--shard-count or FSBENCH_SHARD_COUNT",
                        hint: "set FSBENCH_SHARD_COUNT to the Job's completions (fsbench submit k8s does)",
                    });
                }
            };
            if count == 0 {
                return Err(ShardEnvError::NotANumber { var: "--shard-count", value: "0".into() });
            }
            let what = "JOB_COMPLETION_INDEX".to_string();
            let idx = u32::try_from(index).ok().filter(|i| *i < count).ok_or(ShardEnvError::OutOfRange {
                what,
                index,
                count,
            })?;
            Ok(ShardSpec::new(idx, count))
        }
        (None, None) if shard_count.is_some() => Err(ShardEnvError::CountWithoutIndex),
        (None, None) => Ok(None),
    }
}

/// The key shared by the shards of one logical run.
///
/// `FSBENCH_RUN_KEY` when set; else `slurm-<SLURM_ARRAY_JOB_ID>` inside a Slurm
/// array; else the first 12 hex digits of the scenario's sha256 and the shard
/// count (`1a2b3c4d5e6f-n8`), so that shards started by hand with the same
/// scenario and N group together.
pub fn run_key(env: &dyn Fn(&str) -> Option<String>, scenario_sha256: &str, count: u32) -> String {
    let var = |name: &str| env(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
    if let Some(k) = var(RUN_KEY_VAR) {
        return k;
    }
    if let Some(j) = var("SLURM_ARRAY_JOB_ID") {
        return format!("slurm-{j}");
    }
    format!("{}-n{count}", &scenario_sha256[..scenario_sha256.len().min(12)])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: std::collections::HashMap<String, String> =
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| map.get(k).cloned()
    }

    fn resolve(
        shard: Option<&str>,
        count: Option<u32>,
        pairs: &[(&str, &str)],
    ) -> Result<Option<ShardSpec>, ShardEnvError> {
        resolve_shard(shard, count, &env_of(pairs))
    }

    #[test]
    fn nothing_set_is_unsharded() {
        assert_eq!(resolve(None, None, &[]), Ok(None));
        assert_eq!(resolve(None, None, &[("FSBENCH_SHARD_COUNT", "4")]), Ok(None));
    }

    #[test]
    fn slurm_array_from_one_and_from_zero() {
        let slurm = |id: &str, min: &str| {
            resolve(
                None,
                None,
                &[("SLURM_ARRAY_TASK_ID", id), ("SLURM_ARRAY_TASK_COUNT", "4"), ("SLURM_ARRAY_TASK_MIN", min)],
            )
        };
        assert_eq!(slurm("1", "1"), Ok(ShardSpec::new(0, 4)));
        assert_eq!(slurm("4", "1"), Ok(ShardSpec::new(3, 4)));
        assert_eq!(slurm("0", "0"), Ok(ShardSpec::new(0, 4)));
        assert_eq!(slurm("3", "0"), Ok(ShardSpec::new(3, 4)));
        assert_eq!(slurm("12", "10"), Ok(ShardSpec::new(2, 4)));
        // --array=1-7:2 has 4 tasks with ids 1,3,5,7: not a contiguous range.
        assert!(matches!(slurm("7", "1"), Err(ShardEnvError::OutOfRange { index: 6, count: 4, .. })));
        assert!(matches!(slurm("0", "1"), Err(ShardEnvError::OutOfRange { index: -1, .. })));
        assert!(matches!(slurm("x", "1"), Err(ShardEnvError::NotANumber { .. })));
    }

    #[test]
    fn slurm_needs_count_and_min_and_agrees_with_shard_count() {
        let e = resolve(None, None, &[("SLURM_ARRAY_TASK_ID", "1"), ("SLURM_ARRAY_TASK_MIN", "1")]).unwrap_err();
        assert!(e.to_string().contains("SLURM_ARRAY_TASK_COUNT is not"), "{e}");
        let e = resolve(None, None, &[("SLURM_ARRAY_TASK_ID", "1"), ("SLURM_ARRAY_TASK_COUNT", "4")]).unwrap_err();
        assert!(e.to_string().contains("SLURM_ARRAY_TASK_MIN is not"), "{e}");
        let full = [("SLURM_ARRAY_TASK_ID", "2"), ("SLURM_ARRAY_TASK_COUNT", "4"), ("SLURM_ARRAY_TASK_MIN", "1")];
        assert_eq!(resolve(None, Some(4), &full), Ok(ShardSpec::new(1, 4)));
        assert!(matches!(resolve(None, Some(3), &full), Err(ShardEnvError::CountMismatch { .. })));
    }

    #[test]
    fn kubernetes_index_with_count_from_option_or_env() {
        assert_eq!(resolve(None, Some(8), &[("JOB_COMPLETION_INDEX", "0")]), Ok(ShardSpec::new(0, 8)));
        assert_eq!(
            resolve(None, None, &[("JOB_COMPLETION_INDEX", "7"), ("FSBENCH_SHARD_COUNT", "8")]),
            Ok(ShardSpec::new(7, 8))
        );
        assert_eq!(
            resolve(None, Some(8), &[("JOB_COMPLETION_INDEX", "7"), ("FSBENCH_SHARD_COUNT", "8")]),
            Ok(ShardSpec::new(7, 8))
        );
        assert!(matches!(
            resolve(None, None, &[("JOB_COMPLETION_INDEX", "8"), ("FSBENCH_SHARD_COUNT", "8")]),
            Err(ShardEnvError::OutOfRange { .. })
        ));
        assert!(matches!(
            resolve(None, Some(4), &[("JOB_COMPLETION_INDEX", "1"), ("FSBENCH_SHARD_COUNT", "8")]),
            Err(ShardEnvError::CountMismatch { .. })
        ));
        assert!(matches!(resolve(None, None, &[("JOB_COMPLETION_INDEX", "1")]), Err(ShardEnvError::Missing { .. })));
        assert!(matches!(
            resolve(None, None, &[("JOB_COMPLETION_INDEX", "1"), ("FSBENCH_SHARD_COUNT", "0")]),
            Err(ShardEnvError::NotANumber { .. })
        ));
        assert_eq!(resolve(None, Some(4), &[]), Err(ShardEnvError::CountWithoutIndex));
    }

    #[test]
    fn explicit_shard_wins_over_the_environment() {
        let env = [("SLURM_ARRAY_TASK_ID", "9"), ("JOB_COMPLETION_INDEX", "5")];
        assert_eq!(resolve(Some("2/3"), None, &env), Ok(ShardSpec::new(1, 3)));
        assert_eq!(resolve(Some("2/3"), Some(3), &[]), Ok(ShardSpec::new(1, 3)));
        assert!(matches!(resolve(Some("2/3"), Some(4), &[]), Err(ShardEnvError::CountMismatch { .. })));
        assert_eq!(resolve(None, None, &env), Err(ShardEnvError::TwoEngines));
    }

    #[test]
    fn run_keys() {
        let sha = "0123456789abcdef0123";
        assert_eq!(run_key(&env_of(&[]), sha, 4), "0123456789ab-n4");
        assert_eq!(run_key(&env_of(&[("SLURM_ARRAY_JOB_ID", "77")]), sha, 4), "slurm-77");
        assert_eq!(
            run_key(&env_of(&[("SLURM_ARRAY_JOB_ID", "77"), ("FSBENCH_RUN_KEY", "nightly")]), sha, 4),
            "nightly"
        );
    }
}
