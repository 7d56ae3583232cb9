//! One tracked call's exchange over HTTP: the call's faults carried out on the request and on the server's
//! answer (a JSON body here, an SSE stream through [`sse_rewrite`]), and its event written once the client got
//! what it gets.

mod sse_rewrite;

use std::{
    convert::Infallible,
    sync::Arc,
    time::{Duration, Instant},
};

use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use serde_json::Value;
use tokio::sync::mpsc;

use self::sse_rewrite::SseRewrite;
use super::get_stream::ChannelBody;
use super::headers::{bad_gateway, end_to_end, http_outcome, status_response};
use super::{
    BoxError, CancelSignal, Dropped, MAX_BODY, MAX_EXPIRED_SESSIONS, Proxy, ProxyBody,
    SESSION_HEADER, cancel_key,
};
use crate::mcp_proxy::engine::{
    Call, CallProgress, Composed, LIST_CHANGED, connection_closed, reply_outcome, request_timed_out,
};
use crate::mcp_proxy::faults::{Action, HttpAction, OnCap};
use crate::mcp_wire::jsonrpc::{Envelope, Outcome, Reply, id_key};
use crate::mcp_wire::sse;

/// The JSON-RPC errors MCP 2026-07-28 answers with HTTP 400 over Streamable HTTP: HEADER_MISMATCH,
/// MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION.
const ANSWERED_400: [i64; 3] = [-32020, -32021, -32022];

/// One tracked call's exchange. Dropped before its end (the client closed the request), it records the
/// call as cancelled.
pub(super) struct Exchange {
    proxy: Arc<Proxy>,
    pub(super) call: Option<Call>,
    progress: CallProgress,
    /// An injected wait (delay, hang) is in progress.
    waiting: bool,
    cancel: Arc<CancelSignal>,
    cancel_key: String,
    /// `notifications/tools/list_changed` goes first on this call's answer (made an SSE stream).
    pub(super) list_changed: bool,
}

impl Exchange {
    pub(super) fn new(proxy: Arc<Proxy>, call: Call, session: Option<&str>) -> Self {
        let cancel = Arc::new(CancelSignal::default());
        let cancel_key = cancel_key(session, &call.id);
        proxy.cancels().insert(cancel_key.clone(), cancel.clone());
        Self {
            proxy,
            call: Some(call),
            progress: CallProgress::default(),
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

    /// The call's event is written, the client having received `client`.
    /// The server's side broke off before its answer.
    pub(super) fn upstream_broke(&mut self) {
        self.progress.upstream = Some(Outcome::Pending);
    }

    pub(super) fn finish(&mut self, client: Outcome) {
        let Some(call) = self.call.take() else {
            return;
        };
        if let Some(&at) = self.cancel.at.get() {
            self.progress.cancelled(at, self.waiting);
        }
        self.proxy.record(&call, self.progress.end(&call, client));
    }

    async fn send(&mut self, request: Request<Full<Bytes>>) -> Result<Response<Incoming>, String> {
        self.progress.forwarded();
        let sent = self.proxy.send(request).await;
        if let Err(e) = &sent {
            self.progress.upstream = Some(Outcome::Error {
                code: 502,
                message: e.clone(),
            });
        }
        sent
    }

    /// Answers `reply` in the server's place.
    fn reply(&mut self, reply: &Reply) -> Response<ProxyBody> {
        let mut line = reply.line(&self.id());
        // The report reads what the client was told (e.g. a Retry-After) before the call's event.
        self.proxy.engine().recorder.client_line(&line);
        self.finish(reply_outcome(reply));
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        let (mut parts, ()) = Response::new(()).into_parts();
        parts.headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Reply::Error { code, .. } = reply
            && ANSWERED_400.contains(code)
        {
            parts.status = StatusCode::BAD_REQUEST;
        }
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

    pub(super) async fn run(
        mut self,
        request: Request<Full<Bytes>>,
        composed: Composed,
        has_session: bool,
    ) -> Result<Response<ProxyBody>, Dropped> {
        if !self.wait(composed.request_delay).await {
            return Ok(self.cancelled());
        }
        let cut = match composed.terminal.clone() {
            None => AnswerCut::default(),
            Some(Action::Reply {
                after,
                reply,
                call_upstream,
            }) => {
                if call_upstream && let Ok(response) = self.send(request).await {
                    let status = response.status();
                    let body = response.into_body().collect().await;
                    self.progress.answered(match body {
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
                    self.progress.forwarded();
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
            Some(Action::CrashServer { after, .. }) => AnswerCut {
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
                if let Some(wait) = headers
                    .iter()
                    .find(|(name, _)| name.eq_ignore_ascii_case("retry-after"))
                    .and_then(|(_, value)| retry_after_ms(value))
                {
                    self.proxy.engine().recorder.retry_after(&self.id(), wait);
                }
                self.finish(http_outcome(status));
                return Ok(status_response(status, &headers, body));
            }
            Some(Action::Http(HttpAction::CutStream { after_events })) => AnswerCut {
                after_events: Some(after_events),
                after: None,
            },
            // A session expiry on a request without a session, and the actions `compose` never ends on.
            Some(_) => AnswerCut::default(),
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
            // The server's own 429 or 503 may ask for a wait too.
            if let Some(wait) = parts
                .headers
                .get(header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(retry_after_ms)
            {
                self.proxy.engine().recorder.retry_after(&self.id(), wait);
            }
            self.progress.answered(http_outcome(parts.status));
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
        if let Some(after) = cut.after {
            tokio::time::sleep(after).await;
        }
        if cut.is_set() {
            self.progress.answered(Outcome::of_line(&bytes));
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
    pub(super) async fn answer(
        &mut self,
        message: Vec<u8>,
        composed: &Composed,
    ) -> Option<Vec<u8>> {
        self.progress.answered(Outcome::of_line(&message));
        if let Some(call) = self.call.as_ref().filter(|_| self.proxy.learns) {
            call.learn_line(&mut self.proxy.engine().decider, &message);
        }
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
        let client = Outcome::of_answer(&out, &self.id());
        self.finish(client);
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
    pub(super) fn answers(&self, message: &[u8]) -> bool {
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
        // Closing the request is the cancellation, unless the client sent one first.
        let at = self.cancel.at.get().copied().unwrap_or_else(Instant::now);
        self.progress.cancelled(at, self.waiting);
        self.proxy
            .record(&call, self.progress.end(&call, Outcome::None));
    }
}

/// Where a forwarded answer is cut short.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct AnswerCut {
    pub(super) after_events: Option<u64>,
    pub(super) after: Option<Duration>,
}

impl AnswerCut {
    fn is_set(&self) -> bool {
        self.after_events.is_some() || self.after.is_some()
    }
}

/// A `Retry-After` header's wait in ms (seconds or an HTTP date).
fn retry_after_ms(value: &str) -> Option<f64> {
    crate::http1::retry_after(value, std::time::SystemTime::now())
        .map(|wait| wait.as_secs_f64() * 1000.0)
}
