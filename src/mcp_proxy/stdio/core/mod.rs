//! The relay's core: one task owns every table (pending calls, decisions, the server); the client and server
//! sides talk to it through [`CoreMsg`]s, and every injected wait is its own task, so the core never sleeps
//! and other calls keep flowing. Untouched lines are forwarded byte for byte; a line is parsed only to route
//! it and, when a fault acts on it, to rewrite it.

use std::{
    collections::VecDeque,
    time::{Duration, Instant},
};

use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

mod calls;

use self::calls::{PendingCall, ResponsePlan, Wait, WaitKind};
use super::in_flight::InFlight;
use super::server::{self, ServerEvent, ServerSide, ServerStderr, ServerTarget};
use super::{RelayError, RelayOptions};
use crate::mcp_proxy::decide::Decider;
use crate::mcp_proxy::engine::{Recorder, connection_closed, reply_outcome};
use crate::mcp_proxy::plan::Mode;
use crate::mcp_wire::jsonrpc::{Envelope, Outcome, id_key};
use crate::mcp_wire::lines::LineError;

/// Calls remembered at most; beyond it the oldest is forgotten (and logged as `pending`).
const MAX_PENDING: usize = 65_536;
/// A call the server has not answered for this long (with no injected wait in progress) is forgotten and
/// logged as `pending`; its answer, if it ever comes, passes to the client untouched. As long as mcptest's
/// hang cap, so a server that never answers some ids holds neither memory nor stale entries beyond it.
const PENDING_TTL: Duration = Duration::from_secs(600);
/// Ids whose late real answer must be swallowed (the client already got a synthesised one).
const MAX_SWALLOW: usize = 4_096;
/// How long the server gets to exit after the client closed, before it is killed.
pub(super) const EXIT_GRACE: Duration = Duration::from_millis(500);
pub(super) const REINIT_ID: &str = "fault-mcp-proxy-reinit";

/// What the core hears: lines from either side, the end of either side, and its own timers.
pub(super) enum CoreMsg {
    Client(Vec<u8>),
    /// The client closed its side; `error` when its side broke (a message over the bound).
    ClientEof {
        error: Option<LineError>,
    },
    Server(ServerEvent),
    WaitEnded {
        key: String,
        wait: u64,
    },
    Crash {
        restart_after: Option<Duration>,
    },
    Restart,
}

pub(super) enum UpstreamState {
    Up,
    /// Restarted: the client's `initialize` was replayed; lines wait for its answer.
    Reinitializing(Vec<Vec<u8>>),
    Down,
}

impl From<ServerEvent> for CoreMsg {
    fn from(event: ServerEvent) -> Self {
        CoreMsg::Server(event)
    }
}

/// What ends the relay.
pub(super) enum Exit {
    Continue,
    Stop,
}

/// The one task that owns every table of the relay.
pub(super) struct Core {
    target: ServerTarget,
    server_stderr: ServerStderr,
    mode: Mode,
    decider: Decider,
    recorder: Recorder,
    pending: InFlight<PendingCall>,
    swallow: VecDeque<String>,
    server: Option<ServerSide>,
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
    pub(super) client_closed_at: Option<Instant>,
    /// Why the relay ends in error, when a side broke.
    pub(super) failure: Option<RelayError>,
}

impl Core {
    pub(super) fn new(
        options: &RelayOptions,
        mut decider: Decider,
        recorder: Recorder,
        to_client: mpsc::UnboundedSender<Vec<u8>>,
        core_tx: mpsc::Sender<CoreMsg>,
    ) -> Self {
        let transparent = decider.is_empty() && !recorder.is_active();
        recorder.prepare(&mut decider);
        Core {
            target: options.server.clone(),
            server_stderr: options.server_stderr.clone(),
            mode: options.plan.mode,
            decider,
            recorder,
            pending: InFlight::new(MAX_PENDING, PENDING_TTL),
            swallow: VecDeque::new(),
            server: None,
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
            failure: None,
        }
    }

    /// Starts (or restarts) the server as a new generation.
    pub(super) fn start_server(&mut self) -> Result<(), RelayError> {
        self.generation += 1;
        let started = server::start(
            &self.target,
            self.generation,
            &self.core_tx,
            &self.server_stderr,
        )?;
        self.to_server = Some(started.to_server);
        self.server = Some(started.side);
        self.upstream = UpstreamState::Up;
        Ok(())
    }

    async fn kill_server(&mut self) {
        self.to_server = None;
        if let Some(server) = self.server.take() {
            server.kill().await;
        }
    }

    /// Ends the session: the server gets [`EXIT_GRACE`] to exit after its input closed, then is ended; the
    /// calls still pending are logged as such.
    pub(super) async fn shutdown(&mut self) {
        self.to_server = None;
        if let Some(server) = self.server.take() {
            server.stop(EXIT_GRACE).await;
        }
        for (_, mut p) in self.pending.drain() {
            if let Some(wait) = p.wait.take() {
                wait.token.cancel();
            }
            self.log_event(&p, Outcome::Pending);
        }
    }

    fn send_client(&self, line: Vec<u8>) {
        if self.recorder.observes() {
            // The line is on its way before the observer reads it: its parse is not the client's wait.
            let seen = line.clone();
            let _ = self.to_client.send(line);
            self.recorder.client_line(&seen);
        } else {
            let _ = self.to_client.send(line);
        }
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

    pub(super) async fn handle(&mut self, msg: CoreMsg) -> Exit {
        match msg {
            CoreMsg::Client(line) => return self.on_client(line),
            CoreMsg::ClientEof { error } => {
                if let Some(error) = error {
                    self.failure = Some(RelayError::ClientMessage(error));
                }
                // Close the server's stdin; it gets a grace period to exit, then is killed.
                self.to_server = None;
                self.client_closed_at = Some(Instant::now());
            }
            CoreMsg::Server(ServerEvent::Line { generation, line })
                if generation == self.generation =>
            {
                self.on_server(line)
            }
            CoreMsg::Server(ServerEvent::Eof { generation, error })
                if generation == self.generation =>
            {
                if let Some(error) = error {
                    tracing::error!("mcp-proxy: the server's messages cannot be relayed: {error}");
                    self.failure = Some(RelayError::ServerMessage(error));
                }
                if !matches!(self.upstream, UpstreamState::Down) {
                    return Exit::Stop;
                }
            }
            // A line or the end of a server that was restarted since.
            CoreMsg::Server(_) => {}
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

    fn remember(&mut self, key: String, pending: PendingCall) {
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
    pub(super) fn expire_stale(&mut self, now: Instant) {
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
        let wait = p.wait.take();
        p.progress.cancelled(Instant::now(), wait.is_some());
        if let Some(wait) = wait {
            wait.token.cancel();
        }
        self.finish(key, p, Outcome::None);
    }

    /// The client got its answer (or none, for good): write the event, remember to swallow a late real one.
    fn finish(&mut self, key: String, p: PendingCall, client: Outcome) {
        let swallow_late = p.progress.is_forwarded()
            && p.progress.upstream.is_none()
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
        self.kill_server().await;
        let Some(restart_after) = restart_after else {
            return Exit::Stop;
        };
        // Calls in flight on the killed server fail as a client SDK reports a closed connection.
        let keys: Vec<String> = self
            .pending
            .iter()
            .filter(|(_, p)| p.progress.is_forwarded() && p.progress.upstream.is_none())
            .map(|(k, _)| k.clone())
            .collect();
        for key in keys {
            if let Some(mut p) = self.pending.remove(&key) {
                if let Some(wait) = p.wait.take() {
                    wait.token.cancel();
                }
                p.progress.upstream = Some(Outcome::Pending);
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
        if let Err(e) = self.start_server() {
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
        if let Some(line) = replay {
            self.send_server(line);
            self.upstream = UpstreamState::Reinitializing(Vec::new());
        }
    }

    fn log_event(&mut self, p: &PendingCall, client: Outcome) {
        if !self.recorder.is_active() {
            return;
        }
        let event = p.call.event(&self.decider, p.progress.end(&p.call, client));
        self.recorder.record(&event);
    }
}
