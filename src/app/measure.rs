//! The start and the end of a measuring run, shared by `run` and `bundle run`: the
//! environment preflight, printing the finished run with its exit code, and running
//! every cell under other kernels in qemu.

use crate::exit;

/// How long `run` watches the other processes before it starts.
const PREFLIGHT_SAMPLE: std::time::Duration = std::time::Duration::from_millis(300);

/// The environment preflight of `run` and `bundle run`: sample it, and warn before
/// starting when the machine is visibly busy.
pub fn preflight() -> crate::host::environment::Environment {
    let env = crate::host::environment::Environment::sample(PREFLIGHT_SAMPLE);
    let busy = env.busy_reasons();
    if !busy.is_empty() {
        eprintln!(
            "fsbench: warning: this machine is busy ({}); disturbed repetitions will be rerun or left out, \
             and numbers may not compare with a quiet run (see `fsbench doctor`)",
            busy.join("; ")
        );
    }
    if let Some(c) = env.cpu_steadiness.as_ref().filter(|c| c.cv > crate::host::environment::STEADY_CV) {
        eprintln!(
            "fsbench: note: the same CPU work took {:.1}% more or less time from one {:.0} ms window to the next \
             (a shared host or changing clocks): repetitions cannot agree better than that here",
            c.cv * 100.0,
            c.window_ms
        );
    }
    env
}

/// Print a finished run (its tables, or with `--json` the run-outcome document, and on
/// stderr where it is) and decide the exit code (`--strict` included). `run` and
/// `bundle run` both end here.
pub fn finish_run(o: &crate::runner::RunOutcome, options: &super::run_options::RunOptions) -> i32 {
    let code = super::strict_policy(run_end(o, options.json), o.not_run(), options.strict);
    if options.json {
        print_outcome(code, &[super::output::RunWritten::of(&o.dir, None)]);
    }
    code
}

/// `run --json`'s document: the exit code, and each run directory written with its report.
pub(crate) fn print_outcome(code: i32, runs: &[super::output::RunWritten]) {
    let doc = super::output::RunOutcomeJson {
        schema: super::output::OUTPUT_SCHEMA_VERSION,
        exit: code,
        interrupted: code == exit::INTERRUPTED,
        runs: runs.to_vec(),
    };
    println!("{}", serde_json::to_string_pretty(&doc).expect("the document serializes"));
}

/// The end of a run as the tables (unless `json`) and stderr say it; its exit code.
fn run_end(o: &crate::runner::RunOutcome, json: bool) -> i32 {
    let mut disturbed = None;
    match crate::results::load_run(&o.dir) {
        Ok(run) => {
            if !json {
                print!("{}", crate::report::render_run(&run, crate::report::Format::Table));
            }
            disturbed = disturbed_note(&run.cells);
        }
        Err(e) => eprintln!("fsbench: cannot read back {}: {e}", o.dir.display()),
    }
    eprintln!(
        "fsbench: results in {}{}",
        o.dir.display(),
        match (o.failed, o.skipped) {
            (0, 0) => String::new(),
            (f, s) => format!(" ({f} failed, {s} skipped)"),
        }
    );
    if let Some(note) = disturbed {
        eprintln!("fsbench: {note}");
    }
    if o.interrupted {
        eprintln!("fsbench: interrupted; finish it with `fsbench run --resume {}`", o.dir.display());
        return exit::INTERRUPTED;
    }
    if o.measured == o.without_statistics && o.not_run() > 0 && o.previously_done == 0 {
        // Skips are normal in a run that measured something; a run that gave no number
        // at all (every cell skipped, or disturbed throughout) must not pass a CI job.
        if o.without_statistics > 0 {
            eprintln!(
                "fsbench: no cell produced a number: {} skipped, {} without statistics (every repetition disturbed; see the notes above)",
                o.skipped, o.without_statistics
            );
        } else {
            eprintln!(
                "fsbench: no cell could run on this host, this run measured nothing (see the reasons above); \
                 `latest` passes over it"
            );
        }
        return exit::FAILURE;
    }
    if o.failed > 0 { exit::FAILURE } else { exit::SUCCESS }
}

/// A share of disturbed repetitions (or steps) from which the summary names the knobs.
const MANY_DISTURBED: f64 = 0.2;

/// What share of the run's lat_fs repetitions and timed steps other processes disturbed,
/// and, when that share is large, which knobs decide what happens to them; `None` when
/// nothing was disturbed.
pub fn disturbed_note(cells: &[crate::model::CellResult]) -> Option<String> {
    let is_disturbed = |d: &Option<crate::model::Disturbance>| d.as_ref().is_some_and(|d| d.disturbed);
    let mut total = 0;
    let mut disturbed = 0;
    let mut latfs = false;
    for c in cells {
        if let Some(l) = &c.latfs {
            latfs = true;
            total += l.repetitions.len();
            disturbed += l.repetitions.iter().filter(|r| is_disturbed(&r.disturbance)).count();
        }
        if let Some(s) = &c.steps {
            for t in s.iterations.iter().flatten() {
                total += 1;
                disturbed += usize::from(is_disturbed(&t.disturbance));
            }
        }
    }
    disturbed_share_note(disturbed, total, latfs)
}

/// [`disturbed_note`] from its counts: `disturbed` of `total` lat_fs repetitions (or timed steps).
fn disturbed_share_note(disturbed: usize, total: usize, latfs: bool) -> Option<String> {
    if disturbed == 0 || total == 0 {
        return None;
    }
    let share = disturbed as f64 / total as f64;
    let what = if latfs { "repetitions" } else { "timed steps" };
    let mut note = format!(
        "{disturbed} of {total} {what} ({:.0}%) were disturbed by other processes using the CPUs{}",
        share * 100.0,
        if latfs {
            " (rerun after waiting for a quiet window, or left out of the statistics)"
        } else {
            " (left out of the statistics)"
        }
    );
    if share >= MANY_DISTURBED {
        // Steps are not rerun: only the threshold (and a quieter host) helps them.
        let reruns = if latfs { "allow more reruns (`--set workload.max_reruns=N`, default 3) or " } else { "allow " };
        note.push_str(&format!(
            "; on a shared host, run when it is quiet, or {reruns}more foreign CPU per window \
             (`--set workload.disturbance=50%`; `off` keeps every sample)"
        ));
    }
    Some(note)
}

/// A run under other kernels in qemu, as `run --kernel` and `bundle run` (with
/// `[[kernels]]`) ask for it.
pub(crate) struct KernelRun<'a> {
    /// The scenario, loaded once.
    pub scenario: &'a crate::scenario::Scenario,
    /// The kernels, in their order (the first is a paired run's baseline).
    pub kernels: &'a [crate::scenario::KernelSpec],
    /// `--only` filters other than `kernel=`.
    pub only: &'a [String],
    /// Where results and mounts go, and how the run reports.
    pub options: &'a super::run_options::RunOptions,
    /// Whether `--allow-device` was given.
    pub allow_device: bool,
}

/// Every cell under each kernel in qemu, one ordinary run directory per kernel, each
/// reported; shared by `run` (--kernel, [[kernels]]) and `bundle run --allow-kernels`.
pub(crate) fn run_under_kernels(run: &KernelRun<'_>, order: crate::runner::CellOrder) -> anyhow::Result<i32> {
    let KernelRun { scenario, kernels, only, options, allow_device } = *run;
    let (out, quiet) = (options.out.as_path(), options.quiet);
    let qemu_bin = crate::qemu::prepare(scenario, kernels, allow_device)?;
    // Validate the plan (and --only) on the host, before any boot.
    let plan = crate::plan::plan_for(scenario, only)?;
    let req = crate::qemu::KernelsRequest {
        scenario,
        kernels,
        only,
        order,
        cells: plan.cells.len(),
        out,
        quiet,
        profile: true,
    };
    let mut worst = exit::SUCCESS;
    // qemu's scratch is journaled under the same work root as a host run's.
    crate::provision::workroot::set_scratch_root(&options.workroot());
    let runs = crate::qemu::run_kernels(&req, &qemu_bin)?;
    for k in &runs {
        let code = match &k.end {
            Ok(crate::qemu::GuestEnd::Interrupted) => exit::INTERRUPTED,
            Ok(crate::qemu::GuestEnd::Exited(code)) => *code,
            Err(e) => {
                eprintln!("fsbench: kernel {}: {e:#}", k.label);
                exit::FAILURE
            }
        };
        if code != exit::SUCCESS && worst != exit::INTERRUPTED && (worst == exit::SUCCESS || k.end.is_ok()) {
            worst = code;
        }
    }
    let mut skipped = 0;
    let mut written = Vec::new();
    for k in &runs {
        let Some(dir) = &k.dir else { continue };
        if options.json {
            written.push(super::output::RunWritten::of(dir, Some(&k.label)));
        }
        match crate::results::load_run(dir) {
            Ok(run) => {
                // Skipped, or measured without statistics: no number either way.
                skipped += run
                    .cells
                    .iter()
                    .filter(|c| {
                        matches!(c.status, crate::model::CellStatus::Skipped | crate::model::CellStatus::Disturbed)
                    })
                    .count();
                if !options.json {
                    println!("== kernel {} ==", k.label);
                    print!("{}", crate::report::render_run(&run, crate::report::Format::Table));
                }
            }
            Err(e) => eprintln!("fsbench: cannot read back {}: {e}", dir.display()),
        }
        eprintln!("fsbench: kernel {}: results in {}", k.label, dir.display());
    }
    let code = if crate::signals::interrupted() {
        exit::INTERRUPTED
    } else {
        super::strict_policy(worst, skipped, options.strict)
    };
    if options.json {
        print_outcome(code, &written);
    }
    Ok(code)
}

/// One paired run whose arms are `kernels` (the first the baseline), each member one cell
/// in a freshly booted guest; reported like a host run. Refuses (exit 2) before anything
/// boots what a kernel-paired run cannot do ([`crate::runner::kernel_compare`]).
pub(crate) fn run_kernel_pairs(run: &KernelRun<'_>) -> anyhow::Result<i32> {
    let KernelRun { scenario, kernels, only, options, allow_device } = *run;
    let quiet = options.quiet;
    let labels: Vec<String> = kernels.iter().map(|k| k.label.clone()).collect();
    crate::runner::kernel_compare(scenario, &labels)?;
    let qemu_bin = crate::qemu::prepare(scenario, kernels, allow_device)?;
    // Validate the plan (and --only) on the host, before any boot.
    let plan = crate::plan::plan_for(scenario, only)?;
    // qemu's scratch is journaled under the same work root as a host run's.
    crate::provision::workroot::set_scratch_root(&options.workroot());
    let mut members = crate::qemu::member::KernelMembers::new(scenario, kernels, &qemu_bin, quiet);
    let req = crate::runner::KernelPairedRequest {
        scenario,
        cells: &plan.cells,
        labels,
        out: options.out.clone(),
        quiet,
        environment: Some(preflight()),
    };
    let outcome = crate::runner::run_kernel_paired(req, &mut members, &|m| m.recorded())?;
    if outcome.interrupted {
        eprintln!(
            "fsbench: interrupted; the pairs measured so far are in {} (a kernel-paired run is not resumed: run it again)",
            outcome.dir.display()
        );
        if options.json {
            print_outcome(exit::INTERRUPTED, &[super::output::RunWritten::of(&outcome.dir, None)]);
        }
        return Ok(exit::INTERRUPTED);
    }
    Ok(finish_run(&outcome, options))
}

/// Apply `--only kernel=…` to `kernels` (in their order) and return the other `--only`
/// options. A label no kernel has, or `kernel=` without kernels, is an input error.
pub(crate) fn select_kernels(
    only: &[String],
    kernels: &mut Vec<crate::scenario::KernelSpec>,
) -> anyhow::Result<Vec<String>> {
    let (rest, filters) = crate::plan::kernel_filters(only)?;
    if filters.is_empty() {
        return Ok(rest);
    }
    if kernels.is_empty() {
        return Err(exit::InputError::anyhow("--only kernel=… selects among --kernel/[[kernels]], and there are none"));
    }
    let labels: Vec<&str> = kernels.iter().map(|k| k.label.as_str()).collect();
    for l in filters.iter().flatten() {
        if !labels.contains(&l.as_str()) {
            return Err(exit::InputError::anyhow(format!(
                "--only kernel={l}: no kernel is labelled `{}` (kernels: {})",
                crate::text::escape_control(l),
                labels.join(", ")
            )));
        }
    }
    kernels.retain(|k| filters.iter().all(|f| f.contains(&k.label)));
    Ok(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_disturbed_share_names_the_knobs_and_a_small_one_only_the_share() {
        assert_eq!(disturbed_share_note(0, 12, true), None);
        let small = disturbed_share_note(1, 12, true).unwrap();
        assert!(small.starts_with("1 of 12 repetitions (8%) were disturbed"), "{small}");
        assert!(!small.contains("max_reruns"), "{small}");
        let large = disturbed_share_note(12, 20, true).unwrap();
        assert!(large.starts_with("12 of 20 repetitions (60%) were disturbed"), "{large}");
        assert!(large.contains("workload.max_reruns") && large.contains("workload.disturbance"), "{large}");
        let steps = disturbed_share_note(3, 6, false).unwrap();
        assert!(steps.contains("timed steps") && !steps.contains("max_reruns"), "{steps}");
    }
}
