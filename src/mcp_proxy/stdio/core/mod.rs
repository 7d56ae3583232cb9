//! The relay's core: one task owns every table (pending calls, decisions, the server); the client and server
//! sides talk to it through [`CoreMsg`]s, and every injected wait is its own task, so the core never sleeps
//! and other calls keep flowing. Untouched lines are forwarded byte for byte; a line is parsed only to route
//! it and, when a fault acts on it, to rewrite it.

mod calls;
mod lifecycle;
mod pending;
mod route;

use std::{
    collections::VecDeque,
    time::{Duration, Instant},
};

use tokio::sync::mpsc;

use self::calls::PendingCall;
use super::RelayError;
use super::in_flight::InFlight;
use super::server::{ServerEvent, ServerSide, ServerStderr, ServerTarget};
use crate::mcp_proxy::decide::Decider;
use crate::mcp_proxy::engine::Recorder;
use crate::mcp_proxy::plan::Mode;
use crate::mcp_wire::lines::LineError;

/// Calls remembered at most; beyond it the oldest is forgotten (and logged as `pending`).
const MAX_PENDING: usize = 65_536;
/// A call the server has not answered for this long (with no injected wait in progress) is forgotten and
/// logged as `pending`; its answer, if it ever comes, passes to the client untouched. As long as mcptest's
/// hang cap, so a server that never answers some ids holds neither memory nor stale entries beyond it. An
/// answered call is forgotten at once.
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
