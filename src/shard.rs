//! Sharding a run over job engines (Slurm arrays, Kubernetes indexed Jobs) and merging the shards.

use crate::cli::{MergeArgs, SubmitK8sArgs, SubmitSlurmArgs};

/// `fsbench merge`.
pub fn cli_merge(_args: &MergeArgs) -> anyhow::Result<i32> {
    anyhow::bail!("merge is not built yet (issue 9)")
}

/// `fsbench submit slurm`.
pub fn cli_submit_slurm(_args: &SubmitSlurmArgs) -> anyhow::Result<i32> {
    anyhow::bail!("submit is not built yet (issue 9)")
}

/// `fsbench submit k8s`.
pub fn cli_submit_k8s(_args: &SubmitK8sArgs) -> anyhow::Result<i32> {
    anyhow::bail!("submit is not built yet (issue 9)")
}
