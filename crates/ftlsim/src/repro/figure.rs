//! Figures for the paper reproductions: grouped bar charts and line charts,
//! drawn with [`plotters`] into a standalone SVG (no fonts or C libraries
//! needed to write one; text is left to the viewer's sans-serif font).
//!
//! A figure is a title saying what was run (config, workload) over one or
//! more panels laid out in a grid. Each panel has labelled axes (put the
//! unit in the label: `"mean latency (µs)"`), tick values, and a legend
//! under it listing the series in the order their bars or lines are drawn.
//!
//! ```
//! use ftlsim::repro::figure::{Bars, Figure, Lines};
//!
//! // One panel: a figure in one line.
//! let svg = Lines::new("range size (KiB)", "mean TRIM latency (µs)")
//!     .series("page", [(4.0, 80.0), (64.0, 95.0), (1024.0, 310.0)])
//!     .series("fast", [(4.0, 120.0), (64.0, 400.0), (1024.0, 2900.0)])
//!     .svg("repro trim-cost on k9lag08u0m-4ch: 10,000 random TRIMs at QD 1");
//! assert!(svg.contains("mean TRIM latency (µs)"));
//!
//! // Several panels: a grid, `columns` wide (default 2).
//! let bars = Bars::new("workload", "IOPS", ["Fin1", "Fin2"]).series("page", [3030.0, 4100.0]).series("hat", [2900.0, 3900.0]);
//! let svg = Figure::new("repro hat on hat-table4").panel(bars.caption("throughput")).to_svg();
//! assert!(svg.starts_with("<svg"));
//! ```
//!
//! Scales: [`Scale::Auto`] (the default) draws an axis on a log scale when
//! its values are all positive and span more than 10×, linear otherwise.
//! On a log scale, bars rise from a baseline at most half the smallest value,
//! so a bar of 1.0 among values in the hundreds still shows. A linear bar
//! axis starts at 0 (or below, for negative values); a bar of exactly 0 is
//! drawn two pixels tall, so "zero" and "missing" differ. A line chart whose
//! series share at most ten distinct x values puts a tick at each of them
//! (a sweep reads off its own points); otherwise ticks are 1-2-2.5-5 steps
//! (linear) or decades (log). Non-finite values are treated as missing.
//! [`Scale::Linear`] and [`Scale::Log`] force a scale; forcing log on a
//! value ≤ 0 is a bug (it panics).
//!
//! Layout is in pixels: each panel 560 × 400, a bar chart wider when its
//! groups' labels need it; rows of `columns` panels, each row centred.

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::ops::Range;

const PANEL_W: u32 = 560;
const PANEL_H: u32 = 400;
/// Height of one legend row, and the figure title's line height.
const ROW_H: u32 = 22;
const FONT: &str = "sans-serif";

/// Colour-blind-safe (Okabe–Ito, yellow left out for contrast on white), then grey.
const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(213, 94, 0),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
    RGBColor(140, 140, 140),
];

/// How an axis maps values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scale {
    /// Log when the values are all positive and span more than 10×.
    #[default]
    Auto,
    Linear,
    Log,
}

/// The builder methods bar and line charts share.
macro_rules! shared_builders {
    ($chart:ident) => {
        impl $chart {
            /// A heading over the panel (a figure of several panels needs one each).
            pub fn caption(mut self, caption: &str) -> Self {
                self.caption = caption.into();
                self
            }

            pub fn y_scale(mut self, scale: Scale) -> Self {
                self.y_scale = scale;
                self
            }

            /// This chart alone as a figure.
            pub fn svg(self, title: &str) -> String {
                Figure::new(title).panel(self).to_svg()
            }
        }
    };
}

/// A grouped bar chart: one group per category on the x axis, one bar per
/// series in each group, in the order the series were added.
#[derive(Clone, Debug)]
pub struct Bars {
    caption: String,
    x_label: String,
    y_label: String,
    y_scale: Scale,
    groups: Vec<String>,
    series: Vec<(String, Vec<Option<f64>>)>,
}

impl Bars {
    pub fn new<S: AsRef<str>>(x_label: &str, y_label: &str, groups: impl IntoIterator<Item = S>) -> Self {
        Bars {
            caption: String::new(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            y_scale: Scale::Auto,
            groups: groups.into_iter().map(|g| g.as_ref().to_string()).collect(),
            series: Vec::new(),
        }
    }

    /// One value per group, in the groups' order (`None` or NaN: no bar).
    pub fn series<V: Into<Option<f64>>>(mut self, name: &str, values: impl IntoIterator<Item = V>) -> Self {
        let values: Vec<Option<f64>> = values.into_iter().map(|v| v.into().filter(|v| v.is_finite())).collect();
        assert!(
            values.len() <= self.groups.len(),
            "series {name}: {} values for {} groups",
            values.len(),
            self.groups.len()
        );
        self.series.push((name.into(), values));
        self
    }
}

shared_builders!(Bars);

/// A line chart: each series a polyline through its (x, y) points, with a
/// marker at each point.
#[derive(Clone, Debug)]
pub struct Lines {
    caption: String,
    x_label: String,
    y_label: String,
    x_scale: Scale,
    y_scale: Scale,
    series: Vec<(String, Vec<(f64, f64)>)>,
}

impl Lines {
    pub fn new(x_label: &str, y_label: &str) -> Self {
        Lines {
            caption: String::new(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            x_scale: Scale::Auto,
            y_scale: Scale::Auto,
            series: Vec::new(),
        }
    }

    /// The series' points, drawn in x order; points with a non-finite
    /// coordinate are left out.
    pub fn series(mut self, name: &str, points: impl IntoIterator<Item = (f64, f64)>) -> Self {
        let mut points: Vec<(f64, f64)> = points.into_iter().filter(|(x, y)| x.is_finite() && y.is_finite()).collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        self.series.push((name.into(), points));
        self
    }

    pub fn x_scale(mut self, scale: Scale) -> Self {
        self.x_scale = scale;
        self
    }
}

shared_builders!(Lines);

/// One panel of a figure.
#[derive(Clone, Debug)]
pub enum Panel {
    Bars(Bars),
    Lines(Lines),
}

impl From<Bars> for Panel {
    fn from(b: Bars) -> Self {
        Panel::Bars(b)
    }
}

impl From<Lines> for Panel {
    fn from(l: Lines) -> Self {
        Panel::Lines(l)
    }
}

/// A title over panels in a grid.
#[derive(Clone, Debug)]
pub struct Figure {
    title: String,
    columns: usize,
    panels: Vec<Panel>,
}

impl Figure {
    pub fn new(title: &str) -> Self {
        Figure { title: title.into(), columns: 2, panels: Vec::new() }
    }

    pub fn panel(mut self, panel: impl Into<Panel>) -> Self {
        self.panels.push(panel.into());
        self
    }

    /// Panels per row (at least 1).
    pub fn columns(mut self, columns: usize) -> Self {
        self.columns = columns.max(1);
        self
    }

    /// The figure as a standalone SVG document.
    pub fn to_svg(&self) -> String {
        let columns = self.columns.min(self.panels.len()).max(1);
        let rows: Vec<&[Panel]> = self.panels.chunks(columns).collect();
        let row_width = |row: &[Panel]| row.iter().map(Panel::width).sum::<u32>();
        let width = rows.iter().map(|r| row_width(r)).max().unwrap_or(PANEL_W);
        let title_lines = wrap(&self.title, 16.0, width - 20);
        let title_h = ROW_H * title_lines.len() as u32 + 12;
        let height = title_h + PANEL_H * rows.len().max(1) as u32;
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
            root.fill(&WHITE).expect(DRAWN);
            let style =
                TextStyle::from((FONT, 16).into_font().style(FontStyle::Bold)).pos(Pos::new(HPos::Center, VPos::Top));
            for (i, line) in title_lines.iter().enumerate() {
                root.draw_text(line, &style, ((width / 2) as i32, 8 + (ROW_H * i as u32) as i32)).expect(DRAWN);
            }
            for (r, row) in rows.iter().enumerate() {
                // Each row centred; each panel as wide as its content needs.
                let mut x = (width - row_width(row)) / 2;
                for panel in *row {
                    let y = title_h + PANEL_H * r as u32;
                    let area = root.clone().shrink((x, y), (panel.width(), PANEL_H));
                    match panel {
                        Panel::Bars(b) => draw_bars(b, &area),
                        Panel::Lines(l) => draw_lines(l, &area),
                    }
                    x += panel.width();
                }
            }
            root.present().expect(DRAWN);
        }
        svg
    }
}

impl Panel {
    /// Pixels: the standard width, or more for a bar chart whose groups
    /// need room for their bars and labels.
    fn width(&self) -> u32 {
        match self {
            Panel::Lines(_) => PANEL_W,
            Panel::Bars(b) => {
                let label = b.groups.iter().map(|g| text_width(g, 13.0)).fold(0.0, f64::max);
                let group = (16.0 * b.series.len() as f64).max(label + 12.0);
                PANEL_W.max((group * b.groups.len() as f64) as u32 + 120)
            }
        }
    }
}

/// Estimated width of `text` at `size_px`: 0.55 em a character, the average
/// advance of a sans-serif font.
fn text_width(text: &str, size_px: f64) -> f64 {
    0.55 * size_px * text.chars().count() as f64
}

/// Drawing into a `String` has no I/O to fail, and the built-in text
/// metrics need no font: an error here is a bug.
const DRAWN: &str = "drawing an SVG into a string cannot fail";

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// A linear coordinate whose ticks are chosen here, not by plotters (whose
/// own key points know neither log axes drawn in log10 nor bar groups).
#[derive(Clone)]
struct Axis {
    inner: RangedCoordf64,
    ticks: Vec<f64>,
}

impl Ranged for Axis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        // Light (minor) lines are not drawn.
        if hint.weight().allow_light_points() { Vec::new() } else { self.ticks.clone() }
    }

    fn range(&self) -> Range<f64> {
        self.inner.range()
    }
}

/// An axis in drawing space: log axes are drawn in log10 of the value, so
/// one chart type serves both scales.
#[derive(Clone, Debug, PartialEq)]
struct AxisPlan {
    log: bool,
    /// Drawing-space bounds.
    lo: f64,
    hi: f64,
    /// Tick positions, drawing space.
    ticks: Vec<f64>,
}

impl AxisPlan {
    fn to_draw(&self, v: f64) -> f64 {
        if self.log { v.log10() } else { v }
    }

    fn label(&self, t: f64) -> String {
        tick_label(if self.log { 10f64.powf(t) } else { t })
    }

    fn coord(&self) -> Axis {
        Axis { inner: (self.lo..self.hi).into(), ticks: self.ticks.clone() }
    }
}

fn wants_log(scale: Scale, values: &[f64]) -> bool {
    let (min, max) = min_max(values);
    let positive = values.iter().all(|&v| v > 0.0);
    match scale {
        Scale::Linear => false,
        Scale::Log => {
            assert!(positive || values.is_empty(), "a log axis needs positive values, got {min}");
            true
        }
        Scale::Auto => positive && !values.is_empty() && max / min > 10.0,
    }
}

fn min_max(values: &[f64]) -> (f64, f64) {
    values.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| (lo.min(v), hi.max(v)))
}

/// The value axis of a bar chart: linear from 0 (bars rise from zero), or
/// log from a 1-2-5 baseline at most half the smallest value.
fn bar_axis(scale: Scale, values: &[f64]) -> AxisPlan {
    if values.is_empty() {
        return linear_axis(0.0, 1.0);
    }
    let (min, max) = min_max(values);
    if wants_log(scale, values) {
        let lo = nice_below(min / 2.0);
        let hi = nice_above(max * 1.2);
        log_axis(lo, hi)
    } else {
        headroom(min.min(0.0), max.max(0.0))
    }
}

/// A linear axis whose top value stays 5% clear of the frame.
fn headroom(lo: f64, hi: f64) -> AxisPlan {
    linear_axis(lo, if hi > 0.0 { hi + (hi - lo) * 0.05 } else { hi })
}

/// The y axis of a line chart: linear axes include 0 when the values are
/// all of one sign, so differences are not exaggerated.
fn line_y_axis(scale: Scale, values: &[f64]) -> AxisPlan {
    if values.is_empty() {
        return linear_axis(0.0, 1.0);
    }
    let (min, max) = min_max(values);
    if wants_log(scale, values) {
        // A 1-2-5 step of room each side keeps end markers off the frame.
        log_axis(nice_below(min / 1.2), nice_above(max * 1.2))
    } else {
        headroom(min.min(0.0), max.max(0.0))
    }
}

/// The x axis of a line chart: a tick at each distinct x when there are
/// few, so a sweep's own settings label it.
fn line_x_axis(scale: Scale, xs: &[f64]) -> AxisPlan {
    if xs.is_empty() {
        return linear_axis(0.0, 1.0);
    }
    let (min, max) = min_max(xs);
    let log = wants_log(scale, xs);
    let mut distinct: Vec<f64> = xs.to_vec();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    let mut plan = if log { log_axis(min, max) } else { linear_axis(min, max) };
    if distinct.len() <= 10 {
        plan.ticks = distinct.iter().map(|&x| plan.to_draw(x)).collect();
        // A margin of 4% each side keeps the end markers off the frame.
        let (lo, hi) = (plan.to_draw(min), plan.to_draw(max));
        let pad = if hi > lo { (hi - lo) * 0.04 } else { 0.5 };
        (plan.lo, plan.hi) = (lo - pad, hi + pad);
    }
    plan
}

/// 1-2-2.5-5 steps covering `lo..hi`, about five of them; the axis ends on ticks.
fn linear_axis(lo: f64, hi: f64) -> AxisPlan {
    let (lo, hi) = if hi > lo { (lo, hi) } else { (lo - 1.0, hi + 1.0) };
    let step = nice_step((hi - lo) / 5.0);
    let first = (lo / step).floor();
    let last = (hi / step).ceil();
    let ticks: Vec<f64> = (0..=(last - first) as i64).map(|i| (first + i as f64) * step).collect();
    AxisPlan { log: false, lo: first * step, hi: last * step, ticks }
}

/// Decades inside `lo..hi`; with fewer than three, the 2× and 5× between too.
fn log_axis(lo: f64, hi: f64) -> AxisPlan {
    let (lo, hi) = if hi > lo { (lo, hi) } else { (lo / 2.0, hi * 2.0) };
    let (a, b) = (lo.log10(), hi.log10());
    let decades: Vec<f64> = (a.floor() as i32..=b.ceil() as i32).map(f64::from).collect();
    let inside = |t: &f64| *t >= a - 1e-9 && *t <= b + 1e-9;
    let mut ticks: Vec<f64> = decades.iter().copied().filter(inside).collect();
    if ticks.len() < 3 {
        ticks = decades.iter().flat_map(|&d| [1.0, 2.0, 5.0].map(|m| d + f64::log10(m))).filter(inside).collect();
    }
    AxisPlan { log: true, lo: a, hi: b, ticks }
}

/// The 1-2-2.5-5 step nearest above `raw`.
fn nice_step(raw: f64) -> f64 {
    let decade = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * decade)
        .find(|&s| s >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * decade)
}

/// The largest 1-2-5 value ≤ `v` (`v` > 0).
fn nice_below(v: f64) -> f64 {
    let decade = 10f64.powf(v.log10().floor());
    [5.0, 2.0, 1.0].into_iter().map(|m| m * decade).find(|&s| s <= v * (1.0 + 1e-9)).unwrap_or(decade)
}

/// The smallest 1-2-5 value ≥ `v` (`v` > 0).
fn nice_above(v: f64) -> f64 {
    let decade = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * decade).find(|&s| s >= v * (1.0 - 1e-9)).unwrap_or(10.0 * decade)
}

/// The distinct items in first-seen order: a repro's groups or x values
/// from its rows.
pub fn distinct<T: PartialEq>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// A tick value, short: at most four significant digits, trailing zeros
/// dropped, thousands as k/M/G from 10,000 on.
pub fn tick_label(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v.is_finite() { "0".into() } else { v.to_string() };
    }
    if v.abs() >= 1e4 {
        let (div, suffix) =
            [(1e9, "G"), (1e6, "M"), (1e3, "k")].into_iter().find(|(d, _)| v.abs() >= *d).expect("≥ 1e3");
        return format!("{}{suffix}", tick_label(v / div));
    }
    let decimals = (3 - v.abs().log10().floor() as i32).clamp(0, 9) as usize;
    let s = format!("{v:.decimals$}");
    let s = if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.') } else { &s };
    if s == "-0" { "0".into() } else { s.to_string() }
}

/// Greedy word wrap at an estimated width ([`text_width`]).
fn wrap(text: &str, size_px: f64, width_px: u32) -> Vec<String> {
    let per_line = ((width_px as f64) / text_width("x", size_px)).max(10.0) as usize;
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(l) if l.chars().count() + 1 + word.chars().count() <= per_line => {
                l.push(' ');
                l.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    if lines.is_empty() {
        lines.push(String::new());
    }
    lines
}

/// The legend's rows: entries in series order, wrapped at the panel width.
fn legend_rows(names: &[&str], width: u32) -> Vec<Vec<usize>> {
    let mut rows: Vec<Vec<usize>> = vec![Vec::new()];
    let mut x = 0.0;
    for (i, name) in names.iter().enumerate() {
        let w = legend_entry_width(name);
        if x + w > (width - 60) as f64 && !rows.last().expect("one row").is_empty() {
            rows.push(Vec::new());
            x = 0.0;
        }
        rows.last_mut().expect("one row").push(i);
        x += w;
    }
    rows
}

fn legend_entry_width(name: &str) -> f64 {
    40.0 + text_width(name, 13.0)
}

#[derive(Clone, Copy)]
enum Swatch {
    Bar,
    Line,
}

/// Splits a panel into its chart and the legend strip under it, and draws the legend.
fn legend<'a>(area: &Area<'a>, names: &[&str], swatch: Swatch) -> Area<'a> {
    let (w, h) = area.dim_in_pixel();
    let rows = legend_rows(names, w);
    let strip = ROW_H * rows.len() as u32 + 8;
    let (chart, strip_area) = area.split_vertically(h - strip);
    let text = TextStyle::from((FONT, 13).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    for (r, row) in rows.iter().enumerate() {
        let width: f64 = row.iter().map(|&i| legend_entry_width(names[i])).sum();
        let mut x = ((w as f64 - width) / 2.0).max(4.0) as i32;
        let y = (ROW_H * r as u32 + ROW_H / 2) as i32;
        for &i in row {
            let color = PALETTE[i % PALETTE.len()];
            match swatch {
                Swatch::Bar => {
                    strip_area.draw(&Rectangle::new([(x, y - 6), (x + 14, y + 6)], color.filled())).expect(DRAWN)
                }
                Swatch::Line => {
                    strip_area
                        .draw(&PathElement::new(vec![(x - 4, y), (x + 18, y)], color.stroke_width(2)))
                        .expect(DRAWN);
                    draw_marker(&strip_area, i, (x + 7, y), color);
                }
            }
            strip_area.draw_text(names[i], &text, (x + 22, y)).expect(DRAWN);
            x += legend_entry_width(names[i]) as i32;
        }
    }
    chart
}

/// A marker shape per series (circle, square, triangle, cross), so lines
/// stay apart in grey print.
fn draw_marker(area: &Area<'_>, series: usize, (x, y): (i32, i32), color: RGBColor) {
    let style = color.filled();
    match series % 4 {
        0 => area.draw(&Circle::new((x, y), 4, style)),
        1 => area.draw(&Rectangle::new([(x - 4, y - 4), (x + 4, y + 4)], style)),
        2 => area.draw(&Polygon::new(vec![(x, y - 5), (x - 5, y + 4), (x + 5, y + 4)], style)),
        _ => area.draw(&Cross::new((x, y), 4, color.stroke_width(2))),
    }
    .expect(DRAWN);
}

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<Axis, Axis>>;

/// The chart frame: caption, axes with their labels and tick values.
fn frame<'a, 'b>(
    area: &'a Area<'b>,
    caption: &str,
    (x_label, x): (&str, &AxisPlan),
    (y_label, y): (&str, &AxisPlan),
    x_names: Option<&[String]>,
) -> Chart<'a, 'b> {
    let mut builder = ChartBuilder::on(area);
    builder.margin(12).margin_right(20).x_label_area_size(48).y_label_area_size(72);
    if !caption.is_empty() {
        builder.caption(caption, (FONT, 15));
    }
    let mut chart = builder.build_cartesian_2d(x.coord(), y.coord()).expect(DRAWN);
    let x_fmt = |t: &f64| match x_names {
        Some(names) => names.get(t.round().max(0.0) as usize).cloned().unwrap_or_default(),
        None => x.label(*t),
    };
    let y_fmt = |t: &f64| y.label(*t);
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(x_label)
        .y_desc(y_label)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 14))
        .bold_line_style(RGBColor(225, 225, 225))
        .light_line_style(TRANSPARENT);
    if x_names.is_some() {
        mesh.disable_x_mesh();
    }
    mesh.draw().expect(DRAWN);
    chart
}

fn draw_bars(b: &Bars, area: &Area<'_>) {
    let names: Vec<&str> = b.series.iter().map(|(n, _)| n.as_str()).collect();
    let chart_area = legend(area, &names, Swatch::Bar);
    let values: Vec<f64> = b.series.iter().flat_map(|(_, v)| v.iter().flatten().copied()).collect();
    let y = bar_axis(b.y_scale, &values);
    let n = b.groups.len().max(1);
    let x = AxisPlan { log: false, lo: -0.5, hi: n as f64 - 0.5, ticks: (0..n).map(|i| i as f64).collect() };
    let mut chart = frame(&chart_area, &b.caption, (&b.x_label, &x), (&b.y_label, &y), Some(&b.groups));
    // Bars rise from 0 (linear) or from the axis' bottom (log); one too short
    // to see is drawn two pixels tall (one could round to none).
    let base = if y.log { y.lo } else { 0.0f64.clamp(y.lo, y.hi) };
    let px = chart.plotting_area().dim_in_pixel().1.max(1) as f64;
    let min_h = 2.0 * (y.hi - y.lo) / px;
    let width = 0.8 / b.series.len().max(1) as f64;
    for (j, (_, vals)) in b.series.iter().enumerate() {
        let color = PALETTE[j % PALETTE.len()];
        let rects = vals.iter().enumerate().filter_map(|(i, v)| {
            let v = y.to_draw((*v)?);
            let top = if (v - base).abs() < min_h { base + min_h.copysign(v - base + 0.0) } else { v };
            let x0 = i as f64 - 0.4 + width * j as f64;
            Some(Rectangle::new([(x0 + width * 0.04, base), (x0 + width * 0.96, top)], color.filled()))
        });
        chart.draw_series(rects).expect(DRAWN);
    }
}

fn draw_lines(l: &Lines, area: &Area<'_>) {
    let names: Vec<&str> = l.series.iter().map(|(n, _)| n.as_str()).collect();
    let chart_area = legend(area, &names, Swatch::Line);
    let xs: Vec<f64> = l.series.iter().flat_map(|(_, p)| p.iter().map(|p| p.0)).collect();
    let ys: Vec<f64> = l.series.iter().flat_map(|(_, p)| p.iter().map(|p| p.1)).collect();
    let (x, y) = (line_x_axis(l.x_scale, &xs), line_y_axis(l.y_scale, &ys));
    let mut chart = frame(&chart_area, &l.caption, (&l.x_label, &x), (&l.y_label, &y), None);
    for (j, (_, points)) in l.series.iter().enumerate() {
        let color = PALETTE[j % PALETTE.len()];
        let pts: Vec<(f64, f64)> = points.iter().map(|&(px, py)| (x.to_draw(px), y.to_draw(py))).collect();
        chart.draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2))).expect(DRAWN);
        let area = chart.plotting_area();
        for p in &pts {
            let (bx, by) = area.map_coordinate(p);
            let (ox, oy) = area.get_base_pixel();
            // Markers are drawn in the panel's pixel space (the plotting
            // area's offset removed) so every series gets its own shape.
            draw_marker(&area.strip_coord_spec(), j, (bx - ox, by - oy), color);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels_are_short_and_exact() {
        let cases = [
            (0.0, "0"),
            (1.0, "1"),
            (0.5, "0.5"),
            (2.5, "2.5"),
            (0.1 + 0.2, "0.3"),
            (100.00000000000004, "100"),
            (1234.56, "1235"),
            (12.345, "12.35"),
            (9999.0, "9999"),
            (25_000.0, "25k"),
            (1.5e6, "1.5M"),
            (-40.0, "-40"),
            (0.00125, "0.00125"),
        ];
        for (v, want) in cases {
            assert_eq!(tick_label(v), want, "{v}");
        }
    }

    #[test]
    fn linear_axes_end_on_1_2_5_ticks() {
        let a = linear_axis(0.0, 7.3);
        assert_eq!((a.lo, a.hi), (0.0, 8.0));
        assert_eq!(a.ticks, vec![0.0, 2.0, 4.0, 6.0, 8.0]);
        let a = linear_axis(-30.0, 120.0);
        assert_eq!((a.lo, a.hi), (-50.0, 150.0));
    }

    #[test]
    fn log_bar_axis_keeps_a_bar_of_one_visible() {
        // HAT's ratios: page mapping is 1.0, FAST 175×.
        let a = bar_axis(Scale::Auto, &[1.0, 1.02, 3.1, 175.0]);
        assert!(a.log);
        assert!(a.lo < 0.0, "baseline {} must sit below log10(1) = 0", a.lo);
        assert_eq!(a.lo, 0.5f64.log10());
        assert_eq!(a.hi, 500f64.log10());
        let labels: Vec<String> = a.ticks.iter().map(|&t| a.label(t)).collect();
        assert_eq!(labels, ["1", "10", "100"]);
        // Within 10×: linear from zero.
        let a = bar_axis(Scale::Auto, &[1.0, 4.0]);
        assert!(!a.log && a.lo == 0.0);
        // A zero or negative value forbids log.
        assert!(!bar_axis(Scale::Auto, &[0.0, 500.0]).log);
    }

    #[test]
    fn line_axes_leave_room_past_the_extremes() {
        // Figure 11's random writes: page mapping at 1.0, FAST down to 0.0017.
        let a = line_y_axis(Scale::Auto, &[1.0, 0.0017, 0.2]);
        assert!(a.log && a.hi > 0.0 && a.lo < 0.0017f64.log10(), "{a:?}");
        let labels: Vec<String> = a.ticks.iter().map(|&t| a.label(t)).collect();
        assert_eq!(labels, ["0.001", "0.01", "0.1", "1"]);
        let a = line_y_axis(Scale::Auto, &[0.5, 1.0]);
        assert!(!a.log && a.lo == 0.0 && a.hi > 1.0 && a.hi <= 1.25, "{a:?}");
    }

    #[test]
    fn narrow_log_axes_get_2_and_5_ticks() {
        let a = log_axis(3.0, 40.0);
        let labels: Vec<String> = a.ticks.iter().map(|&t| a.label(t)).collect();
        assert_eq!(labels, ["5", "10", "20"]);
    }

    #[test]
    fn a_sweep_is_ticked_at_its_own_x_values() {
        let xs = [4.0, 8.0, 64.0, 1024.0, 4.0];
        let a = line_x_axis(Scale::Auto, &xs);
        assert!(a.log);
        let labels: Vec<String> = a.ticks.iter().map(|&t| a.label(t)).collect();
        assert_eq!(labels, ["4", "8", "64", "1024"]);
        assert!(a.lo < 4f64.log10() && a.hi > 1024f64.log10());
        let many: Vec<f64> = (0..50).map(f64::from).collect();
        let a = line_x_axis(Scale::Auto, &many);
        assert!(!a.log && a.ticks.len() < 12, "{:?}", a.ticks);
    }

    #[test]
    fn legend_order_matches_bar_order() {
        let svg = Bars::new("group", "value (units)", ["a", "b"])
            .series("first", [1.0, 2.0])
            .series("second", [3.0, 4.0])
            .series("third", [5.0, 6.0])
            .svg("title");
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let num = |n: &roxmltree::Node, a: &str| n.attribute(a).unwrap().parse::<f64>().unwrap();
        let rects: Vec<_> = doc.descendants().filter(|n| n.has_tag_name("rect")).collect();
        // Legend swatches are 14 × 12; bars are wider.
        let swatches: Vec<&str> = rects
            .iter()
            .filter(|r| num(r, "width") == 14.0 && num(r, "height") == 12.0)
            .map(|r| r.attribute("fill").unwrap())
            .collect();
        assert_eq!(swatches, ["#0072B2", "#E69F00", "#009E73"]);
        let leftmost = |fill: &str| {
            rects
                .iter()
                .filter(|r| r.attribute("fill") == Some(fill) && num(r, "width") > 14.0)
                .map(|r| num(r, "x"))
                .fold(f64::INFINITY, f64::min)
        };
        let xs: Vec<f64> = swatches.iter().map(|f| leftmost(f)).collect();
        assert!(xs.is_sorted() && xs[0].is_finite(), "bars left to right in legend order: {xs:?}");
        let texts: Vec<&str> = doc.descendants().filter(|n| n.has_tag_name("text")).filter_map(|n| n.text()).collect();
        let legend: Vec<&str> = texts
            .iter()
            .map(|t| t.trim())
            .filter(|t| t.ends_with("st") || t.ends_with("nd") || t.ends_with("rd"))
            .collect();
        assert_eq!(legend, ["first", "second", "third"]);
    }

    #[test]
    fn distinct_keeps_first_seen_order() {
        assert_eq!(distinct([32, 64, 0, 32, 64, 0]), [32, 64, 0]);
    }

    #[test]
    fn legend_wraps_in_series_order() {
        let names: Vec<String> = (0..12).map(|i| format!("series number {i}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let rows = legend_rows(&refs, PANEL_W);
        assert!(rows.len() > 1);
        assert_eq!(rows.concat(), (0..12).collect::<Vec<_>>());
    }

    #[test]
    fn titles_wrap_at_word_boundaries() {
        let t = "repro hat on hat-table4: mean response time normalized to page mapping, per workload, after a sequential fill";
        let lines = wrap(t, 16.0, 540);
        assert!(lines.len() == 2, "{lines:?}");
        assert_eq!(lines.join(" "), t);
    }

    #[test]
    #[should_panic(expected = "3 values for 2 groups")]
    fn more_values_than_groups_is_a_bug() {
        let _ = Bars::new("x", "y", ["a", "b"]).series("s", [1.0, 2.0, 3.0]);
    }
}
