//! `error`: answer with a failure instead of (or after) the real call: a JSON-RPC error (-32603 by default,
//! with `data.category`: the plan's, else `protocol`), or an `isError` tool result.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    Action, CallContext, CallUpstream, Failure, Format, McpFaultSpec, PeerEntry, PeerType,
    PeerValueError,
};
use crate::mcp_wire::jsonrpc::Reply;

pub const DEFAULT_CODE: i64 = -32603;
pub const DEFAULT_MESSAGE: &str = "Internal error: injected fault";
/// The category of an error whose plan gives none: the default code's.
pub const DEFAULT_CATEGORY: &str = "protocol";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Error {
    #[serde(flatten)]
    pub failure: Failure,
    #[serde(default)]
    pub upstream: CallUpstream,
    /// An HTTP status (mcp-chaos-monkey's `statusCode`), carried in `data.status_code` on stdio.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_code: Option<u16>,
}

impl McpFaultSpec for Error {
    fn wire() -> &'static str {
        "`{\"code\":-32603,\"message\":…,\"data\":{\"category\":…}}` (code, message, category configurable; \
        category `protocol` when the plan gives none), or `as: tool`: \
        `{\"content\":[{\"type\":\"text\",\"text\":…}],\"isError\":true}`; `upstream: call` runs the real call \
        first"
    }

    fn peer_types() -> &'static [PeerType] {
        const {
            &[
                PeerType::of(Format::SmartAi, "error"),
                PeerType::of(Format::ChaosMonkey, "error"),
            ]
        }
    }

    /// plexara's `as_tool: true`; mcp-chaos-monkey's `statusCode` without a `message` says the status;
    /// SmartAI's `error` answers "Internal error: service unavailable".
    fn read_peer(entry: &mut PeerEntry) -> Result<(), PeerValueError> {
        if entry.format == Format::SmartAi {
            entry.set_default("message", "Internal error: service unavailable".into());
        }
        if let Some(as_tool) = entry.take("as_tool") {
            let reply_as = if as_tool.as_bool() == Some(true) {
                "tool"
            } else {
                "protocol"
            };
            entry.set("as", reply_as.into());
        }
        if let Some(status) = entry.get("status_code").cloned() {
            entry.set_default("message", format!("HTTP {status}").into());
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!(
            "answer {} \"{}\" as {:?} (upstream {:?})",
            self.failure.code.unwrap_or(DEFAULT_CODE),
            self.failure.message.as_deref().unwrap_or(DEFAULT_MESSAGE),
            self.failure.reply_as,
            self.upstream
        )
    }

    fn action(&self, _call: &CallContext<'_>) -> Action {
        let mut reply = self.failure.reply(DEFAULT_CODE, DEFAULT_MESSAGE);
        if let Reply::Error { data, .. } = &mut reply {
            let mut object = data
                .take()
                .unwrap_or_else(|| serde_json::json!({ "category": DEFAULT_CATEGORY }));
            if let Some(status) = self.status_code {
                object["status_code"] = status.into();
            }
            *data = Some(object);
        }
        Action::Reply {
            after: std::time::Duration::ZERO,
            reply,
            call_upstream: self.upstream == CallUpstream::Call,
        }
    }
}
