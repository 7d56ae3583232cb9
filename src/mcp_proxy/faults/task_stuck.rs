//! `task_stuck`: a task that never seems to end. Its `tasks/get` answers keep saying `working` once the real
//! status has moved on (to `completed`, `failed`, `input_required` or `cancelled`), for `polls` polls or for
//! good; the result, error and questions stay hidden meanwhile, and the last `working` status message stands.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Action, CallContext, FaultError, McpFaultSpec, Scope, result_mut};
use crate::mcp_wire::tasks::{self, TaskStatus};

/// Tasks whose real status is hidden, kept at most; beyond it the oldest is forgotten (and shows again).
const MAX_HIDDEN: usize = 4_096;

/// One task as the fault saw it.
#[derive(Debug, Default)]
struct Seen {
    /// Polls whose real status was hidden.
    hidden_polls: u64,
    /// The last `working` status message.
    working_message: Option<Value>,
}

/// The tasks seen, by id. Shared by every copy of the fault in one proxy.
#[derive(Debug, Clone, Default)]
pub struct Hidden(Arc<Mutex<HashMap<String, Seen>>>);

/// The hidden polls are the run's state, not the spec's.
impl PartialEq for Hidden {
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskStuck {
    /// How many polls after the real status moved on still say `working`; none: every one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub polls: Option<u64>,
    #[serde(skip)]
    hidden: Hidden,
}

impl McpFaultSpec for TaskStuck {
    fn wire() -> &'static str {
        "on `tasks/get` of a task made by a picked tool: once the server's answer says anything but `working`, \
        the client still gets `\"status\":\"working\"` with the last working `statusMessage`, without `result`, \
        `error` or `inputRequests`, for `polls` polls (every poll when not given); then the real answer"
    }

    fn scope(&self) -> Scope {
        Scope::Task {
            methods: &[tasks::GET],
        }
    }

    fn validate(&self) -> Result<(), FaultError> {
        if self.polls == Some(0) {
            return Err(FaultError::Rule {
                field: "polls",
                rule: "be at least 1 (leave it out to hide the status for good)",
            });
        }
        Ok(())
    }

    fn describe(&self) -> String {
        match self.polls {
            Some(polls) => format!("say `working` for {polls} polls after the task ended"),
            None => "say `working` for good".to_owned(),
        }
    }

    fn action(&self, _call: &CallContext<'_>) -> Action {
        Action::Rewrite
    }

    fn rewrite(&self, response: &mut Value, call: &CallContext<'_>) {
        let Some(task) = call.request.task else {
            return;
        };
        let Some(result) = result_mut(response) else {
            return;
        };
        let mut hidden = self.hidden.0.lock().unwrap_or_else(|p| p.into_inner());
        if !hidden.contains_key(&task.task_id) && hidden.len() >= MAX_HIDDEN {
            hidden.clear();
        }
        let seen = hidden.entry(task.task_id.clone()).or_default();
        let status = result.get(tasks::STATUS).and_then(Value::as_str);
        if status.and_then(TaskStatus::parse) == Some(TaskStatus::Working) {
            seen.working_message = result.get("statusMessage").cloned();
            return;
        }
        if self.polls.is_some_and(|limit| seen.hidden_polls >= limit) {
            return;
        }
        seen.hidden_polls += 1;
        result.insert(tasks::STATUS.into(), TaskStatus::Working.as_str().into());
        for key in ["result", "error", "inputRequests", "statusMessage"] {
            result.remove(key);
        }
        if let Some(message) = seen.working_message.clone() {
            result.insert("statusMessage".into(), message);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp_proxy::learned::TaskRequest;
    use serde_json::json;

    fn poll(fault: &TaskStuck, task: &TaskRequest, status: &str) -> Value {
        let mut answer = json!({"jsonrpc": "2.0", "id": 1, "result": {
            tasks::RESULT_TYPE: tasks::RESULT_TYPE_COMPLETE, tasks::TASK_ID: task.task_id,
            tasks::STATUS: status,
            "statusMessage": format!("{status} now"), "result": {"content": []}}});
        let call = CallContext::for_tool(&task.tool, 1).task(task);
        fault.rewrite(&mut answer, &call);
        answer["result"].take()
    }

    #[test]
    fn the_end_is_hidden_for_the_polls_given_with_the_last_working_message() {
        let fault = TaskStuck {
            polls: Some(2),
            ..Default::default()
        };
        let task = TaskRequest {
            task_id: "t1".into(),
            tool: "slow_job".into(),
            polls_before: 0,
        };
        assert_eq!(
            poll(&fault, &task, "working")["statusMessage"],
            "working now"
        );
        for _ in 0..2 {
            let hidden = poll(&fault, &task, TaskStatus::Completed.as_str());
            assert_eq!(hidden[tasks::STATUS], TaskStatus::Working.as_str());
            assert_eq!(hidden["statusMessage"], "working now");
            assert!(hidden.get("result").is_none());
        }
        let shown = poll(&fault, &task, TaskStatus::Completed.as_str());
        assert_eq!(shown[tasks::STATUS], TaskStatus::Completed.as_str());
        assert_eq!(shown["result"], json!({"content": []}));
    }
}
