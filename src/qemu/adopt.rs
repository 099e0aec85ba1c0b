//! Collecting a guest's results: its run directory, unpacked from the serial channel,
//! becomes an ordinary run under `<out>` whose cells note the kernel and accelerator; or,
//! for a member of a kernel-paired run, its one cell becomes that kernel's arm.

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::vm::Accel;
use crate::model::{CellParams, CellResult};
use crate::scenario::KernelSpec;

/// Unpack the guest's results under `out` and note the kernel and accelerator in each cell.
pub(super) fn adopt_results(tar_gz: &[u8], out: &Path, k: &KernelSpec, accel: Accel) -> anyhow::Result<PathBuf> {
    let stage = tempfile::Builder::new()
        .prefix(".fsbench-guest-")
        .tempdir_in(out)
        .with_context(|| format!("cannot stage under {}", out.display()))?;
    let run_dir = unpack_run(tar_gz, stage.path())?;
    let scenario_dir = run_dir.parent().expect("depth 3").file_name().expect("named").to_owned();
    let run_id = run_dir.file_name().expect("named").to_string_lossy().into_owned();
    let note = kernel_note(k, accel);
    let cells = run_dir.join("cells");
    if let Ok(rd) = std::fs::read_dir(&cells) {
        for e in rd.filter_map(Result::ok) {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "json") {
                let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&p)?)
                    .with_context(|| format!("bad cell file {}", p.display()))?;
                // An empty `notes` is left out of cell files: add it back.
                let notes =
                    v.as_object_mut().map(|o| o.entry("notes").or_insert_with(|| serde_json::Value::Array(Vec::new())));
                if let Some(serde_json::Value::Array(notes)) = notes {
                    notes.push(serde_json::Value::String(note.clone()));
                }
                crate::results::write_atomic(&p, &serde_json::to_vec_pretty(&v)?)?;
            }
        }
    }
    let parent = out.join(&scenario_dir);
    std::fs::create_dir_all(&parent).with_context(|| format!("cannot create {}", parent.display()))?;
    let mut dest = parent.join(&run_id);
    let mut n = 2;
    while dest.exists() {
        dest = parent.join(format!("{run_id}-{n}"));
        n += 1;
    }
    std::fs::rename(&run_dir, &dest).with_context(|| format!("cannot move the guest's run to {}", dest.display()))?;
    Ok(dest)
}

/// Unpack the guest's results into `stage`; returns its one run directory
/// (`<stage>/<scenario>/<run-id>/`).
fn unpack_run(tar_gz: &[u8], stage: &Path) -> anyhow::Result<PathBuf> {
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(tar_gz));
    ar.set_preserve_permissions(false);
    ar.unpack(stage).context("cannot unpack the guest's results")?;
    // <scenario>/<run-id>/run.json: exactly one run.
    let run_json = walkdir::WalkDir::new(stage)
        .min_depth(3)
        .max_depth(3)
        .into_iter()
        .filter_map(Result::ok)
        .find(|e| e.file_name() == crate::results::RUN_FILE)
        .ok_or_else(|| anyhow::anyhow!("the guest sent no run directory"))?;
    Ok(run_json.path().parent().expect("depth 3").to_path_buf())
}

/// What a cell measured in a guest says of where it ran.
fn kernel_note(k: &KernelSpec, accel: Accel) -> String {
    format!(
        "ran in qemu ({}) under kernel {} ({}){}",
        accel.name(),
        k.label,
        k.image.display(),
        if accel == Accel::Tcg { "; TCG timings are emulated: compare them only with other TCG runs" } else { "" }
    )
}

/// The one cell a member's guest ran (`want`, the plan's cell without its kernel), read
/// from the guest's results unpacked under `scratch` (removed again), as the member of
/// kernel `k`: its id and params name the kernel, a note says how it ran, and its profile
/// (taken in the guest) is the arm's profiled member `pair`. Errors: the results hold no
/// run, or not that cell.
pub(super) fn adopt_member(
    tar_gz: &[u8],
    scratch: &Path,
    want: &CellParams,
    k: &KernelSpec,
    accel: Accel,
    pair: Option<u32>,
) -> anyhow::Result<CellResult> {
    let stage = tempfile::Builder::new()
        .prefix(".fsbench-member-")
        .tempdir_in(scratch)
        .with_context(|| format!("cannot stage under {}", scratch.display()))?;
    let run_dir = unpack_run(tar_gz, stage.path())?;
    let run = crate::results::load_run(&run_dir).context("cannot read the guest's run")?;
    let base = CellParams { kernel: None, ..want.clone() };
    let mut cell = match run.cells.into_iter().find(|c| c.params == base) {
        Some(c) => c,
        None => anyhow::bail!("the guest's run holds no result of cell {}", base.id()),
    };
    cell.params.kernel = Some(k.label.clone());
    cell.id = cell.params.id();
    // Profiled in the guest (with the guest kernel's symbols): stored under the host's id.
    if let Some(p) = cell.profile.as_mut() {
        p.pair = pair;
        crate::profile::name_files(p, &cell.id);
    }
    cell.notes.push(kernel_note(k, accel));
    Ok(cell)
}
