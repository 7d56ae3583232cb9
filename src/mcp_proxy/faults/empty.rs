//! `empty`: the tool result is `{"content":[],"isError":false}`, with no `structuredContent`.

use serde::{Deserialize, Serialize};

use super::{Action, CallContext, Fault, Upstream};
use crate::mcp_wire::jsonrpc::Reply;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Empty {
    #[serde(default)]
    pub upstream: Upstream,
}

impl Empty {
    pub const KEYS: &[&str] = &["upstream"];
}

impl Fault for Empty {
    fn describe(&self) -> String {
        format!("answer an empty result (upstream {:?})", self.upstream)
    }

    fn action(&self, _call: &CallContext<'_>) -> Action {
        Action::Reply {
            after: std::time::Duration::ZERO,
            reply: Reply::Result(serde_json::json!({ "content": [], "isError": false })),
            call_upstream: self.upstream == Upstream::Call,
        }
    }
}
