//! Lenient readers for tool inputs written from templates (the guide's payloads): a number may come as a
//! numeric string, null or "" means "use the default", one string may stand for a one-item list. Each is a
//! newtype with its own JSON Schema, so an input struct is at once its parser and its published contract.

use std::{borrow::Cow, str::FromStr};

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{
    Deserialize, Deserializer,
    de::{
        Error, MapAccess, SeqAccess, Unexpected, Visitor,
        value::{MapAccessDeserializer, SeqAccessDeserializer},
    },
};
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
        let text = match &value {
            Value::Null => return Ok(Self(None)),
            Value::String(s) if s.trim().is_empty() => return Ok(Self(None)),
            Value::String(s) => s.trim().to_owned(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Array(_) | Value::Object(_) => String::new(),
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

/// For `#[serde(default, deserialize_with = "blank_as_none")]`: null or a blank string is `None` ("use the
/// default"), anything else is read as `T`, its errors keeping their field path. The schema stays `T`'s.
pub(crate) fn blank_as_none<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    deserializer.deserialize_any(BlankOr(std::marker::PhantomData))
}

/// [`blank_as_none`] for a field whose default is `T::default()`.
pub(crate) fn blank_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    blank_as_none(deserializer).map(Option::unwrap_or_default)
}

struct BlankOr<T>(std::marker::PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for BlankOr<T> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list, an object, or \"\" for the default")
    }

    fn visit_unit<E: Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_none<E: Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_str<E: Error>(self, text: &str) -> Result<Self::Value, E> {
        if text.trim().is_empty() {
            return Ok(None);
        }
        Err(E::invalid_value(Unexpected::Str(text), &self))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        T::deserialize(SeqAccessDeserializer::new(seq)).map(Some)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map)).map(Some)
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
