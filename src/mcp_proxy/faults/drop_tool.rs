//! `drop_tool`: the trigger's `tools` disappear from `tools/list` results and their calls answer
//! -32602 "Unknown tool: <name>". With `after_calls` the tool disappears only once that many calls passed;
//! `notify` then sends `notifications/tools/list_changed` to the client.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    Action, CallContext, FaultError, Hiding, McpFaultSpec, registry_inconsistency::unknown_tool,
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
    fn check_trigger(&self, trigger: &Trigger) -> Result<(), FaultError> {
        if trigger.tools.is_empty() {
            return Err(FaultError::Rule {
                field: "tools",
                rule: "name the tools to drop",
            });
        }
        Ok(())
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
