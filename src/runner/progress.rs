//! How far a run got: a bar with ETA on a terminal, one line per cell otherwise.

use std::io::IsTerminal;
use std::time::Instant;

use crate::model::{CellResult, CellStatus};
use crate::plan::Cell;

/// What a cell is doing now (`repetition 2/5`), for the progress display.
pub type Phase<'a> = dyn Fn(&str) + 'a;

/// Progress: a bar with ETA on a terminal, one line per cell otherwise (unless --quiet).
/// With several rounds, each line says the round and the total counts cell runs.
pub(super) struct Progress {
    bar: Option<indicatif::ProgressBar>,
    lines: bool,
    total: usize,
    rounds: u32,
    /// What a numbered pass over a cell is called: `round`, or `pair` in a paired run.
    pass: &'static str,
    started: Instant,
    done: std::cell::Cell<usize>,
}

impl Progress {
    /// Progress over `total` cell runs of `rounds` rounds; nothing at all when `quiet`.
    pub(super) fn new(total: usize, rounds: u32, quiet: bool) -> Progress {
        let tty = std::io::stderr().is_terminal();
        let bar = (tty && !quiet).then(|| {
            let bar = indicatif::ProgressBar::new(total as u64);
            let unit = if rounds > 1 { "cell runs" } else { "cells" };
            bar.set_style(
                indicatif::ProgressStyle::with_template(&format!(
                    "{{bar:30}} {{pos}}/{{len}} {unit}, ETA {{eta}}  {{msg}}"
                ))
                .expect("valid template"),
            );
            bar
        });
        Progress { bar, lines: !tty && !quiet, total, rounds, pass: "round", started: Instant::now(), done: 0.into() }
    }

    /// Progress over at most `total` member runs of a paired run whose groups take at most
    /// `max_pairs` pairs: each line says the pair slot (a group may stop early, so the
    /// total is the most it can take).
    pub(super) fn paired(total: usize, max_pairs: u32, quiet: bool) -> Progress {
        Progress { pass: "pair", ..Progress::new(total, max_pairs.max(2), quiet) }
    }

    /// A line of the run's summary (a pair group's end), above the bar or on stderr; said
    /// even when quiet, as the run's final tables are.
    pub(super) fn summary(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(format!("fsbench: {line}")),
            None => eprintln!("fsbench: {line}"),
        }
    }

    /// `round 2/3 ` before a cell's id when there are rounds; nothing otherwise.
    fn round(&self, round: u32) -> String {
        if self.rounds > 1 { format!("{} {}/{} ", self.pass, round + 1, self.rounds) } else { String::new() }
    }

    /// A cell run begins: the bar names it (it provisions first).
    pub(super) fn start(&self, cell: &Cell, round: u32) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!("{}{}: provisioning", self.round(round), cell.id()));
        }
    }

    /// What the cell is doing now, shown after its id on the bar (a log would only fill up).
    pub(super) fn phase(&self, cell: &Cell, round: u32, what: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!("{}{}: {what}", self.round(round), cell.id()));
        }
    }

    /// A cell run is stored: one line with its outcome, above the bar or on its own.
    pub(super) fn finish(&self, cell: &Cell, round: u32, r: &CellResult) {
        self.done.set(self.done.get() + 1);
        let what = match (r.status, &r.latfs, &r.steps) {
            (CellStatus::Ok, Some(l), _) => {
                let why = match l.stopped {
                    Some(crate::model::StopReason::CiTarget) => ", CI target reached",
                    Some(crate::model::StopReason::MaxRepetitions) => ", CI target not reached by max",
                    Some(crate::model::StopReason::RerunBudget) => ", rerun budget spent",
                    _ => "",
                };
                let reruns = if l.reruns > 0 { format!(", {} disturbed rerun", l.reruns) } else { String::new() };
                // With rounds, the statistics are over the rounds so far (their means).
                let over = match l.rounds_done() {
                    0 | 1 => crate::text::plural(l.total_loops.n, "repetition", "repetitions"),
                    k => format!("{} rounds, {} repetitions", k, l.repetitions.iter().filter(|r| r.counts()).count()),
                };
                // One sample has no spread: a cv of 0.0% would claim a perfectly steady cell.
                let cv =
                    if l.total_loops.n > 1 { format!("cv {:.1}%, ", l.total_loops.cv * 100.0) } else { String::new() };
                format!("ok, {:.1} loops/ms ({cv}{over}{why}{reruns})", l.total_loops.median)
            }
            (CellStatus::Ok, _, Some(st)) => format!("ok, {} iterations", st.iterations.len()),
            (CellStatus::Ok, _, _) => "ok".into(),
            (CellStatus::Skipped, _, _) => {
                format!("skipped: {}", r.skip.as_ref().map(|s| s.reason.as_str()).unwrap_or(""))
            }
            (CellStatus::Failed, _, _) => format!("FAILED: {}", r.error.as_deref().unwrap_or("")),
            (CellStatus::Disturbed, _, _) => format!("DISTURBED: {}", r.notes.last().map(String::as_str).unwrap_or("")),
        };
        let line = format!("[{}/{}] {}{}: {what}", self.done.get(), self.total, self.round(round), cell.id());
        match &self.bar {
            // Every cell's result stays on the terminal above the bar, not only failures.
            Some(bar) => {
                bar.println(line);
                bar.inc(1);
            }
            None if self.lines => eprintln!("{line}"),
            None => {}
        }
    }

    /// The run's cells are through: the bar goes, and a line with the count and the time stays.
    pub(super) fn done(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        // The total stays too: on a terminal the bar that carried it is gone.
        if (self.lines || self.bar.is_some()) && self.done.get() > 0 {
            let what = if self.pass == "pair" {
                format!("{} pair members", self.done.get())
            } else if self.rounds > 1 {
                format!("{} cell runs ({} rounds)", self.done.get(), self.rounds)
            } else {
                crate::text::cell_count(self.done.get())
            };
            eprintln!("fsbench: {what} in {}", crate::text::human_duration(self.started.elapsed()));
        }
    }
}
