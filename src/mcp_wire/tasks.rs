//! The MCP Tasks extension on the wire: its name, the keys and values a task is read by, and how often a
//! client polls one. Whatever here reads or writes a task (the load driver's client, the proxy's faults and
//! recorder, our servers) spells the extension with these, so a change of the extension is one change here.

use std::time::Duration;

use serde_json::Value;

/// The extension's identifier, as clients declare it in their capabilities.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The `_meta` key of the capabilities a client declares on one request (MCP 2026-07-28; servers of earlier
/// revisions read the ones given at `initialize`).
pub const CLIENT_CAPABILITIES_META: &str = "io.modelcontextprotocol/clientCapabilities";

/// The key of a result that says what kind of result it is.
pub const RESULT_TYPE: &str = "resultType";
/// A `tools/call` answered with a task handle instead of its result.
pub const RESULT_TYPE_TASK: &str = "task";
/// A result that asks the client a question (`inputRequests`) before the call can go on.
pub const RESULT_TYPE_INPUT_REQUIRED: &str = "input_required";
/// A result that is the answer itself (what `tasks/get` answers with too).
pub const RESULT_TYPE_COMPLETE: &str = "complete";

/// The key naming a task: in a task handle, a `tasks/get` answer, and the params of `tasks/*` requests.
pub const TASK_ID: &str = "taskId";
/// The key of a task's status in a handle or a `tasks/get` answer.
pub const STATUS: &str = "status";
/// The key of how often the server would have a task polled, in milliseconds.
pub const POLL_INTERVAL_MS: &str = "pollIntervalMs";

/// The methods on a task the client already has.
pub const GET: &str = "tasks/get";
pub const CANCEL: &str = "tasks/cancel";

/// Whether `method` is one of the extension's requests on a task (`tasks/*`).
pub fn is_task_method(method: &str) -> bool {
    method.starts_with("tasks/")
}

/// The code a server answers a task id it does not know with (JSON-RPC's invalid params).
pub const NOT_FOUND_CODE: i64 = -32602;

/// The fastest and slowest a task is polled, whatever its `pollIntervalMs` says.
pub const POLL_BOUNDS: (Duration, Duration) = (Duration::from_millis(50), Duration::from_secs(10));
/// How often a task that gives no `pollIntervalMs` is polled.
pub const DEFAULT_POLL: Duration = Duration::from_secs(1);

/// What a task is doing, as `status` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskStatus {
    Working,
    /// Waiting for the client's answers (`inputRequests`, answered with `tasks/update`).
    InputRequired,
    Completed,
    /// Ended with a JSON-RPC error of its own (`error`).
    Failed,
    Cancelled,
}

impl TaskStatus {
    /// The status a `status` value names; `None` for one the extension does not define.
    pub fn parse(status: &str) -> Option<Self> {
        [
            Self::Working,
            Self::InputRequired,
            Self::Completed,
            Self::Failed,
            Self::Cancelled,
        ]
        .into_iter()
        .find(|known| known.as_str() == status)
    }

    /// The status of a task handle or a `tasks/get` answer.
    pub fn of(task: &Value) -> Option<Self> {
        task.get(STATUS)
            .and_then(Value::as_str)
            .and_then(Self::parse)
    }

    /// The status as it is written on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Whether the task has ended: nothing it says changes after this.
    pub const fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }

    /// The status of rmcp's task store (our servers), when it is one the extension defines.
    pub fn from_rmcp(status: rmcp::model::TaskStatus) -> Option<Self> {
        use rmcp::model::TaskStatus as Rmcp;
        match status {
            Rmcp::Working => Some(Self::Working),
            Rmcp::InputRequired => Some(Self::InputRequired),
            Rmcp::Completed => Some(Self::Completed),
            Rmcp::Failed => Some(Self::Failed),
            Rmcp::Cancelled => Some(Self::Cancelled),
            _ => None,
        }
    }
}

/// The `resultType` of a result, when it says one.
pub fn result_type(result: &Value) -> Option<&str> {
    result.get(RESULT_TYPE).and_then(Value::as_str)
}

/// Whether `result` is a task handle (`resultType: "task"`).
pub fn is_task_handle(result: &Value) -> bool {
    result_type(result) == Some(RESULT_TYPE_TASK)
}

/// Whether `result` asks the client a question (`resultType: "input_required"`).
pub fn is_input_required(result: &Value) -> bool {
    result_type(result) == Some(RESULT_TYPE_INPUT_REQUIRED)
}

/// The task a handle, a `tasks/get` answer or the params of a `tasks/*` request name.
pub fn task_id(value: &Value) -> Option<&str> {
    value.get(TASK_ID).and_then(Value::as_str)
}

/// A task a call was answered with: its id and how often to poll it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskHandle {
    pub id: String,
    pub poll: Duration,
}

impl TaskHandle {
    /// The task of a `tools/call` result that is a task handle (`resultType: "task"`).
    pub fn of(result: &Value) -> Option<Self> {
        if !is_task_handle(result) {
            return None;
        }
        Some(Self {
            id: task_id(result)?.to_owned(),
            poll: poll_interval(result),
        })
    }
}

/// A task's `pollIntervalMs`, within [`POLL_BOUNDS`]; [`DEFAULT_POLL`] when it gives none.
pub fn poll_interval(task: &Value) -> Duration {
    task.get(POLL_INTERVAL_MS)
        .and_then(Value::as_f64)
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
        .map_or(DEFAULT_POLL, |ms| Duration::from_secs_f64(ms / 1000.0))
        .clamp(POLL_BOUNDS.0, POLL_BOUNDS.1)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_extension_is_the_one_the_mcp_sdk_names() {
        assert_eq!(EXTENSION, rmcp::model::TASKS_EXTENSION_ID);
    }

    #[test]
    fn statuses_read_as_the_mcp_sdk_writes_them() {
        use rmcp::model::TaskStatus as Rmcp;
        for status in [
            Rmcp::Working,
            Rmcp::InputRequired,
            Rmcp::Completed,
            Rmcp::Failed,
            Rmcp::Cancelled,
        ] {
            let ours = TaskStatus::from_rmcp(status).unwrap();
            assert_eq!(json!(status), json!(ours.as_str()));
            assert_eq!(TaskStatus::parse(ours.as_str()), Some(ours));
            assert_eq!(ours.is_terminal(), status.is_terminal());
        }
        assert_eq!(TaskStatus::parse("finished"), None);
    }

    #[test]
    fn a_handle_is_read_only_from_a_task_result() {
        let handle = json!({RESULT_TYPE: RESULT_TYPE_TASK, TASK_ID: "t-1", POLL_INTERVAL_MS: 250});
        assert_eq!(
            TaskHandle::of(&handle),
            Some(TaskHandle {
                id: "t-1".into(),
                poll: Duration::from_millis(250)
            })
        );
        let answer = json!({RESULT_TYPE: RESULT_TYPE_COMPLETE, TASK_ID: "t-1"});
        assert_eq!(TaskHandle::of(&answer), None);
        assert_eq!(
            TaskHandle::of(&json!({RESULT_TYPE: RESULT_TYPE_TASK})),
            None
        );
    }

    #[test]
    fn poll_intervals_are_kept_within_their_bounds() {
        let poll = |ms: Value| poll_interval(&json!({POLL_INTERVAL_MS: ms}));
        assert_eq!(poll(json!(250)), Duration::from_millis(250));
        assert_eq!(poll(json!(0)), Duration::from_millis(50));
        assert_eq!(poll(json!(3_600_000)), Duration::from_secs(10));
        assert_eq!(poll(json!("soon")), Duration::from_secs(1));
        assert_eq!(poll_interval(&json!({})), Duration::from_secs(1));
    }
}
