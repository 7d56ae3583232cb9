//! How the markdown writes a value in a sentence or a table cell.

use crate::report::impact::ActiveWindow;
use crate::report::trim_float;

/// `value` with its share of `total`, e.g. "3 (9.7%)".
pub(super) fn count_with_share(value: u64, total: u64) -> String {
    let share = if total == 0 {
        0.0
    } else {
        value as f64 * 100.0 / total as f64
    };
    format!("{value} ({share:.1}%)")
}

pub(super) fn signed(value: f64) -> String {
    if value >= 0.0 {
        format!("+{value:.2}")
    } else {
        format!("{value:.2}")
    }
}

/// A fault's windows in words: "5–10 s", "2–3 s, 8–10 s".
pub(super) fn windows_text(windows: &[ActiveWindow]) -> String {
    windows
        .iter()
        .map(|w| format!("{}–{} s", trim_float(w.from_s), trim_float(w.until_s)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Text for a table cell: no `|` to end it early, no line break.
pub(super) fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}
