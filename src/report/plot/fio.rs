//! fio charts: one horizontal bar per (run label, cell) of a figure, cells down the y
//! axis (their ids are long), one colour per run label, whiskers for the figure's
//! interval. The report draws two: median IOPS with the 95% confidence interval of the
//! mean, and median p99 completion latency with the repetitions' min..max.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::legend::{self, LegendEntry, Mark};
use super::{PlotError, PlotImage, colors, render_with, svg_only};

/// One bar: a run label's value for a cell, and its whisker (`None`: no whisker, e.g.
/// a single repetition).
#[derive(Debug, Clone, PartialEq)]
pub struct FioBar {
    /// Run label (its colour).
    pub label: String,
    /// Cell id (its row).
    pub cell: String,
    /// Length of the bar.
    pub value: f64,
    /// Whisker from..to.
    pub whisker: Option<(f64, f64)>,
}

/// What one fio chart draws: plain values, built by the report.
#[derive(Debug, Clone, PartialEq)]
pub struct FioChart {
    /// File stem of the PNG/SVG (`fio-iops`).
    pub stem: String,
    /// Caption above the chart.
    pub title: String,
    /// Title of the value axis: what a bar is.
    pub value_desc: String,
    /// What the whiskers are, shown in the legend.
    pub whisker_desc: String,
    /// Run labels in colour order.
    pub labels: Vec<String>,
    /// Cells in row order (top first).
    pub cells: Vec<String>,
    /// The bars.
    pub bars: Vec<FioBar>,
}

/// Plot one fio chart as PNG and SVG.
pub fn plot_fio(c: &FioChart) -> Result<PlotImage, PlotError> {
    render_with(c.stem.clone(), |root| draw_fio(root, c), |root| draw_fio(root, c))
}

/// Only the SVG of one fio chart (for the HTML page).
pub fn svg_fio(c: &FioChart) -> Result<String, PlotError> {
    svg_only(c.stem.clone(), |root| draw_fio(root, c))
}

/// Pixels a cell id may take left of the bars (the longest id's estimate, bounded).
fn label_area(root_width: u32, cells: &[String]) -> u32 {
    let longest = cells.iter().map(|c| c.chars().count()).max().unwrap_or(1) as u32;
    (longest * 8 + 16).clamp(60, root_width * 2 / 5)
}

fn draw_fio<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, c: &FioChart) -> Result<(), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let ncell = c.cells.len().max(1);
    let nlab = c.labels.len().max(1);
    let top = c
        .bars
        .iter()
        .map(|b| b.whisker.map(|(_, hi)| hi.max(b.value)).unwrap_or(b.value))
        .filter(|x| x.is_finite())
        .fold(0.0f64, f64::max);
    let xmax = if top > 0.0 { top * 1.12 } else { 1.0 };
    let mut entries: Vec<LegendEntry> = c
        .labels
        .iter()
        .enumerate()
        .map(|(k, l)| LegendEntry { label: l.clone(), color: colors(k), mark: Mark::Bar })
        .collect();
    if c.bars.iter().any(|b| b.whisker.is_some()) {
        entries.push(LegendEntry { label: format!("whiskers: {}", c.whisker_desc), color: BLACK, mark: Mark::Line(1) });
    }
    let area = legend::below(&root, &entries, 15)?;
    // Row i of the cells is drawn at y = ncell - 1 - i, so the first cell is at the top.
    let rows: Vec<String> = c.cells.iter().rev().cloned().collect();
    let mut chart = ChartBuilder::on(&area)
        .caption(&c.title, ("sans-serif", 24))
        .margin(15)
        .x_label_area_size(50)
        .y_label_area_size(label_area(area.dim_in_pixel().0, &c.cells))
        .build_cartesian_2d(0f64..xmax, -0.5f64..(ncell as f64 - 0.5))
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .y_labels(ncell)
        .y_label_formatter(&|y| super::category_label(*y, &rows))
        .disable_y_mesh()
        .light_line_style(WHITE.mix(0.0))
        .x_desc(c.value_desc.as_str())
        .x_label_formatter(&|x| if xmax >= 20.0 { format!("{x:.0}") } else { format!("{x:.2}") })
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .draw()
        .map_err(|x| e(&x))?;
    let height = 0.8 / nlab as f64;
    for (k, label) in c.labels.iter().enumerate() {
        let color = colors(k);
        // Within a cell's row, the first label on top.
        let placed: Vec<(f64, &FioBar)> = c
            .bars
            .iter()
            .filter(|b| &b.label == label && b.value.is_finite())
            .filter_map(|b| {
                let i = c.cells.iter().position(|x| *x == b.cell)?;
                Some(((ncell - 1 - i) as f64 + 0.4 - (k as f64 + 0.5) * height, b))
            })
            .collect();
        chart
            .draw_series(placed.iter().map(|(y, b)| {
                Rectangle::new([(0.0, y - height * 0.42), (b.value.max(0.0), y + height * 0.42)], color.filled())
            }))
            .map_err(|x| e(&x))?;
        chart
            .draw_series(placed.iter().filter_map(|(y, b)| {
                let (lo, hi) = b.whisker.filter(|(lo, hi)| lo.is_finite() && hi.is_finite())?;
                Some(ErrorBar::new_horizontal(*y, lo.max(0.0), b.value, hi, BLACK.stroke_width(1), 8))
            }))
            .map_err(|x| e(&x))?;
    }
    root.present().map_err(|x| e(&x))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(labels: &[&str]) -> FioChart {
        let cells = vec!["ext4-S-qoff-t1-bs=4k".to_string(), "xfs-S-qoff-t1-bs=4k".to_string()];
        let bars = labels
            .iter()
            .flat_map(|l| {
                cells.iter().enumerate().map(move |(i, c)| FioBar {
                    label: l.to_string(),
                    cell: c.clone(),
                    value: 1000.0 * (i + 1) as f64,
                    whisker: (i == 0).then_some((900.0, 1100.0)),
                })
            })
            .collect();
        FioChart {
            stem: "fio-iops".into(),
            title: "fio IOPS per cell".into(),
            value_desc: "median IOPS over undisturbed repetitions".into(),
            whisker_desc: "95% confidence interval of the mean".into(),
            labels: labels.iter().map(|l| l.to_string()).collect(),
            cells,
            bars,
        }
    }

    #[test]
    fn a_fio_chart_renders_with_its_legend_and_axis_title() {
        let c = chart(&["base", "patched"]);
        let img = plot_fio(&c).unwrap();
        assert!(img.png.starts_with(b"\x89PNG") && img.png.len() > 5000, "{} bytes", img.png.len());
        for text in [
            "fio IOPS per cell",
            "median IOPS over undisturbed repetitions",
            "whiskers: 95% confidence interval of the mean",
            "base",
            "patched",
            "xfs-S-qoff-t1-bs=4k",
        ] {
            assert!(img.svg.contains(text), "`{text}` missing from the SVG");
        }
        // Two labels: two colours of bars.
        for k in 0..2 {
            let RGBColor(r, g, b) = colors(k);
            let hex = format!("#{r:02X}{g:02X}{b:02X}");
            assert!(img.svg.to_uppercase().contains(&hex), "colour {hex} of label {k} missing");
        }
        assert_eq!(svg_fio(&c).unwrap(), img.svg);
    }

    #[test]
    fn without_whiskers_the_legend_does_not_mention_them() {
        let mut c = chart(&["run"]);
        c.bars.iter_mut().for_each(|b| b.whisker = None);
        let svg = svg_fio(&c).unwrap();
        assert!(!svg.contains("whiskers"));
        assert!(svg.contains("run"));
    }

    #[test]
    fn an_empty_chart_still_draws() {
        let mut c = chart(&[]);
        c.cells.clear();
        assert!(plot_fio(&c).unwrap().png.starts_with(b"\x89PNG"));
    }
}
