//! Lenient reading of tool inputs written from templates (the guide's payloads): null or "" means "use the
//! default" ([`is_blank`]), and a number's range is a [`Number`], whose errors say what is accepted. Fields are
//! declared and read by [`crate::fields`], with these.

use serde_json::Value;

/// Whether `value` means "use the default": null, or a string of nothing but white space.
pub(crate) fn is_blank(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.trim().is_empty(),
        _ => false,
    }
}

/// The numbers a field accepts, and the errors that say so, naming what is accepted: `5 is out of range;
/// accepted: 0 to 1`, `0 is out of range; accepted: more than 0 and at most 60000 (ms)`.
#[derive(Debug, Clone, Copy)]
pub struct Number {
    min: f64,
    /// Whether `min` itself is refused ("more than 0").
    above_min: bool,
    max: f64,
    /// Said after `max` when `min` is refused, e.g. " (ms)".
    unit: &'static str,
    whole: bool,
}

impl Number {
    /// From `min` to `max`, both accepted.
    pub(crate) const fn from_to(min: f64, max: f64) -> Self {
        Self {
            min,
            above_min: false,
            max,
            unit: "",
            whole: false,
        }
    }

    /// More than 0 and at most `max` (in `unit`).
    pub(crate) const fn above_zero(max: f64, unit: &'static str) -> Self {
        Self {
            min: 0.0,
            above_min: true,
            unit,
            ..Self::from_to(0.0, max)
        }
    }

    /// Whole numbers only.
    pub(crate) const fn whole(self) -> Self {
        Self {
            whole: true,
            ..self
        }
    }

    /// Whether it takes whole numbers only.
    pub const fn is_whole(&self) -> bool {
        self.whole
    }

    /// Its lowest value, and whether that value itself is refused ("more than").
    pub const fn low(&self) -> (f64, bool) {
        (self.min, self.above_min)
    }

    /// Its highest value.
    pub const fn high(&self) -> f64 {
        self.max
    }

    /// What it accepts, in words: "more than 0 and at most 60000 (ms)", "0 to 1".
    pub fn range_text(&self) -> String {
        if self.above_min {
            format!(
                "more than {} and at most {}{}",
                self.min, self.max, self.unit
            )
        } else {
            format!("{} to {}", self.min, self.max)
        }
    }

    /// `value` when accepted, else what is wrong with it.
    pub(crate) fn check(&self, value: f64) -> Result<f64, String> {
        let above = if self.above_min {
            value > self.min
        } else {
            value >= self.min
        };
        // Written so that NaN is out of range too.
        if !(above && value <= self.max) {
            return Err(format!(
                "{value} is out of range; accepted: {}",
                self.range_text()
            ));
        }
        if self.whole && value.fract() != 0.0 {
            return Err(format!("{value} must be a whole number"));
        }
        Ok(value)
    }
}

/// What a JSON value is, for a message: "a string", "an array", "null".
pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_name_what_they_accept() {
        let latency = Number::above_zero(60_000.0, " (ms)");
        assert_eq!(
            latency.check(0.0).unwrap_err(),
            "0 is out of range; accepted: more than 0 and at most 60000 (ms)"
        );
        assert!(latency.check(f64::NAN).is_err());
        let status = Number::from_to(400.0, 599.0).whole();
        assert_eq!(
            status.check(200.0).unwrap_err(),
            "200 is out of range; accepted: 400 to 599"
        );
        assert_eq!(
            status.check(500.5).unwrap_err(),
            "500.5 must be a whole number"
        );
        assert_eq!(
            Number::from_to(0.0, 1.0).check(f64::INFINITY).unwrap_err(),
            "inf is out of range; accepted: 0 to 1"
        );
    }
}
