//! The charts' one font, embedded (a Latin-1 subset of Roboto, see `assets/fonts/`), registered with plotters
//! under the family name the charts ask for, so nothing looks up system fonts.

use std::sync::OnceLock;

use plotters::style::FontStyle;

use super::error::ChartError;

/// The family name every chart text uses.
pub(super) const FAMILY: &str = "sans-serif";

const REGULAR: &[u8] = include_bytes!("../../../assets/fonts/Roboto-Regular-subset.ttf");

/// Registers the font once; later calls return the first call's outcome.
pub(super) fn register() -> Result<(), ChartError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED
        .get_or_init(|| plotters::style::register_font(FAMILY, FontStyle::Normal, REGULAR).is_ok());
    if ok { Ok(()) } else { Err(ChartError::Font) }
}
