//! `drop_tool`: the trigger's `tools` disappear from `tools/list` results and their calls answer
//! -32602 "Unknown tool: <name>". With `after_calls` the tool disappears only once that many calls passed;
//! `notify` then sends `notifications/tools/list_changed` to the client.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    Action, CallContext, FaultError, Format, Hiding, McpFaultSpec, PeerEntry, PeerType,
    PeerValueError, no_tools_no_fault, registry_inconsistency::unknown_tool, require_tools,
};
use crate::mcp_proxy::trigger::Trigger;

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DropTool {
    #[serde(default = "yes")]
    pub notify: bool,
}

impl McpFaultSpec for DropTool {
    fn wire() -> &'static str {
        "the tools leave `tools/list` and their calls get -32602 `Unknown tool: <name>`; with `after_calls` \
        they leave later and `notifications/tools/list_changed` is sent (`notify`)"
    }

    fn peer_types() -> &'static [PeerType] {
        const { &[PeerType::mcp_chaos("drop_tool", &["tools"])] }
    }

    /// In mcp-chaos, no `tools` means no tool is dropped.
    fn read_peer(entry: &mut PeerEntry) -> Result<(), PeerValueError> {
        if entry.format == Format::McpChaos {
            no_tools_no_fault(entry);
        }
        Ok(())
    }

    fn check_trigger(&self, trigger: &Trigger) -> Result<(), FaultError> {
        require_tools(trigger, "name the tools to drop")
    }

    fn hides_tools(&self) -> Option<Hiding> {
        Some(Hiding {
            notify: self.notify,
        })
    }

    fn describe(&self) -> String {
        format!(
            "remove the tools from tools/list and answer their calls as unknown{}",
            if self.notify {
                ", notify list_changed"
            } else {
                ""
            }
        )
    }

    fn action(&self, call: &CallContext<'_>) -> Action {
        unknown_tool(call.tool)
    }
}
