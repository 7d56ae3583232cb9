//! The stdio relay's server when it is a Streamable HTTP endpoint (`fault mcp-proxy --upstream URL` without
//! `--listen`): each line the relay sends is POSTed, and what comes back (a JSON body, the events of an SSE
//! answer, the events of the session's GET stream) becomes lines, so every stdio fault applies unchanged. The
//! session id and protocol version the server gives are sent back on every later request; closing the relay's
//! side ends the session with DELETE.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{HeaderValue, Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use serde_json::Value;
use tokio::sync::mpsc;

use super::jsonrpc::{Envelope, Reply};
use super::sse;

use super::upstream::Upstream;

/// What later requests carry: the session id and protocol version the server gave.
#[derive(Default)]
struct Session {
    id: Option<HeaderValue>,
    protocol_version: Option<HeaderValue>,
}

#[derive(Clone)]
struct Bridge {
    upstream: Upstream,
    session: Arc<Mutex<Session>>,
    lines_out: mpsc::UnboundedSender<Vec<u8>>,
}

/// Starts the bridge: lines sent to the returned sender are POSTed to the upstream; the server's messages come out of
/// the returned receiver, one line each. The receiver ends once the sender is dropped and the session ended.
pub fn spawn(
    upstream: Upstream,
) -> (
    mpsc::UnboundedSender<Vec<u8>>,
    mpsc::UnboundedReceiver<Vec<u8>>,
    tokio::task::JoinHandle<()>,
) {
    let (lines_in, mut to_post) = mpsc::unbounded_channel::<Vec<u8>>();
    let (lines_out, from_server) = mpsc::unbounded_channel();
    let bridge = Bridge {
        upstream,
        session: Arc::new(Mutex::new(Session::default())),
        lines_out,
    };
    let task = tokio::spawn(async move {
        while let Some(line) = to_post.recv().await {
            let envelope = Envelope::parse(&line);
            let is_request = envelope.as_ref().is_some_and(Envelope::is_request);
            let is_initialize =
                envelope.as_ref().and_then(|e| e.method.as_deref()) == Some("initialize");
            if is_request && !is_initialize {
                // Requests run side by side; notifications, responses and initialize go in order.
                tokio::spawn(bridge.clone().post(line, envelope));
            } else {
                bridge.clone().post(line, envelope).await;
            }
        }
        bridge.end_session().await;
    });
    (lines_in, from_server, task)
}

impl Bridge {
    fn session(&self) -> std::sync::MutexGuard<'_, Session> {
        self.session.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn request(&self, method: Method, body: Vec<u8>) -> Request<Full<Bytes>> {
        let mut request = Request::new(Full::new(Bytes::from(body)));
        *request.method_mut() = method;
        *request.uri_mut() = self.upstream.uri.clone();
        let headers = request.headers_mut();
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        let session = self.session();
        if let Some(id) = &session.id {
            headers.insert("mcp-session-id", id.clone());
        }
        if let Some(version) = &session.protocol_version {
            headers.insert("mcp-protocol-version", version.clone());
        }
        request
    }

    fn send_line(&self, message: &[u8]) {
        // One line per message: a pretty-printed body is compacted.
        let mut line = if message.contains(&b'\n') {
            match serde_json::from_slice::<Value>(message) {
                Ok(value) => value.to_string().into_bytes(),
                Err(_) => message.iter().copied().filter(|b| *b != b'\n').collect(),
            }
        } else {
            message.to_vec()
        };
        line.push(b'\n');
        let _ = self.lines_out.send(line);
    }

    /// The client gets an error for its request instead of an answer.
    fn fail(&self, envelope: Option<&Envelope>, message: String) {
        if let Some(id) = envelope
            .filter(|e| e.is_request())
            .and_then(|e| e.id.as_ref())
        {
            let _ = self.lines_out.send(
                Reply::Error {
                    code: -32000,
                    message,
                    data: None,
                }
                .line(id),
            );
        }
    }

    async fn post(self, line: Vec<u8>, envelope: Option<Envelope>) {
        let request = self.request(Method::POST, line);
        let response = match self.upstream.client.request(request).await {
            Ok(response) => response,
            Err(e) => {
                tracing::warn!("mcp-proxy: POST to {} failed: {e}", self.upstream.uri);
                self.fail(envelope.as_ref(), format!("Connection closed: {e}"));
                return;
            }
        };
        let status = response.status();
        if status == StatusCode::ACCEPTED {
            return;
        }
        if !status.is_success() {
            let body = response.into_body().collect().await.map(|b| b.to_bytes());
            let text = body
                .as_ref()
                .map(|b| String::from_utf8_lossy(b).trim().to_owned())
                .unwrap_or_default();
            // A JSON-RPC error in the body is the server's answer; else the status stands for it.
            match body {
                Ok(bytes) if Envelope::parse(&bytes).is_some_and(|e| e.error.is_some()) => {
                    self.answer_with_request_id(&bytes, envelope.as_ref())
                }
                _ => self.fail(envelope.as_ref(), format!("HTTP {status} {text}")),
            }
            return;
        }
        let is_initialize =
            envelope.as_ref().and_then(|e| e.method.as_deref()) == Some("initialize");
        if is_initialize && let Some(id) = response.headers().get("mcp-session-id") {
            self.session().id = Some(id.clone());
        }
        let is_sse = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let mut answered = false;
        if is_sse {
            answered = self.relay_events(response.into_body(), is_initialize).await;
        } else if let Ok(body) = response.into_body().collect().await {
            let bytes = body.to_bytes();
            if !bytes.is_empty() {
                if is_initialize {
                    self.note_protocol_version(&bytes);
                }
                self.send_line(&bytes);
                answered = true;
            }
        }
        if !answered {
            self.fail(
                envelope.as_ref(),
                "Connection closed: the server's stream ended without an answer".into(),
            );
        }
        if is_initialize && self.session().id.is_some() {
            tokio::spawn(self.clone().listen());
        }
    }

    /// A JSON-RPC error the server sent with a status, on the request's own id.
    fn answer_with_request_id(&self, bytes: &[u8], envelope: Option<&Envelope>) {
        let mut value: Value = serde_json::from_slice(bytes).unwrap_or_default();
        if value.get("id").is_none_or(Value::is_null)
            && let Some(id) = envelope.and_then(|e| e.id.clone())
        {
            value["id"] = id;
        }
        self.send_line(value.to_string().as_bytes());
    }

    fn note_protocol_version(&self, message: &[u8]) {
        let version = serde_json::from_slice::<Value>(message).ok().and_then(|v| {
            v.pointer("/result/protocolVersion")
                .and_then(Value::as_str)
                .and_then(|s| HeaderValue::from_str(s).ok())
        });
        if version.is_some() {
            self.session().protocol_version = version;
        }
    }

    /// Passes the events of an SSE body on as lines; true when one was a response.
    async fn relay_events(&self, mut body: Incoming, is_initialize: bool) -> bool {
        let mut splitter = sse::EventSplitter::default();
        let mut answered = false;
        loop {
            // Ends with the relay's side (the server was "killed" by a fault, or the relay stopped).
            let frame = tokio::select! {
                frame = body.frame() => frame,
                () = self.lines_out.closed() => return answered,
            };
            let Some(Ok(frame)) = frame else { break };
            let Ok(chunk) = frame.into_data() else {
                continue;
            };
            for event in splitter.push(&chunk) {
                let Some(data) = sse::data(&event).filter(|d| !d.is_empty()) else {
                    continue;
                };
                if Envelope::parse(&data).is_some_and(|e| e.is_response()) {
                    if is_initialize {
                        self.note_protocol_version(&data);
                    }
                    answered = true;
                }
                self.send_line(&data);
            }
        }
        answered
    }

    /// The session's GET stream: messages the server starts (notifications, requests). A 405 means none.
    async fn listen(self) {
        let mut request = self.request(Method::GET, Vec::new());
        request.headers_mut().remove(header::CONTENT_TYPE);
        request.headers_mut().insert(
            header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        match self.upstream.client.request(request).await {
            Ok(response) if response.status().is_success() => {
                self.relay_events(response.into_body(), false).await;
            }
            Ok(response) => tracing::debug!(
                "mcp-proxy: the server has no GET stream ({})",
                response.status()
            ),
            Err(e) => tracing::debug!("mcp-proxy: GET stream: {e}"),
        }
    }

    async fn end_session(&self) {
        if self.session().id.is_none() {
            return;
        }
        let mut request = self.request(Method::DELETE, Vec::new());
        request.headers_mut().remove(header::CONTENT_TYPE);
        let ended = tokio::time::timeout(
            std::time::Duration::from_secs(2),
            self.upstream.client.request(request),
        )
        .await;
        if let Ok(Err(e)) = ended {
            tracing::debug!("mcp-proxy: DELETE of the session: {e}");
        }
    }
}
