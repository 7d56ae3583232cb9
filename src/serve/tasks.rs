//! Tools as tasks (the MCP Tasks extension, [`crate::mcp_wire::tasks`]), for both our servers: a
//! `tools/call` of a long tool (the agent's scenarios and indexing, the test server's task tools), from a request
//! that declares the extension, is answered at once with a task; the run goes on without the request,
//! `tasks/get` tells how far it is and then gives the very result the plain call would have given,
//! `tasks/update` brings it the input it asked for, and `tasks/cancel` stops it. rmcp's [`TaskManager`] keeps the
//! tasks; this file bounds how many are kept, refuses what the extension forbids, and turns the run's progress
//! into the task's status message. Each server decides which of its calls become tasks.
//!
//! The store is one per server process, shared by every session: over HTTP a task outlives the request and the
//! session that started it, and a client that comes back polls it by id. Each server sets its own limits
//! ([`TaskLimits`]; the default is the agent's).

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex, MutexGuard},
    time::{Duration, Instant},
};

use rmcp::{
    ErrorData, RoleServer,
    model::{
        CallToolResponse, CallToolResult, CreateTaskResult, GetTaskParams, GetTaskResult,
        InputRequest, InputResponses, TaskStatus,
    },
    service::RequestContext,
    task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions},
};
use tokio_util::sync::CancellationToken;

use crate::mcp_wire::tasks::TaskStatus as WireStatus;

/// How long a task and its result are kept, from its creation (`ttlMs`).
pub(crate) const TASK_TTL: Duration = Duration::from_secs(15 * 60);
/// How often a client should poll a task (`pollIntervalMs`); polls of one task closer together than a tenth of
/// it are refused.
pub(crate) const POLL_INTERVAL: Duration = Duration::from_secs(1);
/// Tasks kept at once, running or finished and still within their TTL. A scenario's result is a few hundred KB
/// at most (its charts are bounded), so this bounds the bytes kept too.
pub(crate) const MAX_TASKS: usize = 64;

/// How long tasks are kept, how often they should be polled, and how many are kept at once.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TaskLimits {
    /// `ttlMs`: how long a task and its result are kept, from its creation.
    pub(crate) ttl: Duration,
    /// `pollIntervalMs`; polls of one task closer together than a tenth of it are refused.
    pub(crate) poll_interval: Duration,
    /// Tasks kept at once, running or finished and still within their TTL.
    pub(crate) max_tasks: usize,
}

impl Default for TaskLimits {
    /// The agent's: few long runs, polled every second.
    fn default() -> Self {
        Self {
            ttl: TASK_TTL,
            poll_interval: POLL_INTERVAL,
            max_tasks: MAX_TASKS,
        }
    }
}

/// The tasks of one server process.
#[derive(Clone, Default)]
pub(crate) struct Tasks {
    manager: TaskManager,
    ledger: Arc<Mutex<Ledger>>,
    limits: TaskLimits,
}

/// What rmcp's manager does not say: which ids existed (to tell an expired task from an unknown one), how many
/// are kept, and when each was last polled.
#[derive(Default)]
struct Ledger {
    /// Every task created within the last two TTLs (the longest the manager keeps one: a task may finish just
    /// before its TTL and is then kept one TTL more), oldest first.
    created: VecDeque<(String, Instant)>,
    last_poll: HashMap<String, Instant>,
}

impl Ledger {
    fn forget_expired(&mut self, now: Instant, ttl: Duration) {
        while let Some((id, at)) = self.created.front() {
            if now.duration_since(*at) < 2 * ttl {
                break;
            }
            self.last_poll.remove(id);
            self.created.pop_front();
        }
    }

    fn knew(&self, id: &str) -> bool {
        self.created.iter().any(|(known, _)| known == id)
    }
}

/// How far a run is, for its task's status message (and nothing when the call is not a task); and, for a run
/// that needs the client's input, the way to ask for it (`input_required`, answered with `tasks/update`).
#[derive(Clone)]
pub(crate) struct TaskStatusLine(TaskContext);

impl TaskStatusLine {
    pub(crate) fn set(&self, message: String) {
        self.0.set_status_message(message);
    }

    /// Shows `request` under `key` in the task's `inputRequests` (the task is `input_required` meanwhile) and
    /// waits for the client's response to it; `Err` when the task was cancelled first.
    pub(crate) async fn request_input(
        &self,
        key: &str,
        request: InputRequest,
    ) -> Result<serde_json::Value, TaskExit> {
        self.0.request_input(key, request).await
    }
}

/// Whether the request of `context` declared the tasks extension (in its `_meta`, or at `initialize`).
pub(crate) fn declared(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .is_some_and(|capabilities| capabilities.supports_tasks())
}

impl Tasks {
    /// A store with `limits` in place of the agent's.
    pub(crate) fn new(limits: TaskLimits) -> Self {
        Self {
            limits,
            ..Self::default()
        }
    }

    fn ledger(&self) -> MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts `run` as a task and answers with its handle. `run` gets a cancellation token of its own (the
    /// request is answered at once, so its token no longer says anything) and the task's status line; a
    /// `tasks/cancel` cancels the token and the task ends `cancelled` once the run has stopped (proxies closed,
    /// load stopped, children gone).
    pub(crate) fn start<F, Fut>(&self, run: F) -> Result<CallToolResponse, ErrorData>
    where
        F: FnOnce(CancellationToken, TaskStatusLine) -> Fut,
        Fut: Future<Output = Result<CallToolResult, ErrorData>> + Send + 'static,
    {
        let now = Instant::now();
        {
            let mut ledger = self.ledger();
            ledger.forget_expired(now, self.limits.ttl);
            if ledger.created.len() >= self.limits.max_tasks {
                return Err(ErrorData::invalid_request(
                    format!(
                        "too many tasks: {} are kept at once (the task cap), running or finished \
                         within their ttlMs of {} s; read or cancel earlier tasks, or call without the tasks \
                         extension",
                        self.limits.max_tasks,
                        self.limits.ttl.as_secs()
                    ),
                    None,
                ));
            }
        }
        let options = TaskOptions::new()
            .with_ttl_ms(self.limits.ttl.as_millis() as u64)
            .with_poll_interval_ms(self.limits.poll_interval.as_millis() as u64)
            .with_status_message("starting");
        let task = self.manager.spawn(options, move |context| {
            let cancel = CancellationToken::new();
            let running = run(cancel.clone(), TaskStatusLine(context.clone()));
            Box::pin(async move {
                let mut running = std::pin::pin!(running);
                tokio::select! {
                    outcome = &mut running => outcome.map_err(TaskExit::Error),
                    () = context.cancelled() => {
                        cancel.cancel();
                        // The run stops its proxies and load on the token; the task is cancelled once it has.
                        let _ = running.await;
                        Err(TaskExit::Cancelled)
                    }
                }
            })
        });
        self.ledger().created.push_back((task.task_id.clone(), now));
        Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
    }

    /// `tasks/get`: the task's state, with the result once it is done. An id never given, or given so long ago
    /// that its task was dropped, and polls far faster than `pollIntervalMs`, are refused by name.
    pub(crate) fn get(&self, params: &GetTaskParams) -> Result<GetTaskResult, ErrorData> {
        let id = params.task_id.as_str();
        let task = self.manager.get_task(id).map_err(|_| self.not_found(id))?;
        let now = Instant::now();
        let mut ledger = self.ledger();
        if let Some(last) = ledger.last_poll.get(id)
            && now.duration_since(*last) < self.limits.poll_interval / 10
            && !task.status().is_terminal()
        {
            return Err(ErrorData::invalid_request(
                format!(
                    "task {id} polled {} ms after its last poll: poll it every {} ms (its pollIntervalMs); \
                     nothing is lost, poll again later",
                    now.duration_since(*last).as_millis(),
                    self.limits.poll_interval.as_millis()
                ),
                None,
            ));
        }
        ledger.last_poll.insert(id.to_owned(), now);
        Ok(GetTaskResult::new(task))
    }

    /// `tasks/cancel`: asks a working task to stop. A finished task cannot be cancelled (the extension's rule):
    /// that is refused with its status.
    pub(crate) fn cancel(&self, id: &str) -> Result<(), ErrorData> {
        let task = self.manager.get_task(id).map_err(|_| self.not_found(id))?;
        let status = task.status();
        if status.is_terminal() {
            return Err(ErrorData::invalid_params(
                format!(
                    "task {id} is already {}: only a working task can be cancelled",
                    status_name(status)
                ),
                None,
            ));
        }
        self.manager.cancel_task(id).map_err(|_| self.not_found(id))
    }

    /// `tasks/update`: hands the client's `inputResponses` to the task waiting for them; responses to keys it
    /// is not waiting for are ignored, as the extension asks.
    pub(crate) fn update(&self, id: &str, responses: InputResponses) -> Result<(), ErrorData> {
        self.manager
            .update_task(id, responses)
            .map_err(|_| self.not_found(id))
    }

    fn not_found(&self, id: &str) -> ErrorData {
        let message = if self.ledger().knew(id) {
            format!(
                "task {id} has expired: tasks and their results are kept {} s from their creation (ttlMs)",
                self.limits.ttl.as_secs()
            )
        } else {
            format!("unknown task: {id} (no task of this server has that id)")
        };
        ErrorData::invalid_params(message, None)
    }
}

/// A status in words, for messages: as the wire writes it, but for the wait for input.
fn status_name(status: TaskStatus) -> &'static str {
    match WireStatus::from_rmcp(status) {
        Some(WireStatus::InputRequired) => "waiting for input",
        Some(status) => status.as_str(),
        None => "finished",
    }
}
