//! Strict reading of tool arguments: every field is checked by name, and any argument no tool field read is
//! rejected, so a typo or a drifted client fails loudly instead of silently taking a default.

use std::collections::BTreeSet;

use rmcp::model::JsonObject;
use serde_json::Value;

/// Why a tool's arguments were refused; the message names the field and what was wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ArgumentError {
    #[error("`{field}` is required")]
    Missing { field: &'static str },
    #[error("`{field}` must be {expected}, got {got}")]
    WrongType {
        field: &'static str,
        expected: &'static str,
        got: String,
    },
    #[error("`{field}` must be {rule}, got {got}")]
    OutOfRange {
        field: &'static str,
        rule: String,
        got: String,
    },
    #[error("unknown argument `{name}` (this tool takes: {known})")]
    Unknown { name: String, known: String },
}

/// The arguments of one call, read field by field.
pub struct Arguments {
    values: JsonObject,
    read: BTreeSet<&'static str>,
}

impl Arguments {
    pub fn new(values: JsonObject) -> Self {
        Self {
            values,
            read: BTreeSet::new(),
        }
    }

    /// The field's value, `None` when absent or JSON `null`.
    fn take(&mut self, field: &'static str) -> Option<&Value> {
        self.read.insert(field);
        self.values.get(field).filter(|v| !v.is_null())
    }

    pub fn optional_string(
        &mut self,
        field: &'static str,
    ) -> Result<Option<String>, ArgumentError> {
        match self.take(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(wrong_type(field, "a string", other)),
        }
    }

    pub fn required_string(&mut self, field: &'static str) -> Result<String, ArgumentError> {
        self.optional_string(field)?
            .ok_or(ArgumentError::Missing { field })
    }

    pub fn optional_bool(&mut self, field: &'static str) -> Result<Option<bool>, ArgumentError> {
        match self.take(field) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(wrong_type(field, "true or false", other)),
        }
    }

    pub fn optional_number(&mut self, field: &'static str) -> Result<Option<f64>, ArgumentError> {
        match self.take(field) {
            None => Ok(None),
            Some(Value::Number(n)) => n
                .as_f64()
                .map(Some)
                .ok_or_else(|| wrong_type(field, "a number", &Value::Number(n.clone()))),
            Some(other) => Err(wrong_type(field, "a number", other)),
        }
    }

    pub fn required_number(&mut self, field: &'static str) -> Result<f64, ArgumentError> {
        self.optional_number(field)?
            .ok_or(ArgumentError::Missing { field })
    }

    /// A whole number (JSON integer, or a float with no fraction such as `5.0`).
    pub fn optional_integer(&mut self, field: &'static str) -> Result<Option<i64>, ArgumentError> {
        const EXPECTED: &str = "a whole number";
        match self.take(field) {
            None => Ok(None),
            Some(Value::Number(n)) => {
                if let Some(i) = n.as_i64() {
                    return Ok(Some(i));
                }
                match n.as_f64() {
                    // Exactly representable whole floats only; the cast is exact inside this range.
                    Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Ok(Some(f as i64)),
                    _ => Err(wrong_type(field, EXPECTED, &Value::Number(n.clone()))),
                }
            }
            Some(other) => Err(wrong_type(field, EXPECTED, other)),
        }
    }

    pub fn required_integer(&mut self, field: &'static str) -> Result<i64, ArgumentError> {
        self.optional_integer(field)?
            .ok_or(ArgumentError::Missing { field })
    }

    /// Fails on any argument no field read asked for.
    pub fn finish(self) -> Result<(), ArgumentError> {
        match self
            .values
            .keys()
            .find(|name| !self.read.contains(name.as_str()))
        {
            None => Ok(()),
            Some(name) => Err(ArgumentError::Unknown {
                name: name.clone(),
                known: if self.read.is_empty() {
                    "no arguments".to_owned()
                } else {
                    self.read.iter().copied().collect::<Vec<_>>().join(", ")
                },
            }),
        }
    }
}

/// Checks `value` lies in `min..=max`, naming `field` otherwise.
pub fn in_range(field: &'static str, value: i64, min: i64, max: i64) -> Result<i64, ArgumentError> {
    if (min..=max).contains(&value) {
        Ok(value)
    } else {
        Err(ArgumentError::OutOfRange {
            field,
            rule: format!("between {min} and {max}"),
            got: value.to_string(),
        })
    }
}

fn wrong_type(field: &'static str, expected: &'static str, got: &Value) -> ArgumentError {
    let mut shown = got.to_string();
    if shown.len() > 60 {
        let cut = (0..=60)
            .rev()
            .find(|i| shown.is_char_boundary(*i))
            .unwrap_or(0);
        shown.truncate(cut);
        shown.push('…');
    }
    ArgumentError::WrongType {
        field,
        expected,
        got: shown,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn args(value: Value) -> Arguments {
        match value {
            Value::Object(map) => Arguments::new(map),
            _ => unreachable!(),
        }
    }

    #[test]
    fn errors_name_the_field() {
        let mut a = args(json!({"milliseconds": "soon"}));
        assert_eq!(
            a.required_integer("milliseconds").unwrap_err().to_string(),
            "`milliseconds` must be a whole number, got \"soon\""
        );
        let mut a = args(json!({}));
        assert_eq!(
            a.required_number("fail_rate").unwrap_err().to_string(),
            "`fail_rate` is required"
        );
        let mut a = args(json!({"count": 2.5}));
        assert!(
            a.optional_integer("count")
                .unwrap_err()
                .to_string()
                .contains("`count`")
        );
        assert_eq!(
            in_range("count", 1001, 0, 1000).unwrap_err().to_string(),
            "`count` must be between 0 and 1000, got 1001"
        );
    }

    #[test]
    fn whole_floats_and_nulls_are_accepted() {
        let mut a = args(json!({"steps": 3.0, "seed": null}));
        assert_eq!(a.optional_integer("steps").unwrap(), Some(3));
        assert_eq!(a.optional_string("seed").unwrap(), None);
        a.finish().unwrap();
    }

    #[test]
    fn unknown_arguments_are_refused() {
        let mut a = args(json!({"text": "hi", "txet": "typo"}));
        a.required_string("text").unwrap();
        assert_eq!(
            a.finish().unwrap_err().to_string(),
            "unknown argument `txet` (this tool takes: text)"
        );
    }
}
