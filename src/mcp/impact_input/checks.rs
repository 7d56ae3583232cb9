//! Checks of values against the bounds the operator sets at start, which no declaration can hold.

use std::time::Duration;

use super::super::scenario_fields as fields;
use crate::impact::Limits;

use super::*;

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
