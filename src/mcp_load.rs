//! Tool calls as load: each client session makes the calls of a list, over and over, on the shared
//! scheduler ([`crate::load::schedule`]), with a client policy (a timeout that cancels the call, retries
//! with a backoff). Open model (`rate` calls per second for `duration`, planned as the scheduler plans every
//! open-model load: a call due while every in-flight slot is busy is not sent, and counts with the timeout as
//! its latency) or a closed loop (`repeat` times through the list, `concurrency` at a time). Each attempt has
//! the load generator's [`Timing`] and timeout rule: its latency runs from when it was due and it is cancelled
//! at its deadline, the timeout after it was due, as in the impact report.
//!
//! With `as_tasks` the client declares the MCP Tasks extension ([`tasks::EXTENSION`]) at
//! `initialize` and in each call's `_meta`; a call answered with a task is polled with `tasks/get` at the
//! server's `pollIntervalMs` until the task ends, and the call's outcome and latency are the task's. A call
//! answered plainly (a server without tasks) is taken as it is.

use std::{
    sync::{Arc, atomic::Ordering},
    time::Duration,
};

use serde_json::{Value, json};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::load::{
    LoadProgress, Timing,
    schedule::{self, Arrivals},
    timing,
};
use crate::mcp_wire::{
    client::{Answer, McpClient},
    handshake, task_client, tasks,
};
pub use crate::mcp_wire::{handshake::HandshakeError, task_client::TaskTally};
use crate::report::{
    chaos::record::{CallOutcome, CallRecord, Logical, Schemas, retry_after_ms},
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
    /// A call unanswered this long after it was due is cancelled and counts as a timeout.
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
    /// Declare the tasks extension and follow the calls the server answers with a task to their end.
    pub as_tasks: bool,
}

impl CallLoad {
    /// Logical calls of one run, all clients together (open model: [`schedule::planned`]).
    pub fn planned_calls(&self) -> u64 {
        match self.pace {
            CallPace::Repeat(n) => u64::from(self.num_clients.max(1)) * n * self.calls.len() as u64,
            CallPace::Rate { duration, rate } => {
                schedule::planned(rate, duration, self.num_clients)
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
        let all = match self.num_clients {
            0 | 1 => one,
            n => format!("{n} clients, each {one}"),
        };
        if self.as_tasks {
            format!("{all}, called as tasks ({})", tasks::EXTENSION)
        } else {
            all
        }
    }
}

/// The MCP handshake (`initialize`, `notifications/initialized`) and the tools' output schemas from every
/// page of `tools/list`, each answer awaited up to `timeout`; `as_tasks` declares the tasks extension.
pub async fn handshake(
    client: &McpClient,
    timeout: Duration,
    as_tasks: bool,
) -> Result<Schemas, HandshakeError> {
    handshake::initialize(client, task_client::capabilities(as_tasks), timeout).await?;
    let mut schemas = Schemas::default();
    handshake::list_tools(client, timeout, |page| schemas.add_list(page)).await?;
    Ok(schemas)
}

/// One client session of a run, handshaken, and what it shares with the run's other sessions.
pub struct Session {
    pub client: Arc<McpClient>,
    /// The output schemas its handshake listed, that its results are judged by.
    pub schemas: Arc<Schemas>,
    /// Which of the run's sessions it is, from 0.
    pub index: u32,
    /// When the run started: every record's times are from it.
    pub start: Instant,
    pub progress: Arc<LoadProgress>,
    /// How the calls made as tasks ended (`as_tasks`).
    pub tally: Arc<TaskTally>,
}

/// The session's calls on the schedule from its run's start, until done or `stop`; every attempt, and a
/// record for each call that could not start. Calls made as tasks are counted in the session's tally by how
/// their tasks ended.
pub async fn drive(
    load: &Arc<CallLoad>,
    session: Session,
    stop: &CancellationToken,
) -> Vec<CallRecord> {
    let arrivals = match load.pace {
        CallPace::Repeat(n) => Arrivals::Closed {
            planned: Some(n * load.calls.len() as u64),
            until: None,
        },
        CallPace::Rate { duration, rate } => Arrivals::open(
            session.start,
            rate,
            duration,
            session.index,
            load.num_clients,
        ),
    };
    let mut calls = SessionCalls {
        load: load.clone(),
        session: Arc::new(session),
        records: Vec::new(),
    };
    schedule::run(arrivals, load.concurrency.max(1) as usize, &mut calls, stop).await;
    calls.records
}

/// One session's calls as the scheduler's work.
struct SessionCalls {
    load: Arc<CallLoad>,
    session: Arc<Session>,
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
        let logical_index = index * clients + u64::from(self.session.index);
        let task = match (&call.task, self.load.num_clients) {
            (Some(task), 0 | 1) => format!("{task}#{repetition}"),
            (Some(task), _) => format!("{task}#{repetition}@client-{}", self.session.index),
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
        let (load, session) = (self.load.clone(), self.session.clone());
        async move { logical_call(&load, &session, &call, logical, due).await }
    }

    fn done(&mut self, attempts: Vec<CallRecord>) {
        let progress = &self.session.progress;
        progress.completed.fetch_add(1, Ordering::Relaxed);
        if attempts
            .last()
            .is_some_and(|a| a.outcome != CallOutcome::Ok)
        {
            progress.errors.fetch_add(1, Ordering::Relaxed);
        }
        self.records.extend(attempts);
    }

    fn not_started(&mut self, index: u64, due: Instant) {
        let (call, logical) = self.call(index);
        let progress = &self.session.progress;
        progress.completed.fetch_add(1, Ordering::Relaxed);
        progress.errors.fetch_add(1, Ordering::Relaxed);
        let timing = Timing::not_started(due, self.load.policy.timeout);
        let times = Times::of(&timing, self.session.start);
        self.records.push(CallRecord {
            tool: call.tool,
            args_hash: None,
            start_ms: times.start_ms,
            latency_ms: times.latency_ms,
            queueing_ms: times.queueing_ms,
            service_ms: times.service_ms,
            fault: None,
            outcome: CallOutcome::NotStarted,
            reached_server: false,
            cancel_after_ms: None,
            logical: Some(logical),
            session: self.session.index,
            request_id: None,
            retry_after_ms: None,
        });
    }
}

/// A [`Timing`] as a call record's figures, from the run's `start`.
struct Times {
    start_ms: f64,
    latency_ms: f64,
    queueing_ms: Option<f64>,
    service_ms: Option<f64>,
}

impl Times {
    fn of(timing: &Timing, start: Instant) -> Self {
        Self {
            start_ms: millis(timing.due.saturating_duration_since(start)),
            latency_ms: millis(timing.latency()),
            queueing_ms: Some(millis(timing.queueing())),
            service_ms: timing.service().map(millis),
        }
    }
}

/// One logical call: attempts until a result the client accepts or the retries run out.
///
/// Every attempt is due, sent and timed out as any load work is ([`Timing`], [`timing::deadline`]): the
/// first is due at `due`, when the schedule said; a retry is due when the backoff after the attempt before
/// it ends (that attempt's end + the backoff). Each attempt is cancelled at its own deadline, its due + the
/// timeout, however late it was sent, and its latency runs from its due, so a client too busy to send on
/// time shows as queueing delay. The logical call as a whole runs from `due` to the end of its last
/// attempt: every attempt and the backoffs between them. With `as_tasks` the calls are made as tasks: an
/// attempt answered with a task ends when the task does (or is cancelled at the deadline).
async fn logical_call(
    load: &CallLoad,
    session: &Session,
    call: &PlannedCall,
    logical: Logical,
    due: Instant,
) -> Vec<CallRecord> {
    let (client, policy) = (&session.client, load.policy);
    let mut records = Vec::new();
    let mut due = due;
    for attempt in 1..=policy.retries + 1 {
        let mut params = json!({"name": call.tool, "arguments": call.arguments});
        if load.as_tasks {
            params["_meta"] = task_client::call_meta();
        }
        let sent = Instant::now();
        let deadline = timing::deadline(due, policy.timeout);
        let (id, answer) = client.request_until("tools/call", params, deadline).await;
        let answer = if load.as_tasks {
            task_client::settle(client, answer, deadline, &session.tally).await
        } else {
            answer
        };
        let timing = Timing {
            due,
            sent: Some(sent),
            ended: Instant::now(),
        };
        let (outcome, cancel_after_ms, retry_after) = match answer {
            Answer::Response(r) => match (r.get("result"), r.get("error")) {
                (Some(result), None) => (session.schemas.judge(&call.tool, result), None, None),
                (_, error) => (
                    CallOutcome::ProtocolError,
                    None,
                    error.and_then(retry_after_ms),
                ),
            },
            Answer::TimedOut => (
                CallOutcome::Timeout,
                Some(millis(deadline.saturating_duration_since(sent))),
                None,
            ),
            Answer::Closed => (CallOutcome::ProtocolError, None, None),
        };
        let times = Times::of(&timing, session.start);
        records.push(CallRecord {
            tool: call.tool.clone(),
            args_hash: None,
            start_ms: times.start_ms,
            latency_ms: times.latency_ms,
            queueing_ms: times.queueing_ms,
            service_ms: times.service_ms,
            fault: None,
            outcome,
            reached_server: true,
            cancel_after_ms,
            logical: Some(Logical {
                attempt,
                ..logical.clone()
            }),
            session: session.index,
            request_id: Some(json!(id).to_string()),
            retry_after_ms: retry_after,
        });
        if !outcome.retryable() || attempt > policy.retries {
            break;
        }
        due = timing.ended + policy.backoff;
        tokio::time::sleep_until(due).await;
    }
    records
}

#[cfg(test)]
mod tests {
    use tokio::{io::AsyncReadExt, net::TcpListener};

    use super::*;
    use crate::load::{LoadPlan, Pace, Target};

    fn load(pace: CallPace, num_clients: u32, policy: CallPolicy) -> CallLoad {
        CallLoad {
            calls: vec![PlannedCall {
                tool: "t".into(),
                arguments: json!({}),
                task: None,
            }],
            pace,
            num_clients,
            concurrency: 4,
            policy,
            as_tasks: false,
        }
    }

    fn policy(timeout_ms: u64, retries: u32, backoff_ms: u64) -> CallPolicy {
        CallPolicy {
            timeout: Duration::from_millis(timeout_ms),
            retries,
            backoff: Duration::from_millis(backoff_ms),
        }
    }

    #[test]
    fn both_load_drivers_plan_the_same_open_model_schedule() {
        let duration = Duration::from_millis(1500);
        for clients in [1, 2, 3] {
            let requests = LoadPlan {
                mix: crate::load::Mix::single(
                    Target::parse("http://127.0.0.1:9/", "GET", &[], "").unwrap(),
                ),
                connect_to: None,
                proxy_originates_tls: false,
                num_clients: clients,
                pace: Pace::Open { rps: 3 },
                duration,
                timeout: Duration::from_secs(1),
                max_in_flight: None,
            }
            .planned_requests();
            let rate = CallPace::Rate {
                duration,
                rate: 3.0,
            };
            let calls = load(rate, clients, policy(1000, 0, 0)).planned_calls();
            assert_eq!(requests, Some(calls), "{clients} clients");
        }
        let one = load(
            CallPace::Rate {
                duration,
                rate: 3.0,
            },
            1,
            policy(1000, 0, 0),
        );
        assert_eq!(one.planned_calls(), 5);
    }

    /// A client of an MCP server on 127.0.0.1 that reads every request and never answers.
    async fn silent_server() -> Arc<McpClient> {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut connection, _) = listener.accept().await.unwrap();
            let mut read = Vec::new();
            let _ = connection.read_to_end(&mut read).await;
        });
        let (reader, writer) = tokio::net::TcpStream::connect(addr)
            .await
            .unwrap()
            .into_split();
        Arc::new(McpClient::over_lines(reader, writer, 1))
    }

    /// Session 0 of a run starting now, on `client`, counting its tasks in `tally`.
    fn session(client: Arc<McpClient>, tally: Arc<TaskTally>) -> Session {
        Session {
            client,
            schemas: Arc::new(Schemas::default()),
            index: 0,
            start: Instant::now(),
            progress: Arc::default(),
            tally,
        }
    }

    async fn drive_for(load: CallLoad, client: Arc<McpClient>) -> Vec<CallRecord> {
        let session = session(client, Arc::default());
        let mut records = drive(&Arc::new(load), session, &CancellationToken::new()).await;
        records.sort_by(|a, b| a.start_ms.total_cmp(&b.start_ms));
        records
    }

    fn within(value: Option<f64>, low: f64, high: f64) -> bool {
        value.is_some_and(|v| (low..high).contains(&v))
    }

    /// On one runtime thread, kept busy from 300 to 800 ms into the run: the call due at 500 ms goes out at
    /// about 800 ms and is still cancelled at its due + 1 s.
    #[tokio::test]
    async fn a_call_sent_late_times_out_at_its_due_plus_the_timeout() {
        let client = silent_server().await;
        let busy = tokio::spawn(async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            std::thread::sleep(Duration::from_millis(500));
        });
        let rate = CallPace::Rate {
            duration: Duration::from_secs(1),
            rate: 2.0,
        };
        let records = drive_for(load(rate, 1, policy(1000, 0, 0)), client).await;
        busy.await.unwrap();
        assert_eq!(records.len(), 2);
        let late = &records[1];
        assert_eq!(late.outcome, CallOutcome::Timeout);
        assert!(within(Some(late.start_ms), 499.0, 510.0), "{late:?}");
        assert!(within(Some(late.latency_ms), 1000.0, 1050.0), "{late:?}");
        assert!(within(late.queueing_ms, 250.0, 350.0), "{late:?}");
        assert!(within(late.service_ms, 650.0, 750.0), "{late:?}");
        // The client waited what was left of the timeout once it had sent the call.
        assert!(within(late.cancel_after_ms, 650.0, 750.0), "{late:?}");
    }

    /// What a scripted server received: when, the method, its params.
    type Received = Arc<std::sync::Mutex<Vec<(Instant, String, Value)>>>;

    /// A client of a server on 127.0.0.1 that answers every `tools/call` with a task whose `pollIntervalMs` is
    /// `poll_ms`, and `tasks/get` of it as `working` until poll number `lost_after` (from 1), which says the task
    /// is not found (`None`: working for ever); `tasks/cancel` gets an empty result.
    async fn task_server(poll_ms: u64, lost_after: Option<usize>) -> (Arc<McpClient>, Received) {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let received: Received = Arc::default();
        let seen = received.clone();
        tokio::spawn(async move {
            let (connection, _) = listener.accept().await.unwrap();
            let (read, mut write) = connection.into_split();
            let mut lines = tokio::io::BufReader::new(read).lines();
            let mut polls = 0;
            while let Ok(Some(line)) = lines.next_line().await {
                let request: Value = serde_json::from_str(&line).unwrap();
                let method = request["method"].as_str().unwrap_or_default().to_owned();
                let params = request["params"].clone();
                seen.lock()
                    .unwrap()
                    .push((Instant::now(), method.clone(), params));
                let answer = match method.as_str() {
                    "tools/call" => json!({"result": {tasks::RESULT_TYPE: tasks::RESULT_TYPE_TASK,
                        tasks::TASK_ID: "t-1", tasks::STATUS: "working", tasks::POLL_INTERVAL_MS: poll_ms}}),
                    "tasks/get" => {
                        polls += 1;
                        if lost_after == Some(polls) {
                            json!({"error": {"code": -32602, "message": "Task not found"}})
                        } else {
                            json!({"result": {tasks::RESULT_TYPE: tasks::RESULT_TYPE_COMPLETE,
                                tasks::TASK_ID: "t-1", tasks::STATUS: "working",
                                tasks::POLL_INTERVAL_MS: poll_ms}})
                        }
                    }
                    _ => json!({"result": {}}),
                };
                let mut reply = json!({"jsonrpc": "2.0", "id": request["id"]});
                if let (Value::Object(reply), Value::Object(answer)) = (&mut reply, answer) {
                    reply.extend(answer);
                }
                let mut line = reply.to_string().into_bytes();
                line.push(b'\n');
                if write.write_all(&line).await.is_err() {
                    break;
                }
            }
        });
        let (reader, writer) = tokio::net::TcpStream::connect(addr)
            .await
            .unwrap()
            .into_split();
        (Arc::new(McpClient::over_lines(reader, writer, 1)), received)
    }

    async fn call_as_task(client: Arc<McpClient>, timeout_ms: u64) -> (CallRecord, TaskTally) {
        let tally = Arc::new(TaskTally::default());
        let mut as_tasks = load(CallPace::Repeat(1), 1, policy(timeout_ms, 0, 0));
        as_tasks.as_tasks = true;
        let session = session(client, tally.clone());
        let mut records = drive(&Arc::new(as_tasks), session, &CancellationToken::new()).await;
        assert_eq!(records.len(), 1, "{records:?}");
        let tally = Arc::try_unwrap(tally).unwrap_or_default();
        (records.remove(0), tally)
    }

    /// A task `tasks/get` says is not found ends the call as lost, after polls no closer than 50 ms apart
    /// however small the task's pollIntervalMs.
    #[tokio::test]
    async fn a_task_the_server_lost_ends_the_call_and_is_counted_lost() {
        let (client, received) = task_server(1, Some(3)).await;
        let (record, tally) = call_as_task(client, 10_000).await;
        assert_eq!(record.outcome, CallOutcome::ProtocolError, "{record:?}");
        assert_eq!(tally.created.load(Ordering::Relaxed), 1);
        assert_eq!(tally.lost.load(Ordering::Relaxed), 1);
        assert!(tally.describe().contains("1 lost"), "{}", tally.describe());
        let received = received.lock().unwrap().clone();
        let methods: Vec<&str> = received.iter().map(|(_, m, _)| m.as_str()).collect();
        assert_eq!(
            methods,
            ["tools/call", "tasks/get", "tasks/get", "tasks/get"]
        );
        for pair in received.windows(2) {
            let gap = pair[1].0.duration_since(pair[0].0);
            assert!(gap >= Duration::from_millis(50), "polled {gap:?} apart");
        }
        // The call declared the extension, and each poll names its task.
        let declared = &received[0].2["_meta"][tasks::CLIENT_CAPABILITIES_META];
        assert_eq!(declared["extensions"], json!({tasks::EXTENSION: {}}));
        assert_eq!(received[1].2[tasks::TASK_ID], "t-1");
        assert!(within(Some(record.latency_ms), 150.0, 1000.0), "{record:?}");
    }

    /// A task still working at the call's timeout: the call is a timeout at its due + the timeout, and the
    /// task is cancelled with `tasks/cancel`.
    #[tokio::test]
    async fn a_task_still_working_at_the_timeout_is_cancelled() {
        let (client, received) = task_server(100, None).await;
        let (record, tally) = call_as_task(client, 500).await;
        assert_eq!(record.outcome, CallOutcome::Timeout, "{record:?}");
        assert!(within(Some(record.latency_ms), 500.0, 560.0), "{record:?}");
        assert_eq!(tally.timed_out.load(Ordering::Relaxed), 1);
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let cancelled = received.lock().unwrap().iter().any(|(_, method, params)| {
                method == tasks::CANCEL && params[tasks::TASK_ID] == "t-1"
            });
            if cancelled {
                break;
            }
            assert!(Instant::now() < deadline, "no tasks/cancel");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// A retry is due when the backoff after the failed attempt ends, and times out a timeout after that.
    #[tokio::test]
    async fn a_retry_is_due_after_the_backoff_and_has_its_own_deadline() {
        let client = silent_server().await;
        let records = drive_for(load(CallPace::Repeat(1), 1, policy(300, 1, 100)), client).await;
        assert_eq!(records.len(), 2);
        let (first, retry) = (&records[0], &records[1]);
        assert!(within(Some(first.latency_ms), 300.0, 340.0), "{first:?}");
        let retry_due = first.start_ms + first.latency_ms + 100.0;
        assert!(
            within(Some(retry.start_ms), retry_due - 1.0, retry_due + 5.0),
            "{retry:?}"
        );
        assert!(within(Some(retry.latency_ms), 300.0, 340.0), "{retry:?}");
        assert!(within(retry.queueing_ms, 0.0, 20.0), "{retry:?}");
        assert_eq!(retry.logical.as_ref().map(|l| l.attempt), Some(2));
    }
}
