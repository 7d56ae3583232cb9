//! `input_loop`: a server that keeps asking. When the client retries a `tools/call` with its answers
//! (`inputResponses`) to the question the tool asked (an `input_required` result), the proxy answers the same
//! question again instead of the server's result, `times` times per question; a new question from the server
//! starts the count again. The client sees a loop it must bound.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Action, CallContext, FaultError, FaultMemory, McpFaultSpec, Scope, result_mut};
use crate::mcp_wire::tasks;

fn one() -> u64 {
    1
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InputLoop {
    /// How many answered retries of one question get the question again.
    #[serde(default = "one")]
    pub times: u64,
}

impl Default for InputLoop {
    fn default() -> Self {
        Self { times: one() }
    }
}

impl McpFaultSpec for InputLoop {
    fn wire() -> &'static str {
        "a `tools/call` that carries `inputResponses` (the client's answers to the tool's last \
        `\"resultType\":\"input_required\"` result) is sent to the server, and its answer is replaced by that \
        same `input_required` result (`inputRequests` and `requestState` as the server gave them), `times` \
        times per question; a new question from the server passes and starts the count again"
    }

    fn scope(&self) -> Scope {
        Scope::Answer
    }

    fn validate(&self) -> Result<(), FaultError> {
        if self.times == 0 {
            return Err(FaultError::Rule {
                field: "times",
                rule: "be at least 1",
            });
        }
        Ok(())
    }

    fn fires(&self, call: &CallContext<'_>, memory: &mut FaultMemory) -> bool {
        let Some(ask) = call.request.answers else {
            return false;
        };
        let asked = match memory.asked_again {
            Some((serial, asked)) if serial == ask.serial => asked,
            _ => 0,
        };
        if asked >= self.times {
            return false;
        }
        memory.asked_again = Some((ask.serial, asked + 1));
        true
    }

    fn describe(&self) -> String {
        format!("ask the tool's question again {} times", self.times)
    }

    fn action(&self, _call: &CallContext<'_>) -> Action {
        Action::Rewrite
    }

    fn rewrite(&self, response: &mut Value, call: &CallContext<'_>) {
        let Some(Value::Object(question)) = call.request.answers.map(|ask| &ask.result) else {
            return;
        };
        let Some(result) = result_mut(response) else {
            return;
        };
        // The server asking anew is its own question.
        if result.get(tasks::RESULT_TYPE).and_then(Value::as_str)
            == Some(tasks::RESULT_TYPE_INPUT_REQUIRED)
        {
            return;
        }
        *result = question.clone();
    }
}
