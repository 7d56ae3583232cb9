//! `fault_run_mcp_chaos_scenario`'s run, in-process as an impact scenario's is: every client session reaches
//! the server through `fault mcp-proxy`, started here with the plan (a command: one stdio relay and one
//! server process per session; a URL: one HTTP front for every session, or none when there is nothing to
//! inject or compare), the calls are made by [`crate::mcp_load`], and the proxy's records reach the run
//! through the observer `fault mcp-proxy --report` uses, to be joined with what the client saw. With a
//! baseline the same calls run first without faults.

use std::{collections::HashMap, sync::Arc, time::Duration};

use http::HeaderMap;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

mod connection;

pub use connection::Connection;

use crate::load::LoadProgress;
use crate::mcp_load::{self, CallLoad, HandshakeError, TaskTally};
use crate::mcp_proxy::{
    decide::Decider,
    engine::Observer,
    http::{HttpFront, HttpProxyOptions},
    plan::Plan,
    recording::{ReportObserver, planned_faults},
    stdio::{
        self, ClientSide, RelayError, RelayOptions, ServerCommand, ServerStderr,
        ServerTarget as Relayed, StderrTail,
    },
};
use crate::mcp_wire::{
    client::McpClient,
    endpoint::{Endpoint, EndpointOptions},
    http_session::HttpSession,
};
use crate::report::chaos::{
    self as report, ChaosReport, ClientPolicy,
    judgement::Judgement,
    mcp_tasks::McpTaskFigures,
    record::{CallOutcome, CallRecord, Schemas},
};

/// How long a session's relay gets to end its server once the client closed, before it is aborted.
const EXIT_GRACE: Duration = Duration::from_secs(5);
/// How long a URL server gets to take a session's DELETE.
const CLOSE_GRACE: Duration = Duration::from_secs(2);
/// Bytes of the in-process pipe between a client session and its relay, each way.
const PIPE_BYTES: usize = 1 << 20;

/// A running MCP server reached over Streamable HTTP.
#[derive(Debug, Clone)]
pub struct ServerUrl {
    /// An `http://` or `https://` URL with a host.
    pub url: String,
    /// Sent on every request (e.g. Authorization).
    pub headers: HeaderMap,
}

/// The MCP server under test.
#[derive(Debug, Clone)]
pub enum ServerUnderTest {
    /// Started over stdio behind the proxy's relay, one process per client session.
    Command(ServerCommand),
    Url(ServerUrl),
}

impl ServerUnderTest {
    /// The server as the report names it (header names only: their values may be secrets).
    pub fn line(&self) -> String {
        match self {
            ServerUnderTest::Command(command) => command.line(),
            ServerUnderTest::Url(server) if server.headers.is_empty() => server.url.clone(),
            ServerUnderTest::Url(server) => format!(
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

/// A validated scenario.
#[derive(Debug, Clone)]
pub struct ChaosSpec {
    pub server: ServerUnderTest,
    pub plan: Plan,
    pub load: CallLoad,
    pub baseline: bool,
    /// Sessions of the plan to run (1: one), for pass^k.
    pub sessions: u32,
    /// How long the server gets to answer `initialize` and each page of `tools/list`.
    pub start_timeout: Duration,
}

impl ChaosSpec {
    /// Logical calls of one run.
    pub fn planned_calls(&self) -> u64 {
        self.load.planned_calls()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ChaosError {
    #[error("server: the MCP server did not start ({reason}). {diagnostics}")]
    ServerStart { reason: String, diagnostics: String },
    #[error(
        "server.url: the MCP server at {url} did not answer the handshake ({reason}). What the transport saw:\n{problems}"
    )]
    ServerUnreachable {
        url: String,
        reason: String,
        problems: String,
    },
    #[error("server.url: {0}")]
    Endpoint(String),
    #[error(
        "calls[{index}].tool: the server lists no tool `{tool}`; it lists: {listed}. Call one of those (or \
         check the server's version)"
    )]
    UnknownTool {
        index: usize,
        tool: String,
        listed: String,
    },
    #[error("the scenario was cancelled; the proxy and the server were stopped")]
    Cancelled,
}

/// Runs the scenario: an optional baseline without faults, then the run with the plan, then the report.
pub async fn run(
    spec: &ChaosSpec,
    cancel: &CancellationToken,
    progress: Arc<LoadProgress>,
) -> Result<ChaosReport, ChaosError> {
    let started_at = now();
    let baseline = if spec.baseline {
        Some(run_once(spec, false, cancel, progress.clone(), Arc::default()).await?)
    } else {
        None
    };
    // How the run's calls ended as tasks, for the report's schedule line.
    let tasks = Arc::new(TaskTally::default());
    let run = run_once(spec, true, cancel, progress.clone(), tasks.clone()).await?;
    // Further sessions of the same plan, each with its own proxy and server, judged for pass^k.
    let mut more = Vec::new();
    for _ in 1..spec.sessions {
        more.push(
            run_once(spec, true, cancel, progress.clone(), Arc::default())
                .await?
                .judgement,
        );
    }
    let sessions = (spec.sessions > 1).then(|| {
        let judgements: Vec<&Judgement> = std::iter::once(&run.judgement).chain(&more).collect();
        report::sessions::sessions(&judgements)
    });
    let comparison = baseline.as_ref().map(|b| report::compare(b, &run));
    let policy = &spec.load.policy;
    Ok(ChaosReport {
        schema_version: report::SCHEMA_VERSION,
        title: "MCP Chaos Report".into(),
        started_at,
        ended_at: now(),
        server: spec.server.line(),
        seed: spec.plan.seed,
        faults: planned_faults(&spec.plan),
        client: Some(ClientPolicy {
            timeout_ms: policy.timeout.as_millis() as u64,
            retries: policy.retries,
            backoff_ms: policy.backoff.as_millis() as u64,
            concurrency: spec.load.concurrency,
            num_clients: spec.load.num_clients,
            schedule: if spec.load.as_tasks {
                format!("{}; {}", spec.load.describe(), tasks.describe())
            } else {
                spec.load.describe()
            },
        }),
        gates: report::gates::evaluate(&spec.plan.gates, &run),
        sessions,
        run,
        baseline,
        comparison,
    })
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Request ids of one session start here, so the sessions sharing one proxy never use the same id.
fn first_request_id(session: u32) -> u64 {
    u64::from(session) * 1_000_000_000 + 1
}

/// One client session and what stands behind it.
struct Session {
    client: Arc<McpClient>,
    /// Its relay (a command server), which ends the server's process group when it ends or is dropped.
    relay: Option<JoinHandle<Result<(), RelayError>>>,
    stderr: StderrTail,
}

/// The proxy of one run, and what it has recorded.
struct RunProxy {
    observer: Arc<std::sync::Mutex<ReportObserver>>,
    /// The HTTP front in front of a URL server.
    front: Option<HttpFront>,
}

/// Everything one run started; stopped by [`Harness::stop`], or ended by dropping it (relays and their servers
/// included).
struct Harness {
    sessions: Vec<Session>,
    proxy: Option<RunProxy>,
}

impl Harness {
    /// Starts the proxy (with the plan when `with_faults`) and one client session per client.
    async fn start(spec: &ChaosSpec, with_faults: bool) -> Result<Self, ChaosError> {
        let plan = if with_faults {
            spec.plan.clone()
        } else {
            Plan {
                faults: Vec::new(),
                ..spec.plan.clone()
            }
        };
        let clients = spec.load.num_clients.max(1);
        match &spec.server {
            ServerUnderTest::Command(command) => {
                let observer = Arc::new(std::sync::Mutex::new(ReportObserver::new(
                    &plan,
                    &[command.line()],
                )));
                let sessions = (0..clients)
                    .map(|session| relayed_session(command, &plan, &observer, session))
                    .collect();
                Ok(Harness {
                    sessions,
                    proxy: Some(RunProxy {
                        observer,
                        front: None,
                    }),
                })
            }
            ServerUnderTest::Url(server) => {
                let endpoint = Endpoint::new(&server.url, &EndpointOptions::default())
                    .await
                    .map_err(|e| ChaosError::Endpoint(e.to_string()))?;
                let proxy = if spec.plan.faults.is_empty() && !spec.baseline {
                    None
                } else {
                    let observer = Arc::new(std::sync::Mutex::new(ReportObserver::new(
                        &plan,
                        std::slice::from_ref(&server.url),
                    )));
                    let front = crate::mcp_proxy::http::start(HttpProxyOptions {
                        plan,
                        upstream: endpoint.clone(),
                        listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
                        events: None,
                        observer: Some(observer.clone() as Observer),
                    })
                    .await
                    .map_err(|e| ChaosError::Endpoint(format!("the proxy did not start: {e}")))?;
                    Some(RunProxy {
                        observer,
                        front: Some(front),
                    })
                };
                let via = match proxy.as_ref().and_then(|p| p.front.as_ref()) {
                    Some(front) => Endpoint::new(&front.url, &EndpointOptions::default())
                        .await
                        .map_err(|e| ChaosError::Endpoint(e.to_string()))?,
                    None => endpoint,
                };
                let sessions = (0..clients)
                    .map(|session| Session {
                        client: Arc::new(McpClient::over_http(
                            HttpSession::new(via.clone(), server.headers.clone()),
                            first_request_id(session),
                        )),
                        relay: None,
                        stderr: StderrTail::default(),
                    })
                    .collect();
                Ok(Harness { sessions, proxy })
            }
        }
    }

    /// Every session's handshake; on a failure, every session stopped and the error says what the server and
    /// the transport said.
    async fn handshake(
        &mut self,
        server: &ServerUnderTest,
        as_tasks: bool,
        start_timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<Vec<Arc<Schemas>>, ChaosError> {
        let handshakes = futures::future::join_all(
            self.sessions
                .iter()
                .map(|s| mcp_load::handshake(&s.client, start_timeout, as_tasks)),
        );
        let handshakes = tokio::select! {
            handshakes = handshakes => handshakes,
            // Dropping the harness ends every relay and its server at once.
            () = cancel.cancelled() => return Err(ChaosError::Cancelled),
        };
        let mut schemas = Vec::with_capacity(handshakes.len());
        for (index, handshake) in handshakes.into_iter().enumerate() {
            let error = match handshake {
                Ok(found) => {
                    schemas.push(Arc::new(found));
                    continue;
                }
                Err(error) => error,
            };
            let diagnostics = self.diagnose(index, &error).await;
            let reason = error.to_string();
            let sessions = std::mem::take(&mut self.sessions);
            Harness {
                sessions,
                proxy: self.proxy.take(),
            }
            .stop()
            .await;
            return Err(match server {
                ServerUnderTest::Url(server) => ChaosError::ServerUnreachable {
                    url: server.url.clone(),
                    reason: if diagnostics.contains("Connection refused") {
                        "connection refused: nothing accepts connections at that address".into()
                    } else {
                        reason
                    },
                    problems: diagnostics,
                },
                ServerUnderTest::Command(_) => ChaosError::ServerStart {
                    reason,
                    diagnostics,
                },
            });
        }
        Ok(schemas)
    }

    /// Closes every session, lets the relays end their servers, stops the front; the proxy's records and the
    /// MCP tasks it saw.
    async fn stop(mut self) -> Option<(Vec<CallRecord>, Vec<McpTaskFigures>)> {
        futures::future::join_all(self.sessions.iter().map(|s| s.client.close(CLOSE_GRACE))).await;
        for session in &mut self.sessions {
            if let Some(relay) = session.relay.as_mut()
                && tokio::time::timeout(EXIT_GRACE, &mut *relay).await.is_err()
            {
                relay.abort();
            }
        }
        let proxy = self.proxy.take()?;
        if let Some(front) = proxy.front {
            front.stop().await;
        }
        let mut observer = proxy.observer.lock().unwrap_or_else(|p| p.into_inner());
        Some((observer.take_records(), observer.mcp_tasks()))
    }

    /// Why session `index` is not usable, with what the server and the transport said.
    async fn diagnose(&mut self, index: usize, error: &HandshakeError) -> String {
        let session = &mut self.sessions[index];
        let mut said = Vec::new();
        // A relay that ended on its own says why (it could not start the server, the server's output broke a
        // bound); taken, as a finished task's handle gives its result once. A session that closed was closed
        // by its relay, which may still be finishing: it gets the exit grace to say why.
        let ended = match session.relay.as_mut() {
            Some(relay)
                if relay.is_finished() || matches!(error, HandshakeError::Closed { .. }) =>
            {
                tokio::time::timeout(EXIT_GRACE, relay).await.ok()
            }
            _ => None,
        };
        if let Some(ended) = ended {
            session.relay = None;
            if let Ok(Err(e)) = ended {
                said.push(e.to_string());
            }
        }
        let problems = session.client.problems();
        if !problems.is_empty() {
            said.push(problems);
        }
        let stderr = session.stderr.text();
        if !stderr.is_empty() {
            said.push(format!("Last lines of its stderr:\n{stderr}"));
        }
        if said.is_empty() {
            said.push(match error {
                HandshakeError::NoAnswer { .. } => {
                    "It wrote nothing on stdout or stderr.".to_owned()
                }
                _ => "It wrote nothing on stderr.".to_owned(),
            });
        }
        said.join("\n")
    }
}

/// Client session number `session` through its own relay, in front of a fresh server process.
fn relayed_session(
    command: &ServerCommand,
    plan: &Plan,
    observer: &Arc<std::sync::Mutex<ReportObserver>>,
    session: u32,
) -> Session {
    let (client_end, relay_end) = tokio::io::duplex(PIPE_BYTES);
    let (relay_read, relay_write) = tokio::io::split(relay_end);
    let stderr = StderrTail::default();
    let relay = tokio::spawn(stdio::run(RelayOptions {
        plan: plan.clone(),
        server: Relayed::Command(command.clone()),
        client: ClientSide::Stream {
            reader: Box::new(relay_read),
            writer: Box::new(relay_write),
        },
        server_stderr: ServerStderr::Keep(stderr.clone()),
        events: None,
        observer: Some(observer.clone() as Observer),
    }));
    let (client_read, client_write) = tokio::io::split(client_end);
    Session {
        client: Arc::new(McpClient::over_lines(
            client_read,
            client_write,
            first_request_id(session),
        )),
        relay: Some(relay),
        stderr,
    }
}

/// One run with the plan (`with_faults`) or without: the sessions handshaken, driven on one clock, closed,
/// and the client's records joined with the proxy's.
async fn run_once(
    spec: &ChaosSpec,
    with_faults: bool,
    cancel: &CancellationToken,
    progress: Arc<LoadProgress>,
    tasks: Arc<TaskTally>,
) -> Result<report::ChaosFigures, ChaosError> {
    let mut run = Harness::start(spec, with_faults).await?;
    let schemas = run
        .handshake(&spec.server, spec.load.as_tasks, spec.start_timeout, cancel)
        .await?;
    // A call to a tool the server does not list is a mistake, unless the plan alters the listing (a tool
    // dropped, a registry drifting), which is the scenario itself.
    let list_altered =
        with_faults && Decider::new(&spec.plan).map_or(true, |d| d.watches_method("tools/list"));
    if let Some(first) = schemas.first().filter(|_| !list_altered) {
        let listed = first.names();
        if let Some((index, call)) = spec
            .load
            .calls
            .iter()
            .enumerate()
            .find(|(_, call)| !listed.contains(&call.tool))
        {
            run.stop().await;
            return Err(ChaosError::UnknownTool {
                index,
                tool: call.tool.clone(),
                listed: if listed.is_empty() {
                    "no tools".to_owned()
                } else {
                    listed.join(", ")
                },
            });
        }
    }
    let load = Arc::new(spec.load.clone());
    let start = Instant::now();
    let stop = cancel.child_token();
    let drives = run
        .sessions
        .iter()
        .zip(&schemas)
        .enumerate()
        .map(|(i, (s, schemas))| {
            let session = mcp_load::Session {
                client: s.client.clone(),
                schemas: schemas.clone(),
                index: i as u32,
                start,
                progress: progress.clone(),
                tally: tasks.clone(),
            };
            mcp_load::drive(&load, session, &stop)
        });
    let records: Vec<CallRecord> = futures::future::join_all(drives)
        .await
        .into_iter()
        .flatten()
        .collect();
    let duration_ms = start.elapsed().as_secs_f64() * 1000.0;
    if cancel.is_cancelled() {
        return Err(ChaosError::Cancelled);
    }
    let (records, mcp_tasks) = match run.stop().await {
        Some((proxy_records, mcp_tasks)) => (join(records, proxy_records), mcp_tasks),
        None => (records, Vec::new()),
    };
    let hints = schemas
        .first()
        .map(|s| s.hints().clone())
        .unwrap_or_default();
    let mut figures = report::figures(records, duration_ms, &hints);
    figures.mcp_tasks = mcp_tasks;
    Ok(figures)
}

/// Adds what the proxy recorded to each attempt the client made: the fault that fired, a malformed answer
/// (the client could not tie it to its request), whether the server got the call, and when the cancel
/// reached it.
fn join(records: Vec<CallRecord>, proxy: Vec<CallRecord>) -> Vec<CallRecord> {
    let mut by_id: HashMap<String, CallRecord> = proxy
        .into_iter()
        .filter_map(|r| Some((r.request_id.clone()?, r)))
        .collect();
    records
        .into_iter()
        .map(|mut record| {
            let seen = record.request_id.as_ref().and_then(|id| by_id.remove(id));
            if let Some(seen) = seen {
                record.fault = seen.fault;
                record.args_hash = seen.args_hash;
                record.reached_server = seen.reached_server;
                if seen.outcome == CallOutcome::Malformed {
                    record.outcome = CallOutcome::Malformed;
                }
                if let Some(after) = seen.cancel_after_ms {
                    record.cancel_after_ms = Some(after);
                }
            }
            record
        })
        .collect()
}
