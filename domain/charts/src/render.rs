//! Drawing with plotters' SVG backend.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::axis::Marked;
use crate::describe::{description, display_name, finish, title_text};
use crate::group::{MAX_SERIES, group};
use crate::legend::{self, Legend, ROW_PX, SWATCH_PX};
use crate::palette::{AXIS, GRID, TEXT, series_colour};
use crate::text::{chars_in, fit, width_px};
use crate::ticks::{Ticks, date_labels, x_label_indices, y_ticks};
use crate::validate::validate;
use crate::{ChartError, Series, Style, TimeChart};

const FONT: &str = "sans-serif";
/// Pixel sizes as they appear in the SVG (plotters writes its size divided by 1.24).
const LABEL_PX: f64 = 11.0;
const TITLE_PX: f64 = 14.0;
const MARGIN_PX: u32 = 10;
const X_LABELS_PX: u32 = 24;
/// Share of the height the legend may take before names are shortened.
const LEGEND_SHARE: f64 = 0.35;

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

fn font(px: f64) -> TextStyle<'static> {
    (FONT, px * 1.24).into_font().color(&TEXT)
}

fn draw_err(error: impl std::fmt::Display) -> ChartError {
    ChartError::Draw(error.to_string())
}

/// Renders `chart` as a standalone SVG document `width`×`height` pixels.
///
/// More than [`MAX_SERIES`] series are folded with [`crate::top_series`]; a chart with no buckets,
/// no series or only zeros is drawn as an empty frame saying "No data".
pub fn svg(chart: &TimeChart, width: u32, height: u32) -> Result<String, ChartError> {
    draw(chart, width, height, true)
}

/// [`svg`] without the title drawn above the plot, for a page that writes it beside the
/// picture as its caption (it stays the picture's `<title>`), so it is not said twice.
pub fn svg_uncaptioned(chart: &TimeChart, width: u32, height: u32) -> Result<String, ChartError> {
    draw(chart, width, height, false)
}

fn draw(chart: &TimeChart, width: u32, height: u32, captioned: bool) -> Result<String, ChartError> {
    validate(chart, width, height)?;
    let (shown, folded) = group(&chart.series, MAX_SERIES);
    let empty = chart.buckets.is_empty() || shown.iter().all(|s| s.total() == 0.0);
    let title = title_text(chart);
    let desc = description(chart, &shown, empty);

    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let caption = if captioned {
            fit(&title, chars_in(width - 2 * MARGIN_PX, TITLE_PX))
        } else {
            String::new()
        };
        if empty {
            draw_empty(&root, &caption)?;
        } else {
            let names: Vec<String> = shown.iter().map(|s| display_name(&s.name)).collect();
            let legend = legend::layout(
                &names,
                width - 2 * MARGIN_PX,
                (f64::from(height) * LEGEND_SHARE) as u32,
                LABEL_PX,
            );
            let (plot, legend_area) = root.split_vertically(height - legend.height_px());
            let colours: Vec<RGBColor> = (0..shown.len())
                .map(|i| series_colour(i, folded && i + 1 == shown.len()))
                .collect();
            draw_plot(&plot, chart, &shown, &colours, &caption)?;
            draw_legend(&legend_area, &legend, &colours, chart.style)?;
        }
        root.present().map_err(draw_err)?;
    }
    finish(&out, &title, &desc)
}

fn draw_empty(root: &Area<'_>, caption: &str) -> Result<(), ChartError> {
    let (width, height) = root.dim_in_pixel();
    let top = if caption.is_empty() { 0 } else { 30 };
    let (w, h) = (width as i32, height as i32);
    let (m, t) = (MARGIN_PX as i32, top + MARGIN_PX as i32);
    if top > 0 {
        let style = font(TITLE_PX).pos(Pos::new(HPos::Center, VPos::Top));
        root.draw(&Text::new(caption.to_owned(), (w / 2, m), style))
            .map_err(draw_err)?;
    }
    root.draw(&Rectangle::new(
        [(m, t), (w - m, h - m)],
        AXIS.stroke_width(1),
    ))
    .map_err(draw_err)?;
    let style = font(TITLE_PX).pos(Pos::new(HPos::Center, VPos::Center));
    root.draw(&Text::new("No data", (w / 2, (t + h - m) / 2), style))
        .map_err(draw_err)
}

fn draw_plot(
    area: &Area<'_>,
    chart: &TimeChart,
    shown: &[Series],
    colours: &[RGBColor],
    caption: &str,
) -> Result<(), ChartError> {
    let (width, height) = area.dim_in_pixel();
    let buckets = chart.buckets.len();
    let max = match chart.style {
        Style::StackedBars => (0..buckets)
            .map(|i| {
                (shown.iter().map(|s| s.values[i]))
                    .filter(|v| !v.is_nan())
                    .sum::<f64>()
            })
            .fold(0.0, f64::max),
        Style::Lines => shown
            .iter()
            .flat_map(|s| s.values.iter().copied())
            .fold(0.0, f64::max),
    };
    let target_ticks = (height / 60).clamp(2, 6) as usize;
    let Ticks {
        values: y_values,
        labels: y_labels,
        top,
    } = y_ticks(chart.unit, max, target_ticks);
    let y_label_px = y_labels
        .iter()
        .map(|l| width_px(l, LABEL_PX))
        .max()
        .unwrap_or(0)
        + 10;

    let dates = date_labels(&chart.buckets);
    let date_px = dates
        .iter()
        .map(|d| width_px(d, LABEL_PX))
        .max()
        .unwrap_or(0)
        + 12;
    let axis_px = width.saturating_sub(y_label_px + 2 * MARGIN_PX);
    let x_values: Vec<f64> = x_label_indices(buckets, date_px, axis_px)
        .into_iter()
        .map(|i| i as f64)
        .collect();

    let mut builder = ChartBuilder::on(area);
    if !caption.is_empty() {
        builder.caption(caption, font(TITLE_PX));
    }
    let mut plot = builder
        .margin(MARGIN_PX)
        .x_label_area_size(X_LABELS_PX)
        .y_label_area_size(y_label_px)
        .build_cartesian_2d(
            Marked::new(-0.5..buckets as f64 - 0.5, x_values),
            Marked::new(0.0..top, y_values.clone()),
        )
        .map_err(draw_err)?;

    let x_label = |x: &f64| {
        let i = x.round();
        if i >= 0.0 {
            dates.get(i as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    let y_label = |y: &f64| {
        y_values
            .iter()
            .zip(&y_labels)
            .min_by(|a, b| (a.0 - y).abs().total_cmp(&(b.0 - y).abs()))
            .map(|(_, label)| label.clone())
            .unwrap_or_default()
    };
    plot.configure_mesh()
        .disable_x_mesh()
        .bold_line_style(GRID)
        .light_line_style(TRANSPARENT)
        .axis_style(AXIS)
        .label_style(font(LABEL_PX))
        .x_label_formatter(&x_label)
        .y_label_formatter(&y_label)
        .draw()
        .map_err(draw_err)?;

    match chart.style {
        Style::StackedBars => {
            let mut base = vec![0.0; buckets];
            for (series, colour) in shown.iter().zip(colours) {
                let bars = series.values.iter().enumerate().filter(|(_, v)| **v > 0.0);
                let rects: Vec<_> = bars
                    .map(|(i, v)| {
                        let x = i as f64;
                        let rect = [(x - 0.4, base[i]), (x + 0.4, base[i] + v)];
                        base[i] += v;
                        Rectangle::new(rect, colour.filled())
                    })
                    .collect();
                plot.draw_series(rects).map_err(draw_err)?;
            }
        }
        Style::Lines => {
            let point_px = if buckets <= 60 { 3 } else { 0 };
            for (series, colour) in shown.iter().zip(colours) {
                // A line through the buckets with a value; a bucket without one breaks it.
                let points: Vec<(f64, f64)> = (series.values.iter().enumerate())
                    .map(|(i, v)| (i as f64, *v))
                    .collect();
                for segment in points.split(|(_, v)| v.is_nan()).filter(|s| !s.is_empty()) {
                    // A lone value is a dot, however many buckets there are.
                    let size = if segment.len() == 1 {
                        point_px.max(3)
                    } else {
                        point_px
                    };
                    let line =
                        LineSeries::new(segment.iter().copied(), colour.filled().stroke_width(2))
                            .point_size(size);
                    plot.draw_series(line).map_err(draw_err)?;
                }
            }
        }
    }
    Ok(())
}

fn draw_legend(
    area: &Area<'_>,
    legend: &Legend,
    colours: &[RGBColor],
    style: Style,
) -> Result<(), ChartError> {
    let swatch = SWATCH_PX as i32;
    for (entry, colour) in legend.entries.iter().zip(colours) {
        let x = (MARGIN_PX + entry.x) as i32;
        let y = (entry.row * ROW_PX) as i32 + 2;
        match style {
            Style::StackedBars => area.draw(&Rectangle::new(
                [(x, y + 1), (x + swatch, y + 1 + swatch)],
                colour.filled(),
            )),
            Style::Lines => area.draw(&PathElement::new(
                vec![(x, y + 1 + swatch / 2), (x + swatch, y + 1 + swatch / 2)],
                colour.stroke_width(3),
            )),
        }
        .map_err(draw_err)?;
        let label_pos = (
            (MARGIN_PX + legend::label_x(entry)) as i32,
            y + 1 + swatch / 2,
        );
        let text_style = font(LABEL_PX).pos(Pos::new(HPos::Left, VPos::Center));
        area.draw(&Text::new(entry.label.clone(), label_pos, text_style))
            .map_err(draw_err)?;
    }
    Ok(())
}
