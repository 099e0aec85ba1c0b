//! The members of a kernel-paired run (`run --kernel A=… --kernel B=… --paired`): each one
//! cell measured in a fresh qemu guest under its arm's kernel. The guest runs its ordinary
//! `fsbench run` with `--only` that one cell (one round, no `[compare]`); its result comes
//! back as the member, and a guest that cannot be booted, times out or sends nothing is a
//! failed member with the reason, which voids its pair.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::adopt::adopt_member;
use super::request::KernelsRequest;
use super::run::{GuestEnd, boot_guest};
use super::vm::Accel;
use crate::model::{CellParams, CellResult, CellStatus};
use crate::plan::Cell;
use crate::results::RunKernel;
use crate::runner::{CellExecutor, Phase};
use crate::scenario::{KernelSpec, Scenario};

/// Measures each member of a kernel-paired run by booting its kernel.
pub struct KernelMembers<'a> {
    scenario: &'a Scenario,
    /// The kernels, owned: a bisection of a git range fills in a candidate once it is built.
    kernels: Vec<KernelSpec>,
    qemu: PathBuf,
    /// The accelerator the first boot settled on (KVM, or TCG after KVM failed), for every later boot.
    accel: Option<Accel>,
    /// The accelerator each kernel's guests ran with, by label.
    used: BTreeMap<String, Accel>,
    /// Profiled members so far per cell id (an arm of a group): the first
    /// [`crate::profile::PROFILED_PAIRS`] are profiled in their guests, as on the host.
    profiled: BTreeMap<String, u32>,
    quiet: bool,
}

impl<'a> KernelMembers<'a> {
    /// The members of `scenario`'s cells under `kernels`, booted with the qemu binary `qemu`.
    pub fn new(scenario: &'a Scenario, kernels: &'a [KernelSpec], qemu: &Path, quiet: bool) -> KernelMembers<'a> {
        let kernels = kernels.to_vec();
        KernelMembers {
            scenario,
            kernels,
            qemu: qemu.to_path_buf(),
            accel: None,
            used: BTreeMap::new(),
            profiled: BTreeMap::new(),
            quiet,
        }
    }

    /// Replace the kernel labelled as `k` is (a candidate of a git range, once built: its
    /// modules directory is known only then); a label not among the kernels is ignored.
    pub fn set_kernel(&mut self, k: KernelSpec) {
        if let Some(slot) = self.kernels.iter_mut().find(|o| o.label == k.label) {
            *slot = k;
        }
    }

    /// A new paired run with the same guests (a bisection's next step): its arms' first
    /// pairs are profiled again.
    pub fn start_run(&mut self) {
        self.profiled.clear();
    }

    /// What `run.json` records of the kernels: label, image and, once a guest of it ran,
    /// the accelerator.
    pub fn recorded(&self) -> Vec<RunKernel> {
        self.kernels
            .iter()
            .map(|k| RunKernel {
                label: k.label.clone(),
                image: k.image.display().to_string(),
                accel: self.used.get(&k.label).map(|a| a.name().to_string()),
            })
            .collect()
    }

    /// Boot the member's kernel, run its cell in the guest and adopt the result.
    fn member(&mut self, cell: &Cell) -> anyhow::Result<CellResult> {
        let label = cell.params.kernel.as_deref().context("the cell names no kernel")?;
        let k = self
            .kernels
            .iter()
            .find(|k| k.label == label)
            .with_context(|| format!("no kernel is labelled `{label}`"))?;
        let only = member_filters(&cell.params);
        // The guest's results are unpacked here, not under the results root: only the
        // member's cell is kept, in the paired run.
        // Profiled as on the host: the arm's first pairs, each profile stored under its index.
        let done = self.profiled.get(&cell.params.id()).copied().unwrap_or(0);
        let profile = self.scenario.profile.is_some() && done < crate::profile::PROFILED_PAIRS;
        let tmp = crate::provision::workroot::scratch_run_dir("member-")
            .context("cannot create a scratch directory for the guest's results")?;
        // The guest's chatter stays in the guest: the pair progress is the display here.
        let req = KernelsRequest {
            scenario: self.scenario,
            kernels: &self.kernels,
            only: &only,
            order: crate::runner::CellOrder::Plan,
            cells: 1,
            out: tmp.path(),
            quiet: true,
            profile,
        };
        let first = self.accel.is_none();
        let guest = boot_guest(&req, k, &self.qemu, &mut self.accel)?;
        self.used.insert(k.label.clone(), guest.accel);
        if first && guest.accel == Accel::Tcg && !self.quiet {
            eprintln!(
                "fsbench: warning: qemu runs with TCG (software emulation): timings are emulated and comparable only \
                 with other TCG runs"
            );
        }
        match (guest.end, guest.results) {
            (Ok(GuestEnd::Interrupted), _) => anyhow::bail!("interrupted"),
            (_, Some(bytes)) => {
                let pair = profile.then_some(done);
                let r = adopt_member(&bytes, req.out, &cell.params, k, guest.accel, pair)?;
                if r.profile.is_some() {
                    self.profiled.insert(cell.params.id(), done + 1);
                }
                Ok(r)
            }
            (Ok(GuestEnd::Exited(code)), None) => {
                anyhow::bail!("the guest's fsbench run exited with {code} and sent no results")
            }
            (Err(e), None) => Err(e),
        }
    }
}

impl CellExecutor for KernelMembers<'_> {
    fn measure(&mut self, cell: &Cell, phase: &Phase) -> CellResult {
        let started = crate::results::now_rfc3339();
        phase(&format!("booting kernel {}", cell.params.kernel.as_deref().unwrap_or("?")));
        match self.member(cell) {
            Ok(r) => r,
            Err(e) => {
                let mut r = crate::model::CellResult::new(&cell.params, CellStatus::Failed, &started);
                r.error = Some(crate::exit::error_chain(&e.context("the member's guest gave no result")));
                r.finished = crate::results::now_rfc3339();
                r
            }
        }
    }
}

/// The guest run's `--only` filters that select exactly the plan cell of `p`: one per axis.
pub fn member_filters(p: &CellParams) -> Vec<String> {
    let mut only = vec![
        format!("fs={}", p.fs),
        format!("layout={}", p.layout),
        format!("quota={}", p.quota),
        format!("tasks={}", p.tasks),
    ];
    if let Some(t) = p.test {
        only.push(format!("test={}", t.name()));
    }
    only.extend(p.fio.iter().map(|(o, v)| format!("fio.{o}={v}")));
    only
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_members_filters_select_its_cell_and_no_other() {
        let text = "schema = 1\nname = \"k\"\n[matrix]\nfs = [\"ext4\", \"ext2\"]\nlayout = [\"S\", \"M\"]\n\
                    quota = [\"off\", \"on\"]\ntasks = [1, 2]\ntest = [\"chown\", \"open_close\"]\n\
                    [filesystems.ext4]\nmount = [\"usrquota\"]\n[filesystems.ext2]\nmount = [\"usrquota\"]\n\
                    [backing]\nkind = \"dir\"\npath = \"/tmp\"\n[workload]\nkind = \"lat_fs\"\n";
        let s = crate::scenario::parse_str(text, "k.toml").unwrap();
        let all = crate::plan::expand(&s).cells;
        for cell in &all {
            let mut p = cell.params.clone();
            p.kernel = Some("B".into());
            let chosen = crate::plan::plan_for(&s, &member_filters(&p)).unwrap().cells;
            assert_eq!(chosen.len(), 1, "{}", cell.id());
            assert_eq!(chosen[0].params, cell.params);
        }
    }
}
