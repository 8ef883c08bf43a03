//! Inline SVG plots for the HTML report: a value distribution per variant
//! (a box from the quartiles, whiskers to min and max, every cell as a
//! dot, the mean as a diamond; past [`MAX_DOTS`] values in a plot, each
//! row's histogram of [`BINS`] bins instead of the dots) and cost against quality with the
//! comparison's Pareto frontier: its points ringed, a staircase through
//! them when there are two or more, and every point labelled where the
//! label overlaps no other label.
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

/// The labels of cost ticks (a round step apart): dollars with as many
/// decimals as the step has (two at least below a dollar), so that no two
/// read the same however small the costs.
fn usd_ticks(ticks: &[f64]) -> Vec<String> {
    let step = match ticks {
        [a, b, ..] => b - a,
        _ => 1.0,
    };
    let whole = |d: i32| {
        let scaled = step * 10f64.powi(d);
        (scaled - scaled.round()).abs() < 1e-6 * scaled.max(1.0)
    };
    let mut decimals = if step >= 1.0 { 0 } else { 2 };
    while decimals < 12 && !whole(decimals) {
        decimals += 1;
    }
    let decimals = decimals as usize;
    ticks
        .iter()
        .map(|&t| match t {
            0.0 => "$0".to_string(),
            t => format!("${t:.decimals$}"),
        })
        .collect()
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

/// The most values a distribution draws as a dot each; past them every
/// row is a histogram (a plot's size no longer grows with its cells).
pub(crate) const MAX_DOTS: usize = 300;
/// The bins of a row's histogram, across the value axis.
pub(crate) const BINS: usize = 40;

const WIDTH: f64 = 720.0;
const LEFT: f64 = 170.0;
const RIGHT: f64 = 30.0;
const ROW: f64 = 44.0;
const TOP: f64 = 36.0;
const BOTTOM: f64 = 44.0;

/// A linear scale from values `lo..=hi` to `len` pixels from `start`,
/// running backwards (upwards on screen) when `inverted`.
#[derive(Debug, Clone, Copy)]
struct Scale {
    lo: f64,
    hi: f64,
    start: f64,
    len: f64,
    inverted: bool,
}

impl Scale {
    /// The pixel of `v`.
    fn at(&self, v: f64) -> f64 {
        let frac = (v - self.lo) / (self.hi - self.lo);
        if self.inverted {
            self.start + self.len - frac * self.len
        } else {
            self.start + frac * self.len
        }
    }
}

/// Opens an `<svg>` of the report's width with `id`, `class` and `height`,
/// titled `title` (the visible title starts at `left`).
fn open_svg(s: &mut String, id: &str, class: &str, height: f64, title: &str, left: f64) {
    let _ = write!(
        s,
        r#"<svg id="{}" class="{class}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" aria-label="{}">"#,
        xml(id),
        xml(title)
    );
    let _ = write!(s, "<title>{}</title>", xml(title));
    let _ = write!(
        s,
        r#"<text class="plot-title" x="{left}" y="20">{}</text>"#,
        xml(title)
    );
}

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
    let (lo, hi) = value_range(series, unit_range);
    let height = TOP + BOTTOM + ROW * series.len().max(1) as f64;
    let x = Scale {
        lo,
        hi,
        start: LEFT,
        len: WIDTH - LEFT - RIGHT,
        inverted: false,
    };
    let mut s = String::new();
    open_svg(&mut s, id, "plot score-distribution", height, title, LEFT);
    value_axis(&mut s, &x, height, axis);
    let histogram = series.iter().map(|s| s.values.len()).sum::<usize>() > MAX_DOTS;
    for (row, serie) in series.iter().enumerate() {
        let cy = TOP + ROW * row as f64 + ROW / 2.0;
        series_row(&mut s, &x, serie, cy, histogram);
    }
    s.push_str("</svg>");
    s
}

/// The axis of [`distribution`]: 0..=1 for unit values when asked, else
/// from 0 (or below) to the largest value.
fn value_range(series: &[Series<'_>], unit_range: bool) -> (f64, f64) {
    let all: Vec<f64> = series
        .iter()
        .flat_map(|s| s.values.iter().copied())
        .collect();
    let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if unit_range && lo >= 0.0 && hi <= 1.0 {
        (0.0, 1.0)
    } else {
        range(lo.min(0.0), hi)
    }
}

/// The value axis of [`distribution`] at the bottom, with its grid and ticks.
fn value_axis(s: &mut String, x: &Scale, height: f64, axis: &str) {
    let axis_y = height - BOTTOM;
    for t in ticks(x.lo, x.hi) {
        let tx = x.at(t);
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
        LEFT + x.len / 2.0,
        height - 8.0,
        xml(axis)
    );
}

/// One variant's row of [`distribution`] at height `cy`: its name, then
/// its histogram (when `histogram`), box, dots (else) and mean (none
/// without values).
fn series_row(s: &mut String, x: &Scale, serie: &Series<'_>, cy: f64, histogram: bool) {
    let row = Row {
        x,
        cy,
        c: color(serie.index),
    };
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
        if histogram {
            row.histogram(s, &sorted);
        }
        row.box_plot(s, &sorted);
        if !histogram {
            row.dots(s, &serie.values);
        }
        row.mean(s, sorted.iter().sum::<f64>() / sorted.len() as f64);
    }
    s.push_str("</g>");
}

/// Where and in which colour a row of [`distribution`] is drawn.
struct Row<'a> {
    x: &'a Scale,
    /// The row's middle.
    cy: f64,
    /// The variant's colour.
    c: &'static str,
}

impl Row<'_> {
    /// Whiskers from min to max, the box from the quartiles, the median.
    fn box_plot(&self, s: &mut String, sorted: &[f64]) {
        let Row { x, cy, c } = *self;
        let (q1, med, q3) = quartiles(sorted);
        let (min, max) = (sorted[0], sorted[sorted.len() - 1]);
        let _ = write!(
            s,
            r#"<line class="whisker" x1="{:.1}" y1="{cy:.1}" x2="{:.1}" y2="{cy:.1}" stroke="{c}"/>"#,
            x.at(min),
            x.at(max)
        );
        let _ = write!(
            s,
            r#"<rect class="box" x="{:.1}" y="{:.1}" width="{:.1}" height="18" fill="{c}" fill-opacity="0.18" stroke="{c}"/>"#,
            x.at(q1),
            cy - 9.0,
            (x.at(q3) - x.at(q1)).max(1.0)
        );
        let _ = write!(
            s,
            r#"<line class="median" x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{c}" stroke-width="2"/>"#,
            x.at(med),
            cy - 9.0,
            x.at(med),
            cy + 9.0
        );
    }

    /// The `sorted` values' histogram: a bar per non-empty bin of [`BINS`]
    /// across the axis, as tall as its share of the fullest bin, centred
    /// on the row behind the box, titled with its count and range.
    fn histogram(&self, s: &mut String, sorted: &[f64]) {
        let Row { x, cy, c } = *self;
        let width = (x.hi - x.lo) / BINS as f64;
        let mut counts = [0usize; BINS];
        for v in sorted {
            let bin = ((v - x.lo) / width).floor();
            counts[(bin.max(0.0) as usize).min(BINS - 1)] += 1;
        }
        let fullest = counts.iter().copied().max().unwrap_or(1).max(1) as f64;
        for (bin, &n) in counts.iter().enumerate().filter(|(_, n)| **n > 0) {
            let (lo, hi) = (x.lo + width * bin as f64, x.lo + width * (bin + 1) as f64);
            let h = (34.0 * n as f64 / fullest).max(1.0);
            let _ = write!(
                s,
                r#"<rect class="bin" x="{:.1}" y="{:.1}" width="{:.1}" height="{h:.1}" fill="{c}" fill-opacity="0.45"><title>{n} {} from {} to {}</title></rect>"#,
                x.at(lo),
                cy - h / 2.0,
                (x.at(hi) - x.at(lo)).max(1.0),
                if n == 1 { "cell" } else { "cells" },
                num(lo),
                num(hi)
            );
        }
    }

    /// Every value as a dot, jittered by its position.
    fn dots(&self, s: &mut String, values: &[f64]) {
        let Row { x, cy, c } = *self;
        for (i, v) in values.iter().enumerate() {
            // Deterministic jitter in -6..6 px.
            let jitter = ((i * 7919) % 13) as f64 - 6.0;
            let _ = write!(
                s,
                r#"<circle class="dot" cx="{:.1}" cy="{:.1}" r="3" fill="{c}" fill-opacity="0.75"><title>{}</title></circle>"#,
                x.at(*v),
                cy + jitter,
                num(*v)
            );
        }
    }

    /// The mean as a diamond.
    fn mean(&self, s: &mut String, mean: f64) {
        let Row { x, cy, c } = *self;
        let mx = x.at(mean);
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

/// A point label's text box: its anchor (`x`, baseline `y`, `text-anchor`)
/// and the rectangle it covers, estimated from its length.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Label {
    /// Anchor x.
    pub x: f64,
    /// Baseline y.
    pub y: f64,
    /// `start`, `middle` or `end`.
    pub anchor: &'static str,
    /// Left, top, right, bottom.
    pub rect: [f64; 4],
    /// Placed away from its point (a leader line joins them).
    pub far: bool,
}

/// Width of a 12px label character, generous (wide glyphs included).
const CHAR_W: f64 = 7.0;
/// Space kept between two labels.
const GAP: f64 = 2.0;
/// Half the side of the square a point (and its frontier ring) covers.
const POINT_R: f64 = 11.0;

impl Label {
    fn new(text: &str, x: f64, y: f64, anchor: &'static str, far: bool) -> Label {
        let w = text.chars().count() as f64 * CHAR_W;
        let left = match anchor {
            "end" => x - w,
            "middle" => x - w / 2.0,
            _ => x,
        };
        Label {
            x,
            y,
            anchor,
            rect: [left, y - 12.0, left + w, y + 3.0],
            far,
        }
    }

    fn overlaps(&self, r: &[f64; 4]) -> bool {
        let a = &self.rect;
        a[0] < r[2] + GAP && r[0] < a[2] + GAP && a[1] < r[3] + GAP && r[1] < a[3] + GAP
    }

    fn inside(&self, bounds: &[f64; 4]) -> bool {
        let a = &self.rect;
        a[0] >= bounds[0] && a[1] >= bounds[1] && a[2] <= bounds[2] && a[3] <= bounds[3]
    }
}

/// Labels for points at `centres` (texts `texts`), placed in order: each at
/// the first spot around its point that stays within `bounds` and covers
/// no point, no rectangle of `lines` and no label placed before it; failing
/// those, stacked above or below its point (`far`), and at worst under
/// every label placed. No two labels overlap.
pub(crate) fn place_labels(
    centres: &[(f64, f64)],
    texts: &[&str],
    lines: &[[f64; 4]],
    bounds: [f64; 4],
) -> Vec<Label> {
    let obstacles: Vec<[f64; 4]> = centres
        .iter()
        .map(|(x, y)| [x - POINT_R, y - POINT_R, x + POINT_R, y + POINT_R])
        .chain(lines.iter().copied())
        .collect();
    let mut placed: Vec<Label> = Vec::new();
    let mid = (bounds[0] + bounds[2]) / 2.0;
    for (&(px, py), text) in centres.iter().zip(texts) {
        let d = POINT_R + 2.0;
        // Points on the right half label to their left first.
        let (near, other) = if px > mid {
            ((px - d, "end"), (px + d, "start"))
        } else {
            ((px + d, "start"), (px - d, "end"))
        };
        // Above or below first: a frontier's staircase leaves a point level.
        let mut spots = Vec::new();
        for (x, anchor) in [near, other] {
            spots.extend([(x, py - 6.0, anchor), (x, py + 16.0, anchor)]);
        }
        spots.extend([(px, py - d - 3.0, "middle"), (px, py + d + 12.0, "middle")]);
        spots.extend([(near.0, py + 4.0, near.1), (other.0, py + 4.0, other.1)]);
        let candidates = spots
            .into_iter()
            .map(|(x, y, a)| Label::new(text, x, y, a, false));
        let stacked = (1..=40).flat_map(|k| {
            let step = 17.0 * f64::from(k);
            [py - 6.0 - step, py + 16.0 + step]
                .into_iter()
                .flat_map(move |y| [(near, y), (other, y)])
                .map(|((x, anchor), y)| Label::new(text, x, y, anchor, true))
        });
        let free = |l: &Label| {
            l.inside(&bounds)
                && !obstacles.iter().any(|r| l.overlaps(r))
                && !placed.iter().any(|o| l.overlaps(&o.rect))
        };
        let label = candidates.chain(stacked).find(free).unwrap_or_else(|| {
            let lowest = placed.iter().map(|l| l.rect[3]).fold(py, f64::max);
            Label::new(text, near.0, lowest + 12.0 + 2.0 * GAP, near.1, true)
        });
        placed.push(label);
    }
    placed
}

/// Height and margins of [`cost_quality`].
const CQ_HEIGHT: f64 = 380.0;
const CQ_LEFT: f64 = 70.0;
const CQ_RIGHT: f64 = 40.0;
const CQ_TOP: f64 = 36.0;
const CQ_BOTTOM: f64 = 50.0;

/// The plane of [`cost_quality`]: cost across, quality up.
struct Plane {
    cost: Scale,
    quality: Scale,
}

impl Plane {
    /// Cost from 0 to 10% past the dearest point, quality from 0 to 1 (or
    /// the best point, past 1).
    fn of(points: &[Point<'_>]) -> Plane {
        let (clo, chi) = range(0.0, points.iter().map(|p| p.cost).fold(0.0, f64::max) * 1.1);
        let (qlo, qhi) = (0.0, points.iter().map(|p| p.quality).fold(1.0, f64::max));
        Plane {
            cost: Scale {
                lo: clo,
                hi: chi,
                start: CQ_LEFT,
                len: WIDTH - CQ_LEFT - CQ_RIGHT,
                inverted: false,
            },
            quality: Scale {
                lo: qlo,
                hi: qhi,
                start: CQ_TOP,
                len: CQ_HEIGHT - CQ_TOP - CQ_BOTTOM,
                inverted: true,
            },
        }
    }

    /// Where `p` is drawn.
    fn centre(&self, p: &Point<'_>) -> (f64, f64) {
        (self.cost.at(p.cost), self.quality.at(p.quality))
    }

    /// The grid and ticks of both axes, the axes and their labels.
    fn axes(&self, s: &mut String, quality_label: &str) {
        let (pw, ph) = (self.cost.len, self.quality.len);
        let cost_ticks = ticks(self.cost.lo, self.cost.hi);
        for (t, label) in cost_ticks.iter().copied().zip(usd_ticks(&cost_ticks)) {
            let tx = self.cost.at(t);
            let _ = write!(
                s,
                r##"<line class="grid" x1="{tx:.1}" y1="{CQ_TOP}" x2="{tx:.1}" y2="{:.1}" stroke="#e5e7eb"/><text class="tick" x="{tx:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
                CQ_TOP + ph,
                CQ_TOP + ph + 16.0,
                xml(&label)
            );
        }
        for t in ticks(self.quality.lo, self.quality.hi) {
            let ty = self.quality.at(t);
            let _ = write!(
                s,
                r##"<line class="grid" x1="{CQ_LEFT}" y1="{ty:.1}" x2="{:.1}" y2="{ty:.1}" stroke="#e5e7eb"/><text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
                CQ_LEFT + pw,
                CQ_LEFT - 8.0,
                ty + 4.0,
                num(t)
            );
        }
        let _ = write!(
            s,
            r##"<line class="axis" x1="{CQ_LEFT}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#6b7280"/><line class="axis" x1="{CQ_LEFT}" y1="{CQ_TOP}" x2="{CQ_LEFT}" y2="{:.1}" stroke="#6b7280"/>"##,
            CQ_TOP + ph,
            CQ_LEFT + pw,
            CQ_TOP + ph,
            CQ_TOP + ph
        );
        let _ = write!(
            s,
            r#"<text class="axis-label" x="{:.1}" y="{:.1}" text-anchor="middle">mean cost per case (USD)</text><text class="axis-label" transform="translate(16 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
            CQ_LEFT + pw / 2.0,
            CQ_HEIGHT - 10.0,
            CQ_TOP + ph / 2.0,
            xml(quality_label)
        );
    }

    /// A staircase through the frontier's `steps` (cheapest first) when
    /// there are two or more: from each point right, then up to the next.
    /// Returns its segments' rectangles, which labels keep off.
    fn staircase(&self, s: &mut String, steps: &[&Point<'_>]) -> Vec<[f64; 4]> {
        let mut lines = Vec::new();
        if steps.len() < 2 {
            return lines;
        }
        let mut d = String::new();
        for (i, p) in steps.iter().enumerate() {
            let (px, py) = self.centre(p);
            if i == 0 {
                let _ = write!(d, "M{px:.1} {py:.1}");
            } else {
                let _ = write!(d, " H{px:.1} V{py:.1}");
                let (lx, ly) = self.centre(steps[i - 1]);
                lines.push([lx, ly - 1.0, px, ly + 1.0]);
                lines.push([px - 1.0, py.min(ly), px + 1.0, py.max(ly)]);
            }
        }
        let _ = write!(
            s,
            r##"<path class="frontier" d="{d}" fill="none" stroke="#111827" stroke-width="1.5" stroke-dasharray="6 4"><title>Pareto frontier (quality, cost)</title></path>"##
        );
        lines
    }

    /// A ring around each frontier point: visible when it is the only one.
    fn rings(&self, s: &mut String, steps: &[&Point<'_>]) {
        for p in steps {
            let (px, py) = self.centre(p);
            let _ = write!(
                s,
                r##"<circle class="frontier-mark" cx="{px:.1}" cy="{py:.1}" r="10" fill="none" stroke="#111827" stroke-width="1.5" stroke-dasharray="3 2"><title>{}: on the Pareto frontier</title></circle>"##,
                xml(p.name)
            );
        }
    }

    /// Every point's label, right of the quality axis and above the cost
    /// axis, clear of the points, `lines` and each other.
    fn labels(&self, points: &[Point<'_>], lines: &[[f64; 4]]) -> Vec<Label> {
        let centres: Vec<(f64, f64)> = points.iter().map(|p| self.centre(p)).collect();
        let names: Vec<&str> = points.iter().map(|p| p.name).collect();
        let bottom = CQ_TOP + self.quality.len;
        place_labels(
            &centres,
            &names,
            lines,
            [CQ_LEFT + 2.0, 24.0, WIDTH - 2.0, bottom],
        )
    }
}

/// Cost per case against quality, as an `<svg>` with `id`: the variants
/// named in `frontier` (the comparison's Pareto frontier) are filled and
/// ringed, and joined by a staircase when there are two or more.
pub(crate) fn cost_quality(
    id: &str,
    quality_label: &str,
    points: &[Point<'_>],
    frontier: &[String],
) -> String {
    let plane = Plane::of(points);
    let title = format!("Cost per case vs {quality_label}");
    let mut s = String::new();
    open_svg(&mut s, id, "plot cost-quality", CQ_HEIGHT, &title, CQ_LEFT);
    plane.axes(&mut s, quality_label);
    let on = |p: &Point<'_>| frontier.iter().any(|f| f == p.name);
    let mut steps: Vec<&Point<'_>> = points.iter().filter(|p| on(p)).collect();
    steps.sort_by(|a, b| {
        a.cost
            .total_cmp(&b.cost)
            .then(a.quality.total_cmp(&b.quality))
    });
    let lines = plane.staircase(&mut s, &steps);
    plane.rings(&mut s, &steps);
    let labels = plane.labels(points, &lines);
    for (p, label) in points.iter().zip(labels) {
        let mark = PointMark {
            point: p,
            centre: plane.centre(p),
            label,
            on_frontier: on(p),
        };
        mark.write(&mut s, quality_label);
    }
    legend(&mut s);
    s.push_str("</svg>");
    s
}

/// One point of [`cost_quality`] as drawn: where, its label, whether it
/// is on the frontier.
struct PointMark<'a> {
    point: &'a Point<'a>,
    centre: (f64, f64),
    label: Label,
    on_frontier: bool,
}

impl PointMark<'_> {
    /// The point's group: a leader to a far label, the dot, the label.
    fn write(&self, s: &mut String, quality_label: &str) {
        let (p, label, (px, py)) = (self.point, &self.label, self.centre);
        let c = color(p.index);
        let _ = write!(
            s,
            r#"<g class="point{}" data-variant="{}">"#,
            if self.on_frontier { " on-frontier" } else { "" },
            xml(p.name)
        );
        if label.far {
            // A leader from the point to its label's nearest edge.
            let lx = if label.rect[0] > px {
                label.rect[0]
            } else {
                label.rect[2]
            };
            let _ = write!(
                s,
                r#"<line class="leader" x1="{px:.1}" y1="{py:.1}" x2="{lx:.1}" y2="{:.1}" stroke="{c}" stroke-width="1"/>"#,
                label.y - 4.0
            );
        }
        let _ = write!(
            s,
            r#"<circle cx="{px:.1}" cy="{py:.1}" r="6" fill="{}" stroke="{c}" stroke-width="2"><title>{}: {} per case, {} {}</title></circle><text class="label" x="{:.1}" y="{:.1}" text-anchor="{}">{}</text></g>"#,
            if self.on_frontier { c } else { "white" },
            xml(p.name),
            xml(&usd(p.cost)),
            xml(quality_label),
            num(p.quality),
            label.x,
            label.y,
            label.anchor,
            xml(p.name)
        );
    }
}

/// The legend, above the plot on the right.
fn legend(s: &mut String) {
    let ly = 20.0;
    let _ = write!(
        s,
        r##"<g class="legend"><line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#111827" stroke-width="1.5" stroke-dasharray="6 4"/><circle cx="{:.1}" cy="{:.1}" r="5" fill="none" stroke="#111827" stroke-width="1.5" stroke-dasharray="3 2"/><text x="{:.1}" y="{ly:.1}">Pareto frontier (quality, cost)</text></g>"##,
        WIDTH - 262.0,
        ly - 4.0,
        WIDTH - 234.0,
        ly - 4.0,
        WIDTH - 222.0,
        ly - 4.0,
        WIDTH - 210.0
    );
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

    /// Past a few hundred values a plot draws each row's histogram, not a
    /// dot per value: its size stays that of a few hundred dots, and the
    /// bins' counts add up to every value.
    #[test]
    fn many_values_are_drawn_as_a_histogram_not_a_dot_each() {
        let series: Vec<Series<'_>> = ["a", "b"]
            .iter()
            .enumerate()
            .map(|(index, name)| Series {
                name,
                index,
                values: (0..5_000).map(|i| f64::from(i % 97) / 96.0).collect(),
            })
            .collect();
        let svg = distribution("p", "Quality", "score", &series, true);
        assert_eq!(svg.matches("class=\"dot\"").count(), 0);
        let bins = svg.matches("<rect class=\"bin\"").count();
        assert!(bins > 10 && bins <= 2 * BINS, "{bins}");
        let counted: usize = svg
            .match_indices("<rect class=\"bin\"")
            .map(|(i, _)| {
                let title = &svg[i..];
                let title = &title[title.find("<title>").unwrap() + 7..];
                title[..title.find(' ').unwrap()].parse::<usize>().unwrap()
            })
            .sum();
        assert_eq!(counted, 10_000);
        assert!(svg.len() < 30_000, "{} bytes", svg.len());
        // A few values are still a dot each.
        let few = [Series {
            name: "a",
            index: 0,
            values: vec![0.1, 0.5, 0.9],
        }];
        let svg = distribution("p", "Quality", "score", &few, true);
        assert_eq!(svg.matches("class=\"dot\"").count(), 3);
        assert_eq!(svg.matches("class=\"bin\"").count(), 0);
    }

    /// The cost axis's tick labels: as many digits as their step needs,
    /// never the same label twice (tiny costs gave `$0.00` and `$0.0001`
    /// twice each).
    #[test]
    fn cost_ticks_are_told_apart_at_any_scale() {
        for (cheap, dear) in [
            (0.00002, 0.00009),
            (0.0011, 0.0017),
            (0.02, 0.9),
            (3.0, 40.0),
        ] {
            let pts = [
                Point {
                    name: "a",
                    index: 0,
                    cost: cheap,
                    quality: 0.5,
                },
                Point {
                    name: "b",
                    index: 1,
                    cost: dear,
                    quality: 0.9,
                },
            ];
            let svg = cost_quality("p", "pass rate", &pts, &[]);
            let ticks: Vec<&str> = svg
                .match_indices("<text class=\"tick\"")
                .map(|(i, _)| {
                    let t = &svg[i..];
                    let t = &t[t.find('>').unwrap() + 1..];
                    &t[..t.find('<').unwrap()]
                })
                .filter(|t| t.starts_with('$'))
                .collect();
            assert!(ticks.len() >= 3, "{ticks:?}");
            let mut distinct = ticks.clone();
            distinct.dedup();
            assert_eq!(distinct, ticks, "costs {cheap}–{dear}");
            // Each label is its tick's value.
            let step: f64 = ticks[2].trim_start_matches('$').parse::<f64>().unwrap()
                - ticks[1].trim_start_matches('$').parse::<f64>().unwrap();
            assert!(step > 0.0, "{ticks:?}");
        }
    }

    /// The point labels of a cost/quality plot: text, x, y, anchor.
    fn labels(svg: &str) -> Vec<(String, f64, f64, String)> {
        let attr = |tag: &str, name: &str| {
            let start = tag.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
            tag[start..start + tag[start..].find('"').unwrap()].to_string()
        };
        svg.match_indices("<text class=\"label\"")
            .map(|(i, _)| {
                let tag = &svg[i..i + svg[i..].find('>').unwrap()];
                let text = &svg[i + tag.len() + 1..];
                let text = text[..text.find('<').unwrap()].to_string();
                let (x, y) = (
                    attr(tag, "x").parse().unwrap(),
                    attr(tag, "y").parse().unwrap(),
                );
                (text, x, y, attr(tag, "text-anchor"))
            })
            .collect()
    }

    #[test]
    fn labels_of_points_at_nearly_one_place_do_not_overlap() {
        let p = |name, cost, quality| Point {
            name,
            index: 0,
            cost,
            quality,
        };
        let pts = [
            p("claude-sonnet-4-5", 0.0100, 0.80),
            p("gpt-4o", 0.0101, 0.80),
            p("gpt-4o-mini", 0.0100, 0.801),
            p("far", 0.05, 0.2),
        ];
        let svg = cost_quality("p", "pass rate", &pts, &["far".to_string()]);
        let labels = labels(&svg);
        assert_eq!(labels.len(), 4);
        // Boxes of 12px text, at most 7px a character, baseline at y.
        let boxes: Vec<(f64, f64, f64, f64)> = labels
            .iter()
            .map(|(text, x, y, anchor)| {
                let w = text.chars().count() as f64 * 7.0;
                let left = match anchor.as_str() {
                    "end" => x - w,
                    "middle" => x - w / 2.0,
                    _ => *x,
                };
                (left, y - 12.0, left + w, y + 3.0)
            })
            .collect();
        for (i, a) in boxes.iter().enumerate() {
            for b in &boxes[i + 1..] {
                let apart = a.2 <= b.0 || b.2 <= a.0 || a.3 <= b.1 || b.3 <= a.1;
                assert!(apart, "labels overlap: {a:?} and {b:?} in {labels:?}");
            }
            assert!(a.0 >= 0.0 && a.2 <= WIDTH, "label inside the plot: {a:?}");
        }
    }

    #[test]
    fn labels_of_one_place_are_stacked_apart() {
        let centres = vec![(300.0, 150.0); 8];
        let labels = place_labels(
            &centres,
            &["a-long-variant-name"; 8],
            &[],
            [2.0, 24.0, 718.0, 356.0],
        );
        for (i, a) in labels.iter().enumerate() {
            for b in &labels[i + 1..] {
                assert!(!a.overlaps(&b.rect), "{a:?} and {b:?}");
            }
        }
        assert!(!labels[0].far, "the first sits by its point");
        assert!(labels.iter().any(|l| l.far), "the rest are stacked");
        // With no room left, a label still goes under every other.
        let labels = place_labels(&centres, &["x"; 60], &[], [2.0, 24.0, 718.0, 356.0]);
        for (i, a) in labels.iter().enumerate() {
            assert!(labels[i + 1..].iter().all(|b| !a.overlaps(&b.rect)));
        }
    }
}
