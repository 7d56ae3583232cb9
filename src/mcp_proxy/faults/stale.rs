//! `stale`: an earlier answer of the same tool replayed, as a cache that never refreshes would. The first
//! call of a tool the fault fires on passes and is kept; every later one it fires on gets that kept result
//! (content and `structuredContent`) under its own id. The kept answer is that of the lowest ordinal the fault
//! fired on, whatever order concurrent answers come back in; a call answered before a lower ordinal's answer
//! is in passes as it is. The replayed result was valid for the tool's `outputSchema` when the server gave
//! it; only meaning tells.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Action, CallContext, McpFaultSpec, result_mut};

/// The answers kept, by tool: (ordinal, result). Shared by every copy of the fault in one proxy.
#[derive(Debug, Clone, Default)]
pub struct Kept(Arc<Mutex<HashMap<String, (u64, Value)>>>);

/// The kept answers are the run's state, not the spec's: two specs are equal whatever they kept.
impl PartialEq for Kept {
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Stale {
    #[serde(skip)]
    kept: Kept,
}

impl McpFaultSpec for Stale {
    fn wire() -> &'static str {
        "the first call of a tool it fires on passes and its result is kept; every later call it fires on \
        gets that result (content and `structuredContent`) again, under its own id"
    }

    fn describe(&self) -> String {
        "replay the tool's first answer (a stale cache)".to_owned()
    }

    fn action(&self, _call: &CallContext<'_>) -> Action {
        Action::Rewrite
    }

    fn rewrite(&self, response: &mut Value, call: &CallContext<'_>) {
        let Some(result) = result_mut(response) else {
            return;
        };
        let mut kept = self.kept.0.lock().unwrap_or_else(|p| p.into_inner());
        match kept.get(call.tool) {
            Some((ordinal, earlier)) if *ordinal < call.ordinal => {
                if let Value::Object(earlier) = earlier {
                    *result = earlier.clone();
                }
            }
            _ => {
                kept.insert(
                    call.tool.to_owned(),
                    (call.ordinal, Value::Object(result.clone())),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(ordinal: u64) -> CallContext<'static> {
        CallContext::for_tool("get_item", ordinal)
    }

    fn answer(id: u64) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "result": {"structuredContent": {"id": id}}})
    }

    #[test]
    fn the_lowest_ordinals_answer_is_replayed_whatever_order_answers_come_in() {
        let fault = Stale::default();
        let mut third = answer(3);
        fault.rewrite(&mut third, &call(3));
        assert_eq!(third, answer(3), "the first answer seen passes");
        let mut second = answer(2);
        fault.rewrite(&mut second, &call(2));
        assert_eq!(
            second,
            answer(2),
            "a lower ordinal passes and is kept instead"
        );
        let mut fifth = answer(5);
        fault.rewrite(&mut fifth, &call(5));
        assert_eq!(fifth["id"], 5);
        assert_eq!(fifth["result"]["structuredContent"]["id"], 2);
    }
}
