//! A chart's legend and its last step: the series' labels in a box in the plot's corner, or a row of colour
//! swatches and names under the chart where it covers no data; then where the plot is ([`finish`]).

use plotters::{
    coord::{Shift, types::RangedCoordf64},
    prelude::*,
};

use super::{
    error::{ChartError, drawing},
    figure::PlotFrame,
    font::FAMILY,
    palette::{GRID, TEXT},
};

/// Height of the row under a chart.
pub(super) const HEIGHT: u32 = 28;

/// Where a chart's legend is drawn.
pub(super) enum Legend<'b, DB: DrawingBackend> {
    /// The series' labels, top left in the plot, on a white box.
    InPlot,
    /// `items` (name, colour) left to right on `area` under the chart, starting `left` pixels in.
    Below {
        area: &'b DrawingArea<DB, Shift>,
        left: i32,
        items: &'b [(&'b str, RGBColor)],
    },
}

/// Draws `chart`'s legend where `legend` says, and gives where its plot is: the chart's id and the x values
/// at the plot's left and right edges.
pub(super) fn finish<'a, DB: DrawingBackend + 'a>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    legend: Legend<'_, DB>,
    id: &'static str,
    x: (f64, f64),
) -> Result<PlotFrame, ChartError> {
    match legend {
        Legend::InPlot => series_labels(chart)?,
        Legend::Below { area, left, items } => row(area, left, items)?,
    }
    Ok(PlotFrame::of(chart, id, x))
}

fn series_labels<'a, DB: DrawingBackend + 'a>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
) -> Result<(), ChartError> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(GRID)
        .label_font((FAMILY, 12).into_font().color(&TEXT))
        .draw()
        .map_err(drawing)
}

fn row<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    left: i32,
    items: &[(&str, RGBColor)],
) -> Result<(), ChartError> {
    let style = (FAMILY, 12).into_font().color(&TEXT);
    let mut x = left;
    for (name, colour) in items {
        area.draw(&Rectangle::new([(x, 8), (x + 10, 18)], colour.filled()))
            .map_err(drawing)?;
        area.draw_text(name, &style, (x + 14, 7)).map_err(drawing)?;
        let (width, _) = area.estimate_text_size(name, &style).map_err(drawing)?;
        x += 14 + width as i32 + 18;
    }
    Ok(())
}
