//! `task_lost`: a task the server forgets. After `after_polls` polls of a task made by a picked tool, its
//! `tasks/get` and `tasks/cancel` are answered as a server answers an id it does not know: -32602 (invalid
//! params), "Failed to retrieve task: Task not found". The request never reaches the server.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Action, CallContext, McpFaultSpec, Scope, ms};
use crate::mcp_wire::{jsonrpc::Reply, tasks};

/// The message the tasks extension gives for an unknown task (with [`tasks::NOT_FOUND_CODE`]).
const NOT_FOUND_MESSAGE: &str = "Failed to retrieve task: Task not found";

fn one() -> u64 {
    1
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskLost {
    /// The `tasks/get` requests of a task that still reach the server; every request of the task after them
    /// (a poll or a cancel) is answered "not found". 0: the task is lost at once.
    #[serde(default = "one")]
    pub after_polls: u64,
}

impl Default for TaskLost {
    fn default() -> Self {
        Self { after_polls: one() }
    }
}

impl McpFaultSpec for TaskLost {
    fn wire() -> &'static str {
        "after `after_polls` `tasks/get` of a task made by a picked tool, every `tasks/get` and `tasks/cancel` of \
        it is answered `{\"code\":-32602,\"message\":\"Failed to retrieve task: Task not found\"}` by the proxy; \
        the server never sees them"
    }

    fn scope(&self) -> Scope {
        Scope::Task {
            methods: &[tasks::GET, tasks::CANCEL],
        }
    }

    fn fires(&self, call: &CallContext<'_>, _memory: &mut super::FaultMemory) -> bool {
        call.request
            .task
            .is_some_and(|task| task.polls_before >= self.after_polls)
    }

    fn describe(&self) -> String {
        format!(
            "answer \"task not found\" after {} polls of the task",
            self.after_polls
        )
    }

    fn action(&self, _call: &CallContext<'_>) -> Action {
        Action::Reply {
            after: ms(0),
            reply: Reply::Error {
                code: tasks::NOT_FOUND_CODE,
                message: NOT_FOUND_MESSAGE.to_owned(),
                data: None,
            },
            call_upstream: false,
        }
    }
}
