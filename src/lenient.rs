//! Lenient readers for tool inputs written from templates (the guide's payloads): a number may come as a
//! numeric string, null or "" means "use the default", one string may stand for a one-item list. Each is a
//! newtype with its own JSON Schema, so an input struct is at once its parser and its published contract.
//!
//! A field declared with its range and default (a TCP fault's) is read by [`crate::fields`], with [`Number`]
//! for its range.

use std::{borrow::Cow, str::FromStr};

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, de::Error};
use serde_json::Value;

/// What a lenient field holds: parsed from a string with `FromStr`, or from a number or boolean's text.
pub(crate) trait Scalar: FromStr {
    /// JSON types accepted besides a string, e.g. `["number"]`.
    const JSON_TYPES: &'static [&'static str];
    /// What the field accepts, for errors: "a number (or a string holding one)".
    const EXPECTED: &'static str;
    /// The value `text` (trimmed, not empty) holds.
    fn from_text(text: &str) -> Option<Self> {
        text.parse().ok()
    }
}

/// A scalar field; `None` when absent, null or blank ("use the default"). A required field is one without
/// `#[serde(default)]`: its schema lists it as required, and its `validate` says what is missing, naming it.
#[derive(Debug, Clone)]
pub(crate) struct Lenient<T>(pub Option<T>);

impl<T> Default for Lenient<T> {
    fn default() -> Self {
        Self(None)
    }
}

impl<'de, T: Scalar> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Through `Option`, so that serde reads a missing field as `None` rather than failing the whole input.
        let Some(value) = Option::<Value>::deserialize(deserializer)? else {
            return Ok(Self(None));
        };
        if is_blank(&value) {
            return Ok(Self(None));
        }
        let text = match &value {
            Value::String(s) => s.trim().to_owned(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Null | Value::Array(_) | Value::Object(_) => String::new(),
        };
        match T::from_text(&text) {
            Some(parsed) if !text.is_empty() => Ok(Self(Some(parsed))),
            _ => Err(D::Error::custom(format!(
                "expected {}, got {value}",
                T::EXPECTED
            ))),
        }
    }
}

impl<T: Scalar> JsonSchema for Lenient<T> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("Lenient")
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let mut types = vec!["string"];
        types.extend(T::JSON_TYPES);
        json_schema!({ "type": types })
    }
}

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

    /// The number `value` holds (absent: `None`), checked.
    pub(crate) fn check_given(&self, value: Option<f64>) -> Result<Option<f64>, String> {
        value.map(|value| self.check(value)).transpose()
    }
}

/// A seed: a JSON integer or a string of digits, exact over the whole `u64` range
/// ([`crate::seeded::seed_from_json`]); `None` when absent, null or blank.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Seed(pub Option<u64>);

impl<'de> Deserialize<'de> for Seed {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Option::<Value>::deserialize(deserializer)?;
        match value {
            None => Ok(Self(None)),
            Some(value) if is_blank(&value) => Ok(Self(None)),
            Some(value) => crate::seeded::seed_from_json(&value)
                .map(|seed| Self(Some(seed)))
                .map_err(D::Error::custom),
        }
    }
}

impl JsonSchema for Seed {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("Seed")
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": ["integer", "string"], "minimum": 0, "maximum": u64::MAX })
    }
}

/// A list of strings, or one string standing for a one-item list; blank items are dropped.
#[derive(Debug, Clone, Default)]
pub(crate) struct Strings(pub Vec<String>);

impl<'de> Deserialize<'de> for Strings {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let items = match Value::deserialize(deserializer)? {
            Value::Null => Vec::new(),
            Value::Array(items) => items,
            one => vec![one],
        };
        let mut strings = Vec::with_capacity(items.len());
        for (i, item) in items.into_iter().enumerate() {
            match item {
                Value::String(s) if s.trim().is_empty() => {}
                Value::String(s) => strings.push(s.trim().to_owned()),
                other => {
                    return Err(D::Error::custom(format!(
                        "item {i}: expected a string, got {other}"
                    )));
                }
            }
        }
        Ok(Self(strings))
    }
}

impl JsonSchema for Strings {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("Strings")
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": ["array", "string"], "items": { "type": "string" } })
    }
}

impl Scalar for f64 {
    const JSON_TYPES: &'static [&'static str] = &["number"];
    const EXPECTED: &'static str = "a finite number (or a string holding one)";
    /// JSON has no NaN or infinity: the strings "NaN" and "inf" that Rust would parse are refused here, so that
    /// no field check has to think of them.
    fn from_text(text: &str) -> Option<Self> {
        text.parse().ok().filter(|value: &f64| value.is_finite())
    }
}

impl Scalar for bool {
    const JSON_TYPES: &'static [&'static str] = &["boolean"];
    const EXPECTED: &'static str = "true or false";
    fn from_text(text: &str) -> Option<Self> {
        [true, false]
            .into_iter()
            .find(|b| text.eq_ignore_ascii_case(&b.to_string()))
    }
}

impl Scalar for String {
    const JSON_TYPES: &'static [&'static str] = &["number"];
    const EXPECTED: &'static str = "a string";
}

/// What a JSON value is, for a message: "a string", "an array", "null".
pub fn json_kind(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
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
        assert_eq!(status.check_given(None), Ok(None));
        assert_eq!(
            Number::from_to(0.0, 1.0).check(f64::INFINITY).unwrap_err(),
            "inf is out of range; accepted: 0 to 1"
        );
    }
}
