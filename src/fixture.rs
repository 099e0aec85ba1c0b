//! Deterministic fixture generation (synthetic linux-2.5.63 tree as .tar.gz).

use crate::cli::KernelTreeArgs;

/// `fsbench fixture kernel-tree`.
pub fn cli_kernel_tree(_args: &KernelTreeArgs) -> anyhow::Result<i32> {
    anyhow::bail!("the kernel-tree fixture generator is not built yet (issue 5)")
}
