//! A time series as a line with its legend entry, a fault's window and a moment marked: what every line chart
//! draws the same way.

use plotters::{coord::types::RangedCoordf64, prelude::*};

use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{
    error::{ChartError, drawing},
    font::FAMILY,
    palette::{FAULT_LABEL, FAULT_WINDOW, MARK},
};

/// `points` as a line (dashed: a baseline) named `name` in the legend; nothing without points.
pub(super) fn series_line<'a, DB: DrawingBackend + 'a>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    points: Vec<(f64, f64)>,
    colour: RGBColor,
    name: &str,
    dashed: bool,
) -> Result<(), ChartError> {
    if points.is_empty() {
        return Ok(());
    }
    let style = colour.stroke_width(2);
    // A line needs two points: one second of data is a dot.
    if points.len() == 1 {
        chart
            .draw_series(points.iter().map(|&p| Circle::new(p, 3, colour.filled())))
            .map_err(drawing)?;
    }
    let drawn = if dashed {
        chart.draw_series(DashedLineSeries::new(points, 5, 3, style))
    } else {
        chart.draw_series(LineSeries::new(points, style))
    };
    drawn
        .map_err(drawing)?
        .label(name)
        .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], style));
    Ok(())
}

/// A fault's active window from `from` to `until` (x), shaded over `low..high` (y) and labelled `label` in
/// its lower left corner.
pub(super) fn fault_window<'a, DB: DrawingBackend + 'a>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    (from, until): (f64, f64),
    (low, high): (f64, f64),
    label: &str,
) -> Result<(), ChartError> {
    chart
        .draw_series([Rectangle::new(
            [(from, low), (until, high)],
            FAULT_WINDOW.filled(),
        )])
        .map_err(drawing)?;
    chart
        .draw_series([EmptyElement::at((from, low))
            + Text::new(
                label.to_owned(),
                (4, -16),
                (FAMILY, 12).into_font().color(&FAULT_LABEL),
            )])
        .map_err(drawing)?;
    Ok(())
}

/// A moment (detection, recovery) at `x`: a dashed vertical line over `low..high`, with `label` beside its top
/// (on its left when `label_left`, so that a mark near the right edge keeps its label inside the plot).
pub(super) fn time_mark<'a, DB: DrawingBackend + 'a>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    x: f64,
    (low, high): (f64, f64),
    label: Option<&str>,
    label_left: bool,
) -> Result<(), ChartError> {
    chart
        .draw_series(DashedLineSeries::new(
            [(x, low), (x, high)],
            4,
            3,
            MARK.stroke_width(2),
        ))
        .map_err(drawing)?;
    let Some(label) = label else {
        return Ok(());
    };
    let (offset, anchor) = if label_left {
        (-3, HPos::Right)
    } else {
        (3, HPos::Left)
    };
    chart
        .draw_series([EmptyElement::at((x, high))
            + Text::new(
                label.to_owned(),
                (offset, 2),
                (FAMILY, 12)
                    .into_font()
                    .color(&MARK)
                    .pos(Pos::new(anchor, VPos::Top)),
            )])
        .map_err(drawing)?;
    Ok(())
}
