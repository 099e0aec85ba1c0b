//! Collecting a guest's results: its run directory, unpacked from the serial channel,
//! becomes an ordinary run under `<out>` whose cells note the kernel and accelerator.

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::vm::Accel;
use crate::scenario::KernelSpec;

/// Unpack the guest's results under `out` and note the kernel and accelerator in each cell.
pub(super) fn adopt_results(tar_gz: &[u8], out: &Path, k: &KernelSpec, accel: Accel) -> anyhow::Result<PathBuf> {
    let stage = tempfile::Builder::new()
        .prefix(".fsbench-guest-")
        .tempdir_in(out)
        .with_context(|| format!("cannot stage under {}", out.display()))?;
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(tar_gz));
    ar.set_preserve_permissions(false);
    ar.unpack(stage.path()).context("cannot unpack the guest's results")?;
    // <scenario>/<run-id>/run.json: exactly one run.
    let run_json = walkdir::WalkDir::new(stage.path())
        .min_depth(3)
        .max_depth(3)
        .into_iter()
        .filter_map(Result::ok)
        .find(|e| e.file_name() == crate::results::RUN_FILE)
        .ok_or_else(|| anyhow::anyhow!("the guest sent no run directory"))?;
    let run_dir = run_json.path().parent().expect("depth 3").to_path_buf();
    let scenario_dir = run_dir.parent().expect("depth 3").file_name().expect("named").to_owned();
    let run_id = run_dir.file_name().expect("named").to_string_lossy().into_owned();
    let note = format!(
        "ran in qemu ({}) under kernel {} ({}){}",
        accel.name(),
        k.label,
        k.image.display(),
        if accel == Accel::Tcg { "; TCG timings are emulated: compare them only with other TCG runs" } else { "" }
    );
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
