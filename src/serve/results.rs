//! The result shaping both our servers' tools share: errors a person or a model can act on, text with
//! `structuredContent`, and the `outputSchema` a result type declares.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock};
use serde::Serialize;

/// A tool result flagged `isError`, with a message a person or a model can act on.
pub(crate) fn tool_error(message: impl std::fmt::Display) -> CallToolResult {
    let message = message.to_string();
    tracing::debug!(%message, "tool error");
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// A successful result whose text content is `text` and whose `structuredContent` is `structured`.
pub(crate) fn text_and_structured(
    text: impl Into<String>,
    structured: &impl Serialize,
) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    match serde_json::to_value(structured) {
        Ok(value) => result.structured_content = Some(value),
        Err(e) => return tool_error(format!("internal error: cannot encode the result: {e}")),
    }
    result
}

/// A successful result whose text content is the JSON encoding of `text_value`.
pub(crate) fn json_and_structured(
    text_value: &impl Serialize,
    structured: &impl Serialize,
) -> CallToolResult {
    match serde_json::to_string(text_value) {
        Ok(text) => text_and_structured(text, structured),
        Err(e) => tool_error(format!("internal error: cannot encode the result: {e}")),
    }
}

/// The JSON Schema of `T`, for a tool's `outputSchema`.
pub(crate) fn output_schema<T: schemars::JsonSchema + 'static>() -> Arc<rmcp::model::JsonObject> {
    rmcp::handler::server::common::schema_for_output::<T>()
}
