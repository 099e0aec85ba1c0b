//! Flame graphs of folded stacks, drawn by `inferno`, for the HTML report.
//!
//! inferno's SVG carries a script (zoom, search) and `onload` handlers. The report's
//! Content-Security-Policy forbids scripts, so the SVG is embedded as an image
//! (`<image href="data:image/svg+xml,...">` inside the figure's own `<svg>`): an SVG
//! used as an image never runs a script, is drawn whole, and the page stays one file.

use super::folded::Folded;

/// Most stacks drawn: the hottest (a stored profile has at most a few thousand).
const MAX_DRAWN_STACKS: usize = 20_000;

/// The flame graph of `f` as an SVG document, `None` when inferno cannot draw it.
pub fn flame_svg(f: &Folded, title: &str) -> Option<String> {
    let lines: Vec<String> =
        f.stacks.iter().take(MAX_DRAWN_STACKS).map(|(frames, n)| format!("{} {n}", frames.join(";"))).collect();
    let mut opt = inferno::flamegraph::Options::default();
    opt.title = title.to_string();
    opt.count_name = "samples".into();
    opt.hash = true;
    opt.deterministic = true;
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut opt, lines.iter().map(String::as_str), &mut out).ok()?;
    String::from_utf8(out).ok()
}

/// `svg` as an image inside a figure `<svg>` of the same size: no script of it can run.
pub fn as_image(svg: &str) -> String {
    let (w, h) = (attr(svg, "width").unwrap_or(1200), attr(svg, "height").unwrap_or(400));
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\">\
         <image width=\"{w}\" height=\"{h}\" href=\"data:image/svg+xml,{}\"/></svg>",
        percent_encode(svg)
    )
}

/// A numeric attribute of the root `<svg>` element (`width="1200"`).
fn attr(svg: &str, name: &str) -> Option<u32> {
    let start = svg.find("<svg")?;
    let root = &svg[start..start + svg[start..].find('>')?];
    let at = root.find(&format!(" {name}=\""))? + name.len() + 3;
    root[at..].split('"').next()?.parse().ok()
}

/// Percent-encode everything but letters, digits and a few safe marks, so that the text
/// is one attribute value whatever it holds.
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 2);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~:/=;,()".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hostile_frame_is_drawn_escaped_and_the_figure_holds_no_markup_of_its_own() {
        let f = Folded {
            stacks: vec![
                (vec!["fsbench".into(), "<script>alert(1)</script>".into(), "\"onload=x".into()], 5),
                (vec!["fsbench".into(), "ext4_write_begin".into()], 3),
            ],
        };
        let svg = flame_svg(&f, "t").unwrap();
        assert!(svg.contains("ext4_write_begin"));
        assert!(!svg.contains("<script>alert"), "inferno escapes frame names");
        let fig = as_image(&svg);
        assert!(fig.starts_with("<svg") && fig.contains("href=\"data:image/svg+xml,"));
        let inner = &fig[fig.find("href=\"").unwrap() + 6..fig.rfind("\"/>").unwrap()];
        assert!(!inner.contains(['<', '>', '"', '\'', '&', ' ']), "{inner:.200}");
    }
}
