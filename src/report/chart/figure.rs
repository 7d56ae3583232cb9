//! What every chart of a report is: a [`Figure`] with its words and its drawing, drawn to SVG here (to PNG in
//! [`super::png`]), and where each of its plots is ([`PlotFrame`]) for the HTML views.

use plotters::{coord::types::RangedCoordf64, prelude::*};
use serde::Serialize;

use super::{
    WIDTH,
    error::{ChartError, drawing},
    font,
};

/// One figure of a report: what it shows in words (the image's text alternative) and how to draw it.
pub trait Figure {
    /// Height in pixels at [`WIDTH`].
    fn height(&self) -> u32;
    /// The figure's content in a few sentences, for whoever cannot see it.
    fn alt_text(&self) -> String;
    /// Draws the figure on `root`, which is [`WIDTH`] × [`Figure::height`]; where each chart's plot is.
    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<Vec<PlotFrame>, ChartError>;
}

/// Where a chart's plot is in its image, in pixels, and the x values at its left and right edges: what the
/// HTML views need to turn the pointer's position into the values under it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlotFrame {
    /// The chart's id ([`super::impact::ImpactChart::id`], [`super::chaos::ChaosChart::id`]).
    pub chart: &'static str,
    pub left: i32,
    pub right: i32,
    pub top: i32,
    pub bottom: i32,
    pub x_from: f64,
    pub x_to: f64,
}

impl PlotFrame {
    pub(super) fn of<'a, DB: DrawingBackend + 'a>(
        chart: &ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
        id: &'static str,
        (x_from, x_to): (f64, f64),
    ) -> Self {
        let (x, y) = chart.plotting_area().get_pixel_range();
        PlotFrame {
            chart: id,
            left: x.start,
            right: x.end,
            top: y.start,
            bottom: y.end,
            x_from,
            x_to,
        }
    }
}

/// `figure` as an SVG document, and where its plots are.
pub fn svg(figure: &impl Figure) -> Result<(String, Vec<PlotFrame>), ChartError> {
    font::register()?;
    let mut out = String::new();
    let frames = {
        let root = SVGBackend::with_string(&mut out, (WIDTH, figure.height())).into_drawing_area();
        let frames = figure.draw(&root)?;
        root.present().map_err(drawing)?;
        frames
    };
    Ok((out, frames))
}
