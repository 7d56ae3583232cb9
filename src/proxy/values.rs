//! Values as `fault run` and the fault specs read them: milliseconds, probabilities, rates. Below the faults, so
//! a fault's flags and its tool input parse alike without importing their command.

use std::time::Duration;

/// A value that could not be parsed; the message names the value and what is accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(pub String);

impl ParseError {
    pub(crate) fn new(msg: impl Into<String>) -> Self {
        Self(msg.into())
    }
}

/// A flag in milliseconds (fractions allowed), as a duration.
pub fn parse_ms(raw: &str) -> Result<Duration, String> {
    let v: f64 = raw
        .trim()
        .parse()
        .map_err(|_| format!("'{raw}' is not a number of milliseconds"))?;
    if v.is_finite() && v >= 0.0 {
        Ok(Duration::from_secs_f64(v / 1e3))
    } else {
        Err(format!(
            "'{raw}' must be a non-negative number of milliseconds"
        ))
    }
}

pub fn parse_probability(raw: &str) -> Result<f64, String> {
    let v: f64 = raw
        .trim()
        .parse()
        .map_err(|_| format!("probability '{raw}' is not a number between 0.0 and 1.0"))?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("probability '{raw}' must be between 0.0 and 1.0"))
    }
}

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
