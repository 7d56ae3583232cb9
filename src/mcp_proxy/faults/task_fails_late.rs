//! `task_fails_late`: a task that runs to its end and then fails. A `tasks/get` answer of a task made by a
//! picked tool that says `completed` says `failed` instead, with the JSON-RPC error the tasks extension puts
//! in a failed task (`error`, no `result`), as a server whose work broke at the last step answers.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Action, CallContext, FaultError, McpFaultSpec, Scope, result_mut};
use crate::mcp_wire::tasks::{self, TaskStatus};

pub const DEFAULT_CODE: i64 = -32603;
pub const DEFAULT_MESSAGE: &str = "Internal error: the task failed";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskFailsLate {
    /// The error's code (-32603 by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i64>,
    /// The error's message, also the task's `statusMessage`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl McpFaultSpec for TaskFailsLate {
    fn wire() -> &'static str {
        "on `tasks/get` of a task made by a picked tool, an answer with `\"status\":\"completed\"` becomes \
        `\"status\":\"failed\"`, its `result` replaced by `\"error\":{\"code\":-32603,\"message\":…}` and its \
        `statusMessage` by the message (code, message configurable); other statuses pass"
    }

    fn scope(&self) -> Scope {
        Scope::Task {
            methods: &[tasks::GET],
        }
    }

    fn validate(&self) -> Result<(), FaultError> {
        if self.message.as_deref().is_some_and(str::is_empty) {
            return Err(FaultError::Rule {
                field: "message",
                rule: "not be empty",
            });
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!(
            "turn the completed task into failed with {} \"{}\"",
            self.code.unwrap_or(DEFAULT_CODE),
            self.message.as_deref().unwrap_or(DEFAULT_MESSAGE)
        )
    }

    fn action(&self, _call: &CallContext<'_>) -> Action {
        Action::Rewrite
    }

    fn rewrite(&self, response: &mut Value, _call: &CallContext<'_>) {
        let Some(result) = result_mut(response) else {
            return;
        };
        let status = result.get(tasks::STATUS).and_then(Value::as_str);
        if status.and_then(TaskStatus::parse) != Some(TaskStatus::Completed) {
            return;
        }
        let message = self.message.as_deref().unwrap_or(DEFAULT_MESSAGE);
        result.remove("result");
        result.insert(tasks::STATUS.into(), TaskStatus::Failed.as_str().into());
        result.insert("statusMessage".into(), message.into());
        result.insert(
            "error".into(),
            json!({"code": self.code.unwrap_or(DEFAULT_CODE), "message": message}),
        );
    }
}
