//! The stdio relay: our stdin/stdout face the client, a child process is the real server. One core task owns
//! every table (pending calls, decisions, the child); readers and writers talk to it through channels, and
//! every injected wait is its own task, so the pump never sleeps and other calls keep flowing.
//! Untouched lines are forwarded byte for byte; a line is parsed only to route it and, when a fault acts on
//! it, to rewrite it.

use std::{
    collections::{HashMap, VecDeque},
    io::{BufRead, Write},
    process::Stdio,
    time::{Duration, Instant},
};

use serde_json::Value;
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader},
    process::{Child, Command},
    sync::mpsc,
};
use tokio_util::sync::CancellationToken;

use super::decide::Decider;
pub use super::engine::Observer;
use super::engine::{
    Call, Composed, Ending, LIST_CHANGED, Recorder, connection_closed, reply_outcome,
    request_timed_out,
};
use super::events::{CancelRecord, EventLog};
use super::faults::{Action, McpFaultSpec, OnCap};
use super::jsonrpc::{Envelope, Outcome, Reply, id_key};
use super::plan::{Mode, Plan};

/// Calls remembered at most; beyond it the oldest is forgotten (and logged as `pending`).
const MAX_PENDING: usize = 65_536;
/// A call the server has not answered for this long (with no injected wait in progress) is forgotten and
/// logged as `pending`; its answer, if it ever comes, passes to the client untouched. As long as mcptest's
/// hang cap, so a server that never answers some ids holds neither memory nor stale entries beyond it.
const PENDING_TTL: Duration = Duration::from_secs(600);
/// How often calls are checked against [`PENDING_TTL`] when no new call arrives.
const EXPIRY_SWEEP: Duration = Duration::from_secs(30);
/// Ids whose late real answer must be swallowed (the client already got a synthesised one).
const MAX_SWALLOW: usize = 4_096;
/// How long the server gets to exit after the client closed, before it is killed.
const EXIT_GRACE: Duration = Duration::from_millis(500);
const REINIT_ID: &str = "fault-mcp-proxy-reinit";

#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    #[error(
        "no server: give its command after `--` (e.g. `fault mcp-proxy -- python server.py`) or its URL with --upstream"
    )]
    NoCommand,
    #[error("cannot start the server `{command}`: {source}")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error("cannot create --events {path}: {source}")]
    Events {
        path: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Plan(String),
}

pub struct RelayOptions {
    pub plan: Plan,
    pub command: Vec<String>,
    /// The server's Streamable HTTP endpoint, instead of a command (see [`super::bridge`]).
    pub http_upstream: Option<super::upstream::Upstream>,
    pub events: Option<std::path::PathBuf>,
    /// Sees every line sent to the client and every finished call (the `--report` recorder).
    pub observer: Option<Observer>,
}

enum CoreMsg {
    Client(Vec<u8>),
    ClientEof,
    Server { generation: u64, line: Vec<u8> },
    ServerEof { generation: u64 },
    WaitEnded { key: String, wait: u64 },
    Crash { restart_after: Option<Duration> },
    Restart,
}

#[derive(Debug, Clone, Copy)]
enum WaitKind {
    /// A held request: forward it.
    Request,
    /// A held response: deliver it.
    Response,
    /// A synthesised reply due: send it.
    Reply,
    /// A hang's cap.
    Hang(OnCap),
}

struct Wait {
    id: u64,
    kind: WaitKind,
    token: CancellationToken,
}

#[derive(Debug, Clone)]
enum ResponsePlan {
    Pass,
    /// Rewrite the response with these faults, in order, then hold it for `delay`.
    Alter {
        rewrites: Vec<usize>,
        delay: Duration,
    },
    Swallow,
    /// Answer `reply` instead of the server's response, `delay` after it.
    Replace {
        reply: Reply,
        delay: Duration,
    },
    FilterList,
}

struct Pending {
    call: Call,
    plan: ResponsePlan,
    wait: Option<Wait>,
    held: Option<Vec<u8>>,
    /// What the faults do once a held request is released.
    then: Option<Composed>,
    forwarded: bool,
    forwarded_at: Option<Instant>,
    upstream: Option<Outcome>,
    /// How long the server took, from forwarding to its answer.
    upstream_time: Option<Duration>,
    cancelled_at: Option<Instant>,
    /// The cancellation ended a delay or hang the proxy had injected.
    cancel_ended_wait: bool,
}

enum UpstreamState {
    Up,
    /// Restarted: the client's `initialize` was replayed; lines wait for its answer.
    Reinitializing(Vec<Vec<u8>>),
    Down,
}

/// What ends the relay.
enum Exit {
    Continue,
    Stop,
}

/// The real server: a child process, or the bridge to an HTTP endpoint.
enum ServerSide {
    Child(Child),
    Bridge {
        task: tokio::task::JoinHandle<()>,
        reader: tokio::task::JoinHandle<()>,
    },
}

struct Core {
    command: Vec<String>,
    http_upstream: Option<super::upstream::Upstream>,
    mode: Mode,
    decider: Decider,
    recorder: Recorder,
    pending: InFlight<Pending>,
    swallow: VecDeque<String>,
    child: Option<ServerSide>,
    generation: u64,
    upstream: UpstreamState,
    to_server: Option<mpsc::UnboundedSender<Vec<u8>>>,
    to_client: mpsc::UnboundedSender<Vec<u8>>,
    core_tx: mpsc::Sender<CoreMsg>,
    initialize: Option<Vec<u8>>,
    initialized: Option<Vec<u8>>,
    next_wait: u64,
    /// No faults and no events: forward without parsing.
    transparent: bool,
    client_closed_at: Option<Instant>,
}

/// Runs the relay until either side closes. Returns once the child has been ended.
pub async fn run(options: RelayOptions) -> Result<(), RelayError> {
    if options.command.is_empty() && options.http_upstream.is_none() {
        return Err(RelayError::NoCommand);
    }
    check_stdio_plan(&options.plan)?;
    let decider = Decider::new(&options.plan).map_err(|e| RelayError::Plan(e.to_string()))?;
    let events = match &options.events {
        Some(path) => Some(EventLog::create(path).map_err(|source| RelayError::Events {
            path: path.display().to_string(),
            source,
        })?),
        None => None,
    };
    let (core_tx, mut core_rx) = mpsc::channel::<CoreMsg>(1024);
    let (to_client, client_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let client_writer = spawn_client_writer(client_rx);
    spawn_client_reader(core_tx.clone());

    let transparent = decider.is_empty() && events.is_none() && options.observer.is_none();
    let mut core = Core {
        command: options.command,
        http_upstream: options.http_upstream,
        mode: options.plan.mode,
        decider,
        recorder: Recorder::new(events, options.observer),
        pending: InFlight::new(MAX_PENDING, PENDING_TTL),
        swallow: VecDeque::new(),
        child: None,
        generation: 0,
        upstream: UpstreamState::Down,
        to_server: None,
        to_client,
        core_tx,
        initialize: None,
        initialized: None,
        next_wait: 0,
        transparent,
        client_closed_at: None,
    };
    core.start_child()?;
    core.upstream = UpstreamState::Up;

    let mut sweep = tokio::time::interval(EXPIRY_SWEEP);
    sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let grace = core.client_closed_at.map(|at| at + EXIT_GRACE);
        let msg = tokio::select! {
            msg = core_rx.recv() => msg,
            () = sleep_until(grace) => None,
            _ = sweep.tick() => {
                core.expire_stale(Instant::now());
                continue;
            }
        };
        let Some(msg) = msg else { break };
        if let Exit::Stop = core.handle(msg).await {
            break;
        }
    }
    core.shutdown().await;
    drop(core);
    // The writer thread flushes what is queued, then our stdout is left to the process's exit.
    let _ = tokio::task::spawn_blocking(move || client_writer.join()).await;
    Ok(())
}

/// Refuses the faults that act on HTTP exchanges only.
pub fn check_stdio_plan(plan: &Plan) -> Result<(), RelayError> {
    match plan.faults.iter().position(|f| f.spec.http_only()) {
        Some(i) => Err(RelayError::Plan(format!(
            "faults[{i}]: `{}` acts on Streamable HTTP only: run `fault mcp-proxy --upstream URL --listen ADDR`",
            plan.faults[i].spec.type_name()
        ))),
        None => Ok(()),
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// Our stdin, read on its own thread (tokio's stdin goes through the blocking pool on every read).
fn spawn_client_reader(core_tx: mpsc::Sender<CoreMsg>) {
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let mut input = stdin.lock();
        loop {
            let mut line = Vec::new();
            match input.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if core_tx.blocking_send(CoreMsg::Client(line)).is_err() {
                        return;
                    }
                }
            }
        }
        let _ = core_tx.blocking_send(CoreMsg::ClientEof);
    });
}

/// Our stdout, written on its own thread, flushed whenever the queue is empty.
fn spawn_client_writer(mut lines: mpsc::UnboundedReceiver<Vec<u8>>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let stdout = std::io::stdout();
        let mut out = std::io::BufWriter::new(stdout.lock());
        while let Some(line) = lines.blocking_recv() {
            if out.write_all(&line).is_err() {
                return;
            }
            while let Ok(line) = lines.try_recv() {
                if out.write_all(&line).is_err() {
                    return;
                }
            }
            if out.flush().is_err() {
                return;
            }
        }
        let _ = out.flush();
    })
}

impl Core {
    fn start_child(&mut self) -> Result<(), RelayError> {
        if let Some(url) = self.http_upstream.clone() {
            self.start_bridge(url);
            return Ok(());
        }
        let mut command = Command::new(&self.command[0]);
        command
            .args(&self.command[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|source| RelayError::Spawn {
            command: self.command.join(" "),
            source,
        })?;
        self.generation += 1;
        let generation = self.generation;
        if let Some(stdout) = child.stdout.take() {
            let core_tx = self.core_tx.clone();
            tokio::spawn(async move {
                let mut reader = BufReader::with_capacity(64 * 1024, stdout);
                loop {
                    let mut line = Vec::new();
                    match reader.read_until(b'\n', &mut line).await {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {
                            if core_tx
                                .send(CoreMsg::Server { generation, line })
                                .await
                                .is_err()
                            {
                                return;
                            }
                        }
                    }
                }
                let _ = core_tx.send(CoreMsg::ServerEof { generation }).await;
            });
        }
        if let Some(mut stdin) = child.stdin.take() {
            let (tx, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
            tokio::spawn(async move {
                while let Some(line) = rx.recv().await {
                    if stdin.write_all(&line).await.is_err() {
                        break;
                    }
                }
            });
            self.to_server = Some(tx);
        }
        self.child = Some(ServerSide::Child(child));
        Ok(())
    }

    fn start_bridge(&mut self, upstream: super::upstream::Upstream) {
        self.generation += 1;
        let generation = self.generation;
        let (to_server, mut lines, task) = super::bridge::spawn(upstream);
        let core_tx = self.core_tx.clone();
        let reader = tokio::spawn(async move {
            while let Some(line) = lines.recv().await {
                if core_tx
                    .send(CoreMsg::Server { generation, line })
                    .await
                    .is_err()
                {
                    return;
                }
            }
            let _ = core_tx.send(CoreMsg::ServerEof { generation }).await;
        });
        self.to_server = Some(to_server);
        self.child = Some(ServerSide::Bridge { task, reader });
    }

    async fn kill_child(&mut self) {
        self.to_server = None;
        match self.child.take() {
            Some(ServerSide::Child(mut child)) => {
                // By its pid, never by name.
                let _ = child.start_kill();
                let _ = child.wait().await;
            }
            Some(ServerSide::Bridge { task, reader }) => {
                task.abort();
                reader.abort();
            }
            None => {}
        }
    }

    async fn shutdown(&mut self) {
        self.to_server = None;
        let exited = match self.child.as_mut() {
            Some(ServerSide::Child(child)) => {
                tokio::time::timeout(EXIT_GRACE, child.wait()).await.is_ok()
            }
            // The bridge ends the session (DELETE) once its input is closed.
            Some(ServerSide::Bridge { task, .. }) => {
                tokio::time::timeout(EXIT_GRACE, task).await.is_ok()
            }
            None => true,
        };
        if !exited {
            self.kill_child().await;
        }
        if let Some(ServerSide::Bridge { reader, .. }) = self.child.take() {
            reader.abort();
        }
        for (_, mut p) in self.pending.drain() {
            if let Some(wait) = p.wait.take() {
                wait.token.cancel();
            }
            self.log_event(&p, Outcome::Pending);
        }
    }

    fn send_client(&self, line: Vec<u8>) {
        self.recorder.client_line(&line);
        let _ = self.to_client.send(line);
    }

    fn send_server(&mut self, line: Vec<u8>) {
        match &mut self.upstream {
            UpstreamState::Up => {
                if let Some(tx) = &self.to_server {
                    let _ = tx.send(line);
                }
            }
            UpstreamState::Reinitializing(queue) => queue.push(line),
            UpstreamState::Down => {}
        }
    }

    async fn handle(&mut self, msg: CoreMsg) -> Exit {
        match msg {
            CoreMsg::Client(line) => return self.on_client(line),
            CoreMsg::ClientEof => {
                // Close the server's stdin; it gets a grace period to exit, then is killed.
                self.to_server = None;
                self.client_closed_at = Some(Instant::now());
            }
            CoreMsg::Server { generation, line } if generation == self.generation => {
                self.on_server(line)
            }
            CoreMsg::Server { .. } => {}
            CoreMsg::ServerEof { generation } if generation == self.generation => {
                if !matches!(self.upstream, UpstreamState::Down) {
                    return Exit::Stop;
                }
            }
            CoreMsg::ServerEof { .. } => {}
            CoreMsg::WaitEnded { key, wait } => return self.on_wait_ended(&key, wait),
            CoreMsg::Crash { restart_after } => return self.crash(restart_after).await,
            CoreMsg::Restart => self.restart(),
        }
        Exit::Continue
    }

    fn on_client(&mut self, line: Vec<u8>) -> Exit {
        if self.transparent {
            self.send_server(line);
            return Exit::Continue;
        }
        let Some(envelope) = Envelope::parse(&line) else {
            self.send_server(line);
            return Exit::Continue;
        };
        if envelope.is_request() {
            return self.on_request(line, envelope);
        }
        match envelope.method.as_deref() {
            Some("notifications/cancelled") => self.on_cancel(&envelope),
            Some("notifications/initialized") => self.initialized = Some(line.clone()),
            _ => {}
        }
        self.send_server(line);
        Exit::Continue
    }

    fn on_request(&mut self, line: Vec<u8>, envelope: Envelope) -> Exit {
        let method = envelope.method.clone().unwrap_or_default();
        if method == "initialize" {
            self.initialize = Some(line.clone());
        }
        if method != "tools/call" && !self.decider.watches_method(&method) {
            self.send_server(line);
            return Exit::Continue;
        }
        let call = Call::decide(&mut self.decider, &envelope);
        if call.decision.notify_list_changed {
            let mut line = LIST_CHANGED.to_vec();
            line.push(b'\n');
            self.send_client(line);
        }
        let key = id_key(&call.id);
        let mut pending = Pending {
            plan: if call.filters_list(&self.decider) {
                ResponsePlan::FilterList
            } else {
                ResponsePlan::Pass
            },
            call,
            wait: None,
            held: None,
            then: None,
            forwarded: false,
            forwarded_at: None,
            upstream: None,
            upstream_time: None,
            cancelled_at: None,
            cancel_ended_wait: false,
        };
        if matches!(self.upstream, UpstreamState::Down) {
            let reply = connection_closed();
            self.send_client(reply.line(&pending.call.id));
            self.log_event(&pending, reply_outcome(&reply));
            return Exit::Continue;
        }
        if pending.call.decision.applied.is_empty() {
            pending.forwarded = true;
            pending.forwarded_at = Some(Instant::now());
            self.send_server(line);
            self.remember(key, pending);
            return Exit::Continue;
        }
        let composed = pending.call.compose(&self.decider);
        if composed.request_delay.is_zero() {
            return self.proceed(key, pending, line, composed);
        }
        pending.held = Some(line);
        pending.wait = Some(self.start_wait(&key, WaitKind::Request, composed.request_delay));
        pending.then = Some(composed);
        self.remember(key, pending);
        Exit::Continue
    }

    /// Carries out a call's faults once its request delay (if any) has passed.
    fn proceed(
        &mut self,
        key: String,
        mut pending: Pending,
        line: Vec<u8>,
        composed: Composed,
    ) -> Exit {
        let Some(terminal) = composed.terminal else {
            pending.forwarded = true;
            pending.forwarded_at = Some(Instant::now());
            if !composed.rewrites.is_empty() || !composed.response_delay.is_zero() {
                pending.plan = ResponsePlan::Alter {
                    rewrites: composed.rewrites,
                    delay: composed.response_delay,
                };
            }
            self.send_server(line);
            self.remember(key, pending);
            return Exit::Continue;
        };
        match terminal {
            Action::Reply {
                after,
                reply,
                call_upstream,
            } => {
                let after = after + composed.response_delay;
                if call_upstream {
                    pending.forwarded = true;
                    pending.forwarded_at = Some(Instant::now());
                    self.send_server(line);
                    pending.plan = ResponsePlan::Replace {
                        reply,
                        delay: composed.response_delay,
                    };
                } else if after.is_zero() {
                    self.send_client(reply.line(&pending.call.id));
                    self.log_event(&pending, reply_outcome(&reply));
                    return Exit::Continue;
                } else {
                    pending.plan = ResponsePlan::Replace {
                        reply,
                        delay: Duration::ZERO,
                    };
                    pending.wait = Some(self.start_wait(&key, WaitKind::Reply, after));
                }
            }
            Action::Hang {
                forward,
                max_hold,
                on_cap,
            } => {
                if forward {
                    pending.forwarded = true;
                    pending.forwarded_at = Some(Instant::now());
                    self.send_server(line);
                }
                pending.plan = ResponsePlan::Swallow;
                pending.wait = Some(self.start_wait(&key, WaitKind::Hang(on_cap), max_hold));
            }
            Action::CrashServer {
                after,
                restart_after,
            } => {
                pending.forwarded = true;
                pending.forwarded_at = Some(Instant::now());
                self.send_server(line);
                let core_tx = self.core_tx.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(after).await;
                    let _ = core_tx.send(CoreMsg::Crash { restart_after }).await;
                });
            }
            Action::CloseClient => {
                self.log_event(&pending, Outcome::None);
                return Exit::Stop;
            }
            // Not settling actions ([`Call::compose`] never makes them terminal), and the HTTP front's
            // (a stdio plan never holds them: [`check_stdio_plan`]).
            Action::DelayRequest(_)
            | Action::DelayResponse(_)
            | Action::Rewrite
            | Action::Http(_) => {
                pending.forwarded = true;
                pending.forwarded_at = Some(Instant::now());
                self.send_server(line);
            }
        }
        self.remember(key, pending);
        Exit::Continue
    }

    fn remember(&mut self, key: String, pending: Pending) {
        let now = Instant::now();
        self.expire_stale(now);
        if let Some((old, mut p)) = self.pending.insert(key, pending, now) {
            tracing::warn!("mcp-proxy: forgetting call {old} after {MAX_PENDING} pending");
            if let Some(wait) = p.wait.take() {
                wait.token.cancel();
            }
            self.log_event(&p, Outcome::Pending);
        }
    }

    /// Forgets the calls the server left unanswered for [`PENDING_TTL`]; a late answer then passes untouched.
    fn expire_stale(&mut self, now: Instant) {
        for (key, p) in self.pending.expire(now, |p| p.wait.is_some()) {
            tracing::warn!(
                "mcp-proxy: forgetting call {key} ({} `{}`): no answer from the server in {} s",
                p.call.method,
                p.call.tool,
                PENDING_TTL.as_secs()
            );
            self.log_event(&p, Outcome::Pending);
        }
    }

    fn start_wait(&mut self, key: &str, kind: WaitKind, delay: Duration) -> Wait {
        self.next_wait += 1;
        let id = self.next_wait;
        let token = CancellationToken::new();
        let cancelled = token.clone();
        let core_tx = self.core_tx.clone();
        let key = key.to_owned();
        tokio::spawn(async move {
            tokio::select! {
                () = tokio::time::sleep(delay) => {
                    let _ = core_tx.send(CoreMsg::WaitEnded { key, wait: id }).await;
                }
                () = cancelled.cancelled() => {}
            }
        });
        Wait { id, kind, token }
    }

    fn on_cancel(&mut self, envelope: &Envelope) {
        let Some(request_id) = envelope.params.as_ref().and_then(|p| p.get("requestId")) else {
            return;
        };
        let key = id_key(request_id);
        let Some(mut p) = self.pending.remove(&key) else {
            return;
        };
        let now = Instant::now();
        p.cancelled_at = Some(now);
        if let Some(wait) = p.wait.take() {
            wait.token.cancel();
            p.cancel_ended_wait = true;
        }
        self.finish(key, p, Outcome::None);
    }

    fn on_wait_ended(&mut self, key: &str, wait: u64) -> Exit {
        let Some(mut p) = self.pending.remove(key) else {
            return Exit::Continue;
        };
        let Some(w) = p.wait.take_if(|w| w.id == wait) else {
            self.pending.insert(key.to_owned(), p, Instant::now());
            return Exit::Continue;
        };
        match w.kind {
            WaitKind::Request => {
                let line = p.held.take().unwrap_or_default();
                let composed = p.then.take().unwrap_or_default();
                return self.proceed(key.to_owned(), p, line, composed);
            }
            WaitKind::Response => {
                let line = p.held.take().unwrap_or_default();
                let outcome = Outcome::of_line(&line);
                self.send_client(line);
                self.finish(key.to_owned(), p, outcome);
            }
            WaitKind::Reply => {
                if let ResponsePlan::Replace { reply, .. } = p.plan.clone() {
                    self.send_client(reply.line(&p.call.id));
                    self.finish(key.to_owned(), p, reply_outcome(&reply));
                }
            }
            WaitKind::Hang(on_cap) => match on_cap {
                OnCap::Drop => self.finish(key.to_owned(), p, Outcome::None),
                OnCap::Error => {
                    let reply = request_timed_out();
                    self.send_client(reply.line(&p.call.id));
                    self.finish(key.to_owned(), p, reply_outcome(&reply));
                }
                OnCap::Close => {
                    self.finish(key.to_owned(), p, Outcome::None);
                    return Exit::Stop;
                }
            },
        }
        Exit::Continue
    }

    fn on_server(&mut self, line: Vec<u8>) {
        if let UpstreamState::Reinitializing(_) = self.upstream
            && Envelope::parse(&line)
                .and_then(|e| e.id)
                .is_some_and(|id| id.as_str().is_some_and(|s| s.starts_with(REINIT_ID)))
        {
            let UpstreamState::Reinitializing(queue) =
                std::mem::replace(&mut self.upstream, UpstreamState::Up)
            else {
                return;
            };
            if let Some(initialized) = self.initialized.clone() {
                self.send_server(initialized);
            }
            for queued in queue {
                self.send_server(queued);
            }
            return;
        }
        if self.transparent || (self.pending.is_empty() && self.swallow.is_empty()) {
            self.send_client(line);
            return;
        }
        let Some(envelope) = Envelope::parse(&line).filter(Envelope::is_response) else {
            self.send_client(line);
            return;
        };
        let key = envelope.id.as_ref().map(id_key).unwrap_or_default();
        let Some(mut p) = self.pending.remove(&key) else {
            if let Some(at) = self.swallow.iter().position(|k| *k == key) {
                self.swallow.remove(at);
            } else {
                self.send_client(line);
            }
            return;
        };
        let upstream = envelope.outcome();
        p.upstream = Some(upstream.clone());
        p.upstream_time = p.forwarded_at.map(|at| at.elapsed());
        match p.plan.clone() {
            ResponsePlan::Pass => {
                self.send_client(line);
                self.finish(key, p, upstream);
            }
            ResponsePlan::Alter { rewrites, delay } => {
                let out = p
                    .call
                    .rewrite_response(&self.decider, self.mode, line, &rewrites);
                if delay.is_zero() {
                    let outcome = Outcome::of_line(&out);
                    self.send_client(out);
                    self.finish(key, p, outcome);
                } else {
                    p.held = Some(out);
                    p.wait = Some(self.start_wait(&key, WaitKind::Response, delay));
                    self.pending.insert(key, p, Instant::now());
                }
            }
            ResponsePlan::FilterList => {
                let out = p.call.filter_list(&self.decider, self.mode, line);
                self.send_client(out);
                self.finish(key, p, upstream);
            }
            ResponsePlan::Swallow => {
                self.pending.insert(key, p, Instant::now());
            }
            ResponsePlan::Replace { reply, delay } => {
                if p.wait.is_some() {
                    self.pending.insert(key, p, Instant::now());
                } else if delay.is_zero() {
                    self.send_client(reply.line(&p.call.id));
                    self.finish(key, p, reply_outcome(&reply));
                } else {
                    p.wait = Some(self.start_wait(&key, WaitKind::Reply, delay));
                    self.pending.insert(key, p, Instant::now());
                }
            }
        }
    }

    /// The client got its answer (or none, for good): write the event, remember to swallow a late real one.
    fn finish(&mut self, key: String, p: Pending, client: Outcome) {
        let swallow_late = p.forwarded
            && p.upstream.is_none()
            && !matches!(p.plan, ResponsePlan::Pass | ResponsePlan::FilterList);
        if swallow_late {
            if self.swallow.len() >= MAX_SWALLOW {
                self.swallow.pop_front();
            }
            self.swallow.push_back(key);
        }
        self.log_event(&p, client);
    }

    async fn crash(&mut self, restart_after: Option<Duration>) -> Exit {
        tracing::info!("mcp-proxy: connection_drop: killing the server");
        self.upstream = UpstreamState::Down;
        self.kill_child().await;
        let Some(restart_after) = restart_after else {
            return Exit::Stop;
        };
        // Calls in flight on the killed server fail as a client SDK reports a closed connection.
        let keys: Vec<String> = self
            .pending
            .iter()
            .filter(|(_, p)| p.forwarded && p.upstream.is_none())
            .map(|(k, _)| k.clone())
            .collect();
        for key in keys {
            if let Some(mut p) = self.pending.remove(&key) {
                if let Some(wait) = p.wait.take() {
                    wait.token.cancel();
                }
                p.upstream = Some(Outcome::Pending);
                let reply = connection_closed();
                self.send_client(reply.line(&p.call.id));
                self.finish(key, p, reply_outcome(&reply));
            }
        }
        let core_tx = self.core_tx.clone();
        tokio::spawn(async move {
            tokio::time::sleep(restart_after).await;
            let _ = core_tx.send(CoreMsg::Restart).await;
        });
        Exit::Continue
    }

    fn restart(&mut self) {
        if let Err(e) = self.start_child() {
            tracing::error!("mcp-proxy: cannot restart the server: {e}");
            return;
        }
        tracing::info!("mcp-proxy: server restarted");
        let replay = self.initialize.as_ref().and_then(|line| {
            let mut value: Value = serde_json::from_slice(line).ok()?;
            value["id"] = Value::String(format!("{REINIT_ID}-{}", self.generation));
            let mut out = value.to_string().into_bytes();
            out.push(b'\n');
            Some(out)
        });
        match replay {
            Some(line) => {
                self.upstream = UpstreamState::Up;
                self.send_server(line);
                self.upstream = UpstreamState::Reinitializing(Vec::new());
            }
            None => self.upstream = UpstreamState::Up,
        }
    }

    fn log_event(&mut self, p: &Pending, client: Outcome) {
        if !self.recorder.is_active() {
            return;
        }
        let upstream = match (&p.upstream, p.forwarded) {
            (Some(outcome), _) => outcome.clone(),
            (None, true) => Outcome::Pending,
            (None, false) => Outcome::None,
        };
        let cancel = p.cancelled_at.map(|at| CancelRecord {
            after_ms: super::engine::millis(at - p.call.started),
            ended_injected_wait: p.cancel_ended_wait,
            released_ms: super::engine::millis(at.elapsed()),
        });
        let event = p.call.event(
            &self.decider,
            Ending {
                upstream,
                client,
                upstream_time: p.upstream_time,
                cancel,
            },
        );
        self.recorder.record(&event);
    }
}

/// The calls in flight, by id key: at most `cap` of them (beyond it the oldest is given back), and each
/// given back by [`InFlight::expire`] once untouched for `ttl`. Inserting an entry again touches it.
struct InFlight<V> {
    entries: HashMap<String, (Instant, V)>,
    /// Keys in the order they were touched; a record older than its entry's last touch is stale.
    order: VecDeque<(Instant, String)>,
    cap: usize,
    ttl: Duration,
}

impl<V> InFlight<V> {
    fn new(cap: usize, ttl: Duration) -> Self {
        Self {
            entries: HashMap::new(),
            order: VecDeque::new(),
            cap,
            ttl,
        }
    }

    fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn iter(&self) -> impl Iterator<Item = (&String, &V)> {
        self.entries.iter().map(|(k, (_, v))| (k, v))
    }

    /// Inserts (or touches) `key` at `now`; returns the oldest entry when it had to go to make room.
    fn insert(&mut self, key: String, value: V, now: Instant) -> Option<(String, V)> {
        let evicted = if self.entries.len() >= self.cap && !self.entries.contains_key(&key) {
            self.pop_oldest()
        } else {
            None
        };
        self.order.push_back((now, key.clone()));
        self.entries.insert(key, (now, value));
        if self.order.len() > self.cap.saturating_mul(2) {
            let entries = &self.entries;
            self.order
                .retain(|(at, k)| entries.get(k).is_some_and(|(t, _)| t == at));
        }
        evicted
    }

    fn remove(&mut self, key: &str) -> Option<V> {
        self.entries.remove(key).map(|(_, v)| v)
    }

    fn drain(&mut self) -> Vec<(String, V)> {
        self.order.clear();
        self.entries.drain().map(|(k, (_, v))| (k, v)).collect()
    }

    fn is_current(&self, at: Instant, key: &str) -> bool {
        self.entries.get(key).is_some_and(|(t, _)| *t == at)
    }

    fn pop_oldest(&mut self) -> Option<(String, V)> {
        while let Some((at, key)) = self.order.pop_front() {
            if self.is_current(at, &key) {
                return self.remove(&key).map(|v| (key, v));
            }
        }
        None
    }

    /// Gives back the entries untouched for `ttl` at `now`, oldest first; an entry `busy` holds (a wait of
    /// its own in progress, bounded by its own timer) is touched instead.
    fn expire(&mut self, now: Instant, busy: impl Fn(&V) -> bool) -> Vec<(String, V)> {
        let mut expired = Vec::new();
        while let Some((at, _)) = self.order.front() {
            if now.saturating_duration_since(*at) < self.ttl {
                break;
            }
            let Some((at, key)) = self.order.pop_front() else {
                break;
            };
            if !self.is_current(at, &key) {
                continue;
            }
            match self.entries.get_mut(&key) {
                Some(entry) if busy(&entry.1) => {
                    entry.0 = now;
                    self.order.push_back((now, key));
                }
                _ => {
                    if let Some(value) = self.remove(&key) {
                        expired.push((key, value));
                    }
                }
            }
        }
        expired
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_flight_calls_expire_after_the_ttl_unless_busy() {
        let ttl = Duration::from_secs(600);
        let mut table: InFlight<bool> = InFlight::new(8, ttl);
        let t0 = Instant::now();
        table.insert("1".into(), false, t0);
        table.insert("2".into(), true, t0); // an injected wait in progress
        table.insert("3".into(), false, t0 + Duration::from_secs(300));
        assert!(
            table
                .expire(t0 + ttl - Duration::from_millis(1), |b| *b)
                .is_empty()
        );
        let gone = table.expire(t0 + ttl, |b| *b);
        assert_eq!(
            gone.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
            ["1"]
        );
        // "2" was touched at t0 + ttl; "3" goes at its own ttl, and touching it again restarts it.
        table.insert("3".into(), false, t0 + Duration::from_secs(800));
        assert!(
            table
                .expire(t0 + Duration::from_secs(1000), |b| *b)
                .is_empty()
        );
        let gone = table.expire(t0 + Duration::from_secs(1400), |_| false);
        let mut keys: Vec<&str> = gone.iter().map(|(k, _)| k.as_str()).collect();
        keys.sort();
        assert_eq!(keys, ["2", "3"]);
        assert!(table.is_empty());
        assert!(table.order.is_empty(), "no stale records left behind");
    }

    #[test]
    fn in_flight_calls_are_capped_oldest_first_and_memory_stays_bounded() {
        let mut table: InFlight<u32> = InFlight::new(4, Duration::from_secs(600));
        let t0 = Instant::now();
        for i in 0..4u32 {
            assert!(table.insert(i.to_string(), i, t0).is_none());
        }
        // Touching "0" makes "1" the oldest.
        table.insert("0".into(), 0, t0 + Duration::from_secs(1));
        let evicted = table.insert("4".into(), 4, t0 + Duration::from_secs(2));
        assert_eq!(evicted, Some(("1".to_string(), 1)));
        // A server that never answers: many calls, each touched often, the table stays at the cap.
        for i in 0..10_000u32 {
            let key = (i % 7).to_string();
            table.insert(key.clone(), i, t0 + Duration::from_secs(3));
            table.remove(&key);
            table.insert(key, i, t0 + Duration::from_secs(3));
        }
        assert!(table.entries.len() <= 4 && table.order.len() <= 8 + 1);
    }
}
