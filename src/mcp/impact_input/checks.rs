//! Checks of values read outside the field declarations, and the serde reader of a typed input.

use std::time::Duration;

use rmcp::model::JsonObject;
use serde::de::DeserializeOwned;

use super::super::scenario_fields as fields;
use crate::{impact::Limits, lenient::Number};

use super::*;

/// `value` of `field` when `accepted` takes it (`default` when absent).
pub(in crate::mcp) fn checked(
    field: &str,
    value: Option<f64>,
    default: f64,
    accepted: Number,
) -> Result<f64, InputError> {
    accepted
        .check_given(value)
        .map_err(|message| bad(field, message))
        .map(|value| value.unwrap_or(default))
}

/// `value` of `field` when within `min..=max` (`default` when absent).
pub(in crate::mcp) fn within(
    field: &str,
    value: Option<f64>,
    default: f64,
    min: f64,
    max: f64,
) -> Result<f64, InputError> {
    checked(field, value, default, Number::from_to(min, max))
}

/// A whole number of `field` within `min..=max` (`default` when absent).
pub(in crate::mcp) fn whole(
    field: &str,
    value: Option<f64>,
    default: u64,
    min: u64,
    max: u64,
) -> Result<u64, InputError> {
    let accepted = Number::from_to(min as f64, max as f64).whole();
    // Whole and within `min..=max`: the cast is exact.
    checked(field, value, default as f64, accepted).map(|value| value as u64)
}

/// A duration string ("10s", "500ms") or a number of seconds (default 10 s), more than 0 and within the
/// server's cap.
pub(in crate::mcp) fn duration(
    text: Option<String>,
    limits: &Limits,
) -> Result<Duration, InputError> {
    let duration = match text.filter(|text| !text.trim().is_empty()) {
        None => Duration::from_secs(10),
        Some(text) => fields::parse_duration(&text).map_err(|e| bad("duration", e))?,
    };
    if duration.is_zero() || duration > limits.max_duration {
        return Err(bad(
            "duration",
            format!(
                "{} is out of range; accepted: more than 0s and at most {} (the server's cap; \
                 `fault agent tool --max-scenario-duration` raises it)",
                humantime::format_duration(duration),
                humantime::format_duration(limits.max_duration)
            ),
        ));
    }
    Ok(duration)
}

/// `T` read from the tool's arguments; a value of the wrong shape is an error naming its field.
pub(in crate::mcp) fn read<T: DeserializeOwned>(args: &JsonObject) -> Result<T, InputError> {
    let value = serde_json::Value::Object(args.clone());
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let message = e.inner().to_string();
        // serde names a missing field only in its message: name it as the field, like every other error.
        match message
            .strip_prefix("missing field `")
            .and_then(|rest| rest.strip_suffix('`'))
        {
            Some(field) if path == "." => bad(field, "is required"),
            Some(field) => bad(format!("{path}.{field}"), "is required"),
            None => bad(path, message),
        }
    })
}
