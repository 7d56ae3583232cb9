//! `empty`: the tool result is `{"content":[],"isError":false}`, with no `structuredContent`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Action, CallContext, CallUpstream, Format, McpFaultSpec, PeerType};
use crate::mcp_wire::jsonrpc::Reply;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Empty {
    #[serde(default)]
    pub upstream: CallUpstream,
}

impl McpFaultSpec for Empty {
    fn wire() -> &'static str {
        "`{\"content\":[],\"isError\":false}` without `structuredContent`"
    }

    fn peer_types() -> &'static [PeerType] {
        const { &[PeerType::of(Format::SmartAi, "empty")] }
    }

    fn describe(&self) -> String {
        format!("answer an empty result (upstream {:?})", self.upstream)
    }

    fn action(&self, _call: &CallContext<'_>) -> Action {
        Action::Reply {
            after: std::time::Duration::ZERO,
            reply: Reply::Result(serde_json::json!({ "content": [], "isError": false })),
            call_upstream: self.upstream == CallUpstream::Call,
        }
    }
}
