//! The latency axis the charts share: linear, or logarithmic when the tail is far above the median.

use plotters::{
    coord::types::RangedCoordf64,
    prelude::*,
    style::text_anchor::{HPos, Pos, VPos},
};

use super::{
    error::{ChartError, drawing},
    font, palette,
};

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
