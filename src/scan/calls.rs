//! One `tools/call` as the scan makes it, timed, and what came back read as the phases judge it.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;

use crate::mcp_wire::client::{Answer, McpClient};

/// What a call got.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A result: a success, or a tool error when `isError` is true.
    Result(Value),
    /// A JSON-RPC error.
    Error {
        code: i64,
        message: String,
        data: Option<Value>,
    },
    /// No answer within the timeout (the call was cancelled).
    Hang,
    /// The session ended under the call (the server's process ended, or it closed the connection).
    Closed,
}

/// One call: its params, its reply, how long it took.
#[derive(Debug, Clone)]
pub struct Call {
    pub params: Value,
    pub reply: Reply,
    pub elapsed_ms: f64,
}

/// JSON-RPC's "invalid params" and "internal error".
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;

/// Calls `tool` with `arguments`, waiting at most `timeout`.
pub async fn call(client: &McpClient, tool: &str, arguments: &Value, timeout: Duration) -> Call {
    let params = json!({"name": tool, "arguments": arguments});
    let started = Instant::now();
    let (_, answer) = client.request("tools/call", params.clone(), timeout).await;
    let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
    let reply = match answer {
        Answer::Response(response) => match (response.get("result"), response.get("error")) {
            (Some(result), _) => Reply::Result(result.clone()),
            (None, Some(error)) => Reply::Error {
                code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                message: error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                data: error.get("data").cloned(),
            },
            (None, None) => Reply::Error {
                code: 0,
                message: format!("a response with neither result nor error: {response}"),
                data: None,
            },
        },
        Answer::TimedOut => Reply::Hang,
        Answer::Closed => Reply::Closed,
    };
    Call {
        params,
        reply,
        elapsed_ms,
    }
}

impl Reply {
    /// A result that is not a tool error.
    pub fn is_success(&self) -> bool {
        matches!(self, Reply::Result(result) if result.get("isError").and_then(Value::as_bool) != Some(true))
    }

    /// A tool error or a JSON-RPC error other than an internal one: the server said no.
    pub fn is_refusal(&self) -> bool {
        match self {
            Reply::Result(_) => !self.is_success(),
            Reply::Error { code, .. } => *code != INTERNAL_ERROR,
            Reply::Hang | Reply::Closed => false,
        }
    }

    /// What a refusal or an error said, for finding the field it names.
    pub fn said(&self) -> String {
        match self {
            Reply::Result(result) => {
                let mut text: Vec<String> = result
                    .get("content")
                    .and_then(Value::as_array)
                    .map(|blocks| {
                        blocks
                            .iter()
                            .filter_map(|b| b.get("text").and_then(Value::as_str))
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default();
                // structuredContent, unless a text block already holds the same JSON.
                if let Some(structured) = result.get("structuredContent")
                    && !text
                        .iter()
                        .any(|t| serde_json::from_str::<Value>(t).ok().as_ref() == Some(structured))
                {
                    text.push(structured.to_string());
                }
                text.join("\n")
            }
            Reply::Error { message, data, .. } => match data {
                Some(data) => format!("{message} {data}"),
                None => message.clone(),
            },
            Reply::Hang => String::new(),
            Reply::Closed => String::new(),
        }
    }

    /// The reply in words, for evidence.
    pub fn describe(&self, timeout: Duration) -> String {
        match self {
            Reply::Result(_) if self.is_success() => format!("success: {}", self.said()),
            Reply::Result(_) => format!("tool error (isError): {}", self.said()),
            Reply::Error { code, .. } => format!("JSON-RPC error {code}: {}", self.said()),
            Reply::Hang => format!(
                "no answer within {} ms; the call was cancelled",
                timeout.as_millis()
            ),
            Reply::Closed => "the session ended under the call (the server's process ended or closed the connection)".to_owned(),
        }
    }
}

/// Whether `said` names `field`: the field's name (its last part for a nested one, "filter.limit" → "limit")
/// appears as a word.
pub fn names_field(said: &str, field: &str) -> bool {
    let last = field
        .rsplit(['.', '['])
        .next()
        .unwrap_or(field)
        .trim_end_matches(']');
    [field, last].iter().any(|name| {
        !name.is_empty()
            && said.match_indices(name).any(|(at, _)| {
                let before = said[..at].chars().next_back();
                let after = said[at + name.len()..].chars().next();
                let word = |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
                word(before) && word(after)
            })
    })
}

/// Percentile `p` (0–100) of sorted `values`, nearest rank.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_is_named_as_a_word() {
        assert!(names_field("`level` must be 0 to 10", "level"));
        assert!(names_field(
            "invalid arguments: level: out of range",
            "level"
        ));
        assert!(names_field("filter.limit is too high", "filter.limit"));
        assert!(names_field("limit is too high", "filter.limit"));
        assert!(!names_field("the volume is out of range", "level"));
        assert!(!names_field("sublevels are wrong", "level"));
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&values, 50.0), Some(50.0));
        assert_eq!(percentile(&values, 99.0), Some(99.0));
        assert_eq!(percentile(&[3.0], 99.0), Some(3.0));
        assert_eq!(percentile(&[], 50.0), None);
    }
}
