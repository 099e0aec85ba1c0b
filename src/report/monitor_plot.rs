//! Plots of what the monitors saw: the timeline of a steps cell (dirty and writeback
//! memory, device write/read throughput, step boundaries) and the latency CDF of lat_fs.
//!
//! Pure like `plot.rs`: groups in, PNG and SVG bytes out (the HTML report embeds the SVG).
//! Several groups in one timeline overlay them on one clock (each from its own start),
//! which is how a comparison shows two runs' dirty-memory behaviour side by side.

use crate::model::TextFormat;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::monitors::CellLatency;
use super::plot::legend::{self, LegendEntry, Mark};
use super::plot::{PlotError, PlotImage, colors, render_with};
use super::steps::groups::StepsGroup;

/// Dirty, writeback and throughput over time for one or more steps groups (overlaid).
pub fn plot_timeline(stem: String, groups: &[&StepsGroup]) -> Result<PlotImage, PlotError> {
    render_with(stem, |root| draw_timeline(root, groups), |root| draw_timeline(root, groups))
}

/// The cumulative distribution of operation latency, one line per cell.
pub fn plot_latency_cdf(stem: String, title: &str, cells: &[&CellLatency]) -> Result<PlotImage, PlotError> {
    render_with(stem, |root| draw_cdf(root, title, cells), |root| draw_cdf(root, title, cells))
}

/// Seconds, dirty MB, writeback MB of every sample; write and read MB/s between
/// neighbouring samples at least half an interval apart (boundary samples a few ms
/// apart would turn jitter into spikes).
struct Series {
    dirty: Vec<(f64, f64)>,
    writeback: Vec<(f64, f64)>,
    write_mbs: Vec<(f64, f64)>,
    read_mbs: Vec<(f64, f64)>,
}

fn series(g: &StepsGroup) -> Series {
    let mut s = Series { dirty: vec![], writeback: vec![], write_mbs: vec![], read_mbs: vec![] };
    let Some(t) = &g.timeline else { return s };
    let min_dt = (t.interval_ms as f64 / 2.0).max(1.0);
    let mut last: Option<&crate::model::TimelineSample> = None;
    for x in &t.samples {
        let sec = x.t_ms as f64 / 1e3;
        s.dirty.push((sec, x.dirty_kib as f64 * 1024.0 / 1e6));
        s.writeback.push((sec, x.writeback_kib as f64 * 1024.0 / 1e6));
        match last {
            Some(p) if (x.t_ms - p.t_ms) as f64 >= min_dt => {
                let dt = (x.t_ms - p.t_ms) as f64 / 1e3;
                let mid = (p.t_ms + x.t_ms) as f64 / 2e3;
                s.write_mbs.push((mid, x.write_sectors.saturating_sub(p.write_sectors) as f64 * 512.0 / 1e6 / dt));
                s.read_mbs.push((mid, x.read_sectors.saturating_sub(p.read_sectors) as f64 * 512.0 / 1e6 / dt));
                last = Some(x);
            }
            Some(_) => {}
            None => last = Some(x),
        }
    }
    s
}

fn max_y(v: &[(f64, f64)]) -> f64 {
    v.iter().map(|p| p.1).fold(0.0, f64::max)
}

/// The colours of group `gi`'s lines: Dirty, Writeback (a colour of its own: dashes alone
/// are lost where the two lines meet) and device throughput (the Dirty colour when groups
/// are overlaid, where the colour names the group; a third colour for one group).
fn line_colors(gi: usize, groups: usize) -> (RGBColor, RGBColor, RGBColor) {
    let dirty = colors(2 * gi);
    (dirty, colors(2 * gi + 1), if groups == 1 { colors(3) } else { dirty })
}

fn draw_timeline<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, groups: &[&StepsGroup]) -> Result<(), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let all: Vec<Series> = groups.iter().map(|g| series(g)).collect();
    let tmax = all.iter().flat_map(|s| s.dirty.last().map(|p| p.0)).fold(0.0, f64::max).max(0.1);
    let mem_max = all.iter().map(|s| max_y(&s.dirty).max(max_y(&s.writeback))).fold(0.0, f64::max);
    let mem_max = if mem_max > 0.0 { mem_max * 1.15 } else { 1.0 };
    let tp_max = all.iter().map(|s| max_y(&s.write_mbs).max(max_y(&s.read_mbs))).fold(0.0, f64::max);
    let tp_max = if tp_max > 0.0 { tp_max * 1.15 } else { 1.0 };
    let title = match groups {
        [g] => format!("{} {}: dirty memory and device throughput", g.label, g.config),
        _ => format!("{}: dirty memory and device throughput", groups.first().map(|g| g.config.as_str()).unwrap_or("")),
    };
    // The legend goes below the chart: inside it would cover the lines or the step names.
    let mut entries = Vec::new();
    for (gi, g) in groups.iter().enumerate() {
        let name = if groups.len() == 1 { String::new() } else { format!("{} ", g.label) };
        let (dirty, writeback, tp) = line_colors(gi, groups.len());
        entries.push(LegendEntry { label: format!("{name}Dirty MB"), color: dirty, mark: Mark::Line(2) });
        entries.push(LegendEntry { label: format!("{name}Writeback MB"), color: writeback, mark: Mark::Dashed(2) });
        entries.push(LegendEntry { label: format!("{name}write MB/s"), color: tp, mark: Mark::Line(1) });
    }
    let area = legend::below(&root, &entries, 13)?;
    let mut chart = ChartBuilder::on(&area)
        .caption(title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .right_y_label_area_size(70)
        .build_cartesian_2d(0f64..tmax * 1.02, 0f64..mem_max)
        .map_err(|x| e(&x))?
        .set_secondary_coord(0f64..tmax * 1.02, 0f64..tp_max);
    chart
        .configure_mesh()
        .x_desc("seconds since the first step")
        .y_desc("MB (Dirty solid, Writeback dashed)")
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 15))
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(|x| e(&x))?;
    chart
        .configure_secondary_axes()
        .y_desc("device MB/s (write thin, read dotted)")
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 15))
        .draw()
        .map_err(|x| e(&x))?;
    for (gi, (g, s)) in groups.iter().zip(&all).enumerate() {
        let (color, writeback, tp) = line_colors(gi, groups.len());
        // Step boundaries: a light line at every step, a darker one where an iteration starts.
        for (i, it) in g.iterations.iter().enumerate() {
            for (j, st) in it.iter().enumerate() {
                let Some(ms) = st.start_ms else { continue };
                let x = ms as f64 / 1e3;
                let style = if j == 0 { color.mix(0.55).stroke_width(2) } else { color.mix(0.2).stroke_width(1) };
                chart.draw_series(LineSeries::new([(x, 0.0), (x, mem_max)], style)).map_err(|x| e(&x))?;
                if groups.len() == 1 {
                    // Iterations on the top line, steps staggered below it: short steps sit close together.
                    if j == 0 {
                        let at = (x, mem_max * 0.995);
                        chart
                            .draw_series([Text::new(format!("#{}", i + 1), at, ("sans-serif", 13).into_font())])
                            .map_err(|x| e(&x))?;
                    }
                    let at = (x, mem_max * (0.955 - 0.035 * (j % 3) as f64));
                    chart
                        .draw_series([Text::new(
                            st.op.escaped(TextFormat::Terminal).into_owned(),
                            at,
                            ("sans-serif", 11).into_font(),
                        )])
                        .map_err(|x| e(&x))?;
                }
            }
        }
        chart.draw_series(LineSeries::new(s.dirty.iter().copied(), color.stroke_width(2))).map_err(|x| e(&x))?;
        chart
            .draw_series(DashedLineSeries::new(s.writeback.iter().copied(), 6, 4, writeback.stroke_width(2)))
            .map_err(|x| e(&x))?;
        chart
            .draw_secondary_series(LineSeries::new(s.write_mbs.iter().copied(), tp.mix(0.8).stroke_width(1)))
            .map_err(|x| e(&x))?;
        chart
            .draw_secondary_series(DashedLineSeries::new(s.read_mbs.iter().copied(), 2, 3, tp.mix(0.8).stroke_width(1)))
            .map_err(|x| e(&x))?;
    }
    root.present().map_err(|x| e(&x))?;
    Ok(())
}

fn draw_cdf<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    title: &str,
    cells: &[&CellLatency],
) -> Result<(), String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let lo = cells.iter().map(|c| c.dist.min_ns.max(1)).min().unwrap_or(1) as f64 / 1e3;
    let hi = cells.iter().map(|c| c.dist.max_ns.max(2)).max().unwrap_or(2) as f64 / 1e3;
    let (lo, hi) = (lo * 0.8, (hi * 1.25).max(lo * 2.0));
    // HdrHistogram's percentile plot: y = -log10(1 - F), so 90%, 99%, 99.9% are evenly
    // spaced and the tail, which a linear CDF squashes into its top pixel, is readable.
    let curves: Vec<Vec<(f64, f64)>> = cells
        .iter()
        .map(|c| {
            let total = c.dist.count.max(1) as f64;
            let floor = 0.5 / total;
            let mut acc = 0u64;
            c.dist
                .buckets
                .iter()
                .map(|[v, n]| {
                    acc += n;
                    ((*v).max(1) as f64 / 1e3, -(1.0 - acc as f64 / total).max(floor).log10())
                })
                .collect()
        })
        .collect();
    let ytop = curves.iter().flatten().map(|p| p.1).fold(3.0f64, f64::max).ceil();
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d((lo..hi).log_scale(), 0f64..ytop)
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .x_desc("latency of one operation, µs (log scale)")
        .y_desc("percentile (operations at or below)")
        .x_label_formatter(&|x| if *x >= 10.0 { format!("{x:.0}") } else { format!("{x:.2}") })
        .y_labels(ytop as usize + 1)
        .y_label_formatter(&|y| percentile_label(*y))
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 15))
        .draw()
        .map_err(|x| e(&x))?;
    for (ci, (c, pts)) in cells.iter().zip(curves).enumerate() {
        let color = colors(ci);
        chart
            .draw_series(LineSeries::new(pts, color.stroke_width(2)))
            .map_err(|x| e(&x))?
            .label(format!("{} {} (p99 {:.2} µs)", c.label, c.id, c.dist.p99_ns as f64 / 1e3))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
    }
    super::plot::draw_legend(&mut chart, SeriesLabelPosition::UpperLeft, 13)?;
    root.present().map_err(|x| e(&x))?;
    Ok(())
}

/// `0%`, `90%`, `99%`, `99.9%`... at whole numbers of nines; nothing between.
fn percentile_label(y: f64) -> String {
    let n = y.round();
    if (y - n).abs() > 1e-6 || n < 0.0 {
        return String::new();
    }
    match n as u32 {
        0 => "0%".into(),
        1 => "90%".into(),
        2 => "99%".into(),
        k => format!("99.{}%", "9".repeat(k as usize - 2)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Friction 9 of issue 26: Dirty and Writeback were drawn in one colour.
    #[test]
    fn dirty_writeback_and_throughput_have_colours_of_their_own_per_group() {
        for groups in 1..4 {
            let all: Vec<_> = (0..groups).map(|g| line_colors(g, groups)).collect();
            for (d, w, t) in &all {
                assert_ne!(d, w);
                assert!(groups > 1 || (t != d && t != w));
            }
            let mut lines: Vec<_> = all.iter().flat_map(|(d, w, _)| [*d, *w]).collect();
            lines.dedup();
            assert_eq!(lines.len(), 2 * groups, "no two groups share a line colour");
        }
    }

    #[test]
    fn percentile_axis_counts_nines() {
        assert_eq!(percentile_label(0.0), "0%");
        assert_eq!(percentile_label(2.0), "99%");
        assert_eq!(percentile_label(4.0), "99.99%");
        assert_eq!(percentile_label(2.5), "");
    }
}
