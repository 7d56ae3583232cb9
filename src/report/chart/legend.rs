//! A legend as one row of colour swatches and names under a chart, where it covers no data.

use plotters::{coord::Shift, prelude::*};

use super::{ChartError, drawing, font::FAMILY, palette::TEXT};

/// Height of the row.
pub(super) const HEIGHT: u32 = 28;

/// Draws `items` (name, colour) left to right on `area`, starting `left` pixels in.
pub(super) fn draw<DB: DrawingBackend>(
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
