//! `rate_limit`: answer "Rate limit exceeded, retry after Ns" (-32000) with `data.retryAfterSeconds`, or as
//! an `isError` tool result.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    Action, CallContext, Format, McpFaultSpec, PeerEntry, PeerType, PeerValueError, ReplyAs,
};
use crate::mcp_wire::jsonrpc::Reply;

fn five() -> u64 {
    5
}

fn code() -> i64 {
    -32000
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RateLimit {
    #[serde(default = "five")]
    pub retry_after_seconds: u64,
    #[serde(default = "code")]
    pub code: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(rename = "as", default)]
    pub reply_as: ReplyAs,
}

impl McpFaultSpec for RateLimit {
    fn wire() -> &'static str {
        "-32000 `Rate limit exceeded, retry after Ns` with `data.retryAfterSeconds`"
    }

    fn peer_types() -> &'static [PeerType] {
        const {
            &[
                PeerType::of(Format::SmartAi, "rate_limit"),
                PeerType::of(Format::ChaosMonkey, "rate-limit"),
            ]
        }
    }

    /// mcp-chaos-monkey's `retryAfterSeconds` is ours; `retry_after` is read as it.
    fn read_peer(entry: &mut PeerEntry) -> Result<(), PeerValueError> {
        entry.rename("retry_after", "retry_after_seconds");
        Ok(())
    }

    fn describe(&self) -> String {
        format!(
            "answer {} rate limited, retry after {} s",
            self.code, self.retry_after_seconds
        )
    }

    fn action(&self, _call: &CallContext<'_>) -> Action {
        let message = self.message.clone().unwrap_or_else(|| {
            format!(
                "Rate limit exceeded, retry after {}s",
                self.retry_after_seconds
            )
        });
        let reply = match self.reply_as {
            ReplyAs::Protocol => Reply::Error {
                code: self.code,
                message,
                data: Some(serde_json::json!({ "retryAfterSeconds": self.retry_after_seconds })),
            },
            ReplyAs::Tool => Reply::ToolError { text: message },
        };
        Action::Reply {
            after: std::time::Duration::ZERO,
            reply,
            call_upstream: false,
        }
    }
}
