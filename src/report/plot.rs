//! Plots: PNG and SVG per table. Pure: a table in, bytes out; `write_*` put them in a directory.
//!
//! lat_fs: total loops/ms (median) against task count, one line per
//! configuration, error bars from the repetitions' min..max. Steps: elapsed
//! seconds per step, one bar per iteration, so a step that slows down on later
//! iterations stands out. Text uses an embedded DejaVu Sans subset
//! (`assets/`), so plotting needs no system fonts.

use crate::model::TextFormat;
use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::compare_steps::{StepTable, StepsComparison};
use super::latfs_tables::LatfsTable;
use super::steps::groups::StepsGroup;

pub(super) mod fio;
pub(super) mod legend;
use legend::{LegendEntry, Mark};

/// DejaVu Sans reduced to Latin-1 punctuation and ASCII (see assets/LICENSE-DejaVu.txt).
static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans-subset.ttf");
static FONT_ONCE: Once = Once::new();

const SIZE: (u32, u32) = (900, 600);

/// Errors while drawing or writing plots.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// plotters failed to draw.
    #[error("drawing {what}: {message}")]
    Draw {
        /// Which plot.
        what: String,
        /// plotters' message.
        message: String,
    },
    /// A plot's file name (made of labels and parameters from result files) is not a plain name.
    #[error(
        "refusing plot name `{0}`: not a plain file name (A-Z a-z 0-9 . _ - +); check the run labels and cell parameters"
    )]
    BadName(String),
    /// A plot file could not be written.
    #[error("{path}: write plot: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// One plot in both formats.
#[derive(Debug, Clone)]
pub struct PlotImage {
    /// File stem (`ext2-M-lat_fs_open_close`).
    pub stem: String,
    /// PNG bytes.
    pub png: Vec<u8>,
    /// SVG text.
    pub svg: String,
}

fn register_font() {
    FONT_ONCE.call_once(|| {
        // The subset is checked in and tested; a failure here is a build defect.
        if plotters::style::register_font("sans-serif", FontStyle::Normal, FONT).is_err() {
            panic!("embedded font assets/DejaVuSans-subset.ttf does not parse");
        }
    });
}

pub(super) fn colors(k: usize) -> RGBColor {
    const C: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
    ];
    C[k % C.len()]
}

/// Plot one lat_fs table.
pub fn plot_latfs(table: &LatfsTable) -> Result<PlotImage, PlotError> {
    // Closures cannot be generic over the backend, so each backend gets its own.
    render_with(table.file_stem(), |root| draw_latfs(root, table), |root| draw_latfs(root, table))
}

/// Plot one steps group: elapsed per step, a bar per iteration.
pub fn plot_steps(group: &StepsGroup) -> Result<PlotImage, PlotError> {
    let stem = format!("{}-{}-steps", group.label, group.config);
    render_with(stem, |root| draw_steps(root, group), |root| draw_steps(root, group))
}

/// Only the SVG of one lat_fs table (for pages that inline their plots; no PNG encoded).
pub fn svg_latfs(table: &LatfsTable) -> Result<String, PlotError> {
    svg_only(table.file_stem(), |root| draw_latfs(root, table))
}

/// Only the SVG of one steps group.
pub fn svg_steps(group: &StepsGroup) -> Result<String, PlotError> {
    svg_only(format!("{}-{}-steps", group.label, group.config), |root| draw_steps(root, group))
}

fn svg_only<B>(stem: String, draw: B) -> Result<String, PlotError>
where
    B: Fn(DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), String>,
{
    register_font();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        draw(root).map_err(|message| PlotError::Draw { what: stem, message })?;
    }
    Ok(svg)
}

/// The series legend every chart here draws: a framed, slightly transparent box at `pos`.
pub(super) fn draw_legend<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    pos: SeriesLabelPosition,
    font_size: u32,
) -> Result<(), String>
where
    DB: DrawingBackend + 'a,
    CT: CoordTranslate,
{
    chart
        .configure_series_labels()
        .position(pos)
        .label_font(("sans-serif", font_size))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.5))
        .draw()
        .map_err(|x| x.to_string())
}

pub fn render_with<A, B>(stem: String, bitmap: A, svg_draw: B) -> Result<PlotImage, PlotError>
where
    A: Fn(DrawingArea<BitMapBackend<'_>, Shift>) -> Result<(), String>,
    B: Fn(DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), String>,
{
    register_font();
    let err = |message: String| PlotError::Draw { what: stem.clone(), message };
    let mut rgb = vec![0u8; (SIZE.0 * SIZE.1 * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area();
        bitmap(root).map_err(err)?;
    }
    let mut png = Vec::new();
    {
        use image::ImageEncoder;
        image::codecs::png::PngEncoder::new(&mut png)
            .write_image(&rgb, SIZE.0, SIZE.1, image::ColorType::Rgb8)
            .map_err(|e| err(e.to_string()))?;
    }
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        svg_draw(root).map_err(err)?;
    }
    Ok(PlotImage { stem, png, svg })
}

fn draw_latfs<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, t: &LatfsTable) -> Result<(), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let n = t.tasks.len().max(1);
    let ymax = t.values.iter().flatten().flatten().map(|p| p.summary.max.max(p.summary.median)).fold(0.0f64, f64::max);
    let ymax = if ymax > 0.0 { ymax * 1.12 } else { 1.0 };
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("{}-{} {}", t.fs, t.layout, t.title()), ("sans-serif", 26))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(80)
        .build_cartesian_2d(-0.4f64..(n as f64 - 0.6), 0f64..ymax)
        .map_err(|x| e(&x))?;
    let tasks = t.tasks.clone();
    chart
        .configure_mesh()
        .x_labels(n)
        .x_label_formatter(&|x| category_label(*x, &tasks))
        .x_desc("tasks (#nr_task)")
        .y_desc("total loops/ms (median; bars: min..max)")
        .y_label_formatter(&|y| if ymax >= 20.0 { format!("{y:.0}") } else { format!("{y:.2}") })
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 17))
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(|x| e(&x))?;
    let k = t.columns.len().max(1);
    let empty = t.columns_without_data();
    for (ci, col) in t.columns.iter().enumerate() {
        // A column with no data (every cell skipped) draws nothing and has no legend entry:
        // the page says so under the chart.
        if empty.contains(&col.name) {
            continue;
        }
        let color = colors(ci);
        // Spread the error bars of different configurations a little so they do not hide each other.
        let dx = (ci as f64 - (k as f64 - 1.0) / 2.0) * 0.025;
        let pts: Vec<(f64, &super::latfs_tables::Point)> =
            t.values.iter().enumerate().filter_map(|(ri, row)| row[ci].as_ref().map(|p| (ri as f64 + dx, p))).collect();
        // One line per run of measured task counts: a line drawn across a row with no
        // value (a skipped cell) or only disturbed ones would show a measurement that was
        // never made; a cell whose every repetition was disturbed is a hollow circle.
        let measured = |ri: usize| t.values[ri][ci].as_ref().filter(|p| !p.all_disturbed);
        let mut segments: Vec<Vec<(f64, f64)>> = Vec::new();
        for ri in 0..t.values.len() {
            match (measured(ri), segments.last_mut()) {
                (Some(p), Some(seg)) if ri > 0 && measured(ri - 1).is_some() => {
                    seg.push((ri as f64 + dx, p.summary.median))
                }
                (Some(p), _) => segments.push(vec![(ri as f64 + dx, p.summary.median)]),
                (None, _) => {}
            }
        }
        if segments.is_empty() {
            // Only disturbed values: still one (empty) line, so the column keeps its legend
            // entry beside its hollow circles.
            segments.push(Vec::new());
        }
        for (si, seg) in segments.iter().enumerate() {
            let drawn =
                chart.draw_series(LineSeries::new(seg.iter().copied(), color.stroke_width(2))).map_err(|x| e(&x))?;
            // The legend names the column once, whatever its number of segments.
            if si == 0 {
                drawn
                    .label(col.name.clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
            }
        }
        chart
            .draw_series(pts.iter().map(|(x, p)| {
                let style = if p.all_disturbed { color.stroke_width(2) } else { color.filled() };
                Circle::new((*x, p.summary.median), 4, style)
            }))
            .map_err(|x| e(&x))?;
        chart
            .draw_series(pts.iter().filter(|(_, p)| p.summary.n > 1 && !p.all_disturbed).map(|(x, p)| {
                ErrorBar::new_vertical(*x, p.summary.min, p.summary.median, p.summary.max, color.stroke_width(1), 8)
            }))
            .map_err(|x| e(&x))?;
    }
    if empty.len() < t.columns.len() {
        draw_legend(&mut chart, legend_corner(t, n, ymax), 15)?;
    }
    if t.values.iter().flatten().flatten().all(|p| p.all_disturbed) {
        // An empty chart reads as a drawing error, and one of disturbed numbers alone as a
        // measurement: say what it shows.
        let (w, h) = root.dim_in_pixel();
        use plotters::style::text_anchor::{HPos, Pos, VPos};
        let style = ("sans-serif", 22).into_font().color(&RED).pos(Pos::new(HPos::Center, VPos::Center));
        root.draw(&Text::new(NOTHING_MEASURED, (w as i32 / 2, h as i32 / 2), style)).map_err(|x| e(&x))?;
    }
    root.present().map_err(|x| e(&x))?;
    Ok(())
}

/// What a lat_fs chart says across its middle when no cell has an undisturbed number.
pub(super) const NOTHING_MEASURED: &str = "no measured values: every cell disturbed (hollow circles) or not measured";

/// The first corner whose area (outer 40% of x, outer 35% of y) holds no point,
/// so the legend does not hide data; upper left when every corner is taken.
fn legend_corner(t: &LatfsTable, n: usize, ymax: f64) -> SeriesLabelPosition {
    let pts: Vec<(f64, f64)> = t
        .values
        .iter()
        .enumerate()
        .flat_map(|(ri, row)| {
            row.iter().flatten().flat_map(move |p| [(ri as f64, p.summary.max), (ri as f64, p.summary.min)])
        })
        .collect();
    let span = (n as f64 - 1.0).max(1.0);
    let free = |left: bool, top: bool| {
        !pts.iter().any(|(x, y)| {
            let in_x = if left { *x <= 0.4 * span } else { *x >= 0.6 * span };
            let in_y = if top { *y >= 0.65 * ymax } else { *y <= 0.35 * ymax };
            in_x && in_y
        })
    };
    [
        (true, true, SeriesLabelPosition::UpperLeft),
        (false, true, SeriesLabelPosition::UpperRight),
        (false, false, SeriesLabelPosition::LowerRight),
        (true, false, SeriesLabelPosition::LowerLeft),
    ]
    .into_iter()
    .find(|(l, t, _)| free(*l, *t))
    .map(|(_, _, p)| p)
    .unwrap_or(SeriesLabelPosition::UpperLeft)
}

fn draw_steps<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, g: &StepsGroup) -> Result<(), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let nsteps = g.iterations.iter().map(|i| i.len()).max().unwrap_or(0).max(1);
    let nit = g.iterations.len().max(1);
    let ymax = g.iterations.iter().flatten().map(|s| s.elapsed_us as f64 / 1e6).fold(0.0f64, f64::max);
    let ymax = if ymax > 0.0 { ymax * 1.15 } else { 1.0 };
    let names: Vec<String> = (0..nsteps)
        .map(|j| {
            g.iterations
                .iter()
                .find_map(|it| it.get(j))
                .map(|s| s.label.escaped(TextFormat::Terminal).into_owned())
                .unwrap_or_default()
        })
        .collect();
    let entries: Vec<LegendEntry> = (0..g.iterations.len())
        .map(|i| LegendEntry { label: format!("iteration {}", i + 1), color: colors(i), mark: Mark::Bar })
        .collect();
    let area = legend::below(&root, &entries, 15)?;
    let mut chart = ChartBuilder::on(&area)
        .caption(format!("{} {}: elapsed per step and iteration", g.label, g.config), ("sans-serif", 24))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5f64..(nsteps as f64 - 0.5), 0f64..ymax)
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .x_labels(nsteps)
        .x_label_formatter(&|x| category_label(*x, &names))
        .disable_x_mesh()
        .y_desc("elapsed seconds")
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 17))
        .draw()
        .map_err(|x| e(&x))?;
    let width = 0.8 / nit as f64;
    for (i, it) in g.iterations.iter().enumerate() {
        let color = colors(i);
        chart
            .draw_series(it.iter().enumerate().map(|(j, s)| {
                let x0 = j as f64 - 0.4 + i as f64 * width;
                Rectangle::new(
                    [(x0 + width * 0.08, 0.0), (x0 + width * 0.92, s.elapsed_us as f64 / 1e6)],
                    color.filled(),
                )
            }))
            .map_err(|x| e(&x))?;
    }
    root.present().map_err(|x| e(&x))?;
    Ok(())
}

/// A compared step: configurations along x, a bar per label (mean over the chosen
/// iterations, whiskers ± one standard deviation), every label on one y axis.
pub fn plot_step_compare(cmp: &StepsComparison, table: &StepTable) -> Result<PlotImage, PlotError> {
    let stem = format!("compare-step{}-{}", table.step + 1, table.label.split_whitespace().next().unwrap_or("step"));
    render_with(stem, |root| draw_step_compare(root, cmp, table), |root| draw_step_compare(root, cmp, table))
}

/// One configuration across labels: elapsed per iteration, one line per (label, step).
pub fn plot_iterations_by_label(config: &str, groups: &[&StepsGroup]) -> Result<PlotImage, PlotError> {
    let stem = format!("compare-{config}-iterations");
    render_with(stem, |root| draw_iterations(root, config, groups), |root| draw_iterations(root, config, groups))
}

fn draw_step_compare<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    cmp: &StepsComparison,
    t: &StepTable,
) -> Result<(), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let ncfg = t.rows.len().max(1);
    let nlab = cmp.labels.len().max(1);
    let ymax = t.rows.iter().flat_map(|r| r.values.iter().flatten()).map(|v| v.mean_s + v.sd_s).fold(0.0f64, f64::max);
    let ymax = if ymax > 0.0 { ymax * 1.2 } else { 1.0 };
    let configs: Vec<String> = t.rows.iter().map(|r| r.config.clone()).collect();
    let entries: Vec<LegendEntry> = cmp
        .labels
        .iter()
        .enumerate()
        .map(|(k, l)| LegendEntry { label: l.clone(), color: colors(k), mark: Mark::Bar })
        .collect();
    let area = legend::below(&root, &entries, 15)?;
    let mut chart = ChartBuilder::on(&area)
        .caption(format!("step {}: {}", t.step + 1, t.label), ("sans-serif", 24))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5f64..(ncfg as f64 - 0.5), 0f64..ymax)
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .x_labels(ncfg)
        .x_label_formatter(&|x| category_label(*x, &configs))
        .disable_x_mesh()
        .x_desc("filesystem")
        .y_desc(format!("elapsed seconds (mean over {} iterations, bars: ±sd)", cmp.iterations))
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 17))
        .draw()
        .map_err(|x| e(&x))?;
    let width = 0.8 / nlab as f64;
    for k in 0..cmp.labels.len() {
        let color = colors(k);
        let bars: Vec<(f64, f64, f64)> = t
            .rows
            .iter()
            .enumerate()
            .filter_map(|(ci, r)| {
                r.values[k].as_ref().map(|v| (ci as f64 - 0.4 + (k as f64 + 0.5) * width, v.mean_s, v.sd_s))
            })
            .collect();
        chart
            .draw_series(
                bars.iter()
                    .map(|(x, m, _)| Rectangle::new([(x - width * 0.42, 0.0), (x + width * 0.42, *m)], color.filled())),
            )
            .map_err(|x| e(&x))?;
        chart
            .draw_series(
                bars.iter().filter(|(_, _, sd)| *sd > 0.0).map(|(x, m, sd)| {
                    ErrorBar::new_vertical(*x, (m - sd).max(0.0), *m, m + sd, BLACK.stroke_width(1), 6)
                }),
            )
            .map_err(|x| e(&x))?;
    }
    root.present().map_err(|x| e(&x))?;
    Ok(())
}

fn draw_iterations<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    config: &str,
    groups: &[&StepsGroup],
) -> Result<(), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let nit = groups.iter().map(|g| g.iterations.len()).max().unwrap_or(0).max(1);
    let nsteps = groups.iter().flat_map(|g| g.iterations.iter().map(Vec::len)).max().unwrap_or(0).max(1);
    let its: Vec<String> = (1..=nit).map(|i| i.to_string()).collect();
    let root = root.titled(&format!("{config}: elapsed per iteration"), ("sans-serif", 24)).map_err(|x| e(&x))?;
    // One legend for every panel, below them all.
    let entries: Vec<LegendEntry> = groups
        .iter()
        .enumerate()
        .map(|(k, g)| LegendEntry { label: g.label.clone(), color: colors(k), mark: Mark::Line(2) })
        .collect();
    let root = legend::below(&root, &entries, 15)?;
    // One panel per step, each with its own y axis (an rm -rf of 2 s beside an untar of
    // 40 s would be flat on a shared one) and one line per label.
    let panels = root.split_evenly((1, nsteps));
    for (j, panel) in panels.iter().enumerate() {
        let step = groups.iter().flat_map(|g| g.iterations.iter()).find_map(|it| it.get(j));
        let name = step.map(|s| s.label.escaped(TextFormat::Terminal).into_owned()).unwrap_or_default();
        let ymax = groups
            .iter()
            .flat_map(|g| g.iterations.iter().filter_map(|it| it.get(j)))
            .map(|s| s.elapsed_us as f64 / 1e6)
            .fold(0.0f64, f64::max);
        let ymax = if ymax > 0.0 { ymax * 1.2 } else { 1.0 };
        let mut chart = ChartBuilder::on(panel)
            .caption(name, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d(-0.3f64..(nit as f64 - 0.7), 0f64..ymax)
            .map_err(|x| e(&x))?;
        chart
            .configure_mesh()
            .x_labels(nit)
            .x_label_formatter(&|x| category_label(*x, &its))
            .x_desc("iteration")
            .y_desc(if j == 0 { "elapsed seconds" } else { "" })
            .label_style(("sans-serif", 13))
            .axis_desc_style(("sans-serif", 15))
            .draw()
            .map_err(|x| e(&x))?;
        for (k, g) in groups.iter().enumerate() {
            let color = colors(k);
            let pts: Vec<(f64, f64)> = g
                .iterations
                .iter()
                .enumerate()
                .filter_map(|(i, it)| it.get(j).map(|s| (i as f64, s.elapsed_us as f64 / 1e6)))
                .collect();
            chart.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2))).map_err(|x| e(&x))?;
            chart.draw_series(pts.iter().map(|p| Circle::new(*p, 4, color.filled()))).map_err(|x| e(&x))?;
        }
    }
    root.present().map_err(|x| e(&x))?;
    Ok(())
}

/// Write `<dir>/<stem>.png` and `<dir>/<stem>.svg` for each plot; returns the paths written.
pub fn write_plots(dir: &Path, plots: &[PlotImage]) -> Result<Vec<PathBuf>, PlotError> {
    // Stems are made of labels and parameters read from result files: never a path.
    if let Some(bad) = plots.iter().find(|p| !crate::text::is_plain_name(&p.stem)) {
        return Err(PlotError::BadName(crate::text::escape_control(&bad.stem)));
    }
    std::fs::create_dir_all(dir).map_err(|source| PlotError::Io { path: dir.to_path_buf(), source })?;
    let mut written = Vec::new();
    for p in plots {
        for (ext, bytes) in [("png", p.png.as_slice()), ("svg", p.svg.as_bytes())] {
            let path = dir.join(format!("{}.{ext}", p.stem));
            std::fs::write(&path, bytes).map_err(|source| PlotError::Io { path: path.clone(), source })?;
            written.push(path);
        }
    }
    Ok(written)
}

/// The label of a categorical x position: `labels[i]` at whole numbers `i`, nothing between.
pub(super) fn category_label<T: ToString>(x: f64, labels: &[T]) -> String {
    let i = x.round();
    if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < labels.len() {
        labels[i as usize].to_string()
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue #38, item 24: a column whose every cell was skipped had a legend entry and no line.
    #[test]
    fn a_column_without_data_is_left_out_of_the_legend() {
        use crate::model::{LatfsTest, Layout, QuotaMode};
        use crate::report::latfs::tables::{Column, Point};
        let column = |label: &str| Column {
            label: label.into(),
            quota: QuotaMode::Off,
            name: format!("{label}-ext4-M-qoff"),
            kernel: None,
            run: label.into(),
        };
        let point = |x: f64| Point {
            summary: crate::stats::summarize(&[x, x * 1.01]),
            samples: vec![x, x * 1.01],
            disturbed: 0,
            repetitions: 2,
            all_disturbed: false,
            rounds: 1,
        };
        let t = LatfsTable {
            fs: "ext4".into(),
            layout: Layout::M,
            test: LatfsTest::Chown,
            columns: vec![column("MEASURED"), column("SKIPPED")],
            tasks: vec![1, 2],
            values: vec![vec![Some(point(100.0)), None], vec![Some(point(180.0)), None]],
            no_result: vec![vec![None, Some("skipped")], vec![None, Some("skipped")]],
        };
        assert_eq!(t.columns_without_data(), vec!["SKIPPED-ext4-M-qoff".to_string()]);
        let svg = svg_latfs(&t).unwrap();
        assert!(svg.contains("MEASURED-ext4-M-qoff"), "{svg}");
        assert!(!svg.contains("SKIPPED"), "{svg}");
    }

    /// Plot stems are made of labels from result files: a label that is a path writes nothing.
    #[test]
    fn a_plot_name_that_is_a_path_is_refused_before_writing() {
        let d = tempfile::tempdir().unwrap();
        let plots = [
            PlotImage { stem: "ok-M-steps".into(), png: vec![1], svg: "<svg/>".into() },
            PlotImage { stem: "../../escape-M-steps".into(), png: vec![1], svg: "<svg/>".into() },
        ];
        let e = write_plots(&d.path().join("p"), &plots).unwrap_err().to_string();
        assert!(e.contains("refusing plot name `../../escape-M-steps`"), "{e}");
        assert!(!d.path().join("p/ok-M-steps.png").exists() && !d.path().join("escape-M-steps.png").exists());
    }
}
