//! The lines of text above a chart image: what ran, its verdict, the fault, and a run that says nothing
//! (inconclusive) in its own colour.

use plotters::{coord::Shift, prelude::*};

use super::{
    error::{ChartError, drawing},
    font::FAMILY,
};

const LINE: u32 = 22;
const PADDING: u32 = 12;
/// Characters a line holds at the chart's width: a longer text wraps at a space, and a longer word is cut with
/// an ellipsis.
const MAX_CHARS: usize = 105;

/// `lines` with each text wrapped to the chart's width, its colour kept.
pub(super) fn wrapped(lines: Vec<(String, RGBColor)>) -> Vec<(String, RGBColor)> {
    let mut out = Vec::with_capacity(lines.len());
    for (text, colour) in lines {
        let mut line = String::new();
        for word in text.split(' ') {
            if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > MAX_CHARS {
                out.push((std::mem::take(&mut line), colour));
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
        out.push((line, colour));
    }
    out
}

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
