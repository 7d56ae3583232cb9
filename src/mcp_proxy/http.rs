//! The Streamable HTTP front: a reverse proxy in front of an MCP server's HTTP endpoint. POST, GET and DELETE
//! are forwarded with every end-to-end header both ways (`Mcp-Session-Id`, `MCP-Protocol-Version`,
//! `Authorization`, `Last-Event-ID`, …); a POSTed request goes through the same fault engine as on stdio, and
//! its answer, a JSON body or an SSE stream, is read message by message (event ids kept). Status answers
//! (202, 4xx, 5xx) and every other exchange pass untouched. A client's `notifications/cancelled` (POSTed in
//! the call's session) or closing the call's HTTP request ends the waits injected into it, as on stdio. A
//! `drop_tool`'s `notifications/tools/list_changed` goes on every open GET stream, and first on the SSE answer of
//! the call that made the tool disappear when its client has no GET stream open.

use std::{
    collections::{HashMap, HashSet, VecDeque},
    convert::Infallible,
    net::SocketAddr,
    pin::Pin,
    sync::{Arc, Mutex, OnceLock},
    task::{Context, Poll},
    time::{Duration, Instant},
};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::{net::TcpListener, sync::mpsc};
use tokio_util::sync::CancellationToken;

use super::decide::Decider;
use super::engine::{
    Call, Composed, Ending, LIST_CHANGED, Observer, Recorder, connection_closed, reply_outcome,
    request_timed_out,
};
use super::events::{CancelRecord, EventLog};
use super::faults::{Action, HttpAction, OnCap};
use super::jsonrpc::{Envelope, Outcome, Reply, id_key};
use super::plan::{Mode, Plan};
use super::sse;
use super::upstream::Upstream;

/// The largest request or JSON response body read whole.
const MAX_BODY: usize = 32 * 1024 * 1024;
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
    #[error("cannot create --events {path}: {source}")]
    Events {
        path: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Plan(String),
}

pub struct HttpProxyOptions {
    pub plan: Plan,
    pub upstream: Upstream,
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
    upstream: Upstream,
    mode: Mode,
    /// No faults and no records: forward without reading bodies.
    transparent: bool,
    engine: Mutex<Engine>,
    /// The tracked calls a client can cancel, by session and request id.
    cancels: Mutex<HashMap<String, Arc<CancelSignal>>>,
    /// A `drop_tool` may have to tell clients their tool list changed: GET streams are watched.
    notifies: bool,
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

/// Runs the proxy until the task is dropped.
pub async fn run(options: HttpProxyOptions) -> Result<(), HttpProxyError> {
    let upstream = options.upstream;
    let decider = Decider::new(&options.plan).map_err(|e| HttpProxyError::Plan(e.to_string()))?;
    let events = match &options.events {
        Some(path) => Some(
            EventLog::create(path).map_err(|source| HttpProxyError::Events {
                path: path.display().to_string(),
                source,
            })?,
        ),
        None => None,
    };
    let recorder = Recorder::new(events, options.observer);
    let transparent = decider.is_empty() && !recorder.is_active();
    let notifies = decider.hides_tools();
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
    // Tests and scripts read the bound address (with `--listen 127.0.0.1:0`) from this line.
    eprintln!(
        "fault mcp-proxy: listening on http://{local}{} -> {}",
        upstream.uri.path(),
        upstream.uri
    );
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
        streams: Streams::default(),
    });
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!("mcp-proxy: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let proxy = proxy.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let proxy = proxy.clone();
                async move { proxy.handle(req).await }
            });
            let served = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
            if let Err(e) = served {
                tracing::debug!("mcp-proxy: connection ended: {e}");
            }
        });
    }
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
        let tracked = envelope.filter(|e| {
            e.is_request()
                && e.method
                    .as_deref()
                    .is_some_and(|m| m == "tools/call" || self.engine().decider.watches_method(m))
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
        self.upstream.client.request(request).await.map_err(|e| {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                text = format!("{text}: {s}");
                source = s.source();
            }
            text
        })
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

    fn record(&self, call: &Call, ending: Ending) {
        let mut engine = self.engine();
        let event = call.event(&engine.decider, ending);
        engine.recorder.record(&event);
    }
}

/// One tracked call's exchange. Dropped before its end (the client closed the request), it records the
/// call as cancelled.
struct Exchange {
    proxy: Arc<Proxy>,
    call: Option<Call>,
    forwarded_at: Option<Instant>,
    upstream: Option<Outcome>,
    upstream_time: Option<Duration>,
    /// An injected wait (delay, hang) is in progress.
    waiting: bool,
    cancel: Arc<CancelSignal>,
    cancel_key: String,
    /// `notifications/tools/list_changed` goes first on this call's answer (made an SSE stream).
    list_changed: bool,
}

impl Exchange {
    fn new(proxy: Arc<Proxy>, call: Call, session: Option<&str>) -> Self {
        let cancel = Arc::new(CancelSignal::default());
        let cancel_key = cancel_key(session, &call.id);
        proxy.cancels().insert(cancel_key.clone(), cancel.clone());
        Self {
            proxy,
            call: Some(call),
            forwarded_at: None,
            upstream: None,
            upstream_time: None,
            waiting: false,
            cancel,
            cancel_key,
            list_changed: false,
        }
    }

    fn id(&self) -> Value {
        self.call.as_ref().map_or(Value::Null, |c| c.id.clone())
    }

    /// Holds the call for `delay`; false when the client cancelled it meanwhile (the wait then ends at once).
    async fn wait(&mut self, delay: Duration) -> bool {
        if delay.is_zero() {
            return !self.cancel.token.is_cancelled();
        }
        self.waiting = true;
        tokio::select! {
            () = tokio::time::sleep(delay) => {
                self.waiting = false;
                true
            }
            () = self.cancel.token.cancelled() => false,
        }
    }

    /// The client cancelled the call during an injected wait: the call ends without an answer, and the
    /// client's request gets an SSE stream that ends at once (as a server closes a cancelled request's stream).
    fn cancelled(&mut self) -> Response<ProxyBody> {
        self.finish(Outcome::None);
        let mut response = status_response(StatusCode::OK, &[], None);
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        response
    }

    /// The cancellation to record, if the client sent one.
    fn cancel_record(&self, started: Instant) -> Option<CancelRecord> {
        self.cancel.at.get().map(|&at| CancelRecord {
            after_ms: super::engine::millis(at.saturating_duration_since(started)),
            ended_injected_wait: self.waiting,
            released_ms: super::engine::millis(at.elapsed()),
        })
    }

    fn finish(&mut self, client: Outcome) {
        let Some(call) = self.call.take() else {
            return;
        };
        let upstream = match (&self.upstream, self.forwarded_at) {
            (Some(outcome), _) => outcome.clone(),
            (None, Some(_)) => Outcome::Pending,
            (None, None) => Outcome::None,
        };
        let cancel = self.cancel_record(call.started);
        self.proxy.record(
            &call,
            Ending {
                upstream,
                client,
                upstream_time: self.upstream_time,
                cancel,
            },
        );
    }

    async fn send(&mut self, request: Request<Full<Bytes>>) -> Result<Response<Incoming>, String> {
        self.forwarded_at = Some(Instant::now());
        let sent = self.proxy.send(request).await;
        if let Err(e) = &sent {
            self.upstream = Some(Outcome::Error {
                code: 502,
                message: e.clone(),
            });
        }
        sent
    }

    /// Answers `reply` in the server's place.
    fn reply(&mut self, reply: &Reply) -> Response<ProxyBody> {
        let mut line = reply.line(&self.id());
        self.finish(reply_outcome(reply));
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        let (mut parts, ()) = Response::new(()).into_parts();
        parts.headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        self.answer_response(parts, line)
    }

    /// The call's answer `message` as the client gets it: a JSON body, or an SSE stream with the tool list's
    /// change first.
    fn answer_response(
        &mut self,
        mut parts: http::response::Parts,
        message: Vec<u8>,
    ) -> Response<ProxyBody> {
        let body = if std::mem::take(&mut self.list_changed) {
            parts.headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream"),
            );
            parts.headers.remove(header::CONTENT_LENGTH);
            let mut body = sse::message_event(LIST_CHANGED);
            body.extend(sse::message_event(&message));
            body
        } else {
            message
        };
        Response::from_parts(
            parts,
            Full::new(Bytes::from(body))
                .map_err(|e: Infallible| match e {})
                .boxed(),
        )
    }

    async fn run(
        mut self,
        request: Request<Full<Bytes>>,
        composed: Composed,
        has_session: bool,
    ) -> Result<Response<ProxyBody>, Dropped> {
        if !self.wait(composed.request_delay).await {
            return Ok(self.cancelled());
        }
        let cut = match composed.terminal.clone() {
            None => Cut::default(),
            Some(Action::Reply {
                after,
                reply,
                call_upstream,
            }) => {
                if call_upstream && let Ok(response) = self.send(request).await {
                    let status = response.status();
                    let body = response.into_body().collect().await;
                    self.upstream_time = self.forwarded_at.map(|at| at.elapsed());
                    self.upstream = Some(match body {
                        Ok(_) if status.is_success() => Outcome::Result,
                        _ => http_outcome(status),
                    });
                }
                if !self.wait(after + composed.response_delay).await {
                    return Ok(self.cancelled());
                }
                return Ok(self.reply(&reply));
            }
            Some(Action::Hang {
                forward,
                max_hold,
                on_cap,
            }) => {
                if forward {
                    // The server runs the call; its answer is never delivered.
                    let proxy = self.proxy.clone();
                    self.forwarded_at = Some(Instant::now());
                    tokio::spawn(async move {
                        if let Ok(response) = proxy.send(request).await {
                            let _ = response.into_body().collect().await;
                        }
                    });
                }
                if !self.wait(max_hold).await {
                    return Ok(self.cancelled());
                }
                return match on_cap {
                    OnCap::Drop => {
                        // Held until the client cancels the call or closes its request.
                        self.waiting = true;
                        self.cancel.token.cancelled().await;
                        Ok(self.cancelled())
                    }
                    OnCap::Error => Ok(self.reply(&request_timed_out())),
                    OnCap::Close => {
                        self.finish(Outcome::None);
                        Err(Dropped)
                    }
                };
            }
            Some(Action::CloseClient) => {
                self.finish(Outcome::None);
                return Err(Dropped);
            }
            Some(Action::CrashServer { after, .. }) => Cut {
                after_events: None,
                after: Some(after),
            },
            Some(Action::Http(HttpAction::Status {
                status,
                headers,
                body,
                expires_session,
            })) if has_session || !expires_session => {
                if expires_session {
                    self.expire_session(&request);
                }
                let status =
                    StatusCode::from_u16(status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
                self.finish(http_outcome(status));
                return Ok(status_response(status, &headers, body));
            }
            Some(Action::Http(HttpAction::CutStream { after_events })) => Cut {
                after_events: Some(after_events),
                after: None,
            },
            // A session expiry on a request without a session, and the actions `compose` never ends on.
            Some(_) => Cut::default(),
        };
        let response = match self.send(request).await {
            Ok(response) => response,
            Err(e) => {
                let reply = connection_closed();
                tracing::warn!("mcp-proxy: upstream request failed: {e}");
                self.finish(reply_outcome(&reply));
                return Ok(bad_gateway(&e));
            }
        };
        let (mut parts, body) = response.into_parts();
        parts.headers = end_to_end(&parts.headers);
        let content_type = parts
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_ascii_lowercase();
        if parts.status != StatusCode::OK {
            self.upstream_time = self.forwarded_at.map(|at| at.elapsed());
            self.upstream = Some(http_outcome(parts.status));
            self.finish(http_outcome(parts.status));
            return Ok(Response::from_parts(
                parts,
                body.map_err(BoxError::from).boxed(),
            ));
        }
        parts.headers.remove(header::CONTENT_LENGTH);
        if content_type.starts_with("text/event-stream") {
            let (tx, rx) = mpsc::channel(64);
            let stream = SseRewrite {
                exchange: self,
                composed,
                cut,
                events: 0,
                out: tx,
            };
            tokio::spawn(stream.run(body));
            return Ok(Response::from_parts(parts, ChannelBody { rx }.boxed()));
        }
        let bytes = match Limited::new(body, MAX_BODY).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(e) => {
                self.finish(Outcome::Pending);
                tracing::warn!("mcp-proxy: cannot read the upstream answer: {e}");
                return Err(Dropped);
            }
        };
        self.upstream_time = self.forwarded_at.map(|at| at.elapsed());
        if let Some(after) = cut.after {
            tokio::time::sleep(after).await;
        }
        if cut.is_set() {
            self.upstream = Some(Outcome::of_line(&bytes));
            self.finish(Outcome::None);
            let (tx, rx) = mpsc::channel(1);
            let _ = tx.try_send(Err(BoxError::from(Dropped)));
            return Ok(Response::from_parts(parts, ChannelBody { rx }.boxed()));
        }
        let Some(out) = self.answer(bytes.to_vec(), &composed).await else {
            return Ok(self.cancelled());
        };
        Ok(self.answer_response(parts, out))
    }

    /// The server's answer message with the faults' rewrites and delay applied; the call's event is written.
    /// `None` when the client cancelled the call while its answer was held.
    async fn answer(&mut self, message: Vec<u8>, composed: &Composed) -> Option<Vec<u8>> {
        self.upstream_time = self.forwarded_at.map(|at| at.elapsed());
        self.upstream = Some(Outcome::of_line(&message));
        let out = match &self.call {
            Some(call)
                if !composed.passes_response() || self.proxy.engine().decider.hides_tools() =>
            {
                let engine = self.proxy.engine();
                let mut out = call.rewrite_response(
                    &engine.decider,
                    self.proxy.mode,
                    message,
                    &composed.rewrites,
                );
                if out.last() == Some(&b'\n') {
                    out.pop();
                }
                out
            }
            _ => message,
        };
        if !self.wait(composed.response_delay).await {
            return None;
        }
        self.proxy.engine().recorder.client_line(&out);
        self.finish(Outcome::of_line(&out));
        Some(out)
    }

    fn expire_session(&self, request: &Request<Full<Bytes>>) {
        let Some(session) = request
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
        else {
            return;
        };
        let mut engine = self.proxy.engine();
        if engine.expired.insert(session.to_owned()) {
            engine.expired_order.push_back(session.to_owned());
            if engine.expired_order.len() > MAX_EXPIRED_SESSIONS
                && let Some(old) = engine.expired_order.pop_front()
            {
                engine.expired.remove(&old);
            }
        }
    }

    /// Whether `message` is the answer to this call.
    fn answers(&self, message: &[u8]) -> bool {
        let Some(call) = &self.call else {
            return false;
        };
        Envelope::parse(message)
            .filter(Envelope::is_response)
            .and_then(|e| e.id)
            .is_some_and(|id| id_key(&id) == id_key(&call.id))
    }
}

impl Drop for Exchange {
    fn drop(&mut self) {
        {
            let mut cancels = self.proxy.cancels();
            // A later call may have reused the id in the session.
            if cancels
                .get(&self.cancel_key)
                .is_some_and(|signal| Arc::ptr_eq(signal, &self.cancel))
            {
                cancels.remove(&self.cancel_key);
            }
        }
        let Some(call) = self.call.take() else {
            return;
        };
        let upstream = match (&self.upstream, self.forwarded_at) {
            (Some(outcome), _) => outcome.clone(),
            (None, Some(_)) => Outcome::Pending,
            (None, None) => Outcome::None,
        };
        // Closing the request is the cancellation, unless the client sent one first.
        let cancel = self.cancel_record(call.started).unwrap_or(CancelRecord {
            after_ms: super::engine::millis(call.started.elapsed()),
            ended_injected_wait: self.waiting,
            released_ms: 0.0,
        });
        self.proxy.record(
            &call,
            Ending {
                upstream,
                client: Outcome::None,
                upstream_time: self.upstream_time,
                cancel: Some(cancel),
            },
        );
    }
}

/// Where a forwarded answer is cut short.
#[derive(Debug, Default, Clone, Copy)]
struct Cut {
    after_events: Option<u64>,
    after: Option<Duration>,
}

impl Cut {
    fn is_set(&self) -> bool {
        self.after_events.is_some() || self.after.is_some()
    }
}

/// An SSE answer, read event by event: the call's answer goes through the faults, other events (progress,
/// logs, server requests) pass as they are, ids included.
struct SseRewrite {
    exchange: Exchange,
    composed: Composed,
    cut: Cut,
    events: u64,
    out: mpsc::Sender<Result<Bytes, BoxError>>,
}

impl SseRewrite {
    async fn run(mut self, mut body: Incoming) {
        if std::mem::take(&mut self.exchange.list_changed) {
            let event = Bytes::from(sse::message_event(LIST_CHANGED));
            if self.out.send(Ok(event)).await.is_err() {
                return;
            }
        }
        let deadline = self
            .cut
            .after
            .map(|after| tokio::time::Instant::now() + after);
        let mut splitter = sse::EventSplitter::default();
        loop {
            let frame = tokio::select! {
                frame = body.frame() => frame,
                () = sleep_until(deadline) => {
                    self.cut_now().await;
                    return;
                }
                () = self.out.closed() => return,
            };
            match frame {
                Some(Ok(frame)) => {
                    let Ok(data) = frame.into_data() else {
                        continue;
                    };
                    for event in splitter.push(&data) {
                        if !self.event(event).await {
                            return;
                        }
                    }
                }
                Some(Err(e)) => {
                    let _ = self.out.send(Err(BoxError::from(e))).await;
                    self.exchange.upstream = Some(Outcome::Pending);
                    self.exchange.finish(Outcome::None);
                    return;
                }
                None => break,
            }
        }
        let rest = splitter.rest();
        if !rest.is_empty() {
            let _ = self.out.send(Ok(Bytes::from(rest))).await;
        }
        // The stream ended without the call's answer.
        self.exchange.finish(Outcome::None);
    }

    /// Passes (or rewrites) one event; false once the stream is over for the client.
    async fn event(&mut self, event: Vec<u8>) -> bool {
        if self
            .cut
            .after_events
            .is_some_and(|limit| self.events >= limit)
        {
            self.cut_now().await;
            return false;
        }
        self.events += 1;
        let event = match sse::data(&event) {
            Some(data) if self.exchange.answers(&data) => {
                let Some(message) = self.exchange.answer(data, &self.composed).await else {
                    // Cancelled while held: the stream ends without the answer.
                    self.exchange.finish(Outcome::None);
                    return false;
                };
                sse::with_data(&event, &message)
            }
            _ => event,
        };
        self.out.send(Ok(Bytes::from(event))).await.is_ok()
    }

    async fn cut_now(&mut self) {
        let _ = self.out.send(Err(BoxError::from(Dropped))).await;
        self.exchange.finish(Outcome::None);
    }
}

/// A session's GET stream, passed event by event, with the proxy's own notifications put between events.
struct GetStream {
    session: String,
    /// This stream's entry in the proxy's streams (to remove only its own at the end).
    inject: mpsc::UnboundedSender<Bytes>,
    injected: mpsc::UnboundedReceiver<Bytes>,
    out: mpsc::Sender<Result<Bytes, BoxError>>,
}

impl GetStream {
    async fn run(mut self, streams: Streams, mut body: Incoming) {
        let mut splitter = sse::EventSplitter::default();
        loop {
            let chunk = tokio::select! {
                frame = body.frame() => match frame {
                    Some(Ok(frame)) => match frame.into_data() {
                        Ok(data) => splitter.push(&data).into_iter().map(Bytes::from).collect(),
                        Err(_) => continue,
                    },
                    Some(Err(e)) => {
                        let _ = self.out.send(Err(BoxError::from(e))).await;
                        break;
                    }
                    None => {
                        let rest = std::mem::take(&mut splitter).rest();
                        if !rest.is_empty() {
                            let _ = self.out.send(Ok(Bytes::from(rest))).await;
                        }
                        break;
                    }
                },
                Some(event) = self.injected.recv() => vec![event],
                () = self.out.closed() => break,
            };
            for event in chunk {
                if self.out.send(Ok(event)).await.is_err() {
                    break;
                }
            }
        }
        let mut streams = streams.lock().unwrap_or_else(|p| p.into_inner());
        if streams
            .get(&self.session)
            .is_some_and(|s| s.same_channel(&self.inject))
        {
            streams.remove(&self.session);
        }
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// A response body fed by a task; an `Err` aborts it (the client sees the stream break).
struct ChannelBody {
    rx: mpsc::Receiver<Result<Bytes, BoxError>>,
}

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        self.rx
            .poll_recv(cx)
            .map(|next| next.map(|chunk| chunk.map(Frame::data)))
    }
}

/// The headers without the hop-by-hop ones (and those `Connection` names).
fn end_to_end(headers: &HeaderMap) -> HeaderMap {
    const HOP_BY_HOP: &[&str] = &[
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    ];
    let named: Vec<String> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|name| name.trim().to_ascii_lowercase())
        .collect();
    let mut out = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        let name_str = name.as_str();
        if HOP_BY_HOP.contains(&name_str) || named.iter().any(|n| n == name_str) {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    out
}

fn http_outcome(status: StatusCode) -> Outcome {
    Outcome::Error {
        code: i64::from(status.as_u16()),
        message: format!("HTTP {status}"),
    }
}

fn status_response(
    status: StatusCode,
    headers: &[(String, String)],
    body: Option<(Vec<u8>, &'static str)>,
) -> Response<ProxyBody> {
    let (bytes, content_type) = body.unwrap_or_default();
    let mut response = Response::new(
        Full::new(Bytes::from(bytes))
            .map_err(|e: Infallible| match e {})
            .boxed(),
    );
    *response.status_mut() = status;
    if !content_type.is_empty() {
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    }
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

fn bad_gateway(error: &str) -> Response<ProxyBody> {
    let text = format!("fault mcp-proxy: the upstream did not answer: {error}");
    status_response(
        StatusCode::BAD_GATEWAY,
        &[],
        Some((text.into_bytes(), "text/plain")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_by_hop_headers_are_dropped_and_mcp_headers_kept() {
        let mut headers = HeaderMap::new();
        for (name, value) in [
            ("connection", "keep-alive, x-hop"),
            ("keep-alive", "timeout=5"),
            ("x-hop", "1"),
            ("transfer-encoding", "chunked"),
            ("mcp-session-id", "abc"),
            ("mcp-protocol-version", "2025-06-18"),
            ("authorization", "Bearer t"),
            ("last-event-id", "7"),
        ] {
            headers.insert(
                http::HeaderName::from_static(name),
                HeaderValue::from_static(value),
            );
        }
        let kept = end_to_end(&headers);
        let names: Vec<&str> = kept.keys().map(http::HeaderName::as_str).collect();
        assert_eq!(
            names,
            [
                "mcp-session-id",
                "mcp-protocol-version",
                "authorization",
                "last-event-id"
            ]
        );
    }
}
