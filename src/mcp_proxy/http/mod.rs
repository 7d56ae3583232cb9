//! The Streamable HTTP front: a reverse proxy in front of an MCP server's HTTP endpoint. POST, GET and DELETE
//! are forwarded with every end-to-end header both ways (`Mcp-Session-Id`, `MCP-Protocol-Version`,
//! `Authorization`, `Last-Event-ID`, …); a POSTed request goes through the same fault engine as on stdio, and
//! its answer, a JSON body or an SSE stream, is read message by message (event ids kept). Status answers
//! (202, 4xx, 5xx) and every other exchange pass untouched. A client's `notifications/cancelled` (POSTed in
//! the call's session) or closing the call's HTTP request ends the waits injected into it, as on stdio. A
//! `drop_tool`'s `notifications/tools/list_changed` goes on every open GET stream, and first on the SSE answer of
//! the call that made the tool disappear when its client has no GET stream open.

mod exchange;
mod get_stream;
mod headers;

use std::{
    collections::{HashMap, HashSet, VecDeque},
    net::SocketAddr,
    sync::{Arc, Mutex, OnceLock},
    time::{Duration, Instant},
};

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited, combinators::BoxBody};
use hyper::body::Incoming;
use serde_json::Value;
use tokio::{net::TcpListener, sync::mpsc};
use tokio_util::sync::CancellationToken;

use self::exchange::Exchange;
use self::get_stream::{ChannelBody, GetStream};
use self::headers::{bad_gateway, end_to_end, status_response};
use super::decide::{Decider, DeciderError};
use super::engine::{Call, CallEnd, LIST_CHANGED, Observer, Recorder};
use super::events::EventLog;
use super::plan::{Mode, Plan};
use crate::mcp_wire::jsonrpc::{Envelope, id_key};
use crate::mcp_wire::{endpoint::Endpoint, http_session::error_chain, sse};

/// The largest request or JSON response body read whole: one message.
const MAX_BODY: usize = crate::mcp_wire::jsonrpc::MAX_MESSAGE_BYTES;
/// Sessions remembered as expired at most (the oldest is forgotten first).
const MAX_EXPIRED_SESSIONS: usize = 4_096;
const SESSION_HEADER: &str = "mcp-session-id";

#[derive(Debug, thiserror::Error)]
pub enum HttpProxyError {
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("--events: {0}")]
    Events(#[from] crate::files::FileError),
    #[error(transparent)]
    Plan(#[from] DeciderError),
}

pub struct HttpProxyOptions {
    pub plan: Plan,
    pub upstream: Endpoint,
    pub listen: SocketAddr,
    pub events: Option<std::path::PathBuf>,
    pub observer: Option<Observer>,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type ProxyBody = BoxBody<Bytes, BoxError>;

/// The faults' decisions and the records, shared by every connection.
struct Engine {
    decider: Decider,
    recorder: Recorder,
    /// Sessions a `session_expiry` ended: every later request carrying one gets 404.
    expired: HashSet<String>,
    expired_order: VecDeque<String>,
}

struct Proxy {
    upstream: Endpoint,
    mode: Mode,
    /// No faults and no records: forward without reading bodies.
    transparent: bool,
    engine: Mutex<Engine>,
    /// The tracked calls a client can cancel, by session and request id.
    cancels: Mutex<HashMap<String, Arc<CancelSignal>>>,
    /// A `drop_tool` may have to tell clients their tool list changed: GET streams are watched.
    notifies: bool,
    /// Answers teach later requests (a task's tool, a tool's question): `tools/call` answers are read for it.
    learns: bool,
    /// The open GET streams, by session: events sent here are put on the stream between the server's events.
    streams: Streams,
}

type Streams = Arc<Mutex<HashMap<String, mpsc::UnboundedSender<Bytes>>>>;

/// A tracked call's cancellation by its client: a `notifications/cancelled` naming it, POSTed in its session.
#[derive(Default)]
struct CancelSignal {
    token: CancellationToken,
    /// When the cancellation arrived.
    at: OnceLock<Instant>,
}

impl CancelSignal {
    fn cancel(&self) {
        let _ = self.at.set(Instant::now());
        self.token.cancel();
    }
}

/// The key of a call a client may cancel: its session (none for a server without sessions) and request id.
fn cancel_key(session: Option<&str>, id: &Value) -> String {
    format!("{}\u{0}{}", session.unwrap_or_default(), id_key(id))
}

/// How long open exchanges get to finish once the front is told to stop (a hung call is cut after it).
const STOP_GRACE: Duration = Duration::from_secs(1);

/// A running HTTP front.
pub struct HttpFront {
    /// Where clients send their requests: the upstream's path on the front's address.
    pub url: String,
    pub local_addr: SocketAddr,
    /// The server it forwards to.
    pub upstream: String,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl HttpFront {
    /// Stops accepting, gives open exchanges a moment to finish, then cuts them.
    pub async fn stop(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

/// Runs the front until the task is dropped.
pub async fn run(options: HttpProxyOptions) -> Result<(), HttpProxyError> {
    let front = start(options).await?;
    // Tests and scripts read the bound address (with `--listen 127.0.0.1:0`) from this line.
    eprintln!(
        "fault mcp-proxy: listening on {} -> {}",
        front.url, front.upstream
    );
    let _ = front.task.await;
    Ok(())
}

/// Binds the front and serves it in a task of its own.
pub async fn start(options: HttpProxyOptions) -> Result<HttpFront, HttpProxyError> {
    let upstream = options.upstream;
    let mut decider = Decider::new(&options.plan)?;
    let events = match &options.events {
        Some(path) => Some(EventLog::create(path)?),
        None => None,
    };
    let recorder = Recorder::new(events, options.observer);
    recorder.prepare(&mut decider);
    let transparent = decider.is_empty() && !recorder.is_active();
    let notifies = decider.hides_tools();
    let learns = decider.learned().is_some();
    let listener =
        TcpListener::bind(options.listen)
            .await
            .map_err(|source| HttpProxyError::Listen {
                addr: options.listen,
                source,
            })?;
    let local = listener
        .local_addr()
        .map_err(|source| HttpProxyError::Listen {
            addr: options.listen,
            source,
        })?;
    if !local.ip().is_loopback() {
        tracing::warn!("mcp-proxy: listening on {local}, beyond this machine");
    }
    let url = format!("http://{local}{}", upstream.uri.path());
    let upstream_text = upstream.uri.to_string();
    let proxy = Arc::new(Proxy {
        upstream,
        mode: options.plan.mode,
        transparent,
        engine: Mutex::new(Engine {
            decider,
            recorder,
            expired: HashSet::new(),
            expired_order: VecDeque::new(),
        }),
        cancels: Mutex::new(HashMap::new()),
        notifies,
        learns,
        streams: Streams::default(),
    });
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let stop = stop.clone();
        async move {
            crate::serve::accept::serve_connections(
                "mcp-proxy",
                listener,
                move |request| {
                    let proxy = proxy.clone();
                    async move { proxy.handle(request).await }
                },
                stop.cancelled_owned(),
                || {},
                STOP_GRACE,
            )
            .await;
        }
    });
    Ok(HttpFront {
        url,
        local_addr: local,
        upstream: upstream_text,
        stop,
        task,
    })
}

/// Why an exchange ends without an answer: the connection is closed (a `connection_drop`, a hang's
/// `on_cap: close`).
#[derive(Debug, thiserror::Error)]
#[error("fault mcp-proxy closed the connection")]
struct Dropped;

impl Proxy {
    fn engine(&self) -> std::sync::MutexGuard<'_, Engine> {
        self.engine.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn handle(
        self: Arc<Self>,
        req: Request<Incoming>,
    ) -> Result<Response<ProxyBody>, Dropped> {
        let session = req
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if let Some(session) = &session
            && self.engine().expired.contains(session)
        {
            return Ok(status_response(StatusCode::NOT_FOUND, &[], None));
        }
        let (parts, body) = req.into_parts();
        let body = match Limited::new(body, MAX_BODY).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(e) => {
                let text = format!("fault mcp-proxy: cannot read the request body: {e}");
                return Ok(status_response(
                    StatusCode::BAD_REQUEST,
                    &[],
                    Some((text.into_bytes(), "text/plain")),
                ));
            }
        };
        let envelope = if self.transparent || parts.method != Method::POST {
            None
        } else {
            Envelope::parse(&body)
        };
        if let Some(e) = &envelope
            && !e.is_request()
            && e.method.as_deref() == Some("notifications/cancelled")
        {
            // The server gets the notification too: it ends its own work, the proxy its injected waits.
            self.cancel_call(session.as_deref(), e);
        }
        // A report learns the tools' output schemas and annotations from the listing's answer.
        let tracked = envelope.filter(|e| {
            e.is_request()
                && e.method.as_deref().is_some_and(|m| {
                    let engine = self.engine();
                    m == "tools/call"
                        || (m == "tools/list" && engine.recorder.observes())
                        // The report counts tasks by the tool whose call made them.
                        || (m.starts_with("tasks/") && engine.recorder.observes())
                        || engine.decider.watches_method(m)
                })
        });
        let upstream_request = self.upstream_request(&parts, body);
        let Some(envelope) = tracked else {
            if let Some(session) = session
                && self.notifies
                && parts.method == Method::GET
            {
                return Ok(self.forward_stream(upstream_request, session).await);
            }
            return Ok(self.forward_untouched(upstream_request).await);
        };
        let accepts_sse = parts
            .headers
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.contains("text/event-stream"));
        let (call, composed) = {
            let mut engine = self.engine();
            let call = Call::decide(&mut engine.decider, &envelope);
            let composed = call.compose(&engine.decider);
            (call, composed)
        };
        let mut exchange = Exchange::new(self.clone(), call, session.as_deref());
        if exchange
            .call
            .as_ref()
            .is_some_and(|c| c.decision.notify_list_changed)
        {
            let sent = self.notify_streams(session.as_deref(), LIST_CHANGED);
            exchange.list_changed = !sent && accepts_sse;
            if !sent && !accepts_sse {
                tracing::warn!(
                    "mcp-proxy: no stream to send notifications/tools/list_changed on (no GET stream open, and the client does not accept SSE)"
                );
            }
        }
        exchange
            .run(upstream_request, composed, session.is_some())
            .await
    }

    /// Forwards a GET stream of `session`, ready to carry the proxy's own notifications between its events.
    async fn forward_stream(
        &self,
        request: Request<Full<Bytes>>,
        session: String,
    ) -> Response<ProxyBody> {
        let response = match self.send(request).await {
            Ok(response) => response,
            Err(e) => return bad_gateway(&e),
        };
        let (mut parts, body) = response.into_parts();
        parts.headers = end_to_end(&parts.headers);
        let is_stream = parts.status == StatusCode::OK
            && parts
                .headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.to_ascii_lowercase().starts_with("text/event-stream"));
        if !is_stream {
            return Response::from_parts(parts, body.map_err(BoxError::from).boxed());
        }
        let (inject, injected) = mpsc::unbounded_channel();
        self.streams().insert(session.clone(), inject.clone());
        let (out, rx) = mpsc::channel(64);
        let stream = GetStream {
            session,
            inject,
            injected,
            out,
        };
        tokio::spawn(stream.run(self.streams.clone(), body));
        Response::from_parts(parts, ChannelBody { rx }.boxed())
    }

    fn streams(&self) -> std::sync::MutexGuard<'_, HashMap<String, mpsc::UnboundedSender<Bytes>>> {
        self.streams.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Puts `message` on every open GET stream (the faults' state is the proxy's, so every session's tool list
    /// changed); whether `session` had one open.
    fn notify_streams(&self, session: Option<&str>, message: &[u8]) -> bool {
        let event = Bytes::from(sse::message_event(message));
        let mut reached = false;
        for (id, stream) in self.streams().iter() {
            let sent = stream.send(event.clone()).is_ok();
            reached |= sent && Some(id.as_str()) == session;
        }
        reached
    }

    fn cancels(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<CancelSignal>>> {
        self.cancels.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn cancel_call(&self, session: Option<&str>, notification: &Envelope) {
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

    fn upstream_request(&self, parts: &http::request::Parts, body: Bytes) -> Request<Full<Bytes>> {
        let path = parts
            .uri
            .path_and_query()
            .map_or("/", http::uri::PathAndQuery::as_str);
        let mut uri = http::uri::Builder::new().path_and_query(path);
        if let Some(scheme) = self.upstream.uri.scheme() {
            uri = uri.scheme(scheme.clone());
        }
        if let Some(authority) = self.upstream.uri.authority() {
            uri = uri.authority(authority.clone());
        }
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = parts.method.clone();
        *request.uri_mut() = uri.build().unwrap_or_else(|_| self.upstream.uri.clone());
        *request.headers_mut() = end_to_end(&parts.headers);
        // The client's Host named the proxy; the upstream gets its own.
        request.headers_mut().remove(header::HOST);
        request.headers_mut().remove(header::CONTENT_LENGTH);
        request
    }

    async fn send(&self, request: Request<Full<Bytes>>) -> Result<Response<Incoming>, String> {
        self.upstream
            .client
            .request(request)
            .await
            .map_err(|e| error_chain(&e))
    }

    async fn forward_untouched(&self, request: Request<Full<Bytes>>) -> Response<ProxyBody> {
        match self.send(request).await {
            Ok(response) => {
                let (mut parts, body) = response.into_parts();
                parts.headers = end_to_end(&parts.headers);
                Response::from_parts(parts, body.map_err(BoxError::from).boxed())
            }
            Err(e) => bad_gateway(&e),
        }
    }

    fn record(&self, call: &Call, end: CallEnd) {
        let mut engine = self.engine();
        let event = call.event(&engine.decider, end);
        engine.recorder.record(&event);
    }
}
