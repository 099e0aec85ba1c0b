//! The memory budget of an untrusted run: what a bundle may make the host hold in RAM.
//!
//! A bundle chooses sizes: `image_size` of its tmpfs-loop images (RAM-backed: a loop
//! write to a tmpfs file is not charged to the writer's memory cgroup, so nothing
//! else stops it), one image per task in layout M, the guest memory of its
//! `[[kernels]]`, and how many bytes its fixture expands to (a 13 KB bundle can
//! declare a generated tree of gigabytes). Before anything is allocated, `bundle
//! run` adds up the most demanding cell's images, the largest guest and the
//! fixture's expanded bytes, and refuses the run when the sum exceeds
//! [`SHARE_PERCENT`]% of `MemAvailable`, unless `--allow-size`. Cells run one after
//! another, so the budget is per cell, not per run. `fsbench run` makes the same sum for
//! one's own scenario and warns instead ([`own_run_warning`]).

use crate::plan::Cell;
use crate::scenario::{ArchiveSource, Scenario};

/// The share of `MemAvailable` an untrusted run may ask for, in percent: half, so
/// that the host keeps as much again for its page cache and everything else.
pub const SHARE_PERCENT: u64 = 50;

/// What one cell of a bundle's run can make the host hold in memory, by source.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryNeed {
    /// RAM-backed image bytes of the most demanding cell (image size × images).
    pub images: u64,
    /// How [`Self::images`] is made up: `4 × 1GiB (ext4-M-qoff-t4)`.
    pub images_shown: String,
    /// Guest memory of the largest `[[kernels]]` entry (0 without kernels).
    pub guest: u64,
    /// Bytes of file contents the fixture expands to (0 without one).
    pub fixture: u64,
    /// What fio of the most demanding fio cell can hold: buffers and per-job overheads
    /// (`workload::fio::need`); 0 for other workloads.
    pub fio: u64,
    /// How [`Self::fio`] is made up, with the cell.
    pub fio_shown: String,
    /// Bytes of files the most demanding fio cell lays out, and how (0: none).
    pub fio_files: u64,
    /// How [`Self::fio_files`] is made up, with the cell.
    pub fio_files_shown: String,
    /// What the cells ask beyond their filesystems or cannot be counted (fio files larger
    /// than the cell's images, `fill_device` on a backing directory, `bs=$pagesize`): each
    /// a reason to refuse a bundle without `--allow-size`.
    pub beyond: Vec<String>,
}

impl MemoryNeed {
    /// The sum checked against the cap.
    pub fn total(&self) -> u64 {
        self.images.saturating_add(self.guest).saturating_add(self.fixture).saturating_add(self.fio)
    }

    /// One line per source with its size, for `bundle verify` and refusals.
    pub fn parts(&self) -> Vec<String> {
        let mut v = Vec::new();
        if self.images > 0 {
            v.push(format!("RAM-backed images {}: {}", short(self.images), self.images_shown));
        }
        if self.guest > 0 {
            v.push(format!("qemu guest memory {}", short(self.guest)));
        }
        if self.fixture > 0 {
            v.push(format!("fixture expanded {}", short(self.fixture)));
        }
        if self.fio > 0 {
            v.push(format!("fio {}: {}", short(self.fio), self.fio_shown));
        }
        v
    }
}

pub use crate::text::bytes_short as short;

/// Bytes as `1.5 GiB (1610612736 bytes)`: readable, and exact for comparison.
pub fn approx(bytes: u64) -> String {
    match short(bytes) {
        s if bytes < 1024 => s,
        s => format!("{s} ({bytes} bytes)"),
    }
}

/// The need of running `cells` of `s`, with the fixture expanding to `fixture` bytes.
pub fn need(s: &Scenario, cells: &[Cell], fixture: u64) -> MemoryNeed {
    let mut out = MemoryNeed { fixture, ..MemoryNeed::default() };
    // Under [[kernels]] the images live in the guest's own tmpfs, inside its memory.
    if s.kernels.is_empty() {
        for c in cells {
            let Some(size) = s.backing.image_size(c.params.layout) else { continue };
            let images = match c.params.layout {
                crate::model::Layout::M => c.params.tasks.max(1),
                crate::model::Layout::S => 1,
            };
            let bytes = size.saturating_mul(images as u64);
            if bytes > out.images {
                out.images = bytes;
                out.images_shown = format!("{images} × {} ({})", crate::scenario::units::format_size(size), c.id());
            }
        }
    }
    out.guest = s.kernels.iter().map(|k| k.memory).max().unwrap_or(0);
    if let Some(spec) = crate::workload::fio::spec_of(s) {
        for c in cells {
            fio_cell(&mut out, s, spec, c);
        }
    }
    out
}

/// Add one fio cell's buffers and files to `out` (the largest cell's are kept), and
/// what it asks beyond its filesystem.
fn fio_cell(out: &mut MemoryNeed, s: &Scenario, spec: &crate::scenario::FioSpec, c: &Cell) {
    let n = crate::workload::fio::need::cell_need(spec, c.params.tasks, &c.params.fio);
    let id = c.id();
    if n.memory() > out.fio {
        out.fio = n.memory();
        out.fio_shown = format!(
            "{} of buffers ({}) + {} × {} + {} of fio itself ({id})",
            short(n.buffers),
            n.buffers_shown.join(" + "),
            crate::text::plural(n.jobs as usize, "job", "jobs"),
            short(crate::workload::fio::need::PER_JOB_OVERHEAD),
            short(crate::workload::fio::need::BASE_OVERHEAD),
        );
    }
    if n.files > out.fio_files {
        out.fio_files = n.files;
        out.fio_files_shown = format!("{} ({id})", n.files_shown.join(" + "));
    }
    let mut beyond = |what: String| {
        if !out.beyond.contains(&what) {
            out.beyond.push(what);
        }
    };
    for u in &n.uncounted {
        beyond(format!("fio value {u} cannot be counted (write a size such as 4k or 16m)"));
    }
    let images = match c.params.layout {
        crate::model::Layout::M => c.params.tasks.max(1) as u64,
        crate::model::Layout::S => 1,
    };
    match s.backing.image_size(c.params.layout) {
        Some(size) if n.files > size.saturating_mul(images) => beyond(format!(
            "fio files of {} ({}) in {} of images ({id})",
            short(n.files),
            n.files_shown.join(" + "),
            short(size.saturating_mul(images))
        )),
        Some(_) => {}
        // Bounded only by the filesystem of a directory or device that is not the cell's own image.
        None if matches!(s.backing, crate::scenario::Backing::Dir { .. }) => {
            for u in &n.unbounded {
                beyond(format!(
                    "fio {u} fills the backing directory's filesystem, which has no size of the cell's own"
                ));
            }
        }
        None => {}
    }
}

/// Bytes of file contents a generated fixture expands to, from its plan (no content is
/// generated); `None` for a real archive (its dry run counts them) or no fixture.
pub fn generated_fixture_bytes(s: &Scenario) -> Option<u64> {
    match s.archive.as_ref().map(|a| &a.source) {
        Some(ArchiveSource::Generate { profile, scale, seed }) => {
            crate::fixture::plan_kernel_tree(profile, *scale, *seed)
                .ok()
                .map(|p| crate::fixture::FixtureStats::of_plan(&p).content_bytes)
        }
        _ => None,
    }
}

/// The cap for a host with `available` bytes of `MemAvailable`.
pub fn cap(available: u64) -> u64 {
    available / 100 * SHARE_PERCENT
}

/// What is over the cap, when `need` exceeds it for `available`: `one cell needs ... more
/// than 50% of this host's MemAvailable ...`, naming every size. `None` within the budget.
pub fn over_budget(need: &MemoryNeed, available: u64) -> Option<String> {
    let cap = cap(available);
    let mut over = Vec::new();
    if need.total() > cap {
        over.push(format!(
            "one cell needs {} of memory ({}), more than {SHARE_PERCENT}% of this host's MemAvailable {} = {}",
            approx(need.total()),
            need.parts().join(" + "),
            approx(available),
            approx(cap)
        ));
    }
    over.extend(need.beyond.iter().cloned());
    (!over.is_empty()).then(|| over.join("; "))
}

/// `Err` when a bundle's `need` exceeds the cap for `available`: the refusal `bundle run` prints.
pub fn check(need: &MemoryNeed, available: u64) -> Result<(), String> {
    match over_budget(need, available) {
        None => Ok(()),
        Some(what) => Err(format!(
            "refusing the bundle's sizes: {what}; lower them with --set (e.g. --set backing.image_size=...) \
             or pass --allow-size if this host can hold them"
        )),
    }
}

/// The same sum for a scenario of one's own (`fsbench run`): a warning, never a refusal,
/// since the images are sparse and the user chose them, followed by what the cells ask
/// beyond their filesystems ([`MemoryNeed::beyond`]); `None` when there is nothing to say
/// (the sum is left out when MemAvailable cannot be read).
pub fn own_run_warning(need: &MemoryNeed) -> Option<String> {
    let memory_only = MemoryNeed { beyond: Vec::new(), ..need.clone() };
    let mut said: Vec<String> = crate::host::memory::mem_available()
        .ok()
        .and_then(|available| over_budget(&memory_only, available))
        .map(|what| {
            format!(
                "{what}: images are sparse, but a cell that fills them holds that much RAM (the backing tmpfs is \
                 capped at {}% of MemAvailable, so the cell fails first); lower backing.image_size if the workload \
                 writes that much",
                crate::host::memory::TMPFS_SHARE_PERCENT
            )
        })
        .into_iter()
        .collect();
    said.extend(need.beyond.iter().cloned());
    (!said.is_empty()).then(|| said.join("; "))
}

/// Room for the page cache of a fio cell's files in its memory limit, above fio's own
/// memory and the cell's images.
pub const FIO_PAGE_CACHE_ROOM: u64 = 256 << 20;

/// The `memory.max` a bundle's fio cells run under, so that a wrong count cannot take the
/// host: fio's counted memory, the largest cell's images or fio files (a loop device
/// charges its backing file's pages to the writer's group) and [`FIO_PAGE_CACHE_ROOM`].
/// `None` for other workloads.
pub fn fio_memory_limit(need: &MemoryNeed) -> Option<u64> {
    (need.fio > 0).then(|| need.fio.saturating_add(need.images.max(need.fio_files)).saturating_add(FIO_PAGE_CACHE_ROOM))
}

/// `s` with [`fio_memory_limit`] as `memory.max` of the cgroup of every cell (a lower
/// `memory.max` of the scenario's own stays): the cell's fio joins that group before
/// exec, and the kernel stops it at the limit. Only as root, where cell cgroups exist;
/// unchanged for other workloads.
pub fn with_fio_memory_limit(mut s: Scenario, need: &MemoryNeed) -> Scenario {
    use crate::scenario::cgroup_limits::{CgroupKey, CgroupValue};
    let Some(limit) = fio_memory_limit(need) else { return s };
    if !crate::provision::is_root() {
        return s;
    }
    for fs in s.matrix.fs.clone() {
        let limits = &mut s.filesystems.entry(fs).or_default().tunables.cgroup;
        match limits.iter_mut().find(|l| l.key == CgroupKey::MemoryMax) {
            Some(l) if matches!(l.value, CgroupValue::Bytes(Some(b)) if b <= limit) => {}
            Some(l) => *l = memory_max(limit),
            None => {
                limits.push(memory_max(limit));
                limits.sort_by_key(|l| l.key);
            }
        }
    }
    s
}

/// `memory.max = bytes`.
fn memory_max(bytes: u64) -> crate::scenario::cgroup_limits::CgroupLimit {
    use crate::scenario::cgroup_limits::{CgroupKey, CgroupLimit, CgroupValue};
    CgroupLimit { key: CgroupKey::MemoryMax, text: bytes.to_string(), value: CgroupValue::Bytes(Some(bytes)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(extra: &str) -> Scenario {
        let text = format!(
            "schema = 1\nname = \"b\"\n[matrix]\nfs = [\"ext4\"]\nlayout = [\"M\", \"S\"]\ntasks = [1, 4]\ntest = [\"open_close\"]\n\
             [backing]\nkind = \"tmpfs-loop\"\n{extra}[workload]\nkind = \"lat_fs\"\n"
        );
        crate::scenario::parse_str(&text, "b.toml").unwrap()
    }

    /// Security review, round two: image_size × tasks in layout M is what one cell holds.
    #[test]
    fn the_most_demanding_cell_counts_an_image_per_task_in_layout_m() {
        let s = scenario("image_size = { M = \"3GiB\", S = \"10GiB\" }\n");
        let n = need(&s, &crate::plan::expand(&s).cells, 0);
        assert_eq!(n.images, 12 << 30, "{n:?}");
        assert!(n.images_shown.starts_with("4 × 3GiB (ext4-M-"), "{}", n.images_shown);
        let n = need(&s, &crate::plan::expand(&s).cells, 7 << 30);
        assert_eq!(n.total(), 19 << 30);
        let e = check(&n, 16 << 30).unwrap_err();
        for want in ["RAM-backed images 12.0 GiB: 4 × 3GiB (", "fixture expanded 7.0 GiB", "--allow-size", "8.0 GiB"] {
            assert!(e.contains(want), "lacks `{want}`: {e}");
        }
        check(&n, 64 << 30).unwrap();
    }

    #[test]
    fn an_own_run_over_the_budget_is_described_without_a_bundle_remedy() {
        let s = scenario("image_size = { M = \"3GiB\", S = \"10GiB\" }\n");
        let n = need(&s, &crate::plan::expand(&s).cells, 0);
        let what = over_budget(&n, 16 << 30).expect("12 GiB is over half of 16 GiB");
        assert!(what.starts_with("one cell needs 12.0 GiB") && !what.contains("--allow-size"), "{what}");
        assert_eq!(over_budget(&n, 64 << 30), None);
    }

    fn fio(backing: &str, job: &str) -> Scenario {
        let text = format!(
            "schema = 1\nname = \"f\"\n[matrix]\nfs = [\"ext4\"]\ntasks = [1, 2]\n[backing]\n{backing}\n\
             [workload]\nkind = \"fio\"\nnumjobs = \"tasks\"\njob = '''\n{job}'''\n"
        );
        crate::scenario::parse_str(&text, "f.toml").unwrap()
    }

    /// Security review, round three: fio's buffers were outside the budget, so
    /// `bs=16m iodepth=64 numjobs=2` passed as "one cell up to 128 MiB" and took over 1 GiB.
    #[test]
    fn fio_buffers_files_and_unbounded_fills_are_in_the_budget() {
        let s = fio("kind = \"tmpfs-loop\"\nimage_size = \"128MiB\"", "[w]\nrw=write\nbs=16m\niodepth=64\nsize=8m\n");
        let n = need(&s, &crate::plan::expand(&s).cells, 0);
        assert!(n.fio > 2 << 30 && n.total() > (2 << 30) + (128 << 20), "{n:?}");
        assert!(n.fio_shown.contains("`[w]` 16.0 MiB × iodepth 64 × 2 jobs") && n.fio_shown.contains("-t2)"), "{n:?}");
        let e = check(&n, 4 << 30).unwrap_err();
        assert!(e.contains("fio 2.0 GiB: 2.0 GiB of buffers (`[w]`") && e.contains("--allow-size"), "{e}");
        check(&n, 8 << 30).unwrap();
        // Files larger than the cell's image.
        let s = fio("kind = \"tmpfs-loop\"\nimage_size = \"128MiB\"", "[w]\nrw=write\nsize=100m\n");
        let n = need(&s, &crate::plan::expand(&s).cells, 0);
        assert_eq!(n.fio_files, 200 << 20);
        let e = check(&n, 64 << 30).unwrap_err();
        assert!(
            e.contains("fio files of 200.0 MiB (`[w]` 100.0 MiB × 2 jobs) in 128.0 MiB of images (ext4-S-qoff-t2)"),
            "{e}"
        );
        // fill_device on a backing directory fills the host's filesystem; on an image it fills the image.
        let e = check(&need(&fio("kind = \"dir\"", "[w]\nfill_device=1\n"), &[], 0), 64 << 30);
        assert_eq!(e, Ok(()), "no cells, nothing counted");
        let s = fio("kind = \"dir\"", "[w]\nfill_device=1\n");
        let e = check(&need(&s, &crate::plan::expand(&s).cells, 0), 64 << 30).unwrap_err();
        assert!(e.contains("fio `[w]` fill_device=1 fills the backing directory's filesystem"), "{e}");
        let s = fio("kind = \"tmpfs-loop\"\nimage_size = \"128MiB\"", "[w]\nfill_device=1\n");
        check(&need(&s, &crate::plan::expand(&s).cells, 0), 64 << 30).unwrap();
    }

    #[test]
    fn a_generated_fixture_is_counted_from_its_plan() {
        let s = crate::scenario::parse_str(
            "schema = 1\nname = \"g\"\n[matrix]\nfs = [\"ext4\"]\n[backing]\nkind = \"dir\"\n\
             [archive]\ngenerate = \"linux-2.5.63\"\nscale = 0.01\n\
             [workload]\nkind = \"steps\"\niterations = 1\nsteps = [{ op = \"untar\", archive = \"linux-2.5.63.tar.gz\" }]\n",
            "g.toml",
        )
        .unwrap();
        let small = generated_fixture_bytes(&s).unwrap();
        assert!(small > 0);
        let big = s.source.text.replace("scale = 0.01", "scale = 1");
        let big = generated_fixture_bytes(&crate::scenario::parse_str(&big, "g.toml").unwrap()).unwrap();
        assert!(big > 50 * small, "{small} {big}");
    }
}
