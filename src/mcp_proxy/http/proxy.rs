//! The front's state, shared by every connection: the fault engine, the calls a client can cancel and the open
//! GET streams; and the one way to the upstream server.

use std::{
    collections::{HashMap, HashSet, VecDeque},
    sync::{Arc, Mutex, MutexGuard},
};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use tokio::sync::mpsc;

use super::cancel::{CancelSignal, cancel_key};
use crate::mcp_proxy::decide::Decider;
use crate::mcp_proxy::engine::{Call, CallEnd, Recorder};
use crate::mcp_proxy::plan::Mode;
use crate::mcp_wire::jsonrpc::Envelope;
use crate::mcp_wire::{endpoint::Endpoint, http_session::error_chain};

/// The faults' decisions and the records, shared by every connection.
pub(super) struct Engine {
    pub(super) decider: Decider,
    pub(super) recorder: Recorder,
    /// Sessions a `session_expiry` ended: every later request carrying one gets 404.
    pub(super) expired: HashSet<String>,
    pub(super) expired_order: VecDeque<String>,
}

/// The front's state, shared by every connection.
pub(super) struct Proxy {
    pub(super) upstream: Endpoint,
    pub(super) mode: Mode,
    /// No faults and no records: forward without reading bodies.
    pub(super) transparent: bool,
    pub(super) engine: Mutex<Engine>,
    /// The tracked calls a client can cancel, by session and request id.
    pub(super) cancels: Mutex<HashMap<String, Arc<CancelSignal>>>,
    /// A `drop_tool` may have to tell clients their tool list changed: GET streams are watched.
    pub(super) notifies: bool,
    /// Answers teach later requests (a task's tool, a tool's question): `tools/call` answers are read for it.
    pub(super) learns: bool,
    /// The open GET streams, by session: events sent here are put on the stream between the server's events.
    pub(super) streams: Streams,
}

pub(super) type Streams = Arc<Mutex<HashMap<String, mpsc::UnboundedSender<Bytes>>>>;

impl Proxy {
    pub(super) fn engine(&self) -> MutexGuard<'_, Engine> {
        self.engine.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn cancels(&self) -> MutexGuard<'_, HashMap<String, Arc<CancelSignal>>> {
        self.cancels.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Ends the waits of the tracked call a client's `notifications/cancelled` names, in its session.
    pub(super) fn cancel_call(&self, session: Option<&str>, notification: &Envelope) {
        let Some(request_id) = notification
            .params
            .as_ref()
            .and_then(|p| p.get("requestId"))
        else {
            return;
        };
        if let Some(signal) = self.cancels().get(&cancel_key(session, request_id)) {
            signal.cancel();
        }
    }

    pub(super) fn streams(&self) -> MutexGuard<'_, HashMap<String, mpsc::UnboundedSender<Bytes>>> {
        self.streams.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) async fn send(
        &self,
        request: Request<Full<Bytes>>,
    ) -> Result<Response<Incoming>, String> {
        self.upstream
            .client
            .request(request)
            .await
            .map_err(|e| error_chain(&e))
    }

    pub(super) fn record(&self, call: &Call, end: CallEnd) {
        let mut engine = self.engine();
        let event = call.event(&engine.decider, end);
        engine.recorder.record(&event);
    }
}
