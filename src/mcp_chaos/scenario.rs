//! `fault_run_mcp_chaos_scenario`'s run: start the server behind `fault mcp-proxy` (this executable), drive
//! the calls with the client policy, join what the client saw with the proxy's events (which fault fired,
//! whether the server got the call, when the cancel arrived), and build the report. With a baseline the same
//! calls run first through a proxy without faults.

use std::{
    path::PathBuf,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use tokio::{sync::Semaphore, task::JoinSet};
use tokio_util::sync::CancellationToken;

use super::client::{Answer, StdioClient};
use super::http_client::HttpClient;
use super::http_proxy::HttpProxy;
use crate::{
    load::LoadProgress,
    mcp_proxy::{plan::Plan, recording::planned_faults},
    report::mcp::{
        self as report, ChaosReport, ClientPolicy,
        record::{CallOutcome, CallRecord, Logical, Schemas},
    },
    report::millis,
};

/// How long the server gets to answer `initialize` and `tools/list`.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the proxy gets to exit once the client closed.
const EXIT_GRACE: Duration = Duration::from_secs(5);

/// The real MCP server's command.
#[derive(Debug, Clone)]
pub struct ServerCommand {
    pub command: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
}

impl ServerCommand {
    pub fn line(&self) -> String {
        std::iter::once(self.command.as_str())
            .chain(self.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A running MCP server reached over Streamable HTTP.
#[derive(Debug, Clone)]
pub struct ServerUrl {
    pub url: reqwest::Url,
    /// Sent on every request (e.g. Authorization).
    pub headers: http::HeaderMap,
}

/// The MCP server under test: a command started behind `fault mcp-proxy`, or a URL called directly.
#[derive(Debug, Clone)]
pub enum ServerTarget {
    Command(ServerCommand),
    Url(ServerUrl),
}

impl ServerTarget {
    /// The server as the report names it (header names only: their values may be secrets).
    pub fn line(&self) -> String {
        match self {
            ServerTarget::Command(command) => command.line(),
            ServerTarget::Url(server) if server.headers.is_empty() => server.url.to_string(),
            ServerTarget::Url(server) => format!(
                "{} (headers: {})",
                server.url,
                server
                    .headers
                    .keys()
                    .map(|k| k.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

/// The driving client's connection: through the proxy's stdio, or HTTP straight to the server.
enum Connection {
    Stdio(StdioClient),
    Http(HttpClient),
}

impl Connection {
    async fn request(&self, method: &str, params: Value, timeout: Duration) -> (u64, Answer) {
        match self {
            Connection::Stdio(client) => client.request(method, params, timeout).await,
            Connection::Http(client) => client.request(method, params, timeout).await,
        }
    }

    fn notify(&self, method: &str, params: Value) {
        match self {
            Connection::Stdio(client) => client.notify(method, params),
            Connection::Http(client) => {
                tokio::spawn(client.notify(method, params));
            }
        }
    }

    async fn close(&self, grace: Duration) {
        match self {
            Connection::Stdio(client) => client.close(grace).await,
            Connection::Http(client) => client.close(grace).await,
        }
    }

    /// What the server (stderr) or the transport (HTTP problems) said last.
    fn diagnostics(&self) -> String {
        match self {
            Connection::Stdio(client) => client.stderr_tail(),
            Connection::Http(client) => client.problems(),
        }
    }
}

/// One entry of `calls`.
#[derive(Debug, Clone)]
pub struct PlannedCall {
    pub tool: String,
    pub arguments: Value,
    /// Calls sharing a task id form one task in each repetition.
    pub task: Option<String>,
}

#[derive(Debug, Clone)]
pub enum Schedule {
    /// The calls list this many times.
    Repeat(u64),
    /// The calls list over and over, `rate` logical calls per second, for `duration`.
    Rate { duration: Duration, rate: f64 },
}

/// The plan as given: its text (JSON or YAML) and what it loads as.
#[derive(Debug, Clone)]
pub struct PlanSource {
    pub text: String,
    pub json: bool,
    pub plan: Plan,
}

/// A validated scenario.
#[derive(Debug, Clone)]
pub struct ChaosSpec {
    pub server: ServerTarget,
    pub plan: PlanSource,
    pub calls: Vec<PlannedCall>,
    pub schedule: Schedule,
    /// Independent client sessions, each with its own handshake (and, for a command, its own proxy and
    /// server process), each running the whole schedule.
    pub num_clients: u32,
    /// Calls in flight at once per client; on a `Rate` schedule a call due while all are busy is not
    /// started and is counted as such (the arrival rate never waits for the server).
    pub concurrency: u32,
    pub timeout: Duration,
    pub retries: u32,
    pub backoff: Duration,
    pub baseline: bool,
    /// The `fault` executable that runs `mcp-proxy`.
    pub proxy_exe: PathBuf,
}

impl ChaosSpec {
    /// Logical calls of one run.
    pub fn planned_calls(&self) -> u64 {
        self.planned_calls_per_client() * u64::from(self.num_clients.max(1))
    }

    fn planned_calls_per_client(&self) -> u64 {
        match self.schedule {
            Schedule::Repeat(n) => n * self.calls.len() as u64,
            Schedule::Rate { duration, rate } => (duration.as_secs_f64() * rate).ceil() as u64,
        }
    }

    fn describe_schedule(&self) -> String {
        let one = match self.schedule {
            Schedule::Repeat(n) => format!("{} calls × {n} repeats", self.calls.len()),
            Schedule::Rate { duration, rate } => format!(
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

#[derive(Debug, thiserror::Error)]
pub enum ChaosError {
    #[error("cannot prepare the run: {0}")]
    Io(#[from] std::io::Error),
    #[error("server: the MCP server did not start ({reason}). Last lines of its stderr:\n{stderr}")]
    ServerStart { reason: String, stderr: String },
    #[error(
        "server.url: the MCP server at {url} did not answer the handshake ({reason}). What the transport saw:\n{problems}"
    )]
    ServerUnreachable {
        url: String,
        reason: String,
        problems: String,
    },
    #[error("server.url: {0}")]
    HttpClient(String),
    #[error("the scenario was cancelled; the proxy and the server were stopped")]
    Cancelled,
}

/// A scratch directory for the plan and events files, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> std::io::Result<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!(
            "fault-mcp-chaos-{}-{}-{nanos}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)?;
        Ok(Self(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs the scenario: an optional baseline without faults, then the run with the plan, then the report.
pub async fn run(
    spec: &ChaosSpec,
    cancel: &CancellationToken,
    progress: Arc<LoadProgress>,
) -> Result<ChaosReport, ChaosError> {
    let started_at = now();
    let baseline = if spec.baseline {
        Some(run_once(spec, false, cancel, progress.clone()).await?)
    } else {
        None
    };
    let run = run_once(spec, true, cancel, progress).await?.figures();
    let baseline = baseline.map(RunRecords::figures);
    let comparison = baseline.as_ref().map(|b| report::compare(b, &run));
    Ok(ChaosReport {
        title: "MCP Chaos Report".into(),
        started_at,
        ended_at: now(),
        server: spec.server.line(),
        seed: spec.plan.plan.seed,
        faults: planned_faults(&spec.plan.plan),
        client: Some(ClientPolicy {
            timeout_ms: spec.timeout.as_millis() as u64,
            retries: spec.retries,
            backoff_ms: spec.backoff.as_millis() as u64,
            concurrency: spec.concurrency,
            num_clients: spec.num_clients,
            schedule: spec.describe_schedule(),
        }),
        run,
        baseline,
        comparison,
    })
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// One attempt as the driver saw it, with the request id the proxy's event is keyed by.
struct Attempt {
    id: u64,
    record: CallRecord,
}

/// What one run left: every attempt, the calls that could not start, and how long it took.
struct RunRecords {
    records: Vec<CallRecord>,
    not_started: u64,
    duration_ms: f64,
}

impl RunRecords {
    fn figures(self) -> report::ChaosFigures {
        let mut figures = report::figures(self.records, self.duration_ms);
        figures.not_started = self.not_started;
        figures
    }
}

/// One client session: its connection, and the proxy's plan and events files when there is a proxy.
struct Session {
    connection: Arc<Connection>,
    /// Lives until the proxy has exited.
    scratch: Option<Scratch>,
}

impl Session {
    /// The proxy's events (one JSON line per call), empty without a proxy.
    fn events(&self) -> String {
        self.scratch
            .as_ref()
            .and_then(|s| std::fs::read_to_string(s.0.join(EVENTS_FILE)).ok())
            .unwrap_or_default()
    }
}

const EVENTS_FILE: &str = "events.jsonl";

/// The plan, seed and events arguments of `fault mcp-proxy`, with the plan written into `scratch` when
/// `with_faults`.
fn proxy_args(
    spec: &ChaosSpec,
    with_faults: bool,
    scratch: &Scratch,
) -> std::io::Result<Vec<String>> {
    let mut args = Vec::new();
    if with_faults {
        let plan = scratch.0.join(if spec.plan.json {
            "plan.json"
        } else {
            "plan.yaml"
        });
        std::fs::write(&plan, &spec.plan.text)?;
        args.extend([
            "--plan".to_owned(),
            plan.display().to_string(),
            "--seed".to_owned(),
            spec.plan.plan.seed.to_string(),
        ]);
    }
    args.extend([
        "--events".to_owned(),
        scratch.0.join(EVENTS_FILE).display().to_string(),
    ]);
    Ok(args)
}

/// Request ids of one HTTP session start here, so the sessions sharing one proxy (and its events file)
/// never use the same id.
fn first_request_id(session: u32) -> u64 {
    u64::from(session) * 1_000_000_000 + 1
}

/// Client session number `session` to the server: over HTTP to a URL (`via` the shared HTTP proxy when
/// there is one), or over stdio through its own proxy (with the plan when `with_faults`) in front of a
/// fresh server process.
fn connect(
    spec: &ChaosSpec,
    with_faults: bool,
    session: u32,
    via: Option<&reqwest::Url>,
) -> Result<Session, ChaosError> {
    let command = match &spec.server {
        ServerTarget::Url(server) => {
            let url = via.unwrap_or(&server.url).clone();
            let client = HttpClient::new(url, server.headers.clone(), first_request_id(session))
                .map_err(ChaosError::HttpClient)?;
            return Ok(Session {
                connection: Arc::new(Connection::Http(client)),
                scratch: None,
            });
        }
        ServerTarget::Command(command) => command,
    };
    let scratch = Scratch::new()?;
    let mut args = vec!["mcp-proxy".to_owned()];
    args.extend(proxy_args(spec, with_faults, &scratch)?);
    args.extend(["--".to_owned(), command.command.clone()]);
    args.extend(command.args.iter().cloned());
    let client = StdioClient::spawn(&spec.proxy_exe, &args, &command.env, command.cwd.as_deref())?;
    Ok(Session {
        connection: Arc::new(Connection::Stdio(client)),
        scratch: Some(scratch),
    })
}

/// The HTTP proxy in front of a URL server, when the run has faults or a baseline to compare with.
async fn url_proxy(
    spec: &ChaosSpec,
    with_faults: bool,
) -> Result<Option<(HttpProxy, Scratch)>, ChaosError> {
    let ServerTarget::Url(server) = &spec.server else {
        return Ok(None);
    };
    if spec.plan.plan.faults.is_empty() && !spec.baseline {
        return Ok(None);
    }
    let scratch = Scratch::new()?;
    let args = proxy_args(spec, with_faults, &scratch)?;
    let proxy = HttpProxy::start(&spec.proxy_exe, &server.url, &args)
        .await
        .map_err(|reason| ChaosError::ServerUnreachable {
            url: server.url.to_string(),
            reason,
            problems: String::new(),
        })?;
    Ok(Some((proxy, scratch)))
}

/// One run with the plan (`with_faults`) or without: `num_clients` sessions, each handshaken, then all
/// driven on the same clock, then closed; the attempts joined with each proxy's events.
async fn run_once(
    spec: &ChaosSpec,
    with_faults: bool,
    cancel: &CancellationToken,
    progress: Arc<LoadProgress>,
) -> Result<RunRecords, ChaosError> {
    let proxy = url_proxy(spec, with_faults).await?;
    let via = proxy.as_ref().map(|(proxy, _)| proxy.url.clone());
    let mut sessions = Vec::new();
    for session in 0..spec.num_clients.max(1) {
        match connect(spec, with_faults, session, via.as_ref()) {
            Ok(session) => sessions.push(session),
            Err(e) => {
                close_all(&sessions, Duration::from_secs(1)).await;
                return Err(e);
            }
        }
    }
    let handshakes = futures::future::join_all(sessions.iter().map(|s| start(&s.connection))).await;
    let mut schemas = Vec::with_capacity(sessions.len());
    for (session, handshake) in sessions.iter().zip(handshakes) {
        match handshake {
            Ok(found) => schemas.push(Arc::new(found)),
            Err(reason) => {
                let mut diagnostics = session.connection.diagnostics();
                if let Some((proxy, _)) = &proxy {
                    diagnostics.push_str(&format!("\nfault mcp-proxy:\n{}", proxy.stderr_tail()));
                }
                close_all(&sessions, Duration::from_secs(1)).await;
                return Err(match &spec.server {
                    ServerTarget::Url(server) => ChaosError::ServerUnreachable {
                        url: server.url.to_string(),
                        reason,
                        problems: diagnostics,
                    },
                    ServerTarget::Command(_) => ChaosError::ServerStart {
                        reason,
                        stderr: diagnostics,
                    },
                });
            }
        }
    }
    let started = Instant::now();
    let not_started = Arc::new(AtomicU64::new(0));
    let drives = sessions
        .iter()
        .zip(&schemas)
        .enumerate()
        .map(|(i, (s, schemas))| {
            drive(
                spec,
                &s.connection,
                schemas,
                started,
                progress.clone(),
                i as u32,
                not_started.clone(),
            )
        });
    let driven = tokio::select! {
        attempts = futures::future::join_all(drives) => Some(attempts),
        () = cancel.cancelled() => None,
    };
    let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
    close_all(&sessions, EXIT_GRACE).await;
    let Some(attempts) = driven else {
        return Err(ChaosError::Cancelled);
    };
    let records = match proxy {
        // One proxy for every session (request ids differ between sessions): one join.
        Some((proxy, scratch)) => {
            proxy.stop().await;
            let events = std::fs::read_to_string(scratch.0.join(EVENTS_FILE)).unwrap_or_default();
            join(attempts.into_iter().flatten().collect(), &events)
        }
        None => sessions
            .iter()
            .zip(attempts)
            .flat_map(|(session, attempts)| join(attempts, &session.events()))
            .collect(),
    };
    Ok(RunRecords {
        records,
        not_started: not_started.load(Ordering::Relaxed),
        duration_ms,
    })
}

async fn close_all(sessions: &[Session], grace: Duration) {
    futures::future::join_all(sessions.iter().map(|s| s.connection.close(grace))).await;
}

/// The MCP handshake and the tools' output schemas; `Err` says why the server is not usable.
async fn start(client: &Connection) -> Result<Schemas, String> {
    let init = json!({
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "fault-mcp-chaos", "version": env!("CARGO_PKG_VERSION")}
    });
    match client.request("initialize", init, START_TIMEOUT).await.1 {
        Answer::Response(r) if r.get("result").is_some() => {}
        Answer::Response(r) => return Err(format!("initialize failed: {}", r["error"])),
        Answer::TimedOut => {
            return Err(format!(
                "no answer to initialize within {}s",
                START_TIMEOUT.as_secs()
            ));
        }
        Answer::Closed => return Err("it exited before answering initialize".into()),
    }
    client.notify("notifications/initialized", json!({}));
    let mut schemas = Schemas::default();
    let mut cursor: Option<Value> = None;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        match client.request("tools/list", params, START_TIMEOUT).await.1 {
            Answer::Response(r) => {
                let result = r.get("result").cloned().unwrap_or(Value::Null);
                schemas.add_list(&result);
                cursor = result.get("nextCursor").filter(|c| !c.is_null()).cloned();
                if cursor.is_none() {
                    return Ok(schemas);
                }
            }
            Answer::TimedOut => return Err("no answer to tools/list".into()),
            Answer::Closed => return Err("it exited before answering tools/list".into()),
        }
    }
}

/// Runs every logical call with the client policy, `concurrency` at a time, on the schedule.
async fn drive(
    spec: &ChaosSpec,
    client: &Arc<Connection>,
    schemas: &Arc<Schemas>,
    started: Instant,
    progress: Arc<LoadProgress>,
    session: u32,
    not_started: Arc<AtomicU64>,
) -> Vec<Attempt> {
    let permits = Arc::new(Semaphore::new(spec.concurrency.max(1) as usize));
    let mut running = JoinSet::new();
    let per_round = spec.calls.len().max(1) as u64;
    let mut index = 0u64;
    loop {
        match spec.schedule {
            Schedule::Repeat(n) if index >= n * per_round => break,
            Schedule::Rate { duration, rate } => {
                // Clients are phased evenly over one interval, so together they start calls at a steady
                // num_clients × rate instead of in bursts of num_clients.
                let phase = f64::from(session) / f64::from(spec.num_clients.max(1));
                let due = Duration::from_secs_f64((index as f64 + phase) / rate);
                if due >= duration {
                    break;
                }
                tokio::time::sleep_until((started + due).into()).await;
            }
            Schedule::Repeat(_) => {}
        }
        let permit = match spec.schedule {
            // Open model: the call is due now; with every slot busy it does not start (and is counted).
            Schedule::Rate { .. } => match permits.clone().try_acquire_owned() {
                Ok(permit) => permit,
                Err(_) => {
                    not_started.fetch_add(1, Ordering::Relaxed);
                    index += 1;
                    continue;
                }
            },
            Schedule::Repeat(_) => match permits.clone().acquire_owned().await {
                Ok(permit) => permit,
                Err(_) => break,
            },
        };
        let call = spec.calls[(index % per_round) as usize].clone();
        let repetition = index / per_round + 1;
        // Unique across sessions: the report groups attempts by logical index and task.
        let logical_index = index * u64::from(spec.num_clients.max(1)) + u64::from(session);
        let task = match (&call.task, spec.num_clients) {
            (Some(task), 0 | 1) => format!("{task}#{repetition}"),
            (Some(task), _) => format!("{task}#{repetition}@client-{session}"),
            (None, _) => format!("call-{logical_index}"),
        };
        let client = client.clone();
        let schemas = schemas.clone();
        let progress = progress.clone();
        let policy = (spec.timeout, spec.retries, spec.backoff);
        running.spawn(async move {
            let attempts = logical_call(
                &client,
                &schemas,
                &call,
                (logical_index, session),
                task,
                policy,
                started,
            )
            .await;
            progress.completed.fetch_add(1, Ordering::Relaxed);
            if attempts
                .last()
                .is_some_and(|a| a.record.outcome != CallOutcome::Ok)
            {
                progress.errors.fetch_add(1, Ordering::Relaxed);
            }
            drop(permit);
            attempts
        });
        index += 1;
    }
    let mut attempts = Vec::new();
    while let Some(done) = running.join_next().await {
        if let Ok(mut some) = done {
            attempts.append(&mut some);
        }
    }
    attempts
}

/// One logical call: attempts until a result the client accepts or the retries run out.
async fn logical_call(
    client: &Connection,
    schemas: &Schemas,
    call: &PlannedCall,
    (index, session): (u64, u32),
    task: String,
    (timeout, retries, backoff): (Duration, u32, Duration),
    started: Instant,
) -> Vec<Attempt> {
    let mut attempts = Vec::new();
    for attempt in 1..=retries + 1 {
        let start = started.elapsed();
        let params = json!({"name": call.tool, "arguments": call.arguments});
        let (id, answer) = client.request("tools/call", params, timeout).await;
        let latency = started.elapsed() - start;
        let (outcome, cancel_after_ms) = match answer {
            Answer::Response(r) => match r.get("result") {
                Some(result) if r.get("error").is_none() => {
                    (schemas.judge(&call.tool, result), None)
                }
                _ => (CallOutcome::ProtocolError, None),
            },
            Answer::TimedOut => (CallOutcome::Timeout, Some(millis(timeout))),
            Answer::Closed => (CallOutcome::ProtocolError, None),
        };
        attempts.push(Attempt {
            id,
            record: CallRecord {
                tool: call.tool.clone(),
                args_hash: None,
                start_ms: millis(start),
                latency_ms: millis(latency),
                fault: None,
                outcome,
                reached_server: true,
                cancel_after_ms,
                logical: Some(Logical {
                    index,
                    attempt,
                    task: task.clone(),
                }),
                session,
            },
        });
        if !outcome.retryable() || attempt > retries {
            break;
        }
        if !backoff.is_zero() {
            tokio::time::sleep(backoff).await;
        }
    }
    attempts
}

/// Adds what the proxy recorded to each attempt: the fault that fired, a malformed answer (the client
/// could not tie it to its request), whether the server got the call, and when the cancel reached it.
fn join(attempts: Vec<Attempt>, events: &str) -> Vec<CallRecord> {
    let mut by_id: std::collections::HashMap<u64, Value> = events
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|e| e["method"] == "tools/call")
        .filter_map(|e| Some((e["id"].as_u64()?, e)))
        .collect();
    attempts
        .into_iter()
        .map(|Attempt { id, mut record }| {
            if let Some(event) = by_id.remove(&id) {
                record.fault = event["fault"]["type"].as_str().map(str::to_owned);
                record.args_hash = event["args_hash"].as_str().map(str::to_owned);
                record.reached_server = event["upstream"]["kind"] != "none";
                if event["client"]["kind"] == "malformed" {
                    record.outcome = CallOutcome::Malformed;
                }
                if let Some(after) = event["cancel"]["after_ms"].as_f64() {
                    record.cancel_after_ms = Some(after);
                }
            }
            record
        })
        .collect()
}
