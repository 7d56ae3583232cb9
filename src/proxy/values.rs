//! Values as `fault run` and the fault specs read them: milliseconds, probabilities, rates. Below the faults, so
//! a fault's flags and its tool input parse alike without importing their command.

/// A value that could not be parsed; the message names the value and what is accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(pub String);

impl ParseError {
    pub(crate) fn new(msg: impl Into<String>) -> Self {
        Self(msg.into())
    }
}

/// A field's own message (which names it), as from [`crate::fields::Field::check_number`].
impl From<String> for ParseError {
    fn from(message: String) -> Self {
        Self(message)
    }
}

/// The longest delay a fault's millisecond field takes: an hour, the longest a scenario may run.
pub const MAX_DELAY_MS: f64 = 3_600_000.0;

/// A loss rate written as a fraction (0.05) or a percentage (5%).
pub fn parse_rate(raw: &str) -> Result<f64, ParseError> {
    let v = raw.trim();
    let (num, scale) = match v.strip_suffix('%') {
        Some(p) => (p.trim(), 100.0),
        None => (v, 1.0),
    };
    let x: f64 = num.parse().map_err(|_| {
        ParseError::new(format!(
            "rate '{raw}' is not a number; expected e.g. 0.05 or 5%"
        ))
    })?;
    let rate = x / scale;
    if !(0.0..1.0).contains(&rate) {
        return Err(ParseError::new(format!(
            "rate '{raw}' must be in [0, 1) (a fraction) or [0%, 100%)"
        )));
    }
    Ok(rate)
}
