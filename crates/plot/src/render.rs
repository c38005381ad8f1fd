//! Draws a figure on any plotters backend: axes with units, round time
//! ticks, one line per series broken at gaps, isolated points as dots,
//! and a legend under the chart (outside the data, so it hides nothing).

use plotters::prelude::*;

use crate::data::PlotData;
use crate::definition::{Derive, PlotDef};
use crate::timeaxis::{self, TimeTicks};
use crate::units::{axis_scale, plotted_unit, AxisScale};

/// The family every text is drawn in (registered by [`crate::output::load_font`]).
pub const FONT: &str = "sans-serif";

/// Series colours: Okabe and Ito's colour-blind-safe palette (yellow,
/// unreadable on white, left out; black replaced by a grey that the
/// axes do not use).
pub const PALETTE: &[RGBColor] = &[
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(68, 68, 68),
];

/// The x axis: seconds since the first point, linear, with the ticks
/// [`timeaxis`] chose (plotters' own ticks are round decimal numbers,
/// not round instants).
#[derive(Debug, Clone)]
pub struct TimeCoord {
    /// Range shown.
    lo: f64,
    /// Range shown.
    hi: f64,
    /// Tick positions.
    ticks: Vec<f64>,
}

impl Ranged for TimeCoord {
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        // As plotters' numeric ranges do: truncated towards limit.0.
        let d = (value - self.lo) / (self.hi - self.lo) * (limit.1 - limit.0) as f64;
        limit.0
            + if limit.1 >= limit.0 {
                (d + 1e-3).floor()
            } else {
                (d - 1e-3).ceil()
            } as i32
    }

    fn key_points<Hint: plotters::coord::ranged1d::KeyPointHint>(&self, _hint: Hint) -> Vec<f64> {
        self.ticks.clone()
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

/// Where the data went on the page, for checking a figure against its
/// CSV: plotters draws x at plot_x.0 + (x − x.0) / (x.1 − x.0) ×
/// (plot_x.1 − plot_x.0), and y the same way from plot_y.1 (the bottom
/// row, for y.0) towards plot_y.0 (the top row, for y.1), each offset
/// truncated towards its start.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    /// Plotting area's left and right pixel columns.
    pub plot_x: (i32, i32),
    /// Plotting area's top and bottom pixel rows (left axis).
    pub plot_y: (i32, i32),
    /// The same for series on the right axis.
    pub plot_x2: (i32, i32),
    /// The same for series on the right axis.
    pub plot_y2: (i32, i32),
    /// Unix time (µs) at x = 0; x is in seconds after it.
    pub t0_us: i64,
    /// x range (seconds after `t0_us`).
    pub x: (f64, f64),
    /// Left axis range, in scaled units.
    pub y: (f64, f64),
    /// Right axis range, if any.
    pub y2: Option<(f64, f64)>,
    /// Values are divided by these before drawing (left, right).
    pub divisors: (f64, f64),
    /// The time axis ticks.
    pub ticks: TimeTicks,
    /// Axis labels (left, right).
    pub labels: (String, Option<String>),
}

/// Why a figure could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// No series holds a value.
    #[error("nothing to plot: no points for {fields} of stream {stream:?}{range}; check the senders, \"from\" and \"to\"")]
    Empty {
        /// The fields asked for.
        fields: String,
        /// The stream.
        stream: String,
        /// The range asked for, if any.
        range: String,
    },
    /// The local time offset could not be read.
    #[error(transparent)]
    Local(#[from] timeaxis::LocalOffsetError),
    /// The backend failed (a font or I/O error).
    #[error("drawing the figure: {0}")]
    Draw(String),
}

fn draw_err<E: std::fmt::Display>(e: E) -> RenderError {
    RenderError::Draw(e.to_string())
}

/// A tick value without trailing zeros (at most six decimals).
pub fn short_number(v: f64) -> String {
    let s = format!("{v:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_owned()
    } else {
        s.to_owned()
    }
}

/// Range of `values` with 5 % room above and below.
fn padded(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if !lo.is_finite() {
        return None;
    }
    let pad = if hi > lo {
        (hi - lo) * 0.05
    } else if lo != 0.0 {
        lo.abs() * 0.1
    } else {
        1.0
    };
    Some((lo - pad, hi + pad))
}

/// The legend text of each series: only what tells them apart.
fn legend_labels(data: &PlotData) -> Vec<String> {
    let senders: std::collections::BTreeSet<&str> =
        data.series.iter().map(|s| s.sender.as_str()).collect();
    let fields: std::collections::BTreeSet<&str> =
        data.series.iter().map(|s| s.field.as_str()).collect();
    let any_right = data.series.iter().any(|s| s.right);
    data.series
        .iter()
        .map(|s| {
            let mut l = match (senders.len() > 1, fields.len() > 1) {
                (true, false) => s.sender.clone(),
                (false, _) => s.field.clone(),
                (true, true) => format!("{} {}", s.sender, s.field),
            };
            if any_right {
                l.push_str(if s.right { " (right)" } else { " (left)" });
            }
            l
        })
        .collect()
}

/// Text sizes and spacing, from the figure's height.
struct Sizes {
    tick: f64,
    label: f64,
    title: f64,
    legend_row: i32,
}

impl Sizes {
    fn for_height(h: u32) -> Sizes {
        let k = (h as f64 / 600.0).clamp(0.6, 3.0);
        Sizes {
            tick: 13.0 * k,
            label: 15.0 * k,
            title: 20.0 * k,
            legend_row: (22.0 * k) as i32,
        }
    }
}

/// Draws `data` as `def` describes on `backend`.
pub fn draw<DB: DrawingBackend>(
    backend: DB,
    def: &PlotDef,
    data: &PlotData,
) -> Result<Layout, RenderError> {
    let (w, h) = backend.get_size();
    let sz = Sizes::for_height(h);
    let points = || data.series.iter().flat_map(|s| s.points.iter());
    let times = points().filter(|p| p.v.is_some()).map(|p| p.t_us);
    let (Some(t0), Some(t1)) = (times.clone().min(), times.max()) else {
        let fields: Vec<&str> = def.all_fields().map(|(f, _)| f).collect();
        let range = match (&def.from, &def.to) {
            (None, None) => String::new(),
            (f, t) => format!(
                " from {} to {}",
                f.as_deref().unwrap_or("the start"),
                t.as_deref().unwrap_or("the end")
            ),
        };
        return Err(RenderError::Empty {
            fields: fields.join(", "),
            stream: def.stream.clone(),
            range,
        });
    };
    let x_max = ((t1 - t0) as f64 / 1e6).max(1e-3);

    let rate = def.derive == Derive::Rate;
    let scale_of = |right: bool| -> AxisScale {
        let fields: Vec<(String, String)> = def
            .all_fields()
            .filter(|(_, r)| *r == right)
            .map(|(f, _)| {
                let unit = data.units.get(f).map(String::as_str);
                (f.to_owned(), plotted_unit(unit, rate))
            })
            .collect();
        let max_abs = data
            .series
            .iter()
            .filter(|s| s.right == right)
            .flat_map(|s| s.points.iter().filter_map(|p| p.v))
            .fold(0.0f64, |m, v| m.max(v.abs()));
        axis_scale(&fields, max_abs)
    };
    let left = scale_of(false);
    let right = (!def.y2.is_empty()).then(|| scale_of(true));
    let range_of = |r: bool, div: f64| {
        padded(
            data.series
                .iter()
                .filter(|s| s.right == r)
                .flat_map(|s| s.points.iter().filter_map(|p| p.v))
                .map(|v| v / div),
        )
        .unwrap_or((0.0, 1.0))
    };
    let y = range_of(false, left.divisor);
    let y2 = right.as_ref().map(|r| range_of(true, r.divisor));

    let root = backend.into_drawing_area();
    root.fill(&WHITE).map_err(draw_err)?;
    let tick_font: TextStyle = (FONT, sz.tick).into();
    let text_w = |t: &str| -> Result<f64, RenderError> {
        Ok(root.estimate_text_size(t, &tick_font).map_err(draw_err)?.0 as f64)
    };

    // Legend entries under the chart: bar, gap, text, spacing.
    let labels = legend_labels(data);
    let mut entries = Vec::with_capacity(labels.len());
    for l in &labels {
        entries.push((34.0 + text_w(l)? + 24.0) as i32);
    }
    let usable = w as i32 - 40;
    let mut rows = 1;
    let mut cursor = 0;
    for e in &entries {
        if cursor > 0 && cursor + e > usable {
            rows += 1;
            cursor = 0;
        }
        cursor += e;
    }
    let legend_h = rows * sz.legend_row + 10;

    // Room for the y tick labels (about as wide as the range's ends with
    // two decimals) and the axis description beside them.
    let mut y_area = 0.0f64;
    for (lo, hi) in std::iter::once(y).chain(y2) {
        for v in [lo, hi] {
            y_area = y_area.max(text_w(&format!("{v:.2}"))?);
        }
    }
    let y_area = (y_area + sz.label * 1.6 + 16.0) as u32;
    let x_area = (sz.tick * 2.0 + sz.label * 2.2) as u32;
    let margin = 12;
    let plot_w =
        w as f64 - y_area as f64 * if y2.is_some() { 2.0 } else { 1.0 } - 3.0 * margin as f64;
    // As many time ticks as their labels leave room for.
    let mut ticks = timeaxis::ticks(def.timeaxis, t0 as f64 / 1e6, t1 as f64 / 1e6, 2)?;
    for n in (3..=12).rev() {
        let t = timeaxis::ticks(def.timeaxis, t0 as f64 / 1e6, t1 as f64 / 1e6, n)?;
        let mut widest = 0.0f64;
        for (_, l) in &t.ticks {
            widest = widest.max(text_w(l)?);
        }
        if t.ticks.len() as f64 * (widest + 24.0) <= plot_w {
            ticks = t;
            break;
        }
    }
    let key_points: Vec<f64> = ticks.ticks.iter().map(|(x, _)| *x).collect();

    let (chart_area, legend_area) = root.split_vertically(h as i32 - legend_h);
    let mut builder = ChartBuilder::on(&chart_area);
    builder
        .margin(margin)
        .x_label_area_size(x_area)
        .y_label_area_size(y_area);
    if y2.is_some() {
        builder.right_y_label_area_size(y_area);
    } else {
        builder.margin_right(margin * 2);
    }
    if let Some(title) = &def.title {
        builder.caption(title, (FONT, sz.title));
    }
    let x_range = || TimeCoord {
        lo: 0.0,
        hi: x_max,
        ticks: key_points.clone(),
    };
    let (y2_lo, y2_hi) = y2.unwrap_or((0.0, 1.0));
    let mut chart = builder
        .build_cartesian_2d(x_range(), y.0..y.1)
        .map_err(draw_err)?
        .set_secondary_coord(x_range(), y2_lo..y2_hi);

    let grid = RGBColor(225, 225, 225);
    let number = |v: &f64| short_number(*v);
    let tick_label = |x: &f64| ticks.label(*x);
    chart
        .configure_mesh()
        .x_labels(key_points.len().max(2))
        .y_labels(8)
        .x_label_formatter(&tick_label)
        .y_label_formatter(&number)
        .x_desc(ticks.description.as_str())
        .y_desc(left.label.as_str())
        .label_style((FONT, sz.tick))
        .axis_desc_style((FONT, sz.label))
        .light_line_style(TRANSPARENT)
        .bold_line_style(grid)
        .draw()
        .map_err(draw_err)?;
    if let Some(r) = &right {
        chart
            .configure_secondary_axes()
            .y_labels(8)
            .y_label_formatter(&number)
            .y_desc(r.label.as_str())
            .label_style((FONT, sz.tick))
            .axis_desc_style((FONT, sz.label))
            .draw()
            .map_err(draw_err)?;
    }

    // At least 2 pixels: bitmap lines of width 1 are anti-aliased hairlines.
    let stroke = (h as f64 / 300.0).round().clamp(2.0, 6.0) as u32;
    for (i, s) in data.series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let div = if s.right {
            right.as_ref().map(|r| r.divisor).unwrap_or(1.0)
        } else {
            left.divisor
        };
        for run in s.runs() {
            let xy: Vec<(f64, f64)> = run
                .iter()
                .map(|(t, v)| ((t - t0) as f64 / 1e6, v / div))
                .collect();
            let style = color.stroke_width(stroke);
            let result = match (xy.len(), s.right) {
                (1, false) => chart
                    .draw_series(std::iter::once(Circle::new(
                        xy[0],
                        stroke + 2,
                        color.filled(),
                    )))
                    .map(|_| ()),
                (1, true) => chart
                    .draw_secondary_series(std::iter::once(Circle::new(
                        xy[0],
                        stroke + 2,
                        color.filled(),
                    )))
                    .map(|_| ()),
                (_, false) => chart.draw_series(LineSeries::new(xy, style)).map(|_| ()),
                (_, true) => chart
                    .draw_secondary_series(LineSeries::new(xy, style))
                    .map(|_| ()),
            };
            result.map_err(draw_err)?;
        }
    }

    // The legend: a thick colour bar and the series' name per entry.
    let (lx, ly) = (20i32, 4i32);
    let (mut x, mut row) = (lx, 0);
    for (i, (l, entry)) in labels.iter().zip(entries).enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        if x > lx && x + entry > usable + lx {
            row += 1;
            x = lx;
        }
        let cy = ly + row * sz.legend_row + sz.legend_row / 2;
        legend_area
            .draw(&Rectangle::new(
                [
                    (x, cy - stroke as i32 - 1),
                    (x + 26, cy + stroke as i32 + 1),
                ],
                color.filled(),
            ))
            .map_err(draw_err)?;
        let font =
            (FONT, sz.tick)
                .into_font()
                .color(&BLACK)
                .pos(plotters::style::text_anchor::Pos::new(
                    plotters::style::text_anchor::HPos::Left,
                    plotters::style::text_anchor::VPos::Center,
                ));
        legend_area
            .draw(&Text::new(l.clone(), (x + 34, cy), font))
            .map_err(draw_err)?;
        x += entry;
    }

    let xr = chart.x_range();
    let yr = chart.y_range();
    // The pixels plotters maps the ranges' ends to.
    let lo = chart.backend_coord(&(xr.start, yr.start));
    let hi = chart.backend_coord(&(xr.end, yr.end));
    // The right axis spans one more pixel each way (plotters builds it from
    // the plotting area without the primary's last-pixel adjustment).
    let secondary = chart.borrow_secondary();
    let (lo2, hi2) = (
        secondary.backend_coord(&(xr.start, y2_lo)),
        secondary.backend_coord(&(xr.end, y2_hi)),
    );
    let layout = Layout {
        plot_x: (lo.0, hi.0),
        plot_y: (hi.1, lo.1),
        plot_x2: (lo2.0, hi2.0),
        plot_y2: (hi2.1, lo2.1),
        t0_us: t0,
        x: (xr.start, xr.end),
        y: (yr.start, yr.end),
        y2,
        divisors: (
            left.divisor,
            right.as_ref().map(|r| r.divisor).unwrap_or(1.0),
        ),
        ticks: ticks.clone(),
        labels: (left.label.clone(), right.as_ref().map(|r| r.label.clone())),
    };
    drop(chart);
    root.present().map_err(draw_err)?;
    Ok(layout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_ranges() {
        assert_eq!(short_number(0.25), "0.25");
        assert_eq!(short_number(-0.0000001), "0");
        assert_eq!(short_number(120.0), "120");
        assert_eq!(padded([1.0, 3.0].into_iter()), Some((0.9, 3.1)));
        assert_eq!(padded([0.0].into_iter()), Some((-1.0, 1.0)));
        assert_eq!(padded(std::iter::empty()), None);
    }
}
