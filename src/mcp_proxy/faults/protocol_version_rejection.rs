//! `protocol_version_rejection` (Streamable HTTP only): answer 400 with a JSON-RPC error, as a server does
//! to an `MCP-Protocol-Version` it does not support.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Action, CallContext, HttpAction, McpFaultSpec};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProtocolVersionRejection {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl McpFaultSpec for ProtocolVersionRejection {
    fn wire() -> &'static str {
        "400 with `{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"Bad Request: \
        Unsupported protocol version\"}}` (`message` configurable); the Python SDK client reports that error, \
        on its request's id"
    }

    fn aliases() -> &'static [&'static str] {
        &["bad_protocol_version"]
    }

    fn describe(&self) -> String {
        "answer HTTP 400: unsupported MCP-Protocol-Version".into()
    }

    fn action(&self, _call: &CallContext<'_>) -> Action {
        let message = self
            .message
            .clone()
            .unwrap_or_else(|| "Bad Request: Unsupported protocol version".into());
        // No id: the server rejects the request before reading it (clients use their request's id).
        let body = serde_json::json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": { "code": -32600, "message": message },
        });
        Action::Http(HttpAction::Status {
            status: 400,
            headers: Vec::new(),
            body: Some((body.to_string().into_bytes(), "application/json")),
            expires_session: false,
        })
    }

    fn http_only(&self) -> bool {
        true
    }
}
