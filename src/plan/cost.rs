//! What a cell needs from the host and what it costs: its workload's estimate plus
//! provisioning, and the reruns a pair group may spend.

use std::time::Duration;

use super::Cell;
use crate::model::{CellParams, Layout, QuotaImpl, QuotaMode};
use crate::scenario::{Backing, Scenario, Workload, units::format_size};

/// What a cell needs from the host, as short phrases (`root`, `mkfs.xfs`, ...).
pub fn needs(s: &Scenario, p: &CellParams) -> Vec<String> {
    let mut needs = Vec::new();
    match &s.backing {
        Backing::TmpfsLoop { .. } => {
            needs.push("root".to_string());
            let images = if p.layout == Layout::M { p.tasks } else { 1 };
            let size = s.backing.image_size(p.layout).unwrap_or(0);
            needs.push(format!("{images}×{} loop", format_size(size)));
            needs.push(format!("mkfs.{}", s.fs_type(&p.fs)));
        }
        Backing::Device { path } => {
            needs.push("root".to_string());
            needs.push(format!("--allow-device {}", path.display()));
            needs.push(format!("mkfs.{}", s.fs_type(&p.fs)));
        }
        Backing::Dir { path } if path.as_os_str().is_empty() => needs.push("private dir".into()),
        Backing::Dir { path } => needs.push(format!("dir {}", path.display())),
    }
    if p.quota == QuotaMode::On {
        let how = match s.filesystems.get(&p.fs).map(|f| f.quota).unwrap_or_default() {
            QuotaImpl::Files => "quota (quotacheck, QFMT_V2)",
            QuotaImpl::Feature => "quota (ext4 feature)",
        };
        needs.push(how.into());
    }
    crate::workload::kind::of(&s.workload).add_needs(&mut needs, matches!(s.backing, Backing::Dir { .. }));
    needs
}

/// Estimated run time of one cell (for plans and progress), over all its rounds, excluding provisioning.
pub fn estimate(s: &Scenario) -> Duration {
    crate::workload::kind::of(&s.workload).cell_estimate()
}

/// What the profiled repetition of one cell costs (`[workload] profile`, `run --profile`):
/// one more, uncounted repetition per cell (once per cell in a paired run too); zero
/// without a profile or for a workload that is not profiled.
pub fn profiled_estimate(s: &Scenario) -> Duration {
    let once = s.profile.and_then(|_| crate::workload::kind::of(&s.workload).profiled_once());
    once.map_or(Duration::ZERO, |w| crate::workload::kind::of(&w).cell_estimate())
}

/// Seconds one guest boot takes under TCG on the development machine kind (docs/qemu.md),
/// low and high: the figure `plan` and `bisect --estimate` add per boot until a host
/// has measured its own.
pub const TCG_SECS_PER_BOOT: (f64, f64) = (10.0, 15.0);

/// What a run of every cell under each of `kernels` guests costs at least and at most:
/// one boot per kernel (its guest runs every cell) and the cells' work in the guest.
pub fn kernel_run_estimate(s: &Scenario, cells: usize, kernels: usize) -> (Duration, Duration) {
    let work = crate::workload::kind::of(&s.workload).guest_cell_work() * cells as u32;
    let per = |boot: f64| Duration::from_secs_f64(boot) + work;
    (per(TCG_SECS_PER_BOOT.0) * kernels as u32, per(TCG_SECS_PER_BOOT.1) * kernels as u32)
}

/// What it costs to prepare one filesystem image (mkfs, mount, umount) on
/// loop-over-tmpfs; measured order of magnitude for ext4 with eager init on
/// these machines. Only relative sizes matter for balancing.
const IMAGE_COST: Duration = Duration::from_millis(300);

/// Estimated wall time of one cell: the workload estimate plus provisioning,
/// which grows with the number of filesystems (layout M makes one per task).
pub fn cell_cost(s: &Scenario, cell: &Cell) -> Duration {
    let images = match (&s.backing, cell.params.layout) {
        (Backing::Dir { .. }, _) => 0,
        (_, Layout::M) => cell.params.tasks.max(1),
        (_, Layout::S) => 1,
    };
    (estimate(s) + IMAGE_COST * images).max(Duration::from_millis(1))
}

/// Void pairs a pair group may run again: the workload's own budget
/// (`workload.max_reruns` for lat_fs), or [`crate::scenario::PAIR_RERUNS_WITHOUT_BUDGET`].
pub fn pair_reruns(w: &Workload) -> u32 {
    crate::workload::kind::of(w).pair_reruns()
}
