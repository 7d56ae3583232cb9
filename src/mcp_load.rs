//! Tool calls as load: each client session makes the calls of a list, over and over, on the shared
//! scheduler ([`crate::load::schedule`]), with a client policy (a timeout that cancels the call, retries
//! with a backoff). Open model (`rate` calls per second for `duration`: a call due while every in-flight slot
//! is busy is not sent, and counts with the timeout as its latency) or a closed loop (`repeat` times through
//! the list, `concurrency` at a time). A call's latency runs from when it was due, as in the impact report.

use std::{
    sync::{Arc, atomic::Ordering},
    time::Duration,
};

use serde_json::{Value, json};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::load::{
    LoadProgress,
    schedule::{self, Arrivals},
};
use crate::mcp_wire::{
    PROTOCOL_VERSION,
    client::{Answer, McpClient},
};
use crate::report::{
    chaos::record::{CallOutcome, CallRecord, Logical, Schemas},
    millis,
};

/// One entry of the calls list.
#[derive(Debug, Clone)]
pub struct PlannedCall {
    pub tool: String,
    pub arguments: Value,
    /// Calls sharing a task id form one task in each repetition.
    pub task: Option<String>,
}

/// How calls are paced.
#[derive(Debug, Clone, Copy)]
pub enum CallPace {
    /// Closed loop: the calls list this many times, `concurrency` calls at a time.
    Repeat(u64),
    /// Open model: the calls list over and over, `rate` logical calls per second per client, for `duration`.
    Rate { duration: Duration, rate: f64 },
}

/// How the driving client treats a call that fails or hangs.
#[derive(Debug, Clone, Copy)]
pub struct CallPolicy {
    /// A call unanswered this long is cancelled and counts as a timeout.
    pub timeout: Duration,
    /// Further attempts after a failure (an error, an `isError` result, a timeout, a malformed answer).
    pub retries: u32,
    pub backoff: Duration,
}

/// The load of one run.
#[derive(Debug, Clone)]
pub struct CallLoad {
    pub calls: Vec<PlannedCall>,
    pub pace: CallPace,
    /// Independent client sessions, each running the whole schedule.
    pub num_clients: u32,
    /// Calls in flight at once per client.
    pub concurrency: u32,
    pub policy: CallPolicy,
}

impl CallLoad {
    /// Logical calls of one run, all clients together.
    pub fn planned_calls(&self) -> u64 {
        (0..self.num_clients.max(1))
            .map(|session| self.planned_for(session))
            .sum()
    }

    /// Logical calls client `session` makes: in the open model, those due before the end.
    fn planned_for(&self, session: u32) -> u64 {
        match self.pace {
            CallPace::Repeat(n) => n * self.calls.len() as u64,
            CallPace::Rate { duration, rate } => {
                let phase = f64::from(session) / f64::from(self.num_clients.max(1));
                (duration.as_secs_f64() * rate - phase).ceil().max(0.0) as u64
            }
        }
    }

    /// The schedule in words, for the report.
    pub fn describe(&self) -> String {
        let one = match self.pace {
            CallPace::Repeat(n) => format!("{} calls × {n} repeats", self.calls.len()),
            CallPace::Rate { duration, rate } => format!(
                "{} calls cycled at {rate} calls/s for {}",
                self.calls.len(),
                humantime::format_duration(duration)
            ),
        };
        match self.num_clients {
            0 | 1 => one,
            n => format!("{n} clients, each {one}"),
        }
    }
}

/// Why a server cannot be driven.
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    #[error("no answer to {method} within {}s", .timeout.as_secs())]
    NoAnswer {
        method: &'static str,
        timeout: Duration,
    },
    #[error("the session closed before the answer to {method}")]
    Closed { method: &'static str },
    #[error("{method} failed: {error}")]
    Refused { method: &'static str, error: Value },
}

/// The MCP handshake (`initialize`, `notifications/initialized`) and the tools' output schemas from every
/// page of `tools/list`, each answer awaited up to `timeout`.
pub async fn handshake(client: &McpClient, timeout: Duration) -> Result<Schemas, HandshakeError> {
    let init = json!({
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "fault-mcp-chaos", "version": env!("CARGO_PKG_VERSION")}
    });
    let answer = |answer, method| match answer {
        Answer::Response(r) if r.get("result").is_some() => Ok(r),
        Answer::Response(r) => Err(HandshakeError::Refused {
            method,
            error: r.get("error").cloned().unwrap_or(r),
        }),
        Answer::TimedOut => Err(HandshakeError::NoAnswer { method, timeout }),
        Answer::Closed => Err(HandshakeError::Closed { method }),
    };
    answer(
        client.request("initialize", init, timeout).await.1,
        "initialize",
    )?;
    client.notify("notifications/initialized", json!({}));
    let mut schemas = Schemas::default();
    let mut cursor: Option<Value> = None;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let response = answer(
            client.request("tools/list", params, timeout).await.1,
            "tools/list",
        )?;
        let result = response.get("result").cloned().unwrap_or(Value::Null);
        schemas.add_list(&result);
        cursor = result.get("nextCursor").filter(|c| !c.is_null()).cloned();
        if cursor.is_none() {
            return Ok(schemas);
        }
    }
}

/// One client session's calls on the schedule from `start`, until done or `stop`; every attempt, and a
/// record for each call that could not start.
pub async fn drive(
    load: &Arc<CallLoad>,
    client: Arc<McpClient>,
    schemas: Arc<Schemas>,
    start: Instant,
    session: u32,
    progress: Arc<LoadProgress>,
    stop: &CancellationToken,
) -> Vec<CallRecord> {
    let arrivals = match load.pace {
        CallPace::Repeat(_) => Arrivals::Closed {
            planned: Some(load.planned_for(session)),
            until: None,
        },
        CallPace::Rate { rate, .. } => Arrivals::open(
            start,
            Duration::from_secs_f64(1.0 / rate),
            load.planned_for(session),
            session,
            load.num_clients,
        ),
    };
    let mut calls = SessionCalls {
        load: load.clone(),
        client,
        schemas,
        start,
        session,
        progress,
        records: Vec::new(),
    };
    schedule::run(arrivals, load.concurrency.max(1) as usize, &mut calls, stop).await;
    calls.records
}

/// One session's calls as the scheduler's work.
struct SessionCalls {
    load: Arc<CallLoad>,
    client: Arc<McpClient>,
    schemas: Arc<Schemas>,
    start: Instant,
    session: u32,
    progress: Arc<LoadProgress>,
    records: Vec<CallRecord>,
}

impl SessionCalls {
    /// Call number `index` of the session: which entry of the list, and its logical identity in the run.
    fn call(&self, index: u64) -> (PlannedCall, Logical) {
        let per_round = self.load.calls.len().max(1) as u64;
        let call = self.load.calls[(index % per_round) as usize].clone();
        let repetition = index / per_round + 1;
        // Unique across sessions: the report groups attempts by logical index and task.
        let clients = u64::from(self.load.num_clients.max(1));
        let logical_index = index * clients + u64::from(self.session);
        let task = match (&call.task, self.load.num_clients) {
            (Some(task), 0 | 1) => format!("{task}#{repetition}"),
            (Some(task), _) => format!("{task}#{repetition}@client-{}", self.session),
            (None, _) => format!("call-{logical_index}"),
        };
        let logical = Logical {
            index: logical_index,
            attempt: 1,
            task,
        };
        (call, logical)
    }
}

impl schedule::Work for SessionCalls {
    type Done = Vec<CallRecord>;

    fn start(
        &mut self,
        index: u64,
        due: Instant,
    ) -> impl std::future::Future<Output = Vec<CallRecord>> + Send + use<> {
        let (call, logical) = self.call(index);
        let client = self.client.clone();
        let schemas = self.schemas.clone();
        let (policy, start, session) = (self.load.policy, self.start, self.session);
        async move {
            logical_call(
                &client, &schemas, &call, logical, policy, start, due, session,
            )
            .await
        }
    }

    fn done(&mut self, attempts: Vec<CallRecord>) {
        self.progress.completed.fetch_add(1, Ordering::Relaxed);
        if attempts
            .last()
            .is_some_and(|a| a.outcome != CallOutcome::Ok)
        {
            self.progress.errors.fetch_add(1, Ordering::Relaxed);
        }
        self.records.extend(attempts);
    }

    fn not_started(&mut self, index: u64, due: Instant) {
        let (call, logical) = self.call(index);
        self.progress.completed.fetch_add(1, Ordering::Relaxed);
        self.progress.errors.fetch_add(1, Ordering::Relaxed);
        self.records.push(CallRecord {
            tool: call.tool,
            args_hash: None,
            start_ms: millis(due.saturating_duration_since(self.start)),
            latency_ms: millis(self.load.policy.timeout),
            fault: None,
            outcome: CallOutcome::NotStarted,
            reached_server: false,
            cancel_after_ms: None,
            logical: Some(logical),
            session: self.session,
            request_id: None,
        });
    }
}

/// One logical call: attempts until a result the client accepts or the retries run out. The first attempt's
/// latency runs from `due`; a retry's from when it was sent.
#[allow(clippy::too_many_arguments)]
async fn logical_call(
    client: &McpClient,
    schemas: &Schemas,
    call: &PlannedCall,
    logical: Logical,
    policy: CallPolicy,
    start: Instant,
    due: Instant,
    session: u32,
) -> Vec<CallRecord> {
    let mut records = Vec::new();
    let mut from = due;
    for attempt in 1..=policy.retries + 1 {
        let params = json!({"name": call.tool, "arguments": call.arguments});
        let (id, answer) = client.request("tools/call", params, policy.timeout).await;
        let latency = from.elapsed();
        let (outcome, cancel_after_ms) = match answer {
            Answer::Response(r) => match r.get("result") {
                Some(result) if r.get("error").is_none() => {
                    (schemas.judge(&call.tool, result), None)
                }
                _ => (CallOutcome::ProtocolError, None),
            },
            Answer::TimedOut => (CallOutcome::Timeout, Some(millis(policy.timeout))),
            Answer::Closed => (CallOutcome::ProtocolError, None),
        };
        records.push(CallRecord {
            tool: call.tool.clone(),
            args_hash: None,
            start_ms: millis(from.saturating_duration_since(start)),
            latency_ms: millis(latency),
            fault: None,
            outcome,
            reached_server: true,
            cancel_after_ms,
            logical: Some(Logical {
                attempt,
                ..logical.clone()
            }),
            session,
            request_id: Some(json!(id).to_string()),
        });
        if !outcome.retryable() || attempt > policy.retries {
            break;
        }
        if !policy.backoff.is_zero() {
            tokio::time::sleep(policy.backoff).await;
        }
        from = Instant::now();
    }
    records
}
