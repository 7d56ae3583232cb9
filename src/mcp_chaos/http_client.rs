//! A minimal MCP client over Streamable HTTP, for driving calls at a server given by URL: each request is
//! its own POST (ids chosen here), the answer is read from an `application/json` body or from the request's
//! SSE stream, a timeout sends `notifications/cancelled`, and the session id and protocol version of the
//! handshake go on every later request.

use std::{
    collections::VecDeque,
    sync::{
        Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use http::{HeaderMap, HeaderName, HeaderValue, header};
use serde_json::{Value, json};

use super::client::Answer;

/// Problems kept for error messages (the HTTP counterpart of a child's stderr).
const PROBLEM_LINES: usize = 40;
/// How long the POST of a `notifications/cancelled` may take before the caller moves on.
const CANCEL_SEND_TIMEOUT: Duration = Duration::from_secs(2);
const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";

pub struct HttpClient {
    http: reqwest::Client,
    url: reqwest::Url,
    /// The caller's headers (e.g. Authorization), sent on every request.
    headers: HeaderMap,
    session: Mutex<Option<HeaderValue>>,
    protocol_version: Mutex<Option<HeaderValue>>,
    next_id: AtomicU64,
    problems: Mutex<VecDeque<String>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl HttpClient {
    /// A client whose request ids start at `first_id`.
    pub fn new(url: reqwest::Url, headers: HeaderMap, first_id: u64) -> Result<Self, String> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(Self {
            http,
            url,
            headers,
            session: Mutex::new(None),
            protocol_version: Mutex::new(None),
            next_id: AtomicU64::new(first_id),
            problems: Mutex::new(VecDeque::new()),
        })
    }

    fn note(&self, problem: String) {
        tracing::debug!(%problem, "mcp chaos http client");
        let mut problems = lock(&self.problems);
        if problems.len() >= PROBLEM_LINES {
            problems.pop_front();
        }
        problems.push_back(problem);
    }

    /// What went wrong so far, for error messages.
    pub fn problems(&self) -> String {
        lock(&self.problems)
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn post(&self, message: &Value) -> reqwest::RequestBuilder {
        let mut request = self
            .http
            .post(self.url.clone())
            .headers(self.headers.clone())
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, text/event-stream")
            .body(message.to_string());
        if let Some(session) = lock(&self.session).clone() {
            request = request.header(SESSION_HEADER, session);
        }
        if let Some(version) = lock(&self.protocol_version).clone() {
            request = request.header(VERSION_HEADER, version);
        }
        request
    }

    /// Sends a notification; its 202 is not waited for by the caller.
    pub fn notify(&self, method: &str, params: Value) -> impl Future<Output = ()> + Send + 'static {
        let request = self.post(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
        async move {
            let _ = request.send().await;
        }
    }

    /// Sends a request and waits up to `timeout` for its response; on timeout, sends
    /// `notifications/cancelled` for it.
    pub async fn request(&self, method: &str, params: Value, timeout: Duration) -> (u64, Answer) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let exchange = self.exchange(id, &message);
        match tokio::time::timeout(timeout, exchange).await {
            Ok(Some(response)) => {
                if method == "initialize" {
                    let version = response["result"]["protocolVersion"]
                        .as_str()
                        .and_then(|v| HeaderValue::from_str(v).ok());
                    *lock(&self.protocol_version) = version;
                }
                (id, Answer::Response(response))
            }
            Ok(None) => (id, Answer::Closed),
            Err(_) => {
                let cancel = self.notify(
                    "notifications/cancelled",
                    json!({"requestId": id, "reason": "timeout"}),
                );
                // Sent before returning, as over stdio: a session closed next must not overtake it.
                let _ = tokio::time::timeout(CANCEL_SEND_TIMEOUT, cancel).await;
                (id, Answer::TimedOut)
            }
        }
    }

    /// One POST and the JSON-RPC response to `id` in what comes back; `None` when there is none.
    async fn exchange(&self, id: u64, message: &Value) -> Option<Value> {
        let mut response = match self.post(message).send().await {
            Ok(response) => response,
            Err(e) => {
                self.note(format!("POST {}: {e}", self.url));
                return None;
            }
        };
        let status = response.status();
        if let Some(session) = response.headers().get(SESSION_HEADER) {
            *lock(&self.session) = Some(session.clone());
        }
        let content_type = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        if !status.is_success() {
            let body = response.text().await.unwrap_or_default();
            // A JSON-RPC error in a 4xx body is still the answer to the request.
            if let Ok(value) = serde_json::from_str::<Value>(&body)
                && value.get("error").is_some()
            {
                return Some(value);
            }
            self.note(format!(
                "HTTP {status}: {}",
                body.chars().take(300).collect::<String>()
            ));
            return None;
        }
        if content_type.starts_with("text/event-stream") {
            let mut events = SseReader::default();
            loop {
                let chunk = match response.chunk().await {
                    Ok(Some(chunk)) => chunk,
                    Ok(None) => {
                        self.note(format!(
                            "the SSE stream of request {id} ended without its response"
                        ));
                        return None;
                    }
                    Err(e) => {
                        self.note(format!("the SSE stream of request {id} broke: {e}"));
                        return None;
                    }
                };
                for data in events.push(&chunk) {
                    if let Ok(value) = serde_json::from_str::<Value>(&data)
                        && value.get("id").and_then(Value::as_u64) == Some(id)
                        && (value.get("result").is_some() || value.get("error").is_some())
                    {
                        return Some(value);
                    }
                }
            }
        }
        let body = response.bytes().await.ok()?;
        match serde_json::from_slice::<Value>(&body) {
            Ok(value) => Some(value),
            Err(e) => {
                self.note(format!("the answer to request {id} is not JSON: {e}"));
                None
            }
        }
    }

    /// Ends the session (DELETE), if the server gave one.
    pub async fn close(&self, grace: Duration) {
        let Some(session) = lock(&self.session).take() else {
            return;
        };
        let request = self
            .http
            .delete(self.url.clone())
            .headers(self.headers.clone())
            .header(SESSION_HEADER, session)
            .send();
        let _ = tokio::time::timeout(grace, request).await;
    }
}

/// Parses the `data` of SSE events out of chunks as they arrive.
#[derive(Default)]
struct SseReader {
    pending: Vec<u8>,
    data: Vec<String>,
}

impl SseReader {
    /// The data of each event completed by `chunk`.
    fn push(&mut self, chunk: &[u8]) -> Vec<String> {
        self.pending.extend_from_slice(chunk);
        let mut done = Vec::new();
        while let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                // An event with empty data (the priming event) carries no message.
                let data = std::mem::take(&mut self.data).join("\n");
                if !data.is_empty() {
                    done.push(data);
                }
            } else if let Some(value) = line.strip_prefix("data:") {
                self.data
                    .push(value.strip_prefix(' ').unwrap_or(value).to_owned());
            }
        }
        done
    }
}

/// Header names and values as given in `server.headers`, checked.
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
    fn sse_events_are_read_across_chunks() {
        let mut reader = SseReader::default();
        assert!(reader.push(b"id: 0\nretry: 3000\ndata: \n\nda").is_empty());
        let events = reader.push(b"ta: {\"id\":1}\r\n\r\ndata: a\ndata: b\n\n");
        assert_eq!(events, ["{\"id\":1}", "a\nb"]);
    }

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
