//! Values as `fault run` and the fault specs read them: milliseconds, probabilities, rates. Below the faults, so
//! a fault's flags and its tool input parse alike without importing their command.

use std::time::Duration;

use crate::lenient::Number;

/// A value that could not be parsed; the message names the value and what is accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(pub String);

impl ParseError {
    pub(crate) fn new(msg: impl Into<String>) -> Self {
        Self(msg.into())
    }
}

/// The longest delay a fault's millisecond field takes: an hour, the longest a scenario may run.
pub const MAX_DELAY_MS: f64 = 3_600_000.0;

/// The longest time a millisecond flag takes: a day.
pub const MAX_MS: f64 = 86_400_000.0;

/// A flag in milliseconds (fractions allowed), at most a day, as a duration.
pub fn parse_ms(raw: &str) -> Result<Duration, String> {
    let v: f64 = raw
        .trim()
        .parse()
        .map_err(|_| format!("'{raw}' is not a number of milliseconds"))?;
    if !(v.is_finite() && v >= 0.0) {
        return Err(format!(
            "'{raw}' must be a non-negative number of milliseconds"
        ));
    }
    if v > MAX_MS {
        return Err(format!(
            "'{raw}' is out of range; accepted: at most {MAX_MS} milliseconds (a day)"
        ));
    }
    Ok(Duration::from_secs_f64(v / 1e3))
}

/// A flag holding a number `accepted` takes, named `what` when it is not a number.
fn parse_number(raw: &str, what: &str, accepted: Number) -> Result<f64, String> {
    let v: f64 = raw
        .trim()
        .parse()
        .map_err(|_| format!("'{raw}' is not {what}"))?;
    accepted.check(v)
}

/// A frequency in Hz: more than 0 and at most a million.
pub fn parse_hz(raw: &str) -> Result<f64, String> {
    parse_number(raw, "a frequency in Hz", Number::above_zero(1e6, " (Hz)"))
}

/// A mean length in TCP segments: 1 to a million.
pub fn parse_segments(raw: &str) -> Result<f64, String> {
    parse_number(raw, "a number of segments", Number::from_to(1.0, 1e6))
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
