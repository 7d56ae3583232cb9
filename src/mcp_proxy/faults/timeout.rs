//! `timeout`: wait `after_ms`, then answer with a timeout error (-32001 "Request timed out", or a tool error).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    Action, CallContext, Format, McpFaultSpec, PeerEntry, PeerType, PeerValueError, ReplyAs, ms,
};
use crate::mcp_wire::jsonrpc::Reply;

fn code() -> i64 {
    -32001
}

fn message() -> String {
    "Request timed out".into()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Timeout {
    #[serde(default)]
    pub after_ms: u64,
    #[serde(default = "code")]
    pub code: i64,
    #[serde(default = "message")]
    pub message: String,
    #[serde(rename = "as", default)]
    pub reply_as: ReplyAs,
}

impl McpFaultSpec for Timeout {
    fn wire() -> &'static str {
        "after `after_ms`: `{\"code\":-32001,\"message\":\"Request timed out\"}`, or with `as: tool` an \
        `isError` result"
    }

    fn peer_types() -> &'static [PeerType] {
        const {
            &[
                PeerType::of(Format::SmartAi, "timeout"),
                PeerType::of(Format::ChaosMonkey, "timeout"),
            ]
        }
    }

    /// mcp-chaos-monkey's `hangMs`: the wait before the timeout error.
    fn read_peer(entry: &mut PeerEntry) -> Result<(), PeerValueError> {
        entry.rename("hang_ms", "after_ms");
        Ok(())
    }

    fn describe(&self) -> String {
        format!(
            "after {} ms answer {} \"{}\"",
            self.after_ms, self.code, self.message
        )
    }

    fn action(&self, _call: &CallContext<'_>) -> Action {
        let reply = match self.reply_as {
            ReplyAs::Protocol => Reply::Error {
                code: self.code,
                message: self.message.clone(),
                data: None,
            },
            ReplyAs::Tool => Reply::ToolError {
                text: format!(
                    "Tool execution timed out after {}s",
                    self.after_ms.div_ceil(1000)
                ),
            },
        };
        Action::Reply {
            after: ms(self.after_ms),
            reply,
            call_upstream: false,
        }
    }
}
