//! `registry_inconsistency`: the tool stays in `tools/list` but calling it answers
//! -32602 "Unknown tool: <name>".

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    Action, CallContext, Format, McpFaultSpec, PeerEntry, PeerValueError, no_tools_no_fault,
};
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
    /// In mcp-chaos, no `tools` means no tool is inconsistent.
    fn read_peer(entry: &mut PeerEntry) -> Result<(), PeerValueError> {
        if entry.format == Format::McpChaos {
            no_tools_no_fault(entry);
        }
        Ok(())
    }

    fn describe(&self) -> String {
        "keep the tool listed, answer calls -32602 \"Unknown tool: <name>\"".into()
    }

    fn action(&self, call: &CallContext<'_>) -> Action {
        unknown_tool(call.tool)
    }
}
