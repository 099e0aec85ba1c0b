//! What a bisection checks before anything boots: the candidate list (from `--kernel`
//! arguments, a `--kernels` file, or a resumed log), the one cell it judges, and the log
//! it starts with. Every refusal is bad input (exit 2) naming what and where.

use std::path::Path;

use super::log::{BISECT_SCHEMA_VERSION, BisectLog, CandidateRecord};
use crate::exit::InputError;
use crate::plan::Cell;
use crate::scenario::{CompareSpec, KernelSpec, Scenario};

/// Largest `--kernels` file read.
pub const MAX_LIST_BYTES: u64 = 1 << 20;

/// The candidates of a `--kernels` file: one `LABEL=PATH[,modules=DIR][,cmdline=ARGS]` a
/// line, as `--kernel` takes it; blank lines and `#` comments are skipped. Relative image
/// and modules paths are taken from the file's directory.
pub fn read_list(path: &Path) -> anyhow::Result<Vec<KernelSpec>> {
    use std::io::Read;
    let bad = |why: String| InputError::anyhow(format!("--kernels {}: {why}", path.display()));
    let f = std::fs::File::open(path).map_err(|e| bad(e.to_string()))?;
    let mut text = String::new();
    f.take(MAX_LIST_BYTES + 1).read_to_string(&mut text).map_err(|e| bad(e.to_string()))?;
    if text.len() as u64 > MAX_LIST_BYTES {
        return Err(bad(format!("larger than {} KiB; a candidate list is one line per kernel", MAX_LIST_BYTES >> 10)));
    }
    let base = path.parent().unwrap_or(Path::new("."));
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut k = crate::qemu::parse_kernel_arg(line).map_err(|e| bad(format!("line {}: {e}", i + 1)))?;
        k.image = base.join(&k.image);
        k.modules = k.modules.map(|m| base.join(m));
        out.push(k);
    }
    Ok(out)
}

/// Refuse a candidate list that cannot be bisected: fewer than two, a label twice, an
/// image that cannot be read, endpoints that are the same kernel booted the same way.
pub fn check_candidates(kernels: &[KernelSpec]) -> anyhow::Result<()> {
    if kernels.len() < 2 {
        return Err(InputError::anyhow(format!(
            "a bisection needs two or more candidate kernels in order (the good one first, the bad one last), not {}",
            kernels.len()
        )));
    }
    for (i, k) in kernels.iter().enumerate() {
        if kernels[..i].iter().any(|o| o.label == k.label) {
            return Err(InputError::anyhow(format!(
                "kernel label `{}` is given twice; each candidate needs its own",
                k.label
            )));
        }
        if let Err(e) = std::fs::File::open(&k.image) {
            return Err(InputError::anyhow(format!(
                "kernel `{}`: cannot read image {}: {e}",
                k.label,
                k.image.display()
            )));
        }
    }
    let (first, last) = (&kernels[0], &kernels[kernels.len() - 1]);
    let same = |a: &KernelSpec, b: &KernelSpec| {
        (&a.image, &a.modules, a.cmdline.trim(), a.memory, a.cpus)
            == (&b.image, &b.modules, b.cmdline.trim(), b.memory, b.cpus)
    };
    if same(first, last) {
        return Err(InputError::anyhow(format!(
            "the endpoints `{}` and `{}` are the same kernel booted the same way: there is nothing between them to bisect",
            first.label, last.label
        )));
    }
    Ok(())
}

/// The cells a bisection judges: the plan's only cell, the one `--cell` names (by its id),
/// or with `all` every cell (each step Holm-adjusted over them, [`super::cells`]). Several
/// cells with neither are refused, listing them.
pub fn pick_cell(cells: Vec<Cell>, wanted: Option<&str>, all: bool) -> anyhow::Result<Vec<Cell>> {
    let ids: Vec<String> = cells.iter().map(Cell::id).collect();
    match wanted {
        Some(w) => {
            let cell = cells.into_iter().find(|c| c.id() == w);
            let cell = cell.ok_or_else(|| {
                InputError::anyhow(format!(
                    "--cell {}: no such cell in the plan (cells: {})",
                    crate::text::escape_control(w),
                    crate::text::some_of(&ids.iter().map(String::as_str).collect::<Vec<_>>(), 20)
                ))
            })?;
            Ok(vec![cell])
        }
        None if cells.len() == 1 => Ok(cells),
        None if all && cells.len() > super::log::MAX_CELLS => Err(InputError::anyhow(format!(
            "--all-cells: the scenario has {} cells, more than a bisection judges together ({}); narrow with --only",
            cells.len(),
            super::log::MAX_CELLS
        ))),
        None if all => Ok(cells),
        None => Err(InputError::anyhow(format!(
            "the scenario has {} cells: name the one judged with --cell ID, judge them all (Holm-adjusted) with \
             --all-cells, or narrow with --only: {}",
            cells.len(),
            crate::text::some_of(&ids.iter().map(String::as_str).collect::<Vec<_>>(), 20)
        ))),
    }
}

/// What the log calls the judged cells: the one id, or every id joined by `, `.
pub fn cells_name(cells: &[Cell]) -> String {
    cells.iter().map(Cell::id).collect::<Vec<_>>().join(", ")
}

/// The log a new bisection starts with.
pub fn new_log(s: &Scenario, cells: &[Cell], spec: &CompareSpec, seed: u64, kernels: &[KernelSpec]) -> BisectLog {
    // The metric the paired verdict reads, at the threshold a pair group decides with.
    let answers = crate::workload::kind::of(&s.workload);
    let metric = answers.kind().default_metric().name();
    let threshold = cells.iter().map(|c| answers.pair_threshold(&s.gate, &c.params)).fold(f64::INFINITY, f64::min);
    BisectLog {
        schema: BISECT_SCHEMA_VERSION,
        scenario: s.name.clone(),
        cell: cells_name(cells),
        cells: if cells.len() > 1 { cells.iter().map(Cell::id).collect() } else { Vec::new() },
        metric: metric.into(),
        threshold,
        min_pairs: spec.min_pairs,
        max_pairs: spec.max_pairs,
        seed,
        candidates: kernels.iter().map(record).collect(),
        started: crate::results::now_rfc3339(),
        steps: Vec::new(),
        conclusion: None,
        culprit: None,
        git: None,
    }
}

/// A kernel as the log keeps it.
pub fn record(k: &KernelSpec) -> CandidateRecord {
    CandidateRecord {
        label: k.label.clone(),
        image: k.image.display().to_string(),
        modules: k.modules.as_ref().map(|m| m.display().to_string()),
        cmdline: k.cmdline.clone(),
        memory: k.memory,
        cpus: k.cpus,
        commit: None,
    }
}

/// A kernel back from the log (a resumed bisection boots what it started with).
pub fn spec(c: &CandidateRecord) -> KernelSpec {
    KernelSpec {
        label: c.label.clone(),
        image: c.image.clone().into(),
        modules: c.modules.as_ref().map(Into::into),
        cmdline: c.cmdline.clone(),
        memory: c.memory,
        cpus: c.cpus,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(dir: &Path, label: &str, cmdline: &str) -> KernelSpec {
        let image = dir.join("vmlinuz");
        std::fs::write(&image, b"image").unwrap();
        let mut k = crate::qemu::parse_kernel_arg(&format!("{label}={}", image.display())).unwrap();
        k.cmdline = cmdline.into();
        k
    }

    fn refusal(kernels: &[KernelSpec]) -> String {
        let e = check_candidates(kernels).unwrap_err();
        assert!(e.downcast_ref::<InputError>().is_some(), "not bad input: {e:#}");
        format!("{e:#}")
    }

    #[test]
    fn lists_that_cannot_be_bisected_are_refused_naming_why() {
        let d = tempfile::tempdir().unwrap();
        let a = kernel(d.path(), "A", "");
        assert!(refusal(std::slice::from_ref(&a)).contains("two or more"));
        assert!(
            refusal(&[a.clone(), kernel(d.path(), "B", ""), kernel(d.path(), "C", "")])
                .contains("same kernel booted the same way")
        );
        assert!(refusal(&[a.clone(), a.clone()]).contains("`A` is given twice"));
        let mut gone = kernel(d.path(), "G", "x");
        gone.image = d.path().join("missing");
        assert!(refusal(&[a.clone(), gone]).contains("cannot read image"));
        // The same image under another command line is another candidate.
        check_candidates(&[a, kernel(d.path(), "Z", "slub_debug=FZPU")]).unwrap();
    }

    #[test]
    fn a_kernels_file_lists_candidates_relative_to_itself() {
        let d = tempfile::tempdir().unwrap();
        let list = d.path().join("kernels.txt");
        std::fs::write(&list, "# good first\nV0=k/vmlinuz\n\nV1=k/vmlinuz,cmdline=slub_debug=FZPU\n").unwrap();
        let ks = read_list(&list).unwrap();
        assert_eq!(ks.iter().map(|k| k.label.as_str()).collect::<Vec<_>>(), ["V0", "V1"]);
        assert_eq!(ks[0].image, d.path().join("k/vmlinuz"));
        assert_eq!(ks[1].cmdline, "slub_debug=FZPU");
        std::fs::write(&list, "V0=k/vmlinuz\nnot a kernel\n").unwrap();
        let e = format!("{:#}", read_list(&list).unwrap_err());
        assert!(e.contains("line 2"), "{e}");
    }

    #[test]
    fn several_cells_need_cell_and_one_is_taken_as_it_is() {
        let s = crate::scenario::parse_str(
            "schema = 1\nname = \"b\"\n[matrix]\nfs = [\"ext4\"]\ntest = [\"chown\", \"open_close\"]\n[backing]\n\
             kind = \"dir\"\npath = \"/tmp\"\n[workload]\nkind = \"lat_fs\"\n",
            "b.toml",
        )
        .unwrap();
        let cells = crate::plan::expand(&s).cells;
        let e = pick_cell(cells.clone(), None, false).unwrap_err();
        assert!(format!("{e:#}").contains("--cell") && format!("{e:#}").contains("--all-cells"), "{e:#}");
        let one = pick_cell(cells.clone(), Some("ext4-S-qoff-t1-open_close"), false).unwrap();
        assert_eq!(one.len(), 1);
        assert!(format!("{:#}", pick_cell(cells.clone(), Some("nope"), false).unwrap_err()).contains("no such cell"));
        assert_eq!(pick_cell(cells[..1].to_vec(), None, false).unwrap().len(), 1);
        let all = pick_cell(cells.clone(), None, true).unwrap();
        assert_eq!(cells_name(&all), "ext4-S-qoff-t1-chown, ext4-S-qoff-t1-open_close");
    }
}
