//! Profiles as a monitor: each cell of a scenario with `[workload] profile = "cpu"` runs
//! one more repetition under `perf record`, which never counts toward its statistics, and
//! stores its workers' on-CPU stacks (kernel and user) as folded stacks beside its result.
//!
//! [`capability::detect`] finds the recorder once per run (or why there is none: no
//! perf, a paranoid kernel without root, a guest the host had no perf to pack into);
//! [`record_window`] profiles one window around the caller's repetition; [`folded`] caps
//! what is stored and reads back what others stored. Where the host cannot profile, the cell runs unprofiled and says
//! why in its `profile.not_profiled`: a profile never fails a cell.

pub mod capability;
pub mod carried;
pub mod diff;
pub mod flame;
pub mod folded;
pub mod kthreads;
pub mod offcpu;
pub mod record;
pub mod shares;
pub mod whose;

use std::path::PathBuf;

use crate::model::CellProfile;

pub use capability::{Probe, Recorder, detect};

/// Default sampling frequency: 999 Hz, not 1000, so that sampling does not run in
/// lockstep with the kernel's timer tick and miss (or always hit) what it does.
pub const DEFAULT_FREQUENCY_HZ: u32 = 999;
/// The run-directory folder of the folded stacks (`profiles/<cell-id>.folded`).
pub const PROFILES_DIR: &str = "profiles";

/// Most profiled members per cell of a paired run: one per pair for the first this many
/// pairs of each group (both arms, in the pair schedule's order). The diff tests each
/// function's change across these pairs with a t test, Holm-adjusted over the ~200
/// functions a filesystem profile holds at 0.5% or more: at 5 pairs (4 degrees of freedom)
/// a change needs t ≈ 10 to be listed, at 8 pairs t ≈ 6, which is what lets a
/// 3-point function of a 1 s window of a loaded 2-CPU host (~350 samples) through
/// (benches/README.md, "profile explanation"). The cost is one uncounted repetition per
/// member in those pairs only; a group with fewer pairs has as many profiles as pairs.
pub const PROFILED_PAIRS: u32 = 8;

/// The file name, under [`PROFILES_DIR`], of a cell's folded stacks: `<id>.folded`, the
/// off-CPU ones `<id>.offcpu.folded`; a paired run's later profiled members
/// `<id>.pair<k>.folded` (`pair` 0 is the plain name). The one place the names are made.
pub fn folded_name(cell_id: &str, pair: Option<u32>, offcpu: bool) -> String {
    let pair = pair.filter(|&k| k > 0).map(|k| format!(".pair{k}")).unwrap_or_default();
    let off = if offcpu { ".offcpu" } else { "" };
    format!("{cell_id}{pair}{off}.folded")
}

/// One cell's profiled window, as plain values.
#[derive(Debug, Clone)]
pub struct WindowRequest<'a> {
    /// The recorder, or why this host has none ([`detect`]).
    pub recorder: &'a Result<Recorder, String>,
    /// Samples per second per CPU.
    pub frequency_hz: u32,
    /// A scratch directory of the run for perf's data (removed afterwards).
    pub scratch: PathBuf,
    /// The cell's id: its profile is stored as `profiles/<id>.folded` ([`folded_name`]).
    pub cell_id: String,
    /// Paired runs: the index of this profiled member of the cell ([`CellProfile::pair`]).
    pub pair: Option<u32>,
    /// The workload runs in fsbench's own thread (one steps copy), not in workers.
    pub in_process: bool,
    /// `cpu+offcpu`: also where the workers were blocked ([`offcpu`]).
    pub offcpu: bool,
    /// `+kthreads`: the kernel threads' stacks beside the workers' ([`kthreads`]).
    pub kthreads: bool,
    /// In-process workloads that name their worker threads: the name's prefix (`ops-`).
    pub threads: Option<&'static str>,
}

/// Profile the window of `run` (one repetition of the cell's workload) into the cell's
/// profile; anything that keeps it from being profiled is said, never returned as an
/// error. An error of `run` itself is the caller's, returned with the (empty) profile.
pub fn record_window<E: std::fmt::Display>(
    req: &WindowRequest,
    run: &mut dyn FnMut() -> Result<(), E>,
) -> (CellProfile, Result<(), E>) {
    let rec = match req.recorder {
        Ok(r) => r,
        Err(why) => return (CellProfile::not_profiled(why.clone()), Ok(())),
    };
    // The kernel threads' session first: a perf started after the workers' session would
    // be one of fsbench's children, sampled as a worker.
    let mut kernel = match req.kthreads.then(|| kthreads::KernelThreads::start(rec, req)).transpose() {
        Ok(k) => k,
        Err(why) => return (CellProfile::not_profiled(why), Ok(())),
    };
    let pid = std::process::id();
    let mut session =
        match record::Session::start(rec, req.frequency_hz, record::Target::Process(pid), &req.scratch, req.offcpu) {
            Ok(s) => s,
            Err(why) => return (CellProfile::not_profiled(why), Ok(())),
        };
    if let Err(e) = run() {
        drop((kernel, session));
        return (CellProfile::not_profiled(format!("the profiled repetition failed: {e}")), Err(e));
    }
    // Every session told to stop before any is waited for, and stopped before any is folded.
    session.interrupt();
    if let Some(k) = kernel.as_mut() {
        k.interrupt();
    }
    if let Err(why) = session.stop().and_then(|()| kernel.as_mut().map_or(Ok(()), |k| k.stop())) {
        return (CellProfile::not_profiled(why), Ok(()));
    }
    // The kernel threads' first: their scratch is inside the workers' session's, which
    // removes it when it is done.
    let kernel = match kernel.map(|k| k.finish(rec)).transpose() {
        Ok(k) => k,
        Err(why) => return (CellProfile::not_profiled(why), Ok(())),
    };
    let whose = whose::Whose::Workers { pid, own_process: req.in_process, threads: req.threads };
    let (mut folded, mut off) = match session.finish(rec, whose) {
        Ok(f) => f,
        Err(why) => return (CellProfile::not_profiled(why), Ok(())),
    };
    if let Some((k_folded, k_off)) = kernel {
        folded = folded.merged(k_folded);
        off = match (off, k_off) {
            // The workers' preempted time stays theirs: the kernel threads' is not added.
            (Some(Ok(w)), Some(Ok(k))) => {
                Some(Ok(offcpu::OffCpu { blocked: w.blocked.merged(k.blocked), runnable_us: w.runnable_us }))
            }
            (w, _) => w,
        };
    }
    if folded.samples() == 0 {
        return (CellProfile::not_profiled("perf recorded no samples of the cell's workers".to_string()), Ok(()));
    }
    let mut profile = stored(rec, req, &folded);
    profile.offcpu = off.map(|o| Box::new(stored_offcpu(rec, req, o)));
    (profile, Ok(()))
}

/// The off-CPU profile of a window as stored: its stacks weighted by microseconds
/// blocked, or why there is none.
fn stored_offcpu(rec: &Recorder, req: &WindowRequest, off: Result<offcpu::OffCpu, String>) -> CellProfile {
    let o = match off {
        Ok(o) if o.blocked.samples() > 0 => o,
        Ok(_) => return CellProfile::not_profiled("the workers were never blocked off the CPU in the window"),
        Err(why) => return CellProfile::not_profiled(why),
    };
    let (text, c) = o.blocked.capped_text(folded::MAX_STORED_BYTES);
    CellProfile {
        event: Some(offcpu::EVENT.into()),
        weight: Some(crate::model::WEIGHT_US_BLOCKED.into()),
        recorder: Some(rec.version.clone()),
        kernel_release: nix::sys::utsname::uname().ok().map(|u| u.release().to_string_lossy().into_owned()),
        samples: c.samples,
        stacks: c.stacks,
        merged_stacks: c.merged,
        file: Some(format!("{PROFILES_DIR}/{}", folded_name(&req.cell_id, req.pair, true))),
        folded: text,
        runnable_us: Some(o.runnable_us),
        pair: req.pair,
        ..CellProfile::default()
    }
}

/// The cell's profile of `folded`, capped to [`folded::MAX_STORED_BYTES`], with how it was taken.
fn stored(rec: &Recorder, req: &WindowRequest, folded: &folded::Folded) -> CellProfile {
    let (text, c) = folded.capped_text(folded::MAX_STORED_BYTES);
    CellProfile {
        not_profiled: None,
        event: Some(rec.event.to_string()),
        frequency_hz: Some(req.frequency_hz),
        kernel_release: nix::sys::utsname::uname().ok().map(|u| u.release().to_string_lossy().into_owned()),
        kernel_build_id: kernel_build_id(rec),
        recorder: Some(rec.version.clone()),
        samples: c.samples,
        stacks: c.stacks,
        merged_stacks: c.merged,
        file: Some(format!("{PROFILES_DIR}/{}", folded_name(&req.cell_id, req.pair, false))),
        folded: text,
        unreadable: None,
        weight: None,
        offcpu: None,
        runnable_us: None,
        pair: req.pair,
    }
}

/// Point `p`'s `file` fields at cell `cell_id`'s folded stacks (a guest's cell adopted
/// under the host's id is stored under that id).
pub fn name_files(p: &mut CellProfile, cell_id: &str) {
    if p.file.is_some() {
        p.file = Some(format!("{PROFILES_DIR}/{}", folded_name(cell_id, p.pair, false)));
    }
    let pair = p.pair;
    if let Some(o) = p.offcpu.as_mut().filter(|o| o.file.is_some()) {
        o.file = Some(format!("{PROFILES_DIR}/{}", folded_name(cell_id, pair, true)));
    }
}

/// The running kernel's GNU build id (`perf buildid-list -k`), if perf can read it.
fn kernel_build_id(rec: &Recorder) -> Option<String> {
    let out = crate::signals::default_in_child(&mut std::process::Command::new(&rec.perf))
        .args(["buildid-list", "-k"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !id.is_empty() && id.len() <= 128 && id.bytes().all(|b| b.is_ascii_hexdigit()))
        .then_some(id)
}
