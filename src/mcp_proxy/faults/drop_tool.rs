//! `drop_tool`: the trigger's `tools` disappear from `tools/list` results and their calls answer
//! -32602 "Unknown tool: <name>". With `after_calls` the tool disappears only once that many calls passed;
//! `notify` then sends `notifications/tools/list_changed` to the client.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Action, CallContext, Fault, registry_inconsistency::unknown_tool};

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DropTool {
    #[serde(default = "yes")]
    pub notify: bool,
}

impl DropTool {
    pub const KEYS: &[&str] = &["notify"];

    /// Removes the tools `dropped` says are gone from a `tools/list` response.
    pub fn filter_list(response: &mut Value, dropped: impl Fn(&str) -> bool) {
        if let Some(Value::Array(tools)) =
            super::result_mut(response).and_then(|r| r.get_mut("tools"))
        {
            tools.retain(|tool| {
                !tool
                    .get("name")
                    .and_then(Value::as_str)
                    .is_some_and(&dropped)
            });
        }
    }
}

impl Fault for DropTool {
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
