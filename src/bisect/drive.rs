//! A bisection from start (or resume) to conclusion: the search of [`super::search`] with
//! every finished step appended to the bisect log and the log stored at once, one line per
//! step on stderr, and the conclusion stored at the end. Also the bisection directory
//! (`<out>/<scenario>/bisect-<time>/`, made through the result store) and the summary
//! text (pure).

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use super::log::{self, BisectLog};
use super::search::{Conclusion, Search, StepJudge, StepRecord, bisect};
use crate::results::safe;

/// An open bisection directory.
pub struct BisectDir {
    /// Its path, as shown.
    pub path: PathBuf,
    /// Its fd: the log is written beneath it.
    pub fd: OwnedFd,
}

/// Make a new bisection directory `<out>/<scenario>/bisect-<YYYYmmddTHHMMSSZ>` (or `-2`, … when
/// taken), every directory on the way made or checked as run directories are.
pub fn create_dir(out: &Path, scenario: &str) -> anyhow::Result<BisectDir> {
    let scenario_dir = out.join(scenario);
    std::fs::create_dir_all(out).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", out.display()))?;
    let root = safe::open_dir(out).map_err(|e| anyhow::anyhow!("cannot open {}: {e}", out.display()))?;
    let parent = safe::ensure_subdir(&root, scenario, &scenario_dir)
        .map_err(|e| anyhow::anyhow!("cannot open {}: {e}", scenario_dir.display()))?;
    let stamp = crate::results::now_rfc3339().replace(['-', ':'], "");
    let base = format!("bisect-{stamp}");
    for n in 1..100 {
        let name = if n == 1 { base.clone() } else { format!("{base}-{n}") };
        match safe::create_subdir(&parent, &name) {
            Ok(fd) => return Ok(BisectDir { path: scenario_dir.join(name), fd }),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(anyhow::anyhow!("cannot create {}: {e}", scenario_dir.join(name).display())),
        }
    }
    anyhow::bail!("cannot create a bisection directory in {}: 99 taken", scenario_dir.display())
}

/// Open an existing bisection directory to resume it: a real directory of this user's,
/// holding a readable bisect log. Errors are bad input.
pub fn open_dir(dir: &Path) -> anyhow::Result<(BisectDir, BisectLog)> {
    let bad = |why: String| crate::exit::InputError::anyhow(format!("--resume {}: {why}", dir.display()));
    let fd = safe::open_dir_nofollow(dir).map_err(|e| bad(e.to_string()))?;
    safe::check_owned(&fd, dir).map_err(|e| bad(e.to_string()))?;
    let log = log::load(dir).map_err(|e| bad(e.to_string()))?;
    let log = log.ok_or_else(|| bad(format!("no {} here: not a bisection directory", log::LOG_FILE)))?;
    Ok((BisectDir { path: dir.to_path_buf(), fd }, log))
}

/// Run (or go on with) the bisection of `log` with `judge`, storing the log in `dir` after
/// every step and at the end. Returns the conclusion (also set in the log).
pub fn run(judge: &mut dyn StepJudge, log: &mut BisectLog, dir: &BisectDir, quiet: bool) -> anyhow::Result<Conclusion> {
    log::store(&dir.fd, &dir.path, log)?;
    let done = log.steps.clone();
    let mut steps = std::mem::take(&mut log.steps);
    let labels: Vec<String> = log.candidates.iter().map(|c| c.label.clone()).collect();
    let conclusion = {
        let mut record = |s: &StepRecord| -> anyhow::Result<()> {
            steps.push(s.clone());
            let mut now = log.clone();
            now.steps.clone_from(&steps);
            log::store(&dir.fd, &dir.path, &now)?;
            if !quiet {
                eprintln!("fsbench: bisect step {}: {}", steps.len(), step_line(s, &labels));
            }
            Ok(())
        };
        bisect(labels.len(), &mut Search { judge, done: &done, record: &mut record })
    };
    log.steps = steps;
    let conclusion = conclusion?;
    if conclusion == Conclusion::Interrupted {
        log.conclusion = None;
        log.culprit = None;
    } else {
        log.conclude(conclusion.clone());
    }
    log::store(&dir.fd, &dir.path, log)?;
    Ok(conclusion)
}

/// One step in a line: `V4 against V0: bad, ratio 0.903 [0.871, 0.936] (99%), 14 pairs, 3m12s`,
/// and where its run's arms were profiled, their largest change (`; profile: check_object +46.6 pp`).
pub fn step_line(s: &StepRecord, labels: &[String]) -> String {
    let label = |i: usize| labels.get(i).map_or("?", String::as_str);
    let m = &s.measure;
    let dropped = if m.dropped > 0 { format!(" (+{} dropped)", m.dropped) } else { String::new() };
    let why = m.reason.as_deref().map(|r| format!("; {}", crate::text::escape_control(r))).unwrap_or_default();
    let profile = m.profile.as_ref().and_then(|p| p.headline()).map(|h| format!("; profile: {h}")).unwrap_or_default();
    format!(
        "{} against {}: {}, ratio {} ({:.1}%), {} pairs{dropped}, {}{why}{profile}",
        crate::text::escape_control(label(s.candidate)),
        crate::text::escape_control(label(s.baseline)),
        m.verdict.name(),
        m.ratio_text(),
        m.level * 100.0,
        m.pairs,
        crate::text::human_duration(std::time::Duration::from_secs_f64(s.seconds)),
    )
}

/// A step judged over several cells (`--all-cells`): one line per cell, its Holm-adjusted
/// verdict, its own paired verdict, ratio, pairs and adjusted p; none with one cell.
pub fn cell_lines(s: &StepRecord) -> Vec<String> {
    s.measure
        .cells
        .iter()
        .map(|c| {
            format!(
                "{}: {} ({}), ratio {}, {} pairs, Holm p {} (threshold {:.1}%)",
                crate::text::escape_control(&c.cell),
                c.measure.verdict.name(),
                crate::text::escape_control(&c.measure.paired_verdict),
                c.measure.ratio_text(),
                c.measure.pairs,
                p_text(c.p_holm),
                c.threshold * 100.0
            )
        })
        .collect()
}

/// An adjusted p-value for a line: three decimals, `<0.001` below, `-` without one.
pub fn p_text(p: Option<f64>) -> String {
    match p {
        None => "-".into(),
        Some(p) if p < 0.001 => "<0.001".into(),
        Some(p) => format!("{p:.3}"),
    }
}

/// The conclusion in a sentence.
pub fn conclusion_line(log: &BisectLog) -> String {
    let label = |i: usize| crate::text::escape_control(log.label(i));
    match &log.conclusion {
        None => "not finished: interrupted (finish it with `fsbench bisect --resume DIR`)".into(),
        Some(Conclusion::Culprit { candidate }) => {
            let confirm = log.confirmation().map(|i| &log.steps[i]);
            let ratio = confirm.map(|s| format!(": ratio {} against {}", s.measure.ratio_text(), label(s.baseline)));
            format!(
                "first bad: {} (position {} of {}){}",
                label(*candidate),
                candidate + 1,
                log.candidates.len(),
                ratio.unwrap_or_default()
            )
        }
        Some(Conclusion::NoRegression) => format!(
            "no regression between the endpoints: {} is not worse than {} beyond {:.1}%",
            label(log.candidates.len() - 1),
            label(0),
            log.threshold * 100.0
        ),
        Some(Conclusion::EndpointsUndecided) => format!(
            "the endpoints do not differ decidedly ({} against {} stayed undecided after the step's pairs): nothing \
             to bisect; raise --max-pairs or the threshold",
            label(log.candidates.len() - 1),
            label(0)
        ),
        Some(Conclusion::EndpointSkipped) => {
            let why = log.steps.first().and_then(|s| s.measure.reason.clone()).unwrap_or_default();
            format!("an endpoint could not be measured: {}", crate::text::escape_control(&why))
        }
        Some(Conclusion::Narrowed { good, bad, why }) => format!(
            "stopped with the regression between {} (good) and {} (bad): {}",
            label(*good),
            label(*bad),
            crate::text::escape_control(why)
        ),
        Some(Conclusion::Interrupted) => "interrupted".into(),
    }
}

/// The whole log as text: every step, then the conclusion.
pub fn render(log: &BisectLog) -> String {
    let labels: Vec<String> = log.candidates.iter().map(|c| c.label.clone()).collect();
    let mut out = format!(
        "bisect {} cell {} ({}, threshold {:.1}%, {}..{} pairs a step), {} candidates {} .. {}\n",
        crate::text::escape_control(&log.scenario),
        crate::text::escape_control(&log.cell),
        log.metric,
        log.threshold * 100.0,
        log.min_pairs,
        log.max_pairs,
        labels.len(),
        crate::text::escape_control(log.label(0)),
        crate::text::escape_control(log.label(labels.len() - 1)),
    );
    for (i, s) in log.steps.iter().enumerate() {
        out.push_str(&format!("  {:>2}. {:<9} {}\n", i + 1, role(s), step_line(s, &labels)));
        for line in cell_lines(s) {
            out.push_str(&format!("                cell {line}\n"));
        }
    }
    out.push_str(&conclusion_line(log));
    out.push('\n');
    out
}

fn role(s: &StepRecord) -> &'static str {
    match s.role {
        super::search::StepRole::Endpoints => "endpoints",
        super::search::StepRole::Midpoint => "midpoint",
        super::search::StepRole::Culprit => "culprit",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bisect::step::StepVerdict;

    /// Answers from a truth table: bad from position 2 on; stops (a signal) when asked
    /// for `stop_at`.
    struct Scripted {
        stop_at: Option<(usize, usize)>,
    }

    impl StepJudge for Scripted {
        fn judge(&mut self, b: usize, c: usize) -> anyhow::Result<Option<crate::bisect::step::StepMeasure>> {
            if self.stop_at == Some((b, c)) {
                return Ok(None);
            }
            let mut m = crate::bisect::log::tests::sample().steps[0].measure.clone();
            m.verdict = if c >= 2 && b < 2 { StepVerdict::Bad } else { StepVerdict::Good };
            Ok(Some(m))
        }
    }

    #[test]
    fn an_interrupted_bisection_keeps_its_steps_on_disk_and_resumes_to_the_culprit() {
        let out = tempfile::tempdir().unwrap();
        let dir = create_dir(out.path(), "s").unwrap();
        assert!(dir.path.starts_with(out.path().join("s")));
        let mut log = crate::bisect::log::tests::sample();
        log.steps.clear();
        for l in ["D", "E", "F"] {
            let mut c = log.candidates[0].clone();
            c.label = l.into();
            log.candidates.push(c);
        }
        // 6 candidates: endpoints (0,5) bad, midpoint 2 bad, then 1: the signal.
        let c = run(&mut Scripted { stop_at: Some((0, 1)) }, &mut log, &dir, true).unwrap();
        assert_eq!(c, Conclusion::Interrupted);
        let (again, mut stored) = open_dir(&dir.path).unwrap();
        assert_eq!(stored.steps.len(), 2);
        assert_eq!(stored.conclusion, None);
        assert!(render(&stored).contains("not finished"), "{}", render(&stored));
        let c = run(&mut Scripted { stop_at: None }, &mut stored, &again, true).unwrap();
        assert_eq!(c, Conclusion::Culprit { candidate: 2 });
        let (_, last) = open_dir(&dir.path).unwrap();
        assert_eq!(last.culprit.as_deref(), Some("C"));
        assert_eq!(last.steps.len(), 4, "endpoints, 2, 1, then 2 against 1: {:?}", last.steps);
        let text = render(&last);
        assert!(text.contains("first bad: C (position 3 of 6)"), "{text}");
    }

    #[test]
    fn a_step_over_several_cells_is_stored_and_shown_per_cell() {
        use crate::bisect::cells::{CellInput, combine};
        use crate::catalogue::Direction;
        let rule = (0.05, Direction::HigherIsBetter);
        let one = |name: &str, d: &[f64]| {
            let c = crate::stats::paired::change_of_log_ratios(d, 0.01);
            let m = crate::bisect::step::StepMeasure::judge(
                crate::model::pairing::PairStop::Regressed,
                c,
                0.01,
                (d.len() as u32, 0),
                rule,
            );
            CellInput { cell: name.into(), measure: m, rule }
        };
        let mut log = crate::bisect::log::tests::sample();
        log.cell = "a-chown, b-open_close".into();
        log.cells = vec!["a-chown".into(), "b-open_close".into()];
        let flat = [0.01, -0.01, 0.012, -0.011, 0.009, -0.01];
        let slow: Vec<f64> = flat.iter().map(|x| x + 0.7f64.ln()).collect();
        log.steps[0].measure = combine(vec![one("a-chown", &flat), one("b-open_close\x1b[31m", &slow)]);
        let out = tempfile::tempdir().unwrap();
        let dir = create_dir(out.path(), "s").unwrap();
        super::super::log::store(&dir.fd, &dir.path, &log).unwrap();
        let (_, back) = open_dir(&dir.path).unwrap();
        let verdicts = |l: &BisectLog| l.steps[0].measure.cells.iter().map(|c| c.measure.verdict).collect::<Vec<_>>();
        assert_eq!((verdicts(&back), back.cells.clone()), (verdicts(&log), log.cells.clone()));
        assert_eq!(back.steps[0].measure.cells[0].cell, "a-chown");
        let text = render(&log);
        assert!(text.contains("cell a-chown: good (unchanged)"), "{text}");
        assert!(text.contains("cell b-open_close\\u{1b}[31m: bad (regressed)"), "{text}");
        assert!(!text.contains('\x1b'), "{text}");
        let report = crate::bisect::report::render(&back, &[], true);
        assert!(report.contains("## Cells") && report.contains("Holm p"), "{report}");
        assert!(crate::bisect::report::email(&back, &[], "d").contains("cell a-chown: good"));
    }

    #[test]
    fn resuming_a_directory_without_a_log_is_bad_input() {
        let out = tempfile::tempdir().unwrap();
        let e = open_dir(out.path()).err().unwrap();
        assert!(e.downcast_ref::<crate::exit::InputError>().is_some());
        assert!(format!("{e:#}").contains("not a bisection directory"), "{e:#}");
    }
}
