//! `registry_inconsistency`: the tool stays in `tools/list` but calling it answers
//! -32602 "Unknown tool: <name>".

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    Action, CallContext, FaultError, Format, McpFaultSpec, PeerEntry, PeerType, PeerValueError,
    no_tools_no_fault, require_tools,
};
use crate::mcp_proxy::trigger::Trigger;
use crate::mcp_wire::jsonrpc::Reply;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RegistryInconsistency {}

/// The answer to a call of a tool the server does not know, as in the MCP specification's example.
pub fn unknown_tool(tool: &str) -> Action {
    Action::Reply {
        after: std::time::Duration::ZERO,
        reply: Reply::Error {
            code: -32602,
            message: format!("Unknown tool: {tool}"),
            data: None,
        },
        call_upstream: false,
    }
}

impl McpFaultSpec for RegistryInconsistency {
    fn wire() -> &'static str {
        "the `tools` stay listed; their calls get -32602 `Unknown tool: <name>`"
    }

    fn peer_types() -> &'static [PeerType] {
        const { &[PeerType::mcp_chaos("registry_inconsistency", &["tools"])] }
    }

    /// In mcp-chaos, no `tools` means no tool is inconsistent.
    fn read_peer(entry: &mut PeerEntry) -> Result<(), PeerValueError> {
        if entry.format == Format::McpChaos {
            no_tools_no_fault(entry);
        }
        Ok(())
    }

    /// Without `tools` mcp-chaos's fault acts on no tool, where our trigger would pick every tool: the tools
    /// are named.
    fn check_trigger(&self, trigger: &Trigger) -> Result<(), FaultError> {
        require_tools(
            trigger,
            "name the tools that stay listed but are unknown (`[\"*\"]` for every tool; mcp-chaos's \
             registry_inconsistency without tools acts on none)",
        )
    }

    fn describe(&self) -> String {
        "keep the tool listed, answer calls -32602 \"Unknown tool: <name>\"".into()
    }

    fn action(&self, call: &CallContext<'_>) -> Action {
        unknown_tool(call.tool)
    }
}
