//! The lines of text above a chart image: what ran, its verdict, the fault, and a run that says nothing
//! (inconclusive) in its own colour.

use plotters::{coord::Shift, prelude::*};

use super::{ChartError, drawing, font::FAMILY};

const LINE: u32 = 22;
const PADDING: u32 = 12;
/// Characters a line keeps at the chart's width (the rest is cut with an ellipsis).
const MAX_CHARS: usize = 105;

/// Height of a header of `lines` lines.
pub(super) fn height(lines: usize) -> u32 {
    PADDING * 2 + LINE * lines as u32
}

/// Draws `lines` (text, colour), the first larger as the title.
pub(super) fn draw<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    lines: &[(String, RGBColor)],
) -> Result<(), ChartError> {
    for (i, (text, colour)) in lines.iter().enumerate() {
        let size = if i == 0 { 18 } else { 14 };
        let y = (PADDING + LINE * i as u32) as i32;
        area.draw_text(
            &cut(text),
            &(FAMILY, size).into_font().color(colour),
            (14, y),
        )
        .map_err(drawing)?;
    }
    Ok(())
}

fn cut(text: &str) -> String {
    if text.chars().count() <= MAX_CHARS {
        return text.to_owned();
    }
    let mut kept: String = text.chars().take(MAX_CHARS - 1).collect();
    kept.push('…');
    kept
}
