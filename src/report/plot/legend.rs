//! A legend drawn in a strip below the chart, outside the plot area, so it can never
//! cover data: entries flow left to right and wrap into as many rows as they need.

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// How an entry's series is drawn, shown beside its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::report) enum Mark {
    /// A solid line of this width.
    Line(u32),
    /// A dashed line of this width.
    Dashed(u32),
    /// A filled box (bars).
    Bar,
}

/// One entry: a series' name, colour and mark.
#[derive(Debug, Clone)]
pub(in crate::report) struct LegendEntry {
    pub label: String,
    pub color: RGBColor,
    pub mark: Mark,
}

const SWATCH: i32 = 26;
const GAP: i32 = 22;

/// Where each entry goes in a strip `width` pixels wide: `(row, x)` per entry, and the
/// number of rows. Text widths come from `text_width`.
fn layout(entries: &[LegendEntry], width: i32, text_width: &dyn Fn(&str) -> i32) -> (Vec<(i32, i32)>, i32) {
    let (mut row, mut x, mut at) = (0, GAP, Vec::new());
    for e in entries {
        let w = SWATCH + 6 + text_width(&e.label);
        if x > GAP && x + w > width - GAP {
            row += 1;
            x = GAP;
        }
        at.push((row, x));
        x += w + GAP;
    }
    (at, if entries.is_empty() { 0 } else { row + 1 })
}

/// Split `root` into the area for the chart (returned) and a strip at its bottom holding
/// `entries`; no strip when there are none.
pub(in crate::report) fn below<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    entries: &[LegendEntry],
    font_size: u32,
) -> Result<DrawingArea<DB, Shift>, String> {
    let font = TextStyle::from(("sans-serif", font_size).into_font());
    let text_width = |s: &str| root.estimate_text_size(s, &font).map(|(w, _)| w as i32).unwrap_or(s.len() as i32 * 8);
    let (w, h) = root.dim_in_pixel();
    let (at, rows) = layout(entries, w as i32, &text_width);
    if rows == 0 {
        return Ok(root.clone());
    }
    let row_h = font_size as i32 + 10;
    let strip_h = rows * row_h + 12;
    let (chart, strip) = root.split_vertically(h as i32 - strip_h);
    let e = |x: &dyn std::fmt::Display| x.to_string();
    for (entry, (row, x)) in entries.iter().zip(at) {
        let y = 6 + row * row_h + row_h / 2;
        let c = entry.color;
        match entry.mark {
            Mark::Line(wd) => strip.draw(&PathElement::new(vec![(x, y), (x + SWATCH, y)], c.stroke_width(wd))),
            Mark::Dashed(wd) => {
                strip.draw(&DashedPathElement::new(vec![(x, y), (x + SWATCH, y)], 6, 4, c.stroke_width(wd)))
            }
            Mark::Bar => strip.draw(&Rectangle::new([(x + 4, y - 6), (x + SWATCH - 4, y + 6)], c.filled())),
        }
        .map_err(|x| e(&x))?;
        strip
            .draw(&Text::new(
                entry.label.clone(),
                (x + SWATCH + 6, y),
                font.clone().pos(Pos::new(HPos::Left, VPos::Center)),
            ))
            .map_err(|x| e(&x))?;
    }
    Ok(chart)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(label: &str) -> LegendEntry {
        LegendEntry { label: label.into(), color: RGBColor(0, 0, 0), mark: Mark::Bar }
    }

    #[test]
    fn entries_wrap_into_rows_within_the_width() {
        let w = |s: &str| 10 * s.len() as i32;
        let entries: Vec<_> = (1..=5).map(|i| entry(&format!("iteration {i}"))).collect();
        let (at, rows) = layout(&entries, 900, &w);
        assert_eq!(rows, 1, "{at:?}");
        let (at, rows) = layout(&entries, 400, &w);
        assert_eq!(rows, 3, "{at:?}");
        assert!(at.iter().all(|(_, x)| *x + SWATCH + 6 + 110 <= 400 - GAP), "{at:?}");
        assert_eq!(layout(&[], 900, &w).1, 0);
        // An entry wider than the strip gets a row of its own, not an endless loop.
        let (at, rows) = layout(&[entry(&"x".repeat(200)), entry("a")], 400, &w);
        assert_eq!((rows, at[1]), (2, (1, GAP)));
    }
}
