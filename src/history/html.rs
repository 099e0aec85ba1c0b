//! The history as one self-contained HTML page: a chart per series (inline SVG) with its
//! change points marked, every point linked to its run's directory, and a paired ratio's
//! interval drawn as a whisker through its point.
//!
//! Pure: the history and each run's link in, text out. The page is the report's
//! ([`crate::report::html::page`]: the same Content-Security-Policy, no script, nothing
//! loaded), and every text from a result file goes through the report's HTML escaper.

use std::fmt::Write as _;
use std::path::{Component, Path};

use super::History;
use super::series::Series;
use crate::report::html::{escape, page};

/// Chart size in SVG units, and its margins (left for the value labels).
const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 190.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 12.0;
const TOP: f64 = 22.0;
const BOTTOM: f64 = 24.0;

/// The page: a run list (number, run linked by `hrefs`, one per run of `h.runs`, label, start,
/// host, `--meta` pairs), then one chart per series, by segment: x the run's number in the
/// whole history, y the values' range (the chart says when that leaves 0 out).
pub fn render_html(h: &History, hrefs: &[String]) -> String {
    let title = format!("History of {}", h.dir.display());
    let mut b = String::new();
    let _ = writeln!(b, "<h1>{}</h1>", escape(&title));
    let changes: usize = h.series.iter().map(|s| s.change_points.len()).sum();
    let _ = writeln!(
        b,
        "<p>{} and {} series; {} found (E-divisive means with a permutation test; the dashed lines).</p>",
        escape(&crate::text::plural(h.runs.len(), "run", "runs")),
        h.series.len(),
        escape(&crate::text::plural(changes, "change point", "change points")),
    );
    for l in &h.left_out {
        let _ = writeln!(b, "<p class=\"note\">left out: {}</p>", escape(l));
    }
    b.push_str("<h2>Runs</h2>\n<table>\n<thead><tr><th>#</th><th>run</th><th>label</th><th>started</th><th>host</th><th>meta</th></tr></thead>\n<tbody>\n");
    for (i, r) in h.runs.iter().enumerate() {
        let pairs: Vec<String> = r.run.meta.meta.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(
            b,
            "<tr><td class=\"num\">{}</td><td><a href=\"{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            i + 1,
            escape(hrefs.get(i).map_or("", String::as_str)),
            escape(&r.name()),
            escape(r.run.meta.label.as_deref().unwrap_or("")),
            escape(&r.run.meta.started),
            escape(&r.run.meta.host.hostname),
            escape(&pairs.join(" ")),
        );
    }
    b.push_str("</tbody>\n</table>\n");
    let segments = h.runs.last().map(|r| r.segment + 1).unwrap_or(1);
    for seg in 0..segments {
        if segments > 1 {
            let first = h.runs.iter().find(|r| r.segment == seg).map(|r| r.name()).unwrap_or_default();
            let _ = writeln!(
                b,
                "<h2>Segment {} (from {}): the scenario changed what is measured</h2>",
                seg + 1,
                escape(&first)
            );
        }
        for s in h.series.iter().filter(|s| s.segment == seg) {
            chart(&mut b, h, s, hrefs);
        }
    }
    page(&title, &b)
}

/// Shortest text of `x` that still shows a few percent.
fn label(x: f64) -> String {
    let a = x.abs();
    if a >= 1000.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.4}")
    }
}

/// One series: a heading, an SVG line chart with a linked circle per point and a dashed line at
/// each change point, and the change points in words.
fn chart(b: &mut String, h: &History, s: &Series, hrefs: &[String]) {
    let v = s.values();
    let better = s.better.better();
    let _ = writeln!(b, "<h3>{} — {}</h3>", escape(&s.cell), escape(&s.metric));
    // A paired ratio's interval is drawn as a whisker: the scale takes it in.
    let ends = s.points.iter().flat_map(|p| p.interval.map_or([p.value, p.value], |(l, h)| [l, h]));
    let (lo, hi) = ends.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), x| (l.min(x), h.max(x)));
    let pad = if hi > lo { (hi - lo) * 0.08 } else { hi.abs().max(1.0) * 0.05 };
    let (lo, hi) = (lo - pad, hi + pad);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    // x is the run's number in the whole history (the run list's `#`), so every chart lines
    // up with its neighbours even where a series misses a run.
    let runs = h.runs.len();
    let x_run =
        |run: usize| if runs > 1 { LEFT + plot_w * run as f64 / (runs - 1) as f64 } else { LEFT + plot_w / 2.0 };
    let x = |i: usize| x_run(s.points[i].run);
    let y = |val: f64| TOP + plot_h * (1.0 - (val - lo) / (hi - lo));
    let _ = writeln!(
        b,
        "<figure>\n<svg class=\"history-chart\" data-points=\"{}\" data-change-points=\"{}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" \
         width=\"{WIDTH}\" height=\"{HEIGHT}\" xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" font-family=\"sans-serif\" font-size=\"11\">",
        v.len(),
        s.change_points.len()
    );
    let _ = writeln!(
        b,
        "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{plot_w}\" height=\"{plot_h}\" fill=\"#fbfcfd\" stroke=\"#d0d7de\"/>"
    );
    for (val, anchor) in [(hi - pad, "hi"), (lo + pad, "lo")] {
        let _ = writeln!(
            b,
            "<text class=\"axis-{anchor}\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#57606a\">{}</text>",
            LEFT - 6.0,
            y(val) + 4.0,
            escape(&label(val))
        );
    }
    let _ = writeln!(b, "<text x=\"{LEFT}\" y=\"14\" fill=\"#57606a\">{} ({})</text>", escape(s.unit), better);
    let _ = writeln!(
        b,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#57606a\">run # 1 to {runs} (as in the run list) →</text>",
        WIDTH - RIGHT,
        HEIGHT - 6.0
    );
    // The scale is the values' range: say so when it leaves 0 out.
    if lo > 0.0 || hi < 0.0 {
        let _ = writeln!(
            b,
            "<text class=\"axis-note\" x=\"{LEFT}\" y=\"{:.1}\" fill=\"#57606a\">y axis from {} to {}, not from 0</text>",
            HEIGHT - 6.0,
            escape(&label(lo)),
            escape(&label(hi))
        );
    }
    for c in &s.change_points {
        let cx = (x(c.index - 1) + x(c.index)) / 2.0;
        let size = match c.change {
            Some(ch) if ch.mean.is_finite() => format!("{:+.1}%", ch.mean * 100.0),
            _ => "?".into(),
        };
        let _ = writeln!(
            b,
            "<line class=\"change-point\" x1=\"{cx:.1}\" x2=\"{cx:.1}\" y1=\"{TOP}\" y2=\"{:.1}\" stroke=\"#d1242f\" \
             stroke-width=\"2\" stroke-dasharray=\"5 3\"/>\n<text x=\"{:.1}\" y=\"{:.1}\" fill=\"#d1242f\">{} p={:.4}</text>",
            TOP + plot_h,
            cx + 4.0,
            TOP + 12.0,
            escape(&size),
            c.p
        );
    }
    let line: Vec<String> = v.iter().enumerate().map(|(i, &val)| format!("{:.1},{:.1}", x(i), y(val))).collect();
    let _ =
        writeln!(b, "<polyline points=\"{}\" fill=\"none\" stroke=\"#0969da\" stroke-width=\"1.5\"/>", line.join(" "));
    for (i, p) in s.points.iter().enumerate() {
        let r = &h.runs[p.run];
        let mut title = format!("{}: {} {}", r.name(), label(p.value), s.unit);
        if let Some((l, hi)) = p.interval {
            let _ = write!(title, " [{}, {}], {} pairs", label(l), label(hi), p.n);
            let _ = writeln!(
                b,
                "<line class=\"interval\" x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{1:.1}\" y2=\"{2:.1}\" stroke=\"#0969da\" \
                 stroke-opacity=\"0.5\" stroke-width=\"1.5\"/>",
                x(i),
                y(l),
                y(hi)
            );
        }
        let _ = writeln!(
            b,
            "<a href=\"{}\"><circle class=\"point\" data-run=\"{}\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"3.5\" fill=\"#0969da\"><title>{}</title></circle></a>",
            escape(hrefs.get(p.run).map_or("", String::as_str)),
            p.run + 1,
            x(i),
            y(p.value),
            escape(&title)
        );
    }
    b.push_str("</svg>\n");
    let seen = match s.detectable {
        Some(_) => format!(
            "; the smallest step the test would find at this noise and length: {}",
            super::render::detectable_text(s.detectable)
        ),
        None => String::new(),
    };
    let caption = if s.change_points.is_empty() {
        format!("{} points, no change point{seen}", v.len())
    } else {
        let each: Vec<String> = s
            .change_points
            .iter()
            .map(|c| {
                let pct = |x: f64| if x.is_finite() { format!("{:+.1}%", x * 100.0) } else { "?".into() };
                let size = c
                    .change
                    .map(|ch| format!("{} [{}, {}]", pct(ch.mean), pct(ch.ci_low), pct(ch.ci_high)))
                    .unwrap_or_else(|| "?".into());
                format!(
                    "change {size}, p={:.4}, between {} and {}",
                    c.p,
                    h.runs[s.points[c.index - 1].run].name(),
                    h.runs[s.points[c.index].run].name()
                )
            })
            .collect();
        format!("{} points; {}{seen}", v.len(), each.join("; "))
    };
    let _ = writeln!(b, "<figcaption>{}</figcaption>\n</figure>", escape(&caption));
}

/// `to` as a relative link from the directory `from` (both absolute, without `..`), each
/// component percent-encoded; a directory link ends in `/`.
pub fn relative_href(from: &Path, to: &Path) -> String {
    let parts = |p: &Path| -> Vec<String> {
        p.components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect()
    };
    let (from, to) = (parts(from), parts(to));
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut out: Vec<String> = std::iter::repeat_n("..".to_string(), from.len() - common).collect();
    out.extend(to[common..].iter().map(|c| percent_encode(c)));
    if out.is_empty() {
        return "./".into();
    }
    format!("{}/", out.join("/"))
}

/// `s` with every byte but ASCII letters, digits and `-._~` as `%XX`.
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_relative_and_encoded() {
        assert_eq!(relative_href(Path::new("/r/out"), Path::new("/r/hist/run 1")), "../hist/run%201/");
        assert_eq!(relative_href(Path::new("/r"), Path::new("/r/hist/a\"<b")), "hist/a%22%3Cb/");
        assert_eq!(relative_href(Path::new("/r"), Path::new("/r")), "./");
    }
}
