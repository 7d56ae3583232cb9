//! Failure-mode tools: `error` (an error of a chosen category), `slow` (a delay that ends on
//! cancellation), `flaky` (fails with a probability, deterministically for a seed and call id).

use std::time::{Duration, Instant};

use rmcp::{
    ErrorData,
    model::{CallToolResult, ErrorCode, JsonObject},
    tool, tool_router,
};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{
    CANCELLED_CODE, TestServer,
    arguments::{ArgumentError, in_range},
    input_schema, invalid_arguments, read_arguments, roll,
};
use crate::serve::{json_and_structured, output_schema, tool_error};

/// The kind of error the `error` tool raises; as a JSON-RPC error each has its own code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ErrorCategory {
    /// `-32603` (JSON-RPC internal error).
    Protocol,
    /// `-32000` (implementation-defined server error).
    Tool,
    /// `-32001` (request timeout, as the official TypeScript SDK numbers it).
    Timeout,
    /// `-32003` (implementation-defined: not authorised).
    Auth,
}

impl ErrorCategory {
    pub const ALL: [Self; 4] = [Self::Protocol, Self::Tool, Self::Timeout, Self::Auth];

    pub fn name(self) -> &'static str {
        match self {
            Self::Protocol => "protocol",
            Self::Tool => "tool",
            Self::Timeout => "timeout",
            Self::Auth => "auth",
        }
    }

    /// The JSON-RPC error code sent for this category.
    pub fn code(self) -> i32 {
        match self {
            Self::Protocol => -32603,
            Self::Tool => -32000,
            Self::Timeout => -32001,
            Self::Auth => -32003,
        }
    }

    fn parse(field: &'static str, text: &str) -> Result<Self, ArgumentError> {
        Self::ALL
            .into_iter()
            .find(|category| category.name() == text)
            .ok_or_else(|| ArgumentError::OutOfRange {
                field,
                rule: "one of protocol, tool, timeout, auth".to_owned(),
                got: format!("{text:?}"),
            })
    }
}

/// The JSON-RPC error code of a `flaky` failure (a tool failure).
pub const FLAKY_ERROR_CODE: i32 = -32000;
/// Longest sleep `slow` takes; longer requests are capped to it.
pub const SLOW_CAP_MS: u64 = 60_000;

/// Arguments of `error`.
#[derive(Debug, JsonSchema)]
pub struct ErrorInput {
    /// The error message (default "synthetic error").
    pub message: Option<String>,
    /// protocol | tool | timeout | auth (default protocol); sets the JSON-RPC code.
    pub category: Option<ErrorCategory>,
    /// true: answer with a successful JSON-RPC response whose result has isError true; false (default): a
    /// JSON-RPC error.
    pub as_tool: Option<bool>,
}

/// Arguments of `slow`.
#[derive(Debug, JsonSchema)]
pub struct SlowInput {
    /// How long to sleep, in milliseconds (0 or more; capped at 60000).
    pub milliseconds: i64,
}

/// `structuredContent` of `slow`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SlowOutput {
    /// The milliseconds slept (the request, capped at 60000).
    pub slept_ms: u64,
    /// The time the server spent on the call, measured by the server (also logged at info).
    pub handled_ms: f64,
}

/// Arguments of `flaky`.
#[derive(Debug, JsonSchema)]
pub struct FlakyInput {
    /// Probability of failure; clamped to 0..1.
    pub fail_rate: f64,
    /// With `call_id`, fixes the outcome; empty or absent: a random roll on every call.
    pub seed: Option<String>,
    /// The caller's iteration number (default 0).
    pub call_id: Option<i64>,
    /// true: a failure is an isError result; false (default): a JSON-RPC error.
    pub as_tool: Option<bool>,
}

/// `structuredContent` of a `flaky` call that passed.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FlakyOutput {
    /// Always false here (a failure is an error).
    pub failed: bool,
    /// The roll in [0, 1); the call fails when roll < fail_rate.
    pub roll: f64,
    /// The fail rate after clamping.
    pub fail_rate: f64,
}

#[tool_router(router = failure_router, vis = "pub(super)")]
impl TestServer {
    #[tool(
        name = "error",
        description = "Fail on purpose. as_tool=false (default): a JSON-RPC error whose code follows `category`: \
            protocol -32603 (default), tool -32000, timeout -32001, auth -32003, with data {\"category\"}. \
            as_tool=true: a result with isError true and the message as text.",
        input_schema = input_schema::<ErrorInput>()
    )]
    async fn error(&self, raw: JsonObject) -> Result<CallToolResult, ErrorData> {
        let input = match read_arguments(raw, |a| {
            Ok(ErrorInput {
                message: a.optional_string("message")?,
                category: a
                    .optional_string("category")?
                    .map(|text| ErrorCategory::parse("category", &text))
                    .transpose()?,
                as_tool: a.optional_bool("as_tool")?,
            })
        }) {
            Ok(input) => input,
            Err(refusal) => return Ok(invalid_arguments(refusal)),
        };
        let message = input
            .message
            .unwrap_or_else(|| "synthetic error".to_owned());
        let category = input.category.unwrap_or(ErrorCategory::Protocol);
        if input.as_tool.unwrap_or(false) {
            return Ok(tool_error(message));
        }
        Err(ErrorData::new(
            ErrorCode(category.code()),
            message,
            Some(json!({ "category": category.name() })),
        ))
    }

    #[tool(
        name = "slow",
        description = "Sleep `milliseconds` (capped at 60000), then return {\"slept_ms\", \"handled_ms\"} (the time measured by the server, also logged). A client's \
            notifications/cancelled ends the sleep at once (no response is sent, as MCP asks).",
        input_schema = input_schema::<SlowInput>(),
        output_schema = output_schema::<SlowOutput>()
    )]
    async fn slow(
        &self,
        raw: JsonObject,
        cancelled: CancellationToken,
    ) -> Result<CallToolResult, ErrorData> {
        let input = match read_arguments(raw, |a| {
            Ok(SlowInput {
                milliseconds: in_range(
                    "milliseconds",
                    a.required_integer("milliseconds")?,
                    0,
                    i64::MAX,
                )?,
            })
        }) {
            Ok(input) => input,
            Err(refusal) => return Ok(invalid_arguments(refusal)),
        };
        let slept_ms = u64::try_from(input.milliseconds)
            .unwrap_or(0)
            .min(SLOW_CAP_MS);
        let started = Instant::now();
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(slept_ms)) => {
                let handled_ms = (started.elapsed().as_secs_f64() * 1_000_000.0).round() / 1000.0;
                tracing::info!(handled_ms, "slow: answered");
                let output = SlowOutput { slept_ms, handled_ms };
                Ok(json_and_structured(&output, &output))
            }
            () = cancelled.cancelled() => {
                let partial_ms = started.elapsed().as_secs_f64() * 1000.0;
                tracing::info!(requested_ms = slept_ms, partial_ms, "slow: cancelled by the client");
                Err(ErrorData::new(ErrorCode(CANCELLED_CODE), "request cancelled", None))
            }
        }
    }

    #[tool(
        name = "flaky",
        description = "Fail with probability `fail_rate` (clamped to 0..1). The roll in [0, 1) depends only on \
            (seed, call_id): the same inputs give the same outcome on every machine (an empty seed rolls at \
            random). Fails when roll < fail_rate with `flaky failure (roll=0.4231 < rate=0.5000)`: a JSON-RPC \
            error -32000 with data {category, roll, fail_rate, seed, call_id}, or with as_tool=true an isError \
            result. Passes with {\"failed\": false, \"roll\", \"fail_rate\"}.",
        input_schema = input_schema::<FlakyInput>(),
        output_schema = output_schema::<FlakyOutput>()
    )]
    async fn flaky(&self, raw: JsonObject) -> Result<CallToolResult, ErrorData> {
        let input = match read_arguments(raw, |a| {
            Ok(FlakyInput {
                fail_rate: a.required_number("fail_rate")?,
                seed: a.optional_string("seed")?,
                call_id: a.optional_integer("call_id")?,
                as_tool: a.optional_bool("as_tool")?,
            })
        }) {
            Ok(input) => input,
            Err(refusal) => return Ok(invalid_arguments(refusal)),
        };
        let fail_rate = input.fail_rate.clamp(0.0, 1.0);
        let seed = input.seed.unwrap_or_default();
        let call_id = input.call_id.unwrap_or(0);
        let roll = if seed.is_empty() {
            roll::unseeded()
        } else {
            roll::seeded(&seed, call_id)
        };
        if roll >= fail_rate {
            let output = FlakyOutput {
                failed: false,
                roll,
                fail_rate,
            };
            return Ok(json_and_structured(&output, &output));
        }
        let message = format!("flaky failure (roll={roll:.4} < rate={fail_rate:.4})");
        if input.as_tool.unwrap_or(false) {
            return Ok(tool_error(message));
        }
        Err(ErrorData::new(
            ErrorCode(FLAKY_ERROR_CODE),
            message,
            Some(json!({
                "category": ErrorCategory::Tool.name(),
                "roll": roll,
                "fail_rate": fail_rate,
                "seed": seed,
                "call_id": call_id,
            })),
        ))
    }
}
