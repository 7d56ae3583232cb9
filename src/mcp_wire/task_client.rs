//! The client side of the MCP Tasks extension: what a client declares to be answered with tasks, and the
//! following of a task to its end (polled with `tasks/get` at the server's `pollIntervalMs`, cancelled with
//! `tasks/cancel` at the call's deadline), the call's answer being the task's. How the tasks ended is counted
//! in a [`TaskTally`].

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use serde_json::{Value, json};
use tokio::time::Instant;

use super::client::{Answer, McpClient};
use super::tasks::{self, TaskHandle, TaskStatus};

/// How long the `tasks/cancel` of a call that timed out may take before the client moves on.
const TASK_CANCEL_TIMEOUT: Duration = Duration::from_secs(2);

/// How the calls of one run made as tasks ended, every attempt counted (`as_tasks`).
#[derive(Debug, Default)]
pub struct TaskTally {
    /// Calls the server answered with a task.
    pub created: AtomicU64,
    pub completed: AtomicU64,
    /// Ended `failed` (a JSON-RPC error inside the task).
    pub failed: AtomicU64,
    /// Ended `cancelled` without the client asking.
    pub cancelled: AtomicU64,
    /// `tasks/get` answered that the task is not found: the server lost it.
    pub lost: AtomicU64,
    /// Still running at the call's timeout: cancelled with `tasks/cancel`.
    pub timed_out: AtomicU64,
    /// Ended otherwise: a poll answered with another error, an unreadable task, the session closed.
    pub broken: AtomicU64,
    /// Calls answered at once with a plain result or error (a server that does not offer tasks).
    pub plain: AtomicU64,
}

impl TaskTally {
    /// The tally in words, for the report.
    pub fn describe(&self) -> String {
        let n = |count: &AtomicU64| count.load(Ordering::Relaxed);
        format!(
            "tasks: {} created ({} completed, {} failed, {} cancelled by the server, {} lost, {} cancelled at \
             the client's timeout, {} ended by a failed poll); {} calls answered without a task",
            n(&self.created),
            n(&self.completed),
            n(&self.failed),
            n(&self.cancelled),
            n(&self.lost),
            n(&self.timed_out),
            n(&self.broken),
            n(&self.plain)
        )
    }
}

/// What a client declares it can do at `initialize`: the tasks extension when it calls as tasks.
pub fn capabilities(as_tasks: bool) -> Value {
    if as_tasks {
        json!({"extensions": {tasks::EXTENSION: {}}})
    } else {
        json!({})
    }
}

/// The `_meta` of a request that declares the tasks extension (the per-request capabilities of MCP
/// 2026-07-28; servers of earlier revisions read the ones given at `initialize`).
pub fn call_meta() -> Value {
    json!({tasks::CLIENT_CAPABILITIES_META: capabilities(true)})
}

/// The answer to a `tools/call` made as a task, once settled: a call answered with a task is followed to its
/// end ([`follow`]); one answered plainly (a server without tasks) is taken as it is.
pub async fn settle(
    client: &Arc<McpClient>,
    answer: Answer,
    deadline: Instant,
    tally: &TaskTally,
) -> Answer {
    let Answer::Response(response) = answer else {
        return answer;
    };
    match response.get("result").and_then(TaskHandle::of) {
        Some(task) => follow(client, task, deadline, tally).await,
        None => {
            tally.plain.fetch_add(1, Ordering::Relaxed);
            Answer::Response(response)
        }
    }
}

/// Polls `task` until it ends or `deadline` passes, and answers for the call as the task ended: a completed
/// task's result, a failed task's error, a JSON-RPC error for a cancelled or lost task or a poll that failed,
/// or a timeout, after which the task is cancelled (`tasks/cancel`, not awaited by the call).
pub async fn follow(
    client: &Arc<McpClient>,
    mut task: TaskHandle,
    deadline: Instant,
    tally: &TaskTally,
) -> Answer {
    tally.created.fetch_add(1, Ordering::Relaxed);
    let params = json!({tasks::TASK_ID: task.id, "_meta": call_meta()});
    loop {
        let next = (Instant::now() + task.poll).min(deadline);
        tokio::time::sleep_until(next).await;
        if Instant::now() >= deadline {
            break;
        }
        let answer = client
            .request_until(tasks::GET, params.clone(), deadline)
            .await
            .1;
        let response = match answer {
            Answer::Response(response) => response,
            Answer::TimedOut => break,
            Answer::Closed => {
                tally.broken.fetch_add(1, Ordering::Relaxed);
                return Answer::Closed;
            }
        };
        let Some(state) = response.get("result") else {
            let not_found = response
                .pointer("/error/code")
                .and_then(Value::as_i64)
                .is_some_and(|code| code == tasks::NOT_FOUND_CODE);
            let count = if not_found {
                &tally.lost
            } else {
                &tally.broken
            };
            count.fetch_add(1, Ordering::Relaxed);
            return task_error(
                &task.id,
                if not_found {
                    "lost by the server (tasks/get: not found)"
                } else {
                    "not followed to its end: tasks/get failed"
                },
                response.get("error"),
            );
        };
        task.poll = tasks::poll_interval(state);
        match TaskStatus::of(state) {
            Some(TaskStatus::Completed) => {
                tally.completed.fetch_add(1, Ordering::Relaxed);
                let result = state.get("result").cloned().unwrap_or(Value::Null);
                return Answer::Response(json!({"result": result}));
            }
            Some(TaskStatus::Failed) => {
                tally.failed.fetch_add(1, Ordering::Relaxed);
                let error = state.get("error").cloned().unwrap_or_else(
                    || json!({"code": -32603, "message": format!("task {} failed", task.id)}),
                );
                return Answer::Response(json!({"error": error}));
            }
            Some(TaskStatus::Cancelled) => {
                tally.cancelled.fetch_add(1, Ordering::Relaxed);
                return task_error(&task.id, "cancelled by the server", None);
            }
            // Working, or waiting for input this client does not give: polled until the deadline.
            Some(TaskStatus::Working | TaskStatus::InputRequired) => {}
            None => {
                tally.broken.fetch_add(1, Ordering::Relaxed);
                return task_error(&task.id, "answered tasks/get with no known status", None);
            }
        }
    }
    tally.timed_out.fetch_add(1, Ordering::Relaxed);
    let client = client.clone();
    tokio::spawn(async move {
        client
            .request(tasks::CANCEL, params, TASK_CANCEL_TIMEOUT)
            .await;
    });
    Answer::TimedOut
}

/// A task that ended without a result or an error of its own, as a JSON-RPC error answering the call.
fn task_error(id: &str, what: &str, cause: Option<&Value>) -> Answer {
    let mut message = format!("task {id} {what}");
    if let Some(cause) = cause {
        message.push_str(&format!(": {cause}"));
    }
    Answer::Response(json!({"error": {"code": -32603, "message": message}}))
}
