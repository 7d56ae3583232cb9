//! One Streamable HTTP client session: every message is its own POST, whose answer (a JSON body or the events
//! of an SSE stream) comes back message by message; the session id and protocol version the server gives in
//! the handshake go on every later request; the session's GET stream carries what the server starts; DELETE
//! ends it. Dropping a POST's future closes its request, which is how a client cancels over HTTP.

use std::{sync::Mutex, time::Duration};

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use serde_json::Value;

use super::endpoint::Endpoint;
use super::jsonrpc::{Envelope, MAX_MESSAGE_BYTES};
use super::sse;

pub const SESSION_HEADER: &str = "mcp-session-id";
pub const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";

/// What a POST came back with.
#[derive(Debug)]
pub enum Posted {
    /// 202: the server took the notification or response.
    Accepted,
    /// A success: its messages went to the caller; `answered` when a JSON body was not empty or an event
    /// carried a JSON-RPC response.
    Answered { answered: bool },
    /// Another status, with its body (up to [`MAX_MESSAGE_BYTES`]).
    Refused { status: StatusCode, body: Bytes },
}

#[derive(Debug, thiserror::Error)]
pub enum HttpSessionError {
    /// The request did not get a response (connection refused, reset, TLS, ...).
    #[error("{method} {uri}: {reason}")]
    Send {
        method: Method,
        uri: String,
        reason: String,
    },
    /// The response's body broke off or was too large.
    #[error("the answer from {uri} broke off: {reason}")]
    Body { uri: String, reason: String },
}

impl HttpSessionError {
    /// Whether nothing listens at the endpoint's address.
    pub fn is_connection_refused(&self) -> bool {
        matches!(self, HttpSessionError::Send { reason, .. } if reason.contains("Connection refused"))
    }
}

/// What later requests carry.
#[derive(Default)]
struct SessionState {
    id: Option<HeaderValue>,
    protocol_version: Option<HeaderValue>,
}

pub struct HttpSession {
    endpoint: Endpoint,
    /// Sent on every request (e.g. Authorization).
    headers: HeaderMap,
    state: Mutex<SessionState>,
}

impl HttpSession {
    pub fn new(endpoint: Endpoint, headers: HeaderMap) -> Self {
        Self {
            endpoint,
            headers,
            state: Mutex::default(),
        }
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    fn state(&self) -> std::sync::MutexGuard<'_, SessionState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the server gave the session an id.
    pub fn has_id(&self) -> bool {
        self.state().id.is_some()
    }

    fn request(&self, method: Method, body: Bytes) -> Request<Full<Bytes>> {
        let mut request = Request::new(Full::new(body));
        *request.uri_mut() = self.endpoint.uri.clone();
        let headers = request.headers_mut();
        headers.clone_from(&self.headers);
        let accept = if method == Method::GET {
            "text/event-stream"
        } else {
            "application/json, text/event-stream"
        };
        headers.insert(header::ACCEPT, HeaderValue::from_static(accept));
        if method == Method::POST {
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
        }
        let state = self.state();
        if let Some(id) = &state.id {
            headers.insert(SESSION_HEADER, id.clone());
        }
        if let Some(version) = &state.protocol_version {
            headers.insert(PROTOCOL_VERSION_HEADER, version.clone());
        }
        drop(state);
        *request.method_mut() = method;
        request
    }

    async fn send(
        &self,
        method: Method,
        body: Bytes,
    ) -> Result<http::Response<Incoming>, HttpSessionError> {
        let request = self.request(method.clone(), body);
        self.endpoint
            .client
            .request(request)
            .await
            .map_err(|e| HttpSessionError::Send {
                method,
                uri: self.endpoint.uri.to_string(),
                reason: error_chain(&e),
            })
    }

    /// POSTs one message; each message of the answer goes to `on_message` as it arrives.
    pub async fn post(
        &self,
        message: Bytes,
        mut on_message: impl FnMut(Bytes),
    ) -> Result<Posted, HttpSessionError> {
        let initialize = Envelope::parse(&message)
            .is_some_and(|e| e.is_request() && e.method.as_deref() == Some("initialize"));
        let response = self.send(Method::POST, message).await?;
        let status = response.status();
        if let Some(id) = response.headers().get(SESSION_HEADER) {
            self.state().id = Some(id.clone());
        }
        if status == StatusCode::ACCEPTED {
            return Ok(Posted::Accepted);
        }
        if !status.is_success() {
            let body = self
                .read_body(response.into_body())
                .await
                .unwrap_or_default();
            return Ok(Posted::Refused { status, body });
        }
        if is_event_stream(response.headers()) {
            let mut answered = false;
            self.read_events(response.into_body(), |data| {
                if Envelope::parse(&data).is_some_and(|e| e.is_response()) {
                    if initialize {
                        self.note_protocol_version(&data);
                    }
                    answered = true;
                }
                on_message(data);
            })
            .await?;
            return Ok(Posted::Answered { answered });
        }
        let body = self.read_body(response.into_body()).await?;
        if body.is_empty() {
            return Ok(Posted::Answered { answered: false });
        }
        if initialize {
            self.note_protocol_version(&body);
        }
        on_message(body);
        Ok(Posted::Answered { answered: true })
    }

    /// The session's GET stream: each message the server starts goes to `on_message`, until the stream ends.
    /// `Ok(false)` when the server has none (405, or another status).
    pub async fn listen(&self, on_message: impl FnMut(Bytes)) -> Result<bool, HttpSessionError> {
        let response = self.send(Method::GET, Bytes::new()).await?;
        if !response.status().is_success() || !is_event_stream(response.headers()) {
            return Ok(false);
        }
        self.read_events(response.into_body(), on_message).await?;
        Ok(true)
    }

    /// Ends the session with DELETE, waiting up to `grace`; nothing to do without a session id.
    pub async fn close(&self, grace: Duration) {
        if self.state().id.is_none() {
            return;
        }
        match tokio::time::timeout(grace, self.send(Method::DELETE, Bytes::new())).await {
            Ok(Err(e)) => tracing::debug!("DELETE of the MCP session: {e}"),
            Err(_) => tracing::debug!("DELETE of the MCP session: no answer within {grace:?}"),
            Ok(Ok(_)) => {}
        }
        self.state().id = None;
    }

    async fn read_body(&self, body: Incoming) -> Result<Bytes, HttpSessionError> {
        match Limited::new(body, MAX_MESSAGE_BYTES).collect().await {
            Ok(collected) => Ok(collected.to_bytes()),
            Err(e) => Err(HttpSessionError::Body {
                uri: self.endpoint.uri.to_string(),
                reason: e.to_string(),
            }),
        }
    }

    /// The data of each event of an SSE body, as the events complete (empty data, e.g. a priming event, skipped).
    async fn read_events(
        &self,
        mut body: Incoming,
        mut on_data: impl FnMut(Bytes),
    ) -> Result<(), HttpSessionError> {
        let mut splitter = sse::EventSplitter::default();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| HttpSessionError::Body {
                uri: self.endpoint.uri.to_string(),
                reason: error_chain(&e),
            })?;
            let Ok(chunk) = frame.into_data() else {
                continue;
            };
            for event in splitter.push(&chunk) {
                if let Some(data) = sse::data(&event).filter(|d| !d.is_empty()) {
                    on_data(Bytes::from(data));
                }
            }
            if splitter.pending() > MAX_MESSAGE_BYTES {
                return Err(HttpSessionError::Body {
                    uri: self.endpoint.uri.to_string(),
                    reason: format!("an event is over {MAX_MESSAGE_BYTES} bytes"),
                });
            }
        }
        Ok(())
    }

    fn note_protocol_version(&self, message: &[u8]) {
        let version = serde_json::from_slice::<Value>(message).ok().and_then(|v| {
            v.pointer("/result/protocolVersion")
                .and_then(Value::as_str)
                .and_then(|s| HeaderValue::from_str(s).ok())
        });
        if version.is_some() {
            self.state().protocol_version = version;
        }
    }
}

fn is_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().starts_with("text/event-stream"))
}

/// An error with its sources, one after the other ("error sending request: client error (Connect): ...").
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(s) = source {
        let next = s.to_string();
        if !text.ends_with(&next) {
            text = format!("{text}: {next}");
        }
        source = s.source();
    }
    text
}

/// Header names and values as a user gives them (e.g. `server.headers`), checked.
pub fn header_map<'a>(
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<HeaderMap, String> {
    let mut headers = HeaderMap::new();
    for (name, value) in pairs {
        let name_ok = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("'{name}' is not a valid header name"))?;
        let value_ok = HeaderValue::from_str(value)
            .map_err(|_| format!("the value of '{name}' is not a valid header value"))?;
        headers.insert(name_ok, value_ok);
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_headers_are_named() {
        assert!(header_map([("Authorization", "Bearer x")]).is_ok());
        assert!(
            header_map([("bad name", "x")])
                .unwrap_err()
                .contains("bad name")
        );
        assert!(
            header_map([("X-A", "line\nbreak")])
                .unwrap_err()
                .contains("X-A")
        );
    }
}
