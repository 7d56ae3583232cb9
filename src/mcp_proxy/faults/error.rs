//! `error`: answer with a failure instead of (or after) the real call: a JSON-RPC error (-32603 by default,
//! `data.category` when given), or an `isError` tool result.

use serde::{Deserialize, Serialize};

use super::{Action, CallContext, Failure, Fault, Upstream};
use crate::mcp_wire::jsonrpc::Reply;

pub const DEFAULT_CODE: i64 = -32603;
pub const DEFAULT_MESSAGE: &str = "Internal error: injected fault";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Error {
    #[serde(flatten)]
    pub failure: Failure,
    #[serde(default)]
    pub upstream: Upstream,
    /// An HTTP status (mcp-chaos-monkey's `statusCode`), carried in `data.status_code` on stdio.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_code: Option<u16>,
}

impl Error {
    pub const KEYS: &[&str] = &[
        "as",
        "code",
        "message",
        "category",
        "upstream",
        "status_code",
    ];
}

impl Fault for Error {
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
        if let (Some(status), Reply::Error { data, .. }) = (self.status_code, &mut reply) {
            let mut object = data.take().unwrap_or_else(|| serde_json::json!({}));
            object["status_code"] = status.into();
            *data = Some(object);
        }
        Action::Reply {
            after: std::time::Duration::ZERO,
            reply,
            call_upstream: self.upstream == Upstream::Call,
        }
    }
}
