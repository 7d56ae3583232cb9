//! Lenient readers for tool inputs written from templates (the guide's payloads): a number may come as a
//! numeric string, null or "" means "use the default", one string may stand for a one-item list. Each is a
//! newtype with its own JSON Schema, so an input struct is at once its parser and its published contract.

use std::{borrow::Cow, str::FromStr};

use rmcp::schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, de::Error};
use serde_json::Value;

/// What a lenient field holds: parsed from a string with `FromStr`, or from a number or boolean's text.
pub(crate) trait Scalar: FromStr {
    /// JSON types accepted besides a string, e.g. `["number"]`.
    const JSON_TYPES: &'static [&'static str];
    /// What the field accepts, for errors: "a number (or a string holding one)".
    const EXPECTED: &'static str;
}

/// A scalar field; `None` when absent, null or blank ("use the default").
#[derive(Debug, Clone)]
pub(crate) struct Lenient<T>(pub Option<T>);

impl<T> Default for Lenient<T> {
    fn default() -> Self {
        Self(None)
    }
}

impl<'de, T: Scalar> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let text = match &value {
            Value::Null => return Ok(Self(None)),
            Value::String(s) if s.trim().is_empty() => return Ok(Self(None)),
            Value::String(s) => s.trim().to_owned(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Array(_) | Value::Object(_) => String::new(),
        };
        match text.parse() {
            Ok(parsed) if !text.is_empty() => Ok(Self(Some(parsed))),
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
    const EXPECTED: &'static str = "a number (or a string holding one)";
}

impl Scalar for bool {
    const JSON_TYPES: &'static [&'static str] = &["boolean"];
    const EXPECTED: &'static str = "true or false";
}

impl Scalar for String {
    const JSON_TYPES: &'static [&'static str] = &["number"];
    const EXPECTED: &'static str = "a string";
}
