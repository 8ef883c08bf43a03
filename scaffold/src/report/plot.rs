//! Inline SVG plots for the HTML report: a value distribution per variant
//! (a box from the quartiles, whiskers to min and max, every cell as a
//! dot, the mean as a diamond) and cost against quality with the Pareto
//! frontier drawn as a staircase.
//!
//! Output is deterministic (dot jitter comes from the cell's position), so
//! reports are byte-stable.

use std::fmt::Write as _;

use super::escape::xml;
use super::fmt::{num, usd};

/// Colours of the variants, in order (cycled).
pub(crate) const PALETTE: &[&str] = &[
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];

/// The colour of the `i`-th variant.
pub(crate) fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// About five round tick values covering `lo..=hi`.
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = hi - lo;
    if !(span.is_finite() && span > 0.0) {
        return vec![lo];
    }
    let raw = span / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= 6.0)
        .unwrap_or(10.0 * mag);
    // Rounding to the step's decimals keeps 0.6000000000000001 out.
    let decimals = (1.0 - step.log10().floor()).clamp(0.0, 12.0) as i32;
    let factor = 10f64.powi(decimals);
    let first = (lo / step - 1e-9).ceil();
    let mut out = Vec::new();
    let mut k = first;
    while k * step <= hi + step * 1e-9 {
        let v = (k * step * factor).round() / factor;
        out.push(if v == 0.0 { 0.0 } else { v });
        k += 1.0;
    }
    out
}

/// A range that is never empty: `lo..hi`, widened when they meet.
fn range(lo: f64, hi: f64) -> (f64, f64) {
    if !(lo.is_finite() && hi.is_finite()) {
        return (0.0, 1.0);
    }
    if hi > lo {
        (lo, hi)
    } else if lo == 0.0 {
        (0.0, 1.0)
    } else {
        let pad = lo.abs() * 0.1;
        (lo - pad, hi + pad)
    }
}

fn quartiles(sorted: &[f64]) -> (f64, f64, f64) {
    let q = |p: f64| {
        let h = (sorted.len() - 1) as f64 * p;
        let lo = h.floor() as usize;
        let hi = (lo + 1).min(sorted.len() - 1);
        sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
    };
    (q(0.25), q(0.5), q(0.75))
}

/// One variant's values for [`distribution`].
pub(crate) struct Series<'a> {
    /// The variant.
    pub name: &'a str,
    /// Its colour index.
    pub index: usize,
    /// One value per cell.
    pub values: Vec<f64>,
}

const WIDTH: f64 = 720.0;
const LEFT: f64 = 170.0;
const RIGHT: f64 = 30.0;
const ROW: f64 = 44.0;
const TOP: f64 = 36.0;
const BOTTOM: f64 = 44.0;

/// The distribution of one measure per variant, as an `<svg>` with `id`.
///
/// `unit_range` fixes the axis to 0..=1 (quality scores) when the values fit.
pub(crate) fn distribution(
    id: &str,
    title: &str,
    axis: &str,
    series: &[Series<'_>],
    unit_range: bool,
) -> String {
    let all: Vec<f64> = series
        .iter()
        .flat_map(|s| s.values.iter().copied())
        .collect();
    let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (lo, hi) = if unit_range && lo >= 0.0 && hi <= 1.0 {
        (0.0, 1.0)
    } else {
        range(lo.min(0.0), hi)
    };
    let height = TOP + BOTTOM + ROW * series.len().max(1) as f64;
    let plot_w = WIDTH - LEFT - RIGHT;
    let x = |v: f64| LEFT + (v - lo) / (hi - lo) * plot_w;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg id="{}" class="plot score-distribution" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" aria-label="{}">"#,
        xml(id),
        xml(title)
    );
    let _ = write!(s, "<title>{}</title>", xml(title));
    let _ = write!(
        s,
        r#"<text class="plot-title" x="{LEFT}" y="20">{}</text>"#,
        xml(title)
    );
    let axis_y = height - BOTTOM;
    for t in ticks(lo, hi) {
        let tx = x(t);
        let _ = write!(
            s,
            r##"<line class="grid" x1="{tx:.1}" y1="{TOP}" x2="{tx:.1}" y2="{axis_y}" stroke="#e5e7eb"/><text class="tick" x="{tx:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            axis_y + 16.0,
            num(t)
        );
    }
    let _ = write!(
        s,
        r##"<line class="axis" x1="{LEFT}" y1="{axis_y}" x2="{:.1}" y2="{axis_y}" stroke="#6b7280"/><text class="axis-label" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
        WIDTH - RIGHT,
        LEFT + plot_w / 2.0,
        height - 8.0,
        xml(axis)
    );
    for (row, serie) in series.iter().enumerate() {
        let cy = TOP + ROW * row as f64 + ROW / 2.0;
        let c = color(serie.index);
        let _ = write!(
            s,
            r#"<g class="series" data-variant="{}"><text class="label" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            xml(serie.name),
            LEFT - 10.0,
            cy + 4.0,
            xml(serie.name)
        );
        if !serie.values.is_empty() {
            let mut sorted = serie.values.clone();
            sorted.sort_by(f64::total_cmp);
            let (q1, med, q3) = quartiles(&sorted);
            let (min, max) = (sorted[0], sorted[sorted.len() - 1]);
            let mean = sorted.iter().sum::<f64>() / sorted.len() as f64;
            let _ = write!(
                s,
                r#"<line class="whisker" x1="{:.1}" y1="{cy:.1}" x2="{:.1}" y2="{cy:.1}" stroke="{c}"/>"#,
                x(min),
                x(max)
            );
            let _ = write!(
                s,
                r#"<rect class="box" x="{:.1}" y="{:.1}" width="{:.1}" height="18" fill="{c}" fill-opacity="0.18" stroke="{c}"/>"#,
                x(q1),
                cy - 9.0,
                (x(q3) - x(q1)).max(1.0)
            );
            let _ = write!(
                s,
                r#"<line class="median" x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{c}" stroke-width="2"/>"#,
                x(med),
                cy - 9.0,
                x(med),
                cy + 9.0
            );
            for (i, v) in serie.values.iter().enumerate() {
                // Deterministic jitter in -6..6 px.
                let jitter = ((i * 7919) % 13) as f64 - 6.0;
                let _ = write!(
                    s,
                    r#"<circle class="dot" cx="{:.1}" cy="{:.1}" r="3" fill="{c}" fill-opacity="0.75"><title>{}</title></circle>"#,
                    x(*v),
                    cy + jitter,
                    num(*v)
                );
            }
            let mx = x(mean);
            let _ = write!(
                s,
                r#"<path class="mean" d="M{mx:.1} {:.1} L{:.1} {cy:.1} L{mx:.1} {:.1} L{:.1} {cy:.1} Z" fill="white" stroke="{c}" stroke-width="1.5"><title>mean {}</title></path>"#,
                cy - 5.0,
                mx + 5.0,
                cy + 5.0,
                mx - 5.0,
                num(mean)
            );
        }
        s.push_str("</g>");
    }
    s.push_str("</svg>");
    s
}

/// One variant in [`cost_quality`].
pub(crate) struct Point<'a> {
    /// The variant.
    pub name: &'a str,
    /// Its colour index.
    pub index: usize,
    /// Mean cost per case, USD.
    pub cost: f64,
    /// Quality (0..=1).
    pub quality: f64,
}

/// The variants not beaten on both cost (lower) and quality (higher), by cost.
pub(crate) fn frontier_2d<'a>(points: &'a [Point<'a>]) -> Vec<&'a Point<'a>> {
    let mut f: Vec<&Point<'_>> = points
        .iter()
        .filter(|p| {
            !points.iter().any(|o| {
                o.cost <= p.cost
                    && o.quality >= p.quality
                    && (o.cost < p.cost || o.quality > p.quality)
            })
        })
        .collect();
    f.sort_by(|a, b| {
        a.cost
            .total_cmp(&b.cost)
            .then(a.quality.total_cmp(&b.quality))
    });
    f
}

/// Cost per case against quality, frontier drawn, as an `<svg>` with `id`.
pub(crate) fn cost_quality(id: &str, quality_label: &str, points: &[Point<'_>]) -> String {
    const H: f64 = 380.0;
    const L: f64 = 70.0;
    const R: f64 = 40.0;
    const T: f64 = 36.0;
    const B: f64 = 50.0;
    let (clo, chi) = range(0.0, points.iter().map(|p| p.cost).fold(0.0, f64::max) * 1.1);
    let (qlo, qhi) = (0.0, points.iter().map(|p| p.quality).fold(1.0, f64::max));
    let pw = WIDTH - L - R;
    let ph = H - T - B;
    let x = |v: f64| L + (v - clo) / (chi - clo) * pw;
    let y = |v: f64| T + ph - (v - qlo) / (qhi - qlo) * ph;
    let title = format!("Cost per case vs {quality_label}");
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg id="{}" class="plot cost-quality" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {H}" width="{WIDTH}" height="{H}" role="img" aria-label="{}">"#,
        xml(id),
        xml(&title)
    );
    let _ = write!(s, "<title>{}</title>", xml(&title));
    let _ = write!(
        s,
        r#"<text class="plot-title" x="{L}" y="20">{}</text>"#,
        xml(&title)
    );
    for t in ticks(clo, chi) {
        let tx = x(t);
        let _ = write!(
            s,
            r##"<line class="grid" x1="{tx:.1}" y1="{T}" x2="{tx:.1}" y2="{:.1}" stroke="#e5e7eb"/><text class="tick" x="{tx:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            T + ph,
            T + ph + 16.0,
            xml(&usd(t))
        );
    }
    for t in ticks(qlo, qhi) {
        let ty = y(t);
        let _ = write!(
            s,
            r##"<line class="grid" x1="{L}" y1="{ty:.1}" x2="{:.1}" y2="{ty:.1}" stroke="#e5e7eb"/><text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            L + pw,
            L - 8.0,
            ty + 4.0,
            num(t)
        );
    }
    let _ = write!(
        s,
        r##"<line class="axis" x1="{L}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#6b7280"/><line class="axis" x1="{L}" y1="{T}" x2="{L}" y2="{:.1}" stroke="#6b7280"/>"##,
        T + ph,
        L + pw,
        T + ph,
        T + ph
    );
    let _ = write!(
        s,
        r#"<text class="axis-label" x="{:.1}" y="{:.1}" text-anchor="middle">mean cost per case (USD)</text><text class="axis-label" transform="translate(16 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
        L + pw / 2.0,
        H - 10.0,
        T + ph / 2.0,
        xml(quality_label)
    );
    let frontier = frontier_2d(points);
    if !frontier.is_empty() {
        // A staircase: from each frontier point right, then up to the next.
        let mut d = String::new();
        for (i, p) in frontier.iter().enumerate() {
            let (px, py) = (x(p.cost), y(p.quality));
            if i == 0 {
                let _ = write!(d, "M{px:.1} {py:.1}");
            } else {
                let _ = write!(d, " H{px:.1} V{py:.1}");
            }
        }
        let _ = write!(
            s,
            r##"<path class="frontier" d="{d}" fill="none" stroke="#111827" stroke-width="1.5" stroke-dasharray="6 4"><title>Pareto frontier (cost, quality)</title></path>"##
        );
    }
    for p in points {
        let on = frontier.iter().any(|f| f.name == p.name);
        let c = color(p.index);
        let (px, py) = (x(p.cost), y(p.quality));
        // Labels of points on the right go to their left, so they stay inside.
        let (lx, anchor) = if px > L + pw * 0.7 {
            (px - 9.0, "end")
        } else {
            (px + 9.0, "start")
        };
        let ly = if py < T + 14.0 { py + 18.0 } else { py - 8.0 };
        let _ = write!(
            s,
            r#"<g class="point{}" data-variant="{}"><circle cx="{px:.1}" cy="{py:.1}" r="6" fill="{}" stroke="{c}" stroke-width="2"><title>{}: {} per case, {} {}</title></circle><text class="label" x="{lx:.1}" y="{ly:.1}" text-anchor="{anchor}">{}</text></g>"#,
            if on { " on-frontier" } else { "" },
            xml(p.name),
            if on { c } else { "white" },
            xml(p.name),
            xml(&usd(p.cost)),
            xml(quality_label),
            num(p.quality),
            xml(p.name)
        );
    }
    // The legend sits under the plot, right-aligned.
    let ly = H - 10.0;
    let _ = write!(
        s,
        r##"<g class="legend"><line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#111827" stroke-width="1.5" stroke-dasharray="6 4"/><text x="{:.1}" y="{ly:.1}" text-anchor="end">Pareto frontier</text></g>"##,
        L + pw - 130.0,
        ly - 4.0,
        L + pw - 100.0,
        ly - 4.0,
        L + pw
    );
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round() {
        assert_eq!(ticks(0.0, 1.0), vec![0.0, 0.2, 0.4, 0.6, 0.8, 1.0]);
        assert_eq!(ticks(0.0, 0.05), vec![0.0, 0.01, 0.02, 0.03, 0.04, 0.05]);
        assert_eq!(ticks(3.0, 3.0), vec![3.0]);
    }

    #[test]
    fn frontier_keeps_undominated_points_by_cost() {
        let p = |name, cost, quality| Point {
            name,
            index: 0,
            cost,
            quality,
        };
        let pts = [
            p("a", 0.01, 0.5),
            p("b", 0.05, 0.9),
            p("c", 0.06, 0.8),
            p("d", 0.01, 0.4),
        ];
        let f: Vec<&str> = frontier_2d(&pts).iter().map(|p| p.name).collect();
        assert_eq!(f, ["a", "b"]);
    }
}
