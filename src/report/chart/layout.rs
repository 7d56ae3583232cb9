//! How a figure is laid out: a header over bands of given heights, each holding one chart built by
//! [`chart_on`].

use plotters::{coord::types::RangedCoordf64, prelude::*};

use super::{
    error::{ChartError, drawing},
    figure::PlotFrame,
    font, header, palette,
};

/// A chart on `area` under `caption`, `y_label_area` pixels left of the plot for the y labels, over `x` × `y`.
pub(crate) fn chart_on<'a, DB: DrawingBackend + 'a>(
    area: &'a DrawingArea<DB, plotters::coord::Shift>,
    caption: &str,
    y_label_area: u32,
    x: std::ops::Range<f64>,
    y: std::ops::Range<f64>,
) -> Result<ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>, ChartError> {
    ChartBuilder::on(area)
        .caption(
            caption,
            (font::FAMILY, 18).into_font().color(&palette::TEXT),
        )
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(y_label_area)
        .build_cartesian_2d(x, y)
        .map_err(drawing)
}

/// A figure's height: a header of `header_lines` lines (`None`: no header) above bands of `heights`.
pub(crate) fn stacked_height(header_lines: Option<usize>, heights: &[u32]) -> u32 {
    header_lines.map_or(0, header::height) + heights.iter().sum::<u32>()
}

/// Draws a figure: `root` white, the `header` lines at the top (`None`: no header), then one band per height,
/// each drawn by `draw_band(its index, its area)`; where each band's plot is.
pub(crate) fn stack<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    header: Option<&[(String, RGBColor)]>,
    heights: &[u32],
    mut draw_band: impl FnMut(
        usize,
        &DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<PlotFrame, ChartError>,
) -> Result<Vec<PlotFrame>, ChartError> {
    root.fill(&WHITE).map_err(drawing)?;
    let mut rest = root.clone();
    if let Some(lines) = header {
        let (top, below) = rest.split_vertically(header::height(lines.len()));
        header::draw(&top, lines)?;
        rest = below;
    }
    let mut frames = Vec::with_capacity(heights.len());
    for (index, &height) in heights.iter().enumerate() {
        let (area, below) = rest.split_vertically(height);
        frames.push(draw_band(index, &area)?);
        rest = below;
    }
    Ok(frames)
}
