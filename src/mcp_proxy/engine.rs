//! The per-call fault engine both fronts share: the decision about a request, what its faults do (composed
//! into one plan), the rewrite of its response and its event. The stdio relay and the HTTP proxy differ only
//! in how messages travel.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::decide::{Decider, Decision};
use super::events::{CallEvent, CallObserver, CancelRecord, EventLog, FiredFault};
use super::faults::{Action, CallContext, RequestFacts, hide_listed_tools};
use super::learned::{Ask, TaskRequest};
use super::plan::Mode;
use crate::mcp_wire::{
    jsonrpc::{Envelope, Outcome, Reply},
    tasks,
};
use crate::report::millis;
use crate::seeded::fnv_hex;

/// A shared [`CallObserver`]: the proxy feeds it, its owner reads it.
pub type Observer = std::sync::Arc<std::sync::Mutex<dyn CallObserver>>;

/// Where finished calls and delivered lines go: the events file and the `--report` observer.
pub struct Recorder {
    events: Option<EventLog>,
    observer: Option<Observer>,
}

impl Recorder {
    pub fn new(events: Option<EventLog>, observer: Option<Observer>) -> Self {
        Self { events, observer }
    }

    /// Whether anything is recorded (else calls need not be tracked for their events).
    pub fn is_active(&self) -> bool {
        self.events.is_some() || self.observer.is_some()
    }

    /// Readies `decider` for what this recorder counts: a report counts tasks by the tool whose call made them,
    /// so the decider learns taskId → tool from the answers.
    pub fn prepare(&self, decider: &mut Decider) {
        if self.observes() {
            decider.learn_tasks();
        }
    }

    /// Whether an observer (the `--report` recorder) watches the session.
    pub fn observes(&self) -> bool {
        self.observer.is_some()
    }

    /// A message the proxy delivered to the client.
    pub fn client_line(&self, line: &[u8]) {
        if let Some(observer) = &self.observer {
            observer
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .client_line(line);
        }
    }

    /// An answer the proxy delivered to the client, already parsed.
    pub fn client_answer(&self, answer: Envelope) {
        if let Some(observer) = &self.observer {
            observer
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .client_answer(answer);
        }
    }

    /// An HTTP answer to call `id` that asked the client to wait `wait_ms` (`Retry-After`).
    pub fn retry_after(&self, id: &serde_json::Value, wait_ms: f64) {
        if let Some(observer) = &self.observer {
            observer
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .retry_after(id, wait_ms);
        }
    }

    pub fn record(&mut self, event: &CallEvent) {
        if let Some(events) = self.events.as_mut() {
            events.write(event);
        }
        if let Some(observer) = &self.observer {
            observer
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .call(event);
        }
    }
}

/// A call's applied faults as one plan: the delays add up, the rewrites chain, and `terminal` (a reply, a
/// hang, a dropped connection, an HTTP status) settles the call.
#[derive(Debug, Clone, Default)]
pub struct Composed {
    pub request_delay: Duration,
    pub response_delay: Duration,
    pub rewrites: Vec<usize>,
    pub terminal: Option<Action>,
}

impl Composed {
    /// Whether the faults leave the response as the server sent it.
    pub fn passes_response(&self) -> bool {
        self.rewrites.is_empty() && self.response_delay.is_zero()
    }
}

/// A request the proxy tracks, with the decision about it.
pub struct Call {
    pub id: Value,
    pub method: String,
    pub tool: String,
    pub args_hash: Option<String>,
    pub time: String,
    pub started: Instant,
    pub decision: Decision,
    /// The task a `tasks/*` request names, when the proxy saw it made.
    pub task: Option<TaskRequest>,
    /// The protocol version the request declares.
    pub protocol_version: Option<String>,
    /// The question a `tools/call` with `inputResponses` answers.
    pub answers: Option<Ask>,
}

/// The `_meta` key of a 2026-07-28 request's protocol version.
const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// How a call ended, for its event.
pub struct CallEnd {
    pub upstream: Outcome,
    pub client: Outcome,
    pub upstream_time: Option<Duration>,
    pub cancel: Option<CancelRecord>,
}

/// Where one call stands, as both fronts track it for its event: when it was forwarded, what the server
/// answered and how long it took, and the client's cancellation.
#[derive(Debug, Default)]
pub struct CallProgress {
    pub forwarded_at: Option<Instant>,
    pub upstream: Option<Outcome>,
    /// How long the server took, from forwarding to its answer.
    pub upstream_time: Option<Duration>,
    pub cancelled_at: Option<Instant>,
    /// The cancellation ended a wait the proxy had injected (a delay or a hang).
    pub cancel_ended_wait: bool,
}

impl CallProgress {
    /// The request went to the server now.
    pub fn forwarded(&mut self) {
        self.forwarded_at = Some(Instant::now());
    }

    pub fn is_forwarded(&self) -> bool {
        self.forwarded_at.is_some()
    }

    /// The server's answer came, as `outcome`.
    pub fn answered(&mut self, outcome: Outcome) {
        self.upstream_time = self.forwarded_at.map(|at| at.elapsed());
        self.upstream = Some(outcome);
    }

    /// The client cancelled the call now; `ended_wait` when that released a wait the proxy had injected.
    pub fn cancelled(&mut self, at: Instant, ended_wait: bool) {
        self.cancelled_at = Some(at);
        self.cancel_ended_wait = ended_wait;
    }

    /// How `call` ended, the client having received `client`.
    pub fn end(&self, call: &Call, client: Outcome) -> CallEnd {
        let upstream = match (&self.upstream, self.forwarded_at) {
            (Some(outcome), _) => outcome.clone(),
            (None, Some(_)) => Outcome::Pending,
            (None, None) => Outcome::None,
        };
        CallEnd {
            upstream,
            client,
            upstream_time: self.upstream_time,
            cancel: self.cancelled_at.map(|at| CancelRecord {
                after_ms: millis(at.saturating_duration_since(call.started)),
                ended_injected_wait: self.cancel_ended_wait,
                released_ms: millis(at.elapsed()),
            }),
        }
    }
}

impl Call {
    /// Decides about request `envelope`.
    pub fn decide(decider: &mut Decider, envelope: &Envelope) -> Call {
        let method = envelope.method.clone().unwrap_or_default();
        let params = envelope.params.as_ref();
        let param = |key: &str| params.and_then(|p| p.get(key));
        let arguments = param("arguments");
        let args_hash = arguments.map(|a| fnv_hex(a.to_string().as_bytes()));
        let protocol_version = param("_meta")
            .and_then(|meta| meta.get(META_PROTOCOL_VERSION))
            .or_else(|| {
                (method == "initialize")
                    .then(|| param("protocolVersion"))
                    .flatten()
            })
            .and_then(Value::as_str)
            .map(str::to_owned);
        let (task, answers) = match decider.learned() {
            Some(learned) if tasks::is_task_method(&method) => (
                param(tasks::TASK_ID)
                    .and_then(Value::as_str)
                    .and_then(|id| learned.task_request(&method, id)),
                None,
            ),
            Some(learned) if method == "tools/call" && param("inputResponses").is_some() => (
                None,
                param("name")
                    .and_then(Value::as_str)
                    .and_then(|tool| learned.ask(tool))
                    .cloned(),
            ),
            _ => (None, None),
        };
        // A task's requests are matched by the tool whose call made it.
        let tool = task
            .as_ref()
            .map_or_else(|| envelope.target(), |t| t.tool.clone());
        let request = RequestFacts {
            task: task.as_ref(),
            protocol_version: protocol_version.as_deref(),
            answers: answers.as_ref(),
        };
        let decision = decider.decide_request(&method, &tool, arguments, request);
        Call {
            id: envelope.id.clone().unwrap_or(Value::Null),
            method,
            tool,
            args_hash,
            time: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
            started: Instant::now(),
            decision,
            task,
            protocol_version,
            answers,
        }
    }

    /// Learns from the server's `result` to this call what later requests are matched by (a task's tool, a
    /// tool's question), when a fault reads it.
    pub fn learn(&self, decider: &mut Decider, result: &Value) {
        if self.method == "tools/call"
            && let Some(learned) = decider.learned()
        {
            learned.tool_result(&self.tool, result);
        }
    }

    /// [`Self::learn`] from a raw answer line; parsed only when a fault reads what it teaches.
    pub fn learn_line(&self, decider: &mut Decider, line: &[u8]) {
        if self.method != "tools/call" || decider.learned().is_none() {
            return;
        }
        if let Some(result) = Envelope::parse(line).and_then(|e| e.result) {
            self.learn(decider, &result);
        }
    }

    /// Whether the call's response is a listing some fault hides tools from.
    pub fn filters_list(&self, decider: &Decider) -> bool {
        self.method == "tools/list" && decider.hides_tools()
    }

    pub fn context<'a>(&'a self, decider: &'a Decider, index: usize) -> CallContext<'a> {
        CallContext {
            seed: decider.seed(),
            fault_index: index,
            tool: &self.tool,
            ordinal: self.decision.ordinal,
            elapsed_ms: self.decision.elapsed_ms,
            roll: self
                .decision
                .records
                .iter()
                .find(|r| r.fault == index)
                .map_or(0.0, |r| r.roll),
            tools: decider.matcher(index),
            request: RequestFacts {
                task: self.task.as_ref(),
                protocol_version: self.protocol_version.as_deref(),
                answers: self.answers.as_ref(),
            },
        }
    }

    /// The applied faults' actions, composed in plan order.
    pub fn compose(&self, decider: &Decider) -> Composed {
        let mut composed = Composed::default();
        for &index in &self.decision.applied {
            let Some(fault) = decider.fault(index) else {
                continue;
            };
            match fault.spec.inner().action(&self.context(decider, index)) {
                Action::DelayRequest(d) => composed.request_delay += d,
                Action::DelayResponse(d) => composed.response_delay += d,
                Action::Rewrite => composed.rewrites.push(index),
                terminal => {
                    composed.terminal = Some(terminal);
                    break;
                }
            }
        }
        composed
    }

    /// A `tools/list` response without the tools the faults hide.
    pub fn filter_list(&self, decider: &Decider, mode: Mode, line: Vec<u8>) -> Vec<u8> {
        match serde_json::from_slice::<Value>(&line) {
            Ok(mut value) => {
                hide_listed_tools(&mut value, |tool| decider.hidden(tool));
                let mut out = value.to_string().into_bytes();
                out.push(b'\n');
                out
            }
            Err(e) => self.internal_error(mode, &line, &e.to_string()),
        }
    }

    /// The server's response with the faults' rewrites applied in order (and, for a listing, the hidden
    /// tools removed first).
    pub fn rewrite_response(
        &self,
        decider: &Decider,
        mode: Mode,
        line: Vec<u8>,
        rewrites: &[usize],
    ) -> Vec<u8> {
        let mut out = if self.filters_list(decider) {
            self.filter_list(decider, mode, line)
        } else {
            line
        };
        for &index in rewrites {
            let Some(fault) = decider.fault(index) else {
                continue;
            };
            match fault
                .spec
                .inner()
                .rewrite_line(&out, &self.context(decider, index))
            {
                Ok(next) => out = next,
                Err(e) => return self.internal_error(mode, &out, &e.to_string()),
            }
        }
        out
    }

    /// A fault could not be applied: pass the original (fail-safe) or answer an error (strict).
    pub fn internal_error(&self, mode: Mode, line: &[u8], error: &str) -> Vec<u8> {
        tracing::warn!(
            "mcp-proxy: cannot apply the fault to {} `{}`: {error}",
            self.method,
            self.tool
        );
        match mode {
            Mode::FailSafe => line.to_vec(),
            Mode::Strict => Reply::Error {
                code: -32603,
                message: format!("fault mcp-proxy: cannot apply the fault: {error}"),
                data: None,
            }
            .line(&self.id),
        }
    }

    /// The call's event line.
    pub fn event(&self, decider: &Decider, end: CallEnd) -> CallEvent {
        let fired = |index: usize| {
            let planned = decider.fault(index)?;
            let roll = self
                .decision
                .records
                .iter()
                .find(|r| r.fault == index)
                .map_or(0.0, |r| r.roll);
            Some(FiredFault {
                index,
                fault_type: planned.spec.type_name(),
                name: planned.name.clone(),
                roll,
                roll_key: self.decision.roll_key.clone(),
                action: planned.spec.inner().describe(),
            })
        };
        CallEvent {
            time: self.time.clone(),
            id: self.id.clone(),
            method: self.method.clone(),
            tool: self.tool.clone(),
            ordinal: self.decision.ordinal,
            args_hash: self.args_hash.clone(),
            task_id: self.task.as_ref().map(|t| t.task_id.clone()),
            seed: decider.seed(),
            decisions: self.decision.records.clone(),
            fault: self.decision.fired.and_then(fired),
            also_applied: self
                .decision
                .applied
                .iter()
                .skip(1)
                .filter_map(|&index| fired(index))
                .collect(),
            upstream: end.upstream,
            client: end.client,
            latency_ms: millis(self.started.elapsed()),
            upstream_ms: end.upstream_time.map(millis),
            cancel: end.cancel,
        }
    }
}

/// What a fault that hides tools tells the client when it takes effect.
pub const LIST_CHANGED: &[u8] =
    b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}";

/// What a client SDK reports when the server's connection closes under a call.
pub fn connection_closed() -> Reply {
    Reply::Error {
        code: -32000,
        message: "Connection closed".into(),
        data: None,
    }
}

/// The timeout error a hang answers with at its cap (`on_cap: error`).
pub fn request_timed_out() -> Reply {
    Reply::Error {
        code: -32001,
        message: "Request timed out".into(),
        data: None,
    }
}

pub fn reply_outcome(reply: &Reply) -> Outcome {
    match reply {
        Reply::Error { code, message, .. } => Outcome::Error {
            code: *code,
            message: message.clone(),
        },
        Reply::ToolError { .. } => Outcome::ToolError,
        Reply::Result(_) => Outcome::Result,
    }
}
