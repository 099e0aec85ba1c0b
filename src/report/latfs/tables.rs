//! lat_fs tables in seed 000's layout: one table per (fs, layout, test), a row
//! per task count, a column per configuration `<label>-<fs>-<layout>-q<off|on>`.

use schemars::JsonSchema;
use serde::Serialize;

use crate::catalogue::Metric;
use crate::model::{CellParams, CellResult, CellStatus, LatfsTest, Layout, QuotaMode, Summary};
use crate::monitor::latency::Percentile;
use crate::results::LoadedRun;
use crate::stats::summarize;

/// One measured point: the summary of `total_loops_per_ms` and its samples.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Point {
    /// Statistics over repetitions (recomputed from `samples` when there are any).
    pub summary: Summary,
    /// `total_loops_per_ms` of every undisturbed repetition, in order; with several rounds,
    /// each round's mean ([`crate::model::round_samples`]).
    pub samples: Vec<f64>,
    /// Repetitions left out because other processes disturbed them.
    #[serde(skip_serializing_if = "is_zero")]
    pub disturbed: usize,
    /// Repetitions measured, disturbed ones included (with rounds, more than `samples`).
    pub repetitions: usize,
    /// Every repetition was disturbed: `summary` is over the disturbed repetitions,
    /// shown marked [`ALL_DISTURBED_MARK`], and `samples` is empty so that no
    /// comparison or gate counts it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub all_disturbed: bool,
    /// Rounds the samples span, as a comparison of separate runs counts them
    /// ([`crate::verdict::rounds_between_runs`]: a paired run's members count as one).
    #[serde(skip)]
    #[schemars(skip)]
    pub rounds: u32,
}

/// The suffix of a number measured only in disturbed repetitions (`1234.5678~`).
pub const ALL_DISTURBED_MARK: &str = "~";

/// `1 task`, `2 tasks`.
fn tasks(n: u32) -> String {
    crate::text::plural(n as usize, "task", "tasks")
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// One column of a table: a label and a quota mode.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Column {
    /// Run label (`BASE`), `run` when the run had none; in a kernel-paired run, the kernel's label.
    pub label: String,
    /// Quota off or on.
    pub quota: QuotaMode,
    /// Header as the seed writes it: `BASE-ext2-M-qoff`.
    pub name: String,
    /// The kernel of a kernel-paired run's column (then also its `label`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// The label of the run the column's cells are from.
    #[serde(skip)]
    #[schemars(skip)]
    pub run: String,
}

/// One seed-style table.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct LatfsTable {
    /// Filesystem type.
    pub fs: String,
    /// Layout.
    pub layout: Layout,
    /// The lat_fs test.
    pub test: LatfsTest,
    /// Columns, label-major then quota (the seed's order).
    pub columns: Vec<Column>,
    /// Task counts, ascending: the rows.
    pub tasks: Vec<u32>,
    /// `values[row][col]`; `None` (`null`) where the cell is missing, skipped or failed.
    pub values: Vec<Vec<Option<Point>>>,
    /// `no_result[row][col]`: why a planned or stored cell has no result (`skipped`,
    /// `failed`, `disturbed`: every repetition, `missing`: planned, no result file), as
    /// the report's "Cells without a result" lists it; `None` for a measured cell.
    #[serde(skip)]
    #[schemars(skip)]
    pub no_result: Vec<Vec<Option<&'static str>>>,
}

impl LatfsTable {
    /// Section title as in the seed: `Results for ext2 mounttype:M`.
    pub fn section(&self) -> String {
        format!("Results for {} mounttype:{}", self.fs, self.layout)
    }

    /// Table title as in the seed: `lat_fs_open_close`.
    pub fn title(&self) -> String {
        format!("lat_fs_{}", self.test.name())
    }

    /// Plot file stem as in the seed: `ext2-M-lat_fs_open_close`.
    pub fn file_stem(&self) -> String {
        format!("{}-{}-lat_fs_{}", self.fs, self.layout, self.test.name())
    }

    /// The names of the columns with no value in any row (every cell missing, skipped or
    /// failed): a chart draws nothing for them and leaves them out of its legend.
    pub fn columns_without_data(&self) -> Vec<String> {
        (0..self.columns.len())
            .filter(|&ci| self.values.iter().all(|row| row.get(ci).is_none_or(Option::is_none)))
            .map(|ci| self.columns[ci].name.clone())
            .collect()
    }

    /// Header row: `#nr_task` and the column names.
    pub fn header(&self) -> Vec<String> {
        std::iter::once("#nr_task".to_string()).chain(self.columns.iter().map(|c| c.name.clone())).collect()
    }

    /// Body rows with medians at four decimals; `-` where there is no value.
    pub fn rows(&self) -> Vec<Vec<String>> {
        self.tasks
            .iter()
            .zip(&self.values)
            .map(|(t, vals)| {
                std::iter::once(t.to_string())
                    .chain(vals.iter().map(|v| v.as_ref().map(Point::median_text).unwrap_or_else(|| "-".into())))
                    .collect()
            })
            .collect()
    }

    /// Body rows of a comparison: as [`LatfsTable::rows`], but a cell without a result (every
    /// repetition disturbed, failed, skipped, missing) shows no number: `-` and the reason,
    /// `- (disturbed)`, as the report's footer lists it.
    pub fn compared_rows(&self) -> Vec<Vec<String>> {
        self.tasks
            .iter()
            .enumerate()
            .map(|(ri, t)| {
                std::iter::once(t.to_string())
                    .chain(self.values[ri].iter().enumerate().map(|(ci, v)| match (self.reason(ri, ci), v) {
                        (Some(why), _) => format!("- ({why})"),
                        (None, Some(p)) => p.median_text(),
                        (None, None) => "-".into(),
                    }))
                    .collect()
            })
            .collect()
    }

    /// Why the cell at `row`, `col` has no result (`disturbed`, `failed`, `skipped`,
    /// `missing`), `None` when it has one or is not a cell of the run.
    pub fn reason(&self, row: usize, col: usize) -> Option<&'static str> {
        let disturbed = self.values[row][col].as_ref().is_some_and(|p| p.all_disturbed).then_some("disturbed");
        self.no_result.get(row).and_then(|r| r.get(col)).copied().flatten().or(disturbed)
    }

    /// Cells whose repetitions spread more than [`NOISY_CV`], as `2 tasks BASE-ext2-M-qoff (CV 38.6%)`.
    pub fn noisy(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (t, vals) in self.tasks.iter().zip(&self.values) {
            for (col, v) in self.columns.iter().zip(vals) {
                if let Some(p) = v.as_ref().filter(|p| p.summary.n > 1 && p.summary.cv > NOISY_CV) {
                    out.push(format!("{} {} (CV {:.1}%)", tasks(*t), col.name, p.summary.cv * 100.0));
                }
            }
        }
        out
    }

    /// Cells with repetitions left out as disturbed, as `2 tasks BASE-ext2-M-qoff (2 of 7)`.
    pub fn disturbed(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (t, vals) in self.tasks.iter().zip(&self.values) {
            for (col, v) in self.columns.iter().zip(vals) {
                if let Some(p) = v.as_ref().filter(|p| p.disturbed > 0 && !p.all_disturbed) {
                    out.push(format!("{} {} ({} of {})", tasks(*t), col.name, p.disturbed, p.repetitions));
                }
            }
        }
        out
    }

    /// Cells shown with [`ALL_DISTURBED_MARK`], as `2 tasks BASE-ext2-M-qoff (3 of 3)`.
    pub fn all_disturbed(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (t, vals) in self.tasks.iter().zip(&self.values) {
            for (col, v) in self.columns.iter().zip(vals) {
                if let Some(p) = v.as_ref().filter(|p| p.all_disturbed) {
                    out.push(format!("{} {} ({} of {})", tasks(*t), col.name, p.disturbed, p.repetitions));
                }
            }
        }
        out
    }

    /// The value of column `col` at task count `tasks`.
    pub fn get(&self, tasks: u32, col: usize) -> Option<&Point> {
        let row = self.tasks.iter().position(|t| *t == tasks)?;
        self.values[row][col].as_ref()
    }
}

impl Point {
    /// The median at four decimals, marked when only disturbed repetitions measured it.
    pub fn median_text(&self) -> String {
        let mark = if self.all_disturbed { ALL_DISTURBED_MARK } else { "" };
        format!("{}{mark}", crate::report::format::fmt4(self.summary.median))
    }
}

/// Why a stored cell of `status` has no result, in the words of the report's footer; `None` when it has one.
fn without_result(status: CellStatus) -> Option<&'static str> {
    match status {
        CellStatus::Ok => None,
        CellStatus::Skipped => Some("skipped"),
        CellStatus::Disturbed => Some("disturbed"),
        CellStatus::Failed => Some("failed"),
    }
}

/// Coefficient of variation above which a cell's repetitions are called noisy in reports.
pub const NOISY_CV: f64 = 0.05;

/// The measured point of a cell, if it ran and measured anything.
pub fn point_of(cell: &CellResult) -> Option<Point> {
    point_by(cell, None)
}

/// The point of a cell for a metric: total loops/ms, or a latency percentile in µs per repetition.
pub fn point_by(cell: &CellResult, metric: Option<Percentile>) -> Option<Point> {
    let latfs = cell.latfs.as_ref()?;
    if cell.status == CellStatus::Disturbed {
        return all_disturbed_point(latfs, metric);
    }
    if cell.status != CellStatus::Ok {
        return None;
    }
    let counted = || latfs.repetitions.iter().filter(|r| r.counts());
    let repetitions = latfs.repetitions.len();
    let disturbed = repetitions - counted().count();
    // The catalogue's samples (undisturbed repetitions, or rounds' means): one quantity for lat_fs.
    let of = |m: Metric| crate::catalogue::samples(cell, m).into_iter().next().map(|q| q.samples).unwrap_or_default();
    if let Some(p) = metric {
        let samples = of(Metric::Latency(p));
        let summary = summarize(&samples);
        let rounds = latfs.rounds_done().max(1);
        return (summary.n > 0).then_some(Point {
            summary,
            samples,
            disturbed,
            repetitions,
            all_disturbed: false,
            rounds,
        });
    }
    let samples = of(Metric::TotalLoops);
    let summary = if samples.is_empty() && disturbed == 0 { latfs.total_loops.clone() } else { summarize(&samples) };
    if summary.n == 0 {
        return None;
    }
    let rounds = latfs.rounds_done().max(1);
    Some(Point { summary, samples, disturbed, repetitions, all_disturbed: false, rounds })
}

/// The point of a cell whose every repetition was disturbed: statistics over all of
/// them, each repetition one value (rounds are not averaged: a number to look at, not
/// to compare), and no samples, so that comparisons and gates leave it out.
fn all_disturbed_point(latfs: &crate::model::LatfsResult, metric: Option<Percentile>) -> Option<Point> {
    let values: Vec<f64> = latfs
        .repetitions
        .iter()
        .filter_map(|r| match metric {
            Some(p) => r.latency_dist.as_ref().map(|d| p.of(d) as f64 / 1e3),
            None => Some(r.total_loops_per_ms),
        })
        .collect();
    let summary = summarize(&values);
    let repetitions = latfs.repetitions.len();
    (summary.n > 0).then_some(Point {
        summary,
        samples: Vec::new(),
        disturbed: repetitions,
        repetitions,
        all_disturbed: true,
        rounds: latfs.rounds_done().max(1),
    })
}

/// Build the tables of several labelled runs, merged: fs and layouts in the
/// order the first run planned them, tests in the seed's order, columns
/// label-major (in the order given) then quota off before on.
pub fn build_tables(runs: &[(&str, &LoadedRun)]) -> Vec<LatfsTable> {
    build_tables_by(runs, None)
}

/// [`build_tables`] with a latency percentile (µs) in place of total loops/ms.
pub fn build_tables_by(runs: &[(&str, &LoadedRun)], metric: Option<Percentile>) -> Vec<LatfsTable> {
    // The column groups: one per run, or, in a kernel-paired run, one per kernel (its
    // cells differ only in the kernel), labelled with the kernel's label.
    let mut groups: Vec<(usize, Option<&str>)> = Vec::new();
    for (li, (_, run)) in runs.iter().enumerate() {
        let planned = run.meta.planned_cells.iter();
        for p in planned.chain(run.cells.iter().map(|c| &c.params)) {
            let g = (li, p.kernel.as_deref());
            if !groups.contains(&g) {
                groups.push(g);
            }
        }
        if !groups.iter().any(|(l, _)| *l == li) {
            groups.push((li, None));
        }
    }
    let group_of = |li: usize, p: &CellParams| groups.iter().position(|g| *g == (li, p.kernel.as_deref()));
    // Index every cell once: (column group, fs, layout, test, quota, tasks) -> cell.
    type Key<'a> = (usize, &'a str, Layout, LatfsTest, QuotaMode, u32);
    let mut index: std::collections::HashMap<Key<'_>, &CellResult> = std::collections::HashMap::new();
    let mut fs_order: Vec<&str> = Vec::new();
    let mut layout_order: Vec<Layout> = Vec::new();
    let mut tests: std::collections::BTreeSet<LatfsTest> = Default::default();
    // Which (group, fs, layout, test, quota) columns exist: planned or stored.
    let mut col_exists: std::collections::HashSet<(usize, &str, Layout, LatfsTest, QuotaMode)> = Default::default();
    let mut tasks_of: std::collections::HashMap<(&str, Layout, LatfsTest), std::collections::BTreeSet<u32>> =
        Default::default();
    // Every cell planned or stored, by its key: one planned but not stored is missing.
    let mut known: std::collections::HashSet<Key<'_>> = Default::default();
    let paired_run: Vec<bool> = runs.iter().map(|(_, r)| crate::report::paired::is_paired(r)).collect();
    for (li, (_, run)) in runs.iter().enumerate() {
        let planned = run.meta.planned_cells.iter();
        let stored = run.cells.iter().map(|c| &c.params);
        for p in planned.chain(stored) {
            let Some(test) = p.test else { continue };
            let Some(gi) = group_of(li, p) else { continue };
            if !fs_order.contains(&p.fs.as_str()) {
                fs_order.push(&p.fs);
            }
            if !layout_order.contains(&p.layout) {
                layout_order.push(p.layout);
            }
            tests.insert(test);
            col_exists.insert((gi, &p.fs, p.layout, test, p.quota));
            known.insert((gi, &p.fs, p.layout, test, p.quota, p.tasks));
            tasks_of.entry((&p.fs, p.layout, test)).or_default().insert(p.tasks);
        }
        for c in &run.cells {
            if let (Some(test), Some(gi)) = (c.params.test, group_of(li, &c.params)) {
                index.insert((gi, &c.params.fs, c.params.layout, test, c.params.quota, c.params.tasks), c);
            }
        }
    }
    let mut tables = Vec::new();
    for fs in &fs_order {
        for layout in &layout_order {
            for test in &tests {
                let Some(tasks) = tasks_of.get(&(*fs, *layout, *test)) else { continue };
                let mut columns = Vec::new();
                let mut keys = Vec::new();
                for (gi, (li, kernel)) in groups.iter().enumerate() {
                    let label = kernel.unwrap_or(runs[*li].0);
                    for quota in [QuotaMode::Off, QuotaMode::On] {
                        if col_exists.contains(&(gi, *fs, *layout, *test, quota)) {
                            columns.push(Column {
                                label: label.to_string(),
                                quota,
                                name: format!("{label}-{fs}-{layout}-{}", quota.seed_name()),
                                kernel: kernel.map(str::to_string),
                                run: runs[*li].0.to_string(),
                            });
                            keys.push((gi, quota));
                        }
                    }
                }
                let tasks: Vec<u32> = tasks.iter().copied().collect();
                let values = tasks
                    .iter()
                    .map(|t| {
                        keys.iter()
                            .map(|(gi, q)| {
                                let paired = paired_run[groups[*gi].0];
                                index.get(&(*gi, *fs, *layout, *test, *q, *t)).and_then(|c| point_by(c, metric)).map(
                                    |p| Point { rounds: crate::verdict::rounds_between_runs(paired, p.rounds), ..p },
                                )
                            })
                            .collect()
                    })
                    .collect();
                let no_result = tasks
                    .iter()
                    .map(|t| {
                        keys.iter()
                            .map(|(gi, q)| match index.get(&(*gi, *fs, *layout, *test, *q, *t)) {
                                Some(c) => without_result(c.status),
                                None => known.contains(&(*gi, *fs, *layout, *test, *q, *t)).then_some("missing"),
                            })
                            .collect()
                    })
                    .collect();
                tables.push(LatfsTable {
                    fs: fs.to_string(),
                    layout: *layout,
                    test: *test,
                    columns,
                    tasks,
                    values,
                    no_result,
                });
            }
        }
    }
    tables
}

/// Seed-exact text of some tables: tab-separated, with the `./images/<stem>.png`
/// line the seed put under each table when `image_prefix` is given.
pub fn seed_text(tables: &[LatfsTable], image_prefix: Option<&str>) -> String {
    let mut out = String::new();
    let mut last_section = String::new();
    for t in tables {
        let section = t.section();
        if section != last_section {
            out.push_str(&format!("{section}\n\n"));
            last_section = section;
        }
        out.push_str(&format!("{}\n\n\n", t.title()));
        out.push_str(&crate::report::format::tab_separated(&t.header(), &t.rows()));
        if let Some(prefix) = image_prefix {
            out.push_str(&format!("\n{prefix}{}.png\n", t.file_stem()));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::LatfsRepetition;

    fn cell(kernel: &str, loops: f64) -> CellResult {
        let params = CellParams {
            fs: "ext4".into(),
            layout: Layout::S,
            quota: QuotaMode::Off,
            tasks: 1,
            test: Some(LatfsTest::Chown),
            fio: Default::default(),
            kernel: Some(kernel.into()),
        };
        let rep = LatfsRepetition { total_loops_per_ms: loops, ..Default::default() };
        CellResult {
            latfs: Some(crate::workload::latfs::result(vec![rep])),
            ..CellResult::new(&params, CellStatus::Ok, "")
        }
    }

    #[test]
    fn a_kernel_paired_run_has_a_column_per_kernel() {
        let cells = vec![cell("BASE", 100.0), cell("NEW", 80.0)];
        let meta = crate::results::RunMeta {
            planned_cells: cells.iter().map(|c| c.params.clone()).collect(),
            ..Default::default()
        };
        let run = LoadedRun { dir: "r".into(), meta, cells, problems: vec![] };
        let tables = build_tables(&[("run", &run)]);
        assert_eq!(tables.len(), 1);
        let names: Vec<&str> = tables[0].columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["BASE-ext4-S-qoff", "NEW-ext4-S-qoff"]);
        // The CSV finds the column's counters by the run's label and the kernel's cell id.
        let c = &tables[0].columns[1];
        assert_eq!((c.kernel.as_deref(), c.run.as_str()), (Some("NEW"), "run"));
        let row: Vec<f64> = tables[0].values[0].iter().map(|v| v.as_ref().unwrap().summary.median).collect();
        assert_eq!(row, [100.0, 80.0]);
    }
}
