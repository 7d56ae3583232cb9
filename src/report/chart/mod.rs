//! Charts of both reports, drawn from the report models (the values the markdown and `structuredContent`
//! show): [`impact`] (latency over time with the fault's window, the latency distribution, errors and timeouts
//! per second, the SLO lines) and [`chaos`] (the per-tool call timeline, availability and correctness per tool,
//! time to detect and recover). Each chart is drawn once per backend: a PNG for a tool result's image block
//! ([`png`]), SVG for the HTML views. Text is drawn in the embedded font ([`font`]), so a chart looks the same
//! on every machine; a long run is drawn from at most one point per pixel column ([`columns`]).

pub mod app;
pub mod capacity;
pub mod chaos;
mod columns;
mod font;
mod header;
pub mod impact;
mod impact_rate;
mod impact_requests;
mod legend;
pub mod page;
pub mod page_file;
mod palette;
pub mod png;
pub mod proxy;
mod series;

use plotters::{
    coord::types::RangedCoordf64,
    prelude::*,
    style::text_anchor::{HPos, Pos, VPos},
};
use serde::Serialize;

/// Width of every chart, in pixels: readable as is in a chat window.
pub const WIDTH: u32 = 800;

#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    #[error("the chart font cannot be loaded")]
    Font,
    #[error("cannot draw the chart: {0}")]
    Draw(String),
    #[error("cannot encode the chart as PNG: {0}")]
    Encode(String),
}

/// A drawing error of any backend, as a [`ChartError`].
pub(crate) fn drawing<E: std::error::Error + Send + Sync>(
    error: plotters::drawing::DrawingAreaErrorKind<E>,
) -> ChartError {
    ChartError::Draw(error.to_string())
}

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
    /// The chart's id ([`impact::ImpactChart::id`], [`chaos::ChaosChart::id`]).
    pub chart: &'static str,
    pub left: i32,
    pub right: i32,
    pub top: i32,
    pub bottom: i32,
    pub x_from: f64,
    pub x_to: f64,
}

impl PlotFrame {
    fn of<'a, DB: DrawingBackend + 'a>(
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

/// A value axis in milliseconds: linear from 0, or log10 when the highest value is over [`LOG_RATIO`] times
/// the lowest (a tail far above the median would flatten everything else). Values are drawn at [`Self::at`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct ValueAxis {
    log: bool,
    low: f64,
    high: f64,
}

/// Highest/lowest ratio from which a latency axis is logarithmic.
const LOG_RATIO: f64 = 20.0;
/// The lowest value a log axis shows (1 µs, in ms).
const LOG_FLOOR_MS: f64 = 0.001;

pub(crate) fn value_axis(values: impl Iterator<Item = f64>) -> ValueAxis {
    let (min, max) = values
        .filter(|v| v.is_finite())
        .fold((f64::MAX, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if max <= 0.0 {
        return ValueAxis {
            log: false,
            low: 0.0,
            high: 1.0,
        };
    }
    let min = min.max(LOG_FLOOR_MS);
    if max / min > LOG_RATIO {
        ValueAxis {
            log: true,
            low: min.log10() - 0.1,
            high: max.log10() + 0.15,
        }
    } else {
        ValueAxis {
            log: false,
            low: 0.0,
            high: max * 1.15,
        }
    }
}

impl ValueAxis {
    /// Where `value_ms` is drawn.
    pub(crate) fn at(&self, value_ms: f64) -> f64 {
        if self.log {
            value_ms.max(LOG_FLOOR_MS).log10()
        } else {
            value_ms
        }
    }

    pub(crate) fn range(&self) -> std::ops::Range<f64> {
        self.low..self.high
    }

    pub(crate) fn bounds(&self) -> (f64, f64) {
        (self.low, self.high)
    }

    /// The tick label at the drawn position `y`, in ms.
    pub(crate) fn label(&self, y: f64) -> String {
        let ms = if self.log { 10f64.powf(y) } else { y };
        if ms >= 1000.0 && self.log {
            format!("{:.0}k", ms / 1000.0)
        } else if ms >= 10.0 {
            format!("{ms:.0}")
        } else if ms >= 1.0 {
            format!("{ms:.1}")
        } else {
            format!("{ms:.2}")
        }
    }

    /// Whether plotters' own labels serve (linear), or [`Self::draw_ticks`] draws them (log).
    pub(crate) fn plotter_labels(&self) -> usize {
        if self.log { 0 } else { 6 }
    }

    /// On a log axis: a grid line and a label at each 1, 2 and 5 × 10^k in range (the labels plotters would
    /// place evenly in log space read 3.2, 32, 316).
    pub(crate) fn draw_ticks<'a, DB: DrawingBackend + 'a>(
        &self,
        chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
        x: (f64, f64),
    ) -> Result<(), ChartError> {
        if !self.log {
            return Ok(());
        }
        let decades = (self.low.floor() as i32)..=(self.high.ceil() as i32);
        let steps: &[f64] = if self.high - self.low > 3.0 {
            &[1.0]
        } else {
            &[1.0, 2.0, 5.0]
        };
        let ticks: Vec<f64> = decades
            .flat_map(|k| steps.iter().map(move |m| (m * 10f64.powi(k)).log10()))
            .filter(|y| (self.low..=self.high).contains(y))
            .collect();
        chart
            .draw_series(
                ticks.iter().map(|&y| {
                    PathElement::new([(x.0, y), (x.1, y)], palette::GRID.stroke_width(1))
                }),
            )
            .map_err(drawing)?;
        let style = (font::FAMILY, 12)
            .into_font()
            .color(&palette::TEXT)
            .pos(Pos::new(HPos::Right, VPos::Center));
        chart
            .draw_series(ticks.iter().map(|&y| {
                EmptyElement::at((x.0, y)) + Text::new(self.label(y), (-6, 0), style.clone())
            }))
            .map_err(drawing)?;
        Ok(())
    }

    /// The axis title, e.g. "latency (ms, log scale)".
    pub(crate) fn description(&self, what: &str) -> String {
        if self.log {
            format!("{what} (ms, log scale)")
        } else {
            format!("{what} (ms)")
        }
    }
}
